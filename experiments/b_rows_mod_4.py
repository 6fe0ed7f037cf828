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

    python -m experiments.b_rows_mod_4 [OUT.json]   # default experiments/results/experiment-b-rows-mod-4-<gpu>.json
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


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: median µs of every entry, each over cuBLAS TF32, and each rows build over its copy."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        us = {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
        out[shape] = {"us": us,
                      "over_cublas_tf32": {name: ratio(us.get("cublas_tf32"), t) for name, t in us.items()},
                      "rows_over_copy": {"256x128": ratio(us.get("step17_copy"), us.get("step17_rows")),
                                         "128x128": ratio(us.get("step17_128_copy"), us.get("step17_128_rows"))}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/b_rows_mod_4.py")
    from gemm_steps.steps import warp_specialized

    out = output_path("b-rows-mod-4", argv[1] if len(argv) > 1 else None)
    base = warp_specialized.SEARCH_SPACE[0]
    entries = [SimpleNamespace(name=name, number=17, arithmetic="tf32",
                               launch=warp_specialized.build(replace(base, **fields),
                                                             b_rows_when=(lambda m, n, k: True) if rows else None).launch)
               for name, fields, rows in BUILDS]
    results = run_and_save(entries, SIZES, out, "step 17 reading B by its rows mod 4 against a readable copy of B "
                           "(experiments/b_rows_mod_4.py)", summary, repeats=30, width=20)
    nan = float("nan")
    for shape, row in results["summary"].items():
        print(f"{shape}: rows / copy " + ", ".join(f"{k} {v or nan:.2f}" for k, v in row["rows_over_copy"].items())
              + "; / cuBLAS TF32 " + ", ".join(f"{k} {v or nan:.2f}" for k, v in row["over_cublas_tf32"].items()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
