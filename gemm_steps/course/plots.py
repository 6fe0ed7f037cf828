"""Plots of a benchmark results document (what :func:`gemm_steps.harness.bench.run_benchmark` returns, or
``bench.load``).

* :func:`plot_tflops_vs_size` — TFLOPS against matrix size, one line per step, cuBLAS dashed.
* :func:`plot_step_speedups` — at one size, each step's TFLOPS beside both cuBLAS, each bar labelled with its % of
  the cuBLAS of its arithmetic and its speedup over the previous step of that arithmetic.
* :func:`plot_speedup_curves` — the same two numbers across sizes.
* :func:`plot_shape_classes` — % of cuBLAS per shape of the shape suite (``gemm-steps bench --suite shapes``),
  grouped by class.
* :func:`plot_results` — all of them that the results allow, written as PNGs.
* :func:`speed_error_figure` — chosen kernels' TFLOPS and sampled errors against size, two panels, with a target
  drawn (lessons 14 and 15), or the TFLOPS panel alone (lesson 12).
* :func:`ring_stage_boxes`, :func:`k_tile_grid` — a Hopper step's ring: its stages during one turn, and its k-tiles
  by stage (lessons 16, 18 and 19); :func:`span_bar`, a timeline's bar (lessons 16, 17 and 19).

Every title carries :func:`gemm_steps.harness.environment.short_label` (GPU, SMs, driver, CUDA and cuBLAS versions,
numba-cuda, date), wrapped to the figure's width: a plot must say where it was measured. Steps that compute on the
tensor cores say their arithmetic in their label (``[TF32]``, ``[3xTF32]``), draw dashed lines or hatched bars, and
cuBLAS on the TF32 tensor cores is drawn dotted when a run has it. A step is compared with the cuBLAS of its own
arithmetic (:data:`REFERENCE`: SGEMM for the FP32 and 3xTF32 steps, TF32 for the TF32 steps), and a speedup is never
taken across arithmetics: where the arithmetic changes, the plot says so instead (the shape-class plot, of the shape
suite, is of cuBLAS SGEMM). Each step has one colour
in every plot (:data:`STEP_COLOURS`), and throughput is on a log axis so the first steps do not vanish. Records with an ``"error"`` are not drawn, but are listed under the plot.

Each function returns its figure already closed in ``pyplot``. So a notebook shows it exactly once when it is the
cell's value (or passed to ``display``), and no figure is left open when many are drawn. A script saves it with
``path=``; without a display Matplotlib falls back to its Agg backend, and ``gemm-steps`` always uses Agg.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from gemm_steps.harness import results_files
from gemm_steps.harness.bench import ARITHMETIC_MARK, BASELINES, is_baseline
from gemm_steps.harness.environment import short_label

from . import timings

Size = tuple[int, int, int]


def _size(record: dict) -> Size:
    return record["M"], record["N"], record["K"]


def _size_label(size: Size) -> str:
    m, n, k = size
    return str(m) if m == n == k else f"{m}×{n}×{k}"


def _ok(results: dict) -> list[dict]:
    return [r for r in results["records"] if "error" not in r]


def _steps_only(records) -> list[dict]:
    """The records of steps, without the cuBLAS baselines."""
    return [r for r in records if not is_baseline(r["step"])]


def _label(record: dict) -> str:
    """A step's label with its arithmetic when it is not the FP32 units: ``12 tensor_cores [TF32]``."""
    return f"{record['number']} {record['step']}" + ARITHMETIC_MARK.get(record.get("arithmetic", "fp32"), "")


def _tensor_core(record: dict) -> bool:
    return record.get("arithmetic", "fp32") != "fp32"


def _failures_note(results: dict, relevant) -> str:
    """One line per failed record this figure would have shown, for its footnote ('' when none failed)."""
    failed = [r for r in results["records"] if "error" in r and relevant(r)]
    lines = [f"not plotted: {r['step']} at {_size_label(_size(r))} ({r['error'].splitlines()[0][:90]})"
             for r in failed[:6]]
    if len(failed) > 6:
        lines.append(f"… and {len(failed) - 6} more failed records")
    return "\n".join(lines)


