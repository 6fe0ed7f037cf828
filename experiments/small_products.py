"""Where a small product's time goes on step 18 (issue 37: the default ``matmul`` ≥ 0.8× cuBLAS SGEMM on every
held-out product below 2³⁰ — missed by the last draws at 0.71–0.79×; Deliver 6: "if the padded or split paths' extra
launches cost more than their kernels").

Three things add to a small product's kernel time on step 18, each measured here by one change:

* **the readable copies** — where K or N is not a multiple of 4, A or B is copied into readable rows first (one
  launch each): the product at an odd K against the same product at the multiple of 4 next to it (``K±1``: the
  kernel's work the same to within a k-column);
* **the split** — where the tiles fill fewer than the SMs and K is long enough, K is split and a second kernel adds
  the slices: step 18 as shipped against step 18 on one slice;
* **the waves** — one block a tile, one block an SM: 140 tiles on 132 SMs take two rounds of the k-loop where 130
  take one (1792×1280×256 against 1664×1280×256).

Shapes: small products of the held-out classes (skinny, short K, few tiles), none of them in a held-out set, each
with its even-K neighbour; cuBLAS SGEMM and TF32 in the same run. Prediction: predictions/small-products-before-run.md
(committed before the first run).

The second run (``--pdl``) asks whether the copies' and the reduction's launches cost less as programmatic dependent
launches (PDL: the kernel after a readable copy, and split-K's reduction, launched with
``programmatic_stream_serialization`` and waiting with ``griddepcontrol.wait`` after their set-up;
``launch_plans.PROGRAMMATIC_LAUNCHES``): step 18 as shipped (PDL) against the same build with its launch plans
recorded without PDL, same shapes. Prediction: predictions/small-products-pdl-before-run.md.

    python -m experiments.small_products [OUT.json] [--pdl]
    # default experiments/results/experiment-small-products[-pdl]-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import launch_with, output_path, ratio, require_gpu, run_and_save

#: (M, N, K) with K odd (A copied) and its neighbour with K a multiple of 4, then the two wave shapes.
PAIRS = [((1900, 1100, 155), (1900, 1100, 156)), ((3300, 150, 457), (3300, 150, 456)),
         ((2400, 250, 283), (2400, 250, 284)), ((1600, 64, 1371), (1600, 64, 1372)),
         ((700, 500, 401), (700, 500, 400))]
WAVES = [(1664, 1280, 256), (1792, 1280, 256)]
SIZES = [shape for pair in PAIRS for shape in pair] + WAVES
SHIPPED, ONE_SLICE = "warp_specialized_3xtf32", "warp_specialized_3xtf32@one_slice"
NO_PDL = "warp_specialized_3xtf32@no_pdl"


def pdl_summary(results: dict) -> dict:
    """Per shape: both builds' times (µs), the PDL build's time over the one without, and cuBLAS SGEMM over each."""
    us: dict = {}
    for r in results["records"]:
        if r.get("median_ms"):
            us.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = 1000 * r["median_ms"]
    return {shape: {"us": by, "pdl_time_over_without": ratio(by.get(SHIPPED), by.get(NO_PDL)),
                    "over_cublas": ratio(by.get("cublas"), by.get(SHIPPED)),
                    "without_over_cublas": ratio(by.get("cublas"), by.get(NO_PDL))}
            for shape, by in us.items()}


def recorded_without_pdl(built):
    """``built.launch`` whose launch plans are recorded with ``PROGRAMMATIC_LAUNCHES`` off (a plan is recorded on
    the first launch of a shape and replayed after: the flag is off around every call of this entry only)."""
    from gemm_steps.toolkit import launch_plans

    return launch_with(built.launch, launch_plans, "PROGRAMMATIC_LAUNCHES", False)


def dependent_launches(built, shape) -> int:
    """How many of the launches ``built`` records for ``shape`` are programmatic dependent launches."""
    import numpy as np
    from numba import cuda

    from gemm_steps.toolkit.launch_plans import LaunchPlan

    m, n, k = shape
    a, b = cuda.device_array((m, k), np.float32), cuda.device_array((k, n), np.float32)
    return LaunchPlan.record(built, a, b, cuda.device_array((m, n), np.float32), 0).dependent_launches


def main_pdl(argv: list[str]) -> None:
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    out = output_path("small-products-pdl", argv[1] if len(argv) > 1 else None)
    config = default_config(step18.SEARCH_SPACE)
    pdl, without = step18.build(config), step18.build(config)
    entries = [SimpleNamespace(name=SHIPPED, number=18, arithmetic="3xtf32", launch=pdl.launch),
               SimpleNamespace(name=NO_PDL, number=18, arithmetic="3xtf32", launch=recorded_without_pdl(without))]
    results = run_and_save(entries, SIZES, out, "step 18's dependent launches (a readable copy's kernel, split-K's "
                           "reduction) as programmatic dependent launches or not (experiments/small_products.py "
                           "--pdl)", pdl_summary, width=36)
    counts = {f"{m}x{n}x{k}": dependent_launches(pdl, (m, n, k)) for m, n, k in SIZES}
    import json

    saved = json.loads(out.read_text())
    saved["dependent_launches"] = counts
    out.write_text(json.dumps(saved, indent=1))
    for shape, row in results["summary"].items():
        nan = float("nan")
        print(f"{shape}: {row['us']}  PDL/without {row['pdl_time_over_without'] or nan:.3f}  / cuBLAS SGEMM "
              f"{row['over_cublas'] or nan:.2f} (without {row['without_over_cublas'] or nan:.2f})  dependent "
              f"launches {counts[shape]}")
    print(f"wrote {out}")


def summary(results: dict) -> dict:
    """Per shape: both builds' times (µs) and cuBLAS SGEMM's; the shipped build over cuBLAS (by speed); the split's
    effect (shipped time over one slice's). Per pair: the odd K's time over the even K's (the copies). The waves: the
    140-tile product's time over the 130-tile one's."""
    us: dict = {}
    for r in results["records"]:
        if r.get("median_ms"):
            us.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = 1000 * r["median_ms"]
    shapes = {f"{m}x{n}x{k}": {"us": by, "over_cublas": ratio(by.get("cublas"), by.get(SHIPPED)),
                               "split_time_over_one_slice": ratio(by.get(SHIPPED), by.get(ONE_SLICE))}
              for (m, n, k), by in us.items()}
    copies = {f"{odd[2]}/{even[2]} at {odd[0]}x{odd[1]}": ratio(us.get(odd, {}).get(SHIPPED),
                                                                  us.get(even, {}).get(SHIPPED))
              for odd, even in PAIRS}
    copy_us = {f"{odd[2]}/{even[2]} at {odd[0]}x{odd[1]}": (us[odd][SHIPPED] - us[even][SHIPPED])
               if us.get(odd, {}).get(SHIPPED) and us.get(even, {}).get(SHIPPED) else None
               for odd, even in PAIRS}
    waves = ratio(us.get(WAVES[1], {}).get(ONE_SLICE), us.get(WAVES[0], {}).get(ONE_SLICE))
    return {"shapes": shapes, "odd_k_time_over_even_k": copies, "odd_k_minus_even_k_us": copy_us,
            "140_tiles_time_over_130": waves}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/small_products.py")
    if "--pdl" in argv:
        main_pdl([a for a in argv if a != "--pdl"])
        return
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    out = output_path("small-products", argv[1] if len(argv) > 1 else None)
    config = default_config(step18.SEARCH_SPACE)
    builds = {SHIPPED: step18.build(config), ONE_SLICE: step18.build(config, slices=lambda *_: 1)}
    entries = [SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=built.launch)
               for name, built in builds.items()]
    results = run_and_save(entries, SIZES, out, "where a small product's time goes on step 18: the readable copies, "
                           "the split and the waves (experiments/small_products.py)", summary, width=36)
    s = results["summary"]
    for shape, row in s["shapes"].items():
        nan = float("nan")
        print(f"{shape}: {row['us']}  / cuBLAS SGEMM {row['over_cublas'] or nan:.2f}  split/one slice "
              f"{row['split_time_over_one_slice'] or nan:.2f}")
    print("odd K / even K:", s["odd_k_time_over_even_k"], "µs:", s["odd_k_minus_even_k_us"])
    print("140 tiles / 130 tiles (one slice):", s["140_tiles_time_over_130"])
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
