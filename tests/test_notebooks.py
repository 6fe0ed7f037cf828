"""Lessons and notebooks: paired, executed, runnable on the simulator, and showing real code and real provenance.

* every ``lessons/NN_*.py`` has a ``notebooks/NN_*.ipynb`` with exactly its cells (the notebook cannot drift);
* every lesson runs start to finish on Numba's CUDA simulator (each in a fresh Jupyter kernel, in a temporary
  directory; these tests run early, being long: conftest.py);
* the committed notebooks were executed, have no error outputs, say where their timings come from, and no lesson
  pastes a kernel instead of showing the package's source;
* the results finder (:mod:`gemm_steps.harness.results_files`) and the lesson helpers
  (:mod:`gemm_steps.course.lesson`) pick the right results file and never invent a number.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from gemm_steps import steps
from gemm_steps.course import lesson
from gemm_steps.harness import bench, results_files
from helpers import synthetic_results

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("build_notebooks", REPO / "scripts" / "build_notebooks.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

LESSONS = build.lesson_paths()
#: Kernel code belongs in gemm_steps/steps/; a lesson shows it with lesson.show_source, never a copy.
PASTED_KERNEL = re.compile(r"@kernel|cuda\.jit|cuda\.(threadIdx|blockIdx|grid\(|syncthreads|shared\.array)")


def _ids(paths):
    return [build.name(p) for p in paths]


MAIN_LESSONS = [p for p in LESSONS if p.parent == build.LESSONS]
DEEP_DIVES = [p for p in LESSONS if p.parent == build.DEEP_DIVES]


def _text_outputs(nb) -> str:
    """All text a notebook's outputs show (streams, Markdown, plain text)."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            data = out.get("data", {})
            parts += [data.get("text/markdown", ""), data.get("text/plain", "")]
    return "\n".join(parts)


# -- (a) a notebook is its lesson plus outputs -----------------------------------------------------------------------
def test_there_is_a_lesson_per_step_and_lesson_0_comes_first():
    numbers = [int(p.stem[:2]) for p in MAIN_LESSONS]
    assert numbers[0] == 0 and numbers == sorted(numbers), "lessons are numbered 00, 01, … in order"
    for step in steps():
        assert [p.stem for p in MAIN_LESSONS if int(p.stem[:2]) == step.number] == [f"{step.number:02d}_{step.name}"]


@pytest.mark.parametrize("path", DEEP_DIVES, ids=_ids(DEEP_DIVES))
def test_a_deep_dive_is_linked_from_its_lesson_and_links_back(path):
    lesson_number = path.stem[:2]
    (lesson_path,) = [p for p in MAIN_LESSONS if p.stem[:2] == lesson_number]
    assert f"deep_dives/{path.stem}" in lesson_path.read_text(), f"{lesson_path.name} does not link to {path.name}"
    assert lesson_path.stem in path.read_text(), f"{path.name} does not name its lesson, {lesson_path.stem}"


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_notebook_has_exactly_the_lessons_cells(path):
    diff = build.differences(path)
    assert not diff, f"notebook differs from its lesson; run python scripts/build_notebooks.py\n{diff}"


def test_every_notebook_has_a_lesson():
    orphans = build.notebook_names() - {build.name(p) for p in LESSONS}
    assert not orphans, f"notebooks without a lesson: {sorted(orphans)}"


