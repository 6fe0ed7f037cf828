"""The course's cell rule (STYLE.md: a lesson's main path is about 25 cells): count a lesson's cells as the notebook
builder reads them, code and Markdown alike."""

from __future__ import annotations

from pathlib import Path

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
#: The most cells a lesson's main path may have.
MAX_CELLS = 25


def lesson_cells(name: str) -> int:
    """How many cells ``lessons/<name>.py`` has (jupytext percent format, as scripts/build_notebooks.py reads it).
    jupytext is a dev dependency; on a machine without it (a GPU image running ``-m gpu``) the cell-rule tests skip
    and the lesson modules' other tests still import."""
    import pytest

    jupytext = pytest.importorskip("jupytext")
    return len(jupytext.read(LESSONS / f"{name}.py", fmt="py:percent").cells)
