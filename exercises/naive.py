"""Exercise `naive` (step 1): one GPU thread computes one element of C = A · B.

Grade it:  gemm-steps exercise check naive

The grader launches your kernel as
    naive_kernel[(ceil(N / 32), ceil(M / 32)), (32, 32)](a, b, c)
so there are at least as many threads as elements of C: blocks of 32×32 threads, block (x, y) covering the
32×32 square of C whose top-left corner is row 32·y, column 32·x. a is M×K, b is K×N, c is M×N (float32).

Hints
* This step's choice: row = blockIdx.y · 32 + threadIdx.x and col = blockIdx.x · 32 + threadIdx.y (lesson 1
  explains why that is the *slow* choice; lesson 2 swaps x and y).
* M and N are not multiples of 32: some threads fall outside C. They must not read or write anything.
* Sum in a float32 local variable, write c once at the end.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32  # noqa: F401

BLOCK_SIZE = 32


@cuda.jit
def naive_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    # Your code here: which element of c is this thread's? Then the sum over k.
    pass
