"""Numba's CUDA simulator runs every GPU thread as a Python thread: fine for a 64×48 product, hours for a 4096³ one.

Before a step launches on the simulator, :func:`check` estimates how long the product will take there and refuses,
at once and with the numbers, a product over the limit (:data:`DEFAULT_LIMIT_S`, or ``$GEMM_STEPS_SIMULATOR_LIMIT``
in seconds; ``0`` means no limit) instead of running silently for an hour. Products allowed but slow say so first,
and then run in slices of rows (:func:`launch_with_progress`), with a line after each: how far, how long so far, how
long still to go.

An inf or NaN in the input makes the simulator's float32 arithmetic (NumPy scalars) warn once per line of generated
kernel code it passes through — a thousand lines for one small product — where a GPU computes the same values
silently. :func:`summarised_float_warnings` counts them instead and warns once per launch.

The cost model is fitted by ``scripts/fit_simulator_cost_model.py`` on a 2-core machine (the project's CI class)
with numba-cuda 0.30's simulator; the timings and the fit are in ``results/simulator-cost-model-<date>.json``
(:data:`FITTED_ON`). Fitted on 2026-11-28 (steps 1, 3, 5, 7, 9, 11, 12, 13, 14, 16 and 18, one call of ``step(a, b)``
after a warm-up, at one whole tile, at about 2 × 2 tiles and at 129×260×32, the largest shape ``verify`` checks:
0.1–10 s a call; other work shared the 2 cores, load average 1.2 before and 6.3 after): starting and finishing a
simulated thread costs ~0.4 ms, each multiply-add it does ~0.7 µs, each block barrier it meets ~60 µs, and a
tensor-core ``mma`` ~70 µs a thread. The least-squares fit (on the relative error) is scaled up until no timed call
took longer than its estimate: the model is a limit and a time budget (tests/test_properties.py), so it errs on the
slow side. With the constants below every timed call took 0.33–1.0× its estimate (median 0.59), where the model before
gave 0.12–0.58× (median 0.30; step 1 at 129×260×32: "about 29 s", 7.1 s). The model cannot tell the steps whose
loops are unrolled (7 and 9: 0.33–0.43×) from step 5, whose loops are not (0.86–0.88×).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import threading
import warnings
from collections import Counter
from . import results_files

#: The results file the coefficients below come from (``fitted``, rounded up to two digits; tests/test_first_hour.py
#: compares them).
FITTED_ON = results_files.SIMULATOR_COST_MODEL_2026_11_28
#: Starting and finishing one simulated thread (a Python thread).
SECONDS_PER_THREAD = 3.6e-4
#: One multiply-add of one thread.
SECONDS_PER_FMA = 6.9e-7
#: Each thread's arrival at a block barrier (two a k-tile in every step that stages tiles in shared memory): the
#: barrier wakes every thread of the block, one GIL hand-off each.
SECONDS_PER_BARRIER = 6.1e-5
#: A tensor-core ``mma`` there is a meeting of the warp's 32 Python threads: per thread and call, with the rest of a
#: tensor-core kernel's work.
SECONDS_PER_MMA = 6.9e-5
DEFAULT_LIMIT_S = 60.0
#: Above this estimate an allowed product says how long it will take before it starts.
ANNOUNCE_S = 10.0


class SimulatorTooSlow(RuntimeError):
    """A product that would take too long on the simulator (see the message for the numbers and what to do)."""


def tile_geometry(config: dict) -> tuple[int, int, int, int]:
    """(rows, cols) of C per thread block and (rows, cols) per thread, read from a step's config names."""
    square = config.get("TILE", config.get("BLOCK_SIZE", 1))
    return (int(config.get("BLOCK_M", square)), int(config.get("BLOCK_N", square)),
            int(config.get("THREAD_M", 1)), int(config.get("THREAD_N", 1)))


def estimated_seconds(config: dict, m: int, n: int, k: int, products: int = 1) -> float:
    """The simulator's time for one product with a step of this config: threads launched × per-thread work.
    ``products``: tensor-core products a multiply-add (3 for 3xTF32 on ``wgmma``, which the config does not say:
    :func:`products_of`)."""
    bm, bn, tm, tn = tile_geometry(config)
    threads = math.ceil(m / bm) * math.ceil(n / bn) * (bm * bn) // (tm * tn)
    if "MMA_TILES_M" in config:  # a tensor-core step: every thread takes part in each of its warp's mma calls
        calls = math.ceil(k / 8) * config["MMA_TILES_M"] * config["MMA_TILES_N"] * config.get("MMA_PRODUCTS", 1)
        return threads * (SECONDS_PER_THREAD + SECONDS_PER_MMA * calls)
    barriers = 2 * math.ceil(k / config["BLOCK_K"]) if "BLOCK_K" in config else 0
    return threads * (SECONDS_PER_THREAD + SECONDS_PER_FMA * k * tm * tn * products + SECONDS_PER_BARRIER * barriers)


def products_of(step) -> int:
    """The ``products`` of :func:`estimated_seconds` for a step: 3 for a 3xTF32 step whose config does not count
    them (steps 14 and 18 on ``wgmma``; step 13's ``MMA_PRODUCTS`` does), else 1."""
    return 3 if getattr(step, "arithmetic", "fp32") == "3xtf32" and "MMA_PRODUCTS" not in step.config else 1


