"""A read by its rows mod 4 in step 18 (issue 37: the default ``matmul`` ≥ 0.8× cuBLAS SGEMM on every held-out product
below 2³⁰; Deliver 1: no copy where the strides meet TMA's rule).

Nearly every held-out small product that missed 0.8× had K not a multiple of 4: A's rows then lie 4·K bytes apart, a
pitch the copy engine cannot read, and step 18 first copies A into rows it can read — +3.0–4.2 µs at 3968×384
(experiments/copy_early_start.py), more than the copy's bytes: a kernel boundary. Step 18's ``A_ROWS_MOD_4`` build reads
A as it is, as its ``B_ROWS_MOD_4`` build reads B: rows m ≡ r (mod 4) lie 16·K bytes apart, so four tensor maps bring
a k-tile as four plain boxes of BLOCK_M / 4 rows into a rows buffer, and the producer's split — which rewrites A's
stage anyway — reads them from there into the swizzled layout ``wgmma`` reads. Three stages (a fourth rows buffer does
not fit), no copy, one launch.

Timed in one run, both cuBLAS beside them, at products whose K is not a multiple of 4 (none in a held-out set): step 18
copying A (the build as shipped before, ``a_rows_when=None``), step 18 reading A by its rows (``a_rows_when`` always),
the same two on 64 × 128 tiles (``dispatch``'s variant), and step 22 as shipped (its own loop where tiles are short, A
copied).

Prediction: predictions/a-rows-mod-4-before-run.md (committed before this script's first run).

**Historical.** Both runs found the rows build 1.09–1.65× the copy path's time at small products and 2.1–2.4× at large
(experiments/README.md): it was removed from step 18 in the commit after 451fd0b. This script runs at 451fd0b only
(``git checkout 451fd0b``): ``build(..., a_rows_when=...)`` is gone.

    python -m experiments.a_rows_mod_4 [OUT.json]   # default experiments/results/experiment-a-rows-mod-4-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

#: Small products (M·N·K < 2³⁰; three split K, one copies B too), then three large ones.
SMALL = [(3968, 384, 127), (4000, 352, 99), (1900, 1100, 155), (6000, 300, 99), (2400, 252, 283), (1150, 152, 961),
         (700, 500, 401), (501, 332, 703), (300, 1000, 205), (3968, 383, 127)]
LARGE = [(3000, 3000, 1001), (4096, 4096, 4095), (8000, 2000, 2047)]
SIZES = SMALL + LARGE
COPY, ROWS = "warp_specialized_3xtf32", "warp_specialized_3xtf32@a_rows"
COPY_HALF, ROWS_HALF = "warp_specialized_3xtf32@64x128", "warp_specialized_3xtf32@64x128_a_rows"
STEP_22 = "warp_specialized_3xtf32_stream_k"


def always(m: int, n: int, k: int) -> bool:
    return True


def entries() -> list:
    from gemm_steps.harness import dispatch
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config, half = default_config(step18.SEARCH_SPACE), dispatch.TILE_VARIANTS[COPY_HALF]
    builds = {COPY: step18.build(config, a_rows_when=None), ROWS: step18.build(config, a_rows_when=always),
              COPY_HALF: step18.build(half, a_rows_when=None), ROWS_HALF: step18.build(half, a_rows_when=always)}
    found = [SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=built.launch, config={})
             for name, built in builds.items()]
    step22 = dispatch.candidate(STEP_22)
    return found + [SimpleNamespace(name=STEP_22, number=22, arithmetic="3xtf32", launch=step22.launch, config={})]


def summary(results: dict) -> dict:
    """Per shape: every entry's time (µs); the rows build's time over the copy path's, on both tiles; the rows build
    over step 22; the fastest of the rows builds and of the copy paths (with step 22) over cuBLAS SGEMM."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        us = {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
        mine = [us[name] for name in (ROWS, ROWS_HALF) if name in us]
        before = [us[name] for name in (COPY, COPY_HALF, STEP_22) if name in us]
        out[shape] = {"us": us, "rows_time_over_copy": ratio(us.get(ROWS), us.get(COPY)),
                      "rows_time_over_copy_64x128": ratio(us.get(ROWS_HALF), us.get(COPY_HALF)),
                      "rows_time_over_step22": ratio(us.get(ROWS), us.get(STEP_22)),
                      "best_rows_over_cublas": ratio(us.get("cublas"), min(mine, default=None)),
                      "best_before_over_cublas": ratio(us.get("cublas"), min(before, default=None))}
    return out


#: ``--diagnose``: at two large products, the copy path on three stages (the rows build's count: SPLIT_BEHIND 1), beside
#: both builds; ``--profile``: one launch of each build at 4096×4096×4095 inside a profiling range, for Nsight Compute.
DIAGNOSED = [(4096, 4096, 4095), (3000, 3000, 1001)]
COPY_3 = "warp_specialized_3xtf32@3_stages"


def diagnose(argv: list[str]) -> None:
    from dataclasses import replace

    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    out = output_path("a-rows-mod-4-diagnosis", argv[1] if len(argv) > 1 else None)
    three = step18.build(replace(default_config(step18.SEARCH_SPACE), STAGES=3), a_rows_when=None)
    found = entries()[:2] + [SimpleNamespace(name=COPY_3, number=18, arithmetic="3xtf32", launch=three.launch,
                                             config={})]
    run_and_save(found, DIAGNOSED, out, "why step 18's A_ROWS_MOD_4 build is slow at large products: the copy path "
                 "on three stages beside both builds (experiments/a_rows_mod_4.py --diagnose)", summary, width=40)
    print(f"wrote {out}")


def profile() -> None:
    import numpy as np
    from numba import cuda

    m, n, k = DIAGNOSED[0]
    rng = np.random.default_rng(5)
    a = cuda.to_device(rng.standard_normal((m, k), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((k, n), dtype=np.float32))
    c = cuda.device_array((m, n), dtype=np.float32)
    launches = [entry.launch for entry in entries()[:2]]
    for launch in launches:
        launch(a, b, c, 0)
    cuda.synchronize()
    cuda.profile_start()
    for launch in launches:
        launch(a, b, c, 0)
    cuda.synchronize()
    cuda.profile_stop()


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/a_rows_mod_4.py")
    if "--diagnose" in argv:
        diagnose([a for a in argv if a != "--diagnose"])
        return
    if "--profile" in argv:
        profile()
        return
    out = output_path("a-rows-mod-4", argv[1] if len(argv) > 1 else None)
    results = run_and_save(entries(), SIZES, out, "step 18 reading A by its rows mod 4 against copying it first, on "
                           "128 × 128 and 64 × 128 tiles, and step 22 (experiments/a_rows_mod_4.py)", summary, width=40)
    nan = float("nan")
    for shape, row in results["summary"].items():
        print(f"{shape:18s} rows/copy {row['rows_time_over_copy'] or nan:.3f} (64×128 "
              f"{row['rows_time_over_copy_64x128'] or nan:.3f}), rows/step 22 {row['rows_time_over_step22'] or nan:.3f}"
              f"; best over cuBLAS SGEMM {row['best_rows_over_cublas'] or nan:.2f} (before "
              f"{row['best_before_over_cublas'] or nan:.2f})")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
