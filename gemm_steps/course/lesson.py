"""Small helpers the lessons share, so that each lesson stays short and every number it shows comes from data.

* :func:`measure_or_load` — fresh timings on a GPU, the shipped ``results/`` file on the simulator, and a sentence
  saying which of the two the reader is looking at.
* :func:`timing_table` — TFLOPS, % of cuBLAS and speedup over the previous step at one size, as a Markdown table.
* :func:`check_against_numpy` — run a step on random inputs (NaN-poisoned output) and compare with float64 NumPy.
* :func:`show_source` / :func:`show_diff` — the code that really runs, never a pasted copy.
* :func:`record`, :func:`headline_size`, :func:`common_sizes`, :func:`say`, :func:`show_figure` — glue for prose cells.

For the later lessons (4 on):

* :func:`load_shipped`, :func:`sweep_table` — experiments and tuning sweeps in ``results/``, with their provenance.
* :func:`template_view`, :func:`show_template`, :func:`show_generated`, :func:`show_kernel_diff` — generated
  kernels as a learner can read them: the template with this step's branches decided, or an excerpt of the
  generated source; and what changed in the kernel from one step to the next.
* :func:`compile_kernels`, :func:`compiled_table`, :func:`k_loop_mix`, :func:`blocks_per_sm` — the compiled code,
  on a CPU: PTX instruction mix per FMA, registers (``ptxas`` in the nvJitLink wheel), blocks per SM.
* :func:`wavefronts`, :func:`sm_rate_tflops`, :func:`ceiling_figure` — the throughput models the predictions use.

Results documents are the ones :func:`gemm_steps.bench.run_benchmark` returns. A lesson's results may be ``None``
(no GPU and nothing shipped yet); the helpers then say so instead of failing.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
from pathlib import Path
from typing import Iterable

from gemm_steps import get_step
from gemm_steps.harness import bench
from gemm_steps import steps as all_steps
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.harness.environment import short_label
from gemm_steps.harness.step import Step

REPO = Path(__file__).resolve().parents[2]
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


def measure_or_load(steps: Iterable[str | int | Step], sizes: Iterable[int | Size], *, measure: bool | None = None,
                    optional: Iterable[str | int | Step] = ()):
    """Timings of ``steps`` and cuBLAS, and a printed sentence saying where they come from.

    On a GPU (or with ``measure=True``) the steps are benchmarked now, at ``sizes`` (ints are square sizes). On
    the simulator the shipped results file is loaded instead, with all the sizes it has. The document returned has
    ``provenance`` (that sentence) added; it is ``None`` when there is no GPU and no shipped file yet.

    ``optional`` steps are measured too, but a shipped file need not have them: the newest file with ``steps`` is
    loaded, and its records of ``optional`` steps are kept if it has any (a lesson then shows "—" for the others).
    """
    names = _step_names(steps)
    extra = [n for n in _step_names(optional) if n not in names]
    if measure is None:
        measure = not SIMULATOR
    if measure:
        shapes = [(s, s, s) if isinstance(s, int) else tuple(s) for s in sizes]
        results = bench.run_benchmark([get_step(n) for n in names + extra], shapes, progress=lambda msg: None)
        env = results["environment"]
        results["provenance"] = (f"Measured now on {env.get('gpu')} ({env.get('sm_count')} SMs), "
                                 f"{env.get('date', '')[:10]}: fresh timings from this machine, not the shipped file.")
    else:
        shipped = load_results("steps", names)
        if shipped is None:
            say(NO_RESULTS)
            return None
        results = _keep_steps(shipped, names + extra)
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
    from gemm_steps.harness.verify import verify

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


# -- results files that are not a benchmark of the steps: experiments and tuning sweeps ----------------------------
def load_shipped(pattern: str, what: str) -> dict | None:
    """The newest shipped results document matching ``results/<pattern>`` (a glob), with a sentence saying so.

    For the files :func:`load_results` leaves out on purpose: tuning sweeps (``tuning-<step>-*.json``) and one-off
    experiments (``experiment-*.json``). These are never re-measured by a lesson, not even on a GPU: the commands
    that wrote them do that. ``what`` says what the file is, for the sentence. ``None`` (said) if nothing matches.
    """
    candidates = []
    for path in sorted(RESULTS_DIR.glob(pattern)):
        try:
            data = bench.load(path)
        except (ValueError, OSError):
            continue
        if not data.get("environment", {}).get("simulator"):
            candidates.append((str(data["environment"].get("date", "")), path.name, path, data))
    if not candidates:
        say(f"There is no shipped file `results/{pattern}` ({what}), so this part has nothing to show.")
        return None
    *_, path, data = max(candidates)
    env = data["environment"]
    data["path"] = str(path)
    data["provenance"] = (f"These numbers are the shipped run from `{_relative(str(path))}` ({what}), measured on "
                          f"{env.get('gpu')} ({env.get('sm_count')} SMs) on {str(env.get('date', '?'))[:10]}.")
    say(data["provenance"])
    return data


# -- generated steps: the template as one step sees it --------------------------------------------------------------
_DIRECTIVE = re.compile(r"^(\s*)#\s*@(for|if|indent|else|end)\b\s*(.*)$")
_SUBSTITUTION = re.compile(r"\{\{(.+?)\}\}")


def _resolve(lines: list[str], constants: dict) -> list[str]:
    """``lines`` with every ``@if``/``@else`` and ``@indent`` decided by ``constants``; ``@for`` loops kept as they are.

    A condition that names something ``constants`` lacks (a loop variable, say) is kept unresolved.
    """
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match or match.group(2) in ("else", "end"):
            out.append(lines[i])
            i += 1
            continue
        kind, rest = match.group(2), match.group(3)
        depth, else_at, end = 0, None, None
        for j in range(i + 1, len(lines)):
            inner = _DIRECTIVE.match(lines[j])
            if not inner:
                continue
            if inner.group(2) in ("for", "if", "indent"):
                depth += 1
            elif inner.group(2) == "else" and depth == 0:
                else_at = j
            elif inner.group(2) == "end":
                if depth == 0:
                    end = j
                    break
                depth -= 1
        if end is None:
            raise SyntaxError(f"template: no '# @end' for line {i + 1}: {lines[i].strip()}")
        try:
            value = None if kind == "for" else bool(eval(rest, {}, dict(constants)))
        except NameError:
            value = None
        if kind == "for" or value is None:
            out.append(lines[i])
            out += _resolve(lines[i + 1:end], constants)
            out.append(lines[end])
        elif kind == "indent":  # the code moves in by four spaces; the folded loops' directives stay put
            body = _resolve(lines[i + 1:end], constants)
            out += [("    " + line if line.strip() and value and not _DIRECTIVE.match(line) else line)
                    for line in body]
        else:
            body = lines[i + 1:else_at] if else_at is not None else lines[i + 1:end]
            other = lines[else_at + 1:end] if else_at is not None else []
            out += _resolve(body if value else other, constants)
        i = end + 1
    return out


def template_view(step: str | int | Step, edge: bool = False) -> str:
    """A generated step's template with its branches decided for this step (the fast kernel unless ``edge``).

    The ``# @for`` loops stay folded, so the view is as short as the template; ``step.source()`` is what they
    unroll into. Steps that share one template (8, 9, 10, …) differ here only where their branches differ.
    """
    step = _as_step(step)
    template = getattr(step.module, "TEMPLATE", None)
    if template is None:
        raise ValueError(f"step {step.name} is written by hand, not generated: use show_source")
    constants = {**step.config, "EDGE": edge}

    def fill_in_code(match):  # a {{ … }} that yields a piece of code (not a number) is filled in
        try:
            value = eval(match.group(1), {}, dict(constants))
        except NameError:
            return match.group(0)
        return value if isinstance(value, str) else match.group(0)

    lines = _resolve(template.strip("\n").splitlines(), constants)
    return "\n".join(_SUBSTITUTION.sub(fill_in_code, line) for line in lines) + "\n"


def _kernel_text(step: Step) -> str:
    """The kernel(s) of a step: its resolved fast-kernel template if generated, else its ``@kernel`` functions."""
    if getattr(step.module, "TEMPLATE", None) is not None:
        return template_view(step)
    source = step.source()
    lines = source.splitlines()
    keep = []
    for node in ast.parse(source).body:
        decorators = [d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in
                      getattr(node, "decorator_list", [])]
        if isinstance(node, ast.FunctionDef) and "kernel" in decorators:
            keep += lines[node.decorator_list[0].lineno - 1:node.end_lineno] + [""]
    return "\n".join(keep)


def show_template(step: str | int | Step, start: str | None = None, stop: str | None = None,
                  edge: bool = False) -> None:
    """Display :func:`template_view`, optionally only from the first line containing ``start`` up to the first
    line after it containing ``stop`` (both included)."""
    lines = template_view(step, edge).splitlines()
    if start is not None:
        first = next(i for i, line in enumerate(lines) if start in line)
        last = next((i for i in range(first + 1, len(lines)) if stop is not None and stop in lines[i]), len(lines) - 1)
        lines = lines[first:last + 1]
    _code("\n".join(lines), "python")


def show_generated(step: str | int | Step, start: str, lines: int = 30) -> None:
    """Display ``lines`` lines of the generated source that really runs, from the first line containing ``start``,
    and say how long the whole is (``step.source()`` prints all of it)."""
    step = _as_step(step)
    source = step.source().splitlines()
    first = next(i for i, line in enumerate(source) if start in line)
    shown = source[first:first + lines]
    _code("\n".join(shown) + f"\n# … {len(source) - first - len(shown)} more lines: print(step.source()) shows all "
          f"{len(source)}", "python")


def _diff_ignoring_indent(old: list[str], new: list[str], before: str, after: str, context: int) -> list[str]:
    """A unified diff in which lines that differ only in indentation count as equal (shown as in ``new``)."""
    matcher = difflib.SequenceMatcher(None, [line.strip() for line in old], [line.strip() for line in new],
                                      autojunk=False)
    out = [f"--- {before}", f"+++ {after}"]
    for group in matcher.get_grouped_opcodes(context):
        (_, i1, _, j1, _), (*_, i2, _, j2) = group[0], group[-1]
        out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in new[b1:b2]]
                continue
            out += ["-" + line for line in old[a1:a2]] + ["+" + line for line in new[b1:b2]]
    return out


def show_kernel_diff(before: str | int | Step, after: str | int | Step, context: int = 1,
                     ignore_indent: bool = False) -> None:
    """What changed in the kernel from one step to the next: hand-written kernels as written, generated ones as
    their template seen by each step (:func:`template_view`, loops folded). Launchers and docstrings aside.

    ``ignore_indent`` treats lines that only moved in or out as unchanged (a body wrapped in a new loop).
    """
    before, after = _as_step(before), _as_step(after)
    old, new = (_kernel_text(s).splitlines() for s in (before, after))
    names = f"step {before.number}: {before.name}", f"step {after.number}: {after.name}"
    if ignore_indent:
        diff = _diff_ignoring_indent(old, new, *names, context)
    else:
        diff = difflib.unified_diff(old, new, *names, lineterm="", n=context)
    _code("\n".join(diff), "diff")


# -- compiled code: PTX instruction mix, registers, occupancy ------------------------------------------------------
#: Per-SM limits of compute capability 9.0 (Hopper), from NVIDIA's CUDA C++ Programming Guide (not measured here).
SM90_LIMITS = {"registers": 65536, "threads": 2048, "blocks": 32, "shared_bytes": 233472,
               "shared_reserved_per_block": 1024, "register_unit_per_warp": 256}


def compile_kernels(steps: Iterable[str | int | Step], variant: str = "fast", lowering_comparison: bool = False,
                    timeout: float = 600) -> dict[str, dict]:
    """Compile kernels to PTX — and with ``ptxas`` (through nvJitLink) to machine code — on the CPU, no GPU needed.

    For each step, its kernel labelled ``<name>_<variant>`` (or its only kernel). Runs in a fresh Python in GPU
    mode (``NUMBA_ENABLE_CUDASIM=0``), since this process may be on the simulator, which compiles nothing. Returns
    ``{label: {"step", "ptx", "stats" (gemm_steps.ptx.ptx_stats), "seconds" (PTX generation), "registers",
    "spill_bytes", "ptxas" (version), "shared_bytes"}}``; registers are ``None`` where nvJitLink is missing.
    With ``lowering_comparison``, each kernel is also compiled without the lowering workaround of
    :mod:`gemm_steps._numba_patches` (``"seconds_without_workaround"``).
    """
    import json
    import os
    import subprocess
    import sys

    names = _step_names(steps)
    command = [sys.executable, "-c", "import sys; from gemm_steps.course.lesson import _compile_main; "
               "sys.exit(_compile_main(sys.argv[1:]))", variant, str(int(lowering_comparison)), *names]
    path = os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": path}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        from gemm_steps.harness.ptx import PTXUnavailable

        raise PTXUnavailable(f"compiling {names} to PTX failed (exit {done.returncode}). This needs NVVM, from the "
                             "CUDA 13 wheels (`pip install -e '.[dev]'` or `numba-cuda[cu13]`), but no GPU. Its "
                             f"error:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def _ptxas_info(ptx: str, cc: tuple[int, int]) -> dict:
    """Registers and spills that ptxas (inside the nvJitLink wheel) reports for one kernel; ``{}`` if unavailable."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError:
        return {}
    options = [f"-arch=sm_{cc[0]}{cc[1]}", "-verbose"]
    handle = nvjitlink.create(len(options), options)
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel.ptx")
        nvjitlink.complete(handle)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
        version = ".".join(str(v) for v in nvjitlink.version())
    except Exception:  # an nvJitLink too old for this PTX, say: no register count, the rest still holds
        return {}
    finally:
        nvjitlink.destroy(handle)
    text = log.decode(errors="replace")
    registers = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores", text)
    return {"registers": int(registers.group(1)) if registers else None,
            "spill_bytes": int(spills.group(1)) if spills else None, "ptxas": f"nvJitLink {version}"}


