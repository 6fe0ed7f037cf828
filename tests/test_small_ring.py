"""experiments/kernels/small_ring.py: step 18's kernel with fewer buffers of A's small parts than stages. Only where
the small parts live changes (and the split of k-tile u waits for the release of k-tile u − SMALL_STAGES), so C is
step 18's bits. On the simulator at step 18's 32 × 64 tile, ten k-tiles (every buffer reused), four and five stages
with three buffers; a GPU of compute capability 9.0 runs the same at 128 × 128. A wrong buffer or a missing wait
fails it on the simulator (checked by hand: without the wait, both cases fail)."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from experiments.kernels import small_ring
from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.toolkit.tuned import default_config
from helpers import random_matrices, run_in_nan_margin

pytestmark = pytest.mark.skipif(
    not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
    reason="wgmma and the copy engine need compute capability 9.0")

STEP_18 = (step18.SIMULATOR_CONFIG if gemm_steps.SIMULATOR
           else step18.Config.of(default_config(step18.SEARCH_SPACE)))


def ring(**changes) -> small_ring.Config:
    return small_ring.Config(**{**{f.name: getattr(STEP_18, f.name) for f in fields(step18.Config)}, **changes})


@pytest.mark.parametrize("stages", [4, 5])
def test_fewer_small_buffers_give_step_18s_bits(stages):
    m, n, k = (64, 64, 320) if gemm_steps.SIMULATOR else (256, 256, 320)
    a, b = random_matrices(np.random.default_rng(stages), m, n, k)
    got = run_in_nan_margin(small_ring.build(ring(STAGES=stages, SMALL_STAGES=3)), a, b)
    want = run_in_nan_margin(step18.build(STEP_18, slices=lambda *_: 1), a, b)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, want)


def test_the_ring_settings_are_checked():
    assert ring(STAGES=5, SMALL_STAGES=3).problems() == []
    assert ring(SMALL_STAGES=5).problems() and ring(SPLIT_BEHIND=4).problems()
