"""Step 18 on half its tile for small products (issue 37: the default ``matmul`` ≥ 0.8× cuBLAS SGEMM on every
product below 2³⁰).

Where a small product's time goes on step 18 was measured before (experiments/small_products.py: the readable copies
+2.8–6.2 µs, the split no help at 9–15 k-tiles, the dependent launches adopted). What none of those changed is the
tile: 128 × 128 gives a 701×1401 product 66 tiles for 132 SMs, each a short k-loop. Here step 18's own kernel is
built for half of it — one consumer warpgroup on 128 × 64, or two on 64 × 128 (a warpgroup computes 64 columns of
C: Cᵀ is its wgmma's M) — as ``matmul``'s tile variants ``warp_specialized_3xtf32@128x64`` and ``@64x128``
(``dispatch.TILE_VARIANTS``), against the step as shipped, both cuBLAS in one run. Nothing else differs: the same
kernel, copies, split policy and register split.

Shapes: small products with A and B copied (701×1401×171, 1501×251×333), B copied (501×333×703), neither
(704×1400×172), the shape suite's small squares, and 2048³ and 4096³ (where the half tiles should lose). None is in
a held-out set. The first run of the candidates at the first five shapes (before the variants existed) is
``experiment-small-products-candidates-nvidia-h200.json``. Prediction: predictions/step-18-half-tiles-before-run.md
(committed before this script's first run).

    python -m experiments.half_tiles_3xtf32 [OUT.json]   # default experiments/results/experiment-half-tiles-3xtf32-<gpu>.json
"""

from __future__ import annotations

import sys

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(701, 1401, 171), (704, 1400, 172), (1501, 251, 333), (501, 333, 703), (256, 256, 256), (512, 512, 512),
         (640, 640, 640), (2048, 2048, 2048), (4096, 4096, 4096)]
SHIPPED = "warp_specialized_3xtf32"
HALVES = ("warp_specialized_3xtf32@128x64", "warp_specialized_3xtf32@64x128")


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: median µs of every entry, each over cuBLAS SGEMM, and each half tile over step 18."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        us = {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
        out[shape] = {"us": us,
                      "over_cublas_sgemm": {name: ratio(us.get("cublas"), t) for name, t in us.items()},
                      "over_step_18": {name: ratio(us.get(SHIPPED), us.get(name)) for name in HALVES}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/half_tiles_3xtf32.py")
    from gemm_steps.harness import dispatch

    out = output_path("half-tiles-3xtf32", argv[1] if len(argv) > 1 else None)
    entries = [dispatch.candidate(name) for name in (SHIPPED, *HALVES)]
    results = run_and_save(entries, SIZES, out, "step 18 on half its tile, 128x64 and 64x128, against its own "
                           "128x128 (experiments/half_tiles_3xtf32.py)", summary, repeats=30, width=34)
    for shape, row in results["summary"].items():
        print(f"{shape}: / SGEMM " + ", ".join(f"{k} {v or float('nan'):.2f}" for k, v in row["over_cublas_sgemm"].items())
              + "; over step 18 " + ", ".join(f"{v or float('nan'):.2f}" for v in row["over_step_18"].values()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