#: One colour per step, chosen to stay apart from each other and from cuBLAS's black (Matplotlib's default cycle
#: repeats after ten, and its tenth-and-later colours sit close to earlier ones: steps 3, 10 and 11 looked alike).
STEP_COLOURS = ["#7f7f7f", "#8c564b", "#2ca02c", "#bcbd22", "#9467bd", "#e377c2", "#ff7f0e", "#d62728", "#1f77b4",
                "#17becf", "#000080", "#ff1493", "#556b2f", "#8b0000", "#ff00ff", "#ffd700", "#4b0082",
                "#00ff7f", "#2000ff", "#f4a460", "#7fff00", "#003333", "#87ceeb"]


def step_colour(number: int) -> str:
    """The colour of step ``number`` (1-based) in every plot."""
    return STEP_COLOURS[(number - 1) % len(STEP_COLOURS)]


def _title(fig: Figure, title: str, results: dict) -> str:
    """The title and where it ran, wrapped to the width it is centred on (a narrow plot of three steps, or one axes
    beside a long legend, must not clip it), between the label's " · " parts so that no version is split."""
    inches = fig.get_figwidth()
    if len(fig.axes) == 1:  # a title over one axes is centred on it: wrap to the axes' width (a legend beside it
        fig.draw_without_rendering()  # takes the rest), once the layout has placed it
        inches *= fig.axes[0].get_position().width
    width = max(40, int(inches * 72 / 6.2))  # characters of 10-point text across that width
    lines = [""]
    for part in short_label(results["environment"]).split(" · "):
        joined = f"{lines[-1]} · {part}" if lines[-1] else part
        if len(joined) > width and lines[-1]:
            lines.append(part)
        else:
            lines[-1] = joined
    return "\n".join([title, *lines])


def _finish(fig: Figure, results: dict, title: str, path: str | Path | None, relevant=lambda r: True) -> Figure:
    """Title with where it ran, footnote with what failed, and save if asked."""
    if len(fig.axes) > 1:  # panels side by side: one title over all of them
        fig.suptitle(_title(fig, title, results), fontsize=10)
    else:
        fig.axes[0].set_title(_title(fig, title, results), fontsize=10)
    note = _failures_note(results, relevant)
    if note:
        height = 0.03 * (note.count("\n") + 1)  # figure fraction kept free for the note under the axes
        fig.get_layout_engine().set(rect=(0, height, 1, 1 - height))
        fig.text(0.01, 0.005, note, fontsize=7, color="firebrick", va="bottom")
    if path is not None:
        fig.savefig(path, dpi=150)
    plt.close(fig)  # closed, not destroyed: it still displays and saves (see the module docstring)
    return fig