# -- (c) committed notebooks were executed, and show the package's code ----------------------------------------------
@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_committed_notebook_was_executed_cleanly(path):
    nb_path = build.notebook_path(path)
    assert not build.unexecuted(nb_path), f"{nb_path.name} has unexecuted code cells"
    nb = nbformat.read(nb_path, as_version=4)
    outputs = [out for cell in nb.cells for out in cell.get("outputs", [])]
    assert outputs, f"{nb_path.name} has no outputs"
    assert not [out for out in outputs if out.get("output_type") == "error"], f"{nb_path.name} has an error output"


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_committed_notebook_says_where_its_timings_come_from(path):
    text = _text_outputs(nbformat.read(build.notebook_path(path), as_version=4))
    cited = re.findall(r"shipped run from `([^`]+)`", text)
    for cited_path in cited:
        assert (REPO / cited_path).exists(), f"{path.stem} cites {cited_path}, which is not in the repository"
    if "measure_or_load" not in path.read_text():
        return
    assert cited or "Measured now on" in text or lesson.NO_RESULTS in text, f"{path.stem} does not say"
    if lesson.load_results(steps=()) is not None:
        assert lesson.NO_RESULTS not in text, (
            f"{path.stem} was built before the shipped results arrived; run python scripts/build_notebooks.py")


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_lessons_show_kernels_rather_than_paste_them(path):
    for kind, source in build.cells(build.read_lesson(path)):
        if kind == "code":
            assert not PASTED_KERNEL.search(source), f"{path.stem} has kernel code in a cell:\n{source}"


# -- (b) every lesson runs start to finish on the simulator ----------------------------------------------------------
#: Seconds one cell may run before the lesson fails.
CELL_TIMEOUT_S = 120
#: Said by the timing cells that used a results file (gemm_steps.course.timings).
SHIPPED = "shipped run from"


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_lesson_runs_on_the_simulator(path, tmp_path, monkeypatch):
    """The lesson, executed cell by cell in a fresh kernel on the simulator, against the shipped results if there are
    any, else a synthetic file (a first cell points the results finder at it), so the timing cells run too."""
    nb = build.read_lesson(path)
    if lesson.load_results(steps=()) is None:  # a fresh fork: no shipped benchmark in results/
        (tmp_path / "synthetic.json").write_text(json.dumps(synthetic_results()))
        nb.cells.insert(0, nbformat.v4.new_code_cell(
            "import pathlib, gemm_steps.harness.results_files as results_files\n"
            f"results_files.RESULTS_DIR = pathlib.Path({str(tmp_path)!r})"))
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")  # the kernel's backend, on a GPU machine too
    # As a learner runs it: in the notebook's own folder, gemm_steps from the installed package, the checkout not on
    # PYTHONPATH (build.execute), so `experiments/` and `scripts/` cannot be imported.
    folder = build.notebook_path(path).parent
    before = _files_of(folder)
    build.execute(nb, folder, timeout=CELL_TIMEOUT_S)  # raises with the first failing cell's error
    assert _files_of(folder) <= before, f"{path.stem} left files in {folder.name}/: {_files_of(folder) - before}"
    if "measure_or_load" in path.read_text():
        assert SHIPPED in _text_outputs(nb), "the timing cells did not run against the results file"


def _files_of(folder: Path) -> set[str]:
    """The files a notebook run could leave in its folder (notebooks aside: another run may be rebuilding them)."""
    return {p.name for p in folder.iterdir() if p.suffix != ".ipynb"}


#: A module path in a string, as handed to importlib or lesson_17.ptxas_reports ("experiments.kernels.x:ptx_kernels").
_MODULE_PATH = re.compile(r"^(\w+)(\.\w+)*(:\w+)?$")


def _imported_repo_folders(source: str, where: str) -> list[str]:
    """Every import of, or module path string into, a folder that only a checkout has (experiments, scripts, tests,
    lessons): a learner's installed course has none of them."""
    repo_only = {"experiments", "scripts", "tests", "lessons"}
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_PATH.match(node.value) \
                and "." in node.value:
            names = [node.value]
        found += [f"{where}:{node.lineno}: {name}" for name in names if name.split(".")[0] in repo_only]
    return found


