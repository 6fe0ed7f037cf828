"""Short K, large C: where the default ``matmul``'s time goes where K is a few k-tiles and C is 100 MB or more
(issue 37: ≥ 1.0× cuBLAS SGEMM on every product ≥ 2³⁰; held-out seed 20261221 missed it at K = 71 and 66).

At such a shape each tile's k-loop is 2–4 k-tiles, so the epilogue (storing C) is a large part of a tile's time.
Step 23 stores C through shared memory with the copy engine while the next unit's copies run; steps 21 and 22 store
from registers. Timed in one run, both cuBLAS beside them: the FP32 stream-K step (11), step 17, step 18 and its
64 × 128 tile variant, step 21 (TF32 stream-K), step 22 (3xTF32 stream-K), step 23 (step 21 with clusters, the TMA
store and TF32 copies). Shapes of the class, none in a held-out set, with 4096³ as the control.

Prediction: predictions/short-k-epilogue-before-run.md (committed before this script's first run).

    python -m experiments.short_k [OUT.json]   # default experiments/results/experiment-short-k-<gpu>.json
"""

from __future__ import annotations

import sys

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(4096, 8192, 64), (8192, 8192, 128), (6000, 6000, 72), (3000, 12000, 100), (6001, 5999, 70),
         (4096, 4096, 4096)]
ENTRIES = ("stream_k", "warp_specialized", "warp_specialized_3xtf32", "warp_specialized_3xtf32@64x128",
           "warp_specialized_stream_k", "warp_specialized_3xtf32_stream_k", "cluster_stream_k_tma_store")


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: median µs of every entry; step 23 over step 21 (speed), step 22 over step 21 (time),
    step 22 and step 18 over cuBLAS SGEMM, step 23 over cuBLAS TF32, step 18 over step 22 (time)."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        us = {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
        out[shape] = {"us": us,
                      "step23_over_step21": ratio(us.get("warp_specialized_stream_k"),
                                                  us.get("cluster_stream_k_tma_store")),
                      "step22_time_over_step21": ratio(us.get("warp_specialized_3xtf32_stream_k"),
                                                       us.get("warp_specialized_stream_k")),
                      "over_cublas_sgemm": {name: ratio(us.get("cublas"), us.get(name))
                                            for name in ENTRIES if "3xtf32" in name or name == "stream_k"},
                      "step23_over_cublas_tf32": ratio(us.get("cublas_tf32"), us.get("cluster_stream_k_tma_store")),
                      "step18_time_over_step22": ratio(us.get("warp_specialized_3xtf32"),
                                                       us.get("warp_specialized_3xtf32_stream_k"))}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/short_k.py")
    from gemm_steps.harness import dispatch

    out = output_path("short-k", argv[1] if len(argv) > 1 else None)
    entries = [dispatch.candidate(name) for name in ENTRIES]
    results = run_and_save(entries, SIZES, out, "short K, large C: steps 11, 17, 18 (and 64x128), 21, 22, 23 "
                           "(experiments/short_k.py)", summary, repeats=30, width=34)
    nan = float("nan")
    for shape, row in results["summary"].items():
        print(f"{shape}: 23/21 {row['step23_over_step21'] or nan:.2f}, 22 time/21 "
              f"{row['step22_time_over_step21'] or nan:.2f}, 23/TF32 {row['step23_over_cublas_tf32'] or nan:.2f}, "
              "/ SGEMM " + ", ".join(f"{k} {v or nan:.2f}" for k, v in row["over_cublas_sgemm"].items()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
