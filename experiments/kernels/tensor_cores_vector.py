"""Step 12 with lean copy addressing, 128-bit fragment reads (k and columns permuted) and, optionally, TF32 rounding
done once in shared memory: variants timed by ``experiments/tensor_core_speed.py``.

Changed from step 12 (``diff gemm_steps/steps/tensor_cores.py experiments/kernels/tensor_cores_vector.py``):

* **Lean copies** (always): each thread's global source and shared destination of its 16-byte copies are worked out
  once, before the k-loop, and each k-tile only adds k0 (A) or k0·n (B) and the stage's offset. The shipped kernel
  recomputes them from the tile number every k-tile, in 64-bit arithmetic with a division by STAGES: about 190 of
  the ~780 instructions a warp issues per k-tile (SASS of the shipped kernel, ptxas 13.0).
* ``VECTOR_FRAGMENTS``: the mma sums over its 8 k values, so any permutation of k applied to both A and B is free.
  The mma's k-step s, pair p, half e (k = p + 4e of the piece) reads physical k = 8p + 2s + e of the 32-wide
  k-tile, so one 128-bit read gives a lane its A values of two k-steps of one row (a0, a2 of k-steps 2h and
  2h + 1). Columns are permuted the same way in B and C: piece j's column g is warp column g·MMA_TILES_N + j, so
  a lane's B values of all 8 pieces are 8 consecutive floats (two 128-bit reads), and its C values of a row are
  16 consecutive floats (four 128-bit stores). Per k-tile and warp: 16 + 16 128-bit shared reads instead of
  64 + 64 scalar ones. Bank conflicts: A rows padded to 36 floats (as shipped) put rows group and group + 1 one
  16-byte chunk apart, which keeps each quarter-warp's eight 16-byte reads in eight different chunks; B rows are
  not padded but their 16-byte chunks are XOR-swizzled by the row's pair (0, 1, 4, 5), so the four pairs of a
  quarter-warp, reading the same columns in rows 8 apart, land in different chunks.
* ``ROUND_IN_SHARED``: after ``copy_async_wait`` each thread rounds the 16-byte chunks it copied itself (its own
  copies are visible to it after the wait), in place, before the barrier; fragments then go to the mma raw. One
  ``cvt.rna`` per element and k-tile instead of one per fragment read (a B element is read by 2 warps of the block
  … an A element by 4), and NaN stays NaN.
* ``ROUND_LATE``: the same rounding, done at the end of the previous iteration, after this thread's mma (a
  ``copy_async_wait`` for the next k-tile's copies first), so that no warp waits for it at the barrier.
* ``STAGES`` (``build(…, stages=4)``): a deeper copy pipeline (4 stages of 128×256×32 tiles: 204 KB of shared
  memory).
"""

from numba import cuda, float32, uint32

from gemm_steps.steps import tensor_cores
from gemm_steps.toolkit.intrinsics import copy_async, load_float4, store_float4, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.tensor_core_ops import copy_async_commit, copy_async_or_zero, copy_async_wait, mma_tf32, to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import TiledKernels
from gemm_steps.toolkit.unroll import registers, unroll

from gemm_steps.toolkit.tensor_core_ops import load_matrix_x4


