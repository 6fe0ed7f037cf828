#!/usr/bin/env python
"""Regenerate notebooks/NN_*.ipynb from lessons/NN_*.py, executed, so they are committed with their outputs.

The lesson files (jupytext "percent" format) are the truth; a notebook is a lesson plus the outputs of one run.

    python scripts/build_notebooks.py              # rebuild and execute every notebook
    python scripts/build_notebooks.py 02_coalesced # only the lessons whose name contains one of these
    python scripts/build_notebooks.py --check      # exit 1, with a diff, if a notebook differs from its lesson

Without a GPU the notebooks run on Numba's CUDA simulator, and their timing cells show the shipped benchmark run
from results/ (each notebook says so). On a GPU they measure afresh and say that instead.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat

REPO = Path(__file__).resolve().parent.parent
LESSONS = REPO / "lessons"
NOTEBOOKS = REPO / "notebooks"
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
#: Lets Jupyter (with jupytext) keep an opened notebook and its lesson file in sync.
PAIRING = "notebooks//ipynb,lessons//py:percent"


#: Side experiments and forensics, linked from their lesson: deep_dives/NN_topic.py belongs to lesson NN.
DEEP_DIVES = LESSONS / "deep_dives"


def lesson_paths(only: list[str] | None = None) -> list[Path]:
    """The lessons in order, then the deep dives (those whose name contains one of ``only``, if given)."""
    paths = sorted(LESSONS.glob("[0-9][0-9]_*.py")) + sorted(DEEP_DIVES.glob("[0-9][0-9]_*.py"))
    return [p for p in paths if not only or any(o in name(p) for o in only)]


def name(lesson: Path) -> str:
    """``11_stream_k``, or ``deep_dives/11_first_version`` for a deep dive."""
    return lesson.relative_to(LESSONS).with_suffix("").as_posix()


def notebook_path(lesson: Path) -> Path:
    return NOTEBOOKS / f"{name(lesson)}.ipynb"


def notebook_names() -> set[str]:
    """The notebooks there are, named like :func:`name`."""
    return {p.relative_to(NOTEBOOKS).with_suffix("").as_posix() for p in NOTEBOOKS.rglob("*.ipynb")
            if ".ipynb_checkpoints" not in p.parts}


def read_lesson(lesson: Path) -> nbformat.NotebookNode:
    nb = jupytext.read(lesson, fmt="py:percent")
    nb.metadata["kernelspec"] = dict(KERNEL)
    nb.metadata["jupytext"] = {"formats": PAIRING}
    return nb


def cells(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(cell type, source) of every cell: what must be equal between a lesson and its notebook."""
    return [(c.cell_type, c.source) for c in nb.cells]


def differences(lesson: Path) -> str:
    """Empty if the notebook holds exactly the lesson's cells (outputs and metadata aside); else a readable diff."""
    nb_path = notebook_path(lesson)
    if not nb_path.exists():
        return f"{nb_path.relative_to(REPO)} is missing (lesson {lesson.relative_to(REPO)})\n"

    def render(nb_cells):
        return [f"# %% [{kind}]\n{source}\n" for kind, source in nb_cells]

    want = render(cells(read_lesson(lesson)))
    have = render(cells(nbformat.read(nb_path, as_version=4)))
    if want == have:
        return ""
    return "".join(difflib.unified_diff(have, want, str(nb_path.relative_to(REPO)), str(lesson.relative_to(REPO))))


def unexecuted(nb_path: Path) -> list[int]:
    """Indices of code cells that were never run (no execution count)."""
    nb = nbformat.read(nb_path, as_version=4)
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("execution_count") is None]


def kernel_environment() -> dict[str, str]:
    """The environment a notebook's kernel starts with: this one, less any ``PYTHONPATH`` entry that is this checkout.

    A learner opens a notebook from the installed package (``pip install -e .``) in the notebook's own folder, where
    only ``gemm_steps`` is importable, not the checkout's ``experiments/`` or ``scripts/``: the notebooks are built
    and tested the same way, so a lesson that imports anything else fails here as it would for the learner."""
    env = dict(os.environ)
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != REPO]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


