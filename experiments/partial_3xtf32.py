"""Ragged shapes on step 18's fast kernel through its partial-tile build: one change, timed in one run with step 18
as it was and cuBLAS SGEMM (issue 37, Deliver 1, for the FP32 contract's fastest step).

Step 18 (gemm_steps/steps/warp_specialized_3xtf32.py) ran its fast kernel on full 128 × 128 tiles only, and only
where K is a multiple of 32; the border tiles — and, where K % 32 ≠ 0, the whole product — ran on step 14's edge
kernel. The builds, at step 18's tile and split-K policy:

* ``warp_specialized_3xtf32``: step 18 as it was — its full-tile build, step 14's edge kernel on the rest
  (:func:`step_18_before`);
* ``warp_specialized_3xtf32_partial``: step 18 as shipped: any shape the copy engine can read (K and N multiples of
  4) that is not whole tiles runs on its ``PARTIAL_TILES`` build, one launch over every tile (and every slice of K).

cuBLAS SGEMM is timed in the same run. Shapes: six whose K is not a multiple of 32 (step 18 ran them wholly on the
edge kernel), two where only M or N is ragged (their border ran there), and 4096³ (whole tiles: both builds launch the
same kernel; the control). The run's ratios are stored with it (``summary``) and printed.

Prediction: predictions/partial-3xtf32-before-run.md (written before the run).

    python -m experiments.partial_3xtf32 [OUT.json]   # default experiments/results/experiment-partial-3xtf32-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu

#: (M, N, K): K % 32 ≠ 0 (six), only M or N ragged (two), then the full-tile control.
SIZES = [(3001, 3000, 1532), (4100, 4100, 4100), (2500, 6000, 2000), (8000, 8000, 1000), (4999, 3012, 2220),
         (1000, 700, 9996), (6784, 1300, 3072), (900, 640, 14336), (4096, 4096, 4096)]
BEFORE, AFTER = "warp_specialized_3xtf32", "warp_specialized_3xtf32_partial"


def step_18_before():
    """Step 18 as it was before its partial-tile build: the full-tile build (split-K as now), step 14's edge kernel
    for every other tile."""
    from dataclasses import replace

    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.steps import warpgroup_mma
    from gemm_steps.toolkit.tma_tiles import SplitKTmaTiles
    from gemm_steps.toolkit.tuned import default_config

    config = replace(step18.Config.of(default_config(step18.SEARCH_SPACE)), PARTIAL_TILES=False)
    return SplitKTmaTiles(BEFORE, step18.warp_specialized_3xtf32_kernel, config, edge=warpgroup_mma.build(config),
                          requires_compute_capability=step18.REQUIRES_COMPUTE_CAPABILITY, slices=step18.slices,
                          reduce=step18.add_slices_kernel)


def _ratio(x, y):
    return x / y if x and y else None


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and cuBLAS SGEMM's, after over before, each over cuBLAS SGEMM."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    return {f"{m}x{n}x{k}": {"tflops": {name: by.get(name) for name in (BEFORE, AFTER, "cublas")},
                             "after_over_before": _ratio(by.get(AFTER), by.get(BEFORE)),
                             "after_over_sgemm": _ratio(by.get(AFTER), by.get("cublas")),
                             "before_over_sgemm": _ratio(by.get(BEFORE), by.get("cublas"))}
            for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/partial_3xtf32.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    out = output_path("partial-3xtf32", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name=BEFORE, number=18, arithmetic="3xtf32", launch=step_18_before().launch),
               SimpleNamespace(name=AFTER, number=18, arithmetic="3xtf32",
                               launch=gemm_steps.get_step("warp_specialized_3xtf32").launch)]
    results = run_benchmark(entries, SIZES, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = ("step 18's partial-tile build (every tile and k-tile in one launch, the copy engine's "
                             "out-of-bounds zeros) against step 18 with step 14's edge kernel "
                             "(experiments/partial_3xtf32.py)")
    results["summary"] = summary(results)
    save(results, out)
    print_records(results, width=32)
    for shape, row in results["summary"].items():
        print(f"{shape}: after / before {row['after_over_before'] or float('nan'):.3f}, "
              f"after / SGEMM {row['after_over_sgemm'] or float('nan'):.3f}, "
              f"before / SGEMM {row['before_over_sgemm'] or float('nan'):.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
