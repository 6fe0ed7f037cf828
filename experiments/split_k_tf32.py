"""Split-K on step 17 (TF32): one change, timed in one run with step 17 without it and cuBLAS TF32 (issue 37,
Deliver 3's "split-K for small-M·N, long-K products", on the tensor cores' fastest TF32 step).

Step 17 (gemm_steps/steps/warp_specialized.py) launched one block per 256 × 128 tile of C, each walking all of K: a
product of 20 tiles on a GPU of 132 SMs leaves 112 idle for its whole k-loop. Step 18 already split K
(``SplitKTmaTiles``); step 17 now does the same with its own policy (``warp_specialized.slices``: as many slices as
fill the SMs once, each at least 4 k-tiles, at most 8) and its own ``add_slices_kernel`` (a plain sum in slice
order). The builds, at step 17's tile:

* ``warp_specialized@before_split_k``: step 17 before split-K — its kernel at d634b25, walking all of K in every
  block (experiments/kernels/warp_specialized_before_split_k.py);
* ``warp_specialized@one_slice``: step 17 as shipped with a policy that never splits (``slices=lambda *_: 1``);
* ``warp_specialized@branch_store``: the first split-K kernel, which branched between two stores at every
  accumulator (experiments/kernels/warp_specialized_branch_store.py), with step 17's policy;
* ``warp_specialized``: step 17 as shipped.

cuBLAS SGEMM and TF32 are timed in the same run. Shapes: K-heavy products of few tiles (none of them in a held-out
set), two that split few ways (64 and 32 tiles), small ones, and three that do not split (81 tiles; 4096³ and 8192³:
the controls, where the shipped builds launch one kernel the same way).

The first run (experiment-split-k-tf32-nvidia-h200.json) had two builds, both of the first split-K kernel: on one slice
and with the first policy (slices of ≥ 4 k-tiles). Its 4096³ (0.88 of cuBLAS TF32, ~0.92 in the runs before) sent a
same-run A/B after the store; the second run (…-2.json) has the four builds above.

Predictions: predictions/split-k-tf32-before-run.md (before the first run), split-k-tf32-second-run.md (before the
second).

    python -m experiments.split_k_tf32 [OUT.json]   # default experiments/results/experiment-split-k-tf32-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

#: (M, N, K): K-heavy, few tiles (five); many tiles, a few slices (two); small (two); no split (two); then the second
#: run's: 1024 × 1024 × 2048 and × 4096 (64 and 128 k-tiles in 32 tiles), and 8192³ (a control).
SIZES = [(900, 640, 14336), (1000, 700, 9996), (512, 512, 16384), (768, 768, 16384), (300, 1000, 6000),
         (2048, 1024, 8192), (128, 4096, 4096), (1024, 1024, 1024), (640, 640, 640), (2304, 1152, 512),
         (4096, 4096, 4096), (1024, 1024, 2048), (1024, 1024, 4096), (8192, 8192, 8192)]
BEFORE, ONE_SLICE, BRANCH, AFTER = ("warp_specialized@before_split_k", "warp_specialized@one_slice",
                                    "warp_specialized@branch_store", "warp_specialized")


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', the shipped build over each other build, and the
    shipped build and step 17 before split-K over cuBLAS TF32."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    return {f"{m}x{n}x{k}": {"tflops": {name: by.get(name) for name in (BEFORE, ONE_SLICE, BRANCH, AFTER,
                                                                        "cublas_tf32", "cublas")},
                             "after_over_before": ratio(by.get(AFTER), by.get(BEFORE)),
                             "after_over_one_slice": ratio(by.get(AFTER), by.get(ONE_SLICE)),
                             "branch_over_after": ratio(by.get(BRANCH), by.get(AFTER)),
                             "after_over_tf32": ratio(by.get(AFTER), by.get("cublas_tf32")),
                             "before_over_tf32": ratio(by.get(BEFORE), by.get("cublas_tf32"))}
            for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/split_k_tf32.py")
    import gemm_steps
    from gemm_steps.steps import warp_specialized
    from gemm_steps.toolkit.tuned import default_config

    from experiments.kernels import warp_specialized_before_split_k, warp_specialized_branch_store

    out = output_path("split-k-tf32", argv[1] if len(argv) > 1 else None)
    config = default_config(warp_specialized.SEARCH_SPACE)
    builds = {BEFORE: warp_specialized_before_split_k.build(config),
              ONE_SLICE: warp_specialized.build(config, slices=lambda *_: 1),
              BRANCH: warp_specialized_branch_store.build(config),
              AFTER: gemm_steps.get_step("warp_specialized")}
    entries = [SimpleNamespace(name=name, number=17, arithmetic="tf32", launch=built.launch)
               for name, built in builds.items()]
    results = run_and_save(entries, SIZES, out, "step 17 splitting K where its tiles do not fill the SMs, against "
                           "step 17 before split-K, on one slice, and with the first split-K kernel's store "
                           "(experiments/split_k_tf32.py)", summary, width=32)
    for shape, row in results["summary"].items():
        nan = float("nan")
        print(f"{shape}: / before {row['after_over_before'] or nan:.3f}, / one slice "
              f"{row['after_over_one_slice'] or nan:.3f}, branch / shipped {row['branch_over_after'] or nan:.3f}, "
              f"/ cuBLAS TF32 {row['after_over_tf32'] or nan:.3f}, before / cuBLAS TF32 "
              f"{row['before_over_tf32'] or nan:.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
