"""Step 5 with a strided thread→element map, optionally with the A tile transposed: lesson 5's side experiment.

Changed from step 5 (``gemm_steps/steps/register_2d.py``, unsigned index math as shipped): thread (r, c) of the
16×16 grid owns rows r + 16·i and columns c + 16·j instead of a contiguous 8×8 block, so a warp's B-fragment reads
hit 16 consecutive floats (no bank conflicts) and its C stores are coalesced; ``transposed_a`` also stores the A
tile as [k][row], so A-fragment reads are consecutive too. Timed by ``experiments/register_2d.py`` against step 5
as shipped, its signed first attempt and steps 3 and 4 (lesson 5). Faster than step 5 there, but not shipped: step 6
needs 4 neighbouring floats per thread for its 128-bit loads and stores, which the contiguous block gives; step 9's
warp tiling brings the spacing back with 4×4 sub-blocks.
"""

from numba import cuda, float32, uint32

from gemm_steps.steps import register_2d as step5
from gemm_steps.toolkit.kernel_tools import ceil_div, kernel

BM, BN, BK, TM, TN, NT = step5.BM, step5.BN, step5.BK, step5.TM, step5.TN, step5.NT
BLOCK_M, BLOCK_N, BLOCK_K = step5.BLOCK_M, step5.BLOCK_N, step5.BLOCK_K
THREAD_M, THREAD_N = step5.THREAD_M, step5.THREAD_N
STRIDE = BM // TM  # 16 threads along each side of the block tile
ZERO = uint32(0)


def make_strided(transposed_a: bool):
    """The launcher of one strided kernel (``transposed_a``: the A tile stored [k][row])."""

    @kernel
    def strided_kernel(a, b, c):
        m, k_total, n = uint32(a.shape[0]), uint32(a.shape[1]), uint32(b.shape[1])
        if transposed_a:
            a_tile = cuda.shared.array((BLOCK_K, BLOCK_M), float32)
        else:
            a_tile = cuda.shared.array((BLOCK_M, BLOCK_K), float32)
        b_tile = cuda.shared.array((BLOCK_K, BLOCK_N), float32)
        tid = uint32(cuda.threadIdx.x)
        block_row = uint32(cuda.blockIdx.y) * BM
        block_col = uint32(cuda.blockIdx.x) * BN
        thread_row, thread_col = tid // STRIDE, tid % STRIDE
        acc = cuda.local.array((THREAD_M, THREAD_N), float32)
        a_frag = cuda.local.array(THREAD_M, float32)
        b_frag = cuda.local.array(THREAD_N, float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0.0
        for k0 in range(ZERO, k_total, BK):
            for load in range(step5.A_LOADS):
                index = tid + uint32(load) * NT
                tile_row, tile_col = index // BK, index % BK
                row, col = block_row + tile_row, k0 + tile_col
                value = a[row, col] if row < m and col < k_total else float32(0.0)
                if transposed_a:
                    a_tile[tile_col, tile_row] = value
                else:
                    a_tile[tile_row, tile_col] = value
            for load in range(step5.B_LOADS):
                index = tid + uint32(load) * NT
                tile_row, tile_col = index // BN, index % BN
                row, col = k0 + tile_row, block_col + tile_col
                b_tile[tile_row, tile_col] = b[row, col] if row < k_total and col < n else float32(0.0)
            cuda.syncthreads()
            for kk in range(BK):
                for i in range(TM):
                    r = thread_row + i * STRIDE
                    a_frag[i] = a_tile[kk, r] if transposed_a else a_tile[r, kk]
                for j in range(TN):
                    b_frag[j] = b_tile[kk, thread_col + j * STRIDE]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_frag[i] * b_frag[j]
            cuda.syncthreads()
        for i in range(TM):
            row = block_row + thread_row + i * STRIDE
            for j in range(TN):
                col = block_col + thread_col + j * STRIDE
                if row < m and col < n:
                    c[row, col] = acc[i, j]

    def launch(a, b, c, stream=0):
        m, n = c.shape
        strided_kernel[(ceil_div(n, step5.BLOCK_N), ceil_div(m, step5.BLOCK_M)), step5.THREADS, stream](a, b, c)

    return launch


launch_strided = make_strided(False)
launch_strided_transposed_a = make_strided(True)
