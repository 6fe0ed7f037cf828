"""Every step is right, and the registry of steps is well formed.

Correctness: every step (whatever ``gemm_steps.steps()`` lists — the tests never name steps) against float64 NumPy
at shapes that are *not* tile multiples, so every edge guard runs. Inputs and output are device arrays and the
output is poisoned with NaN first: an element the kernel never writes stays NaN and fails. (With NumPy arrays the
API copies its own device buffer back over ``out``, so a NaN in a host ``out`` would prove nothing.)

Shapes, for every step: 1×1×1, 17×33×9, 100×1×37 — cheap, ragged, and every guard runs (17×33×9 has a block
partial in both M and N, 100×1×37 several block-rows and a partial k-tile) — and one built from the step's own tile
sizes (``step.config``: BLOCK_M × BLOCK_N tiles, BLOCK_K deep), so that it stays meaningful when tiles change:

* ``one_tile`` BLOCK_M × BLOCK_N × 2·BLOCK_K — exactly one full tile: a step with a fast full-tile kernel runs it
  alone (a fast kernel writing outside its tile would index past C).

Steps with a fast kernel (those built on :class:`gemm_steps.toolkit.tiles.TiledKernels`) also get

* ``tile_plus_edges`` (BLOCK_M + 1) × (BLOCK_N + 4) × 3·BLOCK_K — fast and edge kernels write one output together
  (steps 6–9; steps 10–11 run their guarded variant over all four tiles). (Steps 1–5 have one kernel, so for them
  this shape held nothing the three fixed shapes and ``one_tile`` do not: it was dropped on 2026-11-25, saving ~15 s
  of simulator time; tests/test_properties.py also draws their shapes around c ± 1 and 2c ± 1 of every tile size.)
* ``k_not_multiple`` (BLOCK_M + 3) × (BLOCK_N + 4) × (2·BLOCK_K + 4) — a full tile, but K is not a multiple of
  BLOCK_K (it is of 4): a fast path that ignored that condition would read past the end of A's rows;

and steps whose kernels loop over tiles (persistent grids: steps 10, 11; fewer blocks than tiles: 3 on the
simulator), so that each block loops over several tiles and stream-K splits k-loops across blocks

* ``2x2_tiles`` 2·BLOCK_M × 2·BLOCK_N × 2·BLOCK_K — four full tiles: the fast variant;
* ``2x2_tiles_plus_edge`` (2·BLOCK_M + 1) × (2·BLOCK_N + 4) × 2·BLOCK_K — four full tiles and partial ones: the
  guarded variant, over all nine.

For those steps each test also checks that the fast kernel ran exactly where it should (and not for
``k_not_multiple``).

Determinism: each step runs twice at one shape, and the two results must be bitwise identical (a fixed summation
order; no race between the threads of a block). For steps whose blocks share work (steps 10 and 11) that is their
last, largest shape, where the persistent loop and stream-K's fixups across blocks run; for the others, whose
blocks never meet, ``one_tile``: one full block with every thread, every shared-memory stage and (steps 6–9) the
fast kernel (a race between the threads of a block shows there as well as at a larger shape, for a quarter of the
simulator time). tests/test_gpu.py checks every step on a GPU at a large shape, where scheduling could differ
between runs. Simulator time: see docs/hardening.md.
"""

from __future__ import annotations

import importlib
import inspect
import re

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps import Step
from gemm_steps.toolkit.persistent_tiles import PersistentTiles
from gemm_steps.toolkit.tiles import TiledKernels
from helpers import assert_close, random_matrices, tile_geometry

STEPS = gemm_steps.steps()


def step_id(step: Step) -> str:
    return f"{step.number}-{step.name}"


FIXED_SHAPES = [(1, 1, 1), (17, 33, 9), (100, 1, 37)]


