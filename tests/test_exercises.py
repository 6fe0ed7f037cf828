"""The exercises' graders: each passes its solution and fails its stub and planted mistakes, saying what is wrong.

A planted mistake is the solution's own source with one edit (a missing barrier, a missing bounds check, a
transposed index, …), written to a temporary file and graded like a learner's file.
"""

from __future__ import annotations

import inspect
import re

import pytest

from gemm_steps.course import cli, exercises
from gemm_steps.course.race_check import SharedMemoryRace, detect_races

SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="bounds and race checks need the simulator")


def _solution_source(exercise) -> str:
    source = inspect.getsource(exercise.solution())
    return source.replace("from ..toolkit", "from gemm_steps.toolkit")  # a step module, loaded from a file


def _grade_source(exercise, source: str, tmp_path):
    path = tmp_path / f"{exercise.name}.py"
    path.write_text(source)
    return exercises.check(exercise.name, path, say=lambda line: None)


def _planted(exercise, tmp_path, old: str, new: str, count: int = 1):
    source = _solution_source(exercise)
    assert source.count(old) >= count, f"the solution of {exercise.name} no longer contains {old!r}"
    return _grade_source(exercise, source.replace(old, new, count), tmp_path)


@pytest.mark.parametrize("exercise", exercises.EXERCISES, ids=lambda e: e.name)
def test_the_solution_passes(exercise):
    report = exercises.grade(exercise, exercise.solution())
    assert report.passed, report.text()
    assert sum("every element right" in line for line in report.lines) == 2


@pytest.mark.parametrize("exercise", exercises.EXERCISES, ids=lambda e: e.name)
def test_the_stub_fails_and_says_nothing_was_written(exercise):
    report = exercises.check(exercise.name, say=lambda line: None)
    assert not report.passed
    assert "never written" in report.text() or "tile_position on a" in report.text(), report.text()


PLANTED = [
    pytest.param("naive", "if row < m and col < n:", "if True:", "outside a matrix", marks=SIMULATOR_ONLY),
    ("naive", "a[row, k] * b[k, col]", "a[row, k] * b[k, col] * 1.0001", "are wrong"),
    ("coalesced", "for k in range(k_total):", "for k in range(k_total - 1):", "check the index math"),
    ("shared_memory", "acc += a_tile[ty, kk] * b_tile[kk, tx]", "acc += a_tile[ty, kk] * b_tile[tx, kk]",
     "are wrong"),
    pytest.param("register_2d", "            if row < m and col < n:\n                c[row, col]",
                 "            if True:\n                c[row, col]", "outside a matrix", marks=SIMULATOR_ONLY),
    ("persistent", "range(cuda.blockIdx.x, row_tiles * col_tiles, cuda.gridDim.x)",
     "range(cuda.blockIdx.x, cuda.blockIdx.x + 1)", "never written"),
    ("persistent", "row = first_row + tile % tiles_per_group % rows_in_group",
     "row = tile // col_tiles", "grouped order puts it at"),
]


def _planted_id(planted) -> str:
    values = planted.values if hasattr(planted, "values") else planted
    return f"{values[0]}-{values[3].split()[-1]}"


@pytest.mark.parametrize("name, old, new, says", PLANTED, ids=[_planted_id(p) for p in PLANTED])
def test_a_planted_mistake_fails_with_a_useful_message(name, old, new, says, tmp_path):
    report = _planted(exercises.get(name), tmp_path, old, new)
    assert not report.passed
    assert says in report.text(), report.text()


@SIMULATOR_ONLY
@pytest.mark.parametrize("name, barrier", [("shared_memory", 0), ("shared_memory", 1), ("register_2d", 0)])
def test_a_missing_barrier_fails_as_a_race(name, barrier, tmp_path):
    exercise = exercises.get(name)
    source = _solution_source(exercise)
    barriers = [m.start() for m in re.finditer(r"\n\s*cuda\.syncthreads\(\)[^\n]*", source)]
    assert len(barriers) >= 2
    start = barriers[barrier]
    end = source.index("\n", start + 1)
    report = _grade_source(exercise, source[:start] + source[end:], tmp_path)
    assert not report.passed
    assert "shared-memory race" in report.text() and "syncthreads" in report.text(), report.text()


@SIMULATOR_ONLY
def test_the_race_check_is_quiet_for_a_correct_kernel_and_restores_the_simulator():
    import numpy as np
    from numba.cuda.simulator import kernelapi

    from gemm_steps.course import exercise_solutions

    before = kernelapi.FakeCUDAShared.array
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 37), dtype=np.float32), rng.standard_normal((37, 18), dtype=np.float32)
    c = np.full((20, 18), np.nan, dtype=np.float32)
    with detect_races():
        assert kernelapi.FakeCUDAShared.array is not before
        exercises.get("persistent").launch(exercise_solutions.persistent_kernel, a, b, c)  # 3 tile loops, 2 syncs
    assert exercises.compare(c, a, b, (16, 16)) is None
    assert kernelapi.FakeCUDAShared.array is before
    assert issubclass(SharedMemoryRace, RuntimeError)


def test_a_file_that_does_not_import_or_lacks_the_kernel_is_named(tmp_path):
    broken = tmp_path / "naive.py"
    broken.write_text("import gemm_steps\ndef (:\n")
    assert "does not import: SyntaxError" in exercises.check("naive", broken, say=lambda s: None).text()
    broken.write_text("import gemm_steps\n")
    assert "naive_kernel is not defined" in exercises.check("naive", broken, say=lambda s: None).text()
    assert "does not exist" in exercises.check("naive", tmp_path / "nope.py", say=lambda s: None).text()


def test_the_command_lists_and_grades(tmp_path, capsys):
    assert cli.main(["exercise", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [e.name for e in exercises.EXERCISES]
    assert cli.main(["exercise", "check", "nope"]) == 2
    assert "no exercise 'nope'" in capsys.readouterr().err
    solution = tmp_path / "mine.py"
    solution.write_text(_solution_source(exercises.get("coalesced")))
    assert cli.main(["exercise", "check", "coalesced", "--file", str(solution)]) == 0
    assert "exercise coalesced: passed" in capsys.readouterr().out
    assert cli.main(["exercise", "check", "coalesced"]) == 1  # the stub


def test_every_exercise_has_a_stub_that_names_its_command():
    for exercise in exercises.EXERCISES:
        text = exercise.file.read_text()
        assert f"gemm-steps exercise check {exercise.name}" in text
        assert f"def {exercise.kernel}(" in text
