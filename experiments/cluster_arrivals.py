"""Step 20 with one cluster arrival a warpgroup and block instead of one a warp and block, timed in one run with step
20, step 17 and cuBLAS TF32 (issue 36; deep dive 17, section 3: step 20's consumers spent longer releasing stages
than step 17's, and cuBLAS's kernel executes half as many cluster arrivals for the same HGMMAs).

The builds: ``warp_specialized`` (step 17), ``cluster_multicast`` (step 20 as shipped) and ``cluster_one_arrival``
(experiments/kernels/cluster_one_arrival.py: the one change). cuBLAS TF32 and SGEMM in the same run. Shapes: 4096³,
8192³ and 4096 × 4096 × 8192.

Prediction: predictions/cluster-arrivals-before-run.md (written before the run).

    python -m experiments.cluster_arrivals [OUT.json]   # default experiments/results/experiment-cluster-arrivals-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 8192)]
BUILDS = ["warp_specialized", "cluster_multicast", "cluster_one_arrival"]


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', the variant over step 20 and over step 17, and each
    build over cuBLAS TF32."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    return {f"{m}x{n}x{k}": {
        "tflops": {name: by.get(name) for name in (*BUILDS, "cublas_tf32", "cublas")},
        "variant_over_step20": ratio(by.get("cluster_one_arrival"), by.get("cluster_multicast")),
        "variant_over_step17": ratio(by.get("cluster_one_arrival"), by.get("warp_specialized")),
        "step20_over_step17": ratio(by.get("cluster_multicast"), by.get("warp_specialized")),
        "over_tf32": {name: ratio(by.get(name), by.get("cublas_tf32")) for name in BUILDS}}
        for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/cluster_arrivals.py")
    import gemm_steps
    from gemm_steps.steps import cluster_multicast

    from experiments.kernels import cluster_one_arrival

    out = output_path("cluster-arrivals", argv[1] if len(argv) > 1 else None)
    launches = {"warp_specialized": gemm_steps.get_step("warp_specialized").launch,
                "cluster_multicast": gemm_steps.get_step("cluster_multicast").launch,
                "cluster_one_arrival": cluster_one_arrival.build(cluster_multicast.SEARCH_SPACE[0]).launch}
    entries = [SimpleNamespace(name=name, number=20, arithmetic="tf32", launch=launches[name]) for name in BUILDS]
    results = run_and_save(entries, SIZES, out, "step 20 with one cluster arrival a warpgroup and block, beside step "
                           "20, step 17 and cuBLAS TF32 (experiments/cluster_arrivals.py)", summary, width=24)
    for shape, row in results["summary"].items():
        print(f"{shape}: variant / step 20 {row['variant_over_step20'] or float('nan'):.3f}, variant / step 17 "
              f"{row['variant_over_step17'] or float('nan'):.3f}, step 20 / step 17 "
              f"{row['step20_over_step17'] or float('nan'):.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
