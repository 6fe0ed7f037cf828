"""The TMA + mbarrier build of step 15 (experiments/kernels/warpgroup_tma.py), a candidate step. On the simulator
(the twins of the copy engine and the barriers, one warpgroup on a 32×64 tile): the product equals float64 on the
inputs the tensor core reads (A truncated to TF32, B rounded) to float32 rounding — which holds only if every stage
of the ring is filled, waited for and released in the right phase — on full tiles (the TMA kernel) and ragged shapes
(step 15's edge kernel). Its compiled code: the copy engine's instructions, no cp.async, no block-wide barrier in the
k-loop. On an H100 experiments/warpgroup_tma_bench.py measures it and tests/test_gpu.py-style checks run there."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness.verify import relative_error, tf32_tolerance
from gemm_steps.toolkit.tensor_core_ops import round_to_tf32, truncate_to_tf32

from experiments.kernels import warpgroup_tma


def _wgmma_here() -> bool:
    return gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)


pytestmark = pytest.mark.skipif(not _wgmma_here(), reason="wgmma and the copy engine need compute capability 9.0")


@pytest.mark.parametrize("shape", [(64, 64, 64), (64, 128, 256), (45, 70, 20)])
def test_it_multiplies_the_tf32_inputs_exactly_up_to_float32_rounding(shape):
    m, n, k = shape if gemm_steps.SIMULATOR else tuple(8 * x for x in shape)
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    kernels = warpgroup_tma.build(warpgroup_tma.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else warpgroup_tma.CONFIG)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    for _ in range(2):  # twice: the second launch replays the recorded plan on a GPU
        kernels.launch(cuda.to_device(a), cuda.to_device(b), c)
    got = c.copy_to_host()
    assert not np.isnan(got).any()
    fed = truncate_to_tf32(a).astype(np.float64) @ round_to_tf32(b).astype(np.float64)
    assert np.abs(got - fed).max() <= 1e-5 * np.abs(fed).max()
    assert relative_error(got, a, b) <= tf32_tolerance(k)