def test_nothing_a_learner_runs_imports_the_checkouts_own_folders():
    """Lessons, deep dives, the notebooks' code cells and the package import only the package (and what it needs):
    deep dive 17 once asked for ``experiments.kernels.warpgroup_specialized`` and failed on a learner's machine."""
    found = []
    for path in LESSONS:
        for i, (kind, source) in enumerate(build.cells(build.read_lesson(path))):
            if kind == "code":
                found += _imported_repo_folders(ipython_free(source), f"{build.name(path)} cell {i}")
    for nb_path in sorted(build.NOTEBOOKS.rglob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(nb_path, as_version=4).cells):
            if cell.cell_type == "code":
                found += _imported_repo_folders(ipython_free(cell.source), f"{nb_path.name} cell {i}")
    package = REPO / "gemm_steps"
    for path in sorted(package.rglob("*.py")):
        found += _imported_repo_folders(path.read_text(), str(path.relative_to(REPO)))
    assert not found, "\n".join(found)


def test_the_import_check_can_fail():
    source = ('import experiments.kernels\nfrom scripts import build_notebooks\n'
              'lesson_17.ptxas_reports(["step:x", "experiments.kernels.warpgroup_specialized:ptx_kernels"])\n'
              'from gemm_steps.course import lesson_17\nprint("experiments/results is data")\n')
    assert [line.split(": ")[1] for line in _imported_repo_folders(source, "cell")] == [
        "experiments.kernels", "scripts", "experiments.kernels.warpgroup_specialized:ptx_kernels"]


def ipython_free(source: str) -> str:
    """A cell's source with IPython's magics and shell lines (``%time``, ``!ls``) blanked, so ``ast`` can read it."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def test_a_notebooks_kernel_does_not_see_the_checkout(monkeypatch, tmp_path):
    """build.execute's kernel: the checkout's own PYTHONPATH entry is dropped, others kept; gemm_steps is this
    checkout's installed package."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(tmp_path)]))
    assert build.kernel_environment()["PYTHONPATH"] == str(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO) + "/")
    env = build.kernel_environment()
    assert "PYTHONPATH" not in env
    assert build.installed_package(env, tmp_path) == REPO / "gemm_steps"


# -- the results finder and the helpers -----------------------------------------------------------------------------
def _write(path: Path, document) -> None:
    path.write_text(json.dumps(document))


def test_newest_benchmark_picks_the_newest_gpu_run_of_the_steps(tmp_path):
    assert results_files.newest_benchmark(folder=tmp_path) is None
    _write(tmp_path / "old.json", synthetic_results(date="2026-01-01T00:00:00+00:00"))
    _write(tmp_path / "new.json", synthetic_results(date="2026-02-01T00:00:00+00:00"))
    _write(tmp_path / "newest_naive_only.json", synthetic_results(date="2026-03-01T00:00:00+00:00", names=["naive"]))
    simulated = synthetic_results(date="2026-04-01T00:00:00+00:00")
    simulated["environment"]["simulator"] = True
    _write(tmp_path / "simulated.json", simulated)
    (tmp_path / "tuned.json").write_text("{}")  # not a results document
    _write(tmp_path / "tuning-naive.json",  # a tuning sweep: candidates of one step, not the course
           synthetic_results(date="2026-05-01T00:00:00+00:00", names=["naive#1", "naive#2"]))
    experiment = synthetic_results(date="2026-06-01T00:00:00+00:00")  # the steps and a variant, in one run
    experiment["records"].append({**experiment["records"][1], "step": "naive_variant"})
    _write(tmp_path / "experiment-naive.json", experiment)
    no_cublas = synthetic_results(date="2026-07-01T00:00:00+00:00")
    no_cublas["records"] = [r for r in no_cublas["records"] if r["step"] != "cublas"]
    _write(tmp_path / "no-cublas.json", no_cublas)

    def newest(names):
        found = results_files.newest_benchmark(names, folder=tmp_path)
        return found and found[0].name

    assert newest([]) == newest(["naive"]) == "newest_naive_only.json"
    assert newest(["naive", "coalesced"]) == "new.json"
    found = lesson.load_results(["naive", "coalesced"], folder=tmp_path)
    assert Path(found["path"]).name == "new.json" and found["records"]
    (tmp_path / "new.json").unlink()
    (tmp_path / "old.json").unlink()
    assert newest(["coalesced"]) is None


