"""A wrong solution of exercise three_tf32: a split that turns inf into (inf, NaN): small = inf − inf."""

import math

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

from gemm_steps.toolkit.tensor_core_ops import mma_tf32, to_tf32


@cuda.jit(device=True)
def split(x):
    big = to_tf32(x)  # inf stays inf (and NaN NaN) …
    return big, x - big  # … but inf − inf is NaN


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
        s0, s1, s2, s3 = mma_tf32(a_small0, a_small1, a_small2, a_small3, b_big0, b_big1, zero, zero, zero, zero)
        s0, s1, s2, s3 = mma_tf32(a_big0, a_big1, a_big2, a_big3, b_small0, b_small1, s0, s1, s2, s3)
        d0, d1, d2, d3 = mma_tf32(a_big0, a_big1, a_big2, a_big3, b_big0, b_big1, zero, zero, zero, zero)
        acc0 += d0 + s0 if math.isfinite(d0) else d0
        acc1 += d1 + s1 if math.isfinite(d1) else d1
        acc2 += d2 + s2 if math.isfinite(d2) else d2
        acc3 += d3 + s3 if math.isfinite(d3) else d3
    c[group, 2 * pair] = acc0
    c[group, 2 * pair + 1] = acc1
    c[group + 8, 2 * pair] = acc2
    c[group + 8, 2 * pair + 1] = acc3
