"""Step 5 on the GPU: what the index types and the thread→element map cost. Variants timed in one run.

signed:            lesson 5's first attempt (``register_2d_signed_kernel``): Python-int index math, so Numba
                   emits a negative-index check on every array access.
unsigned:          step 5 as shipped: the same kernel with all index math in uint32/uint64.
unsigned_strided:  + a strided thread→element map (rows r + 16·i, cols c + 16·j): a warp's B-fragment reads hit
                   16 consecutive floats (no bank conflicts) and its C stores are coalesced.
unsigned_strided_transposed_a: + the A tile stored transposed ([k][row]), so A-fragment reads are consecutive too.
Steps 3 and 4 are timed alongside. Writes JSON to argv[1]; sizes from argv[2:] (default 4096 8192).
(The earlier, signed-only version of this experiment is results/experiment-register-2d-h200.json.)
"""
import sys
from types import SimpleNamespace

from numba import cuda, float32, uint32

from gemm_steps import bench, get_step
from gemm_steps.kernel_tools import ceil_div, kernel
from gemm_steps.steps import register_2d as step5

BM, BN, BK, TM, TN, NT = step5.BM, step5.BN, step5.BK, step5.TM, step5.TN, step5.NT
BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N = step5.BLOCK_M, step5.BLOCK_N, step5.BLOCK_K, step5.THREAD_M, step5.THREAD_N
STRIDE = BM // TM  # 16 threads along each side of the block tile
ZERO = uint32(0)


def make_strided(transposed_a: bool):
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


def variants():
    return [
        SimpleNamespace(name="signed", number=1, launch=step5.launch_signed),
        SimpleNamespace(name="unsigned", number=2, launch=step5.launch),
        SimpleNamespace(name="unsigned_strided", number=3, launch=make_strided(False)),
        SimpleNamespace(name="unsigned_strided_transposed_a", number=4, launch=make_strided(True)),
        SimpleNamespace(name="shared_memory", number=5, launch=get_step("shared_memory").launch),
        SimpleNamespace(name="register_1d", number=6, launch=get_step("register_1d").launch),
    ]


if __name__ == "__main__":
    sizes = [int(s) for s in sys.argv[2:]] or [4096, 8192]
    res = bench.run_benchmark(variants(), [(s,) * 3 for s in sizes], repeats=20, progress=print)
    bench.save(res, sys.argv[1])
    for r in res["records"]:
        print(f"{r['step']:32s} {r.get('M')} {r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF "
              f"{r.get('pct_of_cublas') or 0:5.1f}% nan={r.get('unwritten')} err={r.get('rel_error_vs_cublas') or 0:.1e}")
