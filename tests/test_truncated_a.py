"""Step 18's TRUNCATED_A build: A's big part is the float32 the copy engine left, which the tensor core reads
truncated to TF32, and the producer writes only A's small parts (x − truncated x, scaled by 2^11: exact). On the
simulator (step 18's 32 × 64 tile, the twin truncating as the hardware does): within the FP32 contract's bound on full
and partial tiles, standard-normal and wide-exponent inputs; an inf in A gives SGEMM's inf/NaN pattern; and it is not
the shipped build (its bits differ). A GPU of compute capability 9.0 runs the same at 128 × 128."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import fp32_contract as contract
from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.toolkit.tuned import default_config
from helpers import random_matrices, run_in_nan_margin

pytestmark = pytest.mark.skipif(
    not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
    reason="wgmma and the copy engine need compute capability 9.0")

CONFIG = (step18.SIMULATOR_CONFIG if gemm_steps.SIMULATOR
          else step18.Config.of(default_config(step18.SEARCH_SPACE)))
ONE_SLICE = dict(slices=lambda *_: 1)
SHAPES = [pytest.param((64, 64, 320), (256, 256, 320), id="full"), pytest.param((20, 50, 70), (100, 100, 70),
                                                                                 id="partial")]


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("sim_shape, gpu_shape", SHAPES)
def test_truncated_a_keeps_the_contract(sim_shape, gpu_shape, wide):
    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    rng = np.random.default_rng(m * n + k)
    a, b = random_matrices(rng, m, n, k)
    if wide:  # entries scaled by 2^u, u in -20 … 20 (experiments/three_tf32_wide.py's inputs)
        a = (a * np.exp2(rng.integers(-20, 21, a.shape))).astype(np.float32)
        b = (b * np.exp2(rng.integers(-20, 21, b.shape))).astype(np.float32)
    got = run_in_nan_margin(step18.build(replace(CONFIG, TRUNCATED_A=True), **ONE_SLICE), a, b)
    shipped = run_in_nan_margin(step18.build(CONFIG, **ONE_SLICE), a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = contract.contract_bound(contract.normwise_error(contract.sgemm_model(a, b), a, b, exact))
    assert contract.normwise_error(got, a, b, exact) <= bound
    assert not np.array_equal(got, shipped)  # the build's own arithmetic, not the shipped one's


def test_an_inf_in_a_gives_sgemms_pattern():
    m, n, k = (32, 64, 64) if gemm_steps.SIMULATOR else (128, 128, 64)
    a, b = random_matrices(np.random.default_rng(1), m, n, k)
    a[3, 5] = np.inf
    got = run_in_nan_margin(step18.build(replace(CONFIG, TRUNCATED_A=True), **ONE_SLICE), a, b)
    want = contract.sgemm_model(a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
