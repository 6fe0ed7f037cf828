"""Property tests: every step equals float64 NumPy for shapes and layouts drawn at random by Hypothesis.

What is drawn, per step:

* M, N, K in 1..150: small numbers, primes, and the sizes *around each of the step's tile sizes* — for every
  tile constant the step declares in ``step.config`` (BLOCK_M, BLOCK_N, BLOCK_K, TILE, BLOCK_SIZE, THREAD_M, …)
  the values c − 1, c, c + 1 and 2c ± 1 — because that is where guards, ragged tiles and the fast/edge kernel
  split go wrong. Shapes where K is a multiple of BLOCK_K and N of 4 (the 128-bit fast path) come up on purpose;
* one draw in four is a shape the 128-bit fast path accepts (K a multiple of BLOCK_K, N of 4, at least one
  full BLOCK_M×BLOCK_N tile), so the fast kernel, the edge kernel and their split are all exercised;
* the layout of each host input: C order, Fortran order, a strided view, a view with negative strides;
* how the result comes back: a new NumPy array, a Fortran-ordered ``out``, or device arrays with a NaN-poisoned
  device ``out`` (the strongest check that every element is written).

Budget: the simulator runs every GPU thread as a Python thread, so a 129×129 product is cheap for a step with
8×8 results per thread and costly for one with 1 result per thread. Each drawn shape is scaled down (K first,
then the larger of M and N) until the cost model (:func:`example_seconds`) predicts at most
``SECONDS_PER_EXAMPLE`` (1 s: enough for two k-tiles of step 9's 128×256 tile; on a GPU every drawn shape runs
as drawn), so a step costs at most
``MAX_EXAMPLES × SECONDS_PER_EXAMPLE`` by that model (plus the 1×1×1 example). (Until 2026-11-26 the API's model
priced the warpgroup steps 14–18 as FMA steps without barriers, 3–6× too cheap at the time, so this file kept a model
of its own for them; the API's model now counts barriers and 3xTF32's three products, and errs on the slow side for
every step: one model.) CI draws 4 examples per step (about 40 s for all steps on a 2-core machine; it drew
6 until 2026-11-25, ~57 s): each run draws new ones (no example
database), so the hunt goes on from run to run. The fixed shapes of tests/test_steps.py are the guaranteed coverage
of every step; this file hunts around them. For a longer hunt:
``GEMM_STEPS_HYPOTHESIS_EXAMPLES=200 GEMM_STEPS_HYPOTHESIS_SECONDS=3``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from numba import cuda

import gemm_steps
from gemm_steps.harness.simulator import estimated_seconds, products_of
from helpers import assert_close, tile_geometry

STEPS = gemm_steps.steps()
MAX_DIM = 150
MAX_EXAMPLES = int(os.environ.get("GEMM_STEPS_HYPOTHESIS_EXAMPLES", "4"))
SECONDS_PER_EXAMPLE = float(os.environ.get("GEMM_STEPS_HYPOTHESIS_SECONDS", "1.0"))
PRIMES = [2, 3, 5, 7, 11, 13, 17, 31, 37, 61, 67, 97, 127, 131, 149]
#: Config names that are tile sizes (anything else in ``step.config`` — counts, flags — is not a size).
TILE_NAMES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "TILE", "BLOCK_SIZE", "THREAD_M", "THREAD_N", "WARP_TILE_M",
              "WARP_TILE_N")


def interesting_sizes(step) -> list[int]:
    sizes = {1, 2, 3, 4, *PRIMES}
    for name in TILE_NAMES:
        c = step.config.get(name)
        if isinstance(c, int) and c > 0:
            sizes |= {c - 1, c, c + 1, 2 * c - 1, 2 * c + 1}
    return sorted(s for s in sizes if 1 <= s <= MAX_DIM)


def dimension(step):
    return st.one_of(st.sampled_from(interesting_sizes(step)), st.integers(1, MAX_DIM))


def block_k(step) -> int:
    config = step.config
    return int(config.get("BLOCK_K", config.get("TILE", config.get("BLOCK_SIZE", 8))))


def aligned_dimensions(step):
    """Shapes the 128-bit fast path accepts (K a multiple of BLOCK_K, N of 4) with at least one full tile."""
    bm, bn, _, _ = tile_geometry(step.config)
    bk = block_k(step)
    ms = sorted({bm, bm + 1, bm + 3, 2 * bm - 1} & set(range(1, MAX_DIM + 1))) or [bm]
    ns = sorted({bn, bn + 4, 2 * bn - 4} & set(range(4, MAX_DIM + 1, 4))) or [bn]
    return st.tuples(st.sampled_from(ms), st.sampled_from(ns), st.sampled_from([bk, 2 * bk, 3 * bk]))


def example_seconds(step, m: int, n: int, k: int) -> float:
    """The simulator's time for one example: the API's own cost model (``gemm_steps.harness.simulator``), with the
    products a multiply-add of the 3xTF32 steps on ``wgmma``."""
    return estimated_seconds(step.config, m, n, k, products_of(step))


def fit_budget(step, m: int, n: int, k: int) -> tuple[int, int, int]:
    """Shrink K (keeping it a multiple of BLOCK_K if it was one), then the larger of M and N, until the
    simulator cost model allows the shape."""
    bk = block_k(step)
    while example_seconds(step, m, n, k) > SECONDS_PER_EXAMPLE and k > 1:
        k = k - bk if k % bk == 0 and k > bk else max(1, k // 2)
    while example_seconds(step, m, n, k) > SECONDS_PER_EXAMPLE and max(m, n) > 1:
        if m >= n:
            m = max(1, m // 2)
        else:
            n = max(1, n // 2)
    return m, n, k


LAYOUTS = ["C", "F", "strided", "reversed"]


def host_matrix(rng: np.random.Generator, rows: int, cols: int, layout: str) -> np.ndarray:
    if layout == "C":
        return rng.standard_normal((rows, cols), dtype=np.float32)
    if layout == "F":
        return np.asfortranarray(rng.standard_normal((rows, cols), dtype=np.float32))
    big = rng.standard_normal((2 * rows, 3 * cols), dtype=np.float32)
    view = big[::2, ::3] if layout == "strided" else big[::-2, ::-3]
    assert view.shape == (rows, cols)
    return view


@st.composite
def problems(draw, step):
    if draw(st.integers(0, 3)) == 0:  # one draw in four: a shape the fast full-tile path takes
        m, n, k = draw(aligned_dimensions(step))
    else:
        m, n, k = draw(dimension(step)), draw(dimension(step)), draw(dimension(step))
    if gemm_steps.SIMULATOR:  # on a GPU every shape here takes milliseconds
        m, n, k = fit_budget(step, m, n, k)
    return {
        "shape": (m, n, k),
        "layout_a": draw(st.sampled_from(LAYOUTS)),
        "layout_b": draw(st.sampled_from(LAYOUTS)),
        "result": draw(st.sampled_from(["new", "out_F", "device"])),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def check(step, problem):
    m, n, k = problem["shape"]
    assume(not gemm_steps.SIMULATOR or example_seconds(step, m, n, k) <= SECONDS_PER_EXAMPLE)
    rng = np.random.default_rng(problem["seed"])
    a = host_matrix(rng, m, k, problem["layout_a"])
    b = host_matrix(rng, k, n, problem["layout_b"])
    what = f"step {step.number} {step.name}, {problem}"
    if problem["result"] == "device":
        out = cuda.to_device(np.full((m, n), np.nan, np.float32))
        assert step(cuda.to_device(np.array(a, order="C")), cuda.to_device(np.array(b, order="C")), out=out) is out
        result = out.copy_to_host()
    elif problem["result"] == "out_F":
        out = np.full((m, n), np.nan, np.float32, order="F")
        assert step(a, b, out=out) is out
        result = out
    else:
        result = step(a, b)
        assert isinstance(result, np.ndarray)
    assert_close(result, np.array(a), np.array(b), what, step=step)


def _property_test(step):
    @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(problem=problems(step))
    @example(problem={"shape": (1, 1, 1), "layout_a": "F", "layout_b": "reversed", "result": "device", "seed": 1})
    def run(problem):
        check(step, problem)

    return run


@pytest.mark.parametrize("step", STEPS, ids=lambda s: f"{s.number}-{s.name}")
def test_step_matches_float64_on_random_shapes_and_layouts(step):
    _property_test(step)()


def test_interesting_sizes_come_from_the_config():
    """The shape strategy really targets each step's tiles (guards against config names drifting)."""
    for step in STEPS:
        sizes = interesting_sizes(step)
        tiles = [step.config[name] for name in TILE_NAMES if isinstance(step.config.get(name), int)]
        assert tiles, f"step {step.name} declares none of {TILE_NAMES} in its config"
        for c in tiles:
            assert {c - 1, c + 1} & set(sizes) or c > MAX_DIM, (step.name, c, sizes)
