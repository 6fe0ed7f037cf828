"""Timings for the lessons: measured now on a GPU, or read from the shipped results files, and said which.

* :func:`measure_or_load` — fresh timings on a GPU, the shipped benchmark on the simulator, and a sentence saying
  which of the two the reader is looking at.
* :func:`load_shipped` — a tuning sweep or an experiment, by file name; :func:`shipped_file` — any other shipped
  file; :func:`load_run` — a shipped run by its exact name, silently (:func:`producer_order_run`: the H200 run of
  steps 15–17), and :func:`caption`, the line under a table that says where its numbers come from.
* :func:`record` (the one record finder), :func:`has_step`, :func:`common_sizes` (the one list of sizes),
  :func:`headline_size`, :func:`size_label`, :func:`speedups_by_size`, :func:`time_ratios` — reading a results
  document.
* :func:`timing_table` — TFLOPS, % of cuBLAS and speedup over the previous step at one size, as a Markdown table;
  :func:`tflops_table` — TFLOPS by kernel and size (with a ratio, the SM clock or the sampled errors), one line a
  kernel.
* :func:`fp32_peak_tflops`, :func:`datasheet_bandwidth_tbs` — the GPU's limits, for the roofline.

Which file is read follows :mod:`gemm_steps.harness.results_files`. Results documents are what
:func:`gemm_steps.harness.bench.run_benchmark` returns. A lesson's results may be ``None`` (no GPU and nothing
shipped yet); the helpers then say so instead of failing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from gemm_steps.harness.step import get_step
from gemm_steps.harness import bench, results_files
from gemm_steps.harness.environment import short_label
from gemm_steps.toolkit.backend import SIMULATOR

from .display import MarkdownTable, StepLike, as_step, say, table

#: Said wherever a timing would go when there is neither a GPU nor a shipped results file.
NO_RESULTS = ("No GPU here and no shipped results yet in `results/`, so there are no timings to show. "
              "The cells that read timings print nothing until a results file is added.")

#: Peak DRAM bandwidth in TB/s from NVIDIA's datasheets (not measured here), matched against the GPU's name in order.
DATASHEET_BANDWIDTH_TBS = [
    ("H200", 4.8),
    ("H100 NVL", 3.9),
    ("H100 PCIe", 2.0),
    ("H100", 3.35),  # H100 SXM5 80GB HBM3
    ("A100-SXM4-80GB", 2.039),
    ("A100", 1.555),  # A100 40GB
]

Size = tuple[int, int, int]


def step_names(steps: Iterable[StepLike]) -> list[str]:
    return [as_step(s).name for s in steps]


def _ok(rec: dict) -> bool:
    return "error" not in rec and rec.get("median_ms") is not None


# -- where timings come from ---------------------------------------------------------------------------------------
def load_results(steps: Iterable[StepLike] = (), folder: Path | None = None) -> dict | None:
    """The newest shipped course benchmark with ``steps`` and cuBLAS (:func:`results_files.newest_benchmark`), with
    ``path`` added: the file it came from. ``None`` if there is none."""
    found = results_files.newest_benchmark(step_names(steps), folder)
    if found is None:
        return None
    path, data = found
    return {**data, "path": str(path)}


def _provenance(path: str | Path, environment: dict, what: str = "") -> str:
    return (f"the shipped run from `{results_files.display_path(path)}`{what}, measured on {environment.get('gpu')} "
            f"({environment.get('sm_count')} SMs) on {str(environment.get('date', '?'))[:10]}")


def measure_or_load(steps: Iterable[StepLike], sizes: Iterable[int | Size], *, measure: bool | None = None,
                    optional: Iterable[StepLike] = ()):
    """Timings of ``steps`` and cuBLAS, and a printed sentence saying where they come from.

    On a GPU (or with ``measure=True``) the steps are benchmarked now, at ``sizes`` (ints are square sizes). On
    the simulator the shipped benchmark is loaded instead, with all the sizes it has. The document returned has
    ``provenance`` (that sentence) added; it is ``None`` when there is no GPU and no shipped file yet.

    ``optional`` steps are measured too, but a shipped file need not have them: the newest file with ``steps`` is
    loaded, and its records of ``optional`` steps are kept if it has any (a lesson then shows "—" for the others).
    """
    names = step_names(steps)
    extra = [n for n in step_names(optional) if n not in names]
    if measure is None:
        measure = not SIMULATOR
    if measure:
        shapes = [_size(s) for s in sizes]
        results = bench.run_benchmark([get_step(n) for n in names + extra], shapes, progress=lambda msg: None)
        env = results["environment"]
        results["provenance"] = (f"Measured now on {env.get('gpu')} ({env.get('sm_count')} SMs), "
                                 f"{env.get('date', '')[:10]}: fresh timings from this machine, not the shipped file.")
    else:
        shipped = load_results(names)
        if shipped is None:
            say(NO_RESULTS)
            return None
        keep = set(names + extra) | set(bench.BASELINES)  # cuBLAS SGEMM, and cuBLAS TF32 where the run has it
        results = {**shipped, "records": [r for r in shipped["records"] if r["step"] in keep]}
        where = _provenance(shipped["path"], results["environment"])
        results["provenance"] = f"No GPU here: these timings are {where}."
    say(results["provenance"])
    return results


def load_shipped(pattern: str, what: str) -> dict | None:
    """The newest shipped tuning sweep or experiment whose file name matches ``pattern`` (a glob, looked for in
    ``results/`` and ``experiments/results/``), with a sentence saying so; ``what`` says what the file is.

    These are never re-measured by a lesson, not even on a GPU: the commands and scripts that wrote them do that.
    ``None`` (said) if nothing matches.
    """
    found = results_files.newest_matching(pattern)
    if found is None:
        say(f"There is no shipped file `{pattern}` ({what}) in `results/` or `experiments/results/`, so this part has "
            "nothing to show.")
        return None
    path, data = found
    data = {**data, "path": str(path)}
    data["provenance"] = f"These numbers are {_provenance(path, data['environment'], f' ({what})')}."
    say(data["provenance"])
    return data


def shipped_file(name: str) -> Path | None:
    """A shipped file that is not a results document (``compile-times-nvidia-h200.json``, an Nsight Compute text report),
    found by name in ``results/`` or ``experiments/results/``; if there is none, says so and returns ``None``."""
    path = results_files.find(name)
    if path is None:
        say(f"There is no shipped file `{name}` in `results/` or `experiments/results/`, so this part has nothing "
            "to show.")
    return path


def shown_path(path: str | Path) -> str:
    """A results file's path as a reader finds it (relative to the repository)."""
    return results_files.display_path(path)


