"""Step 12's kernel as shipped before its copy addresses were worked out once (commit 0b35bf2), for same-run
before/after timing by ``experiments/tensor_core_speed.py`` (``--run 3``). Every k-tile it recomputes each copy's
source and destination from the tile number, in Numba's 64-bit index arithmetic with ``t % STAGES``.
"""

from numba import cuda, float32, uint32

from gemm_steps.steps import tensor_cores
from gemm_steps.toolkit.intrinsics import copy_async, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.tensor_core_ops import copy_async_commit, copy_async_or_zero, copy_async_wait, mma_tf32, to_tf32
from gemm_steps.toolkit.tiles import TileConfig, TiledKernels
from gemm_steps.toolkit.unroll import registers, unroll


def tensor_core_previous_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks):
    """One BLOCK_M×BLOCK_N tile of C = A·B on the tensor cores; a, b, c are flat row-major float32 arrays."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    # STAGES stages of A ([row][k], rows padded to A_STRIDE) from 0, then STAGES stages of B ([k][col], rows padded
    # to B_STRIDE) from B_BASE: one dynamic shared array, sized at launch.
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warp = tid // 32
    lane = tid % 32
    group = lane // 4  # rows group and group + 8 of an A or C piece, column group of a B piece
    pair = lane % 4  # k = pair and pair + 4 of an A or B piece, columns 2·pair and 2·pair + 1 of a C piece
    warp_row = warp // WARPS_N * WARP_TILE_M
    warp_col = warp % WARPS_N * WARP_TILE_N
    # Where this lane's fragment reads start in a stage (the pieces add compile-time offsets).
    a_read = (warp_row + group) * A_STRIDE + pair
    b_read = pair * B_STRIDE + warp_col + group
    # Where this thread's 16-byte copies come from and go: the same for every k-tile.
    a_row, a_k = registers(A_LOADS), registers(A_LOADS)
    b_k, b_col = registers(B_LOADS), registers(B_LOADS)
    for load in unroll(A_LOADS):
        a_row[load] = (tid + load * THREADS) // A_VECTORS_PER_ROW
        a_k[load] = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
    for load in unroll(B_LOADS):
        b_k[load] = (tid + load * THREADS) // B_VECTORS_PER_ROW
        b_col[load] = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K
    acc = registers(MMA_TILES_M, MMA_TILES_N, 4)  # 4 results of C per mma piece, per lane
    for i in unroll(MMA_TILES_M):
        for j in unroll(MMA_TILES_N):
            for r in unroll(4):
                acc[i][j][r] = float32(0.0)
    a_frag = registers(MMA_TILES_M, 4)
    b_frag = registers(MMA_TILES_N, 2)

    # Iteration t: wait for k-tile t - (STAGES - 1) to land, start copying k-tile t into stage t % STAGES, then
    # compute k-tile t - (STAGES - 1). The barrier also tells every thread that the stage about to be overwritten
    # (computed in the previous iteration) is free.
    for t in range(k_tiles + STAGES - 1):
        copy_async_wait(STAGES - 2)  # of this thread's groups, all but the newest STAGES - 2 have landed
        cuda.syncthreads()  # … and so have every other thread's
        if t < k_tiles:
            k0 = uint32(t) * BLOCK_K
            stage_a = uint32(t % STAGES) * A_STAGE_FLOATS
            stage_b = B_BASE + uint32(t % STAGES) * B_STAGE_FLOATS
            for load in unroll(A_LOADS):
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_a + a_row[load] * A_STRIDE + a_k[load] + q,
                                           a, block_row + a_row[load], k0 + a_k[load] + q, m, k)
                else:
                    copy_async(tiles, stage_a + a_row[load] * A_STRIDE + a_k[load],
                               a, (block_row + a_row[load]) * k + k0 + a_k[load], 4)
            for load in unroll(B_LOADS):
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_b + b_k[load] * B_STRIDE + b_col[load] + q,
                                           b, k0 + b_k[load], block_col + b_col[load] + q, k, n)
                else:
                    copy_async(tiles, stage_b + b_k[load] * B_STRIDE + b_col[load],
                               b, (k0 + b_k[load]) * n + block_col + b_col[load], 4)
        copy_async_commit()  # one group per iteration (empty near the end), so wait_group counts k-tiles
        if t >= STAGES - 1:
            stage = uint32((t - (STAGES - 1)) % STAGES)
            a_base = stage * A_STAGE_FLOATS + a_read
            b_base = B_BASE + stage * B_STAGE_FLOATS + b_read
            for kk in unroll(0, BLOCK_K, 8):  # the k-tile in steps of the mma's k = 8
                for i in unroll(MMA_TILES_M):  # rows group, group + 8 of piece i; k = pair, pair + 4
                    a_frag[i][0] = to_tf32(tiles[a_base + (i * 16 * A_STRIDE + kk)])
                    a_frag[i][1] = to_tf32(tiles[a_base + ((i * 16 + 8) * A_STRIDE + kk)])
                    a_frag[i][2] = to_tf32(tiles[a_base + (i * 16 * A_STRIDE + kk + 4)])
                    a_frag[i][3] = to_tf32(tiles[a_base + ((i * 16 + 8) * A_STRIDE + kk + 4)])
                for j in unroll(MMA_TILES_N):  # column group of piece j; k = pair, pair + 4
                    b_frag[j][0] = to_tf32(tiles[b_base + (kk * B_STRIDE + j * 8)])
                    b_frag[j][1] = to_tf32(tiles[b_base + ((kk + 4) * B_STRIDE + j * 8)])
                for i in unroll(MMA_TILES_M):
                    for j in unroll(MMA_TILES_N):
                        acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3] = mma_tf32(
                            a_frag[i][0], a_frag[i][1], a_frag[i][2], a_frag[i][3], b_frag[j][0], b_frag[j][1],
                            acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])

    # Lane (group, pair) holds C[group][2·pair], C[group][2·pair + 1], C[group + 8][…] of every piece.
    for i in unroll(MMA_TILES_M):
        for j in unroll(MMA_TILES_N):
            for r in unroll(4):
                row = block_row + warp_row + group + (i * 16 + r // 2 * 8)
                col = block_col + warp_col + pair * 2 + (j * 8 + r % 2)
                if EDGE:
                    store_if_inside(c, row, col, m, n, acc[i][j][r])
                else:
                    c[row * n + col] = acc[i][j][r]


def build(config: TileConfig) -> TiledKernels:
    return TiledKernels("tensor_cores_previous", tensor_core_previous_kernel, config, tensor_cores.layout(config))
