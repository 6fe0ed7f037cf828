"""Step 18 (3xTF32 on the warp-specialized design) and the builds it was chosen from, beside steps 14 and 17 and
both cuBLAS in one run (issue: Hopper's own GEMM design, 3xTF32 on the final design).

    python -m experiments.specialized_3xtf32_bench [OUT.json]   # default: experiments/results/experiment-specialized-3xtf32-<gpu>.json

Builds (same tiles, ring and consumers; gemm_steps/steps/warp_specialized_3xtf32.py):
* ``scalar_split`` — the first build: the step's one producer loop splitting 3 k-tiles behind its copies, one float
  at a time in a rolled loop (experiments/kernels/specialized_3xtf32_scalar_split.py);
* ``split_3_behind`` — the step's kernel (16-byte vectors, unrolled) splitting 3 k-tiles behind instead of 2;
* ``warp_specialized_3xtf32`` — the step (2 behind);
* ``copy_warp`` — the producer's jobs on separate warps: a copy warp and three split warps that split each k-tile
  as it lands (experiments/kernels/specialized_3xtf32_copy_warp.py);
* ``registers_56_224`` — the step with 56 registers for the producer and 224 for the consumers (40 / 232).

Prediction, written before the run. The first build ran 66.4 / 67.9 TFLOPS at 4096³ / 8192³ on an H200 (bench of
2026-11-26, same day): ≈ 3,700 cycles a k-tile per SM where the tensor core needs ≈ 1,536 (3 × 128·128·32 FMAs at
≈ 1,024 TF32 FMAs a cycle). The producer's split is a chain of 32 dependent shared-load → split → store rounds a
thread per k-tile, ≈ 100 cycles each with the loop's index arithmetic: ≈ 3,000 cycles, the likely limit. With
16-byte vectors and the loop unrolled it is 8 independent rounds: expect the split off the critical path and the
step at the consumers' pace, ≈ 1,536 cycles of tensor core plus their unoverlapped bookkeeping (wait, 64 adds,
16 loads and splits: ≈ 400 cycles) → ≈ 1,900–2,000 cycles a k-tile, ≈ 120–130 TFLOPS (2.3–2.5× cuBLAS SGEMM),
unless shared memory's bandwidth (≈ 126 of 128 bytes a cycle at the tensor core's full rate, by count) holds it
lower. The register and split-distance variants should move it by under 3 %.

Measured (experiments/results/experiment-specialized-3xtf32-nvidia-h200.json, H200, 2026-11-26): the step ran
115.1 / 107.5 TFLOPS at 4096³ / 8192³ (2.25× / 2.10× cuBLAS SGEMM's 51.2 / 51.1), below the predicted 120–130 and
under step 17's TF32 / 3 (370.9 / 365.2 in the same run); the scalar split 66.4 / 67.9, as before. The vectors took
the split off the critical path as predicted; the rest did not hold: splitting 3 behind ran 97.9 / 95.8 (15 % / 11 %
slower, not under 3 %), the copy warp 103.5 / 98.8; 56 / 224 registers moved it by under 3 % (118.3 / 109.4). At
8192³ the tensor-core kernels ran at lower SM clocks (the step 1,784 MHz median, SGEMM 1,981) under the 700 W limit.

Why, as far as measured: at 4096³ the step takes ≈ 2,400 cycles a k-tile (at the 1.96 GHz its records carry),
not 1,900–2,000, and the split's distance mattered: the prediction's assumption that the producer keeps well
ahead failed. Splitting 3 behind, the producer's one thread waits for a stage to empty before the loop reaches the next split, so each split starts only one k-tile
ahead of the consumers that need it; 2 behind gives it two. Giving the copies a warp of their own (no such wait in
the split's path) should have been best and was not: three split warps take 11 vectors a thread where four take 8,
so the split's own time grew. What limits the step now is not identified: the shared-memory count above says
that at the tensor core's full rate it would need ≈ 126 of 128 bytes a cycle, but Nsight Compute on an H100
(``ncu-steps-17-18-nvidia-h100.txt``, one 4096³ launch) shows its shared load/store pipe, L1 and SM throughput all
well below their peaks. A timeline of the step (experiments/timeline.py's method) is the next measurement.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/specialized_3xtf32_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.steps import warpgroup_mma
    from gemm_steps.toolkit.tma_tiles import SplitKTmaTiles, TmaTiles
    from gemm_steps.toolkit.tuned import default_config

    from experiments.kernels.specialized_3xtf32_copy_warp import copy_warp_kernel
    from experiments.kernels.specialized_3xtf32_scalar_split import scalar_split_kernel

    out = output_path("specialized-3xtf32", argv[1] if len(argv) > 1 else None)
    config = default_config(step18.SEARCH_SPACE)
    edge = warpgroup_mma.build(config)

    def build(name, kernel, **changes):
        constants = {**step18.Config.of(config).check().constants(), **changes}
        if kernel is step18.warp_specialized_3xtf32_kernel:  # the step's kernel takes split-K's workspace: one slice
            tiles = SplitKTmaTiles(name, kernel, config, constants, edge=edge, slices=lambda *_: 1,
                                   reduce=step18.add_slices_kernel,
                                   requires_compute_capability=step18.REQUIRES_COMPUTE_CAPABILITY)
        else:
            tiles = TmaTiles(name, kernel, config, constants, edge=edge,
                             requires_compute_capability=step18.REQUIRES_COMPUTE_CAPABILITY)
        return SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=tiles.launch)

    kernel = step18.warp_specialized_3xtf32_kernel
    entries = [gemm_steps.get_step("warpgroup_mma"), gemm_steps.get_step("warp_specialized"),
               build("scalar_split", scalar_split_kernel, SPLIT_BEHIND=3),
               build("split_3_behind", kernel, SPLIT_BEHIND=3),
               gemm_steps.get_step("warp_specialized_3xtf32"),
               build("copy_warp", copy_warp_kernel, SPLIT_THREADS=96, SPLIT_VECTORS=11),
               build("registers_56_224", kernel, PRODUCER_REGISTERS=56, CONSUMER_REGISTERS=224)]
    sizes = [(4096, 4096, 4096), (8192, 8192, 8192)]
    results = run_benchmark(entries, sizes, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = "step 18 and its variants (experiments/specialized_3xtf32_bench.py)"
    save(results, out)
    print_records(results, width=24)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
