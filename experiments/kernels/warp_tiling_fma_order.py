"""Step 9's k-column in other, equivalent shapes: other orders of its FMAs, or B's fragments loaded just in time.

Changed from step 9 (``diff gemm_steps/steps/warp_tiling.py experiments/kernels/warp_tiling_fma_order.py``): the
inner k-column, chosen by the compile-time ``ORDER`` of this experiment. Every order computes exactly the same
products in the same k order for each element of C (bit-identical results); only the order of the independent FMAs
within one k-column, or where the fragment loads sit, differs:

* ``"serpentine"``: step 9 as shipped — row by row, odd rows right to left;
* ``"row"``: row by row, every row left to right (step 9 before it adopted serpentine; ``experiments/fma_order.py``);
* ``"column"``: column by column; ``"column serpentine"``: column by column, odd columns bottom to top;
* ``"quad"``: for each group of 4 columns, rows in serpentine order (the order ``ptxas`` itself picks for step 9);
* ``"just in time"``: A's fragments first, then each group of 4 B values loaded right before its FMAs (quad order).

Timed by ``experiments/fma_order.py`` (row vs serpentine: serpentine adopted) and ``experiments/code_shapes.py``
(all of them: none cleared the bar set beforehand, +1 % at both sizes).
"""

from numba import cuda, float32, uint32

from gemm_steps.steps import warp_tiling
from gemm_steps.toolkit.intrinsics import load_float4, load_or_zero, store_float4, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import TiledKernels
from gemm_steps.toolkit.unroll import registers, unroll

ORDERS = ("serpentine", "row", "column", "column serpentine", "quad", "just in time")


def warp_tiling_fma_order_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                                 BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, WARPS_N, WARP_TILE_M,
                                 WARP_TILE_N, LANES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW,
                                 A_CHUNK_STRIDE, B_CHUNK_STRIDE, DYNAMIC_SHARED, B_BASE, EDGE, ORDER):
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
            # The unrolled k-loop over the BLOCK_K columns of the computing stage, in the shape ORDER says.
            for kk in unroll(BLOCK_K):
                for q in unroll(0, THREAD_M, 4):
                    a_frag[q], a_frag[q + 1], a_frag[q + 2], a_frag[q + 3] = load_float4(
                        a_tile, stage_a + thread_row + (kk * BLOCK_M + q // 4 * A_CHUNK_STRIDE))
                if ORDER == "just in time":  # each group of 4 B values loaded right before its FMAs
                    for q in unroll(0, THREAD_N, 4):
                        b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                            b_tile, stage_b + thread_col + (kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE))
                        for i in unroll(THREAD_M):
                            for jj in unroll(4):
                                j = q + (3 - jj if i % 2 else jj)
                                acc[i][j] += a_frag[i] * b_frag[j]
                else:
                    for q in unroll(0, THREAD_N, 4):
                        b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                            b_tile, stage_b + thread_col + (kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE))
                if ORDER == "serpentine":  # step 9: odd rows run right to left
                    for i in unroll(THREAD_M):
                        for jj in unroll(THREAD_N):
                            j = THREAD_N - 1 - jj if i % 2 else jj
                            acc[i][j] += a_frag[i] * b_frag[j]
                if ORDER == "row":
                    for i in unroll(THREAD_M):
                        for j in unroll(THREAD_N):
                            acc[i][j] += a_frag[i] * b_frag[j]
                if ORDER == "column":
                    for j in unroll(THREAD_N):
                        for i in unroll(THREAD_M):
                            acc[i][j] += a_frag[i] * b_frag[j]
                if ORDER == "column serpentine":  # odd columns run bottom to top
                    for j in unroll(THREAD_N):
                        for ii in unroll(THREAD_M):
                            i = THREAD_M - 1 - ii if j % 2 else ii
                            acc[i][j] += a_frag[i] * b_frag[j]
                if ORDER == "quad":  # for each group of 4 columns, the rows in serpentine order
                    for q in unroll(0, THREAD_N, 4):
                        for i in unroll(THREAD_M):
                            for jj in unroll(4):
                                j = q + (3 - jj if i % 2 else jj)
                                acc[i][j] += a_frag[i] * b_frag[j]
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

    for i in unroll(THREAD_M):
        row = block_row + thread_row + (i // 4 * A_CHUNK_STRIDE + i % 4)
        if EDGE:
            for j in unroll(THREAD_N):
                store_if_inside(c, row, block_col + thread_col + (j // 4 * B_CHUNK_STRIDE + j % 4), m, n, acc[i][j])
        else:
            for j in unroll(0, THREAD_N, 4):
                store_float4(c, row * n + block_col + thread_col + j // 4 * B_CHUNK_STRIDE,
                             acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])



def build(config: TileConfig, order: str, name: str | None = None) -> TiledKernels:
    """Step 9's tile computation with its k-column in one of :data:`ORDERS`."""
    if order not in ORDERS:
        raise ValueError(f"unknown FMA order {order!r}; the orders are {ORDERS}")
    name = name or "warp_tiling_" + order.replace(" ", "_")
    constants = {**warp_tiling.Config.of(config).check().constants(), "ORDER": order}
    return TiledKernels(name, warp_tiling_fma_order_kernel, config, constants)
