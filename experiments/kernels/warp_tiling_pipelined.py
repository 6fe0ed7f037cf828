"""Step 9 with its fragments double-buffered in registers ("pipelined"): measured slower on the H200, not shipped.

Changed from step 9 (``diff gemm_steps/steps/warp_tiling.py experiments/kernels/warp_tiling_pipelined.py``): the
fragments come in two register sets that alternate by column of the k-tile, so column kk + 1's shared-memory loads
are in flight while column kk's FMAs run; right after each barrier, the next stage's first fragments are loaded
while the current stage's last column is computed, so no FMA waits for a shared load after a barrier (CUTLASS's
SIMT kernels do this). Timed by ``experiments/pipelining.py``: 5.7 points of cuBLAS slower than step 9 at 4096³.
(The old text template's ``PIPELINED`` switch.)
"""

from numba import cuda, float32, uint32

from gemm_steps.steps import warp_tiling
from gemm_steps.toolkit.intrinsics import load_float4, load_or_zero, store_float4, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import TiledKernels
from gemm_steps.toolkit.unroll import registers, unroll


def warp_tiling_pipelined_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                                 BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, WARPS_N, WARP_TILE_M,
                                 WARP_TILE_N, LANES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW,
                                 A_CHUNK_STRIDE, B_CHUNK_STRIDE, DYNAMIC_SHARED, B_BASE, EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B; a, b, c are flat row-major float32 arrays."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    # Two stages of each tile: stage s of A starts at s * BLOCK_K * BLOCK_M.
    if DYNAMIC_SHARED:  # over 48 KB: one dynamic array, sized at launch; B's stages start at B_BASE
        a_tile = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
        b_tile = a_tile  # B as is: [k][col]
    else:
        a_tile = cuda.shared.array(2 * BLOCK_K * BLOCK_M, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
        b_tile = cuda.shared.array(2 * BLOCK_K * BLOCK_N, float32, alignment=SHARED_ALIGN)  # B as is: [k][col]
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    # Warp tiling: warp w owns a WARP_TILE_M×WARP_TILE_N block; inside it, lane l owns 4×4 sub-blocks spaced
    # A_CHUNK_STRIDE rows and B_CHUNK_STRIDE columns apart, so a warp's fragment loads hit contiguous shared memory.
    warp = tid // 32
    lane = tid % 32
    thread_row = warp // WARPS_N * WARP_TILE_M + lane // LANES_N * 4
    thread_col = warp % WARPS_N * WARP_TILE_N + lane % LANES_N * 4
    # Where this thread's 128-bit loads land in each tile: fixed for the whole k-loop.
    a_row, a_k = registers(A_LOADS), registers(A_LOADS)
    b_k, b_col = registers(B_LOADS), registers(B_LOADS)
    for load in unroll(A_LOADS):
        a_row[load] = (tid + load * THREADS) // A_VECTORS_PER_ROW
        a_k[load] = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
    for load in unroll(B_LOADS):
        b_k[load] = (tid + load * THREADS) // B_VECTORS_PER_ROW
        b_col[load] = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    acc = registers(THREAD_M, THREAD_N)
    for i in unroll(THREAD_M):
        for j in unroll(THREAD_N):
            acc[i][j] = float32(0.0)
    a_next, b_next = registers(A_LOADS, 4), registers(B_LOADS, 4)  # the next k-tile, on its way to shared memory
    # Two fragment sets: set 0 for even columns of a k-tile, set 1 for odd ones (filled in the k-loop).
    a_frag, b_frag = registers(2, THREAD_M), registers(2, THREAD_N)
    for s in unroll(2):
        for i in unroll(THREAD_M):
            a_frag[s][i] = float32(0.0)
        for j in unroll(THREAD_N):
            b_frag[s][j] = float32(0.0)

    # The k-loop runs one extra time: iteration t loads k-tile t (if any) into registers, computes k-tile t - 1
    # (if any) from shared stage (t - 1) % 2, then stores the loaded registers into stage t % 2.
    for k_tile in range(k_tiles + 1):
        k0 = uint32(k_tile) * BLOCK_K
        if k_tile < k_tiles:
            for load in unroll(A_LOADS):
                row = block_row + a_row[load]
                if EDGE:
                    col = k0 + a_k[load]
                    for q in unroll(4):
                        a_next[load][q] = load_or_zero(a, row, col + q, m, k)
                else:
                    a_next[load][0], a_next[load][1], a_next[load][2], a_next[load][3] = load_float4(
                        a, row * k + k0 + a_k[load])
            for load in unroll(B_LOADS):
                row = k0 + b_k[load]
                if EDGE:
                    col = block_col + b_col[load]
                    for q in unroll(4):
                        b_next[load][q] = load_or_zero(b, row, col + q, k, n)
                else:
                    b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3] = load_float4(
                        b, row * n + block_col + b_col[load])
        if k_tile > 0:
            stage_a = uint32((k_tile - 1) % 2) * (BLOCK_K * BLOCK_M)
            stage_b = B_BASE + uint32((k_tile - 1) % 2) * (BLOCK_K * BLOCK_N)
            # Columns 0 … BLOCK_K - 2 of the computing stage: column kk + 1's fragments (set (kk + 1) % 2) are
            # loaded while column kk's FMAs (set kk % 2) run. Column 0's were loaded after the last barrier; the
            # last column's FMAs come after the next barrier.
            for kk in unroll(BLOCK_K - 1):
                for q in unroll(0, THREAD_M, 4):
                    a_frag[(kk + 1) % 2][q], a_frag[(kk + 1) % 2][q + 1], a_frag[(kk + 1) % 2][q + 2], \
                        a_frag[(kk + 1) % 2][q + 3] = load_float4(
                            a_tile, stage_a + thread_row + ((kk + 1) * BLOCK_M + q // 4 * A_CHUNK_STRIDE))
                for q in unroll(0, THREAD_N, 4):
                    b_frag[(kk + 1) % 2][q], b_frag[(kk + 1) % 2][q + 1], b_frag[(kk + 1) % 2][q + 2], \
                        b_frag[(kk + 1) % 2][q + 3] = load_float4(
                            b_tile, stage_b + thread_col + ((kk + 1) * BLOCK_N + q // 4 * B_CHUNK_STRIDE))
                for i in unroll(THREAD_M):
                    for jj in unroll(THREAD_N):
                        j = THREAD_N - 1 - jj if i % 2 else jj  # serpentine: odd rows run right to left
                        acc[i][j] += a_frag[kk % 2][i] * b_frag[kk % 2][j]
        if k_tile < k_tiles:
            stage_a = uint32(k_tile % 2) * (BLOCK_K * BLOCK_M)
            stage_b = B_BASE + uint32(k_tile % 2) * (BLOCK_K * BLOCK_N)
            for load in unroll(A_LOADS):
                for q in unroll(4):  # A transposed: its 4 consecutive k values go to 4 rows of a_tile
                    a_tile[stage_a + a_k[load] * BLOCK_M + a_row[load] + q * BLOCK_M] = a_next[load][q]
            for load in unroll(B_LOADS):
                store_float4(b_tile, stage_b + b_k[load] * BLOCK_N + b_col[load],
                             b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3])
        cuda.syncthreads()  # stage t % 2 is written, and everyone is done reading stage (t - 1) % 2
        if k_tile < k_tiles:  # column 0 of the stage just written: fragment set 0, for the next iteration …
            for q in unroll(0, THREAD_M, 4):
                a_frag[0][q], a_frag[0][q + 1], a_frag[0][q + 2], a_frag[0][q + 3] = load_float4(
                    a_tile, stage_a + thread_row + q // 4 * A_CHUNK_STRIDE)
            for q in unroll(0, THREAD_N, 4):
                b_frag[0][q], b_frag[0][q + 1], b_frag[0][q + 2], b_frag[0][q + 3] = load_float4(
                    b_tile, stage_b + thread_col + q // 4 * B_CHUNK_STRIDE)
        if k_tile > 0:  # … loaded while the previous stage's last column (its set, (BLOCK_K - 1) % 2) is computed
            for i in unroll(THREAD_M):
                for jj in unroll(THREAD_N):
                    j = THREAD_N - 1 - jj if i % 2 else jj
                    acc[i][j] += a_frag[(BLOCK_K - 1) % 2][i] * b_frag[(BLOCK_K - 1) % 2][j]

    for i in unroll(THREAD_M):
        row = block_row + thread_row + (i // 4 * A_CHUNK_STRIDE + i % 4)
        if EDGE:
            for j in unroll(THREAD_N):
                store_if_inside(c, row, block_col + thread_col + (j // 4 * B_CHUNK_STRIDE + j % 4), m, n, acc[i][j])
        else:
            for j in unroll(0, THREAD_N, 4):
                store_float4(c, row * n + block_col + thread_col + j // 4 * B_CHUNK_STRIDE,
                             acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])


def build(config: TileConfig, name: str = "warp_tiling_pipelined") -> TiledKernels:
    """Step 9's tile computation with pipelined fragments, for one tile configuration (step 9's layout)."""
    return TiledKernels(name, warp_tiling_pipelined_kernel, config, warp_tiling.Config.of(config).check().constants())
