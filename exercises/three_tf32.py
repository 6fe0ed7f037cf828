"""Exercise `three_tf32` (lesson 13): float32's accuracy from TF32 tensor cores — split, three products, one sum.

Grade it:  gemm-steps exercise check three_tf32

The grader launches your kernel on one warp:
    three_tf32_kernel[1, 32](a, b, c)
a is 16×K, b is K×8, c is 16×8 (float32), K a multiple of 8. The warp walks K in k-steps of 8, loading each lane's
fragment elements by the layout of exercise ``tensor_cores`` (given below), and stores C by it at the end. You write:

1. ``split(x)`` → (big, small): big = x rounded to the nearest TF32 (``to_tf32``), small = x − big (exact in
   float32; the tensor core reads its top 11 bits). Then big + small = x — for every float32 x, inf and NaN too: an
   inf or NaN goes whole into big, with small = 0.
2. In the k-loop: split the six fragment elements, and sum the three products that matter (lesson 13, "Why three
   products are enough"): small_a·big_b and big_a·small_b, summed by two ``mma_tf32`` starting from zero, and
   big_a·big_b by a third, from zero too; then add both results to the running sum (acc) in FP32.

What the grader measures, on the simulator: the error ‖C − A·B‖ / ‖|A|·|B|‖ on the FP32 contract's input classes
(docs/fp32_contract.md) at K = 16 and on uniform positive inputs at K = 256, against the contract's bound — at most
2× the error of the sequential float32 sum (cuBLAS SGEMM's order), or 9u where that is tiny. The simulator's
``mma_tf32`` truncates its float32 results toward zero, as lesson 13 models the tensor core ("The trap"). Then inf
and NaN: ``split`` on its own, and C's inf and NaN against where the sequential float32 sum has them.

Hints
* A truncated split (big = x with its low bits dropped) leaves a small part the tensor core cannot read whole.
* The tensor core's additions truncate: a running sum kept in its accumulator (acc passed in as C) loses a little
  every k-step, in the same direction, and the error grows with K (lesson 13, "The trap").
* inf times B's small parts, which have either sign, gives +inf and −inf in the small products (NaN together): where
  the big products' sum is inf or NaN, it joins acc alone.
* Step 13 also scales small by 2^11 (``split_tf32_scaled``) so that inputs below about 2^-115 keep their small part in
  TF32's normal range; this exercise leaves that out (the grader skips the class scaled by 2^-120).
"""

import math  # noqa: F401

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

from gemm_steps.toolkit.tensor_core_ops import mma_tf32, to_tf32  # noqa: F401


@cuda.jit(device=True)
def split(x):
    # Your code here: (big, small).
    return x, float32(0.0)


@cuda.jit
def three_tf32_kernel(a, b, c):
    k_total = a.shape[1]
    lane = cuda.threadIdx.x % 32
    group = lane // 4
    pair = lane % 4
    zero = float32(0.0)
    acc0, acc1, acc2, acc3 = zero, zero, zero, zero
    for k0 in range(0, k_total, 8):
        x0 = a[group, k0 + pair]  # this lane's A and B elements of the k-step, by the fragment layout
        x1 = a[group + 8, k0 + pair]
        x2 = a[group, k0 + pair + 4]
        x3 = a[group + 8, k0 + pair + 4]
        y0 = b[k0 + pair, group]
        y1 = b[k0 + pair + 4, group]
        # Your code here: split them, three mma_tf32, and acc0 … acc3 += what they give.
    c[group, 2 * pair] = acc0
    c[group, 2 * pair + 1] = acc1
    c[group + 8, 2 * pair] = acc2
    c[group + 8, 2 * pair + 1] = acc3
