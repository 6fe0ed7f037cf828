"""What a tile costs besides its k-loop: step 17, its persistent build and cuBLAS TF32 over K at one tile count (issue
36: explain the gap to the reference; where a persistent, TMA-store design would gain).

At 4096³ the H200 holds its top clock for step 17 and cuBLAS TF32 alike (the course benchmark: 1,981 MHz both) and step
17 still runs at ~92 % of cuBLAS TF32: a gap per clock, not the power limit's. Step 17 launches one block a 256 × 128
tile, one block an SM (its 4 stages take 200 KB of shared memory): each tile fills its pipeline from nothing and, at the
end, every consumer stores 128 accumulators straight to C while the tensor cores wait. cuBLAS's kernel is persistent
(one block an SM walks its tiles) with a TMA-store epilogue (results/reference-nvidia-h200-2026-11-28.json). If a
tile's cost is t0 + k_tiles · t_k, only the k-loop part grows with K: at fixed M = N = 4096 (512 tiles, 3.9 waves on
132 SMs — the same for every K here, and no split-K) the time over K is a line whose intercept is the waves' fixed
cost. The builds:

* ``warp_specialized``: step 17 as shipped;
* ``persistent_specialized``: step 17 persistent (experiments/kernels/persistent_specialized.py: one block an SM,
  the ring running on from one tile into the next, so the producer fills the next tile's stages while the consumers
  store — the prologue hidden, the store not).

cuBLAS TF32 (and SGEMM) timed in the same run. K = 1024, 2048, 4096, 8192, 16384. ``summary`` fits each kernel's
median time to a line in K (least squares): the intercept (µs, the part that does not grow with K) and the slope
(µs per 1,024 of K), and gives TFLOPS per GHz of the run's median SM clock, over cuBLAS TF32's, at each K — the
per-clock ratio, which a throttled clock does not move.

Prediction: predictions/per-tile-cost-before-run.md (written before the run).

    python -m experiments.per_tile_cost [OUT.json]   # default experiments/results/experiment-per-tile-cost-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

KS = [1024, 2048, 4096, 8192, 16384]
SIZES = [(4096, 4096, k) for k in KS]
BUILDS = ["warp_specialized", "persistent_specialized"]


def fit(ks: list[int], ms: list[float]) -> dict:
    """The least-squares line through (K, ms): ``{"intercept_us", "us_per_1024_k"}``."""
    n = len(ks)
    mean_k, mean_t = sum(ks) / n, sum(ms) / n
    slope = sum((k - mean_k) * (t - mean_t) for k, t in zip(ks, ms)) / sum((k - mean_k) ** 2 for k in ks)
    return {"intercept_us": (mean_t - slope * mean_k) * 1e3, "us_per_1024_k": slope * 1024 * 1e3}


def summary(results: dict) -> dict:
    """Each kernel's line (:func:`fit`) and, at each K, its TFLOPS, the run's median clock, and TFLOPS per GHz over
    cuBLAS TF32's (None where a record is missing)."""
    by: dict = {}
    for r in results["records"]:
        if r.get("tflops"):
            by.setdefault(r["step"], {})[r["K"]] = r
    out = {"lines": {}, "per_k": {}}
    for name in (*BUILDS, "cublas_tf32"):
        ks = sorted(by.get(name, {}))
        if len(ks) >= 2:
            out["lines"][name] = fit(ks, [by[name][k]["median_ms"] for k in ks])
    def per_ghz(r):  # TFLOPS per GHz of the record's median SM clock
        return r["tflops"] / (r["sm_clock_mhz_median"] / 1e3) if r and r.get("sm_clock_mhz_median") else None

    for k in KS:
        row = {}
        tf32 = by.get("cublas_tf32", {}).get(k)
        for name in (*BUILDS, "cublas_tf32"):
            r = by.get(name, {}).get(k)
            if r is None:
                continue
            row[name] = {"tflops": r["tflops"], "mhz": r.get("sm_clock_mhz_median"),
                         "over_tf32": ratio(r["tflops"], tf32 and tf32["tflops"]),
                         "over_tf32_per_clock": ratio(per_ghz(r), per_ghz(tf32))}
        out["per_k"][str(k)] = row
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/per_tile_cost.py")
    import gemm_steps

    from experiments.kernels import persistent_specialized

    out = output_path("per-tile-cost", argv[1] if len(argv) > 1 else None)
    launches = {"warp_specialized": gemm_steps.get_step("warp_specialized").launch,
                "persistent_specialized": persistent_specialized.build().launch}
    entries = [SimpleNamespace(name=name, number=17, arithmetic="tf32", launch=launches[name]) for name in BUILDS]
    results = run_and_save(entries, SIZES, out, "step 17 and its persistent build over K at M = N = 4096, cuBLAS TF32 "
                           "in the same run: a tile's fixed cost (experiments/per_tile_cost.py)", summary, width=24)
    for name, line in results["summary"]["lines"].items():
        print(f"{name}: {line['intercept_us']:.1f} µs + {line['us_per_1024_k']:.1f} µs per 1,024 of K")
    for k, row in results["summary"]["per_k"].items():
        print(f"K={k}: " + ", ".join(f"{name} {v['over_tf32']:.3f} ({v['over_tf32_per_clock']:.3f} per clock)"
                                     for name, v in row.items() if name != "cublas_tf32" and v["over_tf32"]))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
