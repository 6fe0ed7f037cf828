"""Persistent vs its non-persistent twin (same tile kernel), swizzle on/off, over squares and wave-boundary shapes.

Writes JSON to argv[1]. The twin is step 9 (warp_tiling) built with the same TileConfig as step 10.
"""
import sys
from types import SimpleNamespace

from gemm_steps import bench
from gemm_steps.steps import persistent, warp_tiling

config = persistent.TILED.config
twin = warp_tiling.build(config)
variants = [
    SimpleNamespace(name="warp_tiling(same config)", number=1, launch=twin.launch),
    SimpleNamespace(name="persistent GROUP_M=8", number=2, launch=persistent.build(config, 8).launch),
    SimpleNamespace(name="persistent GROUP_M=1", number=3, launch=persistent.build(config, 1).launch),
]
tiles_per_wave = 132  # H200/H100 SXM: one 128×256 block per SM
bm, bn = config.BLOCK_M, config.BLOCK_N
shapes = [(4096,) * 3, (8192,) * 3,
          (bm * 12, bn * 11, 4096),  # 132 tiles: exactly one wave
          (bm * 12, bn * 11 + bn, 4096),  # 144 tiles: one wave + 12
          (bm * 24, bn * 11, 4096),  # 264 tiles: two waves
          (1024, 1024, 1024), (128 * 4, 256 * 4, 8192)]  # small; K-heavy
res = bench.run_benchmark(variants, shapes, repeats=20, progress=lambda m: None)
bench.save(res, sys.argv[1])
for r in res["records"]:
    tiles = (r["M"] // bm) * (r["N"] // bn)
    print(f"{r['M']:5d}x{r['N']:5d}x{r['K']:5d} tiles/SMs={tiles / tiles_per_wave:5.2f} {r['step']:26s} "
          f"{r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF {r.get('pct_of_cublas', 0):5.1f}% nan={r.get('unwritten')}")
