"""Small helpers the lessons share, so that each lesson stays short and every number it shows comes from data.

* :func:`measure_or_load` — fresh timings on a GPU, the shipped ``results/`` file on the simulator, and a sentence
  saying which of the two the reader is looking at.
* :func:`timing_table` — TFLOPS, % of cuBLAS and speedup over the previous step at one size, as a Markdown table.
* :func:`check_against_numpy` — run a step on random inputs (NaN-poisoned output) and compare with float64 NumPy.
* :func:`show_source` / :func:`show_diff` — the code that really runs, never a pasted copy.
* :func:`record`, :func:`headline_size`, :func:`common_sizes`, :func:`say`, :func:`show_figure` — glue for prose cells.

Results documents are the ones :func:`gemm_steps.bench.run_benchmark` returns. A lesson's results may be ``None``
(no GPU and nothing shipped yet); the helpers then say so instead of failing.
"""

from __future__ import annotations

import ast
import difflib
import io
from pathlib import Path
from typing import Iterable

from . import bench, get_step
from . import steps as all_steps
from ._backend import SIMULATOR
from .environment import short_label
from .step import Step

REPO = Path(__file__).resolve().parent.parent
#: Where the shipped benchmark results live (``results/*.json`` at the repository root).
RESULTS_DIR = REPO / "results"

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


# -- where timings come from ---------------------------------------------------------------------------------------
def _as_step(step: str | int | Step) -> Step:
    return step if isinstance(step, Step) else get_step(step)


def _step_names(steps: Iterable[str | int | Step]) -> list[str]:
    return [_as_step(s).name for s in steps]


def _ok(rec: dict) -> bool:
    return "error" not in rec and rec.get("median_ms") is not None


def _has_steps(results: dict, names: Iterable[str]) -> bool:
    present = {r["step"] for r in results["records"] if _ok(r)}
    return set(names) <= present


def load_results(kind: str = "steps", steps: Iterable[str | int | Step] = (), results_dir: Path | None = None):
    """The newest shipped GPU results file whose records hold ``steps`` and cuBLAS; ``None`` if there is none.

    ``kind`` is the kind of run: ``"steps"``, a benchmark of the course's steps (what ``gemm-steps bench`` writes),
    the only kind lessons read. Tuning sweeps (records named ``step#i``), files that are not results documents
    (``tuned.json``) and simulator runs are skipped. "Newest" is the measurement date recorded in the file, as a
    git checkout does not keep file times. The returned document has ``path`` added: the file it came from.
    """
    if kind != "steps":
        raise ValueError(f"unknown kind of results {kind!r}; the lessons read benchmark runs of steps ('steps')")
    names = _step_names(steps) + ["cublas"]
    course = {s.name for s in all_steps()}
    candidates = []
    for path in sorted(Path(results_dir or RESULTS_DIR).glob("*.json")):
        try:
            data = bench.load(path)
        except (ValueError, OSError):
            continue
        of_steps = any(r["step"] in course for r in data["records"])
        if of_steps and not data.get("environment", {}).get("simulator") and _has_steps(data, names):
            candidates.append((str(data["environment"].get("date", "")), path.name, path, data))
    if not candidates:
        return None
    *_, path, data = max(candidates)
    data["path"] = str(path)
    return data


def _keep_steps(results: dict, names: list[str]) -> dict:
    keep = set(names) | {"cublas"}
    return {**results, "records": [r for r in results["records"] if r["step"] in keep]}


def _relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def measure_or_load(steps: Iterable[str | int | Step], sizes: Iterable[int | Size], *, measure: bool | None = None):
    """Timings of ``steps`` and cuBLAS, and a printed sentence saying where they come from.

    On a GPU (or with ``measure=True``) the steps are benchmarked now, at ``sizes`` (ints are square sizes). On
    the simulator the shipped results file is loaded instead, with all the sizes it has. The document returned has
    ``provenance`` (that sentence) added; it is ``None`` when there is no GPU and no shipped file yet.
    """
    names = _step_names(steps)
    if measure is None:
        measure = not SIMULATOR
    if measure:
        shapes = [(s, s, s) if isinstance(s, int) else tuple(s) for s in sizes]
        results = bench.run_benchmark([get_step(n) for n in names], shapes, progress=lambda msg: None)
        env = results["environment"]
        results["provenance"] = (f"Measured now on {env.get('gpu')} ({env.get('sm_count')} SMs), "
                                 f"{env.get('date', '')[:10]}: fresh timings from this machine, not the shipped file.")
    else:
        shipped = load_results("steps", names)
        if shipped is None:
            say(NO_RESULTS)
            return None
        results = _keep_steps(shipped, names)
        env = results["environment"]
        results["provenance"] = (f"No GPU here: these timings are the shipped run from `{_relative(shipped['path'])}`, "
                                 f"measured on {env.get('gpu')} ({env.get('sm_count')} SMs) on "
                                 f"{str(env.get('date', '?'))[:10]}.")
    say(results["provenance"])
    return results


# -- reading a results document ------------------------------------------------------------------------------------
def _size(size: int | Size) -> Size:
    return (size, size, size) if isinstance(size, int) else tuple(size)


def size_label(size: int | Size) -> str:
    m, n, k = _size(size)
    return f"{m}³" if m == n == k else f"{m}×{n}×{k}"


def record(results: dict, step: str | int | Step, size: int | Size) -> dict | None:
    """The successful record of ``step`` (or ``"cublas"``) at ``size``; ``None`` if the run has none."""
    name = step if step == "cublas" else _step_names([step])[0]
    m, n, k = _size(size)
    for rec in results["records"]:
        if rec["step"] == name and (rec["M"], rec["N"], rec["K"]) == (m, n, k) and _ok(rec):
            return rec
    return None


