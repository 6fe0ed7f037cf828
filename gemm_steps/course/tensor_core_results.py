"""What lessons 12–17 read about the tensor-core steps (12–17): the shipped files' names, their records, the
``mma.sync`` fragment layout, the TF32 ceiling, the Nsight Compute report of steps 12–13, the speed-and-error table and figure, and the checks against the
course's targets (:mod:`gemm_steps.course.targets`) — steps 16 and 17's from the H200 run of steps 15–17 that
lessons 16, 17 and 22 show. One home for what several lessons share; a lesson's own helpers import from here, never
from another lesson's.
"""

from __future__ import annotations

import json
import re

import numpy as np

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .profiles import base_units, kernel_sections, read_metrics, report_metrics
from .targets import (TARGET_3XTF32_ERROR_VS_SGEMM, TARGET_3XTF32_VS_SGEMM, TARGET_3XTF32_WIDE_ERROR_VS_SGEMM,
                      TARGET_HOPPER_TF32_PCT_OF_CUBLAS, TARGET_TF32_TFLOPS)
from .timings import fp32_peak_tflops, record, size_label

# -- the shipped files (results/ and experiments/results/) -------------------------------------------------------------
#: Steps 12–13 in three tile configurations beside both cuBLAS, their ragged shapes and the 512×512×K accuracy sweep.
TENSOR_CORES_RUN = results_files.EXPERIMENT_TENSOR_CORES_NVIDIA_H100
#: The first 3xTF32, which kept its running sum in the mma accumulator.
FIRST_TRY_RUN = results_files.EXPERIMENT_TENSOR_CORES_FIRST_TRY_NVIDIA_H100
#: The TF32 rounding variants of steps 12–13 (deep dive 12).
ROUNDING_RUN = results_files.EXPERIMENT_TF32_CONVERSION_NVIDIA_H100
#: Nsight Compute, one 4096³ launch of steps 12 and 13.
PROFILE_REPORT = results_files.NCU_TENSOR_CORES_NVIDIA_H100_TXT
#: The course benchmark made with that profile (same H100, same kernels, same day): what a cross-check of the
#: profile's counters against a timing must read — not the newest run, which may be another GPU or later kernels.
PROFILED_RUN = results_files.BENCH_NVIDIA_H100_80GB_HBM3_2026_11_25
#: The wgmma experiment (``experiments/wgmma_swapped.py``): the first run has every build, the second repeats some.
SWAPPED_RUNS = (results_files.EXPERIMENT_WGMMA_SWAPPED_NVIDIA_H100, results_files.EXPERIMENT_WGMMA_SWAPPED_REPEAT_NVIDIA_H100)
#: The same experiment's run with A in the 128-byte swizzle layout: every build with and without it, same run.
SWIZZLED_RUN = results_files.EXPERIMENT_WGMMA_SWAPPED_SWIZZLED_NVIDIA_H100
#: The 512×512×K accuracy sweep of the wgmma 3xTF32 builds beside step 13 and cuBLAS SGEMM.
WGMMA_ACCURACY_RUN = results_files.EXPERIMENT_WGMMA_3XTF32_ACCURACY_NVIDIA_H100
#: Steps 13 and 14 on wide-exponent inputs at 4096³ and 8192³ beside cuBLAS SGEMM.
WIDE_RUN = results_files.EXPERIMENT_THREE_TF32_WIDE_NVIDIA_H100
#: The run that measured step 15 (as an experiment kernel) beside step 12 and both cuBLAS.
STEP15_RUN = results_files.EXPERIMENT_WARPGROUP_TF32_NVIDIA_H100
#: Nsight Compute on the wgmma experiment's builds at 8192³: the TF32 256×128 build before the swizzle (its L2
#: requests by source, in lines prefixed with the build's name; and the plain report), and after it.
REQUESTS_PROFILE = results_files.NCU_L2_REQUESTS_BY_SOURCE_NVIDIA_H100_TXT
SWAPPED_PROFILE = results_files.NCU_WGMMA_SWAPPED_NVIDIA_H100_TXT
SWIZZLED_PROFILE = results_files.NCU_WGMMA_SWAPPED_SWIZZLED_NVIDIA_H100_TXT
#: Steps 13 and 14 before and after the FP32-contract fixes (issue 25), same GPU, same inputs, two passes in
#: alternating order (``experiments/before_after.py``): records ``"<step> (old)"`` and ``"<step> (new)"``.
CONTRACT_AB_RUN = results_files.EXPERIMENT_BEFORE_AFTER_FP32_CONTRACT_NVIDIA_H200
#: Steps 15, 16 and 17 (and the late-producer experiment) beside cuBLAS SGEMM and TF32 in one H200 run
#: (experiments/producer_order_bench.py), the SM clock recorded per record.
PRODUCER_ORDER_RUN = results_files.EXPERIMENT_PRODUCER_ORDER_NVIDIA_H200

