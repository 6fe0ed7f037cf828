"""Split K only where it pays (issue 37: the default `matmul` ≥ 0.8× cuBLAS SGEMM on every held-out product below
2³⁰; seed 20261229's slowest small product, 6090×97×261, ran step 18's split-K with A and B copied at 0.66×).

Step 18 split K wherever its tiles did not fill the SMs and K had at least 8 k-tiles, into as many slices as fill the
SMs. A split saves a block k-tiles but costs a second kernel, the reduction, and the slices' partial sums written and
read back: experiment-small-products-nvidia-h200.json measured the split at 1.13–1.14× one slice's time at
2400×250×283/284 (38 tiles of 9 k-tiles, 3 slices) and 0.89–0.92× at 700×500×400/401 (24 of 13, 5 slices). The change
(``warp_specialized_3xtf32.split_pays``): split only where the k-tiles saved (1.1 µs each) outweigh the reduction's
launch (2 µs) and the partial sums' traffic (0.052 µs a tile a slice) — by that model 21 of the 754 products of the
seen held-out sets no longer split (and step 22, which hands step 18 the products it splits, keeps some of them).

Timed in one run, both cuBLAS beside them, at products the rule changes (none held out) and two it does not: step 18
with the policy before (``old_slices``), step 18 as changed, step 22 as changed and step 18's 64 × 128 variant (what
``matmul`` chooses at most of them).

Prediction: predictions/split-pays-before-run.md (committed before this script's first run).

    python -m experiments.split_pays [OUT.json]   # default experiments/results/experiment-split-pays-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

CHANGED = [(2400, 256, 288), (3000, 250, 300), (1500, 600, 350), (1000, 900, 400), (800, 640, 300), (2000, 384, 320),
           (2100, 350, 301), (900, 700, 330)]
KEPT = [(700, 500, 400), (4000, 200, 500)]
SIZES = CHANGED + KEPT
OLD, NEW = "warp_specialized_3xtf32@split_before", "warp_specialized_3xtf32"
STEP_22, HALF = "warp_specialized_3xtf32_stream_k", "warp_specialized_3xtf32@64x128"


def old_slices(tiles: int, k_tiles: int, sms: int) -> int:
    """Step 18's policy before: as many slices as fill the SMs wherever the tiles do not and K has 8 k-tiles."""
    from gemm_steps.steps import warp_specialized_3xtf32 as step18

    if tiles >= sms or k_tiles < step18.MIN_SPLIT_K_TILES:
        return 1
    return max(1, min(sms // max(tiles, 1), k_tiles // step18.MIN_SLICE_K_TILES))


def entries() -> list:
    from gemm_steps.harness import dispatch
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    before = step18.build(default_config(step18.SEARCH_SPACE), slices=old_slices)
    found = [SimpleNamespace(name=OLD, number=18, arithmetic="3xtf32", launch=before.launch, config={})]
    for name in (NEW, STEP_22, HALF):
        c = dispatch.candidate(name)
        found.append(SimpleNamespace(name=name, number=c.number, arithmetic=c.arithmetic, launch=c.launch, config={}))
    return found


def summary(results: dict) -> dict:
    """Per shape: every entry's time (µs); step 18 as changed over before (time); each over cuBLAS SGEMM (speed)."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        us = {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
        out[shape] = {"us": us, "new_time_over_old": ratio(us.get(NEW), us.get(OLD)),
                      "over_cublas": {name: ratio(us.get("cublas"), t) for name, t in us.items()}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/split_pays.py")
    out = output_path("split-pays", argv[1] if len(argv) > 1 else None)
    results = run_and_save(entries(), SIZES, out, "step 18 splitting K only where the split pays, against the policy "
                           "before, with step 22 and the 64 × 128 variant (experiments/split_pays.py)", summary, width=40)
    nan = float("nan")
    for shape, row in results["summary"].items():
        print(f"{shape:16s} new/old {row['new_time_over_old'] or nan:.3f}  over cuBLAS SGEMM "
              + ", ".join(f"{k} {v:.2f}" for k, v in row["over_cublas"].items() if v and k != "cublas"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
