"""A wrong solution of exercise tensor_cores: B's fragment read transposed (b[group, pair] for B[pair][group])."""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

from gemm_steps.toolkit.tensor_core_ops import mma_tf32, to_tf32


@cuda.jit
def mma_kernel(a, b, c):
    lane = cuda.threadIdx.x % 32
    group = lane // 4
    pair = lane % 4
    a0 = to_tf32(a[group, pair])
    a1 = to_tf32(a[group + 8, pair])
    a2 = to_tf32(a[group, pair + 4])
    a3 = to_tf32(a[group + 8, pair + 4])
    b0 = to_tf32(b[group, pair])  # B is K×N: this is B[group][pair], row `group`
    b1 = to_tf32(b[group, pair + 4])
    zero = float32(0.0)
    d0, d1, d2, d3 = mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)
    c[group, 2 * pair] = d0
    c[group, 2 * pair + 1] = d1
    c[group + 8, 2 * pair] = d2
    c[group + 8, 2 * pair + 1] = d3