# -- the experiment's builds -------------------------------------------------------------------------------------------
#: Step 14 as the experiment built it (3xTF32, 128×128, big·big flushed per k-tile, A swizzled); before the swizzle;
#: without the flush.
STEP14_BUILD = "wgmma swapped 3xTF32 128x128, flush big, swizzled"
FLUSH_BUILD = "wgmma swapped 3xTF32 128x128, flush big"
NO_FLUSH_BUILD = "wgmma swapped 3xTF32 128x128"
#: Step 15 as the experiment built it (TF32, 256×128, A swizzled); before the swizzle (waiting for every wgmma
#: before loading the next fragments, ``wait_group 0``); the same with ``wait_group 1``.
STEP15_BUILD = "wgmma swapped 256x128, serial, swizzled"
SERIAL_BUILD = "wgmma swapped 256x128, serial"
OVERLAPPED_BUILD = "wgmma swapped 256x128"
#: The first wgmma GEMM (``experiments/wgmma_gemm.py``: B transposed into K-major order on the way in).
TRANSPOSING_BUILD = "wgmma_tf32 128x256 (wgmma_gemm.py), pipelined"

# -- hardware facts (not results) ----------------------------------------------------------------------------------
#: Hopper's tensor cores do 1,024 dense TF32 multiply-adds per SM per clock, the FP32 units 128: 8×.
TENSOR_TF32_PER_FP32 = 8
#: FP32 multiply-adds per SM per clock (4 schedulers × 32 lanes), and one HMMA.1688's multiply-adds.
FP32_FMA_PER_SM = 128
HMMA_FMAS = 16 * 8 * 8
#: Tensor-core products per useful product: TF32 one, 3xTF32 three (small·big, big·small, big·big).
PRODUCTS = {"tensor_cores": 1, "three_tf32": 3, "warpgroup_mma": 3, "warpgroup_tf32": 1}

#: The successful record of a step name, ``cublas`` or ``cublas_tf32`` at a square size or (M, N, K); None if none.
rec = record


def sizes(results: dict, names=("stream_k", "tensor_cores", "three_tf32", "cublas")) -> list[tuple]:
    """Every size at which all of ``names`` ran, smallest first."""
    found = {(r["M"], r["N"], r["K"]) for r in results["records"]}
    return sorted((s for s in found if all(rec(results, n, s) for n in names)), key=lambda s: s[0] * s[1] * s[2])


def squares(results: dict, names=("cublas",)) -> list[tuple]:
    """The square sizes at which all of ``names`` ran, smallest first."""
    return [s for s in sizes(results, names) if s[0] == s[1] == s[2]]


def load_run(name: str) -> dict | None:
    """A shipped results file by name, with ``path`` added; None if missing."""
    path = results_files.find(name)
    return None if path is None else {**json.loads(path.read_text()), "path": str(path)}


#: The successful record called ``name`` (a step, a baseline or an experiment's build) at ``size`` in ``run``: the one
#: finder, :func:`timings.record`, under the name the tensor-core helpers use.
find = record


def has_step(results: dict | None, step: str) -> bool:
    return bool(results) and any(r["step"] == step and "error" not in r for r in results["records"])


def caption(run: dict) -> str:
    """Where a table's numbers come from: GPU, date, file."""
    env = run["environment"]
    return f"*{env.get('gpu')}, {str(env.get('date'))[:10]}, `{results_files.display_path(run['path'])}`.*"


def gflop(size: tuple) -> float:
    return 2 * size[0] * size[1] * size[2] / 1e9


def slope(ks, errors) -> float:
    """The exponent p of error ∝ K^p, fitted on log-log axes."""
    return float(np.polyfit(np.log(ks), np.log(errors), 1)[0])