def test_the_command_and_the_lessons_read_the_same_benchmark():
    from gemm_steps.course import cli

    shipped = cli.newest_shipped_results()
    loaded = lesson.load_results()
    assert (shipped is None) == (loaded is None)
    if shipped is not None:
        assert str(shipped[0]) == loaded["path"]


def test_tuning_and_experiments_are_found_by_name_in_both_folders(tmp_path, monkeypatch):
    results, experiments = tmp_path / "results", tmp_path / "experiments" / "results"
    experiments.mkdir(parents=True)
    results.mkdir()
    monkeypatch.setattr(results_files, "RESULTS_DIR", results)
    monkeypatch.setattr(results_files, "EXPERIMENT_RESULTS_DIR", experiments)
    assert results_files.newest_matching("experiment-x-*.json") is None
    _write(results / "tuning-naive-gpu.json", synthetic_results(names=["naive#1"]))
    _write(experiments / "experiment-x-old.json", synthetic_results(date="2026-01-01T00:00:00+00:00"))
    _write(results / "experiment-x-new.json", synthetic_results(date="2026-02-01T00:00:00+00:00"))
    simulated = synthetic_results(date="2026-03-01T00:00:00+00:00")
    simulated["environment"]["simulator"] = True
    _write(experiments / "experiment-x-simulated.json", simulated)
    (experiments / "ncu-x.txt").write_text("a report")

    assert results_files.newest_matching("tuning-naive-*.json")[0].name == "tuning-naive-gpu.json"
    assert results_files.newest_matching("experiment-x-*.json")[0].name == "experiment-x-new.json"
    (results / "experiment-x-new.json").unlink()
    assert results_files.newest_matching("experiment-x-*.json")[0].name == "experiment-x-old.json"
    assert results_files.find("ncu-x.txt") == experiments / "ncu-x.txt"
    assert results_files.find("ncu-y.txt") is None
    assert results_files.newest_benchmark() is None  # a tuning sweep is not the course benchmark


def test_measure_or_load_says_where_the_numbers_come_from(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(results_files, "RESULTS_DIR", tmp_path)
    assert lesson.measure_or_load(["naive"], [64], measure=False) is None
    assert lesson.NO_RESULTS in capsys.readouterr().out

    _write(tmp_path / "run.json", synthetic_results())
    loaded = lesson.measure_or_load(["naive"], [64], measure=False)
    assert {r["step"] for r in loaded["records"]} == {"naive", "cublas"}
    assert "No GPU here: these timings are the shipped run from" in capsys.readouterr().out
    assert "synthetic test data" in loaded["provenance"] and "2026-01-01" in loaded["provenance"]

    monkeypatch.setattr(bench, "run_benchmark", lambda step_list, shapes, **kw: synthetic_results())
    measured = lesson.measure_or_load(["naive"], [64], measure=True)
    assert measured["provenance"].startswith("Measured now on NVIDIA H200 (synthetic test data)")


def test_timing_table_shows_measured_numbers_and_nothing_else():
    results = synthetic_results(names=["naive", "coalesced"])
    table = lesson.timing_table(results, ["naive", "coalesced"])
    naive, coalesced = (lesson.record(results, s, 1024) for s in ("naive", "coalesced"))
    assert table.startswith("**1024³**")
    assert f"| 2 coalesced | {coalesced['median_ms']:.3f} | {coalesced['tflops']:.2f} |" in table
    assert f"{naive['median_ms'] / coalesced['median_ms']:.2f}×" in table
    assert "| cuBLAS |" in table
    assert "| 3 shared_memory | — | — | — | — |" in lesson.timing_table(results, ["naive", "shared_memory"], 1024)
    assert lesson.NO_RESULTS in lesson.timing_table(None, ["naive"])


def test_a_kernel_diff_shows_only_what_changed():
    diff = lesson.kernel_diff("double_buffered", "warp_tiling")
    assert diff.startswith("--- step 8: double_buffered\n+++ step 9: warp_tiling")
    assert "+    lane = tid % 32" in diff
    assert len(diff.splitlines()) < len(steps()[8].kernel_source().splitlines())
