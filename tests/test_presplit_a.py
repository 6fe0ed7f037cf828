"""experiments/kernels/presplit_a.py: step 18 with A split once by a first kernel instead of by the producer in every
block. The same values reach the tensor core, so the same bits as step 18 on whole tiles (simulator at step 18's
32 × 64 tile; a GPU of compute capability 9.0 at 128 × 128); a ragged product runs its full tiles so and the rest on
step 14's edge kernel. A wrong row offset of the small parts, or a missing wait for the split, gives other bits."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gemm_steps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from experiments.kernels import presplit_a  # noqa: E402
from gemm_steps.steps import warp_specialized_3xtf32 as step18  # noqa: E402
from gemm_steps.toolkit.tuned import default_config  # noqa: E402
from helpers import random_matrices, run_in_nan_margin  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
    reason="wgmma and the copy engine need compute capability 9.0")

CONFIG = step18.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else step18.Config.of(default_config(step18.SEARCH_SPACE))


@pytest.mark.parametrize("sim_shape, gpu_shape", [((64, 64, 160), (256, 256, 320)), ((32, 64, 32), (128, 128, 32))])
def test_presplit_gives_step_18s_bits(sim_shape, gpu_shape):
    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    one_slice = dict(slices=lambda *_: 1)  # (the GPU's 256 × 256 × 320 would take split-K: 4 tiles, 10 k-tiles)
    ours = run_in_nan_margin(presplit_a.build(CONFIG, **one_slice), a, b)
    shipped = run_in_nan_margin(step18.build(CONFIG, **one_slice), a, b)
    assert np.isfinite(ours).all()
    np.testing.assert_array_equal(ours, shipped)


def test_presplit_ragged_product_is_right():
    m, n, k = (40, 70, 96) if gemm_steps.SIMULATOR else (300, 200, 96)
    a, b = random_matrices(np.random.default_rng(3), m, n, k)
    ours = run_in_nan_margin(presplit_a.build(CONFIG), a, b)
    np.testing.assert_allclose(ours, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
