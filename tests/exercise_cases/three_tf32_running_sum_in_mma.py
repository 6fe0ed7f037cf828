"""A wrong solution of exercise three_tf32: the running sum kept in the tensor core's accumulator (acc passed in as C)."""

import math

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

from gemm_steps.toolkit.tensor_core_ops import mma_tf32, to_tf32


@cuda.jit(device=True)
def split(x):
    if math.isnan(x):
        return float32(math.nan), float32(0.0)
    if math.isinf(x):
        return x, float32(0.0)
    big = to_tf32(x)
    return big, x - big


@cuda.jit
def three_tf32_kernel(a, b, c):
    k_total = a.shape[1]
    lane = cuda.threadIdx.x % 32
    group = lane // 4
    pair = lane % 4
    zero = float32(0.0)
    acc0, acc1, acc2, acc3 = zero, zero, zero, zero
    for k0 in range(0, k_total, 8):
        a_big0, a_small0 = split(a[group, k0 + pair])
        a_big1, a_small1 = split(a[group + 8, k0 + pair])
        a_big2, a_small2 = split(a[group, k0 + pair + 4])
        a_big3, a_small3 = split(a[group + 8, k0 + pair + 4])
        b_big0, b_small0 = split(b[k0 + pair, group])
        b_big1, b_small1 = split(b[k0 + pair + 4, group])
        # The running sum kept in the tensor core's accumulator, small products first: lesson 13's first version.
        acc0, acc1, acc2, acc3 = mma_tf32(a_small0, a_small1, a_small2, a_small3, b_big0, b_big1,
                                          acc0, acc1, acc2, acc3)
        acc0, acc1, acc2, acc3 = mma_tf32(a_big0, a_big1, a_big2, a_big3, b_small0, b_small1, acc0, acc1, acc2, acc3)
        acc0, acc1, acc2, acc3 = mma_tf32(a_big0, a_big1, a_big2, a_big3, b_big0, b_big1, acc0, acc1, acc2, acc3)
    c[group, 2 * pair] = acc0
    c[group, 2 * pair + 1] = acc1
    c[group + 8, 2 * pair] = acc2
    c[group + 8, 2 * pair + 1] = acc3
