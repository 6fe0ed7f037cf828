"""The TF32 ``wgmma`` kernel with edge tiles (step 15 since commit 7ac41dd; it began as
experiments/kernels/warpgroup_tf32.py, in git history before that) against step 12, cuBLAS SGEMM
and cuBLAS TF32 in one run (issue 14, the TF32 target: ≥ 150 TFLOPS at 4096³ and 8192³), on the course benchmark's
large squares and two ragged shapes (edge kernel), each judged by the TF32 tolerance.

    python -m experiments.warpgroup_tf32_bench [OUT.json]   # default: experiments/results/experiment-warpgroup-tf32-<gpu>.json

Prediction, written before the run: the experiment's full-tile build (213.5 / 269.0 TFLOPS at 4096³ / 8192³) is
this kernel's fast path, so within ~3 % of it on squares; ragged shapes run the edge kernel on their border tiles
and land below.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/warpgroup_tf32_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    from gemm_steps.steps import warpgroup_tf32

    out = output_path("warpgroup-tf32", argv[1] if len(argv) > 1 else None)
    kernels = warpgroup_tf32.build(warpgroup_tf32.SEARCH_SPACE[0])
    entries = [gemm_steps.get_step("tensor_cores"),
               SimpleNamespace(name="warpgroup_tf32", number=15, launch=kernels.launch, arithmetic="tf32")]
    sizes = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3001, 2999, 1531), (4097, 4095, 1023)]
    results = run_benchmark(entries, sizes, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = "TF32 wgmma with edge tiles (experiments/kernels/warpgroup_tf32.py)"
    save(results, out)
    print_records(results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
