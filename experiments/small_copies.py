"""What the readable copies cost the default precision's small products (issue 37: the default ``matmul`` ≥ 0.8×
cuBLAS SGEMM on every held-out product below 2³⁰; the draws' minimums, 0.67–0.70×, all had A and B copied).

At two small products near the held-out minimums (none of them held out), each in four versions — K and N both not
multiples of 4 (A and B copied into readable rows first), only K (A copied), only N (B copied), neither — step 22,
step 18 and step 18 on 64 × 128 tiles, both cuBLAS in one run. A copy's cost is the difference of one kernel's times
between two versions that differ in one side by one element. Prediction: predictions/small-copies-before-run.md
(committed before the run).

    python -m experiments.small_copies [OUT.json]
    # default experiments/results/experiment-small-copies-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

#: (M, N odd, N even, K odd, K a multiple of 4): each product in its four versions.
PRODUCTS = [(101, 4957, 4956, 287, 288), (93, 9781, 9780, 173, 172)]
SIZES = [(m, n, k) for m, n_odd, n_even, k_odd, k_even in PRODUCTS
         for n, k in ((n_odd, k_odd), (n_even, k_odd), (n_odd, k_even), (n_even, k_even))]
KERNELS = ["warp_specialized_3xtf32_stream_k", "warp_specialized_3xtf32", "warp_specialized_3xtf32@64x128"]


def summary(results: dict) -> dict:
    """Per product and kernel: B's copy (µs: N odd − N even, K odd), A's copy (K odd − K even, N even), both; per
    version the fastest kernel over cuBLAS SGEMM."""
    us: dict = {}
    for r in results["records"]:
        if r.get("median_ms"):
            us.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = 1000 * r["median_ms"]
    out: dict = {}
    for m, n_odd, n_even, k_odd, k_even in PRODUCTS:
        both, a_only, b_only, neither = (us.get((m, n, k), {}) for n, k in
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
    from gemm_steps.harness import dispatch

    out = output_path("small-copies", argv[1] if len(argv) > 1 else None)
    entries = []
    for name in KERNELS:
        chosen = dispatch.candidate(name)
        entries.append(SimpleNamespace(name=name, number=chosen.number, arithmetic=chosen.arithmetic,
                                       launch=chosen.launch, config={}))
    results = run_and_save(entries, SIZES, out, "what the readable copies cost the default precision's small "
                           "products (experiments/small_copies.py)", summary, width=36)
    for product, row in results["summary"].items():
        print(product, row)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