_INSTALLED: dict[str, str] = {}


def installed_package(env: dict[str, str], cwd: Path) -> Path:
    """Where a Python started like a notebook's kernel (``env``, in ``cwd``) finds ``gemm_steps``; raises if that is
    not this checkout's (not installed, or installed from another checkout)."""
    key = str(cwd)
    if key not in _INSTALLED:
        import subprocess

        found = subprocess.run([sys.executable, "-c", "import importlib.util as u; s = u.find_spec('gemm_steps'); "
                                "print(s.origin if s else '')"], cwd=cwd, env=env, capture_output=True, text=True,
                               check=True).stdout.strip()
        _INSTALLED[key] = found
    origin = _INSTALLED[key]
    if not origin or Path(origin).resolve().parent != REPO / "gemm_steps":
        raise RuntimeError(f"a notebook in {cwd} would import gemm_steps from {origin or 'nowhere'}, not from "
                           f"{REPO / 'gemm_steps'}: install this checkout first (python -m pip install -e .)")
    return Path(origin).parent


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 600, progress=None) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel started in ``cwd``, as a learner's would be: ``gemm_steps`` from the installed
    package (this checkout, installed with ``pip install -e .``), and the checkout itself not on ``PYTHONPATH``
    (:func:`kernel_environment`).

    ``progress(done, total)`` is called after each cell (the tests use it to say where a long lesson is)."""
    from nbclient import NotebookClient

    total = sum(cell.cell_type == "code" for cell in nb.cells)
    executed = [0]

    def after_cell(cell, cell_index, execute_reply):
        executed[0] += 1
        if progress is not None:
            progress(executed[0], total)

    env = kernel_environment()
    installed_package(env, cwd)
    saved = os.environ.get("PYTHONPATH")
    _set_pythonpath(env.get("PYTHONPATH"))  # the kernel inherits this process's environment
    try:
        NotebookClient(nb, timeout=timeout, kernel_name=KERNEL["name"], record_timing=False,
                       extra_arguments=["--IPKernelApp.log_level=ERROR"],  # not its TCP-transport warning
                       resources={"metadata": {"path": str(cwd)}}, on_cell_executed=after_cell).execute()
    finally:
        _set_pythonpath(saved)
    return nb


def _set_pythonpath(value: str | None) -> None:
    if value is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = value


def build(lesson: Path, timeout: int) -> float:
    nb = read_lesson(lesson)
    notebook_path(lesson).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    execute(nb, notebook_path(lesson).parent, timeout)
    seconds = time.perf_counter() - t0
    nbformat.write(nb, notebook_path(lesson))
    return seconds


def check(lessons: list[Path]) -> int:
    problems = []
    for lesson in lessons:
        diff = differences(lesson)
        if diff:
            problems.append(diff)
        elif unexecuted(notebook_path(lesson)):
            problems.append(f"{notebook_path(lesson).relative_to(REPO)} has code cells that were never executed\n")
    orphans = notebook_names() - {name(p) for p in lesson_paths()}
    problems += [f"notebooks/{orphan}.ipynb has no lesson (lessons/{orphan}.py)\n" for orphan in sorted(orphans)]
    if problems:
        sys.stdout.write("".join(problems))
        print("\nNotebooks are out of date: run  python scripts/build_notebooks.py", file=sys.stderr)
        return 1
    print(f"{len(lessons)} notebooks match their lessons")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="build only lessons whose file name contains one of these")
    parser.add_argument("--check", action="store_true", help="verify notebooks match lessons; build nothing")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell (default 600)")
    args = parser.parse_args(argv)
    lessons = lesson_paths(args.only)
    if not lessons:
        parser.error(f"no lesson in {LESSONS.relative_to(REPO)}/ matches {args.only}")
    if args.check:
        return check(lessons)
    for lesson in lessons:
        print(f"{lesson.relative_to(REPO)} → {notebook_path(lesson).relative_to(REPO)} … ", end="", flush=True)
        print(f"executed in {build(lesson, args.timeout):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