_SHARED_DECLARATION = r"^\s*(?:\.visible\s+|\.extern\s+)?\.shared\s+(?:\.align\s+\d+\s+)?\.b8\s+\w+\[(\d+)\]"


def _compile_main(argv: list[str]) -> int:
    """The subprocess of :func:`compile_kernels` (GPU mode): print ``{label: {...}}`` as JSON."""
    import json
    import sys
    import time

    from numba.cuda import lowering

    from gemm_steps.toolkit import numba_patches as _numba_patches
    from gemm_steps.harness.ptx import DEFAULT_CC, compile_kernel_ptx, ptx_stats

    variant, comparison, names = argv[0], argv[1] == "1", argv[2:]
    original = lowering.Lower._find_singly_assigned_variable
    if _numba_patches._APPLIED:  # gemm_steps patched Numba at import: the original is gone
        comparison = False
    chosen = []
    for name in names:
        kernels = get_step(name).kernels()
        label = f"{name}_{variant}" if f"{name}_{variant}" in kernels else name if name in kernels else None
        if label is None:
            label = next(iter(kernels))
        chosen.append((name, label, *kernels[label]))
    if comparison:  # absorb one-time costs (NVVM start-up, libdevice) before timing anything
        compile_kernel_ptx(*get_step("register_1d").kernels()["register_1d"])
    out = {}
    for name, label, dispatcher, signature in chosen:
        _numba_patches.apply()
        start = time.perf_counter()
        ptx = compile_kernel_ptx(dispatcher, signature)
        seconds = time.perf_counter() - start
        shared = sum(int(n) for n in re.findall(_SHARED_DECLARATION, ptx, re.MULTILINE))
        entry = {"step": name, "ptx": ptx, "stats": ptx_stats(ptx), "seconds": seconds, "shared_bytes": shared,
                 "registers": None, "spill_bytes": None, "ptxas": None, **_ptxas_info(ptx, DEFAULT_CC)}
        if comparison:
            patched = lowering.Lower._find_singly_assigned_variable
            lowering.Lower._find_singly_assigned_variable = original
            try:
                start = time.perf_counter()
                unpatched_ptx = _compile_unpatched(dispatcher, signature, DEFAULT_CC)
                entry["seconds_without_workaround"] = time.perf_counter() - start
                entry["same_ptx_without_workaround"] = _same_code(unpatched_ptx, ptx)
            finally:
                lowering.Lower._find_singly_assigned_variable = patched
        out[label] = entry
    json.dump(out, sys.stdout)
    return 0


