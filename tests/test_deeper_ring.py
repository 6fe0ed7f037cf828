"""Step 18 with fewer buffers of A's small parts than stages (``SMALL_STAGES``), which leaves shared memory for a
fifth stage: k-tile u's small parts go to buffer u % SMALL_STAGES, and the producer splits k-tile u only once the
consumers released k-tile u − SMALL_STAGES. Only where the small parts live changes, so C is step 18's bits.

On the simulator (step 18's 32 × 64 tile): ten k-tiles (every buffer reused three times), with 5 stages and 3 small
buffers, split 2 and 3 k-tiles behind the copies, and a partial product; a GPU of compute capability 9.0 runs the
same at 128 × 128.
"""

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
#: (M, N, K) on the simulator and on a GPU: full tiles of ten k-tiles; a partial tile of three partial ones.
SHAPES = [pytest.param((64, 64, 320), (256, 256, 320), id="ten_k_tiles"),
          pytest.param((20, 50, 70), (100, 100, 70), id="partial")]


@pytest.mark.parametrize("behind", [2, 3])
@pytest.mark.parametrize("sim_shape, gpu_shape", SHAPES)
def test_fewer_small_buffers_give_the_same_bits(sim_shape, gpu_shape, behind):
    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    one_slice = dict(slices=lambda *_: 1)
    deeper = run_in_nan_margin(step18.build(replace(CONFIG, STAGES=5, SMALL_STAGES=3, SPLIT_BEHIND=behind),
                                            **one_slice), a, b)
    shipped = run_in_nan_margin(step18.build(CONFIG, **one_slice), a, b)
    assert np.isfinite(deeper).all()
    np.testing.assert_array_equal(deeper, shipped)


def test_the_ring_settings_are_checked():
    assert step18.Config(STAGES=5, SMALL_STAGES=3).problems() == []
    assert step18.Config(SMALL_STAGES=5).problems()  # more small buffers than stages
    assert step18.Config(SPLIT_BEHIND=4).problems()  # the split as far behind as the ring is long
