"""Step 9 with ``cp.async`` copies from global to shared memory, and with cheaper stage arithmetic: measured slower.

Changed from step 9 (``diff gemm_steps/steps/warp_tiling.py experiments/kernels/warp_tiling_async.py``), three
compile-time switches of this experiment (the old text template's ``ASYNC_A`` / ``ASYNC_B``, and the experiment's
stage-math edit):

* ``ASYNC_B``: B's k-tile is copied with 16-byte ``cp.async`` straight into the next shared stage
  (``LDGSTS.E.BYPASS.128``), skipping the registers and the shared-memory store;
* ``ASYNC_A``: A's four floats per load with 4-byte ``cp.async`` into their transposed places (``LDGSTS.E``);
  with either, one ``cp.async.wait_all`` before the barrier makes the copies land;
* ``UINT32_STAGE``: the stage index ``k_tile % 2`` in unsigned 32-bit arithmetic (step 9 takes it from the signed
  64-bit loop counter, which ``ptxas`` turns into a sign test and 64-bit adds every k-tile).

The edge kernel keeps step 9's guarded scalar loads whatever the switches say. Timed by
``experiments/async_copy.py``: every variant was slower than step 9 (72–87 % of cuBLAS against 88–91 %).
"""

from numba import cuda, float32, uint32

from gemm_steps.steps import warp_tiling
from gemm_steps.toolkit.intrinsics import copy_async, copy_async_wait_all, load_float4, load_or_zero, store_float4, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import TiledKernels
from gemm_steps.toolkit.unroll import registers, unroll


def warp_tiling_async_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                             BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N,
                             LANES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_CHUNK_STRIDE,
                             B_CHUNK_STRIDE, DYNAMIC_SHARED, B_BASE, EDGE, UINT32_STAGE, ASYNC_A, ASYNC_B):
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
    a_frag, b_frag = registers(THREAD_M), registers(THREAD_N)

    # The k-loop runs one extra time: iteration t loads k-tile t (if any) into registers, computes k-tile t - 1
    # (if any) from shared stage (t - 1) % 2, then stores the loaded registers into stage t % 2.
    for k_tile in range(k_tiles + 1):
        k0 = uint32(k_tile) * BLOCK_K
        if k_tile < k_tiles:
            stage = uint32(k_tile) % uint32(2) if UINT32_STAGE else uint32(k_tile % 2)  # where k-tile t goes
            for load in unroll(A_LOADS):
                row = block_row + a_row[load]
                if EDGE:
                    col = k0 + a_k[load]
                    for q in unroll(4):
                        a_next[load][q] = load_or_zero(a, row, col + q, m, k)
                elif ASYNC_A:  # straight into stage t: 4-byte copies, A's 4 k values to 4 rows of a_tile
                    for q in unroll(4):
                        copy_async(a_tile, stage * (BLOCK_K * BLOCK_M) + (a_k[load] + q) * BLOCK_M + a_row[load],
                                   a, row * k + k0 + a_k[load] + q, 1)
                else:
                    a_next[load][0], a_next[load][1], a_next[load][2], a_next[load][3] = load_float4(
                        a, row * k + k0 + a_k[load])
            for load in unroll(B_LOADS):
                row = k0 + b_k[load]
                if EDGE:
                    col = block_col + b_col[load]
                    for q in unroll(4):
                        b_next[load][q] = load_or_zero(b, row, col + q, k, n)
                elif ASYNC_B:  # straight into stage t: one 16-byte copy
                    copy_async(b_tile, B_BASE + stage * (BLOCK_K * BLOCK_N) + b_k[load] * BLOCK_N + b_col[load],
                               b, row * n + block_col + b_col[load], 4)
                else:
                    b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3] = load_float4(
                        b, row * n + block_col + b_col[load])
        if k_tile > 0:
            stage = (uint32(k_tile) + uint32(1)) % uint32(2) if UINT32_STAGE else uint32((k_tile - 1) % 2)
            stage_a = stage * (BLOCK_K * BLOCK_M)
            stage_b = B_BASE + stage * (BLOCK_K * BLOCK_N)
            # The unrolled k-loop over the BLOCK_K columns of the computing stage.
            for kk in unroll(BLOCK_K):
                for q in unroll(0, THREAD_M, 4):
                    a_frag[q], a_frag[q + 1], a_frag[q + 2], a_frag[q + 3] = load_float4(
                        a_tile, stage_a + thread_row + (kk * BLOCK_M + q // 4 * A_CHUNK_STRIDE))
                for q in unroll(0, THREAD_N, 4):
                    b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                        b_tile, stage_b + thread_col + (kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE))
                for i in unroll(THREAD_M):
                    for jj in unroll(THREAD_N):
                        j = THREAD_N - 1 - jj if i % 2 else jj  # serpentine: odd rows run right to left
                        acc[i][j] += a_frag[i] * b_frag[j]
        if k_tile < k_tiles:
            stage = uint32(k_tile) % uint32(2) if UINT32_STAGE else uint32(k_tile % 2)
            stage_a = stage * (BLOCK_K * BLOCK_M)
            stage_b = B_BASE + stage * (BLOCK_K * BLOCK_N)
            if EDGE or not ASYNC_A:
                for load in unroll(A_LOADS):
                    for q in unroll(4):  # A transposed: its 4 consecutive k values go to 4 rows of a_tile
                        a_tile[stage_a + a_k[load] * BLOCK_M + a_row[load] + q * BLOCK_M] = a_next[load][q]
            if EDGE or not ASYNC_B:
                for load in unroll(B_LOADS):
                    store_float4(b_tile, stage_b + b_k[load] * BLOCK_N + b_col[load],
                                 b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3])
            if not EDGE and (ASYNC_A or ASYNC_B):
                copy_async_wait_all()  # our copies into stage t have landed; the barrier shows them to everyone
        cuda.syncthreads()  # stage t % 2 is written, and everyone is done reading stage (t - 1) % 2

    for i in unroll(THREAD_M):
        row = block_row + thread_row + (i // 4 * A_CHUNK_STRIDE + i % 4)
        if EDGE:
            for j in unroll(THREAD_N):
                store_if_inside(c, row, block_col + thread_col + (j // 4 * B_CHUNK_STRIDE + j % 4), m, n, acc[i][j])
        else:
            for j in unroll(0, THREAD_N, 4):
                store_float4(c, row * n + block_col + thread_col + j // 4 * B_CHUNK_STRIDE,
                             acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])



def build(config: TileConfig, async_a: bool = False, async_b: bool = False, uint32_stage: bool = False,
          name: str = "warp_tiling_async") -> TiledKernels:
    """Step 9's tile computation with the chosen copies asynchronous and/or the unsigned stage index."""
    return TiledKernels(name, warp_tiling_async_kernel, config,
                        {**warp_tiling.Config.of(config).check().constants(), "ASYNC_A": async_a, "ASYNC_B": async_b,
                         "UINT32_STAGE": uint32_stage})