def plot_tflops_vs_size(results: dict, path: str | Path | None = None, steps=None) -> Figure:
    """TFLOPS against size, one line per step (``steps``: names or numbers to keep; all by default), cuBLAS dashed.

    Square sizes go on a log-2 axis labelled by N. With other shapes among them, the shapes are evenly spaced in
    order of their FLOP count and labelled M×N×K.
    """
    keep = None if steps is None else {str(s) for s in steps}

    def wanted(r: dict) -> bool:
        return keep is None or is_baseline(r["step"]) or bool({r["step"], str(r["number"])} & keep)

    records = [r for r in _ok(results) if wanted(r)]
    sizes = sorted({_size(r) for r in records}, key=lambda s: s[0] * s[1] * s[2])
    square = all(m == n == k for m, n, k in sizes)
    # Square sizes: a log-2 axis of N. Other shapes have no single size: evenly spaced, smallest product first.
    x_of = {s: s[0] if square else i for i, s in enumerate(sizes)}

    fig, ax = plt.subplots(figsize=(9, 5), layout="constrained")
    lines = sorted({(r["number"], r["step"]) for r in records})  # cuBLAS is number 0: drawn first
    for number, name in lines:
        mine = sorted((r for r in records if r["step"] == name), key=lambda r: x_of[_size(r)])
        xs, ys = [x_of[_size(r)] for r in mine], [r["tflops"] for r in mine]
        if name == "cublas":
            ax.plot(xs, ys, "k--", linewidth=2, label=BASELINES[name])
        elif name == "cublas_tf32":
            ax.plot(xs, ys, "k:", linewidth=2, label=BASELINES[name])
        else:
            # Markers alternate too, so curves stay apart in greyscale; tensor-core steps are dashed.
            style = "os^Dv"[number % 5] + ("--" if _tensor_core(mine[0]) else "-")
            ax.plot(xs, ys, style, color=step_colour(number), label=_label(mine[0]))
    if square:
        ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([x_of[s] for s in sizes]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([_size_label(s) for s in sizes], rotation=0 if square else 30)
    ax.set_xlabel("matrix size N (M = N = K)" if square else "shape M×N×K (a single N: square), in order of 2·M·N·K")
    ax.set_ylabel("TFLOPS (2·M·N·K / median time), log scale")
    # A log axis: the first steps run at 1 % of the last, and on a linear axis they lie flat along zero.
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(FixedLocator([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500]))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # outside the axes: never hides a line
    title = ("Throughput by step (float32 in and out; [TF32] / [3xTF32]: on the tensor cores)"
             if any(_tensor_core(r) for r in records) else "FP32 SGEMM throughput by step")
    return _finish(fig, results, title, path, wanted)


def _pick_size(results: dict, size: int | Size | None) -> Size:
    sizes = {_size(r) for r in _ok(results)}
    if not sizes:
        raise ValueError("no successful records to plot")
    if size is None:
        return (4096,) * 3 if (4096,) * 3 in sizes else max(sizes, key=lambda s: s[0] * s[1] * s[2])
    wanted = (size,) * 3 if isinstance(size, int) else tuple(size)
    if wanted not in sizes:
        raise ValueError(f"no records at {_size_label(wanted)}; sizes measured: "
                         + ", ".join(_size_label(s) for s in sorted(sizes)))
    return wanted


#: The cuBLAS a step is compared with, by its arithmetic: the FP32 steps and the 3xTF32 steps (which keep the FP32
#: contract, docs/fp32_contract.md) with cuBLAS SGEMM; the TF32 steps with cuBLAS on the TF32 tensor cores.
REFERENCE = {"fp32": "cublas", "3xtf32": "cublas", "tf32": "cublas_tf32"}
#: How a reference is named beside a percentage.
REFERENCE_SHORT = {"cublas": "SGEMM", "cublas_tf32": "TF32"}
#: Arithmetic names as the labels write them.
ARITHMETIC_NAME = {"fp32": "FP32", "tf32": "TF32", "3xtf32": "3xTF32"}


def _arithmetic(record: dict) -> str:
    return record.get("arithmetic", "fp32")


def _reference(results: dict, record: dict) -> dict | None:
    """The same run's cuBLAS record of ``record``'s arithmetic at its size (:data:`REFERENCE`), if measured."""
    name = REFERENCE[_arithmetic(record)]
    return next((r for r in _ok(results) if r["step"] == name and _size(r) == _size(record)), None)


def pct_of_own_cublas(results: dict, record: dict) -> float | None:
    """% of the cuBLAS of the step's own arithmetic (:data:`REFERENCE`), same run and size; None if not measured."""
    reference = _reference(results, record)
    return None if reference is None else 100.0 * reference["median_ms"] / record["median_ms"]


def _declared_base(number: int) -> int | None:
    """The step that step ``number`` says it changes (its module's ``BUILDS_ON``, as step 20 names step 17), if any."""
    from gemm_steps.harness.step import all_steps

    steps = {s.number: s for s in all_steps()}
    base = getattr(steps[number].module, "BUILDS_ON", None) if number in steps else None
    named = [s.number for s in steps.values() if s.name == base]
    return named[0] if named else None


def _previous_of_same_arithmetic(arithmetic: dict[int, str], number: int) -> int | None:
    """The step that step ``number`` is compared with: the one it says it changes (``BUILDS_ON``) where that computes
    as it does and was measured, else the nearest earlier step of the same arithmetic (step number → arithmetic in
    ``arithmetic``), or None (the first step of its arithmetic): a speed-up across arithmetics compares unlike things."""
    base = _declared_base(number)
    if base is not None and arithmetic.get(base) == arithmetic[number]:
        return base
    earlier = [n for n in arithmetic if n < number and arithmetic[n] == arithmetic[number]]
    return max(earlier) if earlier else None


def _mark_arithmetic_changes(ax, arithmetics: list[str], xs: list[float], vertical: bool = False) -> None:
    """A dotted line between neighbours computing differently, and the new arithmetic named at its top (along the
    line when ``vertical``: where the steps stand close, two changes in a row would write over each other)."""
    for i in range(1, len(arithmetics)):
        if arithmetics[i] != arithmetics[i - 1]:
            edge = (xs[i - 1] + xs[i]) / 2
            ax.axvline(edge, color="0.45", linestyle=":", linewidth=1)
            ax.text(edge, 0.99, f" → {ARITHMETIC_NAME[arithmetics[i]]} ", transform=ax.get_xaxis_transform(),
                    ha="right" if vertical else "left", va="top", rotation=90 if vertical else 0, fontsize=7,
                    color="0.3")


def plot_step_speedups(results: dict, size: int | Size | None = None, path: str | Path | None = None) -> Figure:
    """At one size (4096 if measured, else the largest), a bar per step: its TFLOPS (log axis), both cuBLAS as
    lines, and above each bar its % of the cuBLAS of its own arithmetic and its speed-up over the previous step of
    that arithmetic.

    FP32 and 3xTF32 steps are compared with cuBLAS SGEMM, TF32 steps with cuBLAS TF32 (:data:`REFERENCE`); the ×N.N
    is the previous step's median time over this one's, the previous step *of the same arithmetic* ("vs N" when that
    is not the step just before): where the arithmetic changes, a dotted line says so instead of a speed-up.
    """
    size = _pick_size(results, size)
    rows = sorted((r for r in _steps_only(_ok(results)) if _size(r) == size), key=lambda r: r["number"])
    references = {r["step"]: r for r in _ok(results) if is_baseline(r["step"]) and _size(r) == size}
    if not rows or "cublas" not in references:
        raise ValueError(f"no % of cuBLAS at {_size_label(size)}: the results have no cuBLAS record there")

    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(rows) + 2), 5.5), layout="constrained")
    xs = list(range(len(rows)))
    bars = ax.bar(xs, [r["tflops"] for r in rows], color=[step_colour(r["number"]) for r in rows],
                  hatch=["//" if _tensor_core(r) else "" for r in rows])
    numbered = {r["number"]: r for r in rows}
    arithmetic = {r["number"]: _arithmetic(r) for r in rows}
    for i, (bar, r) in enumerate(zip(bars, rows)):
        pct = pct_of_own_cublas(results, r)
        text = (f"{pct:.0f} % {REFERENCE_SHORT[REFERENCE[_arithmetic(r)]]}" if pct is not None
                else f"no cuBLAS {ARITHMETIC_NAME[_arithmetic(r)]}")
        before = _previous_of_same_arithmetic(arithmetic, r["number"])
        if before is not None:  # named when it is not the bar just before (another arithmetic, or a failed step)
            text += f"\n×{numbered[before]['median_ms'] / r['median_ms']:.1f}"
            text += "" if before == rows[i - 1]["number"] else f" vs {before}"
        elif i > 0:
            text += f"\nfirst {ARITHMETIC_NAME[_arithmetic(r)]}"
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                    fontsize=7, xytext=(0, 2), textcoords="offset points",
                    bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none", alpha=0.85))
    _mark_arithmetic_changes(ax, [_arithmetic(r) for r in rows], xs)
    for name, style in (("cublas", "--"), ("cublas_tf32", ":")):
        if name in references:
            ax.axhline(references[name]["tflops"], color="k", linestyle=style, linewidth=1.2,
                       label=f"{BASELINES[name]}: {references[name]['tflops']:.1f} TFLOPS")
    if any(_tensor_core(r) for r in rows):
        ax.bar([0], [0], color="white", edgecolor="k", hatch="//", label="hatched: on the tensor cores")
    ax.plot([], [], " ", label="above a bar: % of the cuBLAS of its arithmetic (SGEMM for FP32 and 3xTF32,\n"
                               "TF32 for TF32), × over the previous step of that arithmetic")
    ax.set_yscale("log")
    low = min(r["tflops"] for r in rows)
    high = max([r["tflops"] for r in rows] + [r["tflops"] for r in references.values()])
    ax.set_ylim(low / 2, high * 12)  # room above the tallest bar for its label and the legend
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_ylabel("TFLOPS (same run), log scale")
    ax.set_xticks(xs, [_label(r) for r in rows], rotation=35, ha="right", rotation_mode="anchor", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    return _finish(fig, results, f"Each step at {_size_label(size)}: TFLOPS, % of the cuBLAS of its arithmetic, "
                   "× over the previous step of that arithmetic", path, lambda r: _size(r) == size)


#: Line styles by arithmetic in the speed-up curves (tensor-core steps dashed or dotted, as in the other plots).
ARITHMETIC_STYLE = {"fp32": "-", "tf32": "--", "3xtf32": ":"}


def plot_speedup_curves(results: dict, path: str | Path | None = None) -> Figure:
    """Across sizes: each step's speedup over the previous step of its arithmetic (left) and its % of the cuBLAS of
    its arithmetic (right), a colour per size and a line style per arithmetic.

    The course's promise, step by step: where a step pays off (speedup > 1) and at which sizes, and how close each
    step gets to the cuBLAS it competes with (SGEMM for the FP32 and 3xTF32 steps, TF32 for the TF32 steps:
    :data:`REFERENCE`). A speed-up is never taken across arithmetics: the first TF32 and the first 3xTF32 step have
    none, and a dotted line marks where the arithmetic changes. Square sizes only; a step missing at a size leaves a
    gap.
    """
    rows = [r for r in _steps_only(_ok(results)) if r["M"] == r["N"] == r["K"]]
    sizes = sorted({r["M"] for r in rows})
    numbers = sorted({r["number"] for r in rows})
    if not rows or len(numbers) < 2:
        raise ValueError("no two steps at a square size to compare")
    by_key = {(r["number"], r["M"]): r for r in rows}
    names = {r["number"]: r["step"] for r in rows}
    arithmetic = {r["number"]: _arithmetic(r) for r in rows}
    previous = {n: _previous_of_same_arithmetic(arithmetic, n) for n in numbers}
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5), layout="constrained")
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(sizes)))
    kinds = [a for a in ARITHMETIC_STYLE if a in arithmetic.values()]
    for size, colour in zip(sizes, colours):
        for kind in kinds:
            mine = [n for n in numbers if arithmetic[n] == kind]
            speedup = [by_key[(previous[n], size)]["median_ms"] / by_key[(n, size)]["median_ms"]
                       if previous[n] is not None and (n, size) in by_key and (previous[n], size) in by_key
                       else np.nan for n in mine]
            left.plot(mine, speedup, "o" + ARITHMETIC_STYLE[kind], color=colour)
            pct = [pct_of_own_cublas(results, by_key[(n, size)]) if (n, size) in by_key else None for n in mine]
            right.plot(mine, [np.nan if p is None else p for p in pct], "o" + ARITHMETIC_STYLE[kind], color=colour)
    for ax in (left, right):
        _mark_arithmetic_changes(ax, [arithmetic[n] for n in numbers], numbers, vertical=True)
    handles = [plt.Line2D([], [], color=colour, marker="o", linestyle="", label=f"{size}³")
               for size, colour in zip(sizes, colours)]
    handles += [plt.Line2D([], [], color="k", linestyle=ARITHMETIC_STYLE[kind], label=ARITHMETIC_NAME[kind])
                for kind in kinds]
    handles += [plt.Line2D([], [], linestyle="", label="right: % of the cuBLAS\nof its arithmetic —\nSGEMM for FP32 "
                           "and\n3xTF32, TF32 for TF32")]
    fig.legend(handles=handles, fontsize=8, title="size, arithmetic", loc="outside right upper")

    def tick(n: int) -> str:
        return f"{n} {names[n]}{ARITHMETIC_MARK.get(arithmetic[n], '')}"

    later = numbers[1:]
    left.axhline(1, color="k", linewidth=1, linestyle=":")
    left.set(yscale="log", xlabel="step", ylabel="× over the previous step of its arithmetic (log)", xticks=later,
             xticklabels=[tick(n) + (f" (first {ARITHMETIC_NAME[arithmetic[n]]})" if previous[n] is None
                                     else "" if previous[n] == n - 1 else f" (vs {previous[n]})") for n in later])
    left.yaxis.set_major_locator(FixedLocator([0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 20]))
    left.yaxis.set_minor_locator(NullLocator())
    left.yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}"))
    right.axhline(100, color="k", linewidth=1, linestyle="--")
    right.set(xlabel="step", ylabel="% of its cuBLAS (same run)", xticks=numbers,
              xticklabels=[tick(n) for n in numbers])
    for ax, scale in ((left, 1.6), (right, 1.2)):  # room at the top for the names of the arithmetics
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, top * scale)
    for ax in (left, right):
        ax.tick_params(axis="x", labelsize=7, labelrotation=90)
    return _finish(fig, results, "Step by step across sizes: speedup over the previous step of the same arithmetic, "
                   "and % of the cuBLAS of that arithmetic", path)


