"""Why is plain 2-D register tiling (step 5) slower than step 3 on Hopper? Three variants timed in one run.

A: step 5 as shipped (contiguous 8×8 per thread, 2-D arrays, guarded tile loads).
B: A with a strided thread→element map (rows r + 16·i, cols c + 16·j): a warp's 16 B-fragment reads hit 16
   consecutive floats (no bank conflicts), and its C stores are coalesced.
C: B with the A tile stored transposed ([k][row]), so A-fragment reads are also consecutive.
Writes JSON to argv[1].
"""
import sys
from types import SimpleNamespace

from numba import cuda, float32

from gemm_steps import bench, get_step
from gemm_steps.kernel_tools import ceil_div, kernel

BM = BN = 128
BK = 8
TM = TN = 8
THREADS = 256
STRIDE = BM // TM  # 16


def make(transposed_a: bool):
    @kernel
    def k2d(a, b, c):
        m, kt = a.shape
        n = b.shape[1]
        a_tile = cuda.shared.array((BK, BM) if transposed_a else (BM, BK), float32)
        b_tile = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        br = cuda.blockIdx.y * BM
        bc = cuda.blockIdx.x * BN
        tr = tid // STRIDE
        tc = tid % STRIDE
        acc = cuda.local.array((TM, TN), float32)
        af = cuda.local.array(TM, float32)
        bf = cuda.local.array(TN, float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0.0
        for k0 in range(0, kt, BK):
            for load in range(BM * BK // THREADS):
                idx = tid + load * THREADS
                r, cc = idx // BK, idx % BK
                row, col = br + r, k0 + cc
                v = a[row, col] if row < m and col < kt else float32(0.0)
                if transposed_a:
                    a_tile[cc, r] = v
                else:
                    a_tile[r, cc] = v
            for load in range(BK * BN // THREADS):
                idx = tid + load * THREADS
                r, cc = idx // BN, idx % BN
                row, col = k0 + r, bc + cc
                b_tile[r, cc] = b[row, col] if row < kt and col < n else float32(0.0)
            cuda.syncthreads()
            for kk in range(BK):
                for i in range(TM):
                    af[i] = a_tile[kk, tr + i * STRIDE] if transposed_a else a_tile[tr + i * STRIDE, kk]
                for j in range(TN):
                    bf[j] = b_tile[kk, tc + j * STRIDE]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += af[i] * bf[j]
            cuda.syncthreads()
        for i in range(TM):
            row = br + tr + i * STRIDE
            for j in range(TN):
                col = bc + tc + j * STRIDE
                if row < m and col < n:
                    c[row, col] = acc[i, j]

    def launch(a, b, c, stream=0):
        m, n = c.shape
        k2d[(ceil_div(n, BN), ceil_div(m, BM)), THREADS, stream](a, b, c)

    return launch


variants = [
    SimpleNamespace(name="A_shipped", number=1, launch=get_step("register_2d").launch),
    SimpleNamespace(name="B_strided", number=2, launch=make(False)),
    SimpleNamespace(name="C_strided_transposedA", number=3, launch=make(True)),
    SimpleNamespace(name="shared_memory", number=4, launch=get_step("shared_memory").launch),
]
res = bench.run_benchmark(variants, [(4096,) * 3], repeats=20, progress=lambda m: None)
bench.save(res, sys.argv[1])
for r in res["records"]:
    print(f"{r['step']:24s} {r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF {r.get('pct_of_cublas', 0):5.1f}% nan={r.get('unwritten')} err={r.get('rel_error_vs_cublas', 0):.1e}")
