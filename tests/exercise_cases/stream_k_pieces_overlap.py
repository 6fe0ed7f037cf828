"""Planted (stream_k): each piece starts at its tile's first k-iteration, not at the share's: k-iterations computed twice."""

import gemm_steps  # noqa: F401
from numba import cuda, float32

TILE = 16  # a tile of C is TILE × TILE; a k-iteration is TILE values of k


@cuda.jit(device=True)
def stream_k_share(block, blocks, iterations):
    """[begin, end): the k-iterations of block ``block`` when ``iterations`` are dealt evenly to ``blocks``."""
    return block * iterations // blocks, (block + 1) * iterations // blocks


@cuda.jit(device=True)
def partial_sum(a, b, row, col, k_first, k_count):
    """Σ a[row, k]·b[k, col] over k-iterations k_first … k_first + k_count − 1 (0 outside A or B)."""
    acc = float32(0.0)
    if row < a.shape[0] and col < b.shape[1]:
        for k in range(k_first * TILE, min((k_first + k_count) * TILE, a.shape[1])):
            acc += a[row, k] * b[k, col]
    return acc


@cuda.jit
def stream_k_kernel(a, b, c, workspace, flags):
    m, k_total = a.shape
    n = b.shape[1]
    ty = cuda.threadIdx.y
    tx = cuda.threadIdx.x
    thread = ty * TILE + tx
    col_tiles = (n + TILE - 1) // TILE
    k_tiles = (k_total + TILE - 1) // TILE
    iterations = (m + TILE - 1) // TILE * col_tiles * k_tiles  # tile t's k-iterations: t·k_tiles … (t+1)·k_tiles − 1
    block = cuda.blockIdx.x
    blocks = cuda.gridDim.x
    begin, end = stream_k_share(block, blocks, iterations)
    iteration = end  # walk the share backwards: the piece another block waits for comes first
    while iteration > begin:
        tile = (iteration - 1) // k_tiles
        tile_start = tile * k_tiles  # the tile's first k-iteration
        first = tile_start  # (wrong: the tile's start, even if the share starts later)
        row = tile // col_tiles * TILE + ty
        col = tile % col_tiles * TILE + tx
        acc = partial_sum(a, b, row, col, first - tile_start, iteration - first)
        if iteration < tile_start + k_tiles:
            # Not the tile's last k-iteration: a writer. Partial sums to our slot, fence, then the flag.
            workspace[block * TILE * TILE + thread] = acc
            cuda.threadfence()  # our partial sum is visible GPU-wide before the flag is
            cuda.syncthreads()  # … every thread's, before thread 0 raises it
            if thread == 0:
                cuda.atomic.exch(flags, block, 1)
        else:
            # The tile's last k-iteration is ours: the owner. Add the partial sums of the blocks before us whose
            # shares end inside this tile, nearest first, each after its flag.
            other = block
            covered = first  # k-iterations covered … iteration − 1 of the tile are in acc
            while other > 0 and covered > tile_start:
                other -= 1
                other_begin, other_end = stream_k_share(other, blocks, iterations)
                if other_end <= tile_start:
                    break  # that block's share ends before this tile
                if other_end > other_begin:  # it had work (with more blocks than iterations, some have none)
                    if thread == 0:
                        while cuda.atomic.add(flags, other, 0) == 0:
                            pass  # spin until block `other` has released its partial sums
                        cuda.threadfence()  # acquire: the reads below see what was written before its flag
                        flags[other] = 0  # reset for the next launch
                    cuda.syncthreads()  # the other threads read after thread 0's fence
                    acc += workspace[other * TILE * TILE + thread]
                    covered = other_begin
            if row < m and col < n:
                c[row, col] = acc
        iteration = first