# -- mma.sync m16n8k8's fragment layout (lesson 12 draws it, lesson 14's wgmma register operand reuses A's) ---------
# One lane's elements of one mma, as the kernels index them (steps 12 and 13, `group = lane // 4`, `pair = lane % 4`;
# register r of a lane's A fragment is step 13's `i * 16 + r % 2 * 8` row and `kk + r // 2 * 4` k, of C the
# epilogue's `r // 2 * 8` row and `pair * 2 + r % 2` column). tests/test_lesson_12.py checks these against the
# kernels' source and against the mma itself.
def a_element(lane: int, r: int) -> tuple[int, int]:
    """(row, k) of A (16×8) that lane ``lane`` passes as its register a_r."""
    group, pair = lane // 4, lane % 4
    return group + r % 2 * 8, pair + r // 2 * 4


def b_element(lane: int, r: int) -> tuple[int, int]:
    """(k, column) of B (8×8) that lane ``lane`` passes as its register b_r."""
    group, pair = lane // 4, lane % 4
    return pair + r * 4, group


def c_element(lane: int, r: int) -> tuple[int, int]:
    """(row, column) of C and D (16×8) that lane ``lane`` holds in its register c_r (d_r)."""
    group, pair = lane // 4, lane % 4
    return group + r // 2 * 8, 2 * pair + r % 2


LAYOUT = {"A": ((16, 8), 4, a_element), "B": ((8, 8), 2, b_element), "C": ((16, 8), 4, c_element)}


def owners(matrix: str) -> np.ndarray:
    """For every element of ``matrix`` ("A", "B" or "C"), the (lane, register) that holds it: an int array of shape
    (rows, cols, 2), -1 where no lane does (there is none: each element belongs to exactly one lane)."""
    shape, registers, element = LAYOUT[matrix]
    out = np.full(shape + (2,), -1, dtype=int)
    for lane in range(32):
        for r in range(registers):
            row, col = element(lane, r)
            assert out[row, col, 0] == -1, f"{matrix}[{row}][{col}] held twice"
            out[row, col] = lane, r
    return out


# -- the TF32 ceiling ------------------------------------------------------------------------------------------------
def tf32_peak_tflops(results: dict) -> float:
    """8 × the FP32 units' rate (SMs × 128 multiply-adds × 2 FLOP) at the run's *maximum* SM clock: the tensor
    cores' dense TF32 rate at that clock. NVIDIA's H100 SXM datasheet quotes less (≈ 495 TFLOPS dense), at its own,
    lower clock."""
    return TENSOR_TF32_PER_FP32 * fp32_peak_tflops(results)


def clocks_per_hmma() -> float:
    """Clocks a scheduler's share of the tensor pipe (a quarter of the SM's) needs for one HMMA.1688 at the dense
    TF32 rate."""
    return HMMA_FMAS / (TENSOR_TF32_PER_FP32 * FP32_FMA_PER_SM / 4)


