"""Does cuBLAS's TMA-store epilogue speed up step 20? One change, timed in one run with step 17, step 20 and cuBLAS
(issue 36, Deliver 3).

cuBLAS's TF32 kernel on Hopper stores C through shared memory with the copy engine (results/reference-nvidia-h200-
2026-11-28.json: 256 ``UTMASTG.4D`` in its SASS); step 20 stores its 128 accumulators a thread straight to global
memory. The builds, at step 20's tile (256 × 128, clusters of 2):

* ``warp_specialized``: step 17, the step 20 builds on (as shipped);
* ``cluster_multicast``: step 20 as shipped;
* ``cluster_multicast_tma_store``: step 20 with the one change — each consumer warpgroup stages its 256 × 64 part of
  C in the stage memory (128-byte swizzled, conflict-free) and one thread stores it with two TMA stores
  (experiments/kernels/cluster_multicast_tma_store.py, whose docstring says why it might and might not help).

cuBLAS SGEMM and cuBLAS TF32 are timed in the same run (``run_benchmark`` adds TF32 for TF32 entries). The run's
ratios are stored with it (``summary``: per size each build's TFLOPS, the variant over step 20 and over cuBLAS TF32,
step 20 over step 17) and printed.

Prediction: predictions/tma-store-before-run.md (written before the run).

Measured (experiment-tma-store-epilogue-nvidia-h200.json, one H200 run): the variant 0.979 / 1.000× step 20 at
4096³ / 8192³; lesson 20 reads it.

    python -m experiments.tma_store_epilogue [OUT.json]   # default experiments/results/experiment-tma-store-epilogue-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192)]
VARIANT = "cluster_multicast_tma_store"
BUILDS = ["warp_specialized", "cluster_multicast", VARIANT]


def variants() -> list:
    """(label, build) of step 20 and the variant, both at step 20's default tile (step 17 is timed as the step)."""
    from gemm_steps.steps import cluster_multicast
    from gemm_steps.toolkit.tuned import default_config

    from experiments.kernels import cluster_multicast_tma_store

    config = default_config(cluster_multicast.SEARCH_SPACE)
    return [("cluster_multicast", cluster_multicast.build(config)),
            (VARIANT, cluster_multicast_tma_store.build(config))]


def summary(results: dict) -> dict:
    """Per size ``"MxNxK"``: each build's TFLOPS (and both cuBLAS'), the variant over step 20 and over cuBLAS TF32,
    and step 20 over step 17 (None where an entry is missing or failed)."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = r.get("tflops")
    out = {}
    for shape, by in tflops.items():
        out[shape] = {"tflops": {name: by.get(name) for name in [*BUILDS, "cublas_tf32", "cublas"]},
                      "variant_over_step_20": ratio(by.get(VARIANT), by.get("cluster_multicast")),
                      "variant_over_cublas_tf32": ratio(by.get(VARIANT), by.get("cublas_tf32")),
                      "step_20_over_cublas_tf32": ratio(by.get("cluster_multicast"), by.get("cublas_tf32")),
                      "step_20_over_step_17": ratio(by.get("cluster_multicast"), by.get("warp_specialized"))}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/tma_store_epilogue.py")
    import gemm_steps

    out = output_path("tma-store-epilogue", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step("warp_specialized")]
    entries += [SimpleNamespace(name=label, number=20, arithmetic="tf32", launch=tiles.launch)
                for label, tiles in variants()]
    results = run_and_save(entries, SIZES, out, "step 20 with a TMA-store epilogue (C staged in shared memory, stored "
                           "by the copy engine) against step 20 and step 17 (experiments/tma_store_epilogue.py)",
                           summary, repeats=30, width=28)
    for shape, row in results["summary"].items():
        print(f"{shape}: variant / step 20 {row['variant_over_step_20'] or float('nan'):.3f}, "
              f"variant / cuBLAS TF32 {row['variant_over_cublas_tf32'] or float('nan'):.3f}, "
              f"step 20 / cuBLAS TF32 {row['step_20_over_cublas_tf32'] or float('nan'):.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