def load_run(name: str) -> dict | None:
    """A shipped results document (a course benchmark, an experiment's run) by its exact file name — a constant of
    :mod:`~gemm_steps.harness.results_files` — with ``path`` added; None if it is not shipped. Silent, unlike
    :func:`load_shipped`: the lesson helpers that read it say what is missing."""
    path = results_files.find(name)
    return None if path is None else {**json.loads(path.read_text()), "path": str(path)}


def load_runs(names) -> list[dict]:
    """The shipped results documents of ``names`` (:func:`load_run` each), in order, the missing ones left out."""
    return [run for name in names if (run := load_run(name)) is not None]


def caption(run: dict) -> str:
    """Where a table's numbers come from: GPU, date, file."""
    env = run["environment"]
    return f"*{env.get('gpu')}, {str(env.get('date'))[:10]}, `{results_files.display_path(run['path'])}`.*"


#: Steps 15, 16 and 17 (and the late-producer experiment) beside cuBLAS SGEMM and TF32 in one H200 run
#: (experiments/producer_order_bench.py), the SM clock recorded per record: lessons 16, 17 and 25 and deep dive 16.
PRODUCER_ORDER_RUN = results_files.EXPERIMENT_PRODUCER_ORDER_NVIDIA_H200
#: The records of that run not named after their step: it measured step 17 while it was still the experiment's build
#: (``specialized_setmaxnreg``: the same kernel).
PRODUCER_ORDER_RECORDS = {"warp_specialized": "specialized_setmaxnreg"}


def producer_order_run() -> dict | None:
    """:data:`PRODUCER_ORDER_RUN`, its records found by their steps' names (:data:`PRODUCER_ORDER_RECORDS`, as
    ``record_names``: :func:`record` reads them); None if it is not shipped."""
    run = load_run(PRODUCER_ORDER_RUN)
    return None if run is None else {**run, "record_names": PRODUCER_ORDER_RECORDS}


# -- the wgmma experiment (experiments/wgmma_swapped.py), read by lessons 14 and 15 --------------------------------
#: Its runs: the first has every build, the second repeats some; and the run with A in the 128-byte swizzle layout,
#: every build with and without it.
WGMMA_SWAPPED_RUNS = (results_files.EXPERIMENT_WGMMA_SWAPPED_NVIDIA_H100,
                      results_files.EXPERIMENT_WGMMA_SWAPPED_REPEAT_NVIDIA_H100)
