"""Step 16 against the same kernel with its producer's work behind the wgmma it overlaps
(experiments/kernels/tma_pipeline_late_producer.py) and against a producer warpgroup of its own that hands its
registers to the consumers (first experiments/kernels/tma_specialized.py, now step 17), beside step 15 and both
cuBLAS in one run (issue: Hopper's own GEMM design).

    python -m experiments.producer_order_bench [OUT.json]   # default: experiments/results/experiment-producer-order-<gpu>.json

Prediction, written before the run, from step 16's timeline (experiment-timeline-tma-pipeline-nvidia-h200.json, one
block at 4096³, steady state): each warpgroup takes ≈ 2,000 cycles a k-tile, where the tensor cores need ≈ 1,024 for
the block's two (2.1 MFLOP at ≈ 2,048 FLOP a cycle per SM). Warpgroup 0 carries the producer (≈ 600–800 cycles of
waiting for an empty stage and issuing copies before its fragments), runs ≈ 2 k-tiles behind warpgroup 1, and paces the
loads, so warpgroup 1 waits ≈ 770 cycles a k-tile for data. With the producer's work overlapping warpgroup 0's own
wgmma in flight, its turn shortens by up to those 600–800 cycles, and warpgroup 1's wait with it: if both then run
at ≈ 1,300–1,500 cycles a k-tile, +30 to +50 %; the loads can still run only 2 k-tiles ahead (4 stages), so the
copy latency (≈ 1,000 cycles from issue to landing in the timeline) may cap it sooner: at least +10 %.

Measured (H200, ``experiment-producer-order-nvidia-h200.json``, one run, TFLOPS at 4096³ / 8192³, SM clock medians
in brackets): step 15 302.6 / 295.4; step 16 328.2 / 322.2 (1,975 / 1,788 MHz); the late producer 337.1 / 330.9
(1,979 / 1,757 MHz): +2.7 % at both sizes, under the 3 % that runs move, so not taken into step 16 without a repeat.
cuBLAS TF32 404.7 / 414.9 (step 16: 81 % / 78 %). The prediction missed: warp 0 is still on its warpgroup's critical
path, since the warpgroup's next ``wgmma`` waits for all 128 threads and thread 0 now produces just before that; the
overlap it gained is only with the ``wgmma`` already in flight, which the timeline puts at ≈ 150 cycles of waiting,
not 600–800. What would take the producer off the path is a warp of its own — register-starved in Numba
(experiments/kernels/warpgroup_specialized.py) until ``setmaxnreg`` is honoured.

Then it was: ptxas had ignored ``setmaxnreg`` (C7504) only in the way the course read its report on a CPU, PTX
assembled as a relocatable unit; numba-cuda links a kernel with nvJitLink's LTO, one whole program, and there the
hand-off holds (168 registers at entry, none spilled, no wgmma serialised). Prediction for a producer *warpgroup*
that lowers its registers to 40 while the two consumers raise theirs to 232, written before its run: the consumers'
≈ 2,000 cycles a k-tile lose the producer's ≈ 700 on warpgroup 0 and the ≈ 770 of waiting on warpgroup 1 once the
loads run up to 4 k-tiles ahead: ≈ 1,300 cycles a k-tile if nothing else binds, +30 to +50 % over step 16, capped by
the tensor cores' ≈ 1,024 (+95 %) and, before that, by cuBLAS's own ≈ 75 % of the peak (≈ 400 TFLOPS, +23 %).
Measured (the second run of this file, same H200): step 16 324.1 / 314.3, the late producer 333.1 / 318.6, the
producer warpgroup **374.2 / 363.7 TFLOPS — 1.15× / 1.16× step 16, 93 % / 91 % of cuBLAS TF32's 401.5 / 399.0** —
at an SM clock of 1,981 / 1,606 MHz (cuBLAS 1,981 / 1,757: at 8192³ the power limit bit it hardest). Step 15
301.9 / 281.3. Between the predictions: +15 %, not +30 %; lesson 17's timeline shows where the rest goes.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/producer_order_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save
    from gemm_steps.steps import tma_pipeline

    from experiments.kernels import tma_pipeline_late_producer

    out = output_path("producer-order", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step("warpgroup_tf32"), gemm_steps.get_step("tma_pipeline"),
               SimpleNamespace(name="late_producer", number=17, arithmetic="tf32",
                               launch=tma_pipeline_late_producer.build(tma_pipeline.SEARCH_SPACE[0]).launch),
               gemm_steps.get_step("warp_specialized")]
    sizes = [(4096, 4096, 4096), (8192, 8192, 8192), (3001, 2999, 1531)]
    results = run_benchmark(entries, sizes, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = "step 16's producer before or behind its wgmma (experiments/producer_order_bench.py)"
    save(results, out)
    print_records(results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
