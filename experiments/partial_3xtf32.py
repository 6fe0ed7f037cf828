"""Ragged shapes on step 18's fast kernel through its partial-tile build: one change, timed in one run with step 18
as it was and cuBLAS SGEMM (issue 37, Deliver 1, for the FP32 contract's fastest step).

Step 18 (gemm_steps/steps/warp_specialized_3xtf32.py) ran its fast kernel on full 128 × 128 tiles only, and only
where K is a multiple of 32; the border tiles — and, where K % 32 ≠ 0, the whole product — ran on step 14's edge
kernel. The builds, at step 18's tile and split-K policy:

* ``warp_specialized_3xtf32``: step 18 as it was — its full-tile build, step 14's edge kernel on the rest
  (``experiments.without_partial_build``);
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

from experiments import output_path, ratio, require_gpu, run_and_save, without_partial_build

#: (M, N, K): K % 32 ≠ 0 (six), only M or N ragged (two), then the full-tile control.
SIZES = [(3001, 3000, 1532), (4100, 4100, 4100), (2500, 6000, 2000), (8000, 8000, 1000), (4999, 3012, 2220),
         (1000, 700, 9996), (6784, 1300, 3072), (900, 640, 14336), (4096, 4096, 4096)]
BEFORE, AFTER = "warp_specialized_3xtf32", "warp_specialized_3xtf32_partial"


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and cuBLAS SGEMM's, after over before, each over cuBLAS SGEMM."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    return {f"{m}x{n}x{k}": {"tflops": {name: by.get(name) for name in (BEFORE, AFTER, "cublas")},
                             "after_over_before": ratio(by.get(AFTER), by.get(BEFORE)),
                             "after_over_sgemm": ratio(by.get(AFTER), by.get("cublas")),
                             "before_over_sgemm": ratio(by.get(BEFORE), by.get("cublas"))}
            for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/partial_3xtf32.py")
    import gemm_steps

    out = output_path("partial-3xtf32", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name=BEFORE, number=18, arithmetic="3xtf32", launch=without_partial_build("warp_specialized_3xtf32", BEFORE).launch),
               SimpleNamespace(name=AFTER, number=18, arithmetic="3xtf32",
                               launch=gemm_steps.get_step("warp_specialized_3xtf32").launch)]
    results = run_and_save(entries, SIZES, out, "step 18's partial-tile build (every tile and k-tile in one launch, "
                           "the copy engine's out-of-bounds zeros) against step 18 with step 14's edge kernel "
                           "(experiments/partial_3xtf32.py)", summary, width=32)
    for shape, row in results["summary"].items():
        print(f"{shape}: after / before {row['after_over_before'] or float('nan'):.3f}, "
              f"after / SGEMM {row['after_over_sgemm'] or float('nan'):.3f}, "
              f"before / SGEMM {row['before_over_sgemm'] or float('nan'):.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
