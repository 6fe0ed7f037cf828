"""Is every step right? Each step × shape against a float64 NumPy product, with a tolerance that a real bug fails.

How one check runs (:func:`check`):

1. fresh standard-normal float32 inputs (never zeros or ones: a kernel that drops a term must change the answer);
2. the step is called the way a user calls it, ``step(a, b, out=out)``, on device arrays, with ``out`` filled with
   NaN first. Device arrays, because with NumPy arrays the API allocates its own device buffer and copies it back
   over ``out`` — a NaN in a host ``out`` would prove nothing. On the device, an element the kernel never writes
   stays NaN and fails the check;
3. the result is compared with ``A @ B`` in float64 by a relative error (:func:`relative_error`) against
   :func:`tolerance` (:func:`tf32_tolerance` for a step with TF32 inputs: :func:`tolerance_for`).

The default shapes are small (the simulator runs every thread in Python) and chosen to reach every code path:

* 1×1×1, 17×33×9 and 100×1×37 are smaller than any tile and not multiples of one: every edge guard runs, with K
  ragged too;
* 129×260×32 is just past one block tile of every register-tiled step (128×128 for steps 6–8, 128×256 for the
  tuned steps 9–11). Those steps run a *fast* kernel on full tiles only (K a multiple of BLOCK_K, N of 4) and a
  guarded *edge* kernel on the rest (see :mod:`gemm_steps.tiling`); this shape makes both run in one product, over
  several k-tiles (2 to 4). Anything smaller than a tile would test the edge kernel alone.

On a GPU pass bigger ones too (``shapes=``, or ``gemm-steps verify --shapes 4096x4096x4096``).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Iterable

import numpy as np

from .step import Step

Shape = tuple[int, int, int]

#: Small, ragged, and covering both kernels of the tiled steps (see the module docstring for why each is here).
DEFAULT_SHAPES: tuple[Shape, ...] = ((1, 1, 1), (17, 33, 9), (100, 1, 37), (129, 260, 32))

EPS32 = float(np.finfo(np.float32).eps)  # 2**-23 ≈ 1.19e-7: the spacing of float32 numbers just above 1


def tolerance(k: int) -> float:
    """Largest relative error a correct float32 kernel may show for an inner dimension ``k``: ``4·eps32·√k``.

    Why √k: each of the k additions into a float32 accumulator rounds, with an error up to eps32/2 of the running
    sum. For random data those errors have random signs, so they add like a random walk: the total grows ~ √k, not
    k (k·eps32 is the worst case, reached only when every rounding goes the same way). Simulating sequential float32
    accumulation on standard-normal data gives errors of 0.15–0.25 × eps32·√k for K from 1 to 4096, and at most
    0.9 × eps32·√k over thousands of single-element products (measured with :func:`relative_error`); a kernel that
    splits the sum differently (several accumulators, a tree) does as well or better. So ``4·eps32·√k`` leaves a
    ≥ 4× margin on the worst draw seen — and no more: no floor, no extra slack.

    Why a bug fails it: dropping one k term of K changes C by ~1/√K relative (0.1 at K = 80, 0.03 at K = 1024), a
    wrong index or a missed tile by O(1), a single wrong element of a 1024×1024 result by ~1e-3 — each thousands of
    times the tolerance (1.5e-5 at K = 1024). An unwritten element is NaN and fails on its own.
    """
    return 4.0 * EPS32 * math.sqrt(max(k, 1))


#: Unit roundoff of TF32 (10 stored mantissa bits, round to nearest): an input rounded to TF32 moves by at most
#: this much, relatively. 2**-11 ≈ 4.9e-4.
U_TF32 = 2.0 ** -11


def tf32_tolerance(k: int) -> float:
    """Largest relative error a correct kernel with TF32 *inputs* and float32 sums may show: ``4·u_tf32 + tolerance(k)``.

    Why no √k on the first term: rounding each input to TF32 changes each product a·b by a relative error of about
    u_tf32 (at most 2·u_tf32), with a random sign. Summing K of them, the error grows like √K, and so does the
    size of C itself (a sum of K products of standard-normal numbers): their ratio does not depend on K. Simulated
    with NumPy (inputs rounded by ``round_to_tf32``, sums in float64) the error is 0.57–0.61 × u_tf32 for K from
    1 to 4096, three draws each (``tests/test_verify_tf32.py`` checks it); cuBLAS with
    ``CUBLAS_COMPUTE_32F_FAST_TF32`` measured 2.9e-4 ≈ 0.6 × u_tf32 on an H100. ``4·u_tf32`` (1.95e-3) is twice the
    worst case for one product and ≥ 6× what was measured; the float32 tolerance covers the sums.

    Why a bug still fails it: dropping one k term of K changes C by ~1/√K (0.03 at K = 1024, 0.008 at K = 16384),
    a wrong fragment or tile by O(1). Only the TF32 step uses it; 3xTF32 must meet :func:`tolerance`.
    """
    return 4.0 * U_TF32 + tolerance(k)


def tolerance_for(step, k: int) -> float:
    """The tolerance of a step at inner dimension ``k``: :func:`tf32_tolerance` for a step whose module says
    ``ARITHMETIC = "tf32"``, else :func:`tolerance`."""
    return tolerance_of(arithmetic_of(step), k)


def arithmetic_of(step) -> str:
    """How a step multiplies (``"fp32"``, ``"tf32"``, ``"3xtf32"``): its module's ``ARITHMETIC`` (a step, or a step
    module), else an ``arithmetic`` attribute (a kernel variant an experiment times), else ``"fp32"``."""
    module = getattr(step, "module", step)
    return getattr(module, "ARITHMETIC", None) or getattr(step, "arithmetic", "fp32")


def tolerance_of(arithmetic: str, k: int) -> float:
    """The tolerance for results computed in ``arithmetic`` (``"fp32"``, ``"tf32"``, ``"3xtf32"``; a benchmark
    record's ``arithmetic`` field): TF32 inputs get :func:`tf32_tolerance`, everything else :func:`tolerance`."""
    return tf32_tolerance(k) if arithmetic == "tf32" else tolerance(k)


def relative_error(c: np.ndarray, a: np.ndarray, b: np.ndarray, reference: np.ndarray | None = None) -> float:
    """``‖C − ref‖ / ‖ref‖`` with ``ref = A @ B`` in float64 — guarded against cancellation.

    Rounding errors are made on the size of the partial sums, not of the final result. When a result is much
    smaller than its terms (cancellation — likely only when C has a handful of elements), ``‖ref‖`` understates
    that size, so we divide by ``max(‖ref‖, ‖|A|·|B|‖ / √K)`` instead: for random data ``‖|A|·|B|‖ / √K`` is about
    0.64·‖ref‖, so for any result of more than a few elements this *is* ``‖C − ref‖ / ‖ref‖``. NaN if C has NaN.
    """
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64 if reference is None else reference
    k = max(a.shape[1], 1)
    scale = max(float(np.linalg.norm(ref)), float(np.linalg.norm(np.abs(a64) @ np.abs(b64))) / math.sqrt(k))
    diff = float(np.linalg.norm(c.astype(np.float64) - ref))
    return diff / scale if scale > 0 else diff


def check(step: Step, shape: Shape, rng: np.random.Generator) -> dict:
    """One step at one (M, N, K): a row of the verification table (see the module docstring for the method)."""
    from numba import cuda

    m, n, k = shape
    row = {"step": step.name, "number": step.number, "M": m, "N": n, "K": k, "tolerance": tolerance_for(step, k)}
    skipped = step.unavailable()
    if skipped:  # not run, not passed: said so (step 14 on a GPU without wgmma)
        row.update(passed=None, skipped=skipped, rel_error=math.nan, nan_count=None, seconds=0.0)
        return row
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    start = time.perf_counter()
    try:
        out = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        c = step(cuda.to_device(a), cuda.to_device(b), out=out).copy_to_host()
    except Exception as exc:  # a step that raises (compile error, launch failure) is a failure, reported as such
        row.update(passed=False, rel_error=math.nan, nan_count=None, seconds=time.perf_counter() - start,
                   error=f"{type(exc).__name__}: {exc}")
        return row
    row["seconds"] = time.perf_counter() - start
    row["nan_count"] = int(np.isnan(c).sum())
    row["rel_error"] = relative_error(c, a, b)
    row["passed"] = row["nan_count"] == 0 and row["rel_error"] <= row["tolerance"]  # NaN error compares False
    return row


def _as_step(step: Step | str | int) -> Step:
    from .step import get_step

    return step if isinstance(step, Step) else get_step(step)


def verify(
    steps: Iterable[Step | str | int] | None = None,
    shapes: Iterable[Shape] = DEFAULT_SHAPES,
    seed: int = 0,
    progress: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Check ``steps`` (all by default; names or numbers work) at every shape; one dict per step × shape.

    Each row: step, number, M, N, K, passed, rel_error, tolerance, nan_count (elements left unwritten), seconds
    (wall time of the call: transfers, and compilation on a step's first call, included — not a benchmark),
    and ``error`` when the step raised (then rel_error is NaN and nan_count None). A step this GPU cannot run
    (:meth:`Step.unavailable`) gets ``passed=None`` and ``skipped``, its reason. ``progress`` is called with
    each row as it is done.
    """
    from .step import all_steps

    chosen = all_steps() if steps is None else [_as_step(s) for s in steps]
    shapes = [tuple(int(x) for x in shape) for shape in shapes]
    rng = np.random.default_rng(seed)
    rows = []
    for step in chosen:
        for shape in shapes:
            row = check(step, shape, rng)
            rows.append(row)
            if progress:
                progress(row)
    return rows


def _first_line(text: str, width: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def format_table(rows: list[dict]) -> str:
    """An aligned plain-text table of :func:`verify` rows, one line per check, then a one-line verdict."""
    header = ("step", "M×N×K", "rel. error", "tolerance", "unwritten", "seconds", "result")
    lines = []
    for r in rows:
        if r.get("skipped"):
            result = f"skipped ({_first_line(r['skipped'])})"
        else:
            result = "ok" if r["passed"] else "FAIL" + (f" ({_first_line(r['error'])})" if "error" in r else "")
        unwritten = "-" if r["nan_count"] is None else str(r["nan_count"])
        lines.append((f"{r['number']:>2} {r['step']}", f"{r['M']}×{r['N']}×{r['K']}", f"{r['rel_error']:.2e}",
                      f"{r['tolerance']:.2e}", unwritten, f"{r['seconds']:.2f}", result))
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *lines)]
    right = {2, 3, 4, 5}  # numbers align right, names left

    def fmt(cells) -> str:
        padded = (c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        return "  ".join(padded).rstrip()

    failed = sum(r["passed"] is False for r in rows)
    skipped = sum(r["passed"] is None for r in rows)
    verdict = (f"{len(rows) - failed - skipped} of {len(rows) - skipped} checks passed"
               + (f", {failed} FAILED" if failed else "") + (f"; {skipped} skipped (see above)" if skipped else ""))
    return "\n".join([fmt(header), fmt("-" * w for w in widths), *map(fmt, lines), "", verdict]).rstrip() + "\n"