def _same_code(ptx: str, other: str) -> bool:
    """Whether two compilations of one kernel are the same code: equal but for the numbers Numba appends to
    names each time it compiles a function again (``…B2v1…``, ``_cudapy_smem_3``)."""

    def normalized(text):
        return re.sub(r"_cudapy_smem_\d+", "_cudapy_smem", re.sub(r"B\d+v\d+", "", text))

    return normalized(ptx) == normalized(other)


def _compile_unpatched(dispatcher, signature: str, cc: tuple[int, int]) -> str:
    """:func:`gemm_steps.ptx.compile_kernel_ptx` without re-applying the lowering workaround."""
    from numba import cuda

    options = getattr(dispatcher, "targetoptions", {}) or {}
    kwargs = {key: options[key] for key in ("launch_bounds", "fastmath", "debug", "lineinfo", "opt") if key in options}
    ptx, _ = cuda.compile(dispatcher.py_func, signature, device=False, abi="numba", cc=cc, output="ptx", **kwargs)
    return ptx


_PTX_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_:]+)*)[\s;]")
_PTX_LABEL = re.compile(r"^\s*(\$L\w+):")
_PTX_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$L\w+)\s*;")

#: How :func:`k_loop_mix` groups PTX opcodes, in the order tables show them.
MIX_CLASSES = ["fma", "shared loads", "shared stores", "global loads/stores", "64-bit integer", "32-bit integer",
               "branch/barrier", "other"]


