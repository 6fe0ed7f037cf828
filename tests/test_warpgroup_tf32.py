"""Step 15 (gemm_steps/steps/warpgroup_tf32.py): step 14's staging with one product per k-step. On the simulator (step 14's twin, one warpgroup on a 32×64 tile): the product equals float64 on
the inputs the tensor core reads (A truncated to TF32, B rounded) to float32 rounding — which only holds if every
fragment, the swizzled layout and the transposed store are right — on full tiles (fast kernel) and ragged shapes
(edge kernel), and stays within verify's TF32 tolerance of the exact product."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness.verify import relative_error, tf32_tolerance
from gemm_steps.steps import warpgroup_tf32
from helpers import tf32_product

pytestmark = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the simulator's build; the GPU's is tested by "
                                                                  "tests/test_gpu.py")


@pytest.mark.parametrize("shape", [(64, 64, 64), (45, 70, 20), (33, 130, 50)])
def test_it_multiplies_the_tf32_inputs_exactly_up_to_float32_rounding(shape):
    m, n, k = shape
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    kernels = warpgroup_tf32.build(warpgroup_tf32.SIMULATOR_CONFIG)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    kernels.launch(cuda.to_device(a), cuda.to_device(b), c)
    got = c.copy_to_host()
    assert not np.isnan(got).any()
    fed = tf32_product(a, b, False)  # step 15 loads float32: A truncated, B rounded
    assert np.abs(got - fed).max() <= 1e-5 * np.abs(fed).max()
    assert relative_error(got, a, b) <= tf32_tolerance(k)
