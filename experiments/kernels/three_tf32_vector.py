"""Step 13 with lean copy addressing and, optionally, 128-bit fragment reads (k and columns permuted): variants
timed by ``experiments/tensor_core_speed.py``.

Changed from step 13 (``diff gemm_steps/steps/three_tf32.py experiments/kernels/three_tf32_vector.py``): the
copies and the fragment reads of ``experiments/kernels/tensor_cores_vector.py`` (see its docstring); the split
(``split_tf32``), the three products per piece and k-step summed from zero by the tensor core, and the FP32 add of
each k-step's sum into the running sum are step 13's. With ``VECTOR_FRAGMENTS`` a lane reads its A values of two
k-steps at once (raw, 32 registers) and splits each k-step's half just before that k-step's products.
``MATRIX_LOAD_A``: A's fragments of a piece come from one ``ldmatrix`` (``load_matrix_x4``, toolkit/tensor_core_ops.py)
instead of four scalar loads. ``FLUSH_STEPS`` (``flush_pairs=True``: 2; ``flush_steps=4``: a whole k-tile): the
tensor core sums the products of that many k-steps from zero before one FP32 add per result (1/2 or 1/4 of step
13's FADDs; the B fragments of those k-steps are held, and the loop runs over piece rows outside, so that only one
piece row's A fragments are live).
"""

from numba import cuda, float32, uint32

from gemm_steps.toolkit.intrinsics import copy_async, load_float4, store_float4, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.tensor_core_ops import copy_async_commit, copy_async_or_zero, copy_async_wait, mma_tf32, split_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import TiledKernels
from gemm_steps.toolkit.unroll import registers, unroll

from gemm_steps.toolkit.tensor_core_ops import load_matrix_x4

from .tensor_cores_vector import layout