def _mix_class(opcode: str) -> str:
    suffix = opcode.rsplit(".", 1)[-1]
    if opcode.startswith("fma.rn") and suffix == "f32":
        return "fma"
    if opcode.startswith("ld.shared"):
        return "shared loads"
    if opcode.startswith("st.shared"):
        return "shared stores"
    if opcode.startswith(("ld.global", "st.global")):
        return "global loads/stores"
    if opcode.startswith(("bra", "bar", "barrier", "ret")):
        return "branch/barrier"
    if opcode.startswith(("ld.", "st.", "cvta", "mov", "cvt")):
        return "other"
    if suffix in ("s64", "u64", "b64"):
        return "64-bit integer"
    if suffix in ("s32", "u32", "b32"):
        return "32-bit integer"
    return "other"


def k_loop_mix(ptx: str, fmas_per_k_tile: int) -> dict[str, float] | None:
    """PTX instructions per FMA, by kind (:data:`MIX_CLASSES`), over one trip of a kernel's k-loop.

    The k-loop is the innermost loop holding both the FMAs and a barrier (one trip = one k-tile). A loop nested
    in it that holds FMAs (a k-step loop the compiler did not unroll) is counted as many times as it must run for
    the tile's ``fmas_per_k_tile`` FMAs per thread. Each instruction is counted once per trip, whichever branch
    it is on, so this is a static estimate of the instruction stream — of PTX, which ``ptxas`` still rewrites into
    the machine code (SASS) the GPU runs. ``None`` if no such loop is found.
    """
    ops: list[str] = []
    labels: dict[str, int] = {}
    branches: list[tuple[int, str]] = []
    for line in re.sub(r"//[^\n]*", "", ptx).splitlines():
        label = _PTX_LABEL.match(line)
        if label:
            labels[label.group(1)] = len(ops)
            continue
        found = _PTX_INSTRUCTION.match(line)
        if not found or line.lstrip().startswith("."):
            continue
        branch = _PTX_BRANCH.search(line)
        if branch:
            branches.append((len(ops), branch.group(1)))
        ops.append(found.group(1))
    loops = [(labels[target], at + 1) for at, target in branches if target in labels and labels[target] <= at]

    def fmas(loop):
        return sum(_mix_class(op) == "fma" for op in ops[loop[0]:loop[1]])

    def has_barrier(loop):
        return any(op.startswith(("bar", "barrier")) for op in ops[loop[0]:loop[1]])

    k_loops = [loop for loop in loops if fmas(loop) and has_barrier(loop)]
    if not k_loops:
        return None
    k_loop = min(k_loops, key=lambda loop: loop[1] - loop[0])
    inner = [loop for loop in loops if loop != k_loop and k_loop[0] <= loop[0] and loop[1] <= k_loop[1] and fmas(loop)]
    if len(inner) > 1:
        return None  # several FMA loops in one k-tile: their trip counts cannot be told apart
    counts = dict.fromkeys(MIX_CLASSES, 0.0)
    inside = set()
    for loop in inner:
        trips = (fmas_per_k_tile - (fmas(k_loop) - fmas(loop))) / fmas(loop)
        for op in ops[loop[0]:loop[1]]:
            counts[_mix_class(op)] += trips
        inside.update(range(*loop))
    for i in range(*k_loop):
        if i not in inside:
            counts[_mix_class(ops[i])] += 1
    total_fmas = counts["fma"]
    return {kind: n / total_fmas for kind, n in counts.items()} if total_fmas else None


