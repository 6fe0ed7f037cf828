"""Persistent vs its non-persistent twin (same tile kernel), swizzle on/off, over squares and wave-boundary shapes.

The twin is step 9 (warp_tiling) built with the same TileConfig as step 10; step 10 runs with its grouped tile order
(``GROUP_M = 8``) and with plain row-major order (``GROUP_M = 1``). No kernel variant of its own: both are
``build()``s of the shipped steps.

    python -m experiments.persistent [OUT.json]    # default: experiments/results/experiment-persistent-<gpu>.json
"""
import sys
from types import SimpleNamespace

from experiments import output_path, require_gpu
from gemm_steps.harness import bench
from gemm_steps.steps import persistent, warp_tiling

TILES_PER_WAVE = 132  # H200/H100 SXM: one 128×256 block per SM


def variants() -> list:
    config = persistent.TUNING.kernels().config
    return [
        SimpleNamespace(name="warp_tiling(same config)", number=1, launch=warp_tiling.build(config).launch),
        SimpleNamespace(name="persistent GROUP_M=8", number=2, launch=persistent.build(config, 8).launch),
        SimpleNamespace(name="persistent GROUP_M=1", number=3, launch=persistent.build(config, 1).launch),
    ]


def shapes() -> list[tuple[int, int, int]]:
    bm, bn = persistent.TUNING.kernels().config.BLOCK_M, persistent.TUNING.kernels().config.BLOCK_N
    return [(4096,) * 3, (8192,) * 3,
            (bm * 12, bn * 11, 4096),  # 132 tiles: exactly one wave
            (bm * 12, bn * 11 + bn, 4096),  # 144 tiles: one wave + 12
            (bm * 24, bn * 11, 4096),  # 264 tiles: two waves
            (1024, 1024, 1024), (128 * 4, 256 * 4, 8192)]  # small; K-heavy


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/persistent.py")
    out = output_path("persistent", argv[1] if len(argv) > 1 else None)
    res = bench.run_benchmark(variants(), shapes(), repeats=20, progress=lambda m: None)
    bench.save(res, out)
    bm, bn = persistent.TUNING.kernels().config.BLOCK_M, persistent.TUNING.kernels().config.BLOCK_N
    for r in res["records"]:
        tiles = (r["M"] // bm) * (r["N"] // bn)
        print(f"{r['M']:5d}x{r['N']:5d}x{r['K']:5d} tiles/SMs={tiles / TILES_PER_WAVE:5.2f} {r['step']:26s} "
              f"{r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF {r.get('pct_of_cublas', 0):5.1f}% "
              f"nan={r.get('unwritten')}")


if __name__ == "__main__":
    main()
