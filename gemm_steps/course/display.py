"""Showing things in a lesson: prose computed from data, the code that really runs, figures.

In a notebook each helper displays rich output (Markdown, highlighted code, a PNG); run as a script, it prints text.

* :func:`say` — Markdown prose; :class:`MarkdownTable` — a table that renders as Markdown; :func:`facts` — named
  numbers as a two-column table (a lesson helper's results, which the lesson's prose reads); :func:`table` — rows
  of named values as a table.
* :func:`show_source` — a step's module as written (kernel, then launcher); :func:`show_kernel` — just its kernel,
  or an excerpt of it; :func:`show_excerpt` — a few lines of any text (``step.generated_source()``, say).
* :func:`show_diff` — what changed in the kernel from one step to another (``gemm-steps diff A B`` prints the same).
* :func:`show_file` — part of a source file (an experiment's kernel variant), read as text.
* :func:`show_figure` — a Matplotlib figure.
"""

from __future__ import annotations

import ast
import difflib
import io
import textwrap
from pathlib import Path

from gemm_steps.harness.step import get_step
from gemm_steps.harness import results_files
from gemm_steps.harness.step import Step

StepLike = str | int | Step


def as_step(step: StepLike) -> Step:
    """A step given by name, number or itself."""
    return step if isinstance(step, Step) else get_step(step)


class MarkdownTable(str):
    """A string that a notebook renders as Markdown (and ``print`` shows as text)."""

    def _repr_markdown_(self) -> str:
        return str(self)


def _fmt(value) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "—"}[value]
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def facts(values: dict, header: tuple[str, str] = ("", "")) -> MarkdownTable:
    """``{name: number}`` as a two-column Markdown table (floats to two decimals, booleans as yes / no): the numbers
    a lesson helper computed, for the lesson's prose around them to read from."""
    rows = [f"| {header[0]} | {header[1]} |", "|:--|--:|"] + [f"| {k} | {_fmt(v)} |" for k, v in values.items()]
    return MarkdownTable("\n".join(rows))


def table(rows: list[dict], formats: dict | None = None, align: str | None = None,
          tight_blanks: bool = False) -> MarkdownTable:
    """Rows of named values as a Markdown table, one column per key of the first row; a value is shown with its
    column's format in ``formats`` (``"{:.3f} ms"``) if it is a number, else as :func:`facts` shows it. The first
    column and columns of words are left-aligned, numbers right-aligned, unless ``align`` says how, a letter a column:
    ``"l"`` left, ``"r"`` right, ``"c"`` centred (``"lrr"``). ``tight_blanks`` writes an empty cell (or heading) as
    ``| |`` rather than ``|  |``. The rows stay with it (``.rows``)."""
    formats, keys = formats or {}, list(rows[0]) if rows else []
    cells = [[formats[k].format(r[k]) if k in formats and isinstance(r.get(k), (int, float)) else _fmt(r.get(k))
              for k in keys] for r in rows]
    if align is None:
        align = "".join("l" if i == 0 or any(isinstance(r.get(k), str) and any(c.isalpha() for c in r[k])
                                             for r in rows) else "r" for i, k in enumerate(keys))
    if len(align) != len(keys) or set(align) - set("lrc"):
        raise ValueError(f"align {align!r}: one of l, r, c for each of the {len(keys)} columns")

    def line(texts):
        if tight_blanks:
            return "|" + "".join(f" {t} |" if t else " |" for t in texts)
        return "| " + " | ".join(texts) + " |"

    out = MarkdownTable("\n".join([line(keys), "|" + "".join({"l": ":--|", "r": "--:|", "c": ":-:|"}[a] for a in align)]
                                  + [line(row) for row in cells]))
    out.rows = rows
    return out


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


def show_code(source: str, language: str = "python") -> None:
    """Show code, syntax-highlighted in a notebook."""
    shown = _notebook()
    shown.display(shown.Code(source, language=language)) if shown else print(source)


def _without_docstring(source: str) -> str:
    """``source`` minus its module docstring (and the blank lines after it)."""
    body = ast.parse(source).body
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return source
    return "\n".join(source.splitlines()[body[0].end_lineno:]).lstrip("\n")


def show_source(step: StepLike, docstring: bool = True) -> None:
    """Show a step's module as written (``step.source()``): its kernel, then how it is launched.

    ``docstring=False`` leaves out the module docstring, for a lesson that has already printed ``step.doc``.
    """
    source = as_step(step).source()
    show_code(source if docstring else _without_docstring(source))


