"""The experiments' kernel variants stay correct and compile to what they claim.

The variants the H200 measured and the course rejected live in ``experiments/kernels/`` (lesson 9; the scripts in
``experiments/`` time them): step 9 and step 8 with fragments double-buffered in registers (``*_pipelined``), step 9
with ``cp.async`` copies and/or unsigned stage arithmetic (``warp_tiling_async``), step 9's k-column in other FMA
orders (``warp_tiling_fma_order``) and step 5 with a strided thread map (``register_2d_strided``). The experiments
must stay reproducible, so the variants are tested like steps: against float64 on the simulator, on a small tile
configuration so it stays fast, with shapes that run the fast kernel alone and the fast and edge kernels together;
the FMA orders bit for bit against step 9; and the ``cp.async`` variant's PTX on a CPU (compiled by the
GPU-mode worker, tests/ptx_jobs.py).

``experiments`` is a package of the checkout, not installed with ``gemm_steps``: this file puts the repository root
on ``sys.path`` (as ``python -m pytest`` from the root, and ``python -m experiments.<topic>``, already do).
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import gemm_steps
from gemm_steps.harness import api
from gemm_steps.steps import warp_tiling
from gemm_steps.toolkit.tile_config import TileConfig

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments.kernels import (  # noqa: E402
    double_buffered_pipelined,
    register_2d_strided,
    warp_tiling_async,
    warp_tiling_fma_order,
    warp_tiling_pipelined,
)

#: One warp, 64×32 tiles: small enough for the simulator, large enough for warp tiling's 8×4 lane grid.
SMALL = TileConfig(BLOCK_M=64, BLOCK_N=32, BLOCK_K=8, THREAD_M=8, THREAD_N=8)

#: Each variant, built for SMALL (once: the builds are cached, and they compile on first use).
BUILDERS = {
    "warp_tiling_pipelined": lambda: warp_tiling_pipelined.build(SMALL),
    "double_buffered_pipelined": lambda: double_buffered_pipelined.build(SMALL),
    "async_b": lambda: warp_tiling_async.build(SMALL, async_b=True, name="async_b"),
    "async_a_b": lambda: warp_tiling_async.build(SMALL, async_a=True, async_b=True, name="async_a_b"),
    "uint32_stage": lambda: warp_tiling_async.build(SMALL, uint32_stage=True, name="uint32_stage"),
    "async_a_b_uint32_stage": lambda: warp_tiling_async.build(SMALL, True, True, True, name="async_a_b_uint32"),
}

#: (M, N, K) → whether the fast kernel runs: (132, 72, 40) has full tiles (fast kernel) and a ragged border (edge
#: kernel); (130, 70, 19) breaks the fast path's conditions (K and N), so the edge kernel computes every tile.
SHAPES = {(132, 72, 40): True, (130, 70, 19): False}

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="builds kernels for the simulator")


@functools.cache
def built(name: str):
    if name == "step9":
        return warp_tiling.build(SMALL)
    if name in warp_tiling_fma_order.ORDERS:
        return warp_tiling_fma_order.build(SMALL, name)
    return BUILDERS[name]()


def run(kernels, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, list[bool]]:
    """C = A·B with one variant (output poisoned with NaN), and whether each launch took the fast path."""
    fast = []

    def launch(a_dev, b_dev, c_dev, stream=0):
        fast.append(kernels.fast_path_applies(a_dev, b_dev, c_dev))
        kernels.launch(a_dev, b_dev, c_dev, stream)

    m, n = a.shape[0], b.shape[1]
    return api.run(launch, a, b, np.full((m, n), np.nan, dtype=np.float32)), fast


def assert_matches_float64(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    assert not np.isnan(c).any(), "some element of C was never written"
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - reference) / np.linalg.norm(reference) < 1e-6


# -- correctness on the simulator ---------------------------------------------------------------------------------
@simulator_only
@pytest.mark.parametrize("variant", BUILDERS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_variant_matches_float64(variant, shape, random_matrices):
    a, b = random_matrices(*shape)
    c, fast = run(built(variant), a, b)
    assert fast and all(fast) == SHAPES[shape], "the shape did not exercise the kernels it was chosen for"
    assert_matches_float64(c, a, b)


@functools.cache
def step9_product() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B (fast and edge kernels both run) and step 9's C, computed once for all the orders."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((132, 40), dtype=np.float32)
    b = rng.standard_normal((40, 72), dtype=np.float32)
    return a, b, run(built("step9"), a, b)[0]


@simulator_only
@pytest.mark.parametrize("order", warp_tiling_fma_order.ORDERS, ids=str)
def test_fma_order_is_bit_identical_to_step9(order):
    """Every order computes the same products in the same k order for each element of C: the same bits as step 9."""
    a, b, expected = step9_product()
    got, fast = run(built(order), a, b)
    assert all(fast)
    assert_matches_float64(got, a, b)
    assert np.array_equal(got, expected)


@simulator_only
@pytest.mark.parametrize("launch", ["launch_strided", "launch_strided_transposed_a"])
def test_register_2d_strided_matches_float64(launch, random_matrices):
    a, b = random_matrices(130, 70, 19)  # ragged everywhere: every guard of step 5's kernel is exercised
    c = api.run(getattr(register_2d_strided, launch), a, b, np.full((130, 70), np.nan, dtype=np.float32))
    assert_matches_float64(c, a, b)


# -- the generated code: each switch does what it says -------------------------------------------------------------
_FMA = re.compile(r"^\s*acc_(\d+)_(\d+) \+= a_frag_(\d+) \* b_frag_(\d+)$", re.M)


def _first_k_column(source: str) -> list[tuple[int, int]]:
    """The (i, j) of the first k-column's FMAs, in program order (each FMA must read a_frag_i and b_frag_j)."""
    fmas = [tuple(map(int, match)) for match in _FMA.findall(source)]
    assert fmas and all(i == ai and j == bj for i, j, ai, bj in fmas)
    return [(i, j) for i, j, _, _ in fmas[:SMALL.THREAD_M * SMALL.THREAD_N]]


