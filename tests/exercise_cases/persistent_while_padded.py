"""A valid variant of the persistent exercise: a while loop over the tiles, tiles padded by one column, the tile
computed by a device function of its own."""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

TILE = 16
GROUP_M = 2
PADDED = TILE + 1  # a shared array's shape must be constants: TILE + 1 inside the kernel is not


@cuda.jit(device=True)
def tile_position(tile, row_tiles, col_tiles):
    group = tile // (GROUP_M * col_tiles)
    first_row = group * GROUP_M
    rows = min(GROUP_M, row_tiles - first_row)
    within = tile - group * GROUP_M * col_tiles
    return first_row + within % rows, within // rows


@cuda.jit
def persistent_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    a_tile = cuda.shared.array((TILE, PADDED), float32)
    b_tile = cuda.shared.array((TILE, PADDED), float32)
    x, y = cuda.threadIdx.x, cuda.threadIdx.y
    row_tiles, col_tiles = (m + TILE - 1) // TILE, (n + TILE - 1) // TILE
    tile = cuda.blockIdx.x
    while tile < row_tiles * col_tiles:
        tile_row, tile_col = tile_position(tile, row_tiles, col_tiles)
        row, col = tile_row * TILE + y, tile_col * TILE + x
        total = float32(0.0)
        k0 = 0
        while k0 < k_total:
            if row < m and k0 + x < k_total:
                a_tile[y, x] = a[row, k0 + x]
            else:
                a_tile[y, x] = 0.0
            if k0 + y < k_total and col < n:
                b_tile[y, x] = b[k0 + y, col]
            else:
                b_tile[y, x] = 0.0
            cuda.syncthreads()
            for kk in range(TILE):
                total += a_tile[y, kk] * b_tile[kk, x]
            cuda.syncthreads()
            k0 += TILE
        if row < m and col < n:
            c[row, col] = total
        tile += cuda.gridDim.x