def plot_shape_classes(results: dict, path: str | Path | None = None, steps=None) -> Figure:
    """% of cuBLAS for each shape of ``gemm-steps bench --suite shapes``, grouped by class (square, ragged, …), one
    bar per step: where the course's kernels hold their square-size efficiency and where they do not."""
    from gemm_steps.harness.shape_suite import SHAPE_CLASSES

    rows = [r for r in _steps_only(_ok(results)) if r.get("pct_of_cublas") is not None
            and (steps is None or r["step"] in steps)]
    shapes = [(name, shape) for name, members in SHAPE_CLASSES.items() for shape in members
              if any(_size(r) == shape for r in rows)]
    if len({name for name, _ in shapes}) < 2:
        raise ValueError("no two shape classes of the suite in these results (gemm-steps bench --suite shapes)")
    numbers = sorted({(r["number"], r["step"]) for r in rows})
    by_key = {(r["step"], _size(r)): r for r in rows}
    fig, ax = plt.subplots(figsize=(max(8.0, 0.75 * len(shapes) + 2), 4.8), layout="constrained")
    width = 0.8 / len(numbers)
    extra = iter(["#ff1493", "#556b2f", "#daa520", "#8c564b"])  # for kernels that are not steps (tile variants)
    for i, (number, name) in enumerate(numbers):
        heights = [by_key[(name, shape)]["pct_of_cublas"] if (name, shape) in by_key else np.nan
                   for _, shape in shapes]
        variant = "@" in name
        ax.bar(np.arange(len(shapes)) + (i - (len(numbers) - 1) / 2) * width, heights, width,
               color=next(extra) if variant else step_colour(number), label=name if variant else f"{number} {name}")
    ax.axhline(100, color="k", linewidth=1, linestyle="--")
    ax.set_xticks(np.arange(len(shapes)), [f"{_size_label(shape)}" for _, shape in shapes], rotation=60,
                  ha="right", fontsize=8)
    ax.set_ylabel("% of cuBLAS SGEMM (same run)")
    edges = [i for i in range(1, len(shapes)) if shapes[i][0] != shapes[i - 1][0]]
    for edge in edges:
        ax.axvline(edge - 0.5, color="0.6", linewidth=0.8)
    starts = [0, *edges]
    ends = [*edges, len(shapes)]
    tallest = max(r["pct_of_cublas"] for r in rows)
    ax.set_ylim(0, max(110.0, tallest) * 1.15)  # room above the bars for the class names
    for start, end in zip(starts, ends):
        ax.text((start + end - 1) / 2, 0.98, shapes[start][0], transform=ax.get_xaxis_transform(), ha="center",
                va="top", fontsize=9, fontweight="bold")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, results, "Shapes people use: % of cuBLAS by shape class", path)