def largest_square(config: dict, seconds: float, products: int = 1) -> int:
    """The largest n for which an n×n×n product fits in ``seconds`` on the simulator (at least 1)."""
    def fits(side: int) -> bool:
        return estimated_seconds(config, side, side, side, products) <= seconds

    low, high = 1, 2
    while fits(high) and high < 1 << 16:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def limit_seconds() -> float | None:
    """The limit in force: ``$GEMM_STEPS_SIMULATOR_LIMIT`` seconds (0: none), else :data:`DEFAULT_LIMIT_S`."""
    text = os.environ.get("GEMM_STEPS_SIMULATOR_LIMIT", "").strip()
    if not text:
        return DEFAULT_LIMIT_S
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"GEMM_STEPS_SIMULATOR_LIMIT={text!r}: give a number of seconds (0 for no limit)") from None
    return None if value <= 0 else value


def check(step, m: int, n: int, k: int) -> None:
    """Refuse (raise :class:`SimulatorTooSlow`) or announce a slow product on the simulator; nothing on a GPU."""
    estimate = estimated_seconds(step.config, m, n, k, products_of(step))
    limit = limit_seconds()
    if limit is not None and estimate > limit:
        side = largest_square(step.config, limit, products_of(step))
        raise SimulatorTooSlow(
            f"step {step.number} ({step.name}) on a {m}×{k} @ {k}×{n} product would take about {_duration(estimate)} "
            f"on Numba's CUDA simulator (there is no GPU here, and the simulator runs every GPU thread as a Python "
            f"thread), over the {_duration(limit)} limit. Products up to about {side}×{side}×{side} fit. For real "
            f"sizes run on a machine with an NVIDIA GPU; to wait anyway, set GEMM_STEPS_SIMULATOR_LIMIT to a number "
            f"of seconds (0 for no limit).")
    if estimate > ANNOUNCE_S:
        print(f"gemm-steps: step {step.number} ({step.name}) on the simulator, {m}×{n}×{k}: about "
              f"{_duration(estimate)} …", file=sys.stderr, flush=True)


#: Rows per slice are a multiple of this: every tile height of every step divides it, so full tiles stay full.
ROW_SLICE_MULTIPLE = 256
SLICES = 10


def launch_with_progress(step, a, b, c, stream) -> None:
    """``step.launch`` on validated device arrays; a product estimated over :data:`ANNOUNCE_S` runs in about
    :data:`SLICES` slices of rows (contiguous views, as the API's own row chunks), saying after each how far it got
    — except for steps 10 and 11, whose schedule covers the whole grid of tiles (one launch, announced above)."""
    import time

    m, k = a.shape
    n = b.shape[1]
    total = estimated_seconds(step.config, m, n, k, products_of(step))
    rows = max(ROW_SLICE_MULTIPLE, -(-m // SLICES) // ROW_SLICE_MULTIPLE * ROW_SLICE_MULTIPLE)
    # Steps 10 and 11 schedule the whole grid of tiles at once (the stream-K split depends on the tile count):
    # slices would each get a schedule of their own and never run the one the product gets. One launch, then.
    from ..toolkit.persistent_tiles import PersistentTiles

    whole_grid = isinstance(getattr(step, "tiled", None), PersistentTiles)
    with summarised_float_warnings():
        if total <= ANNOUNCE_S or rows >= m or whole_grid:
            step.launch(a, b, c, stream)
            return
        start = time.perf_counter()
        for first in range(0, m, rows):
            last = min(first + rows, m)
            step.launch(a[first:last], b, c[first:last], stream)
            spent = time.perf_counter() - start
            left = spent / last * (m - last)
            print(f"gemm-steps: rows {last}/{m} done, {_duration(spent)} so far, about {_duration(left)} to go",
                  file=sys.stderr, flush=True)


#: NumPy's floating-point warnings ("invalid value encountered in scalar multiply", "overflow encountered in …").
FLOAT_WARNING = re.compile(r"(invalid value|overflow|divide by zero|underflow) encountered")


@contextlib.contextmanager
def summarised_float_warnings():
    """Count NumPy's floating-point ``RuntimeWarning`` s raised while the block runs (by any simulated thread) and, if
    there were any, issue one, on one line: the first, where it arose, with how many there were of each kind. Other
    warnings pass as usual, and so do the warning filters (``ignore`` silences the summary, ``error`` raises it)."""
    counts: Counter = Counter()
    first: list = []  # (filename, lineno) of the first one: a line of the generated kernel source
    lock = threading.Lock()
    with warnings.catch_warnings():  # restores the filters and showwarning on exit
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, RuntimeWarning) and FLOAT_WARNING.search(str(message)):
                with lock:
                    counts[str(message)] += 1
                    first[:] = first or [filename, lineno]
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        warnings.filterwarnings("always", message=FLOAT_WARNING.pattern, category=RuntimeWarning)
        yield counts
    if counts:
        kinds = ", ".join(f"{count} × {message}" for message, count in counts.most_common())
        warnings.warn_explicit(
            f"{kinds} in the simulated kernel's float32 arithmetic (an inf or NaN in the input, or an overflow; a GPU "
            "computes the same values without a warning)", RuntimeWarning, *first)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