WGMMA_SWIZZLED_RUN = results_files.EXPERIMENT_WGMMA_SWAPPED_SWIZZLED_NVIDIA_H100
#: Its builds (records' names). Step 14 as the experiment built it (3xTF32, 128×128, big·big flushed per k-tile, A
#: swizzled); before the swizzle; without the flush.
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


# -- reading a results document ------------------------------------------------------------------------------------
def _size(size: int | Size) -> Size:
    return (size, size, size) if isinstance(size, int) else tuple(size)


def size_label(size: int | Size) -> str:
    m, n, k = _size(size)
    return f"{m}³" if m == n == k else f"{m}×{n}×{k}"


def _name(step: StepLike) -> str:
    """A record's name: a step's (given as an object or a number), or the string given (a step's, a baseline's,
    an experiment's build)."""
    return step if isinstance(step, str) else as_step(step).name


def record(results: dict, step: StepLike, size: int | Size) -> dict | None:
    """The successful record of ``step`` at ``size`` (an int for a square) in a results document; ``None`` if the run
    has none. ``step``: a step (object or number), or a record's name — a step's, a baseline's (``"cublas"``,
    ``"cublas_tf32"``) or an experiment's variant or build. A document whose records of a step carry another name
    maps the one to the other in ``record_names`` (:func:`producer_order_run`). The one record finder of the lesson
    helpers."""
    name = _name(step)
    name = results.get("record_names", {}).get(name, name)
    m, n, k = _size(size)
    for rec in results["records"]:
        if rec["step"] == name and (rec["M"], rec["N"], rec["K"]) == (m, n, k) and _ok(rec):
            return rec
    return None


def has_step(results: dict | None, step: StepLike) -> bool:
    """Whether a results document (or None) has a record of ``step`` without an error, at any size."""
    name = _name(step)
    return bool(results) and any(r["step"] == name and "error" not in r for r in results["records"])


def common_sizes(results: dict, steps: Iterable[StepLike] = (), *, squares: bool = False,
                 in_file_order: bool = False) -> list[Size]:
    """Every size at which all of ``steps`` (steps, or records' names as :func:`record` takes them) and cuBLAS ran,
    smallest first (by FLOPs), or in the order the file first has them (``in_file_order``); only the squares if
    ``squares``. The one list of sizes of the lesson helpers."""
    names = [_name(s) for s in steps] + ["cublas"]
    if in_file_order:
        found = dict.fromkeys((r["M"], r["N"], r["K"]) for r in results["records"] if _ok(r))
    else:
        found = {(r["M"], r["N"], r["K"]) for r in results["records"] if _ok(r)}
    common = [s for s in found if all(record(results, n, s) for n in names) and (not squares or s[0] == s[1] == s[2])]
    return common if in_file_order else sorted(common, key=lambda s: s[0] * s[1] * s[2])


def headline_size(results: dict, steps: Iterable[StepLike]) -> Size | None:
    """The largest size at which all of ``steps`` and cuBLAS ran (the one the lessons quote)."""
    common = common_sizes(results, steps)
    return common[-1] if common else None


def speedups_by_size(results: dict, before: StepLike, after: StepLike) -> str:
    """``"2.22× at 1024³, 4.32× at 4096³"``: how much faster ``after`` ran than ``before`` at every common size."""
    return ", ".join(f"{record(results, before, s)['median_ms'] / record(results, after, s)['median_ms']:.2f}× "
                     f"at {size_label(s)}" for s in common_sizes(results, [before, after]))


def time_ratios(doc: dict, base: str, names: Iterable[str]) -> dict[str, dict[int, float | None]]:
    """``{name: {M: base's time / name's}}`` at every square size ``base`` ran in one run (an experiment's variants,
    say): above 1 where ``name`` is faster; ``None`` where it did not run."""
    sizes = sorted({r["M"] for r in doc["records"] if r["step"] == base and r["M"] == r["N"] == r["K"] and _ok(r)})
    return {name: {m: record(doc, base, m)["median_ms"] / found["median_ms"] if (found := record(doc, name, m))
                   else None for m in sizes} for name in names}


