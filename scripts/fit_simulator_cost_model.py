#!/usr/bin/env python
"""Time steps on Numba's CUDA simulator here and fit the cost model of ``gemm_steps/harness/simulator.py``.

    python scripts/fit_simulator_cost_model.py                 # time, fit, write results/simulator-cost-model-<date>.json
    python scripts/fit_simulator_cost_model.py --steps 1 3 12  # fewer steps (the fit needs an FMA, a barrier and an mma step)

The model: one product costs ``threads × (SECONDS_PER_THREAD + SECONDS_PER_FMA × k·THREAD_M·THREAD_N·products +
SECONDS_PER_BARRIER × barriers)`` — or, for a tensor-core step, ``threads × (SECONDS_PER_THREAD + SECONDS_PER_MMA ×
mma calls)`` (``simulator.estimated_seconds``). Each step here is timed at three shapes: one whole tile of its
simulator tiles with two k-tiles, a ragged product of about 2 × 2 tiles with eight and a bit, and the largest shape
``gemm-steps verify`` checks (129×260×32): one call of ``step(a, b)`` after a warm-up call at the first shape (which
builds the kernels). The four coefficients are fitted
by least squares on the *relative* error (non-negative: every subset of them tried), then scaled up so that no timed
call took longer than its estimate — the model is a limit and a time budget (tests/test_properties.py), so it must not
err on the fast side. A run takes about four minutes on a 2-core machine.

The results file keeps every timing with its model inputs, the fit, each call's measured / estimated ratio, the
machine (CPUs, load average before and after) and the versions: ``simulator.py`` quotes it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import gemm_steps
from gemm_steps.harness import simulator

REPO = Path(__file__).resolve().parent.parent
#: FMA steps of each kind (1 thread an element; shared-memory tiles; register tiles; warp tiles) and the tensor-core
#: ones (mma.sync: 12, 13; wgmma: 14, 16, 18).
DEFAULT_STEPS = ["naive", "shared_memory", "register_2d", "unrolled", "warp_tiling", "stream_k", "tensor_cores",
                 "three_tf32", "warpgroup_mma", "tma_pipeline", "warp_specialized_3xtf32"]
COEFFICIENTS = ["SECONDS_PER_THREAD", "SECONDS_PER_FMA", "SECONDS_PER_BARRIER", "SECONDS_PER_MMA"]


#: The largest shape ``gemm-steps verify`` checks (harness/verify.py's DEFAULT_SHAPES): what ``bench`` without a GPU
#: runs, and where the model's announcement ("about N s") is read.
VERIFY_SHAPE = (129, 260, 32)


def shapes(step) -> list[tuple[int, int, int]]:
    """One whole tile with two k-tiles; a ragged product of about 2 × 2 tiles with eight k-tiles and a bit; and the
    largest shape ``verify`` checks."""
    bm, bn, _, _ = simulator.tile_geometry(step.config)
    bk = int(step.config.get("BLOCK_K", 32))
    return [(bm, bn, 2 * bk), (bm + bm // 2 + 1, bn + bn // 2 + 3, 8 * bk + 5), VERIFY_SHAPE]


def features(step, m: int, n: int, k: int) -> dict:
    """The model's inputs for one product: threads and, per product, the multiply-adds, barrier arrivals and mma
    calls of all threads together (what each coefficient multiplies)."""
    config = step.config
    bm, bn, tm, tn = simulator.tile_geometry(config)
    threads = math.ceil(m / bm) * math.ceil(n / bn) * (bm * bn) // (tm * tn)
    out = {"threads": threads, "fma": 0, "barrier": 0, "mma": 0}
    if "MMA_TILES_M" in config:
        out["mma"] = threads * math.ceil(k / 8) * config["MMA_TILES_M"] * config["MMA_TILES_N"] * \
            config.get("MMA_PRODUCTS", 1)
    else:
        out["fma"] = threads * k * tm * tn * simulator.products_of(step)
        out["barrier"] = threads * (2 * math.ceil(k / config["BLOCK_K"]) if "BLOCK_K" in config else 0)
    return out


def time_call(step, m: int, n: int, k: int, rng) -> float:
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    start = time.perf_counter()
    c = step(a, b)
    seconds = time.perf_counter() - start
    assert np.allclose(c, a.astype(np.float64) @ b, rtol=1e-2, atol=1e-2 * math.sqrt(k)), f"{step.name} is wrong"
    return seconds


def fit(records: list[dict]) -> dict:
    """Non-negative least squares on the relative error (every subset of the coefficients tried; four of them)."""
    x = np.array([[r["features"][f] for f in ("threads", "fma", "barrier", "mma")] for r in records], float)
    t = np.array([r["seconds"] for r in records])
    scaled = x / t[:, None]  # relative error: (x·c − t) / t = (x/t)·c − 1
    best = None
    for size in range(1, 5):
        for subset in itertools.combinations(range(4), size):
            c, *_ = np.linalg.lstsq(scaled[:, subset], np.ones(len(t)), rcond=None)
            if (c < 0).any():
                continue
            full = np.zeros(4)
            full[list(subset)] = c
            error = float(np.sum((scaled @ full - 1) ** 2))
            if best is None or error < best[0]:
                best = (error, full)
    coefficients = best[1]
    margin = float(max(t / (x @ coefficients)))  # scale up: no timed call slower than its estimate
    return {"least_squares": dict(zip(COEFFICIENTS, coefficients.tolist())), "margin": margin,
            "fitted": dict(zip(COEFFICIENTS, (coefficients * margin).tolist()))}


def estimate(coefficients: dict, feature: dict) -> float:
    return (coefficients["SECONDS_PER_THREAD"] * feature["threads"] + coefficients["SECONDS_PER_FMA"] * feature["fma"]
            + coefficients["SECONDS_PER_BARRIER"] * feature["barrier"] + coefficients["SECONDS_PER_MMA"] * feature["mma"])


def environment() -> dict:
    import numba_cuda

    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "simulator": gemm_steps.SIMULATOR,
            "cpus": os.cpu_count(), "cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
            "numba_cuda": getattr(numba_cuda, "__version__", "?"), "numpy": np.__version__,
            "switch_interval_s": sys.getswitchinterval()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", nargs="+", default=DEFAULT_STEPS, metavar="STEP")
    parser.add_argument("--out", metavar="PATH", help="default: results/simulator-cost-model-<date>.json")
    args = parser.parse_args(argv)
    if not gemm_steps.SIMULATOR:
        parser.error("this fits the simulator's cost: run it where there is no GPU, or with NUMBA_ENABLE_CUDASIM=1")
    os.environ["GEMM_STEPS_SIMULATOR_LIMIT"] = "0"  # time what the old model would refuse too
    env = environment()
    env["load_average_before"] = os.getloadavg()
    rng = np.random.default_rng(0)
    records = []
    for name in args.steps:
        step = gemm_steps.get_step(int(name) if name.isdigit() else name)
        first, *rest = shapes(step)
        time_call(step, *first, rng)  # builds the kernels (and warms the caches)
        for shape in (first, *rest):
            seconds = time_call(step, *shape, rng)
            old = simulator.estimated_seconds(step.config, *shape, simulator.products_of(step))
            records.append({"step": step.name, "number": step.number, "shape": list(shape),
                            "features": features(step, *shape), "seconds": round(seconds, 3),
                            "previous_estimate_s": round(old, 3)})
            print(f"step {step.number:2d} {step.name:24s} {'×'.join(map(str, shape)):>12s}: {seconds:6.2f} s "
                  f"(the model before: {old:6.2f} s, {seconds / old:.2f}×)", flush=True)
    env["load_average_after"] = os.getloadavg()
    result = fit(records)
    for r in records:
        r["estimate_s"] = round(estimate(result["fitted"], r["features"]), 3)
        r["measured_over_estimate"] = round(r["seconds"] / r["estimate_s"], 3)
    ratios = [r["measured_over_estimate"] for r in records]
    before = [r["seconds"] / r["previous_estimate_s"] for r in records]
    document = {"what": "Numba CUDA simulator: one step(a, b) call after a warm-up, and the cost model fitted to it "
                        "(scripts/fit_simulator_cost_model.py)",
                "environment": env,
                "previous_model": {name: getattr(simulator, name) for name in COEFFICIENTS},  # previous_estimate_s's
                "records": records, **result,
                "measured_over_estimate": {"min": min(ratios), "max": max(ratios)},
                "measured_over_previous_estimate": {"min": round(min(before), 3), "max": round(max(before), 3)}}
    out = Path(args.out) if args.out else REPO / "results" / f"simulator-cost-model-{env['date'][:10]}.json"
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(json.dumps({k: document[k] for k in ("fitted", "margin", "measured_over_estimate",
                                              "measured_over_previous_estimate")}, indent=1))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