def _expected_order(order: str, rows: int, cols: int) -> list[tuple[int, int]]:
    """The FMA orders, written out independently of the kernel."""
    serpentine_quads = [(i, q + (3 - jj if i % 2 else jj)) for q in range(0, cols, 4) for i in range(rows)
                        for jj in range(4)]
    return {
        "serpentine": [(i, cols - 1 - jj if i % 2 else jj) for i in range(rows) for jj in range(cols)],
        "row": [(i, j) for i in range(rows) for j in range(cols)],
        "column": [(i, j) for j in range(cols) for i in range(rows)],
        "column serpentine": [(rows - 1 - ii if j % 2 else ii, j) for j in range(cols) for ii in range(rows)],
        "quad": serpentine_quads,
        "just in time": serpentine_quads,
    }[order]


@pytest.mark.parametrize("order", warp_tiling_fma_order.ORDERS, ids=str)
def test_fma_order_is_the_one_named(order):
    source = built(order).generated("fast")
    column = _first_k_column(source)
    assert column == _expected_order(order, SMALL.THREAD_M, SMALL.THREAD_N)
    # Same products as step 9 (every (i, j) once per k-column, all k-columns), in step 9's order for "serpentine".
    step9 = [m[:2] for m in _FMA.findall(built("step9").generated("fast"))]
    here = [m[:2] for m in _FMA.findall(source)]
    assert sorted(here) == sorted(step9) and len(here) == SMALL.BLOCK_K * SMALL.THREAD_M * SMALL.THREAD_N
    assert (here == step9) == (order == "serpentine")


def test_just_in_time_loads_b_between_the_fmas():
    lines = built("just in time").generated("fast").splitlines()
    b_loads = [n for n, line in enumerate(lines) if "= load_float4(b_tile" in line]
    fmas = [n for n, line in enumerate(lines) if _FMA.match(line)]
    # Per k-column: THREAD_N / 4 loads of B, each followed by the FMAs that use it before the next load.
    assert len(b_loads) == SMALL.BLOCK_K * SMALL.THREAD_N // 4
    assert sum(1 for n in fmas if b_loads[0] < n < b_loads[1]) == SMALL.THREAD_M * 4
    shipped = built("step9").generated("fast").splitlines()
    loads9 = [n for n, line in enumerate(shipped) if "= load_float4(b_tile" in line]
    assert not any(_FMA.match(line) for line in shipped[loads9[0]:loads9[1]])  # step 9 loads B's fragment at once