def three_tf32_vector_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                             BLOCK_M, BLOCK_N, BLOCK_K, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N, MMA_TILES_M,
                             MMA_TILES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_STRIDE, B_STRIDE,
                             STAGES, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, EDGE, VECTOR_FRAGMENTS, FLUSH_STEPS,
                             MATRIX_LOAD_A):
    """One BLOCK_M×BLOCK_N tile of C = A·B, 3xTF32 on the tensor cores; a, b, c are flat row-major float32 arrays."""
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
        a_read = (warp_row + group) * A_STRIDE + pair * 8
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
    a_raw = registers(MMA_TILES_M, 2, 4)  # VECTOR_FRAGMENTS: [piece][row group, group + 8][4 physical k]
    a_big, a_small = registers(MMA_TILES_M, 4), registers(MMA_TILES_M, 4)
    b_big, b_small = registers(MMA_TILES_N, 2), registers(MMA_TILES_N, 2)
    # FLUSH_STEPS > 1: B of all k-steps summed before one FP32 add, and one piece row's A of them
    b_pair_big, b_pair_small = registers(FLUSH_STEPS, MMA_TILES_N, 2), registers(FLUSH_STEPS, MMA_TILES_N, 2)
    a_pair_big, a_pair_small = registers(FLUSH_STEPS, 4), registers(FLUSH_STEPS, 4)
    k0 = uint32(0)
    load_stage = uint32(0)
    compute_stage = uint32(0)

    for t in range(k_tiles + STAGES - 1):
        copy_async_wait(STAGES - 2)
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
                for h in unroll(BLOCK_K // 16):
                    for i in unroll(MMA_TILES_M):
                        for half in unroll(2):
                            a_raw[i][half][0], a_raw[i][half][1], a_raw[i][half][2], a_raw[i][half][3] = load_float4(
                                tiles, a_base + ((i * 16 + half * 8) * A_STRIDE + h * 4))
                    for s in unroll(2):  # k-step 2h + s: physical k = 8·pair + 4h + 2s + e
                        for i in unroll(MMA_TILES_M):  # a0, a1, a2, a3 = rows group, group + 8 at e = 0, then e = 1
                            for r in unroll(4):
                                a_big[i][r], a_small[i][r] = split_tf32(a_raw[i][r % 2][2 * s + r // 2])
                        for e in unroll(2):
                            x0, x1, x2, x3 = load_float4(tiles, b_low + (4 * h + 2 * s + e) * B_STRIDE)
                            y0, y1, y2, y3 = load_float4(tiles, b_high + (4 * h + 2 * s + e) * B_STRIDE)
                            b_big[0][e], b_small[0][e] = split_tf32(x0)
                            b_big[1][e], b_small[1][e] = split_tf32(x1)
                            b_big[2][e], b_small[2][e] = split_tf32(x2)
                            b_big[3][e], b_small[3][e] = split_tf32(x3)
                            b_big[4][e], b_small[4][e] = split_tf32(y0)
                            b_big[5][e], b_small[5][e] = split_tf32(y1)
                            b_big[6][e], b_small[6][e] = split_tf32(y2)
                            b_big[7][e], b_small[7][e] = split_tf32(y3)
                        for i in unroll(MMA_TILES_M):
                            for j in unroll(MMA_TILES_N):
                                d0, d1, d2, d3 = mma_tf32(a_small[i][0], a_small[i][1], a_small[i][2], a_small[i][3],
                                                          b_big[j][0], b_big[j][1], float32(0.0), float32(0.0),
                                                          float32(0.0), float32(0.0))
                                d0, d1, d2, d3 = mma_tf32(a_big[i][0], a_big[i][1], a_big[i][2], a_big[i][3],
                                                          b_small[j][0], b_small[j][1], d0, d1, d2, d3)
                                d0, d1, d2, d3 = mma_tf32(a_big[i][0], a_big[i][1], a_big[i][2], a_big[i][3],
                                                          b_big[j][0], b_big[j][1], d0, d1, d2, d3)
                                acc[i][j][0] += d0
                                acc[i][j][1] += d1
                                acc[i][j][2] += d2
                                acc[i][j][3] += d3
            elif FLUSH_STEPS > 1:
                b_base = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_read)
                a_matrix_base = uint32(compute_stage * A_STAGE_FLOATS + a_matrix)
                for kk in unroll(0, BLOCK_K, 8 * FLUSH_STEPS):  # FLUSH_STEPS k-steps per FP32 add
                    for s in unroll(FLUSH_STEPS):
                        for j in unroll(MMA_TILES_N):
                            for r in unroll(2):
                                x = tiles[b_base + ((kk + s * 8 + r * 4) * B_STRIDE + j * 8)]
                                b_pair_big[s][j][r], b_pair_small[s][j][r] = split_tf32(x)
                    for i in unroll(MMA_TILES_M):
                        for s in unroll(FLUSH_STEPS):
                            if MATRIX_LOAD_A:
                                x0, x1, x2, x3 = load_matrix_x4(tiles, a_matrix_base + (i * 16 * A_STRIDE + kk + s * 8))
                                a_pair_big[s][0], a_pair_small[s][0] = split_tf32(x0)
                                a_pair_big[s][1], a_pair_small[s][1] = split_tf32(x1)
                                a_pair_big[s][2], a_pair_small[s][2] = split_tf32(x2)
                                a_pair_big[s][3], a_pair_small[s][3] = split_tf32(x3)
                            else:
                                for r in unroll(4):
                                    x = tiles[a_base + ((i * 16 + r % 2 * 8) * A_STRIDE + kk + s * 8 + r // 2 * 4)]
                                    a_pair_big[s][r], a_pair_small[s][r] = split_tf32(x)
                        for j in unroll(MMA_TILES_N):
                            d0, d1, d2, d3 = float32(0.0), float32(0.0), float32(0.0), float32(0.0)
                            for s in unroll(FLUSH_STEPS):
                                d0, d1, d2, d3 = mma_tf32(a_pair_small[s][0], a_pair_small[s][1], a_pair_small[s][2],
                                                          a_pair_small[s][3], b_pair_big[s][j][0], b_pair_big[s][j][1],
                                                          d0, d1, d2, d3)
                                d0, d1, d2, d3 = mma_tf32(a_pair_big[s][0], a_pair_big[s][1], a_pair_big[s][2],
                                                          a_pair_big[s][3], b_pair_small[s][j][0], b_pair_small[s][j][1],
                                                          d0, d1, d2, d3)
                                d0, d1, d2, d3 = mma_tf32(a_pair_big[s][0], a_pair_big[s][1], a_pair_big[s][2],
                                                          a_pair_big[s][3], b_pair_big[s][j][0], b_pair_big[s][j][1],
                                                          d0, d1, d2, d3)
                            acc[i][j][0] += d0
                            acc[i][j][1] += d1
                            acc[i][j][2] += d2
                            acc[i][j][3] += d3
            else:
                b_base = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_read)
                a_matrix_base = uint32(compute_stage * A_STAGE_FLOATS + a_matrix)
                for kk in unroll(0, BLOCK_K, 8):
                    for i in unroll(MMA_TILES_M):
                        if MATRIX_LOAD_A:  # a0 … a3 of piece i in one ldmatrix
                            x0, x1, x2, x3 = load_matrix_x4(tiles, a_matrix_base + (i * 16 * A_STRIDE + kk))
                            a_big[i][0], a_small[i][0] = split_tf32(x0)
                            a_big[i][1], a_small[i][1] = split_tf32(x1)
                            a_big[i][2], a_small[i][2] = split_tf32(x2)
                            a_big[i][3], a_small[i][3] = split_tf32(x3)
                        else:
                            for r in unroll(4):
                                x = tiles[a_base + ((i * 16 + r % 2 * 8) * A_STRIDE + kk + r // 2 * 4)]
                                a_big[i][r], a_small[i][r] = split_tf32(x)
                    for j in unroll(MMA_TILES_N):
                        for r in unroll(2):
                            x = tiles[b_base + ((kk + r * 4) * B_STRIDE + j * 8)]
                            b_big[j][r], b_small[j][r] = split_tf32(x)
                    for i in unroll(MMA_TILES_M):
                        for j in unroll(MMA_TILES_N):
                            d0, d1, d2, d3 = mma_tf32(a_small[i][0], a_small[i][1], a_small[i][2], a_small[i][3],
                                                      b_big[j][0], b_big[j][1], float32(0.0), float32(0.0),
                                                      float32(0.0), float32(0.0))
                            d0, d1, d2, d3 = mma_tf32(a_big[i][0], a_big[i][1], a_big[i][2], a_big[i][3],
                                                      b_small[j][0], b_small[j][1], d0, d1, d2, d3)
                            d0, d1, d2, d3 = mma_tf32(a_big[i][0], a_big[i][1], a_big[i][2], a_big[i][3],
                                                      b_big[j][0], b_big[j][1], d0, d1, d2, d3)
                            acc[i][j][0] += d0
                            acc[i][j][1] += d1
                            acc[i][j][2] += d2
                            acc[i][j][3] += d3
            compute_stage = uint32(compute_stage + 1)
            if compute_stage == STAGES:
                compute_stage = uint32(0)

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


def build(config: TileConfig, vector_fragments: bool = False, matrix_load_a: bool = False,
          flush_pairs: bool = False, stages: int = 3, flush_steps: int | None = None) -> TiledKernels:
    flush_steps = flush_steps or (2 if flush_pairs else 1)
    tiles = "" if (config.BLOCK_M, config.BLOCK_N) == (128, 256) else f"_{config.BLOCK_M}x{config.BLOCK_N}"
    name = ("t3_vector" + tiles + ("_v" if vector_fragments else "") + ("_m" if matrix_load_a else "")
            + ("_p" if flush_steps == 2 else f"_f{flush_steps}" if flush_steps > 2 else "")
            + ("" if stages == 3 else f"_s{stages}"))
    constants = layout(config, vector_fragments, False, matrix_load_a, stages=stages)
    constants["FLUSH_STEPS"] = flush_steps
    return TiledKernels(name, three_tf32_vector_kernel, config, constants)