def _line_containing(lines: list[str], text: str, after: int = -1) -> int:
    """The index of the first line after ``after`` that contains ``text``."""
    found = next((i for i in range(after + 1, len(lines)) if text in lines[i]), None)
    if found is None:
        raise ValueError(f"no line containing {text!r}" + (f" after line {after + 1}" if after >= 0 else ""))
    return found


def excerpt(text: str, start: str | None = None, stop: str | None = None, lines: int | None = None) -> str:
    """Part of ``text``: from the first line containing ``start`` to the first line after it containing ``stop``
    (both included), or ``lines`` lines; all of it by default. Indented as a whole less, so that the part starts at
    the left margin; a note at the end says how many lines follow."""
    all_lines = text.splitlines()
    first = 0 if start is None else _line_containing(all_lines, start)
    if stop is not None:
        last = _line_containing(all_lines, stop, first)
    else:
        last = len(all_lines) - 1 if lines is None else min(first + lines, len(all_lines)) - 1
    shown = textwrap.dedent("\n".join(all_lines[first:last + 1]))
    rest = len(all_lines) - last - 1
    return shown + (f"\n# … {rest} more lines (of {len(all_lines)})" if rest else "")


def show_excerpt(text: str, start: str | None = None, stop: str | None = None, lines: int | None = None) -> None:
    """Show :func:`excerpt` of ``text`` as code."""
    show_code(excerpt(text, start, stop, lines))


def show_file(path: str | Path, start: str | None = None, stop: str | None = None) -> Path | None:
    """Show part of a file of the repository read as text (nothing is imported or compiled), from the line
    containing ``start`` to the line containing ``stop``; the first line says which file and lines. The lessons show
    the experiments' kernel variants so: the lesson names the file (``"experiments/kernels/…"``), which comes with a
    checkout, not with the package.

    A relative ``path`` is found where results files are (:data:`~gemm_steps.harness.results_files.ROOT`: the
    checkout, or the current directory). Returns the path; if the file is not there, says so and returns ``None``.
    """
    path = Path(results_files.ROOT) / path
    if not path.is_file():
        say(f"`{results_files.display_path(path)}` is not here (it comes with a checkout of the repository, not with "
            "the package), so it cannot be shown.")
        return None
    lines = path.read_text().splitlines()
    first = 0 if start is None else _line_containing(lines, start)
    last = len(lines) - 1 if stop is None else _line_containing(lines, stop, first)
    show_code(f"# {results_files.display_path(path)}, lines {first + 1}–{last + 1}\n"
              + textwrap.dedent("\n".join(lines[first:last + 1])))
    return path


def show_kernel(step: StepLike, start: str | None = None, stop: str | None = None) -> None:
    """Show a step's kernel as written (``step.kernel_source()``), or the part of it from the line containing
    ``start`` to the line containing ``stop``."""
    show_excerpt(as_step(step).kernel_source(), start, stop)


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


def kernel_diff(before: StepLike, after: StepLike, context: int = 1, ignore_indent: bool = False) -> str:
    """A unified diff of two steps' kernels as written (``kernel_source()``): what ``gemm-steps diff`` prints.

    ``ignore_indent`` treats lines that only moved in or out as unchanged (a body wrapped in a new loop).
    """
    before, after = as_step(before), as_step(after)
    old, new = before.kernel_source().splitlines(), after.kernel_source().splitlines()
    names = f"step {before.number}: {before.name}", f"step {after.number}: {after.name}"
    if ignore_indent:
        return "\n".join(_diff_ignoring_indent(old, new, *names, context))
    return "\n".join(difflib.unified_diff(old, new, *names, lineterm="", n=context))


def show_diff(before: StepLike, after: StepLike, context: int = 1, ignore_indent: bool = False) -> None:
    """Show what changed in the kernel from one step to another, as a unified diff (launchers aside)."""
    show_code(kernel_diff(before, after, context, ignore_indent), "diff")


def show_figure(fig) -> None:
    """Display a Matplotlib figure in a notebook, as a PNG (no dependence on the notebook's Matplotlib backend)."""
    shown = _notebook()
    if not shown:
        print(f"[figure: {fig.axes[0].get_title() if fig.axes else 'untitled'} (open the notebook to see it)]")
        return
    png = io.BytesIO()
    fig.savefig(png, format="png", bbox_inches="tight")
    shown.display(shown.Image(data=png.getvalue(), format="png"))
