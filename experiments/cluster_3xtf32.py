"""Does step 20's cluster (A's tile shared by two blocks, TMA multicast) pay on step 22's 3xTF32 stream-K kernel, as
it did on step 21's TF32 one (step 23)? One change, timed in one run (issue 36, Deliver 3: "then its 3xTF32 build").

The builds, at step 22's tile (256 × 128):

* ``warp_specialized_3xtf32`` (step 18) and ``warp_specialized_3xtf32_stream_k`` (step 22) as shipped — at whole
  waves step 22 hands the product to step 18 (its rule);
* ``step_22_own_kernel``: step 22's kernel on every product (``fallback=False``): what the variant changes;
* ``cluster_3xtf32_stream_k``: that kernel in clusters of two, its schedule over pairs of tiles
  (experiments/kernels/cluster_3xtf32_stream_k.py, whose docstring says why it might and might not help).

Shapes: 4096³ and 8192³ (whole waves), 5120×2560×4096 and 2304×4096×8192 (whole tiles in whole pairs, a part-empty
last wave: stream-K splits). cuBLAS SGEMM and TF32 in the same run; the run's ratios are stored with it (``summary``)
and printed. Prediction: predictions/cluster-3xtf32-before-run.md (written before the run).

    python -m experiments.cluster_3xtf32 [OUT.json]   # default experiments/results/experiment-cluster-3xtf32-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096), (2304, 4096, 8192)]
VARIANT, OWN = "cluster_3xtf32_stream_k", "step_22_own_kernel"
STEPS = ["warp_specialized_3xtf32", "warp_specialized_3xtf32_stream_k"]


def summary(results: dict) -> dict:
    """Per size ``"MxNxK"``: each build's TFLOPS (and both cuBLAS'), the variant over step 22's own kernel, over the
    shipped step 22 and over cuBLAS SGEMM (None where an entry is missing or failed)."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = r.get("tflops")
    return {shape: {"tflops": {name: by.get(name) for name in [*STEPS, OWN, VARIANT, "cublas", "cublas_tf32"]
                               if name in by},
                    "variant_over_own_kernel": ratio(by.get(VARIANT), by.get(OWN)),
                    "variant_over_step_22": ratio(by.get(VARIANT), by.get("warp_specialized_3xtf32_stream_k")),
                    "variant_over_cublas": ratio(by.get(VARIANT), by.get("cublas")),
                    "step_22_over_cublas": ratio(by.get("warp_specialized_3xtf32_stream_k"), by.get("cublas"))}
            for shape, by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/cluster_3xtf32.py")
    import gemm_steps
    from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step_22

    from experiments.kernels import cluster_3xtf32_stream_k

    out = output_path("cluster-3xtf32", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step(name) for name in STEPS]
    entries.append(SimpleNamespace(name=OWN, number=22, arithmetic="3xtf32",
                                   launch=step_22.build(step_22.SEARCH_SPACE[0], fallback=False).launch))
    entries.append(SimpleNamespace(name=VARIANT, number=22, arithmetic="3xtf32",
                                   launch=cluster_3xtf32_stream_k.build().launch))
    results = run_and_save(entries, SIZES, out, "step 22's 3xTF32 kernel in clusters of two with A's tile multicast "
                           "against the same kernel without (experiments/cluster_3xtf32.py)", summary, repeats=30,
                           width=28)
    for shape, row in results["summary"].items():
        print(f"{shape}: variant / step 22's kernel {row['variant_over_own_kernel'] or float('nan'):.3f}, "
              f"variant / step 22 {row['variant_over_step_22'] or float('nan'):.3f}, "
              f"variant / cuBLAS SGEMM {row['variant_over_cublas'] or float('nan'):.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
