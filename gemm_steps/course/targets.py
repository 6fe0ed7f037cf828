"""The course's targets, in one place: goals we set ourselves, not results — and the checks of a run against them.

Lessons and the README compare measurements against these; nothing else in the package types a target in. The
checks the lessons share: :func:`target_check` (3xTF32 speed and accuracy at the two largest sizes),
:func:`tf32_target_check` (TF32 at the two largest squares), :func:`hopper_tf32_verdict` (the Hopper chapter's share
of cuBLAS TF32 at :data:`HOPPER_SIZES`), and :func:`accuracy_check`, the 3xTF32 accuracy rule over every shipped
measurement (with :func:`square_ratios`, :func:`sweep_ratios`, :func:`wide_ratios` to gather them, and
:func:`slope`, how an error grows with K).
"""

from __future__ import annotations

import numpy as np

from .timings import common_sizes, record, size_label

#: Steps 1–11 (FP32 on the SIMT units): % of cuBLAS SGEMM at the largest squares of the benchmark.
TARGET_SGEMM_PCT = 95.0

#: Step 12 (TF32 on ``mma.sync``): TFLOPS at 4096³–8192³ on an H100.
TARGET_TF32_TFLOPS = 150.0

#: Step 13 (3xTF32 on ``mma.sync``): × cuBLAS SGEMM at 4096³–8192³, at float32 accuracy.
TARGET_3XTF32_VS_SGEMM = 1.25

#: Steps 13–14's "float32 accuracy", one rule for both lessons: on every measured shape, the error at most this ×
#: cuBLAS SGEMM's on standard-normal inputs, and at most the second × on wide-exponent inputs (entries × 2^u).
TARGET_3XTF32_ERROR_VS_SGEMM = 1.0
TARGET_3XTF32_WIDE_ERROR_VS_SGEMM = 2.0

#: The Hopper chapter (issue 24), TF32 on the final design: % of cuBLAS TF32 at 4096³ and 8192³ (stretch: 100).
TARGET_HOPPER_TF32_PCT_OF_CUBLAS = 90.0

#: The Hopper chapter, 3xTF32 on the final design: × cuBLAS SGEMM at 4096³ and 8192³ (stretch: 2.5).
TARGET_HOPPER_3XTF32_VS_SGEMM = 2.2

#: Issue 36 (the reference steps), 3xTF32 on the final design: × cuBLAS SGEMM at 4096³ and 8192³ — the stretch above
#: made the target.
TARGET_FINAL_3XTF32_VS_SGEMM = 2.5

#: The two squares the Hopper chapter's targets are read at.
HOPPER_SIZES = ((4096, 4096, 4096), (8192, 8192, 8192))

__all__ = ["TARGET_SGEMM_PCT", "TARGET_TF32_TFLOPS", "TARGET_3XTF32_VS_SGEMM", "TARGET_3XTF32_ERROR_VS_SGEMM",
           "TARGET_3XTF32_WIDE_ERROR_VS_SGEMM", "TARGET_HOPPER_TF32_PCT_OF_CUBLAS",
           "TARGET_HOPPER_3XTF32_VS_SGEMM", "TARGET_FINAL_3XTF32_VS_SGEMM", "HOPPER_SIZES", "target_check",
           "tf32_target_check",
           "hopper_tf32_verdict", "accuracy_check", "square_ratios", "sweep_ratios", "wide_ratios", "slope"]


# -- the tensor-core steps on mma.sync and wgmma (lessons 12–15, 25) -------------------------------------------------
def target_check(results: dict, step: str = "warpgroup_mma") -> dict | None:
    """``step`` against the 3xTF32 target at the two largest sizes where step 13 and cuBLAS SGEMM ran: {"sizes":
    {size: (× SGEMM, error, SGEMM's error)}, "speed_met": ≥ the target at both, "met": that and an error no larger
    than SGEMM's at both}; None if the step is missing at either. (The accuracy rule over every shipped measurement,
    sweeps included, is :func:`accuracy_check`.)"""
    out = {}
    for size in common_sizes(results, ["three_tf32"])[-2:]:
        r, sgemm = record(results, step, size), record(results, "cublas", size)
        if r is None or "sampled_rel_error_fp64" not in r:
            return None
        out[size] = (r["pct_of_cublas"] / 100, r["sampled_rel_error_fp64"], sgemm["sampled_rel_error_fp64"])
    if not out:
        return None
    speed = all(ratio >= TARGET_3XTF32_VS_SGEMM for ratio, _, _ in out.values())
    return {"sizes": out, "speed_met": speed, "met": speed and all(err <= sgemm for _, err, sgemm in out.values())}


def tf32_target_check(results: dict, step: str = "warpgroup_tf32") -> dict | None:
    """``step`` at the two largest squares where step 12 and both cuBLAS ran, against the TF32 target: {"sizes":
    {size: TFLOPS}, "met": ≥ the target at both}; None if it is missing at either."""
    out = {}
    for size in common_sizes(results, ["tensor_cores", "cublas_tf32"], squares=True)[-2:]:
        r = record(results, step, size)
        if r is None:
            return None
        out[size] = r["tflops"]
    return {"sizes": out, "met": all(t >= TARGET_TF32_TFLOPS for t in out.values())} if out else None