def mma_sync_clocks(metrics: dict) -> float:
    """Clocks the tensor pipe of one scheduler was busy per ``mma.sync`` m16n8k8 TF32 (HMMA.1688), inferred from an
    Nsight Compute profile: the pipe's active cycles over the HMMAs each scheduler executed. An inference from the
    counters, not a documented rate."""
    schedulers = metrics["smsp__inst_executed.sum"] / metrics["Avg. Executed Instructions Per Scheduler"]
    hmma_per_scheduler = metrics["smsp__inst_executed_pipe_tensor_op_hmma.sum"] / schedulers
    busy = metrics["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] / 100
    return busy * metrics["SM Active Cycles"] / hmma_per_scheduler


def mma_sync_ceiling_tflops(results: dict, metrics: dict) -> float:
    """The TF32 ceiling with ``mma.sync``: :func:`tf32_peak_tflops` × the dense rate's clocks per HMMA over the
    profile's."""
    return tf32_peak_tflops(results) * clocks_per_hmma() / mma_sync_clocks(metrics)


# -- Nsight Compute (read by profiles.py, the one parser of its reports) ---------------------------------------------
def read_text(name: str) -> str | None:
    path = results_files.find(name)
    return path.read_text() if path else None


def profile_sections(text: str, header: re.Pattern) -> list[tuple[re.Match, dict]]:
    """The sections of an Nsight Compute text that ``header`` (a line pattern) starts: (the header's match, the
    section's metrics in base units: bytes, seconds, hertz)."""
    heads = list(header.finditer(text))
    return [(head, {name: base_units(value, unit) for name, (value, unit)
                    in read_metrics(text[head.end():nxt.start() if nxt else len(text)]).items()})
            for head, nxt in zip(heads, heads[1:] + [None])]


def tensor_core_profiles() -> dict | None:
    """The Nsight Compute report of one 4096³ launch of steps 12 and 13 (``PROFILE_REPORT``) as {step: {metric:
    value}}, or None if it is not shipped."""
    text = read_text(PROFILE_REPORT)
    if text is None:
        return None
    return {kernel.split("::")[0]: report_metrics(part) for kernel, part in kernel_sections(text)}


def limits(metrics: dict) -> dict:
    """One profile's numbers the lessons quote."""
    return {"tensor_pipe": metrics["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"],
            "issue_busy": metrics["Issue Slots Busy"], "no_eligible": metrics["No Eligible"],
            "cycles_per_issue": metrics["Warp Cycles Per Issued Instruction"],
            "per_hmma": metrics["smsp__inst_executed.sum"] / metrics["smsp__inst_executed_pipe_tensor_op_hmma.sum"],
            "registers": metrics["Registers Per Thread"], "warps_per_sm": metrics["Theoretical Active Warps per SM"],
            "warps_per_scheduler": metrics["Active Warps Per Scheduler"], "occupancy": metrics["Achieved Occupancy"],
            "bank_conflicts": metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"],
            "clocks_per_hmma": mma_sync_clocks(metrics)}


# -- speed and error, two panels -------------------------------------------------------------------------------------
def kernel_table(results: dict, rows, size_list: list, with_ratio: bool) -> MarkdownTable:
    """A Markdown table, one line per kernel of ``rows`` ((record name, label, …)): TFLOPS at each size (with ×
    cuBLAS SGEMM if ``with_ratio``), then the sampled error at the two largest sizes; "—" where one is missing."""
    big = size_list[-2:]

    def speed(r):
        return "—" if r is None else f"{r['tflops']:.1f}" + (f" ({r['pct_of_cublas'] / 100:.2f}×)" if with_ratio else "")

    def error(r):
        return "—" if r is None or "sampled_rel_error_fp64" not in r else f"{r['sampled_rel_error_fp64']:.1e}"

    return table([{"kernel": label, **{size_label(s): speed(rec(results, name, s)) for s in size_list},
                   **{f"error at {size_label(s)}": error(rec(results, name, s)) for s in big}}
                  for name, label, *_ in rows], align="l" + "r" * (len(size_list) + len(big)))


def clock_table(run: dict, rows, size_list, against: str, ratio: str, heading: str, finder=None) -> MarkdownTable:
    """The speed table of the Hopper lessons: TFLOPS, the ratio to the ``against`` record of the same run and size
    (shown with the format ``ratio``: ``"{:.2f}× SGEMM"``, ``"{:.0%} of TF32"``) and the SM clock — median (slowest
    launch) — of each of ``rows`` ((record name, label, …)) at each of ``size_list``; "—" where one is missing.
    ``heading`` names the ratio above the table; ``finder(run, name, size)`` finds a record (default :func:`find`)."""
    finder = finder or find

    def cell(name, size):
        r, reference = finder(run, name, size), finder(run, against, size)
        return "—" if r is None or reference is None else (
            f"**{r['tflops']:.1f}** ({ratio.format(r['tflops'] / reference['tflops'])}) · "
            f"{r['sm_clock_mhz_median']:.0f} ({r['sm_clock_mhz_min']:.0f}) MHz")

    shown = table([{"kernel": label, **{size_label(s): cell(name, s) for s in size_list}} for name, label, *_ in rows],
                  align="l" + "r" * len(size_list))
    return MarkdownTable(f"TFLOPS ({heading}, same run) · SM clock, median (slowest launch):\n\n" + shown
                         + "\n\n" + caption(run))


def speed_error_figure(results: dict, rows, size_list: list, draw_target, title: str):
    """Two panels over ``size_list``: TFLOPS (log) of each of ``rows`` ((record name, label, colour, style)) with
    ``draw_target(axes, x)`` drawing the target, and their sampled errors."""
    from matplotlib.figure import Figure

    x = np.arange(len(size_list))
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    speed, error = fig.subplots(1, 2)
    for name, label, colour, style in rows:
        got = [rec(results, name, s) or {} for s in size_list]
        if not any(got):
            label += " (not in this file)"
        speed.plot(x, [g.get("tflops", np.nan) for g in got], style, color=colour, label=label)
        error.plot(x, [g.get("sampled_rel_error_fp64", np.nan) for g in got], style, color=colour, label=label)
    draw_target(speed, x)
    for ax in (speed, error):
        ax.set_yscale("log")
        ax.set_xticks(x, [size_label(s) for s in size_list])
        ax.set_xlabel("size")
    speed.set(ylabel="TFLOPS (log scale)", title="Speed")
    error.set(ylabel="relative error (sampled, vs float64)", title="Accuracy")
    speed.legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=9)
    return fig


