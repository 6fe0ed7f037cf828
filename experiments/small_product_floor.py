"""Where a small product's floor comes from (issue 37: the default ``matmul`` ≥ 0.8× cuBLAS SGEMM on every held-out
product below 2³⁰; the last draws left it at 0.55–0.78×, at short K and few hundred columns, where cuBLAS SGEMM takes
13–25 µs and the 3xTF32 steps 18–22 µs).

Two runs, both on products that no held-out set holds and that need no readable copy (M, N multiples of 128, K of 32:
every tile full, one launch, no split-K: K ≤ 256 is under step 18's MIN_SPLIT_K_TILES):

* **times** (default): at 3968×384×K (93 tiles of 128 × 128, one wave on 132 SMs) for K = 32, 64, 128, 256, step 18,
  step 22 (its persistent loop), step 18 on 64 × 128 tiles (186 tiles) and step 17 (TF32, 256 × 128 tiles), cuBLAS
  SGEMM and TF32 beside them, in one run (``bench.run_benchmark``: CUDA events, L2 flushed, median of ≥ 20). The
  summary fits each kernel's time to a line in K: the intercept is what a product costs besides its k-loop — launch,
  set-up, the first copies' latency, the epilogue — and the slope its k-loop.
* **--profile**: one launch of step 18 and one of cuBLAS SGEMM at 3968×384×128 after a warm-up, between
  ``cuda.profile_start()`` and ``profile_stop()``, for Nsight Compute to profile (``--profile-from-start off``): run as

      ncu --profile-from-start off --clock-control none --set full --import-source no -o OUT python -m \\
          experiments.small_product_floor --profile

  and read its warp-stall samples by SASS instruction (``ncu -i OUT.ncu-rep --page source --csv --print-source sass``).

Prediction: predictions/small-product-floor-before-run.md (committed before this script's first run).

    python -m experiments.small_product_floor [OUT.json]    # default experiments/results/experiment-small-product-floor-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, records_by_shape, require_gpu, run_and_save
from experiments.per_tile_cost import fit

M, N = 3968, 384
KS = [32, 64, 128, 256]
SIZES = [(M, N, k) for k in KS]
ENTRIES = ("warp_specialized_3xtf32", "warp_specialized_3xtf32_stream_k", "warp_specialized_3xtf32@64x128",
           "warp_specialized")
PROFILED = (M, N, 128)


def entries() -> list:
    """The candidates ``matmul`` would run, each launched directly (as scripts/held_out.py times them)."""
    from gemm_steps.harness import dispatch

    return [SimpleNamespace(name=name, number=c.number, arithmetic=c.arithmetic, launch=c.launch, config={})
            for name, c in ((name, dispatch.candidate(name)) for name in ENTRIES)]


def summary(results: dict) -> dict:
    """Each kernel's line in K (``per_tile_cost.fit``: intercept µs, µs per 1,024 of K), and per K its time (µs)."""
    by = records_by_shape(results)
    us = {shape: {name: 1e3 * r["median_ms"] for name, r in rows.items() if r.get("median_ms")}
          for shape, rows in by.items()}
    lines = {}
    for name in (*ENTRIES, "cublas", "cublas_tf32"):
        points = [(k, us[f"{M}x{N}x{k}"][name] / 1e3) for k in KS if name in us.get(f"{M}x{N}x{k}", {})]
        if len(points) >= 2:
            lines[name] = fit([k for k, _ in points], [t for _, t in points])
    return {"lines": lines, "us": us}


def profile() -> None:
    """One launch each of step 18 and cuBLAS SGEMM at PROFILED, warmed up, inside a profiling range."""
    import numpy as np
    from numba import cuda

    from gemm_steps.harness import dispatch
    from gemm_steps.harness.cublas import launch_cublas

    m, n, k = PROFILED
    rng = np.random.default_rng(7)
    a = cuda.to_device(rng.standard_normal((m, k), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((k, n), dtype=np.float32))
    c = cuda.device_array((m, n), dtype=np.float32)
    step18 = dispatch.candidate(ENTRIES[0]).launch
    for _ in range(3):
        step18(a, b, c, 0)
        launch_cublas(a, b, c, 0)
    cuda.synchronize()
    cuda.profile_start()
    step18(a, b, c, 0)
    launch_cublas(a, b, c, 0)
    cuda.synchronize()
    cuda.profile_stop()
    expected = a.copy_to_host().astype(np.float64) @ b.copy_to_host().astype(np.float64)
    print("profiled", PROFILED, "last C's largest error", float(np.abs(c.copy_to_host() - expected).max()))


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/small_product_floor.py")
    if "--profile" in argv:
        profile()
        return
    out = output_path("small-product-floor", argv[1] if len(argv) > 1 else None)
    results = run_and_save(entries(), SIZES, out, "what a small product costs besides its k-loop: steps 18, 22, 18 "
                           "on 64 × 128 and 17 over K at 3968×384 (experiments/small_product_floor.py)", summary,
                           width=36)
    for name, line in results["summary"]["lines"].items():
        print(f"{name:36s} intercept {line['intercept_us']:6.1f} µs, {line['us_per_1024_k']:6.1f} µs per 1,024 of K")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
