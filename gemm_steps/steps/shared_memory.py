"""Step 3 — shared-memory block tiling.

Changed from step 2: a 32×32 block of threads first copies a TILE×TILE slice of A and one of B into shared memory
(one element per thread, coalesced), waits, and then runs TILE steps of the k-loop out of shared memory.
Why faster: each element fetched from global memory is now used TILE = 32 times by the block, so global traffic per
FMA falls from 2 loads to 2/32 loads — arithmetic intensity ×32. The caches did some of this for step 2;
shared memory makes the reuse explicit and guaranteed.
Expect: now limited by shared-memory bandwidth and instruction issue (2 shared loads per FMA), not DRAM.
Edges: loads outside A or B write zeros into the tile, and threads outside C skip the store, so any M, N, K works.
"""

from numba import cuda, float32

from ..toolkit.kernel_tools import ceil_div, kernel

TITLE = "Shared memory: 32×32 block tiling"
SUMMARY = "Stage 32×32 tiles of A and B in shared memory so each global load feeds 32 FMAs."

TILE = 32
CONFIG = {"BLOCK_M": TILE, "BLOCK_N": TILE, "BLOCK_K": TILE}


@kernel
def shared_memory_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    a_tile = cuda.shared.array((TILE, TILE), float32)
    b_tile = cuda.shared.array((TILE, TILE), float32)
    ty = cuda.threadIdx.y
    tx = cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx

    acc = float32(0.0)
    for k0 in range(0, k_total, TILE):
        # Each thread copies one element of each tile (zero outside the matrices): coalesced along rows.
        a_tile[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k_total else float32(0.0)
        b_tile[ty, tx] = b[k0 + ty, col] if k0 + ty < k_total and col < n else float32(0.0)
        cuda.syncthreads()  # the tiles are complete
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()  # everyone is done reading before the next copy overwrites the tiles
    if row < m and col < n:
        c[row, col] = acc


def launch(a, b, c, stream=0):
    m, n = c.shape
    grid = (ceil_div(n, TILE), ceil_div(m, TILE))
    shared_memory_kernel[grid, (TILE, TILE), stream](a, b, c)


_MATRIX = "float32[:, ::1]"
KERNELS = {"shared_memory": (shared_memory_kernel, f"void({_MATRIX}, {_MATRIX}, {_MATRIX})")}
