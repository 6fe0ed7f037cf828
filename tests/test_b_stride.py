"""experiments/b_stride.py: step 23 with B's rows padded by 4 or 0 floats instead of 8 — only where B's rows lie in
shared memory changes, so the same bits as step 23 (simulator, its small tile; full tiles and a partial product)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import gemm_steps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from experiments import b_stride  # noqa: E402
from gemm_steps.steps import cluster_stream_k_tma_store as step23  # noqa: E402
from helpers import random_matrices, run_in_nan_margin  # noqa: E402

pytestmark = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the simulator check; the experiment times it on a GPU")


@pytest.mark.parametrize("pad", [4, 0])
@pytest.mark.parametrize("shape", [(64, 128, 96), (40, 70, 96)])
def test_less_padding_gives_the_same_bits(pad, shape):
    m, n, k = shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    config = b_stride.padded_config(pad)
    simulated = type(config).of(step23.SIMULATOR_CONFIG, B_PAD=pad)
    assert simulated.B_STRIDE == simulated.BLOCK_N + pad
    ours = run_in_nan_margin(step23.build(simulated), a, b)
    shipped = run_in_nan_margin(step23.build(step23.SIMULATOR_CONFIG), a, b)
    assert np.isfinite(ours).all()
    np.testing.assert_array_equal(ours, shipped)
