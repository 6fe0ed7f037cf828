"""Step 18's TAKE_TURNS build: its two consumer warpgroups take turns issuing a k-tile's wgmma (named barriers), so
one's products run while the other waits for its own. Only the order of issue changes — each thread's sums are
computed as before — so the build gives step 18's bits exactly.

On the simulator: two consumer warpgroups on a 32 × 128 tile (step 18's simulator tile has one), full tiles over one
and three k-tiles and a partial-tile product of one k-tile (the turn's last arrival skipped), each against the same
tile without turns; a missing or extra arrival would end in the twin's barrier error. A GPU of compute capability 9.0
runs the same at step 18's 128 × 128 tile.
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

#: Two consumer warpgroups: on the simulator a 32 × 128 tile (4 × 4 results a thread), on a GPU step 18's own.
CONFIG = (replace(step18.SIMULATOR_CONFIG, BLOCK_M=32, BLOCK_N=128, THREAD_M=4, THREAD_N=4) if gemm_steps.SIMULATOR
          else step18.Config.of(default_config(step18.SEARCH_SPACE)))
#: (M, N, K) on the simulator, and on a GPU: one full tile of one k-tile; 2 × 1 full tiles of three; a partial tile
#: of one partial k-tile.
SHAPES = [pytest.param((32, 128, 32), (128, 128, 32), id="one_k_tile"),
          pytest.param((64, 128, 96), (256, 128, 96), id="three_k_tiles"),
          pytest.param((20, 100, 20), (100, 100, 20), id="partial")]


@pytest.mark.parametrize("sim_shape, gpu_shape", SHAPES)
def test_taking_turns_gives_the_same_bits(sim_shape, gpu_shape):
    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    one_slice = dict(slices=lambda *_: 1)
    turns = run_in_nan_margin(step18.build(replace(CONFIG, TAKE_TURNS=True), **one_slice), a, b)
    plain = run_in_nan_margin(step18.build(replace(CONFIG, TAKE_TURNS=False), **one_slice), a, b)
    assert np.isfinite(turns).all()
    np.testing.assert_array_equal(turns, plain)


def test_turns_need_two_consumers():
    assert step18.Config(TAKE_TURNS=True).problems() == []
    assert step18.Config(BLOCK_N=64, TAKE_TURNS=True).problems()
    assert step18.Config(BLOCK_N=64, TAKE_TURNS=False).problems() == []
