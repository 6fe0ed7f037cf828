"""Planted: a shared array whose shape the kernel computes (the simulator accepts it, a GPU compiler cannot)."""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

TILE = 32


@cuda.jit
def shared_memory_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    size = cuda.blockDim.x
    a_tile = cuda.shared.array((size, size), float32)
    b_tile = cuda.shared.array((size, size), float32)
    ty, tx = cuda.threadIdx.y, cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for k0 in range(0, k_total, TILE):
        a_tile[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k_total else float32(0.0)
        b_tile[ty, tx] = b[k0 + ty, col] if k0 + ty < k_total and col < n else float32(0.0)
        cuda.syncthreads()
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc
