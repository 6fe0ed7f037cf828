"""Why was step 20's first GPU build 0.56× step 17? One change at a time, in one run with step 17 and cuBLAS.

Step 20 (``cluster_multicast``) first ran on an H200 at 211 / 220 TFLOPS at 4096³ / 8192³ against step 17's
374 / 367 in the same run (``gemm-steps bench --steps 17 20``:
experiments/results/experiment-cluster-first-run-nvidia-h200.json). A first, uncommitted version of this script then
timed the variants below once (release_cluster 211 / 220, the default arrival 371 / 364, cluster of one 338 / 347;
step 17 374-375 / 367-370 TFLOPS). Its consumers' arrivals on the peer's empty barriers were written
``mbarrier.arrive.release.cluster`` — a release at cluster scope before every arrival. CUTLASS's
``ClusterBarrier::arrive(cta_id)`` uses the default (``.release`` at ``.cta`` scope). The variants:

* ``release_cluster``: step 20 as it first ran (experiments/kernels/cluster_multicast_release.py);
* ``cluster_multicast``: step 20 as shipped — the same kernel with the default arrival;
* ``cluster_of_1``: the shipped kernel in clusters of one block (the same instructions — remote arrivals to itself, a
  "multicast" to itself of the whole A tile, cluster barriers — without a peer): what the cluster machinery costs
  without its saving.

Prediction, written before the committed run (after the first): ``cluster_multicast`` within ±3 % of step 17 at
4096³, ``release_cluster`` ≈ 0.56× again, ``cluster_of_1`` at most step 17's speed.

    python -m experiments.cluster_arrive_scope [OUT.json]
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu


def variants() -> list:
    """(label, build) of each variant at step 20's default tile."""
    from gemm_steps.steps import cluster_multicast
    from gemm_steps.toolkit.tuned import default_config

    from experiments.kernels import cluster_multicast_release

    config = default_config(cluster_multicast.SEARCH_SPACE)
    return [("release_cluster", cluster_multicast_release.build(config)),
            ("cluster_multicast", cluster_multicast.build(config)),
            ("cluster_of_1", cluster_multicast.build(config, cluster=1))]


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/cluster_arrive_scope.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    out = output_path("cluster-arrive-scope", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step("warp_specialized")]
    entries += [SimpleNamespace(name=label, number=20, arithmetic="tf32", launch=tiles.launch)
                for label, tiles in variants()]
    results = run_benchmark(entries, [(4096, 4096, 4096), (8192, 8192, 8192)], repeats=30,
                            progress=lambda message: print(message, flush=True))
    results["experiment"] = ("step 20's remote arrival: release at cluster or CTA scope "
                             "(experiments/cluster_arrive_scope.py)")
    save(results, out)
    print_records(results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