# -- what the FP32-contract fixes cost ----------------------------------------------------------------------------------
def contract_cost(run: dict, step: str) -> dict:
    """``step`` before and after the FP32-contract fixes in the A/B run (:data:`CONTRACT_AB_RUN`), per size where
    both ran: ``old`` and ``new`` TFLOPS (median over the passes) and ``cost``, the speed lost, 1 − new/old, as
    (smallest, largest) over the passes (each pass times old and new on the same inputs)."""
    out = {}
    found = sorted({(r["M"], r["N"], r["K"]) for r in run["records"] if r["step"] == f"{step} (new)"},
                   key=lambda s: s[0] * s[1] * s[2])
    for size in found:
        old, new = ([r["tflops"] for r in run["records"]
                     if r["step"] == f"{step} ({which})" and (r["M"], r["N"], r["K"]) == size] for which in ("old", "new"))
        if not old or len(old) != len(new):
            continue
        costs = [1 - n / o for o, n in zip(old, new)]  # record order: pass 1's pair, then pass 2's
        out[size] = {"old": float(np.median(old)), "new": float(np.median(new)), "cost": (min(costs), max(costs))}
    return out


# -- the targets -------------------------------------------------------------------------------------------------------
def target_check(results: dict, step: str = "warpgroup_mma") -> dict | None:
    """``step`` against the 3xTF32 target at the two largest sizes where step 13 and cuBLAS SGEMM ran: {"sizes":
    {size: (× SGEMM, error, SGEMM's error)}, "speed_met": ≥ the target at both, "met": that and an error no larger
    than SGEMM's at both}; None if the step is missing at either. (The accuracy rule over every shipped measurement,
    sweeps included, is :func:`accuracy_check`.)"""
    out = {}
    for size in sizes(results, ("three_tf32", "cublas"))[-2:]:
        r, sgemm = rec(results, step, size), rec(results, "cublas", size)
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
    for size in squares(results, ("tensor_cores", "cublas_tf32", "cublas"))[-2:]:
        r = rec(results, step, size)
        if r is None:
            return None
        out[size] = r["tflops"]
    return {"sizes": out, "met": all(t >= TARGET_TF32_TFLOPS for t in out.values())} if out else None


# -- steps 16 and 17 against the Hopper target (the H200 run of steps 15–17, lessons 16, 17 and 22) --------------------
#: The record name of each kernel in :data:`PRODUCER_ORDER_RUN`. The run measured step 17 while it was still the
#: experiment's build (``specialized_setmaxnreg``: the same kernel, experiments/producer_order_bench.py).
RECORDS = {"cublas": "cublas", "cublas_tf32": "cublas_tf32", "warpgroup_tf32": "warpgroup_tf32",
           "tma_pipeline": "tma_pipeline", "late_producer": "late_producer",
           "warp_specialized": "specialized_setmaxnreg"}
#: The step before each step.
PREVIOUS = {"tma_pipeline": "warpgroup_tf32", "warp_specialized": "tma_pipeline"}
#: The two squares the Hopper steps' verdicts read.
BIG = ((4096, 4096, 4096), (8192, 8192, 8192))


def producer_order_run() -> dict | None:
    return load_run(PRODUCER_ORDER_RUN)


def measured(run: dict, kernel: str, size: tuple) -> dict | None:
    """The record of ``kernel`` (a key of :data:`RECORDS`) at ``size`` in :data:`PRODUCER_ORDER_RUN`."""
    return find(run, RECORDS.get(kernel, kernel), size)


