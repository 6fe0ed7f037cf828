"""Exercise `register_2d` (step 5): each thread computes an 8×8 block of C from shared memory.

Grade it:  gemm-steps exercise check register_2d

The grader launches your kernel as
    register_2d_kernel[(ceil(N / 128), ceil(M / 128)), 256](a, b, c)
One block of 256 threads (threadIdx.x only) computes a 128×128 tile of C; it walks K in slices of BLOCK_K = 8.
Thread t owns the 8×8 block of the tile at rows (t // 16)·8…, columns (t % 16)·8….

Per slice of K:
1. the block copies the 128×8 slice of A and the 8×128 slice of B into shared memory: 1024 elements each, so 4 per
   thread (thread t copies elements t, t + 256, t + 512, t + 768 of each, numbered row by row); zero outside A or B;
2. syncthreads;
3. for each of the 8 k: load this thread's 8 values of A (a column of its rows) and 8 of B (a row of its columns)
   into local arrays, then the 64 multiply-adds of their outer product into the 8×8 accumulator;
4. syncthreads.
At the end, store the 64 results, each guarded by row < M and col < N.

Hints
* cuda.local.array((THREAD_M, THREAD_N), float32) is the accumulator: zero it first.
* Lesson 5 explains why the shipped kernel casts every index to uint32; for correctness, plain ints are fine.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32  # noqa: F401

BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 8
THREAD_M, THREAD_N = 8, 8
THREADS = 256


@cuda.jit
def register_2d_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    # Your code here.
    pass
