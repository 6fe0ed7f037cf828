"""Step 17 reading a B it cannot read through one map, through four: its rows by their residue mod 4 (issue 37,
Deliver 1: "no copy where the strides meet TMA's rule" — here they do not, and still no copy).

Where N is not a multiple of 4, B's row pitch (4·N bytes) is not a multiple of 16 and the copy engine cannot read it:
steps 17–23 copy B into rows it can read first (``TmaTiles.readable_copy``: B read and written once more, at ~3.9 TB/s
for a large B, experiments/readable_copy_speed.py). But B's rows k ≡ r (mod 4) lie 16·N bytes apart, a pitch it can
read, so four tensor maps — one a residue, each starting (r·N) % 4 floats early to sit on 16 bytes
(``mbarrier_ops.tensor_maps_rows_mod_4``) — bring each k-tile of B as four boxes of 8 rows. The consumers then read
k-row k from block k % 4, row k // 4 (``B_ROWS_MOD_4``: two pitches change, ``B_LANE_PITCH`` and ``B_QUAD_PITCH``);
the four lanes that differ in k % 4 now read one bank each time (a block is a multiple of 128 bytes), where the copied
layout spreads them over four.

One change: how B reaches shared memory. Timed in one run, cuBLAS TF32 beside: step 17 on its 256 × 128 tiles and on
the 128 × 128 tile variant (``matmul``'s choice at few rows), each as shipped (B copied) and with the B_ROWS_MOD_4
build forced where N is not a multiple of 4. Shapes: few rows and a large B (where the copy is most of the time: on
held-out seed 20261223 ``precision="tf32"``'s slowest shape, 69×5639×5962, copies a 134 MB B), a mid-sized and two
large ragged ones (where the k-loop is most of the time); none in a held-out set.

Prediction: predictions/b-rows-mod-4-before-run.md (committed before this script's first run).

``--step 18``: the same for step 18 (3xTF32), whose B_ROWS_MOD_4 build took the place of its THREAD_COPIES build on
2026-11-30 — on its 128 × 128 tiles and on the 64 × 128 tile variant, at the small products of
experiments/small_copies.py besides the shapes above; cuBLAS SGEMM beside. Prediction:
predictions/b-rows-mod-4-step-18-before-run.md.

``--step 18 --small``: step 18 again, at small products (M·N·K < 2³⁰) of M = 300–8,000, where step 18 copies B as its
policy stands (M > ``B_BY_ROWS_MAX_M``, 200): does a small product save B's copy — a kernel boundary of ~3 µs more
than its bytes (experiments/copy_early_start.py) — whatever its M? Step 22 as shipped beside (it hands products whose B
step 18 reads by rows to step 18's build). Prediction: predictions/b-rows-mod-4-small-products-before-run.md.

    python -m experiments.b_rows_mod_4 [OUT.json] [--step 18 [--small]]
    # default experiments/results/experiment-b-rows-mod-4[-step-18[-small]]-<gpu>.json
"""

from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(64, 6001, 6000), (96, 9999, 5000), (128, 5003, 8000), (200, 7001, 3000), (1000, 3001, 2000),
         (3001, 2999, 1531), (4096, 4095, 4096)]
#: (entry name, the tile's fields, B read by rows mod 4)
BUILDS = [("step17_copy", {}, False), ("step17_rows", {}, True),
          ("step17_128_copy", dict(BLOCK_M=128, THREAD_M=8), False), ("step17_128_rows", dict(BLOCK_M=128, THREAD_M=8), True)]
#: ``--step 18``: the small products of experiments/small_copies.py first; the 64 × 128 variant up to M = 1000.
SIZES_18 = [(101, 4957, 287), (93, 9781, 173)] + SIZES
#: ``--step 18 --small``: small products with N not a multiple of 4 and M above 200, K a multiple of 4 or not.
SIZES_18_SMALL = [(300, 3001, 300), (500, 1999, 250), (800, 1201, 400), (1500, 703, 300), (3000, 301, 200),
                  (5000, 183, 160), (8000, 101, 170), (2000, 2001, 100), (600, 5001, 150)]
BUILDS_18 = [("step18_copy", {}, False), ("step18_rows", {}, True),
             ("step18_64_copy", dict(BLOCK_M=64, THREAD_M=4), False), ("step18_64_rows", dict(BLOCK_M=64, THREAD_M=4), True)]


def summary(results: dict, step: int = 17) -> dict:
    """Per shape ``"MxNxK"``: median µs of every entry, each over the cuBLAS it is judged by (TF32 for step 17, SGEMM
    for step 18), and each rows build over its copy."""
    baseline, tiles = (("cublas_tf32", {"256x128": "", "128x128": "_128"}) if step == 17 else
                       ("cublas", {"128x128": "", "64x128": "_64"}))
    out = {}
    for shape, rows in records_by_shape(results).items():
        us = {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
        out[shape] = {"us": us,
                      f"over_{baseline}": {name: ratio(us.get(baseline), t) for name, t in us.items()},
                      "rows_over_copy": {label: ratio(us.get(f"step{step}{tile}_copy"), us.get(f"step{step}{tile}_rows"))
                                         for label, tile in tiles.items()}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/b_rows_mod_4.py")
    from gemm_steps.steps import warp_specialized, warp_specialized_3xtf32

    step = 18 if "--step" in argv and argv[argv.index("--step") + 1] == "18" else 17
    argv = [a for i, a in enumerate(argv) if a != "--step" and (i == 0 or argv[i - 1] != "--step")]
    small = step == 18 and "--small" in argv
    argv = [a for a in argv if a != "--small"]
    module, builds, sizes = ((warp_specialized, BUILDS, SIZES) if step == 17 else
                             (warp_specialized_3xtf32, BUILDS_18, SIZES_18_SMALL if small else SIZES_18))
    out = output_path("b-rows-mod-4" if step == 17 else "b-rows-mod-4-step-18" + ("-small" if small else ""),
                      argv[1] if len(argv) > 1 else None)
    base = module.SEARCH_SPACE[0]
    entries = [SimpleNamespace(name=name, number=step, arithmetic="tf32" if step == 17 else "3xtf32",
                               launch=module.build(replace(base, **fields),
                                                   b_rows_when=(lambda m, n, k: True) if rows else None).launch)
               for name, fields, rows in builds]
    if small:  # step 22 as shipped (its own loop, or step 18's build: B copied at these M)
        from gemm_steps.harness import dispatch

        step22 = dispatch.candidate("warp_specialized_3xtf32_stream_k")
        entries.append(SimpleNamespace(name="step22", number=22, arithmetic="3xtf32", launch=step22.launch))
    results = run_and_save(entries, sizes, out, f"step {step} reading B by its rows mod 4 against a readable copy of "
                           "B (experiments/b_rows_mod_4.py)", lambda r: summary(r, step), repeats=30, width=20)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = next(v for key, v in row.items() if key.startswith("over_"))
        print(f"{shape}: rows / copy " + ", ".join(f"{k} {v or nan:.2f}" for k, v in row["rows_over_copy"].items())
              + "; / cuBLAS " + ", ".join(f"{k} {v or nan:.2f}" for k, v in over.items()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