def verdict(run: dict, step: str, records: dict = RECORDS) -> dict | None:
    """``step`` against the course's target (:data:`TARGET_HOPPER_TF32_PCT_OF_CUBLAS` % of cuBLAS TF32 at 4096³ and
    8192³, same run): per size its TFLOPS, share, × the previous step, the SM clocks of it and cuBLAS TF32 and the
    share per clock (``pct_per_clock``: the share if both had run at the same clock);
    ``met`` (at both), ``at_least_previous_at_8192`` (the issue's rule: each step at least as fast as the one
    before it at 8192³); None without the step at both sizes. ``records``: the record name of each kernel in ``run``
    (:data:`RECORDS` for :data:`PRODUCER_ORDER_RUN`; ``{}`` for a course benchmark, whose records are the steps'
    names)."""
    out = {}
    for size in BIG:
        r, tf32, before = (find(run, records.get(k, k), size) for k in (step, "cublas_tf32", PREVIOUS[step]))
        if r is None or tf32 is None:
            return None
        out[size] = {"tflops": r["tflops"], "pct_of_cublas_tf32": 100 * r["tflops"] / tf32["tflops"],
                     "cublas_tf32": tf32["tflops"], "vs_previous": r["tflops"] / before["tflops"] if before else None,
                     "mhz": r.get("sm_clock_mhz_median"), "cublas_tf32_mhz": tf32.get("sm_clock_mhz_median")}
        if out[size]["mhz"] and out[size]["cublas_tf32_mhz"]:  # the share per clock: TFLOPS / MHz against cuBLAS's
            out[size]["pct_per_clock"] = (out[size]["pct_of_cublas_tf32"] * out[size]["cublas_tf32_mhz"]
                                          / out[size]["mhz"])
    last = out[BIG[-1]]["vs_previous"]
    return {"sizes": out, "target_pct": TARGET_HOPPER_TF32_PCT_OF_CUBLAS,
            "met": all(q["pct_of_cublas_tf32"] >= TARGET_HOPPER_TF32_PCT_OF_CUBLAS for q in out.values()),
            "at_least_previous_at_8192": last is not None and last >= 1.0}


def wide(inputs: str) -> bool:
    return inputs.startswith("wide")


def accuracy_check(ratios: list[tuple[str, str, float]]) -> dict:
    """The accuracy half of the 3xTF32 target, one rule for every lesson: on every measured shape, the error at most
    ``TARGET_3XTF32_ERROR_VS_SGEMM`` × cuBLAS SGEMM's on standard-normal inputs and
    ``TARGET_3XTF32_WIDE_ERROR_VS_SGEMM`` × on wide-exponent ones. ``ratios``: (inputs, shape, error / SGEMM's).
    Returns the worst ratio per input kind, the shapes that miss, and ``met``."""
    worst, misses = {}, []
    for inputs, shape, ratio in ratios:
        kind = "wide exponent" if wide(inputs) else "standard normal"
        worst[kind] = max(worst.get(kind, 0.0), ratio)
        if ratio > (TARGET_3XTF32_WIDE_ERROR_VS_SGEMM if wide(inputs) else TARGET_3XTF32_ERROR_VS_SGEMM):
            misses.append((kind, shape, ratio))
    return {"worst": worst, "misses": misses, "met": not misses}


def square_ratios(results: dict, step: str, count: int = 2) -> list[tuple[str, str, float]]:
    """(inputs, shape, error / SGEMM's) of ``step`` at the ``count`` largest squares of a course benchmark."""
    out = []
    for s in squares(results, (step, "cublas"))[-count:]:
        r, sgemm = rec(results, step, s), rec(results, "cublas", s)
        out.append(("standard normal", size_label(s), r["sampled_rel_error_fp64"] / sgemm["sampled_rel_error_fp64"]))
    return out


def sweep_ratios(rows: list[dict], column: str) -> list[tuple[str, str, float]]:
    """(inputs, shape, error / SGEMM's) of ``column`` in a 512×512×K accuracy sweep."""
    return [(r["inputs"], f"512×512×{r['K']}", r[column] / r["cublas"]) for r in rows]


def wide_ratios(run: dict, step: str) -> list[tuple[str, str, float]]:
    """(inputs, shape, error / SGEMM's) of ``step`` in the wide-exponent run (``WIDE_RUN``), both input kinds."""
    return [(r["inputs"], size_label(r["size"]), r[step]["error"] / r["cublas"]["error"]) for r in run["rows"]]