def common_sizes(results: dict, steps: Iterable[str | int | Step]) -> list[Size]:
    """Every size at which all of ``steps`` and cuBLAS ran, smallest first (by FLOPs)."""
    names = _step_names(steps) + ["cublas"]
    found = {(r["M"], r["N"], r["K"]) for r in results["records"] if _ok(r)}
    common = [s for s in found if all(record(results, n, s) for n in names)]
    return sorted(common, key=lambda s: s[0] * s[1] * s[2])


def headline_size(results: dict, steps: Iterable[str | int | Step]) -> Size | None:
    """The largest size at which all of ``steps`` and cuBLAS ran (the one the lessons quote)."""
    common = common_sizes(results, steps)
    return common[-1] if common else None


class MarkdownTable(str):
    """A string that a notebook renders as Markdown (and ``print`` shows as text)."""

    def _repr_markdown_(self) -> str:
        return str(self)


def timing_table(results: dict | None, steps: Iterable[str | int | Step], size: int | Size | None = None):
    """TFLOPS, % of cuBLAS and speedup over the previous row, for ``steps`` and cuBLAS at one size.

    ``size`` defaults to :func:`headline_size`. Missing entries show as "—", never as a made-up number.
    """
    if results is None:
        return MarkdownTable(f"*{NO_RESULTS}*")
    names = _step_names(steps)
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


def fp32_peak_tflops(results: dict) -> float | None:
    """The GPU's FP32 peak as estimated in the results (SMs × 128 FP32 lanes × 2 FLOP × max SM clock)."""
    return results["environment"].get("fp32_peak_tflops_estimate")


def datasheet_bandwidth_tbs(results: dict) -> float | None:
    """Peak DRAM bandwidth of the results' GPU from NVIDIA's datasheet (not a measurement); ``None`` if unknown."""
    gpu = str(results["environment"].get("gpu", ""))
    return next((tbs for key, tbs in DATASHEET_BANDWIDTH_TBS if key in gpu), None)


# -- checking a step ------------------------------------------------------------------------------------------------
def check_against_numpy(step: str | int | Step, shapes: Iterable[Size], seed: int = 0) -> MarkdownTable:
    """Check ``step`` against a float64 NumPy product at each (M, N, K), with :func:`gemm_steps.verify.verify`.

    The output starts as NaN on the device, so an element the kernel forgets to write shows up. Returns the table;
    raises ``AssertionError`` (with the table) if any shape fails, so a wrong kernel stops the notebook.
    """
    from .verify import verify

    step = _as_step(step)
    lines = ["| M × N × K | unwritten | relative error vs float64 | tolerance | ok | seconds |",
             "|:----------|----------:|--------------------------:|----------:|:---|--------:|"]
    rows = verify([step], shapes, seed=seed)
    for r in rows:
        ok = "yes" if r["passed"] else f"**NO** {r.get('error', '')}"
        lines.append(f"| {r['M']} × {r['N']} × {r['K']} | {r['nan_count']} | {r['rel_error']:.2e} "
                     f"| {r['tolerance']:.1e} | {ok} | {r['seconds']:.2f} |")
    table = MarkdownTable(f"Step {step.number} ({step.name}) against NumPy in float64:\n\n" + "\n".join(lines))
    if not all(r["passed"] for r in rows):
        raise AssertionError(f"step {step.name} fails the check against NumPy:\n{table}")
    return table


# -- showing things in a notebook -----------------------------------------------------------------------------------
def _notebook():
    """IPython's ``display`` module when running in a notebook (or IPython), else ``None``."""
    try:
        from IPython import display, get_ipython
    except ImportError:
        return None
    return display if get_ipython() is not None else None


def say(text: str) -> None:
    """Show Markdown prose computed from data (plain text outside a notebook)."""
    shown = _notebook()
    shown.display(shown.Markdown(text)) if shown else print(text)


def _code(source: str, language: str) -> None:
    shown = _notebook()
    shown.display(shown.Code(source, language=language)) if shown else print(source)


def _without_docstring(source: str) -> str:
    """``source`` minus its module docstring (and the blank lines after it)."""
    body = ast.parse(source).body
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return source
    return "\n".join(source.splitlines()[body[0].end_lineno:]).lstrip("\n")


def show_source(step: str | int | Step, docstring: bool = True) -> None:
    """Display the source that really runs for ``step`` (``step.source()``), syntax-highlighted in a notebook.

    ``docstring=False`` leaves out the module docstring, for a lesson that has already shown ``step.doc``.
    """
    source = _as_step(step).source()
    _code(source if docstring else _without_docstring(source), "python")


def show_diff(before: str | int | Step, after: str | int | Step) -> None:
    """Display what changed in the code (docstrings aside) from one step to another, as a unified diff."""
    before, after = _as_step(before), _as_step(after)
    old, new = (_without_docstring(s.source()).splitlines() for s in (before, after))
    diff = difflib.unified_diff(old, new, f"step {before.number}: {before.name}", f"step {after.number}: {after.name}",
                                lineterm="", n=1)
    _code("\n".join(diff), "diff")


def show_figure(fig) -> None:
    """Display a Matplotlib figure in a notebook, as a PNG (no dependence on the notebook's Matplotlib backend)."""
    shown = _notebook()
    if not shown:
        print(f"[figure: {fig.axes[0].get_title() if fig.axes else 'untitled'} (open the notebook to see it)]")
        return
    png = io.BytesIO()
    fig.savefig(png, format="png", bbox_inches="tight")
    shown.display(shown.Image(data=png.getvalue(), format="png"))
