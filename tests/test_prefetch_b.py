"""Step 18's PREFETCH_B build: the consumers read k-tile u + 1's B values while k-tile u's products run, instead of
after — the same arithmetic, so the same bits as the shipped build (simulator at step 18's 32 × 64 tile: full tiles
of ten k-tiles, one k-tile, and a partial product; a GPU of compute capability 9.0 at 128 × 128). A read of the
wrong stage or k-tile gives other bits: the test fails."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.toolkit.tuned import default_config
from helpers import random_matrices, run_in_nan_margin

pytestmark = pytest.mark.skipif(
    not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
    reason="wgmma and the copy engine need compute capability 9.0")

CONFIG = (step18.SIMULATOR_CONFIG if gemm_steps.SIMULATOR
          else step18.Config.of(default_config(step18.SEARCH_SPACE)))


@pytest.mark.parametrize("sim_shape, gpu_shape", [((64, 64, 320), (256, 256, 320)), ((32, 64, 32), (128, 128, 32)),
                                                  ((20, 50, 70), (100, 100, 70))])
def test_prefetched_b_gives_the_same_bits(sim_shape, gpu_shape):
    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    one_slice = dict(slices=lambda *_: 1)
    prefetched = run_in_nan_margin(step18.build(replace(CONFIG, PREFETCH_B=True), **one_slice), a, b)
    shipped = run_in_nan_margin(step18.build(CONFIG, **one_slice), a, b)
    assert np.isfinite(prefetched).all()
    np.testing.assert_array_equal(prefetched, shipped)
    np.testing.assert_allclose(prefetched, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
