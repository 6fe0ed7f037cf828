"""The benchmark harness: how every number in this course is measured (docs/measurement.md explains why).

For each size, in one run:
1. fresh standard-normal inputs (never zeros), a new draw per size;
2. for every step and for cuBLAS: compile + warm up (compile time recorded), then ≥ ``repeats`` timed launches, each
   preceded (outside the timed region) by a 0.5 ms busy kernel (so the host's launch is queued before the GPU
   reaches the start event, and the events time the GPU's work only), poisoning C with NaN and flushing L2 by
   overwriting a buffer twice its size; every launch is timed alone with CUDA events on the kernels' stream, and
   the SM clock is read right after it (``harness/gpu_clock.py``);
3. the last output is checked: no NaN left (every element written) and its error against cuBLAS from the same
   run, plus a float64 check of sampled elements;
4. TFLOPS = 2·M·N·K / median time, and % of cuBLAS = cuBLAS median / step median (same run, same inputs).

cuBLAS is strict FP32 SGEMM (``"cublas"``), the baseline of every "% of cuBLAS". When a tensor-core step is timed,
cuBLAS on the TF32 tensor cores (``"cublas_tf32"``) is timed beside it, for the same inputs. Every record says its
``arithmetic``: ``"fp32"``, ``"tf32"`` (inputs rounded to TF32) or ``"3xtf32"`` (tensor cores at float32 accuracy).
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..toolkit.backend import SIMULATOR
from .environment import environment
from .gpu_clock import HOLD_NS, hold_gpu, sm_clock_mhz
from .step import Step

SCHEMA = 1

#: The baselines a results document may hold beside the steps (record name → label), and their arithmetic.
BASELINES = {"cublas": "cuBLAS (FP32)", "cublas_tf32": "cuBLAS (TF32)"}
BASELINE_ARITHMETIC = {"cublas": "fp32", "cublas_tf32": "tf32"}
#: How a plot or table marks a step's arithmetic (nothing for the FP32 units).
ARITHMETIC_MARK = {"fp32": "", "tf32": " [TF32]", "3xtf32": " [3xTF32]"}


def is_baseline(name: str) -> bool:
    """Whether a record is a cuBLAS baseline rather than a step."""
    return name in BASELINES


def flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


class Timer:
    """CUDA-event timing with NaN poisoning and an L2 flush before every timed launch."""

    def __init__(self, stream):
        from numba import cuda

        self.cuda = cuda
        self.stream = stream
        l2 = cuda.get_current_device().L2_CACHE_SIZE or 64 * 2**20
        self.flush_buffer = cuda.device_array(2 * l2 // 4, dtype=np.float32, stream=stream)
        self.flush_bytes = self.flush_buffer.nbytes
        self._nan_cache: dict = {}

    def poison(self, c) -> None:
        from .poison import fill

        fill(c, math.nan, self.stream)

    def flush_l2(self) -> None:
        from .poison import fill

        fill(self.flush_buffer, 1.0, self.stream)

    def time(self, launch: Callable[[], None], *, warmup: int, repeats: int, max_seconds: float, c) -> dict:
        cuda = self.cuda
        t0 = time.perf_counter()
        launch()  # first call compiles
        self.stream.synchronize()
        first_call_s = time.perf_counter() - t0
        for _ in range(warmup):
            launch()
        self.stream.synchronize()
        start, end = cuda.event(), cuda.event()
        times: list[float] = []
        clocks: list[float] = []
        budget_end = time.perf_counter() + max_seconds
        while len(times) < repeats or (time.perf_counter() < budget_end and len(times) < 4 * repeats):
            hold_gpu(self.stream)  # the GPU is busy while the host prepares the launch below
            self.poison(c)
            self.flush_l2()
            start.record(self.stream)
            launch()
            end.record(self.stream)
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end))
            clocks.append(sm_clock_mhz(self.stream))
            if len(times) >= repeats and time.perf_counter() >= budget_end:
                break
        arr = np.array(times)
        return {"median_ms": float(np.median(arr)), "min_ms": float(arr.min()), "max_ms": float(arr.max()),
                "runs": len(times), "first_call_s": first_call_s,
                "sm_clock_mhz_median": float(np.median(clocks)), "sm_clock_mhz_min": float(min(clocks))}


_TILE_KEYS = ("BLOCK_SIZE", "TILE", "BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "THREADS",
              "MIN_BLOCKS_PER_SM", "GROUP_M")


def _tile_config(step) -> dict:
    """The tile parameters a step ran with (so a record says which configuration it measured)."""
    config = getattr(step, "config", None)
    if isinstance(config, dict):
        return {key: config[key] for key in _TILE_KEYS if key in config}
    return {}


def sampled_fp64_error(a: np.ndarray, b: np.ndarray, c: np.ndarray, samples: int = 512, seed: int = 1) -> float:
    """Relative error of ``samples`` random elements of C against a float64 dot product (cheap at any size)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, a.shape[0], samples)
    cols = rng.integers(0, b.shape[1], samples)
    ref = np.einsum("ij,ji->i", a[rows].astype(np.float64), b[:, cols].astype(np.float64))
    got = c[rows, cols].astype(np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


def runnable(steps: Iterable, say: Callable[[str], None]) -> tuple[list, dict]:
    """(the steps this GPU can run, {name: why not} for the others — step 14 without wgmma), each left out said."""
    steps = list(steps)
    reasons = {s.name: s.unavailable() if hasattr(s, "unavailable") else None for s in steps}  # asked once each
    skipped = {name: reason for name, reason in reasons.items() if reason}
    for reason in skipped.values():
        say(f"skipped: {reason}")
    return [s for s in steps if s.name not in skipped], skipped


def run_benchmark(
    steps: Iterable[Step],
    sizes: Iterable[tuple[int, int, int]],
    *,
    warmup: int = 3,
    repeats: int = 20,
    max_seconds: float = 1.0,
    include_cublas: bool = True,
    include_cublas_tf32: bool | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Time ``steps`` (and cuBLAS) at every size; return a results document (see docs/measurement.md).

    ``include_cublas_tf32``: also time cuBLAS on the TF32 tensor cores; by default, when a step is not FP32."""
    if SIMULATOR:
        raise RuntimeError("benchmarks need a real CUDA GPU; on the simulator use 'gemm-steps verify' and the "
                           "shipped results (gemm-steps plot results/<file>.json)")
    from numba import cuda

    from .cublas import launch_cublas, launch_cublas_tf32
    from .verify import arithmetic_of, tolerance_of

    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    steps, skipped = runnable(steps, say)
    arithmetic = {**{s.name: arithmetic_of(s) for s in steps}, **BASELINE_ARITHMETIC}  # each judged by its own
    if include_cublas_tf32 is None:
        include_cublas_tf32 = include_cublas and any(arithmetic[s.name] != "fp32" for s in steps)
    sizes = [tuple(int(x) for x in s) for s in sizes]
    stream = cuda.stream()
    timer = Timer(stream)
    rng = np.random.default_rng(seed)
    records: list[dict] = []
    total = len(sizes) * (len(steps) + int(include_cublas) + int(include_cublas_tf32))
    done = 0
    for m, n, k in sizes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        a_dev, b_dev = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
        c_dev = cuda.device_array((m, n), dtype=np.float32, stream=stream)
        reference = None
        cublas_ms = None
        entries: list[tuple[str, int, Callable]] = []
        if include_cublas:
            entries.append(("cublas", 0, launch_cublas))
        if include_cublas_tf32:
            entries.append(("cublas_tf32", 0, launch_cublas_tf32))
        entries += [(s.name, s.number, s.launch) for s in steps]
        configs = {s.name: _tile_config(s) for s in steps}
        for name, number, launch in entries:
            done += 1
            say(f"[{done:3d}/{total}] {m}×{n}×{k}  {name} …")
            rec = {"step": name, "number": number, "M": m, "N": n, "K": k, "arithmetic": arithmetic[name]}
            if configs.get(name):
                rec["config"] = configs[name]
            try:
                timing = timer.time(functools.partial(launch, a_dev, b_dev, c_dev, stream),
                                    warmup=warmup, repeats=repeats, max_seconds=max_seconds, c=c_dev)
            except Exception as exc:  # a failing step is recorded, never hidden
                rec["error"] = f"{type(exc).__name__}: {exc}"
                records.append(rec)
                say(f"          FAILED: {rec['error']}")
                continue
            c = c_dev.copy_to_host(stream=stream)
            stream.synchronize()
            rec.update(timing)
            rec["tflops"] = flops(m, n, k) / (timing["median_ms"] * 1e-3) / 1e12
            rec["unwritten"] = int(np.isnan(c).sum())
            rec["sampled_rel_error_fp64"] = sampled_fp64_error(a, b, c)
            if name == "cublas":
                reference, cublas_ms = c, timing["median_ms"]
            if reference is not None:
                rec["rel_error_vs_cublas"] = float(np.linalg.norm(c - reference) / np.linalg.norm(reference))
            if cublas_ms is not None:
                rec["cublas_median_ms"] = cublas_ms
                rec["pct_of_cublas"] = 100.0 * cublas_ms / timing["median_ms"]
            records.append(rec)
            limit = tolerance_of(arithmetic[name], k)  # TF32 steps and cuBLAS TF32: harness.verify.tf32_tolerance
            wrong = not rec["sampled_rel_error_fp64"] <= limit
            say(f"          {rec['median_ms']:9.3f} ms  {rec['tflops']:6.2f} TFLOPS"
                + (f"  {rec['pct_of_cublas']:5.1f} % of cuBLAS" if "pct_of_cublas" in rec else "")
                + (f"  UNWRITTEN {rec['unwritten']}" if rec["unwritten"] else "")
                + (f"  WRONG: error {rec['sampled_rel_error_fp64']:.1e} > tolerance {limit:.1e}" if wrong else ""))
        del a_dev, b_dev, c_dev
    return {
        "schema": SCHEMA,
        "environment": environment(),
        "method": {
            "timer": "CUDA events around each launch, on the kernels' stream, the launch queued behind a "
                     f"{HOLD_NS / 1e6:g} ms busy kernel (no host time between the events)",
            "clock": "SM clock after each timed launch (%clock64 over 20 µs of %globaltimer): median and min",
            "warmup": warmup, "min_repeats": repeats, "max_seconds_per_entry": max_seconds,
            "statistic": "median (min and max kept)",
            "l2_flush_bytes": timer.flush_bytes,
            "output_poison": "NaN before every timed launch; 'unwritten' counts NaN left after the last",
            "inputs": f"standard normal float32, fresh per size (seed {seed})",
            "cublas": "cublasSgemm, CUBLAS_DEFAULT_MATH (no TF32), same stream and inputs",
            **({"cublas_tf32": "cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores), same stream and "
                               "inputs"} if include_cublas_tf32 else {}),
        },
        "records": records,
        **({"skipped_steps": skipped} if skipped else {}),
    }


def time_variants(variants: Iterable[tuple[str, object]], sizes: Iterable[int], path: str | Path, *,
                  repeats: int = 30, say: Callable[[str], None] = print) -> dict:
    """Time named variants of a generated kernel (``(label, TiledKernels)`` pairs) and cuBLAS in one run, as the
    ``scripts/experiment_*.py`` comparisons do: say each fast kernel's registers, time every variant at each square
    size, save the results document to ``path`` and say one line per record."""
    from types import SimpleNamespace

    from ..toolkit.tile_config import tile_fields

    steps = []
    for number, (label, tiled) in enumerate(variants, 1):
        compiled = tiled.kernels["fast"].compile(tiled.signature("fast"))
        say(f"{label:32s} registers {compiled.regs_per_thread}")
        steps.append(SimpleNamespace(name=label, number=number, launch=tiled.launch, config=tile_fields(tiled.config)))
    results = run_benchmark(steps, [(size,) * 3 for size in sizes], repeats=repeats, progress=lambda message: None)
    save(results, path)
    for r in results["records"]:
        say(f"{r['M']:5d} {r['step']:32s} {r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF "
            f"{r.get('pct_of_cublas') or 0:5.1f}% unwritten={r.get('unwritten')} err={r.get('sampled_rel_error_fp64')}")
    return results


def save(results: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    return path


def load(path: str | Path) -> dict:
    data = json.loads(Path(path).read_text())
    if data.get("schema") != SCHEMA or "records" not in data:
        raise ValueError(f"{path} is not a gemm-steps results file (schema {SCHEMA})")
    return data