def fmas_per_k_tile(step: str | int | Step) -> int:
    """FMAs one thread does per k-tile: BLOCK_K × THREAD_M × THREAD_N (1×1 results per thread if not given)."""
    config = _as_step(step).config
    return int(config.get("BLOCK_K", 1) * config.get("THREAD_M", 1) * config.get("THREAD_N", 1))


def threads_per_block(step: str | int | Step) -> int:
    """Threads per block of a step, from its tile constants."""
    config = _as_step(step).config
    if "THREADS" in config:
        return int(config["THREADS"])
    return int(config.get("BLOCK_M", 1) * config.get("BLOCK_N", 1)
               // (config.get("THREAD_M", 1) * config.get("THREAD_N", 1)))


def blocks_per_sm(registers: int | None, threads: int, shared_bytes: int, limits: dict = SM90_LIMITS) -> dict:
    """How many blocks fit on one SM, and which resource decides (NVIDIA's occupancy rules; a calculation).

    Registers are allocated per warp in units of 256 (so a thread's count is rounded up to a multiple of 8).
    """
    warps = -(-threads // 32)
    limit = {"threads": limits["threads"] // threads, "blocks": limits["blocks"],
             "shared memory": limits["shared_bytes"] // (shared_bytes + limits["shared_reserved_per_block"])}
    if registers:
        unit = limits["register_unit_per_warp"]
        per_warp = -(-registers * 32 // unit) * unit
        limit["registers"] = (limits["registers"] // per_warp) // warps
    blocks = min(limit.values())
    return {"blocks": blocks, "warps": blocks * warps, "limited_by": min(limit, key=limit.get)}


def compiled_table(compiled: dict[str, dict]) -> MarkdownTable:
    """One row per compiled kernel: its k-loop's instruction mix per FMA, registers and blocks per SM."""
    lines = ["| kernel | PTX instructions per FMA in the k-loop | shared loads per FMA (of them 128-bit) "
             "| 64-bit integer per FMA | FP32 peak if issue-bound | registers | blocks (warps) per SM |",
             "|:--|--:|--:|--:|--:|--:|--:|"]
    for label, entry in compiled.items():
        step = get_step(entry["step"])
        mix = k_loop_mix(entry["ptx"], fmas_per_k_tile(step))
        stats = entry["stats"]
        shared = stats["ld.shared.f32"] + stats["ld.shared.v4.f32"]
        vector = f"{stats['ld.shared.v4.f32'] / shared:.0%}" if shared else "—"
        occupancy = blocks_per_sm(entry["registers"], threads_per_block(step), entry["shared_bytes"])
        regs = "—" if entry["registers"] is None else str(entry["registers"])
        resident = "—" if entry["registers"] is None else f"{occupancy['blocks']} ({occupancy['warps']})"
        if mix is None:
            lines.append(f"| {label} | — | — | — | — | {regs} | {resident} |")
            continue
        total = sum(mix.values())
        lines.append(f"| {label} | {total:.2f} | {mix['shared loads']:.3f} ({vector}) | {mix['64-bit integer']:.2f} "
                     f"| {1 / total:.0%} | {regs} | {resident} |")
    ptxas = next((e["ptxas"] for e in compiled.values() if e.get("ptxas")), None)
    note = (f"Registers: ptxas in {ptxas}, for sm_90; blocks per SM: NVIDIA's occupancy rules for compute "
            "capability 9.0 (a calculation, not a measurement)." if ptxas else
            "No register counts: nvJitLink (the `nvidia-nvjitlink` wheel) is not installed here.")
    return MarkdownTable("\n".join(lines) + "\n\n" + note)


# -- simple throughput models ---------------------------------------------------------------------------------------
#: Shared-memory banks (4 bytes each) and warp size on every GPU this course targets (Volta to Hopper).
BANKS = 32


def wavefronts(words_per_lane: Iterable[Iterable[int]]) -> int:
    """Shared-memory wavefronts one warp-wide load needs: the most distinct 4-byte words any one bank must serve.

    ``words_per_lane`` gives, for each lane of the warp, the word addresses (indices of floats in the shared array)
    it reads: one for a scalar load, four consecutive ones for a 128-bit load. A bank serves one word per wavefront,
    and a word wanted by several lanes is sent to all of them at once (a broadcast). So 32 lanes reading 32
    neighbouring floats take 1 wavefront, 32 lanes reading one float take 1, and 32 lanes reading floats 32 apart
    (all in one bank) take 32. This is the model NVIDIA documents for bank conflicts; a profiler counts the real ones.
    """
    per_bank: dict[int, set[int]] = {}
    for words in words_per_lane:
        for word in words:
            per_bank.setdefault(word % BANKS, set()).add(word)
    return max(len(words) for words in per_bank.values())


def sm_rate_tflops(results: dict, per_clock_per_sm: float, flops_each: float = 2) -> float:
    """TFLOPS if every SM of the results' GPU did ``per_clock_per_sm`` operations (FMAs) of ``flops_each`` FLOPs
    per clock at its maximum clock: the ceiling a throughput model puts on a kernel."""
    env = results["environment"]
    return env["sm_count"] * env["sm_clock_max_mhz"] * 1e6 * per_clock_per_sm * flops_each / 1e12


def ceiling_figure(rows: list[tuple[str, float | None, dict[str, float]]], title: str, results: dict):
    """Bars of measured TFLOPS, one per kernel, with each model's ceiling drawn over its bar.

    ``rows``: ``(label, measured TFLOPS or None, {model name: ceiling TFLOPS})``. The lowest ceiling of a bar is
    what its models predict; the bar shows how close the kernel came.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.subplots()
    markers = {}
    styles = ["_", "x", "d", "^"]
    for i, (label, measured, ceilings) in enumerate(rows):
        if measured is not None:
            ax.bar(i, measured, color="tab:blue", width=0.6, label="measured" if i == 0 else None)
            ax.annotate(f"{measured:.1f}", (i, measured / 2), ha="center", va="center", fontsize=9, color="white",
                        fontweight="bold")
        for name, value in ceilings.items():
            style = markers.setdefault(name, styles[len(markers) % len(styles)])
            ax.plot([i], [value], style, color="tab:red" if style == "_" else "k", ms=28 if style == "_" else 9,
                    mew=2.5, label=name if name not in ax.get_legend_handles_labels()[1] else None)
    peak = fp32_peak_tflops(results)
    if peak:
        ax.axhline(peak, color="gray", ls=":", label="FP32 peak (estimate)")
    ax.set_xticks(range(len(rows)), [row[0] for row in rows])
    ax.set(ylabel="TFLOPS", ylim=(0, None), title=f"{title}\n{short_label(results['environment'])}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


# -- tuning sweeps ----------------------------------------------------------------------------------------------------
_CONFIG_FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "MIN_BLOCKS_PER_SM")


def config_label(config: dict) -> str:
    """``128×128×16, 8×8/thread, ≥2 blocks/SM``: a tile configuration in one short line."""
    hint = f", ≥{config['MIN_BLOCKS_PER_SM']} blocks/SM" if config.get("MIN_BLOCKS_PER_SM") else ""
    return (f"{config['BLOCK_M']}×{config['BLOCK_N']}×{config['BLOCK_K']}, "
            f"{config['THREAD_M']}×{config['THREAD_N']}/thread{hint}")


def same_config(a: dict, b: dict) -> bool:
    """Whether two configuration dicts name the same tiles (fields a record lacks count as 0)."""
    return all(a.get(key, 0) == b.get(key, 0) for key in _CONFIG_FIELDS)


def sweep_records(sweep: dict) -> list[dict]:
    """The successful records of a tuning sweep (``step#i``, each with its ``config``), in the sweep's order."""
    return [r for r in sweep["records"] if r["step"] != "cublas" and _ok(r) and "config" in r]


def sweep_table(sweep: dict, step: str | int | Step) -> MarkdownTable:
    """A tuning sweep as a table: each configuration's time, % of cuBLAS and first call (compile + one run), the
    one :func:`gemm_steps.tuning.choose_best` picks, and where it stands in the step's ``SEARCH_SPACE`` today."""
    from dataclasses import asdict

    from gemm_steps.harness.tuning import choose_best

    space = [asdict(config) for config in getattr(_as_step(step).module, "SEARCH_SPACE", [])]
    records = sweep_records(sweep)
    best = choose_best(records) if records else None
    lines = ["| sweep # | block tile M×N×K, per thread, occupancy hint | median ms | % of cuBLAS | first call s "
             "| # in SEARCH_SPACE now |", "|--:|:--|--:|--:|--:|--:|"]
    for r in records:
        place = next((i + 1 for i, other in enumerate(space) if same_config(r["config"], other)), "—")
        chosen = " **← chosen**" if r is best else ""
        lines.append(f"| {r['number']} | {config_label(r['config'])}{chosen} | {r['median_ms']:.3f} "
                     f"| {r.get('pct_of_cublas', float('nan')):.1f} % | {r['first_call_s']:.1f} | {place} |")
    return MarkdownTable("\n".join(lines))


def variants_table(experiment: dict, first_column: str = "kernel", only: Iterable[str] | None = None) -> MarkdownTable:
    """An experiment's variants (``bench.time_variants``, or any one-run comparison of square sizes) as a table: one
    row per variant in the order they ran, one column of % of cuBLAS per size. ``only`` picks and orders the rows."""
    by = {(r["step"], r["M"]): r for r in experiment["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    names = list(only) if only is not None else list(dict.fromkeys(
        r["step"] for r in experiment["records"] if r["step"] != "cublas"))
    lines = [f"| {first_column} | " + " | ".join(f"{m}³: % of cuBLAS" for m in sizes) + " |",
             "|:--|" + "--:|" * len(sizes)]
    lines += [f"| {name} | " + " | ".join(f"{by[(name, m)]['pct_of_cublas']:.1f} %" if (name, m) in by else "—"
                                          for m in sizes) + " |" for name in names]
    return MarkdownTable("\n".join(lines))


def speedups_by_size(results: dict, before: str | int | Step, after: str | int | Step) -> str:
    """``"2.22× at 1024³, 4.32× at 4096³"``: how much faster ``after`` ran than ``before`` at every common size."""
    return ", ".join(f"{record(results, before, s)['median_ms'] / record(results, after, s)['median_ms']:.2f}× "
                     f"at {size_label(s)}" for s in common_sizes(results, [before, after]))