def timing_table(results: dict | None, steps: Iterable[StepLike], size: int | Size | None = None) -> MarkdownTable:
    """TFLOPS, % of cuBLAS and speedup over the previous row, for ``steps`` and cuBLAS at one size.

    ``size`` defaults to :func:`headline_size`. Missing entries show as "—", never as a made-up number.
    """
    if results is None:
        return MarkdownTable(f"*{NO_RESULTS}*")
    names = step_names(steps)
    size = headline_size(results, names) if size is None else _size(size)
    if size is None:
        return MarkdownTable("*The results have no size at which all of these steps and cuBLAS ran.*")
    lines = [f"**{size_label(size)}**, {short_label(results['environment'])}", "",
             "| step | median ms | TFLOPS | % of cuBLAS | speedup vs previous |",
             "|:-----|----------:|-------:|------------:|--------------------:|"]
    previous = None
    for name in names + ["cublas"]:
        rec = record(results, name, size)
        label = "cuBLAS" if name == "cublas" else f"{get_step(name).number} {name}"
        if rec is None:
            lines.append(f"| {label} | — | — | — | — |")
            previous = None
            continue
        pct = f"{rec['pct_of_cublas']:.1f} %" if "pct_of_cublas" in rec else "—"
        speedup = f"{previous['median_ms'] / rec['median_ms']:.2f}×" if previous and name != "cublas" else ""
        lines.append(f"| {label} | {rec['median_ms']:.3f} | {rec['tflops']:.2f} | {pct} | {speedup} |")
        previous = rec
    return MarkdownTable("\n".join(lines))


def tflops_table(run: dict, rows, sizes, cell=None, *, against: str | None = None, ratio: str = "{:.2f}×",
                 clock: bool = False, errors: bool = False, more=None, heading: str | None = None,
                 with_caption: bool = True, align: str | None = None) -> MarkdownTable:
    """TFLOPS by kernel and size, as a Markdown table: one line per kernel of ``rows`` ((record name, label, …)), one
    column per size of ``sizes``; "—" where a kernel has no record at a size.

    A cell is the record's TFLOPS to one decimal; with ``against`` (a record's name) its ratio to that record of the
    same run and size after it, written with ``ratio`` (``"{:.2f}× SGEMM"``, ``"{:.0%} of TF32"``; "—" where that
    record is missing); with ``clock`` the TFLOPS in bold and the SM clock after it, median (slowest launch). Or
    ``cell(record, size)`` writes it (None: "—"). ``errors`` adds the sampled error at the two largest sizes;
    ``more(name)``, further columns of a kernel ({heading: text}). ``heading`` is a line above the table,
    ``with_caption`` puts :func:`caption` below it; ``align`` as :func:`~.display.table` takes it (default: the
    labels left, the rest right)."""
    big = sizes[-2:] if errors else []

    def standard(r, size):
        text = f"**{r['tflops']:.1f}**" if clock else f"{r['tflops']:.1f}"
        if against is not None:
            reference = record(run, against, size)
            if reference is None:
                return None
            text += f" ({ratio.format(r['tflops'] / reference['tflops'])})"
        if clock:
            text += f" · {r['sm_clock_mhz_median']:.0f} ({r['sm_clock_mhz_min']:.0f}) MHz"
        return text

    def speed(name, size):
        r = record(run, name, size)
        shown = None if r is None else (cell or standard)(r, size)
        return "—" if shown is None else shown

    def error(name, size):
        r = record(run, name, size)
        return "—" if r is None or "sampled_rel_error_fp64" not in r else f"{r['sampled_rel_error_fp64']:.1e}"

    lines = [{"kernel": label, **{size_label(s): speed(name, s) for s in sizes},
              **{f"error at {size_label(s)}": error(name, s) for s in big}, **(more(name) if more else {})}
             for name, label, *_ in rows]
    shown = table(lines, align=align or ("l" + "r" * (len(lines[0]) - 1) if lines else ""))
    return MarkdownTable((f"{heading}\n\n" if heading else "") + shown
                         + (f"\n\n{caption(run)}" if with_caption else ""))


def tflops_by_shape(run: dict) -> dict[str, dict[str, float]]:
    """{"MxNxK": {record: TFLOPS}} of a run (failed records left out): an experiment's records by shape."""
    out: dict = {}
    for r in run["records"]:
        if r.get("tflops"):
            out.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = r["tflops"]
    return out


def fp32_peak_tflops(results: dict) -> float | None:
    """The GPU's FP32 peak as estimated in the results (SMs × 128 FP32 lanes × 2 FLOP × max SM clock)."""
    return results["environment"].get("fp32_peak_tflops_estimate")


def datasheet_bandwidth_tbs(results: dict) -> float | None:
    """Peak DRAM bandwidth of the results' GPU from NVIDIA's datasheet (not a measurement); ``None`` if unknown."""
    gpu = str(results["environment"].get("gpu", ""))
    return next((tbs for key, tbs in DATASHEET_BANDWIDTH_TBS if key in gpu), None)
