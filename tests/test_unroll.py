"""The unroll compiler (:mod:`gemm_steps.toolkit.unroll`): what the readable kernels of steps 6–11 become.

Each rule of the module docstring on a small function written here: ``unroll`` loops are repeated with their
variable a constant, register tiles become named scalars, a compile-time ``if`` keeps one branch, arithmetic on
compile-time values folds into one number (the tile constants themselves stay names), and what cannot be
expanded is an :class:`UnrollError` naming the line. Then the point of it all: step 7's kernel run *unexpanded*
(``unroll`` is ``range``, ``registers`` nested lists: plain Python on the simulator) and expanded give the same
numbers.

The functions below are never called; they are only read by :func:`expand` (names such as ``BLOCK_M`` or ``EDGE``
are compile-time constants passed to it).
"""
# ruff: noqa: F821  (the compile-time names below are given to expand(), not defined here)

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import TiledKernels
from gemm_steps.toolkit.unroll import UnrollError, define, expand, registers, unroll
from helpers import assert_close, random_matrices, rng_for


def body_of(source: str) -> list[ast.stmt]:
    """The statements of the one function in ``source``."""
    definition = ast.parse(source).body[0]
    assert isinstance(definition, ast.FunctionDef)
    return definition.body


def names_in(source: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


def line_of(function, text: str) -> int:
    """The line number, in this file, of the first line of ``function`` containing ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


# -- unroll loops ---------------------------------------------------------------------------------------------------

def one_loop(x):
    for i in unroll(4):
        x[i] = i * 10


def nested_loops(x):
    for i in unroll(N):
        for j in unroll(1, 7, 2):
            x[i * 100 + j] = 1


def test_unroll_repeats_the_body_with_the_variable_a_constant():
    body = body_of(expand(one_loop, {}))
    assert [ast.unparse(stmt) for stmt in body] == ["x[0] = 0", "x[1] = 10", "x[2] = 20", "x[3] = 30"]


def test_nested_unroll_and_range_arguments():
    source = expand(nested_loops, {"N": 3})
    body = body_of(source)
    assert len(body) == 3 * 3  # N × len(range(1, 7, 2))
    assert not any(isinstance(node, ast.For) for node in ast.walk(ast.parse(source)))
    assert [ast.unparse(stmt.targets[0]) for stmt in body] == [
        f"x[{i * 100 + j}]" for i in range(3) for j in range(1, 7, 2)]


def run_time_loop(x, k):
    for t in range(k):
        for i in unroll(2):
            x[t * 2 + i] = i


def test_a_run_time_loop_stays_a_loop_with_its_body_expanded():
    body = body_of(expand(run_time_loop, {}))
    assert len(body) == 1 and isinstance(body[0], ast.For)
    assert [ast.unparse(stmt) for stmt in body[0].body] == ["x[t * 2 + 0] = 0", "x[t * 2 + 1] = 1"]


# -- register tiles ---------------------------------------------------------------------------------------------------

def register_tile(x):
    acc = registers(M, N)
    frag = registers(N)
    for i in unroll(M):
        for j in unroll(N):
            acc[i][j] = 0.0
    for j in unroll(N):
        frag[j] = x[j]
    for i in unroll(M):
        for j in unroll(N):
            acc[i, j] += frag[j] * 2.0  # acc[i, j] is acc[i][j]
    x[0] = acc[M - 1][N - 1]


def test_register_tiles_become_named_scalars():
    source = expand(register_tile, {"M": 2, "N": 3})
    names = names_in(source)
    assert {f"acc_{i}_{j}" for i in range(2) for j in range(3)} <= names
    assert {"frag_0", "frag_1", "frag_2"} <= names
    assert not {"acc", "frag", "registers"} & names, "a register tile survived as an array"
    assert not any(isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("acc", "frag")
                   for node in ast.walk(ast.parse(source)))
    assert "acc_1_2 += frag_2 * 2.0" in source and "x[0] = acc_1_2" in source
    assert len(body_of(source)) == 6 + 3 + 6 + 1  # the declarations themselves leave no statement


def run_time_index(x, t):
    acc = registers(2, 2)
    x[0] = acc[0][0]
    x[1] = acc[t][0]


def outside_the_tile(x):
    acc = registers(2, 2)
    x[0] = acc[2][0]


def whole_tile_used(x):
    acc = registers(2)
    x[0] = len(acc)


def run_time_unroll(x, k):
    for i in unroll(k):
        x[i] = 0


@pytest.mark.parametrize("function,offending,message", [
    (run_time_index, "acc[t][0]", "must be known at compile time, got `t`"),
    (outside_the_tile, "acc[2][0]", "outside register tile `acc`"),
    (whole_tile_used, "len(acc)", "must be indexed with compile-time indices"),
    (run_time_unroll, "unroll(k)", "range of an unroll loop must be known at compile time"),
], ids=["run_time_index", "outside_the_tile", "whole_tile", "run_time_unroll"])
def test_what_cannot_be_expanded_is_an_error_naming_the_line(function, offending, message):
    with pytest.raises(UnrollError, match=message) as error:
        expand(function, {})
    line = line_of(function, offending)
    assert f"{function.__name__}, line {line}:" in str(error.value), (
        f"the error should name line {line} of {__file__}: {error.value}")
    assert inspect.getsourcefile(function) in str(error.value), f"the error should name {__file__}"


# -- compile-time branches and folding ---------------------------------------------------------------------------

def branches(x, t):
    if EDGE:
        x[0] = 1
        x[1] = 1
    else:
        x[0] = 2
    x[2] = 3 if EDGE else 4
    if t > 0:  # a run-time condition: kept
        x[3] = 5


@pytest.mark.parametrize("edge", [True, False])
def test_a_compile_time_if_keeps_one_branch(edge):
    source = expand(branches, {"EDGE": edge})
    statements = [ast.unparse(stmt) for stmt in body_of(source)]
    kept = ["x[0] = 1", "x[1] = 1"] if edge else ["x[0] = 2"]
    assert statements[:len(kept)] == kept
    assert statements[len(kept)] == f"x[2] = {3 if edge else 4}"
    assert statements[-1].startswith("if t > 0:"), "a run-time if must stay"
    assert "EDGE" not in source


def folding(x, t):
    for kk in unroll(2):
        for q in unroll(0, 8, 4):
            x[t + (kk * BLOCK_M + q)] = x[BLOCK_M]
    y = BLOCK_M * 2 + min(THREAD_N, 3)


def test_compile_time_arithmetic_folds_and_tile_constants_stay_names():
    source = expand(folding, {"BLOCK_M": 128, "THREAD_N": 8})
    statements = [ast.unparse(stmt) for stmt in body_of(source)]
    assert statements[:4] == [f"x[t + {kk * 128 + q}] = x[BLOCK_M]" for kk in range(2) for q in (0, 4)]
    assert statements[4] == "y = 259"


def serpentine(x):
    acc = registers(2, 3)
    for i in unroll(2):
        for jj in unroll(3):
            j = 3 - 1 - jj if i % 2 else jj
            acc[i][j] += x[j]


def test_an_assignment_of_a_compile_time_value_inside_unroll_is_a_compile_time_name():
    source = expand(serpentine, {})
    order = [ast.unparse(stmt.target) for stmt in body_of(source)]
    assert order == ["acc_0_0", "acc_0_1", "acc_0_2", "acc_1_2", "acc_1_1", "acc_1_0"]
    assert "j =" not in source


def _decorator(function):
    return function


@_decorator
def decorated(x):
    for i in unroll(2):
        x[i] = i


def test_expand_renames_and_drops_decorators():
    source = expand(decorated, {}, name="renamed_kernel")
    tree = ast.parse(source).body[0]
    assert tree.name == "renamed_kernel" and tree.decorator_list == []


def test_expand_is_deterministic():
    constants = {"M": 2, "N": 3}
    assert expand(register_tile, constants) == expand(register_tile, dict(reversed(constants.items())))


def test_an_expansion_is_kept_on_disk_and_read_back(tmp_path, monkeypatch):
    """The next process that builds a kernel reads its expansion instead of expanding again: a second ``expand``
    with the same inputs does not expand, one with another constant or name does, and a constant whose ``repr``
    differs between processes (an object) is never kept."""
    from gemm_steps.toolkit import unroll as unroll_module

    monkeypatch.setenv("GEMM_STEPS_CACHE", str(tmp_path))
    expanded = []
    real = unroll_module._expand
    monkeypatch.setattr(unroll_module, "_expand", lambda *args: expanded.append(args[3]) or real(*args))
    first = expand(register_tile, {"M": 2, "N": 3})
    assert expand(register_tile, {"N": 3, "M": 2}) == first and len(expanded) == 1
    assert len(list((tmp_path / "expanded").glob("*.py"))) == 1
    assert expand(register_tile, {"M": 2, "N": 4}) != first and len(expanded) == 2
    expand(register_tile, {"M": 2, "N": 3}, name="other")
    assert len(expanded) == 3
    expand(one_loop, {"X": object()})
    expand(one_loop, {"X": object()})
    assert len(expanded) == 5 and len(list((tmp_path / "expanded").glob("*.py"))) == 3


def test_define_registers_the_source_for_inspect(tmp_path):
    """Generated code must be readable by inspect (lessons, tracebacks, the simulator's shared arrays)."""
    source = expand(one_loop, {}, name="generated_one_loop")
    namespace = {}
    filename = define(source, "generated_one_loop", namespace)
    assert inspect.getsource(namespace["generated_one_loop"]) == source
    assert namespace["generated_one_loop"].__code__.co_filename == filename
    on_disk = define(source, "generated_one_loop", namespace, directory=tmp_path)
    assert Path(on_disk).read_text() == source and inspect.getsource(namespace["generated_one_loop"]) == source


def test_the_plain_python_meaning_is_range_and_lists():
    """Unexpanded, ``unroll`` is ``range`` and ``registers`` a nested list: a readable kernel is valid Python."""
    assert list(unroll(3)) == [0, 1, 2] and list(unroll(1, 7, 2)) == [1, 3, 5]
    tile = registers(2, 3)
    assert tile == [[0.0] * 3, [0.0] * 3] and tile[0] is not tile[1]


# -- the expansion does not change what a kernel computes ----------------------------------------------------------

#: Step 7 small enough for the simulator: 64 threads, a 32×32×8 tile, 4×4 per thread.
SMALL = TileConfig(BLOCK_M=32, BLOCK_N=32, BLOCK_K=8, THREAD_M=4, THREAD_N=4)


class Unexpanded(TiledKernels):
    """A build that compiles the kernel *as written*, only renamed (and its compile-time parameters read as the globals
    they are given as): unroll loops stay ``range`` loops, register tiles stay lists, ``if EDGE:`` is decided at run
    time from the constant."""

    def expand(self, constants: dict) -> str:
        tree = ast.parse(textwrap.dedent(inspect.getsource(self.function)))
        tree.body[0].name = constants["KERNEL_NAME"]
        tree.body[0].decorator_list = []
        tree.body[0].args.kwonlyargs, tree.body[0].args.kw_defaults = [], []
        return ast.unparse(tree) + "\n"


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="runs an unexpanded kernel, which only the simulator can")
def test_unexpanded_and_expanded_step_7_compute_the_same():
    from gemm_steps.steps import unrolled

    expanded = TiledKernels("unroll_check_expanded", unrolled.unrolled_kernel, SMALL)
    plain = Unexpanded("unroll_check_plain", unrolled.unrolled_kernel, SMALL)
    assert "unroll(" in plain.generated("fast") and "registers(" in plain.generated("fast")
    assert "unroll(" not in expanded.generated("fast") and "acc_3_3" in expanded.generated("fast")
    # Two full tiles (fast kernel) and a ragged row and column (edge kernel); then K off the fast path.
    for m, n, k in [(2 * SMALL.BLOCK_M + 3, SMALL.BLOCK_N + 4, 2 * SMALL.BLOCK_K), (SMALL.BLOCK_M, SMALL.BLOCK_N, 13)]:
        a, b = random_matrices(rng_for(f"unexpanded-{m}x{n}x{k}"), m, n, k)
        results = []
        for kernels in (expanded, plain):
            c = cuda.to_device(np.full((m, n), np.nan, np.float32))
            kernels.launch(cuda.to_device(a), cuda.to_device(b), c)
            results.append(c.copy_to_host())
            assert_close(results[-1], a, b, f"{kernels.name} at {m}×{n}×{k}")
        assert np.array_equal(results[0].view(np.uint32), results[1].view(np.uint32)), (
            f"{m}×{n}×{k}: expanding changed the result ({int((results[0] != results[1]).sum())} elements differ)")