# -- steps 16 and 17 against the Hopper target (lessons 16, 17 and 25) ----------------------------------------------
#: The step before each step the verdict reads.
_PREVIOUS = {"tma_pipeline": "warpgroup_tf32", "warp_specialized": "tma_pipeline"}


def hopper_tf32_verdict(run: dict, step: str) -> dict | None:
    """``step`` against the course's target (:data:`TARGET_HOPPER_TF32_PCT_OF_CUBLAS` % of cuBLAS TF32 at 4096³ and
    8192³, same run): per size its TFLOPS, share, × the previous step, the SM clocks of it and cuBLAS TF32 and the
    share per clock (``pct_per_clock``: the share if both had run at the same clock);
    ``met`` (at both), ``at_least_previous_at_8192`` (the issue's rule: each step at least as fast as the one
    before it at 8192³); None without the step at both sizes. ``run``: a course benchmark, or the H200 run of steps
    15–17 (:func:`~.timings.producer_order_run`)."""
    out = {}
    for size in HOPPER_SIZES:
        r, tf32, before = (record(run, k, size) for k in (step, "cublas_tf32", _PREVIOUS[step]))
        if r is None or tf32 is None:
            return None
        out[size] = {"tflops": r["tflops"], "pct_of_cublas_tf32": 100 * r["tflops"] / tf32["tflops"],
                     "cublas_tf32": tf32["tflops"], "vs_previous": r["tflops"] / before["tflops"] if before else None,
                     "mhz": r.get("sm_clock_mhz_median"), "cublas_tf32_mhz": tf32.get("sm_clock_mhz_median")}
        if out[size]["mhz"] and out[size]["cublas_tf32_mhz"]:  # the share per clock: TFLOPS / MHz against cuBLAS's
            out[size]["pct_per_clock"] = (out[size]["pct_of_cublas_tf32"] * out[size]["cublas_tf32_mhz"]
                                          / out[size]["mhz"])
    last = out[HOPPER_SIZES[-1]]["vs_previous"]
    return {"sizes": out, "target_pct": TARGET_HOPPER_TF32_PCT_OF_CUBLAS,
            "met": all(q["pct_of_cublas_tf32"] >= TARGET_HOPPER_TF32_PCT_OF_CUBLAS for q in out.values()),
            "at_least_previous_at_8192": last is not None and last >= 1.0}


# -- the 3xTF32 accuracy rule (lessons 13 and 14) ---------------------------------------------------------------------
def _wide(inputs: str) -> bool:
    return inputs.startswith("wide")


def accuracy_check(ratios: list[tuple[str, str, float]]) -> dict:
    """The accuracy half of the 3xTF32 target, one rule for every lesson: on every measured shape, the error at most
    ``TARGET_3XTF32_ERROR_VS_SGEMM`` × cuBLAS SGEMM's on standard-normal inputs and
    ``TARGET_3XTF32_WIDE_ERROR_VS_SGEMM`` × on wide-exponent ones. ``ratios``: (inputs, shape, error / SGEMM's).
    Returns the worst ratio per input kind, the shapes that miss, and ``met``."""
    worst, misses = {}, []
    for inputs, shape, ratio in ratios:
        kind = "wide exponent" if _wide(inputs) else "standard normal"
        worst[kind] = max(worst.get(kind, 0.0), ratio)
        if ratio > (TARGET_3XTF32_WIDE_ERROR_VS_SGEMM if _wide(inputs) else TARGET_3XTF32_ERROR_VS_SGEMM):
            misses.append((kind, shape, ratio))
    return {"worst": worst, "misses": misses, "met": not misses}


def square_ratios(results: dict, step: str, count: int = 2) -> list[tuple[str, str, float]]:
    """(inputs, shape, error / SGEMM's) of ``step`` at the ``count`` largest squares of a course benchmark."""
    out = []
    for s in common_sizes(results, [step], squares=True)[-count:]:
        r, sgemm = record(results, step, s), record(results, "cublas", s)
        out.append(("standard normal", size_label(s), r["sampled_rel_error_fp64"] / sgemm["sampled_rel_error_fp64"]))
    return out


def sweep_ratios(rows: list[dict], column: str) -> list[tuple[str, str, float]]:
    """(inputs, shape, error / SGEMM's) of ``column`` in a 512×512×K accuracy sweep."""
    return [(r["inputs"], f"512×512×{r['K']}", r[column] / r["cublas"]) for r in rows]


def wide_ratios(run: dict, step: str) -> list[tuple[str, str, float]]:
    """(inputs, shape, error / SGEMM's) of ``step`` in a wide-exponent run (lesson 14's ``WIDE_RUN``), both input
    kinds."""
    return [(r["inputs"], size_label(r["size"]), r[step]["error"] / r["cublas"]["error"]) for r in run["rows"]]


def slope(ks, errors) -> float:
    """The exponent p of error ∝ K^p, fitted on log-log axes."""
    return float(np.polyfit(np.log(ks), np.log(errors), 1)[0])
