"""Step 15's drop from 4096³ to 8192³ (−9 % in every TMA build): is it the tile order? The overlap build (then
experiments/kernels/warpgroup_overlap.py, now step 16) in row-major order and in step 10's grouped order, beside
step 15, cuBLAS SGEMM and cuBLAS TF32 in one run (issue: Hopper's own GEMM design).

    python -m experiments.warpgroup_order_bench [OUT.json]   # default: experiments/results/experiment-warpgroup-order-<gpu>.json

Prediction, written before the run, from a model of the DRAM traffic of one wave. 132 blocks (one per SM) of 256×128
tiles run together and advance through K at about the same pace, so per wave the DRAM must deliver the A panels
(256 × K floats each) and B panels (K × 128) the wave's tiles touch, once; the L2 (50 MB) does not hold a whole
panel set across waves at these sizes. Row-major, the wave covers 132 consecutive tiles of a row of tiles:
at 4096³ (32 tiles a row) 4.1 rows of A and all 32 columns of B: 16 + 64 = 80 MB for 35.4 GFLOP, 2.3 MB per GFLOP;
at 8192³ (64 a row) 2.1 rows and all 64 columns: 16 + 256 = 272 MB for 70.9 GFLOP, 3.8 MB per GFLOP — 1.7× the
bytes per FLOP, at ≈ 1.2 TB/s of DRAM traffic (a third of the H100's 3.35 TB/s) on top of the L2's. In groups of 8
tile-rows the wave covers 8 rows × 16.5 columns: 64 + 66 = 130 MB at 8192³ (1.8 MB per GFLOP, below 4096³'s
row-major figure) and 32 + 33 = 65 MB at 4096³. If the drop is the DRAM traffic, grouping by 8 brings 8192³ up to
4096³'s speed (+5 to +10 %) and moves 4096³ by at most a few per cent; groups of 4 and 16 land between (at 8192³
164 and 161 MB per wave). If 8192³ does not move, the drop is elsewhere (the epilogue's stores, the clocks).

Measured (an H200 — 60 MB of L2, 4.8 TB/s of HBM3e, so the model's DRAM share is smaller there —
``experiment-warpgroup-order-nvidia-h200.json``, one run; TFLOPS at 4096³ / 8192³): step 15 300.9 / 265.9; the
overlap build in row-major order 325.2 / 281.7, in groups of 4 321.2 / 290.7, of 8 322.1 / 294.0, of 16 318.8 /
291.7; cuBLAS TF32 386.6 / 366.9; the ragged shape 86 TFLOPS in every build. Grouping by 8 gained +4.4 % at 8192³
and lost 1 % at 4096³: a third of the drop. Nsight Compute (``ncu-warpgroup-order-nvidia-h200.txt``, one launch
each, clocks left alone) confirms the bytes: at 8192³ the DRAM read 4.69 GB in row-major order and 2.40 GB in
groups of 8 (the model: 4.4 and 2.1 GB over 16 waves), the L2 hit rate rose from 76.6 % to 86.6 % (85–86 % at 4096³);
and it timed one launch at 8192³ at 3.29 ms — 334 TFLOPS, *faster* per FLOP than 4096³'s 422 µs (325 TFLOPS) at
the same ≈ 1.7 GHz. So the rest of the drop is not in the kernel: experiments/clocks_under_load.py and
experiments/timing_method.py find it in the power limit.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/warpgroup_order_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    from gemm_steps.steps import tma_pipeline

    out = output_path("warpgroup-order", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step("warpgroup_tf32")]
    entries += [SimpleNamespace(name=f"overlap_group{group}", number=16 + i, arithmetic="tf32",
                                launch=tma_pipeline.build(tma_pipeline.SEARCH_SPACE[0], group_m=group).launch)
                for i, group in enumerate((1, 4, 8, 16))]
    sizes = [(4096, 4096, 4096), (8192, 8192, 8192), (3001, 2999, 1531)]
    results = run_benchmark(entries, sizes, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = "the overlap build in row-major and grouped tile orders (experiments/warpgroup_order_bench.py)"
    save(results, out)
    print_records(results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
