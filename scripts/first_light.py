"""First GPU session: correctness at awkward shapes, compile times, a 1024/4096 benchmark, tuning. Writes JSON to argv[1]."""
import json, sys, time
import numpy as np
import gemm_steps
from gemm_steps import bench, tuning
from numba import cuda

out = sys.argv[1]
print(gemm_steps.backend())
rng = np.random.default_rng(0)
report = {"compile_s": {}, "checks": []}
for s in gemm_steps.steps():
    a = rng.standard_normal((256, 256), dtype=np.float32); b = rng.standard_normal((256, 256), dtype=np.float32)
    t = time.perf_counter(); s(a, b); report["compile_s"][s.name] = time.perf_counter() - t
    for (m, n, k) in [(130, 132, 20), (1000, 1500, 700), (257, 384, 512), (4097, 1025, 1024)]:
        a = rng.standard_normal((m, k), dtype=np.float32); b = rng.standard_normal((k, n), dtype=np.float32)
        out_arr = np.full((m, n), np.nan, np.float32)
        c = s(a, b, out=out_arr)
        err = bench.sampled_fp64_error(a, b, c, samples=2048)
        report["checks"].append({"step": s.name, "shape": [m, n, k], "nan": int(np.isnan(c).sum()), "err": err})
        if np.isnan(c).any() or err > 1e-5:
            print("FAIL", s.name, (m, n, k), err, int(np.isnan(c).sum()), flush=True)
    print(f"{s.name:16s} first call {report['compile_s'][s.name]:.2f}s  checks ok", flush=True)
res = bench.run_benchmark(gemm_steps.steps(), [(1024,)*3, (4096,)*3], repeats=20, progress=lambda m: None)
bench.save(res, f"{out}/bench_first.json")
for r in res["records"]:
    print(f"{r['step']:16s} {r['M']:5d} {r.get('median_ms', float('nan')):9.3f} ms {r.get('tflops', 0):6.2f} TF {r.get('pct_of_cublas', 0):6.1f}% err={r.get('rel_error_vs_cublas', 0):.1e} nan={r.get('unwritten')}")
json.dump(report, open(f"{out}/first_light.json", "w"), indent=1)
if "--tune" in sys.argv:
    for name in ["unrolled", "double_buffered", "warp_tiling"]:
        r = tuning.tune(name, progress=lambda m: None)
        for rec in r["records"]:
            print(f"  {rec['step']:20s} {rec.get('median_ms', float('nan')):8.3f} ms {rec.get('pct_of_cublas', 0):6.1f}% {rec.get('config', '')}")
        print("BEST", name, r["best"]["config"], flush=True)
    import shutil, glob
    for f in glob.glob("results/tuning-*.json") + ["results/tuned.json"]:
        shutil.copy(f, out)
