"""Lesson 15's helpers (TF32 on Hopper's ``wgmma``, step 15): why one biased accumulator is enough in TF32, the
registers the 256-row tile needs, the prediction from the experiment's swizzled TF32 build, the speed and accuracy
table and figure, and the verdict values against the TF32 target. Numbers, tables and figures only: the words are
the lesson's. Until the course benchmark has step 15, the timings come from the run that measured it
(:data:`STEP15_RUN`: step 12 and both cuBLAS in the same run).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gemm_steps.harness import results_files
from gemm_steps.harness.verify import U_TF32, tf32_tolerance, tolerance

from .display import MarkdownTable
from .targets import TARGET_TF32_TFLOPS, tf32_target_check
from .timings import NO_FLUSH_BUILD, STEP15_BUILD, common_sizes, has_step, record, tflops_table

#: The run that measured step 15 (as an experiment kernel) beside step 12 and both cuBLAS.
STEP15_RUN = results_files.EXPERIMENT_WARPGROUP_TF32_NVIDIA_H100
STEP = "warpgroup_tf32"
#: The rows of the speed table and figure: (record name, label, colour, style).
SPEED_ROWS = [("tensor_cores", "step 12, TF32 (mma.sync)", "tab:blue", "s-"),
              ("warpgroup_tf32", "step 15, TF32 (wgmma)", "tab:cyan", "*-"),
              ("cublas_tf32", "cuBLAS TF32", "tab:purple", "s--"),
              ("cublas", "cuBLAS SGEMM (FP32 units)", "tab:red", "o-")]
BASELINES = ("tensor_cores", "cublas_tf32", "cublas")


def shown_timings(results: dict | None, run: dict | None) -> tuple[dict | None, str | None]:
    """The timings to show and which they are: the course benchmark if it has step 15 ("benchmark"), else the run
    that measured step 15 ("step run"), else (None, None)."""
    if has_step(results, STEP):
        return results, "benchmark"
    return (run, "step run") if run is not None else (None, None)


# -- why no flush ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ErrorBudget:
    """TF32's input error against the biased accumulator's (:func:`error_budget`)."""
    u: float  # TF32's unit roundoff, 2^-11
    k: int  # the K of the tolerances
    tolerance: float  # verify's tolerance for float32 sums at K
    tf32_tolerance: float  # verify's tolerance for TF32 inputs at K
    size: int | None = None  # the experiment's largest K (M = N = K) of the no-flush build; None without the run
    accumulator: float | None = None  # that build's sampled error there: the accumulator's alone
    step12: float | None = None  # step 12's TF32 error there, same run (None if not measured)
    combined: float | None = None  # how much the accumulator's adds to step 12's if independent (hypot ÷ it − 1)


def error_budget(swapped_run: dict | None, k: int = 8192) -> ErrorBudget:
    """TF32's input error against what the biased accumulator adds over K: u = 2^-11, verify's two tolerances at
    ``k``; and, from the experiment, the 3xTF32 build that kept its whole sum in the wgmma accumulator (inputs
    float32-accurate, so its error is the accumulator's) beside step 12's TF32 error, same run, at its largest K."""
    out = ErrorBudget(U_TF32, k, tolerance(k), tf32_tolerance(k))
    if swapped_run is None:
        return out
    points = sorted((r["K"], r["sampled_rel_error_fp64"]) for r in swapped_run["records"]
                    if r["step"] == NO_FLUSH_BUILD and r["M"] == r["N"] == r["K"] and "sampled_rel_error_fp64" in r)
    if not points:
        return out
    big, accumulator = points[-1]
    found = record(swapped_run, "tensor_cores", (big, big, big))
    step12 = found["sampled_rel_error_fp64"] if found else None
    return replace(out, size=big, accumulator=accumulator, step12=step12,
                   combined=float(np.hypot(accumulator, step12) / step12 - 1) if found else None)


# -- registers ---------------------------------------------------------------------------------------------------------
def accumulator_sets(step) -> int:
    """How many accumulator arrays the step's kernel keeps (its ``zero_accumulators(ACCUMULATORS)`` calls)."""
    return step.kernel_source().count("zero_accumulators(ACCUMULATORS)")


@dataclass(frozen=True)
class Registers:
    """One step's accumulators (:func:`registers`)."""
    tile: tuple  # (BLOCK_M, BLOCK_N) of its GPU tiles (the search space's first)
    sets: int  # accumulator sets its kernel keeps
    per_set: int  # floats per set and thread
    floats: int  # accumulator floats per thread
    reuse: float  # multiply-adds per float of A and B staged


def registers(step14, step15) -> dict:
    """{step number: :class:`Registers`} per step (its GPU tiles, the search space's first): BLOCK_M × BLOCK_N, the
    accumulator sets its kernel keeps, floats per set and per thread, and multiply-adds per float of A and B
    staged."""
    out = {}
    for step in (step14, step15):
        config = step.module.SEARCH_SPACE[0]
        per_set, sets = step.module.Config.of(config).check().constants()["ACCUMULATORS"], accumulator_sets(step)
        out[step.number] = Registers((config.BLOCK_M, config.BLOCK_N), sets, per_set, sets * per_set,
                                     config.BLOCK_M * config.BLOCK_N / (config.BLOCK_M + config.BLOCK_N))
    return out


# -- prediction, speed, verdict ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PredictedAtSize:
    """The prediction at one square (:func:`predicted`)."""
    build: float  # the swizzled TF32 build's TFLOPS in the experiment
    build_ms: float  # its time there (ms)
    ratio: float  # its TFLOPS ÷ step 12's, same run
    tflops: float  # the ratio × step 12's TFLOPS in the timings shown: the prediction
    step12: float  # step 12's TFLOPS in the timings shown


def predicted(shown: dict, swizzled_run: dict) -> dict:
    """{size: :class:`PredictedAtSize`} per large square of ``shown``: the swizzled TF32 build's TFLOPS and time in
    the experiment, its ratio to step 12 there, and that ratio applied to step 12 in ``shown``."""
    out = {}
    for size in common_sizes(shown, BASELINES, squares=True)[-2:]:
        build, step12 = record(swizzled_run, STEP15_BUILD, size), record(swizzled_run, "tensor_cores", size)
        here = record(shown, "tensor_cores", size)
        if build and step12 and here:
            ratio = build["tflops"] / step12["tflops"]
            out[size] = PredictedAtSize(build["tflops"], build["median_ms"], ratio, ratio * here["tflops"],
                                        here["tflops"])
    return out


def speed_table(shown: dict) -> MarkdownTable:
    return tflops_table(shown, SPEED_ROWS, common_sizes(shown, BASELINES, squares=True), errors=True,
                        heading="TFLOPS, and the relative error of 512 sampled elements against float64:")


def speed_figure(shown: dict):
    """Left: TFLOPS against square size of :data:`SPEED_ROWS` with the TF32 target; right: their sampled errors."""
    from .plots import speed_error_figure  # here: importing the helper loads no pyplot

    env = shown["environment"]
    return speed_error_figure(
        shown, SPEED_ROWS, common_sizes(shown, BASELINES, squares=True),
        lambda ax, x: ax.axhline(TARGET_TF32_TFLOPS, color="tab:olive", lw=1.5, ls="--",
                                 label=f"the course's TF32 target: {TARGET_TF32_TFLOPS:.0f} TFLOPS"),
        f"TF32 on mma.sync (step 12) and on wgmma (step 15) against cuBLAS\n{env.get('gpu')}, {str(env.get('date'))[:10]}")


@dataclass(frozen=True)
class AtSize:
    """Step 15 at one square (:attr:`Verdict.sizes`)."""
    tflops: float  # its TFLOPS
    vs_step12: float  # × step 12
    of_cublas_tf32: float  # share of cuBLAS TF32
    cublas_tf32_over: float  # cuBLAS TF32 ÷ step 15
    predicted: float | None  # the prediction's TFLOPS (None without one)
    build_minus_step_ms: float | None  # the experiment build's time minus the step's (ms)
    error: float | None  # step 15's sampled error
    step12_error: float | None  # step 12's
    cublas_tf32_error: float | None  # cuBLAS TF32's


@dataclass(frozen=True)
class Verdict:
    """Step 15 against the TF32 target (:func:`verdict`)."""
    sizes: dict  # size → :class:`AtSize`, at the two largest squares
    met: bool  # the TF32 target at both
    step12_met: bool  # step 12 alone met it at both


def verdict(shown: dict, swizzled_run: dict | None) -> Verdict | None:
    """Step 15 at the two largest squares: TFLOPS, × step 12, share of cuBLAS TF32 and cuBLAS TF32 over it, the
    prediction and the experiment build's time minus the step's (ms); ``met`` (the TF32 target at both) and whether
    step 12 alone met it; None without step 15 at both."""
    check = tf32_target_check(shown, STEP)
    if check is None:
        return None
    p = predicted(shown, swizzled_run) if swizzled_run else {}
    rows = {}
    for size, tflops in check["sizes"].items():
        step12, tf32, r15 = (record(shown, name, size) for name in ("tensor_cores", "cublas_tf32", STEP))
        q = p.get(size)
        rows[size] = AtSize(tflops, tflops / step12["tflops"], tflops / tf32["tflops"], tf32["tflops"] / tflops,
                            q.tflops if q else None, q.build_ms - r15["median_ms"] if q else None,
                            r15.get("sampled_rel_error_fp64"), step12.get("sampled_rel_error_fp64"),
                            tf32.get("sampled_rel_error_fp64"))
    step12_met = all(record(shown, "tensor_cores", s)["tflops"] >= TARGET_TF32_TFLOPS for s in check["sizes"])
    return Verdict(rows, check["met"], step12_met)


@dataclass(frozen=True)
class TruncationCheck:
    """A truncated against A rounded, in NumPy (:func:`truncation_check`)."""
    truncated: float  # median relative error, A truncated to TF32 and B rounded
    rounded: float  # the same, both rounded
    k: int  # the product's K


def truncation_check(seed: int = 0, m: int = 64, k: int = 1024) -> TruncationCheck:
    """Relative error of a product whose A is truncated to TF32 and B rounded (what step 15's tensor core sees),
    against both rounded (cuBLAS TF32's inputs), in float64 sums so that only the inputs differ."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, m)).astype(np.float32)

    def truncated(x):
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)

    def rounded(x):
        bits = x.view(np.uint32).astype(np.uint64)
        return ((bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000).astype(np.uint32).view(np.float32)

    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))

    def err(x, y):
        return float(np.median(np.abs(x.astype(np.float64) @ y.astype(np.float64) - exact) / scale))

    return TruncationCheck(err(truncated(a), rounded(b)), err(rounded(a), rounded(b)), k)

