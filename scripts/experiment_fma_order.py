"""Step 9's FMA order: row by row vs serpentine (odd rows backwards; shipped since), timed in one run, with SASS.

Hypothesis from Nsight Compute (step 9 vs cuBLAS at 4096³, same instruction count): step 9 issues 0.79 warp-
instructions per cycle per scheduler against cuBLAS's 0.90, losing the difference to "dispatch" and "wait" stalls,
which register-bank conflicts cause. In a serpentine order each FMA shares an operand with the one before it,
also where a row ends, which gives ptxas more chances to read an operand from the reuse cache.
Writes JSON to argv[1] and SASS summaries to stdout. (A first run of this experiment had a template bug that
wrote one FMA per odd row twice; the benchmark's error check caught it, and tests/test_scheduling.py now checks
that both orders compute the same products.)
"""
import sys
from types import SimpleNamespace

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from sass_report import loop_mix  # noqa: E402

from gemm_steps import bench  # noqa: E402
from gemm_steps.steps import warp_tiling  # noqa: E402
from gemm_steps.steps.double_buffered import TEMPLATE  # noqa: E402
from gemm_steps.tiling import TiledKernels  # noqa: E402

config = warp_tiling.TILED.config
kernels = {order: TiledKernels(f"warp_tiling_{order}", TEMPLATE, config,
                               {**warp_tiling.layout(config), "SERPENTINE": order == "serpentine"})
           for order in ("row_order", "serpentine")}
for name, tiled in kernels.items():
    compiled = tiled.kernels["fast"].compile(tiled.signature("fast"))
    mix, size = loop_mix(compiled.inspect_sass())
    print(f"{name:12s} regs {compiled.regs_per_thread} loop {size}: FFMA {mix.get('FFMA')} with .reuse "
          f"{mix.get('FFMA.reuse')}; " + ", ".join(f"{k} {v}" for k, v in list(mix.items())[1:8]), flush=True)

variants = [SimpleNamespace(name=name, number=i + 1, launch=tiled.launch, tiled=tiled)
            for i, (name, tiled) in enumerate(kernels.items())]
res = bench.run_benchmark(variants, [(s,) * 3 for s in (4096, 8192)], repeats=30, progress=print)
bench.save(res, sys.argv[1])
for r in res["records"]:
    print(f"{r['step']:12s} {r.get('M')} {r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF "
          f"{r.get('pct_of_cublas') or 0:5.1f}% nan={r.get('unwritten')} err={r.get('sampled_rel_error_fp64'):.1e}")