def default_stem(results: dict, suite: str | None = None) -> str:
    """File-name stem for a run: ``bench-<gpu>-<date>`` (e.g. ``bench-nvidia-h100-80gb-hbm3-2025-01-31``), or a
    shape suite's (``suite``: ``shapes-<gpu>-<date>``); :func:`results_files.run_stem`."""
    env = results["environment"]
    return results_files.run_stem(env.get("gpu", "gpu"), str(env.get("date", "undated"))[:10], suite)


def plot_results(results: dict, out_dir: str | Path, stem: str | None = None) -> list[Path]:
    """Write ``<stem>-tflops.png``, ``<stem>-steps.png`` and ``<stem>-curves.png`` into ``out_dir``; return their
    paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = stem or default_stem(results)
    paths = [out_dir / f"{stem}-tflops.png", out_dir / f"{stem}-steps.png", out_dir / f"{stem}-curves.png"]
    plot_tflops_vs_size(results, paths[0])
    plot_step_speedups(results, path=paths[1])
    plot_speedup_curves(results, path=paths[2])
    if results.get("suite") == "shapes":  # a run of the shape suite also gets its by-class picture
        plot_shape_classes(results, path=out_dir / f"{stem}-shapes.png")
        paths.append(out_dir / f"{stem}-shapes.png")
    return paths


# -- a Hopper step's ring (lessons 16, 18 and 19) ----------------------------------------------------------------------
def ring_stage_boxes(ax, stages, colours: dict, title: str, *, box=(0.9, 1.2), rows=(1.75, 1.45, 1.1), alpha=None,
                     ylim=(-0.2, 2.3)) -> None:
    """The ring during one turn on ``ax``, a box per stage coloured by its state (``colours``): the stage, its newest
    k-tile and its state, on the three heights ``rows``. ``stages``: per stage an object with ``stage``, ``k_tile``
    (None: none yet) and ``state``; ``box``: the boxes' bottom and height."""
    for e in stages:
        s, t = e.stage, e.k_tile
        ax.add_patch(plt.Rectangle((s, box[0]), 0.9, box[1], color=colours[e.state], alpha=alpha))
        ax.text(s + 0.45, rows[0], f"stage {s}", ha="center", fontsize=9, fontweight="bold")
        ax.text(s + 0.45, rows[1], "—" if t is None else f"k-tile {t}", ha="center", fontsize=9)
        ax.text(s + 0.45, rows[2], e.state, ha="center", fontsize=8)
    ax.set(xlim=(-0.1, len(stages)), ylim=ylim, title=title)
    ax.title.set_fontsize(9)
    ax.axis("off")


