"""Planted: the persistent exercise as a plain loop over rows of C, no tiles (the numbers are right)."""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

TILE = 16
GROUP_M = 2


@cuda.jit(device=True)
def tile_position(tile, row_tiles, col_tiles):
    tiles_per_group = GROUP_M * col_tiles
    first_row = tile // tiles_per_group * GROUP_M
    rows_in_group = min(row_tiles - first_row, GROUP_M)
    return first_row + tile % tiles_per_group % rows_in_group, tile % tiles_per_group // rows_in_group


@cuda.jit
def persistent_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    thread = cuda.threadIdx.y * TILE + cuda.threadIdx.x
    for row in range(cuda.blockIdx.x, m, cuda.gridDim.x):
        for col in range(thread, n, TILE * TILE):
            acc = float32(0.0)
            for k in range(k_total):
                acc += a[row, k] * b[k, col]
            c[row, col] = acc