def tensor_cores_vector_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                               BLOCK_M, BLOCK_N, BLOCK_K, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N, MMA_TILES_M,
                               MMA_TILES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_STRIDE, B_STRIDE,
                               STAGES, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, EDGE, VECTOR_FRAGMENTS, ROUND_IN_SHARED,
                               MATRIX_LOAD_A, ROUND_LATE):
    """One BLOCK_M×BLOCK_N tile of C = A·B on the tensor cores; a, b, c are flat row-major float32 arrays."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warp = tid // 32
    lane = tid % 32
    group = lane // 4
    pair = lane % 4
    warp_row = warp // WARPS_N * WARP_TILE_M
    warp_col = warp % WARPS_N * WARP_TILE_N
    if VECTOR_FRAGMENTS:
        # A: row group of each piece, physical k = 8·pair … 8·pair + 7 (two 128-bit reads per row and k-tile).
        a_read = (warp_row + group) * A_STRIDE + pair * 8
        # B: rows 8·pair + 2s + e, whose chunks are swizzled by pair; columns group·8 … group·8 + 7 of the warp's.
        b_swizzle = (pair & 1) | (pair >> 1) << 2
        b_read_low = pair * 8 * B_STRIDE + warp_col + ((group * 2) ^ b_swizzle) * 4
        b_read_high = pair * 8 * B_STRIDE + warp_col + ((group * 2 + 1) ^ b_swizzle) * 4
    else:
        a_read = (warp_row + group) * A_STRIDE + pair
        b_read = pair * B_STRIDE + warp_col + group
        # MATRIX_LOAD_A: lane L gives the address of row L % 16 of the piece at k + 4·(L // 16) (matrices 0–3 of
        # load_matrix_x4 are rows 0–7 and 8–15 at k 0–3, then at k 4–7).
        a_matrix = (warp_row + lane % 16) * A_STRIDE + lane // 16 * 4
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    # This thread's 16-byte copies: where they come from (advanced by one k-tile after each copy) and where they go
    # in a stage, worked out once.
    a_row, a_k, a_from, a_to = registers(A_LOADS), registers(A_LOADS), registers(A_LOADS), registers(A_LOADS)
    b_k, b_col, b_from, b_to = registers(B_LOADS), registers(B_LOADS), registers(B_LOADS), registers(B_LOADS)
    for load in unroll(A_LOADS):
        a_row[load] = (tid + load * THREADS) // A_VECTORS_PER_ROW
        a_k[load] = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
        a_from[load] = uint32((block_row + a_row[load]) * k + a_k[load])
        a_to[load] = uint32(a_row[load] * A_STRIDE + a_k[load])
    for load in unroll(B_LOADS):
        b_k[load] = (tid + load * THREADS) // B_VECTORS_PER_ROW
        b_col[load] = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
        b_from[load] = uint32(b_k[load] * n + block_col + b_col[load])
        if VECTOR_FRAGMENTS:
            b_to[load] = uint32(b_k[load] * B_STRIDE + ((b_col[load] // 4) ^ ((b_k[load] >> 3 & 1) | (b_k[load] >> 4 & 1) << 2)) * 4)
        else:
            b_to[load] = uint32(b_k[load] * B_STRIDE + b_col[load])
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K
    b_step = uint32(BLOCK_K * n)  # from one k-tile of B to the next
    acc = registers(MMA_TILES_M, MMA_TILES_N, 4)
    for i in unroll(MMA_TILES_M):
        for j in unroll(MMA_TILES_N):
            for r in unroll(4):
                acc[i][j][r] = float32(0.0)
    a_frag = registers(MMA_TILES_M, 2, 4)  # VECTOR_FRAGMENTS: [piece][row group, group + 8][4 physical k]
    b_frag = registers(MMA_TILES_N, 2)
    k0 = uint32(0)
    load_stage = uint32(0)  # the stage k-tile t is copied into …
    compute_stage = uint32(0)  # … and the one k-tile t - (STAGES - 1) is computed from

    for t in range(k_tiles + STAGES - 1):
        copy_async_wait(STAGES - 2)
        if ROUND_IN_SHARED:
            if t >= STAGES - 1:  # this thread's own chunks of the stage computed below have landed: round them
                for load in unroll(A_LOADS):
                    at = uint32(compute_stage * A_STAGE_FLOATS + a_to[load])
                    x0, x1, x2, x3 = load_float4(tiles, at)
                    store_float4(tiles, at, to_tf32(x0), to_tf32(x1), to_tf32(x2), to_tf32(x3))
                for load in unroll(B_LOADS):
                    at = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_to[load])
                    x0, x1, x2, x3 = load_float4(tiles, at)
                    store_float4(tiles, at, to_tf32(x0), to_tf32(x1), to_tf32(x2), to_tf32(x3))
        cuda.syncthreads()
        if t < k_tiles:
            stage_a = uint32(load_stage * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + load_stage * B_STAGE_FLOATS)
            for load in unroll(A_LOADS):
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_a + a_to[load] + q,
                                           a, block_row + a_row[load], k0 + a_k[load] + q, m, k)
                else:
                    copy_async(tiles, uint32(stage_a + a_to[load]), a, a_from[load], 4)
                    a_from[load] = uint32(a_from[load] + BLOCK_K)
            for load in unroll(B_LOADS):
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_b + b_to[load] + q,
                                           b, k0 + b_k[load], block_col + b_col[load] + q, k, n)
                else:
                    copy_async(tiles, uint32(stage_b + b_to[load]), b, b_from[load], 4)
                    b_from[load] = uint32(b_from[load] + b_step)
            k0 = uint32(k0 + BLOCK_K)
            load_stage = uint32(load_stage + 1)
            if load_stage == STAGES:
                load_stage = uint32(0)
        copy_async_commit()
        if t >= STAGES - 1:
            a_base = uint32(compute_stage * A_STAGE_FLOATS + a_read)
            if VECTOR_FRAGMENTS:
                b_low = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_read_low)
                b_high = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_read_high)
                for h in unroll(BLOCK_K // 16):  # one 128-bit read of A per row covers k-steps 2h and 2h + 1
                    for i in unroll(MMA_TILES_M):
                        for half in unroll(2):
                            x0, x1, x2, x3 = load_float4(tiles, a_base + ((i * 16 + half * 8) * A_STRIDE + h * 4))
                            if ROUND_IN_SHARED:
                                a_frag[i][half][0], a_frag[i][half][1], a_frag[i][half][2], a_frag[i][half][3] = x0, x1, x2, x3
                            else:
                                a_frag[i][half][0], a_frag[i][half][1] = to_tf32(x0), to_tf32(x1)
                                a_frag[i][half][2], a_frag[i][half][3] = to_tf32(x2), to_tf32(x3)
                    for s in unroll(2):  # k-step 2h + s: physical k = 8·pair + 4h + 2s + e
                        for e in unroll(2):
                            x0, x1, x2, x3 = load_float4(tiles, b_low + (4 * h + 2 * s + e) * B_STRIDE)
                            y0, y1, y2, y3 = load_float4(tiles, b_high + (4 * h + 2 * s + e) * B_STRIDE)
                            if ROUND_IN_SHARED:
                                b_frag[0][e], b_frag[1][e], b_frag[2][e], b_frag[3][e] = x0, x1, x2, x3
                                b_frag[4][e], b_frag[5][e], b_frag[6][e], b_frag[7][e] = y0, y1, y2, y3
                            else:
                                b_frag[0][e], b_frag[1][e], b_frag[2][e], b_frag[3][e] = to_tf32(x0), to_tf32(x1), to_tf32(x2), to_tf32(x3)
                                b_frag[4][e], b_frag[5][e], b_frag[6][e], b_frag[7][e] = to_tf32(y0), to_tf32(y1), to_tf32(y2), to_tf32(y3)
                        for i in unroll(MMA_TILES_M):
                            for j in unroll(MMA_TILES_N):
                                acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3] = mma_tf32(
                                    a_frag[i][0][2 * s], a_frag[i][1][2 * s], a_frag[i][0][2 * s + 1],
                                    a_frag[i][1][2 * s + 1], b_frag[j][0], b_frag[j][1],
                                    acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])
            else:
                b_base = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_read)
                a_matrix_base = uint32(compute_stage * A_STAGE_FLOATS + a_matrix)
                for kk in unroll(0, BLOCK_K, 8):
                    for i in unroll(MMA_TILES_M):
                        if MATRIX_LOAD_A:  # a0 … a3 of piece i in one ldmatrix
                            x0, x1, x2, x3 = load_matrix_x4(tiles, a_matrix_base + (i * 16 * A_STRIDE + kk))
                            if ROUND_IN_SHARED or ROUND_LATE:
                                a_frag[i][0][0], a_frag[i][0][1], a_frag[i][0][2], a_frag[i][0][3] = x0, x1, x2, x3
                            else:
                                a_frag[i][0][0], a_frag[i][0][1] = to_tf32(x0), to_tf32(x1)
                                a_frag[i][0][2], a_frag[i][0][3] = to_tf32(x2), to_tf32(x3)
                        else:
                            for r in unroll(4):
                                x = tiles[a_base + ((i * 16 + r % 2 * 8) * A_STRIDE + kk + r // 2 * 4)]
                                a_frag[i][0][r] = x if ROUND_IN_SHARED or ROUND_LATE else to_tf32(x)
                    for j in unroll(MMA_TILES_N):
                        for e in unroll(2):
                            x = tiles[b_base + ((kk + e * 4) * B_STRIDE + j * 8)]
                            b_frag[j][e] = x if ROUND_IN_SHARED or ROUND_LATE else to_tf32(x)
                    for i in unroll(MMA_TILES_M):
                        for j in unroll(MMA_TILES_N):
                            acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3] = mma_tf32(
                                a_frag[i][0][0], a_frag[i][0][1], a_frag[i][0][2], a_frag[i][0][3],
                                b_frag[j][0], b_frag[j][1], acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])
            compute_stage = uint32(compute_stage + 1)
            if compute_stage == STAGES:
                compute_stage = uint32(0)
        if ROUND_LATE:
            # The k-tile the next iteration computes, t + 2 - STAGES: this thread's own chunks of it have landed once
            # at most STAGES - 2 newer copy groups are in flight. Round them now, while other warps are still busy
            # with their mma; the barrier at the top of the next iteration shows them to the block.
            if t + 2 >= STAGES and t + 2 - STAGES < k_tiles:
                copy_async_wait(STAGES - 2)
                for load in unroll(A_LOADS):
                    at = uint32(compute_stage * A_STAGE_FLOATS + a_to[load])
                    x0, x1, x2, x3 = load_float4(tiles, at)
                    store_float4(tiles, at, to_tf32(x0), to_tf32(x1), to_tf32(x2), to_tf32(x3))
                for load in unroll(B_LOADS):
                    at = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_to[load])
                    x0, x1, x2, x3 = load_float4(tiles, at)
                    store_float4(tiles, at, to_tf32(x0), to_tf32(x1), to_tf32(x2), to_tf32(x3))

    # Lane (group, pair) holds rows group, group + 8 of each piece; columns 2·pair, 2·pair + 1 of piece j, which
    # are warp columns (2·pair)·8 + j and (2·pair + 1)·8 + j when VECTOR_FRAGMENTS permutes them.
    for i in unroll(MMA_TILES_M):
        for half in unroll(2):
            row = block_row + warp_row + group + (i * 16 + half * 8)
            if VECTOR_FRAGMENTS:
                col = block_col + warp_col + pair * 2 * MMA_TILES_N
                if EDGE:
                    for r in unroll(2):
                        for j in unroll(MMA_TILES_N):
                            store_if_inside(c, row, col + (r * MMA_TILES_N + j), m, n, acc[i][j][half * 2 + r])
                else:
                    for r in unroll(2):
                        for q in unroll(0, MMA_TILES_N, 4):
                            store_float4(c, row * n + col + (r * MMA_TILES_N + q), acc[i][q][half * 2 + r],
                                         acc[i][q + 1][half * 2 + r], acc[i][q + 2][half * 2 + r],
                                         acc[i][q + 3][half * 2 + r])
            else:
                for j in unroll(MMA_TILES_N):
                    for r in unroll(2):
                        col = block_col + warp_col + pair * 2 + (j * 8 + r)
                        if EDGE:
                            store_if_inside(c, row, col, m, n, acc[i][j][half * 2 + r])
                        else:
                            c[row * n + col] = acc[i][j][half * 2 + r]


def layout(config: TileConfig, vector_fragments: bool, round_in_shared: bool, matrix_load_a: bool = False,
           round_late: bool = False, stages: int = 3) -> dict:
    constants = tensor_cores.Config.of(config).check().constants()
    constants["STAGES"] = stages
    if vector_fragments:
        if config.BLOCK_K != 32 or constants["MMA_TILES_N"] != 8:
            raise ValueError("the 128-bit fragment reads are written for BLOCK_K = 32 and 64-column warp tiles")
        constants["B_STRIDE"] = config.BLOCK_N  # no padding: the chunks are swizzled instead
        constants["B_STAGE_FLOATS"] = config.BLOCK_K * config.BLOCK_N
    if vector_fragments and matrix_load_a:
        raise ValueError("MATRIX_LOAD_A reads the unpermuted layout")
    if vector_fragments and round_late:
        raise ValueError("ROUND_LATE is written for the unpermuted layout")
    constants.update(VECTOR_FRAGMENTS=vector_fragments, ROUND_IN_SHARED=round_in_shared, MATRIX_LOAD_A=matrix_load_a,
                     ROUND_LATE=round_late)
    return constants


def build(config: TileConfig, vector_fragments: bool = False, round_in_shared: bool = False,
          matrix_load_a: bool = False, round_late: bool = False, stages: int = 3) -> TiledKernels:
    tiles = "" if (config.BLOCK_M, config.BLOCK_N) == (128, 256) else f"_{config.BLOCK_M}x{config.BLOCK_N}"
    name = ("tc_vector" + tiles + ("_v" if vector_fragments else "") + ("_r" if round_in_shared else "")
            + ("_m" if matrix_load_a else "") + ("_l" if round_late else "") + ("" if stages == 3 else f"_s{stages}"))
    return TiledKernels(name, tensor_cores_vector_kernel, config,
                        layout(config, vector_fragments, round_in_shared, matrix_load_a, round_late, stages))
