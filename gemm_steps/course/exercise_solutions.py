"""The solution of the persistent exercise (``exercises/persistent.py``), and the tile order it is checked against.

The other exercises are solved by the shipped steps themselves (``gemm_steps/steps/``). Step 10's kernel puts its
tile loop around step 9's warp-tiled, unrolled tile computation — too much to write as an exercise — so this
solution puts the same loop and the same grouped tile order around step 3's shared-memory tile, with 16×16 tiles.
Read it after you have tried.
"""

from numba import cuda, float32

TILE = 16
GROUP_M = 2  # tile-rows per group (step 10 uses 8)


@cuda.jit(device=True)
def tile_position(tile, row_tiles, col_tiles):
    """(tile-row, tile-column) of tile number ``tile``: column by column within groups of GROUP_M tile-rows."""
    tiles_per_group = GROUP_M * col_tiles
    first_row = tile // tiles_per_group * GROUP_M  # the group's first tile-row
    rows_in_group = min(row_tiles - first_row, GROUP_M)  # the last group may be shorter
    row = first_row + tile % tiles_per_group % rows_in_group  # down the group's rows…
    col = tile % tiles_per_group // rows_in_group  # …then on to the next column
    return row, col


@cuda.jit
def persistent_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    a_tile = cuda.shared.array((TILE, TILE), float32)
    b_tile = cuda.shared.array((TILE, TILE), float32)
    ty = cuda.threadIdx.y
    tx = cuda.threadIdx.x
    row_tiles = (m + TILE - 1) // TILE
    col_tiles = (n + TILE - 1) // TILE
    # Grid-stride over tiles: block b computes tiles b, b + gridDim.x, b + 2·gridDim.x, …
    for tile in range(cuda.blockIdx.x, row_tiles * col_tiles, cuda.gridDim.x):
        tile_row, tile_col = tile_position(tile, row_tiles, col_tiles)
        row = tile_row * TILE + ty
        col = tile_col * TILE + tx
        acc = float32(0.0)
        for k0 in range(0, k_total, TILE):
            a_tile[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k_total else float32(0.0)
            b_tile[ty, tx] = b[k0 + ty, col] if k0 + ty < k_total and col < n else float32(0.0)
            cuda.syncthreads()
            for kk in range(TILE):
                acc += a_tile[ty, kk] * b_tile[kk, tx]
            cuda.syncthreads()  # also guards the next tile's first copy
        if row < m and col < n:
            c[row, col] = acc


def expected_tile_order(row_tiles: int, col_tiles: int, group_m: int = GROUP_M) -> list[tuple[int, int]]:
    """The grouped order, written as plain loops: tile t of the kernel's loop is the t-th (row, col) of this list."""
    order = []
    for first_row in range(0, row_tiles, group_m):
        rows = range(first_row, min(first_row + group_m, row_tiles))
        for col in range(col_tiles):
            order += [(row, col) for row in rows]
    return order