def k_tile_grid(ax, cells, stages: int, *, alpha: float, cell=(0.95, 0.9), centre=(0.47, 0.45)) -> None:
    """The ring's k-tiles on ``ax``: one column per k-tile, one row per stage (stage 0 on top), a box of size ``cell``
    with its text at ``centre``. ``cells``: (k-tile, stage, colour, text), one per k-tile 0, 1, …"""
    for x, s, colour, text in cells:
        y = stages - 1 - s
        ax.add_patch(plt.Rectangle((x, y), *cell, color=colour, alpha=alpha))
        ax.text(x + centre[0], y + centre[1], text, ha="center", va="center", fontsize=7)
    ax.set(xlim=(0, len(cells)), ylim=(0, stages))
    ax.set_yticks([stages - 1 - s + centre[1] for s in range(stages)], [f"stage {s}" for s in range(stages)])


def span_bar(ax, y, a, b, colour, span: float, height: float = 0.6) -> bool:
    """A timeline's bar from ``a`` to ``b`` on row ``y`` if both ends were recorded (finite) and it shows in
    [0, ``span``); whether it was drawn."""
    shown = bool(np.isfinite(a) and np.isfinite(b) and a < span and b > 0)
    if shown:
        ax.barh(y, b - a, left=a, color=colour, height=height)
    return shown