def runs_fast_kernel(step: Step, shape: str) -> bool:
    """Whether a tile-relative shape must run the step's fast kernel. Steps 6–9 run it on the full tiles whenever the
    128-bit path applies; the looping steps 10–11 only when every tile is full (else their guarded variant loops
    over all tiles); steps 17 and 18 on their builds for partial tiles wherever the copy engine can read A and B."""
    if isinstance(step.tiled, PersistentTiles):
        return shape in {"one_tile", "2x2_tiles"}
    if getattr(step.tiled, "partial", None) is not None:  # steps 17, 18: a partial tile or k-tile, the partial build
        partial = {"one_tile", "tile_plus_edges", "k_not_multiple"}  # (K and N multiples of 4 in all three)
        if getattr(step.tiled, "full_cols_multiple", 1) > 1:  # step 23: pairs of tiles, whole or not, on its kernels
            partial |= {"2x2_tiles", "2x2_tiles_plus_edge"}
        return shape in partial
    if getattr(step.tiled, "full_cols_multiple", 1) > 1:  # clusters along a tile-row (step 20): whole pairs only
        return shape in {"2x2_tiles", "2x2_tiles_plus_edge"}
    return shape in {"one_tile", "tile_plus_edges"}


def shapes_for(step: Step) -> list:
    shapes = [*FIXED_SHAPES, "one_tile"]
    if step.tiled is not None:  # a fast path with conditions: the fast and edge kernels together, and K off BLOCK_K
        shapes += ["tile_plus_edges", "k_not_multiple"]
    if isinstance(step.tiled, PersistentTiles) or getattr(step.tiled, "full_cols_multiple", 1) > 1:
        shapes += ["2x2_tiles", "2x2_tiles_plus_edge"]  # more tiles than blocks, or whole clusters of tiles
    return shapes


def determinism_shape(step: Step) -> str:
    """Where the step runs twice (module docstring): the largest shape if its blocks share work, else one tile."""
    return shapes_for(step)[-1] if isinstance(step.tiled, PersistentTiles) else "one_tile"


def shape_id(shape) -> str:
    return shape if isinstance(shape, str) else "x".join(map(str, shape))


CASES = [pytest.param(step, shape, id=f"{step_id(step)}-{shape_id(shape)}") for step in STEPS
         for shape in shapes_for(step)]


def shape_for(step: Step, shape) -> tuple[int, int, int]:
    """A fixed (M, N, K), or one of the tile-relative shapes of the module docstring for this step."""
    if not isinstance(shape, str):
        return shape
    bm, bn, _, _ = tile_geometry(step.config)
    bk = int(step.config.get("BLOCK_K", step.config.get("TILE", 8)))
    return {"one_tile": (bm, bn, 2 * bk), "tile_plus_edges": (bm + 1, bn + 4, 3 * bk),
            "k_not_multiple": (bm + 3, bn + 4, 2 * bk + 4), "2x2_tiles": (2 * bm, 2 * bn, 2 * bk),
            "2x2_tiles_plus_edge": (2 * bm + 1, 2 * bn + 4, 2 * bk),
            }[shape]


