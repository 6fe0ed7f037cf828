"""The lessons, executed on the simulator by one background process while the other tests run.

Executing the twelve lessons cell by cell in Jupyter kernels takes minutes on a CI machine, and the pytest process
would sit idle while a kernel works. So ``conftest.py`` starts this child (after the PTX compile has finished, on
the same spare core), which executes each lesson in a fresh kernel in its own temporary directory and prints one
JSON record per lesson: how long it took, whether its timing cells showed the shipped results, or the error of
the first failing cell. ``tests/test_notebooks.py`` waits for each lesson's record; those tests run last.

When the pytest process has run every test that does not wait for background work, its core is free: ``conftest``
then calls :meth:`LessonRuns.help`, which starts a second child on the same list. Each child claims a lesson before
executing it (creating a file named after it, which fails if the other child has made it), so every lesson runs
exactly once, on whichever core is free first.

With no shipped benchmark in results/ (a fresh fork), a first cell points the results finder at a synthetic file,
so the timing cells run too.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Callable

from background import BackgroundChild, Gate, child_env

#: Seconds one cell may run before the lesson fails.
CELL_TIMEOUT_S = 120
#: How long a test waits for its lesson (all lessons take ~5 minutes on a CI core).
TIMEOUT_S = 1800
#: Said by the timing cells that used a results file (gemm_steps.course.timings).
SHIPPED = "shipped run from"

CHILD = r"""
import importlib.util, json, os, sys, tempfile, time, traceback
from pathlib import Path

import nbformat

repo, stems, synthetic, cell_timeout = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
claims = Path(sys.argv[5])
spec = importlib.util.spec_from_file_location("build_notebooks", repo / "scripts" / "build_notebooks.py")
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)


def emit(**record):
    print(json.dumps(record), flush=True)


def text_outputs(nb):
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            parts += [out.get("text", ""), data.get("text/markdown", ""), data.get("text/plain", "")]
    return "\n".join(parts)


def claim(stem):  # True if this child is the first to take the lesson (the other child, if any, skips it)
    try:
        os.close(os.open(claims / stem.replace("/", "__"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


for stem in stems:
    if not claim(stem):
        continue
    nb = build.read_lesson(repo / "lessons" / f"{stem}.py")
    with tempfile.TemporaryDirectory() as folder:
        if synthetic:
            (Path(folder) / "synthetic.json").write_text(synthetic)
            setup = ("import pathlib, gemm_steps.harness.results_files as results_files\n"
                     f"results_files.RESULTS_DIR = pathlib.Path({folder!r})")
            nb.cells.insert(0, nbformat.v4.new_code_cell(setup))
        start = time.perf_counter()

        def progress(done, total):
            emit(progress=f"lesson {stem}: cell {done}/{total} after {time.perf_counter() - start:.0f} s")

        try:
            build.execute(nb, Path(folder), timeout=cell_timeout, progress=progress)
        except Exception as exc:
            emit(key=stem, error=f"{type(exc).__name__}: {exc}"[-6000:])
            continue
        emit(key=stem, seconds=round(time.perf_counter() - start, 1), shipped=__SHIPPED__ in text_outputs(nb))
""".replace("__SHIPPED__", repr(SHIPPED))


class LessonRuns(BackgroundChild):
    """The lessons executing in the background; :meth:`result` waits for one, :meth:`help` starts a second child."""

    def __init__(self, stems: list[str], repo: Path, synthetic: str = "", say: Callable[[str], None] = print,
                 after: BackgroundChild | None = None):
        self.stems = list(stems)
        self._claims = tempfile.TemporaryDirectory(prefix="lesson-claims-")
        args = [str(repo), json.dumps(self.stems), synthetic, str(CELL_TIMEOUT_S), self._claims.name]
        env = child_env(NUMBA_ENABLE_CUDASIM="1")
        super().__init__("lessons", CHILD, args, env, say=say, after=after)
        self._gate = Gate()
        self.helper = BackgroundChild("lessons-2", CHILD, args, env, say=say, after=self._gate, into=self)

    def help(self) -> None:
        """Start the second child (when this process has a core to spare): it takes the lessons not yet claimed."""
        self._gate.open()

    def result(self, stem: str) -> dict:
        """``{"seconds", "shipped"}`` once the lesson ran, or ``{"error"}`` with its first failing cell."""
        return self.wait_for(stem, TIMEOUT_S)

    def timing(self, since: float) -> str:
        return super().timing(since) + "\n" + self.helper.timing(since)

    def close(self) -> None:
        self.helper.close()
        self._gate.open()  # the helper's thread, if still waiting to start, sees it is closed and ends
        super().close()
        self._claims.cleanup()