def speed_error_figure(results: dict, rows, size_list: list, draw_target, title: str, *, errors: bool = True,
                       figsize=(12, 4.6), legend_fontsize: float = 8) -> Figure:
    """Two panels over ``size_list``: TFLOPS (log) of each of ``rows`` ((record name, label, colour, style)) with
    ``draw_target(axes, x)`` drawing the target, and their sampled errors; with ``errors=False`` the TFLOPS panel
    alone, ``title`` over it. Not closed in ``pyplot``: a :class:`~matplotlib.figure.Figure` of its own."""
    x = np.arange(len(size_list))
    fig = Figure(figsize=figsize, layout="constrained")
    speed, error = fig.subplots(1, 2) if errors else (fig.subplots(), None)
    for name, label, colour, style in rows:
        got = [timings.record(results, name, s) or {} for s in size_list]
        if not any(got):
            label += " (not in this file)"
        speed.plot(x, [g.get("tflops", np.nan) for g in got], style, color=colour, label=label)
        if errors:
            error.plot(x, [g.get("sampled_rel_error_fp64", np.nan) for g in got], style, color=colour, label=label)
    draw_target(speed, x)
    for ax in (speed, error) if errors else (speed,):
        ax.set_yscale("log")
        ax.set_xticks(x, [timings.size_label(s) for s in size_list])
        ax.set_xlabel("size")
    speed.set_ylabel("TFLOPS (log scale)")
    speed.legend(fontsize=legend_fontsize, loc="lower right")
    if not errors:
        speed.set_title(title, fontsize=9)
        return fig
    speed.set_title("Speed")
    error.set(ylabel="relative error (sampled, vs float64)", title="Accuracy")
    fig.suptitle(title, fontsize=9)
    return fig
