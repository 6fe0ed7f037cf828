"""What a call of `gemm_steps.matmul` costs on the host, beyond the kernel (issue: fast at every shape, item 5).

On device arrays, for a few small products (where the host, not the GPU, sets the pace), the host time per call of:

* ``matmul``       — ``gemm_steps.matmul(a, b, out=c)``: validation, step choice, launch;
* ``step_launch``  — the step's own ``launch(a, b, c, 0)``: no validation (the flat views, sizes, grid, launch);
* ``configured``   — the compiled kernel launched by Numba's dispatcher, configured once: ``kernel[grid, block](...)``;
* ``empty_kernel`` — an empty Numba kernel with the same argument list: Numba's own floor for a launch;
* ``direct_empty_kernel`` — that empty kernel through ``cuda.core.launch`` with a prepared argument list
  (``toolkit.kernel_tools.DirectLaunch``, as the launch plans do): the floor of a launch from Python.

Each is the median over ROUNDS rounds of CALLS back-to-back calls (host wall time / CALLS, synchronizing once per
round), after a warm-up. A cProfile of ``matmul`` calls goes to OUT_DIR/call-overhead-profile.txt.
Usage, on a GPU from the repository root: python -m experiments.call_overhead OUT.json
"""

from __future__ import annotations

import cProfile
import ctypes
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import gemm_steps
from gemm_steps.harness.environment import environment
from gemm_steps.toolkit.kernel_tools import DirectLaunch, device_pointer, flat_array_arguments
from gemm_steps.toolkit.tiles import SIGNATURE
from numba import cuda

CALLS, ROUNDS = 500, 7
SHAPES = [(64, 64, 64), (512, 512, 512), (640, 640, 640)]


@cuda.jit(SIGNATURE)
def empty_kernel(a, b, c, m, n, k, full_rows, full_cols):
    pass


def per_call_us(call) -> float:
    for _ in range(20):
        call()
    cuda.synchronize()
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        cuda.synchronize()
        rounds.append((time.perf_counter() - start) / CALLS * 1e6)
    return statistics.median(rounds)


def main() -> None:
    out_path = Path(sys.argv[1])
    step = gemm_steps.fastest_step()
    rng = np.random.default_rng(0)
    rows = []
    for m, n, k in SHAPES:
        a = cuda.to_device(rng.standard_normal((m, k), dtype=np.float32))
        b = cuda.to_device(rng.standard_normal((k, n), dtype=np.float32))
        c = cuda.device_array((m, n), dtype=np.float32)
        gemm_steps.matmul(a, b, out=c)
        error = float(np.abs(c.copy_to_host() - a.copy_to_host().astype(np.float64) @ b.copy_to_host()).max())
        flat = (a.reshape(m * k), b.reshape(k * n), c.reshape(m * n))
        sizes = tuple(np.uint32(x) for x in (m, n, k, m // 128, n // 128))
        direct = DirectLaunch(empty_kernel, SIGNATURE, 1, 32, 0, 0)
        direct_arguments = (flat_array_arguments(device_pointer(a), m * k) + flat_array_arguments(device_pointer(b), k * n)
                            + flat_array_arguments(device_pointer(c), m * n) + tuple(ctypes.c_uint32(int(x)) for x in sizes))
        row = {"shape": [m, n, k], "step": step.name, "max_abs_err": error,
               "direct_empty_kernel_us": per_call_us(lambda: direct(*direct_arguments)),
               "matmul_us": per_call_us(lambda: gemm_steps.matmul(a, b, out=c)),
               "step_launch_us": per_call_us(lambda: step.launch(a, b, c, 0)),
               "empty_kernel_us": per_call_us(lambda: empty_kernel[1, 32, 0](*flat, *sizes))}
        tiled = getattr(step.module, "TILED", None)
        if tiled is not None:  # the data-parallel kernel the shape runs (full tiles only if any), configured once
            kernel = tiled.data_parallel_fallback if getattr(tiled, "data_parallel_fallback", None) else tiled
            configured = kernel.kernel("edge")[(-(-n // kernel.config.BLOCK_N), -(-m // kernel.config.BLOCK_M)),
                                               kernel.config.THREADS, 0]
            edge_sizes = (np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(0), np.uint32(0))
            row["configured_edge_kernel_us"] = per_call_us(lambda: configured(*flat, *edge_sizes))
        rows.append(row)
        print(json.dumps(row), flush=True)
    a, b = (cuda.to_device(rng.standard_normal((64, 64), dtype=np.float32)) for _ in range(2))
    c = cuda.device_array((64, 64), dtype=np.float32)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        gemm_steps.matmul(a, b, out=c)
    cuda.synchronize()
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(30)
    (out_path.parent / "call-overhead-profile.txt").write_text(text.getvalue())
    out_path.write_text(json.dumps({"environment": environment(), "calls_per_round": CALLS, "rounds": ROUNDS,
                                    "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
