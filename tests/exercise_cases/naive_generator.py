"""Planted: a generator expression inside the kernel (runs on the simulator, does not compile for a GPU)."""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda

BLOCK_SIZE = 32


@cuda.jit
def naive_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    row = cuda.blockIdx.y * BLOCK_SIZE + cuda.threadIdx.y
    col = cuda.blockIdx.x * BLOCK_SIZE + cuda.threadIdx.x
    if row < m and col < n:
        c[row, col] = sum(a[row, k] * b[k, col] for k in range(k_total))
