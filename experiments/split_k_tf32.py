"""Split-K on step 17 (TF32): one change, timed in one run with step 17 without it and cuBLAS TF32 (issue 37,
Deliver 3's "split-K for small-M·N, long-K products", on the tensor cores' fastest TF32 step).

Step 17 (gemm_steps/steps/warp_specialized.py) launched one block per 256 × 128 tile of C, each walking all of K: a
product of 20 tiles on a GPU of 132 SMs leaves 112 idle for its whole k-loop. Step 18 already split K
(``SplitKTmaTiles``); step 17 now does the same with its own policy (``warp_specialized.slices``: as many slices as
fill the SMs once, each at least 4 k-tiles, at most 8) and its own ``add_slices_kernel`` (a plain sum in slice
order). The builds, at step 17's tile:

* ``warp_specialized@one_slice``: step 17 with a policy that never splits (``slices=lambda *_: 1``) — step 17 as it
  was, on the same (new) kernel;
* ``warp_specialized``: step 17 as shipped.

cuBLAS SGEMM and TF32 are timed in the same run. Shapes: K-heavy products of few tiles (none of them in a held-out
set), two that split few ways (64 and 32 tiles), two small ones, and two that do not split (81 tiles; 4096³: the
control, where both builds launch the same kernel the same way).

Prediction: predictions/split-k-tf32-before-run.md (written before the run).

    python -m experiments.split_k_tf32 [OUT.json]   # default experiments/results/experiment-split-k-tf32-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

#: (M, N, K): K-heavy, few tiles (five); many tiles, a few slices (two); small (two); no split (two, the last the
#: control).
SIZES = [(900, 640, 14336), (1000, 700, 9996), (512, 512, 16384), (768, 768, 16384), (300, 1000, 6000),
         (2048, 1024, 8192), (128, 4096, 4096), (1024, 1024, 1024), (640, 640, 640), (2304, 1152, 512),
         (4096, 4096, 4096)]
BEFORE, AFTER = "warp_specialized@one_slice", "warp_specialized"


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', after over before, each over cuBLAS TF32."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    return {f"{m}x{n}x{k}": {"tflops": {name: by.get(name) for name in (BEFORE, AFTER, "cublas_tf32", "cublas")},
                             "after_over_before": ratio(by.get(AFTER), by.get(BEFORE)),
                             "after_over_tf32": ratio(by.get(AFTER), by.get("cublas_tf32")),
                             "before_over_tf32": ratio(by.get(BEFORE), by.get("cublas_tf32"))}
            for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/split_k_tf32.py")
    import gemm_steps
    from gemm_steps.steps import warp_specialized
    from gemm_steps.toolkit.tuned import default_config

    out = output_path("split-k-tf32", argv[1] if len(argv) > 1 else None)
    one_slice = warp_specialized.build(default_config(warp_specialized.SEARCH_SPACE), slices=lambda *_: 1)
    entries = [SimpleNamespace(name=BEFORE, number=17, arithmetic="tf32", launch=one_slice.launch),
               SimpleNamespace(name=AFTER, number=17, arithmetic="tf32",
                               launch=gemm_steps.get_step("warp_specialized").launch)]
    results = run_and_save(entries, SIZES, out, "step 17 splitting K where its tiles do not fill the SMs, against "
                           "step 17 on one slice (experiments/split_k_tf32.py)", summary, width=28)
    for shape, row in results["summary"].items():
        print(f"{shape}: after / before {row['after_over_before'] or float('nan'):.3f}, "
              f"after / cuBLAS TF32 {row['after_over_tf32'] or float('nan'):.3f}, "
              f"before / cuBLAS TF32 {row['before_over_tf32'] or float('nan'):.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
