"""Planted: NumPy inside the kernel (runs on the simulator, does not compile for a GPU)."""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
import numpy as np
from numba import cuda

BLOCK_SIZE = 32


@cuda.jit
def naive_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    row = cuda.blockIdx.y * BLOCK_SIZE + cuda.threadIdx.y
    col = cuda.blockIdx.x * BLOCK_SIZE + cuda.threadIdx.x
    if row < m and col < n:
        c[row, col] = np.dot(a[row, :], b[:, col])
