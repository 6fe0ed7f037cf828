"""Same-run check that the readable kernels are as fast as the template-generated kernels they replaced.

Steps 6–11 were rewritten from one text template with flags into one readable kernel per step, expanded by
:mod:`gemm_steps.toolkit.unroll`. The claim to check: nothing got slower. This times the old and the new kernel of
every rewritten step, interleaved, on the same inputs, in one process, with cuBLAS in the same run, over squares
and the scheduling shapes of lessons 10–11.

Usage (on a GPU): python experiments/readable_kernels_regression.py OLD_PACKAGE OUT.json
OLD_PACKAGE is a copy of the old package directory renamed ``gemm_steps_old`` (e.g. from ``git worktree add /tmp/old
3b036a2`` then ``cp -r /tmp/old/gemm_steps DIR/gemm_steps_old``; the old package reads its tuning table from
``DIR/results/tuned.json``). Writes the results document to OUT.json and prints new/old time ratios.
"""
import sys
from pathlib import Path
from types import SimpleNamespace

import gemm_steps  # first: picks the GPU before Numba is imported
from gemm_steps.harness import bench

old_dir, out = Path(sys.argv[1]).resolve(), sys.argv[2]
sys.path.insert(0, str(old_dir.parent))
import gemm_steps_old  # noqa: E402

REWRITTEN = ["vectorized", "unrolled", "double_buffered", "warp_tiling", "persistent", "stream_k"]
candidates = []
for name in REWRITTEN:
    new, old = gemm_steps.get_step(name), gemm_steps_old.get_step(name)
    if new.config.get("BLOCK_M") != old.config.get("BLOCK_M") or new.config.get("BLOCK_N") != old.config.get("BLOCK_N") \
            or new.config.get("BLOCK_K") != old.config.get("BLOCK_K"):
        raise SystemExit(f"{name}: old and new use different tiles ({old.config} vs {new.config}); compare like with like")
    candidates += [SimpleNamespace(name=f"{name} (old template)", number=new.number, launch=old.launch, config=old.config),
                   SimpleNamespace(name=f"{name} (readable)", number=new.number, launch=new.launch, config=new.config)]

config = gemm_steps.get_step("stream_k").tiled.config
bm, bn = config.BLOCK_M, config.BLOCK_N
shapes = [(s, s, s) for s in (2048, 4096, 8192)]
shapes += [(bm * rows, bn * cols, 4096) for rows, cols in [(12, 11), (18, 11), (24, 11)]]  # 1.0, 1.5, 2.0 waves on 132 SMs
shapes += [(512, 1024, 16384), (1024, 1024, 8192)]  # K-heavy
shapes += [(3001, 2999, 1531)]  # ragged: the edge kernels (K % BLOCK_K != 0 puts the whole product on them)
results = bench.run_benchmark(candidates, shapes, repeats=30, max_seconds=0.5)
results["comparison"] = "old template kernels (gemm_steps_old) vs readable kernels, interleaved, same inputs"
bench.save(results, out)
by = {(r["step"], r["M"], r["N"], r["K"]): r for r in results["records"]}
worst = 0.0
for m, n, k in shapes:
    for name in REWRITTEN:
        old, new = by.get((f"{name} (old template)", m, n, k)), by.get((f"{name} (readable)", m, n, k))
        if not (old and new and "median_ms" in old and "median_ms" in new):
            print(f"{m}x{n}x{k} {name}: missing or failed"); continue
        ratio = new["median_ms"] / old["median_ms"]
        worst = max(worst, ratio)
        print(f"{m:5d}x{n:5d}x{k:5d} {name:16s} old {old['pct_of_cublas']:5.1f} %  new {new['pct_of_cublas']:5.1f} % "
              f"of cuBLAS   new/old time {ratio:.3f}  unwritten {new['unwritten']}")
print(f"slowest new/old time ratio: {worst:.3f}")
