"""Does step 20's cluster (A's tile shared by two blocks, TMA multicast) pay on step 21's persistent stream-K grid?
One change, timed in one run with step 21, step 20, step 17 and both cuBLAS (issue 36, Deliver 3: a persistent
cluster kernel, as cuBLAS's TF32 kernel is — grid 132, cluster 2: results/reference-*.json).

The builds, at step 21's tile (256 × 128):

* ``warp_specialized`` (step 17), ``cluster_multicast`` (step 20), ``warp_specialized_stream_k`` (step 21): as shipped;
* ``cluster_stream_k``: step 21 in clusters of two, its schedule over pairs of tiles
  (experiments/kernels/cluster_stream_k.py, whose docstring says why it might and might not help). No fallback to
  step 17's split-K: at these shapes step 21 has none either.

Shapes: 4096³ and 8192³ (whole waves: the persistent loop), 5120×2560×4096 and 2304×4096×8192 (whole tiles in whole
pairs, a part-empty last wave: stream-K splits). cuBLAS SGEMM and TF32 in the same run. The run's ratios are stored
with it (``summary``) and printed.

Prediction: predictions/cluster-stream-k-before-run.md (written before the run).

``--tma-store``: the same run with the variant's TMA-store build beside it (``cluster_stream_k_tma_store``, the one
change C's way out; now step 23, gemm_steps/steps/cluster_stream_k_tma_store.py, timed here without its fallbacks —
none applies at these shapes; the two runs in experiments/results/ timed the same fast kernel as an experiment file,
before its partial-tile build was added), and its ratio over the plain variant and cuBLAS TF32 in the summary. Prediction: predictions/cluster-stream-k-tma-store-before-run.md.

    python -m experiments.cluster_stream_k [--tma-store] [OUT.json]
    # default experiments/results/experiment-cluster-stream-k[-tma-store]-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096), (2304, 4096, 8192)]
VARIANT = "cluster_stream_k"
TMA_STORE = "cluster_stream_k_tma_store"
STEPS = ["warp_specialized", "cluster_multicast", "warp_specialized_stream_k"]


def summary(results: dict) -> dict:
    """Per size ``"MxNxK"``: each build's TFLOPS (and both cuBLAS'), the variant over step 21, over step 20 and over
    cuBLAS TF32, and step 21 over cuBLAS TF32 (None where an entry is missing or failed)."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = r.get("tflops")
    out = {}
    for shape, by in tflops.items():
        out[shape] = {"tflops": {name: by.get(name) for name in [*STEPS, VARIANT, TMA_STORE, "cublas_tf32", "cublas"]
                                 if name in by},
                      "tma_store_over_variant": ratio(by.get(TMA_STORE), by.get(VARIANT)),
                      "tma_store_over_cublas_tf32": ratio(by.get(TMA_STORE), by.get("cublas_tf32")),
                      "variant_over_step_21": ratio(by.get(VARIANT), by.get("warp_specialized_stream_k")),
                      "variant_over_step_20": ratio(by.get(VARIANT), by.get("cluster_multicast")),
                      "variant_over_cublas_tf32": ratio(by.get(VARIANT), by.get("cublas_tf32")),
                      "step_21_over_cublas_tf32": ratio(by.get("warp_specialized_stream_k"), by.get("cublas_tf32"))}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/cluster_stream_k.py")
    import gemm_steps

    from experiments.kernels import cluster_stream_k
    from gemm_steps.steps import cluster_stream_k_tma_store

    arguments = [a for a in argv[1:] if a != "--tma-store"]
    tma_store = "--tma-store" in argv[1:]
    out = output_path("cluster-stream-k" + ("-tma-store" if tma_store else ""), arguments[0] if arguments else None)
    entries = [gemm_steps.get_step(name) for name in STEPS]
    entries.append(SimpleNamespace(name=VARIANT, number=21, arithmetic="tf32", launch=cluster_stream_k.build().launch))
    if tma_store:
        entries.append(SimpleNamespace(name=TMA_STORE, number=21, arithmetic="tf32",
                                       launch=cluster_stream_k_tma_store.build(cluster_stream_k.CONFIG.tiles(),
                                                                               fallback=False).launch))
    results = run_and_save(entries, SIZES, out, "step 21 in clusters of two with A's tile multicast (the schedule over "
                           "pairs of tiles) against steps 21, 20 and 17 (experiments/cluster_stream_k.py)",
                           summary, repeats=30, width=28)
    for shape, row in results["summary"].items():
        print(f"{shape}: variant / step 21 {row['variant_over_step_21'] or float('nan'):.3f}, "
              f"variant / step 20 {row['variant_over_step_20'] or float('nan'):.3f}, "
              f"variant / cuBLAS TF32 {row['variant_over_cublas_tf32'] or float('nan'):.3f}, "
              f"step 21 / cuBLAS TF32 {row['step_21_over_cublas_tf32'] or float('nan'):.3f}"
              + (f", TMA store / variant {row['tma_store_over_variant'] or float('nan'):.3f}, TMA store / cuBLAS "
                 f"TF32 {row['tma_store_over_cublas_tf32'] or float('nan'):.3f}" if tma_store else ""))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
