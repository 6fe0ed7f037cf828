"""Step 20 releasing a stage with one cluster arrival a warpgroup and block instead of one a warp and block, timed in
one run with step 17 and cuBLAS TF32 (issue 36; deep dive 17, section 3: step 20's consumers spent longer releasing
stages than step 17's, and cuBLAS's kernel executes half as many cluster arrivals for the same HGMMAs).

The builds: ``warp_specialized`` (step 17), ``cluster_every_warp_arrives`` (step 20 as it was: experiments/kernels/
cluster_every_warp_arrives.py) and ``cluster_multicast`` (step 20 as shipped: one arrival a warpgroup and block, the
one change). cuBLAS TF32 and SGEMM in the same run. Shapes: 4096³, 8192³ and 4096 × 4096 × 8192.

The first two runs (experiment-cluster-arrivals-nvidia-h200.json, -2.json) ran before step 20 took the change: their
``cluster_multicast`` records are step 20 as it was and ``cluster_one_arrival`` the change (then an experiment kernel);
their stored summaries say ``variant_over_step20``. :func:`summary` reads a run of either kind.

Prediction: predictions/cluster-arrivals-before-run.md (written before the run).

    python -m experiments.cluster_arrivals [OUT.json]   # default: experiments/results/experiment-cluster-arrivals-<gpu>
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 8192)]
BUILDS = ["warp_specialized", "cluster_every_warp_arrives", "cluster_multicast"]
#: (one arrival a warpgroup, every warp arrives): the record names of a run, now and before step 20 took the change.
PAIRS = [("cluster_multicast", "cluster_every_warp_arrives"), ("cluster_one_arrival", "cluster_multicast")]


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', one arrival a warpgroup over every warp arriving
    and over step 17, and each build over cuBLAS TF32 (the records' names: :data:`PAIRS`)."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    out = {}
    for (m, n, k), by in tflops.items():
        one, every = next((pair for pair in PAIRS if pair[0] in by and pair[1] in by), PAIRS[0])
        out[f"{m}x{n}x{k}"] = {
            "tflops": {name: by.get(name) for name in sorted(by)},
            "one_over_every": ratio(by.get(one), by.get(every)),
            "one_over_step17": ratio(by.get(one), by.get("warp_specialized")),
            "every_over_step17": ratio(by.get(every), by.get("warp_specialized")),
            "over_tf32": {name: ratio(by.get(name), by.get("cublas_tf32")) for name in by if name.startswith(("w", "c"))
                          and name not in ("cublas", "cublas_tf32")}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/cluster_arrivals.py")
    import gemm_steps
    from gemm_steps.steps import cluster_multicast

    from experiments.kernels import cluster_every_warp_arrives

    out = output_path("cluster-arrivals", argv[1] if len(argv) > 1 else None)
    every_warp = cluster_every_warp_arrives.build(cluster_multicast.SEARCH_SPACE[0])
    launches = {"warp_specialized": gemm_steps.get_step("warp_specialized").launch,
                "cluster_every_warp_arrives": every_warp.launch,
                "cluster_multicast": gemm_steps.get_step("cluster_multicast").launch}
    entries = [SimpleNamespace(name=name, number=20, arithmetic="tf32", launch=launches[name]) for name in BUILDS]
    results = run_and_save(entries, SIZES, out, "step 20 with one cluster arrival a warpgroup and block, beside step "
                           "20 as it was (every warp arrives), step 17 and cuBLAS TF32 "
                           "(experiments/cluster_arrivals.py)", summary, width=28)
    for shape, row in results["summary"].items():
        print(f"{shape}: one arrival / every warp {row['one_over_every'] or float('nan'):.3f}, one arrival / step 17 "
              f"{row['one_over_step17'] or float('nan'):.3f}, every warp / step 17 "
              f"{row['every_over_step17'] or float('nan'):.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
