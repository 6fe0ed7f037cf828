"""Scheduling sweep for lessons 10–11: data-parallel (step 9) vs persistent (10) vs stream-K hybrid (step 11, which
runs step 10's kernel where waves are nearly full) vs the stream-K kernel with the hybrid split but no fallback vs
all-stream-K vs cuBLAS, all on the same tile configuration, over squares, wave-boundary shapes (tiles ÷ SMs just at
and past whole numbers), small, K-heavy and tall-skinny shapes. No kernel variant of its own: the shipped steps'
``build()``s, and all-stream-K is step 11's kernel with its split rule replaced.

    python -m experiments.scheduling [OUT.json]    # default: experiments/results/experiment-scheduling-<gpu>.json
"""
import sys
from types import SimpleNamespace

from experiments import output_path, require_gpu
from gemm_steps.harness import bench
from gemm_steps.steps import persistent, stream_k, warp_tiling


def variants() -> list:
    config = stream_k.TUNING.kernels().config
    all_stream_k = stream_k.build(config)
    all_stream_k.split = lambda tiles, blocks: (0, tiles)  # the whole problem by k-iterations
    return [
        SimpleNamespace(name="data_parallel (step 9)", number=9, launch=warp_tiling.build(config).launch),
        SimpleNamespace(name="persistent (step 10)", number=10, launch=persistent.build(config).launch),
        SimpleNamespace(name="stream_k hybrid (step 11)", number=11, launch=stream_k.TUNING.kernels().launch),  # the step
        SimpleNamespace(name="stream_k kernel, hybrid split", number=12, launch=stream_k.build(config).launch),
        SimpleNamespace(name="stream_k all", number=13, launch=all_stream_k.launch),
    ]


def shapes() -> list[tuple[int, int, int]]:
    bm, bn = stream_k.TUNING.kernels().config.BLOCK_M, stream_k.TUNING.kernels().config.BLOCK_N
    found = [(s, s, s) for s in (512, 1024, 2048, 4096, 8192)]
    for rows, cols in [(6, 11), (12, 11), (7, 19), (12, 12), (18, 11), (24, 11), (5, 53), (20, 15)]:
        found.append((bm * rows, bn * cols, 4096))  # 66 … 300 tiles; 132 SMs
    return found + [(512, 1024, 16384), (1024, 1024, 8192), (16384, 256, 1024), (8192, 512, 2048)]


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/scheduling.py")
    out = output_path("scheduling", argv[1] if len(argv) > 1 else None)
    config = stream_k.TUNING.kernels().config
    bm, bn = config.BLOCK_M, config.BLOCK_N
    res = bench.run_benchmark(variants(), shapes(), repeats=20, max_seconds=0.5, progress=lambda m: None)
    res["tile_config"] = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": config.BLOCK_K}
    bench.save(res, out)
    sms = res["environment"].get("sm_count", 132)
    for r in res["records"]:
        tiles = -(-r["M"] // bm) * -(-r["N"] // bn)
        print(f"{r['M']:5d}x{r['N']:5d}x{r['K']:5d} tiles/SMs={tiles / sms:5.2f} {r['step']:26s} "
              f"{r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF {r.get('pct_of_cublas', 0):5.1f}% "
              f"nan={r.get('unwritten')} err={r.get('sampled_rel_error_fp64', 0):.1e}")


if __name__ == "__main__":
    main()