def test_async_switches_choose_the_copies():
    """cp.async only where asked for, and only in the fast kernel; one wait per k-tile; no store left behind."""
    constants = SMALL.constants()
    for name, copies_a, copies_b in [("async_b", 0, 1), ("async_a_b", 4, 1), ("uint32_stage", 0, 0)]:
        fast, edge = built(name).generated("fast"), built(name).generated("edge")
        assert fast.count("copy_async(a_tile") == copies_a * constants["A_LOADS"], name
        assert fast.count("copy_async(b_tile") == copies_b * constants["B_LOADS"], name
        assert fast.count("copy_async_wait_all()") == (1 if copies_a or copies_b else 0), name
        assert fast.count("store_float4(b_tile") == (0 if copies_b else constants["B_LOADS"]), name
        assert "copy_async" not in edge, name
    assert "uint32(k_tile) % uint32(2)" in built("uint32_stage").generated("fast")
    assert "uint32(k_tile) % uint32(2)" not in built("async_a_b").generated("fast")


def test_pipelined_fragments_alternate():
    """Two fragment sets: odd k-columns read set 1, even ones set 0, in step 9's serpentine order."""
    source = built("warp_tiling_pipelined").generated("fast")
    fmas = re.findall(r"acc_(\d+)_(\d+) \+= a_frag_(\d)_(\d+) \* b_frag_(\d)_(\d+)", source)
    per_column = SMALL.THREAD_M * SMALL.THREAD_N
    assert len(fmas) == SMALL.BLOCK_K * per_column
    sets = [int(fma[2]) for fma in fmas[::per_column]]
    assert sets == [kk % 2 for kk in range(SMALL.BLOCK_K)]
    assert all(a_set == b_set for _, _, a_set, _, b_set, _ in fmas)
    assert [(int(i), int(j)) for i, j, *_ in fmas[:per_column]] == _expected_order("serpentine", SMALL.THREAD_M,
                                                                                   SMALL.THREAD_N)


# -- the experiment scripts still build their variants -----------------------------------------------------------
SCRIPTS = ["async_copy", "cluster_arrive_scope", "code_shapes", "fma_order", "persistent", "pipelining", "register_2d", "scheduling"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_experiment_script_builds_its_variants(script):
    """Importing a script runs nothing; ``variants()`` builds (not compiles) what it would time, and names each."""
    module = importlib.import_module(f"experiments.{script}")
    variants = module.variants()
    labels = [v[0] if isinstance(v, tuple) else v.name for v in variants]
    assert len(labels) >= 2 and len(set(labels)) == len(labels)
    assert callable(module.main)


# -- the cp.async variant's PTX, compiled on a CPU (in the GPU-mode worker, tests/ptx_jobs.py) --------------------
ASYNC_VARIANT_JOB = "kernels:ptx_jobs:async_copy_variant_kernels"


@pytest.mark.ptx(ASYNC_VARIANT_JOB)
def test_async_copy_variant_ptx(ptx):
    """With both copies asynchronous, every global load of a k-tile is a cp.async into shared memory: 4-byte copies
    of A (to its transposed places), 16-byte copies of B, one wait per k-tile, and no shared-memory store left."""
    from ptx_jobs import ASYNC_VARIANT_CONFIG

    assert TileConfig(**ASYNC_VARIANT_CONFIG) == SMALL, "the PTX job must build the variant the tests here run"
    stats = ptx.stats(ASYNC_VARIANT_JOB, "fast")
    assert "error" not in stats, f"the variant failed to compile: {stats['error']}"
    opcodes = stats["opcodes"]
    constants = SMALL.constants()
    assert opcodes.get("cp.async.ca.shared.global") == 4 * constants["A_LOADS"]
    assert opcodes.get("cp.async.cg.shared.global") == constants["B_LOADS"]
    assert opcodes.get("cp.async.wait_all") == 1
    assert stats["st.shared.f32"] == stats["st.shared.v4.f32"] == 0
    assert stats["ld.global.v4.f32"] == 0 and stats["local"] == 0
    assert stats["fma.rn.f32"] == SMALL.BLOCK_K * SMALL.THREAD_M * SMALL.THREAD_N
