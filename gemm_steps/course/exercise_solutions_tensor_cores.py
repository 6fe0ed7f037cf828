"""The solutions of the tensor-core exercises (``exercises/tensor_cores.py``, ``exercises/three_tf32.py``).

Steps 12 and 13 are whole tiled, pipelined kernels — too much to write as an exercise — so each exercise is the
idea alone, on one warp: one ``mma.sync`` with its fragments loaded and stored by the layout (lesson 12), and the
3xTF32 split and its three products on a 16×8 tile of C over all of K (lesson 13). Read them after you have tried.
"""

import math

from numba import cuda, float32

from ..toolkit.tensor_core_ops import mma_tf32, to_tf32


# -- tensor_cores: one warp's D = A·B, A 16×8, B 8×8, C 16×8 -----------------------------------------------------
@cuda.jit
def mma_kernel(a, b, c):
    lane = cuda.threadIdx.x % 32
    group = lane // 4  # rows group and group + 8 of A and C, column group of B
    pair = lane % 4  # k = pair and pair + 4 of A and B; columns 2·pair and 2·pair + 1 of C
    a0 = to_tf32(a[group, pair])
    a1 = to_tf32(a[group + 8, pair])
    a2 = to_tf32(a[group, pair + 4])
    a3 = to_tf32(a[group + 8, pair + 4])
    b0 = to_tf32(b[pair, group])
    b1 = to_tf32(b[pair + 4, group])
    zero = float32(0.0)
    d0, d1, d2, d3 = mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)
    c[group, 2 * pair] = d0
    c[group, 2 * pair + 1] = d1
    c[group + 8, 2 * pair] = d2
    c[group + 8, 2 * pair + 1] = d3


# -- three_tf32: one warp's C = A·B, A 16×K, B K×8, C 16×8, K a multiple of 8 ---------------------------------------
@cuda.jit(device=True)
def split(x):
    """(big, small): big = x rounded to the nearest TF32, small = x − big (exact in float32); ±inf stays whole in
    big and a NaN becomes the NaN 0x7FC00000, with small = 0, so that big + small, as the tensor core reads them (the
    top 10 mantissa bits), is x for every float32 x."""
    if math.isnan(x):
        return float32(math.nan), float32(0.0)  # a NaN with only low payload bits would read as inf
    if math.isinf(x):
        return x, float32(0.0)  # inf − inf would be NaN
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
        # The two small products, summed by the tensor core from zero …
        s0, s1, s2, s3 = mma_tf32(a_small0, a_small1, a_small2, a_small3, b_big0, b_big1, zero, zero, zero, zero)
        s0, s1, s2, s3 = mma_tf32(a_big0, a_big1, a_big2, a_big3, b_small0, b_small1, s0, s1, s2, s3)
        # … the big one on its own, from zero …
        d0, d1, d2, d3 = mma_tf32(a_big0, a_big1, a_big2, a_big3, b_big0, b_big1, zero, zero, zero, zero)
        # … and both into the running sum in FP32 (rounded to nearest). Where the big sum is inf or NaN, it alone
        # joins: an inf met a small part of the other sign in the small products (inf − inf = NaN there).
        acc0 += d0 + s0 if math.isfinite(d0) else d0
        acc1 += d1 + s1 if math.isfinite(d1) else d1
        acc2 += d2 + s2 if math.isfinite(d2) else d2
        acc3 += d3 + s3 if math.isfinite(d3) else d3
    c[group, 2 * pair] = acc0
    c[group, 2 * pair + 1] = acc1
    c[group + 8, 2 * pair] = acc2
    c[group + 8, 2 * pair + 1] = acc3