def run_poisoned(step: Step, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``step`` on device copies of a and b, into a device ``out`` filled with NaN; the result on the host."""
    out = cuda.to_device(np.full((a.shape[0], b.shape[1]), np.nan, dtype=np.float32))
    returned = step(cuda.to_device(a), cuda.to_device(b), out=out)
    assert returned is out, "out= must be returned"
    return out.copy_to_host()


@pytest.mark.parametrize("step,shape", CASES)
def test_step_matches_float64(step, shape, random_matrices, monkeypatch):
    m, n, k = shape_for(step, shape)
    a, b = random_matrices(m, n, k)
    launched = []
    if step.tiled is not None:  # record which variants run (step 11 may hand a product to step 10's kernels)
        original = TiledKernels.configured

        def spy(self, variant, grid, stream, launches=None):
            launched.append(variant)
            return original(self, variant, grid, stream, launches)

        monkeypatch.setattr(TiledKernels, "configured", spy)
    result = run_poisoned(step, a, b)
    assert_close(result, a, b, f"step {step.number} {step.name}", step=step)
    if shape == determinism_shape(step):  # run it again, expect the same bits
        again = run_poisoned(step, a, b)
        assert np.array_equal(result.view(np.uint32), again.view(np.uint32)), (
            f"step {step.number} {step.name} is not deterministic at {shape}: "
            f"{int((result != again).sum())} elements differ between two runs")
    if step.tiled is not None and isinstance(shape, str):
        should_run = runs_fast_kernel(step, shape)
        assert ("fast" in launched) == should_run, (
            f"step {step.name} at {shape} {m}×{n}×{k}: the fast kernel {'did not run' if should_run else 'ran'}")


# -- the registry ------------------------------------------------------------------------------------------------

def test_numbers_are_1_to_n_in_order():
    assert STEPS, "no steps registered"
    assert [s.number for s in STEPS] == list(range(1, len(STEPS) + 1))


def test_steps_returns_a_fresh_list_of_the_same_steps():
    again = gemm_steps.steps()
    assert again is not STEPS and [id(s) for s in again] == [id(s) for s in STEPS]
    again.clear()  # a caller mutating its list must not change the registry
    assert len(gemm_steps.steps()) == len(STEPS)


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_name_is_a_slug(step):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", step.name), f"step name {step.name!r} is not a lowercase slug"
    assert step.name == step.module.__name__.rsplit(".", 1)[-1]


def test_names_are_unique():
    names = [s.name for s in STEPS]
    assert len(set(names)) == len(names), f"duplicate step names: {names}"


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_title_and_summary(step):
    for what in ("title", "summary"):
        value = getattr(step, what)
        assert isinstance(value, str) and value.strip(), f"step {step.name} has an empty {what}"
        assert "\n" not in value.strip(), f"step {step.name}'s {what} should be one line"


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_docstring_says_what_changed(step):
    """The module docstring opens with "Step N" and (after step 1) says what changed from step N − 1."""
    doc = step.doc
    assert doc, f"step module {step.module.__name__} has no docstring"
    assert re.match(rf"Step {step.number}\b", doc), (
        f"{step.module.__name__}'s docstring should open with 'Step {step.number}', got {doc.splitlines()[0]!r}")
    if step.number > 1:
        match = re.search(r"[Cc]hanged from step (\d+)", doc)
        assert match, f"{step.module.__name__}'s docstring should say 'Changed from step {step.number - 1}: …'"
        # a step that builds on an earlier one than the step before says which (BUILDS_ON), and its docstring agrees
        builds_on = getattr(step.module, "BUILDS_ON", None)
        expected = gemm_steps.get_step(builds_on).number if builds_on else step.number - 1
        assert int(match.group(1)) == expected, (
            f"{step.name} is step {step.number} but its docstring says it changed from step {match.group(1)}")


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_get_step_by_name_and_number(step):
    assert gemm_steps.get_step(step.name) is step
    assert gemm_steps.get_step(step.number) is step
    assert gemm_steps.get_step(str(step.number)) is step  # as typed on the command line
    assert gemm_steps.get_step(f" {step.number} ") is step


@pytest.mark.parametrize("bad", [0, len(STEPS) + 1, -1, "0", str(len(STEPS) + 1), "-1", "1.0", "no_such_step", "",
                                 True, None, 1.0])
def test_get_step_unknown(bad):
    with pytest.raises(KeyError, match="the steps are"):
        gemm_steps.get_step(bad)


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_step_declares_its_kernels(step):
    """Every step lists the kernels it launches (with signatures), so tests/test_ptx.py checks its compiled code."""
    kernels = step.kernels()
    assert kernels, f"step {step.name} has no KERNELS: its compiled code would go unchecked"
    for label, entry in kernels.items():
        dispatcher, signature = entry
        assert callable(getattr(dispatcher, "py_func", None)), f"{label}: not a cuda.jit kernel"
        assert isinstance(signature, str) and signature.startswith("void("), f"{label}: signature {signature!r}"


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_source_shows_every_kernel(step):
    """``step.source()`` (the module as written) has every kernel function the step is built from, and
    ``step.generated_source()`` (what is compiled) every kernel it launches."""
    source, generated = step.source(), step.generated_source()
    assert isinstance(source, str) and source.strip()
    functions = step.kernel_functions()
    assert functions, f"step {step.name} names no kernel function"
    for function in functions:
        assert re.search(rf"^def {re.escape(function.__name__)}\(", source, re.M), (
            f"step.source() lacks kernel {function.__name__}")
    for label, (dispatcher, _) in step.kernels().items():
        name = dispatcher.py_func.__name__
        assert re.search(rf"\bdef {re.escape(name)}\(", generated), f"generated_source() lacks {name} ({label})"


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_source_of_launched_kernels_is_what_generated_source_shows(step):
    """Each launched kernel's own source (generated code included) is in ``generated_source()``: what a reader is
    shown is what runs. (tests/test_readable_kernels.py checks it line for line for the generated steps.)"""
    for label, (dispatcher, _) in step.kernels().items():
        try:
            kernel_source = inspect.getsource(dispatcher.py_func)
        except (OSError, TypeError) as exc:  # generated code must be registered (unroll.define does this)
            pytest.fail(f"{label}: inspect.getsource fails on the kernel ({exc}); register generated source")
        assert kernel_source.strip() in step.generated_source(), f"{label}: the kernel that runs is not shown"


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_config_is_a_dict_of_named_constants(step):
    config = step.config
    assert isinstance(config, dict)
    for key, value in config.items():
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", key), f"{step.name}: config key {key!r} is not an UPPER_CASE name"


def test_step_modules_are_the_course():
    """``gemm_steps.steps()`` is exactly ``steps.COURSE``, in order (one list decides the course)."""
    course = importlib.import_module("gemm_steps.steps").COURSE
    assert [s.name for s in STEPS] == list(course)


# -- matmul chooses a step ---------------------------------------------------------------------------------------

@pytest.fixture
def launches(monkeypatch):
    """Record which step launches (the kernels still run)."""
    seen = []
    for step in STEPS:
        original = step._launch

        def spy(a, b, c, stream=0, _step=step, _original=original):
            seen.append(_step.name)
            _original(a, b, c, stream)

        monkeypatch.setattr(step, "_launch", spy)
    return seen


def test_matmul_default_is_the_last_fp32_step(launches, random_matrices):
    """Steps after it compute on the tensor cores: step 12 rounds its inputs to TF32, so matmul never picks it. At
    5×6×7, smaller than every measured product, no evidence from the table reaches: the last FP32 step runs (the
    suite of 2026-11-29-4 measured step 18 copying A and B at one small product, 150×181×10001, which had sent this
    product to step 18's copies and kernel until the evidence stopped at the smallest measured product)."""
    a, b = random_matrices(5, 6, 7)
    last_fp32 = [s for s in STEPS if s.arithmetic == "fp32"][-1]
    assert gemm_steps.fastest_step() is last_fp32
    assert [s.arithmetic for s in STEPS[last_fp32.number:]] == ["tf32", "3xtf32", "3xtf32", "tf32", "tf32", "tf32",
                                                                "3xtf32", "tf32", "tf32", "tf32", "3xtf32", "tf32"]  # 12–23
    assert_close(gemm_steps.matmul(a, b), a, b, "matmul")
    assert launches == [last_fp32.name]


@pytest.mark.parametrize("how", ["number", "name", "step"])
def test_matmul_step_argument(how, launches, random_matrices):
    chosen = STEPS[0]
    a, b = random_matrices(3, 4, 5)
    arg = {"number": chosen.number, "name": chosen.name, "step": chosen}[how]
    assert_close(gemm_steps.matmul(a, b, step=arg), a, b, f"matmul(step={arg!r})")
    assert launches == [chosen.name]
