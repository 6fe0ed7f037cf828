"""The tensor-core chapter (in progress: steps 12 and 13 are built and tested here, not yet in the course's step list).

* the TF32 rounding (NumPy reference, and ``to_tf32`` inside a kernel);
* one warp's ``mma_tf32`` against the NumPy reference with the documented fragment layout — and a kernel that
  passes the fragments the wrong way round gets a wrong answer (so the twin really checks the layout);
* both kernels, fast and edge, on small products: step 12 must equal float64 on TF32-rounded inputs to float32
  accuracy (which only holds if every fragment is placed right), step 13 must meet the float32 tolerance;
* their PTX: the tensor-core instructions, the roundings, the copy pipeline, no local memory.

On the simulator (CI) the kernels run through the twins; on a GPU (``pytest -m gpu`` or a plain run there) the same
tests run the real instructions.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from gemm_steps.harness.ptx import ptx_stats
from gemm_steps.steps import tensor_cores, three_tf32
from gemm_steps.toolkit.tensor_core_ops import mma_tf32, mma_tf32_reference, round_to_tf32, to_tf32
from experiments.tensor_cores import one_warp_mma
from gemm_steps.harness.verify import tf32_tolerance
from helpers import random_matrices, reference, rel_error, rng_for, tolerance

DROPPED = np.uint32(0x1FFF)  # the 13 mantissa bits TF32 does not keep


# -- TF32 rounding ---------------------------------------------------------------------------------------------

def test_round_to_tf32_keeps_ten_mantissa_bits_and_rounds_to_nearest():
    x = rng_for("tf32").standard_normal(10000).astype(np.float32) * np.float32(1000)
    r = round_to_tf32(x)
    assert not (r.view(np.uint32) & DROPPED).any(), "low 13 bits must be zero"
    ulp = np.spacing(np.abs(r)) * 2 ** 13  # TF32's unit in the last place, at r's binade
    assert np.all(np.abs(r.astype(np.float64) - x) <= ulp / 2 * (1 + 1e-9)), "farther than half a TF32 unit"
    assert np.array_equal(round_to_tf32(r), r), "TF32 values are left alone"


def test_round_to_tf32_ties_go_away_from_zero_and_specials_survive():
    half = np.float32(2.0 ** -11)  # half a TF32 unit at 1.0
    values = np.array([1 + half, -(1 + half), 1 + 3 * half, np.inf, -np.inf, 0.0], dtype=np.float32)
    expected = np.array([1 + 2 * half, -(1 + 2 * half), 1 + 4 * half, np.inf, -np.inf, 0.0], dtype=np.float32)
    assert np.array_equal(round_to_tf32(values), expected)
    assert np.isnan(round_to_tf32(np.float32(np.nan)))


@cuda.jit
def _round_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = to_tf32(x[i])


def test_to_tf32_in_a_kernel_rounds_like_the_reference():
    x = (rng_for("to_tf32").standard_normal(64) * 3).astype(np.float32)
    x[:3] = [1 + 2.0 ** -11, -(1 + 2.0 ** -11), 3.0]
    out = cuda.device_array_like(x)
    _round_kernel[1, 64](cuda.to_device(x), out)
    assert np.array_equal(out.copy_to_host().view(np.uint32), round_to_tf32(x).view(np.uint32))


# -- one warp's mma ----------------------------------------------------------------------------------------------

@cuda.jit
def _one_mma_rows_swapped(a, b, c, d):
    """experiments.tensor_cores.one_warp_mma, but passing A's rows group + 8 where rows group belong (a1 ↔ a0): a
    layout mistake."""
    lane = cuda.threadIdx.x
    group, pair = lane // 4, lane % 4
    d0, d1, d2, d3 = mma_tf32(a[group + 8, pair], a[group, pair], a[group + 8, pair + 4], a[group, pair + 4],
                              b[pair, group], b[pair + 4, group],
                              c[group, 2 * pair], c[group, 2 * pair + 1], c[group + 8, 2 * pair],
                              c[group + 8, 2 * pair + 1])
    d[group, 2 * pair] = d0
    d[group, 2 * pair + 1] = d1
    d[group + 8, 2 * pair] = d2
    d[group + 8, 2 * pair + 1] = d3


def _run_one_mma(kernel, rng):
    a = round_to_tf32(rng.standard_normal((16, 8)).astype(np.float32))
    b = round_to_tf32(rng.standard_normal((8, 8)).astype(np.float32))
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = cuda.to_device(np.full((16, 8), np.nan, dtype=np.float32))
    kernel[1, 32](cuda.to_device(a), cuda.to_device(b), cuda.to_device(c), d)
    expected = mma_tf32_reference(a, b, c)
    return float(np.abs(d.copy_to_host() - expected).max() / np.abs(expected).max())


def test_one_warp_mma_matches_the_documented_fragment_layout():
    assert _run_one_mma(one_warp_mma, rng_for("mma")) < 1e-6


def test_a_wrong_fragment_layout_gives_a_wrong_product():
    assert _run_one_mma(_one_mma_rows_swapped, rng_for("mma swapped")) > 0.1


# -- the two kernels, fast and edge ----------------------------------------------------------------------------------

#: (M, N, K): one full block tile, K one k-tile (fast kernel), and a ragged product (edge kernel only).
SHAPES = {"one_full_tile": (tensor_cores.TILED.config.BLOCK_M, tensor_cores.TILED.config.BLOCK_N, 32),
          "ragged": (37, 21, 19)}


def _run(module, m, n, k, name):
    a, b = random_matrices(rng_for(name), m, n, k)
    c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    module.TILED.launch(cuda.to_device(a), cuda.to_device(b), c)
    return a, b, c.copy_to_host()


def _fits(module, m, n) -> bool:
    config = module.TILED.config
    return m % config.BLOCK_M == 0 and n % config.BLOCK_N == 0


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_tf32_step_is_exact_on_tf32_rounded_inputs(shape):
    """Step 12 computes the float32 sum of exact TF32 products: against float64 on *rounded* inputs its error is
    float32's; against the true product it is TF32's (~3e-4), within verify's ``tf32_tolerance`` — which a wrong
    fragment would exceed by far."""
    m, n, k = SHAPES[shape]
    a, b, c = _run(tensor_cores, m, n, k, f"tf32 {shape}")
    assert not np.isnan(c).any(), "unwritten elements"
    on_rounded = rel_error(c, round_to_tf32(a), round_to_tf32(b))
    assert on_rounded <= tolerance(k), f"error {on_rounded:.2e} vs TF32-rounded inputs, tolerance {tolerance(k):.2e}"
    error = rel_error(c, a, b)
    assert max(1e-5, 2 * tolerance(k)) < error <= min(2e-3, tf32_tolerance(k)), \
        f"TF32's own error {error:.2e}: the inputs were rounded"


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_three_tf32_step_meets_the_float32_tolerance(shape):
    m, n, k = SHAPES[shape]
    a, b, c = _run(three_tf32, m, n, k, f"3xtf32 {shape}")
    assert not np.isnan(c).any(), "unwritten elements"
    error = rel_error(c, a, b, reference(a, b))
    assert error <= tolerance(k), f"error {error:.2e} > float32 tolerance {tolerance(k):.2e}"


def test_the_shapes_reach_both_kernels():
    m, n, _ = SHAPES["one_full_tile"]
    assert _fits(tensor_cores, m, n) and _fits(three_tf32, m, n), "the full-tile shape must run the fast kernel"
    m, n, _ = SHAPES["ragged"]
    assert not _fits(tensor_cores, m, n)


# -- the compiled code -------------------------------------------------------------------------------------------

@pytest.mark.ptx("kernels:ptx_jobs:tensor_core_kernels")
@pytest.mark.parametrize("module", [tensor_cores, three_tf32], ids=["tensor_cores", "three_tf32"])
def test_ptx_shows_the_tensor_core_pipeline(ptx, module):
    job = "kernels:ptx_jobs:tensor_core_kernels"
    failures = []
    for label, wanted in module.PTX_EXPECT.items():
        stats = ptx.stats(job, label)
        assert "error" not in stats, f"{label} failed to compile: {stats['error']}"
        for key, value in wanted.items():
            if stats[key] != value:
                failures.append(f"{label}: {key} is {stats[key]}, expected {value}")
    edge = ptx.stats(job, f"{module.TILED.name}_edge")
    assert edge["local"] == 0 and edge["cp.async.ca.shared.global"] > 0, "edge kernel: zero-filling 4-byte copies"
    assert not failures, "\n".join(failures)


def test_ptx_claims_name_counts_the_counter_knows():
    known = set(ptx_stats("\tret;\n"))
    for module in (tensor_cores, three_tf32):
        for wanted in module.PTX_EXPECT.values():
            assert set(wanted) <= known
