"""What the readable copies cost the default precision's small products (issue 37: the default ``matmul`` ≥ 0.8×
cuBLAS SGEMM on every held-out product below 2³⁰; the draws' minimums, 0.67–0.70×, all had A and B copied).

At two small products near the held-out minimums (none of them held out), each in four versions — K and N both not
multiples of 4 (A and B copied into readable rows first), only K (A copied), only N (B copied), neither — step 22,
step 18 and step 18 on 64 × 128 tiles, both cuBLAS in one run. A copy's cost is the difference of one kernel's times
between two versions that differ in one side by one element. Prediction: predictions/small-copies-before-run.md
(committed before the run).

``--tiles``: which 3xTF32 kernel at small products of many short tiles — step 22 (its persistent loop on tiles of
at most 8 k-tiles), step 18, step 18 on 64 × 128 tiles and step 22 built on 64 × 128 tiles, at six products of many
rows and a short or middling K (none held out). Prediction: predictions/small-tiles-3xtf32-before-run.md.

    python -m experiments.small_copies [OUT.json] [--tiles]
    # default experiments/results/experiment-small-copies[-tiles]-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

#: (M, N odd, N even, K odd, K a multiple of 4): each product in its four versions.
PRODUCTS = [(101, 4957, 4956, 287, 288), (93, 9781, 9780, 173, 172)]
SIZES = [(m, n, k) for m, n_odd, n_even, k_odd, k_even in PRODUCTS
         for n, k in ((n_odd, k_odd), (n_even, k_odd), (n_odd, k_even), (n_even, k_even))]
KERNELS = ["warp_specialized_3xtf32_stream_k", "warp_specialized_3xtf32", "warp_specialized_3xtf32@64x128"]
#: ``--tiles``: products of many rows with a short K, one of 12 k-tiles, one long K, one of few rows.
TILE_SIZES = [(4000, 350, 99), (1800, 900, 133), (6000, 300, 64), (3500, 500, 397), (2000, 120, 1999),
              (300, 12000, 117)]
STEP_22_64 = "warp_specialized_3xtf32_stream_k@64x128"


def tiles_summary(results: dict) -> dict:
    """Per shape: each kernel's time (µs) and its speed over step 18 on 64 × 128 tiles and over cuBLAS SGEMM."""
    us = microseconds(results)
    return {shape: {"us": by, "over_step18_64x128": {k: ratio(by.get(KERNELS[2]), t) for k, t in by.items()},
                    "over_cublas": {k: ratio(by.get("cublas"), t) for k, t in by.items()}}
            for shape, by in us.items()}


def microseconds(results: dict) -> dict:
    """Per shape ``"MxNxK"``, each entry's median time in µs (entries that failed left out)."""
    return {shape: {name: 1000 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
            for shape, rows in records_by_shape(results).items()}


def kernel_entries() -> list:
    """What run_and_save times for each of KERNELS: the candidate ``matmul`` would run, launched directly."""
    from gemm_steps.harness import dispatch

    return [SimpleNamespace(name=name, number=c.number, arithmetic=c.arithmetic, launch=c.launch, config={})
            for name, c in ((name, dispatch.candidate(name)) for name in KERNELS)]


def main_tiles(argv: list[str]) -> None:
    from gemm_steps.harness import dispatch
    from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step22

    out = output_path("small-copies-tiles", argv[1] if len(argv) > 1 else None)
    entries = kernel_entries()
    half = step22.build(dispatch.TILE_VARIANTS[KERNELS[2]])
    entries.append(SimpleNamespace(name=STEP_22_64, number=22, arithmetic="3xtf32", launch=half.launch, config={}))
    results = run_and_save(entries, TILE_SIZES, out, "which 3xTF32 kernel at small products of many short tiles "
                           "(experiments/small_copies.py --tiles)", tiles_summary, width=40)
    for shape, row in results["summary"].items():
        print(shape, {k: round(v, 2) for k, v in row["over_step18_64x128"].items() if v})
    print(f"wrote {out}")


def summary(results: dict) -> dict:
    """Per product and kernel: B's copy (µs: N odd − N even, K odd), A's copy (K odd − K even, N even), both; per
    version the fastest kernel over cuBLAS SGEMM."""
    us = microseconds(results)
    out: dict = {}
    for m, n_odd, n_even, k_odd, k_even in PRODUCTS:
        both, a_only, b_only, neither = (us.get(f"{m}x{n}x{k}", {}) for n, k in
                                         ((n_odd, k_odd), (n_even, k_odd), (n_odd, k_even), (n_even, k_even)))

        def minus(x, y, name):
            return x[name] - y[name] if name in x and name in y else None

        out[f"{m}x{n_odd}x{k_odd}"] = {
            "b_copy_us": {name: minus(both, a_only, name) for name in KERNELS},
            "a_copy_us": {name: minus(a_only, neither, name) for name in KERNELS},
            "both_copies_us": {name: minus(both, neither, name) for name in KERNELS},
            "fastest_over_cublas": {version: ratio(times.get("cublas"), min((times[k] for k in KERNELS if k in times),
                                                                            default=None))
                                    for version, times in (("both", both), ("a_only", a_only), ("b_only", b_only),
                                                           ("neither", neither))}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/small_copies.py")
    if "--tiles" in argv:
        main_tiles([a for a in argv if a != "--tiles"])
        return
    out = output_path("small-copies", argv[1] if len(argv) > 1 else None)
    entries = kernel_entries()
    results = run_and_save(entries, SIZES, out, "what the readable copies cost the default precision's small "
                           "products (experiments/small_copies.py)", summary, width=36)
    for product, row in results["summary"].items():
        print(product, row)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
