"""Do the readable copies cost less when the kernel after them starts early? (issue 37: the default ``matmul`` ≥ 0.8×
cuBLAS SGEMM on every held-out product below 2³⁰.)

experiments/small_product_floor.py found step 18 at 0.91–1.42× cuBLAS SGEMM at 3968×384×K, K = 32–256, where every
tile is whole and nothing is copied: the held-out small products lose where A or B must first be copied into rows the
copy engine can read (K or N not a multiple of 4; experiments/small_products.py: +2.8–6.2 µs a copy, of which its
bytes are ~1 µs). In a launch plan the kernel after a copy is already a programmatic dependent launch, but the copy
never said so (``griddepcontrol.launch_dependents``), so the kernel could start only as the copy's blocks exited, and
a second copy (B's, after A's) was an ordinary launch after the first.

The change (``toolkit/tma_tiles.copy_rows_kernel``): each block of the copy first lets the next kernel start
(``let_next_grid_start``) and, last, waits for the copy before it (``wait_for_previous_grid``); so a plan launches B's
copy beside A's and the step's kernel while they run. Timed in one run, both cuBLAS beside them: step 18 as shipped
against step 18 whose plans were recorded with the copy of before (experiments/kernels/copy_rows_ordinary.py: the
same kernel without the two instructions), at products with no copy, A's, B's and both — around 3968×384×128 (whole
tiles), and small products of the held-out kinds that no held-out set holds.

Prediction: predictions/copy-early-start-before-run.md (committed before this script's first run).

    python -m experiments.copy_early_start [OUT.json]   # default experiments/results/experiment-copy-early-start-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import launch_with, output_path, ratio, records_by_shape, require_gpu, run_and_save

#: (shape, what is copied): around the whole-tile product, then small products of the held-out kinds.
SHAPES = [((3968, 384, 128), "none"), ((3968, 384, 127), "A"), ((3968, 383, 128), "B"), ((3968, 383, 127), "A and B"),
          ((1900, 1100, 155), "A"), ((2400, 250, 283), "A (split)"), ((1150, 150, 961), "A and B (split)"),
          ((6000, 301, 99), "A and B"), ((2000, 700, 385), "A and B")]
SIZES = [shape for shape, _ in SHAPES]
SHIPPED, ORDINARY = "warp_specialized_3xtf32", "warp_specialized_3xtf32@ordinary_copy"


def with_the_copy_of_before(built):
    """``built.launch`` with ``tma_tiles.copy_rows_kernel`` replaced by the copy of before around every call: a launch
    plan, recorded at a shape's first call, keeps the copy kernel it was recorded with."""
    from experiments.kernels.copy_rows_ordinary import copy_rows_ordinary_kernel
    from gemm_steps.toolkit import tma_tiles

    return launch_with(built.launch, tma_tiles, "copy_rows_kernel", copy_rows_ordinary_kernel)


def summary(results: dict) -> dict:
    """Per shape: what is copied, both builds' times (µs) and cuBLAS SGEMM's, the shipped build's time over the
    other's, and each over cuBLAS SGEMM (by speed)."""
    copied = {f"{m}x{n}x{k}": what for (m, n, k), what in SHAPES}
    out = {}
    for shape, rows in records_by_shape(results).items():
        us = {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
        out[shape] = {"copied": copied.get(shape), "us": us,
                      "shipped_time_over_ordinary": ratio(us.get(SHIPPED), us.get(ORDINARY)),
                      "shipped_over_cublas": ratio(us.get("cublas"), us.get(SHIPPED)),
                      "ordinary_over_cublas": ratio(us.get("cublas"), us.get(ORDINARY))}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/copy_early_start.py")
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    out = output_path("copy-early-start", argv[1] if len(argv) > 1 else None)
    config = default_config(step18.SEARCH_SPACE)
    shipped, ordinary = step18.build(config), step18.build(config)
    entries = [SimpleNamespace(name=SHIPPED, number=18, arithmetic="3xtf32", launch=shipped.launch, config={}),
               SimpleNamespace(name=ORDINARY, number=18, arithmetic="3xtf32",
                               launch=with_the_copy_of_before(ordinary), config={})]
    results = run_and_save(entries, SIZES, out, "step 18 with the readable copy that lets the next kernel start early, "
                           "against the copy of before (experiments/copy_early_start.py)", summary, width=40)
    nan = float("nan")
    for shape, row in results["summary"].items():
        print(f"{shape:16s} copied {row['copied']:16s} shipped/ordinary {row['shipped_time_over_ordinary'] or nan:.3f}"
              f"  over cuBLAS SGEMM {row['shipped_over_cublas'] or nan:.2f} (before {row['ordinary_over_cublas'] or nan:.2f})")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
