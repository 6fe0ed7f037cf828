"""Step 1 — naive: one thread per element of C.

What it does: thread (x, y) of the grid computes ``C[row, col] = sum_k A[row, k] * B[k, col]`` with a plain loop,
reading every operand straight from global memory.
The thread→element mapping is the naive one: ``threadIdx.x`` (which varies fastest inside a warp) picks the *row*.
So the 32 threads of a warp work on 32 different rows: each load of ``A[row, k]`` is 32 addresses K floats apart
(32 separate memory transactions), and each store to ``C`` is strided the same way; the ``B[k, col]`` load is the
same address for the whole warp (a broadcast).
Why it is slow: 2 global loads per FMA, a strided pattern on A, and no reuse beyond what the caches catch.
Expect: a few percent of cuBLAS; measured in ``results/``.
"""

from numba import cuda, float32

from ..toolkit.kernel_tools import ceil_div, kernel

TITLE = "Naive: one thread per output, warps read A with a stride"
SUMMARY = "Three nested loops on the GPU: each thread computes one C element straight from global memory."

BLOCK_SIZE = 32  # a 32×32 thread block; threadIdx.x → row (the uncoalesced choice)
CONFIG = {"BLOCK_SIZE": BLOCK_SIZE}


@kernel
def naive_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    row = cuda.blockIdx.y * BLOCK_SIZE + cuda.threadIdx.x  # neighbours in a warp get neighbouring rows…
    col = cuda.blockIdx.x * BLOCK_SIZE + cuda.threadIdx.y  # …and the same column
    if row < m and col < n:
        acc = float32(0.0)
        for k in range(k_total):
            acc += a[row, k] * b[k, col]  # a[row, k]: 32 rows apart across the warp — strided
        c[row, col] = acc


def launch(a, b, c, stream=0):
    m, n = c.shape
    grid = (ceil_div(n, BLOCK_SIZE), ceil_div(m, BLOCK_SIZE))  # block rows along y, as in every step
    naive_kernel[grid, (BLOCK_SIZE, BLOCK_SIZE), stream](a, b, c)


_MATRIX = "float32[:, ::1]"
KERNELS = {"naive": (naive_kernel, f"void({_MATRIX}, {_MATRIX}, {_MATRIX})")}
