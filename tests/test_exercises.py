"""The exercises' graders: each passes its solution and valid variants, and fails its stub and planted mistakes —
wrong numbers, and right numbers from a kernel that does not do what the exercise teaches — saying what is wrong.

A planted mistake is the solution's own source with one edit (a missing barrier, a missing bounds check, a
transposed index, …), or a whole file in tests/exercise_cases/, written to a temporary file and graded like a
learner's file. Shapes are the graders' own (small), and most planted cases fail at their first check.
"""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path

import pytest

from gemm_steps import get_step
from gemm_steps.course import cli, exercises
from gemm_steps.course.race_check import SharedMemoryRace, detect_races

SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="bounds and race checks need the simulator")
CASES = Path(__file__).parent / "exercise_cases"


@functools.lru_cache(maxsize=None)
def _needs_nvvm():
    from gemm_steps.harness import gpu_mode

    try:
        return gpu_mode.call("gemm_steps.harness.ptx:nvvm_version") is None
    except Exception:
        return True


NEEDS_NVVM = pytest.mark.skipif(_needs_nvvm(), reason="compiling for a GPU needs NVVM (numba-cuda[cu13])")


def _solution_source(exercise) -> str:
    source = inspect.getsource(exercise.solution())
    return source.replace("from ..toolkit", "from gemm_steps.toolkit")  # a step module, loaded from a file


def _step_source(step: str, kernel: str, as_kernel: str) -> str:
    """A shipped step's source with its kernel renamed (another step's kernel, submitted for this exercise)."""
    source = inspect.getsource(get_step(step).module).replace("from ..toolkit", "from gemm_steps.toolkit")
    return re.sub(rf"\b{kernel}\b", as_kernel, source)


def _grade_source(exercise, source: str, tmp_path, **options):
    path = tmp_path / f"{exercise.name}.py"
    path.write_text(source)
    return exercises.check(exercise.name, path, say=lambda line: None, **options)


def _planted(exercise, tmp_path, old: str, new: str, count: int = 1, **options):
    source = _solution_source(exercise)
    assert source.count(old) >= count, f"the solution of {exercise.name} no longer contains {old!r}"
    return _grade_source(exercise, source.replace(old, new, count), tmp_path, **options)


@pytest.mark.parametrize("exercise", exercises.EXERCISES, ids=lambda e: e.name)
def test_the_solution_passes(exercise):
    report = exercises.grade(exercise, exercise.solution())
    assert report.passed, report.text()
    if exercise.grader is None:  # (an exercise with its own grader says what it checked its own way: its tests)
        assert sum("every element right" in line for line in report.lines) == 2
    if exercises.SIMULATOR and not _needs_nvvm():
        assert "compiles for a GPU" in report.text(), report.text()


@pytest.mark.parametrize("exercise", exercises.EXERCISES, ids=lambda e: e.name)
def test_the_stub_fails_and_says_nothing_was_written(exercise):
    report = exercises.check(exercise.name, say=lambda line: None)
    assert not report.passed
    text = report.text()
    if exercise.grader is None:  # (an exercise with its own grader: its stub's message is in its tests)
        assert "never written" in text or "tile_position on a" in text or "never reads shared memory" in text, text


def test_the_shapes_make_k_partial_and_the_grid_vary():
    for exercise in exercises.EXERCISES:
        first, second = exercises.cases(exercise)
        if exercise.k_tile is not None:  # less than one k-tile, then over one and not a multiple
            assert first.k < exercise.k_tile < second.k and second.k % exercise.k_tile, (exercise.name, first, second)
        for case in (first, second):
            assert case.m % exercise.tile[0] and case.n % exercise.tile[1]
    first, second = exercises.cases(exercises.get("persistent"))
    assert first.blocks != second.blocks and 3 not in (first.blocks, second.blocks)


# -- wrong numbers, and the messages that point at the cause ----------------------------------------------------------
PLANTED = [
    pytest.param("naive", "if row < m and col < n:", "if True:", "outside a matrix", marks=SIMULATOR_ONLY,
                 id="naive-bounds"),
    pytest.param("naive", "a[row, k] * b[k, col]", "a[row, k] * b[k, col] * 1.0001", "are wrong", id="naive-wrong"),
    pytest.param("coalesced", "for k in range(k_total):", "for k in range(k_total - 1):", "check the index math",
                 id="coalesced-short-k"),
    pytest.param("register_2d", "            if row < m and col < n:\n                c[row, col]",
                 "            if True:\n                c[row, col]", "outside a matrix", marks=SIMULATOR_ONLY,
                 id="register_2d-bounds"),
    pytest.param("persistent", "range(cuda.blockIdx.x, row_tiles * col_tiles, cuda.gridDim.x)",
                 "range(cuda.blockIdx.x, cuda.blockIdx.x + 1)", "whole tiles were never computed", id="persistent-once"),
    pytest.param("persistent", "row = first_row + tile % tiles_per_group % rows_in_group",
                 "row = tile // col_tiles", "grouped order puts it at", id="persistent-order"),
    # The sum starts from C's old value: the result is NaN, and the message says why, not "never written".
    pytest.param("naive", "acc = float32(0.0)", "acc = c[row, col]", "read c[", marks=SIMULATOR_ONLY,
                 id="naive-acc-from-c"),
    # acc not reset between the persistent loop's tiles: not blamed on the zero-fill of edge tiles.
    # A hard-coded stride of 3 (the grid had 3 blocks once): the grid now changes between shapes.
    pytest.param("persistent", "row_tiles * col_tiles, cuda.gridDim.x)", "row_tiles * col_tiles, 3)",
                 "blocks this time (it varies)", id="persistent-stride-3"),
    # A-tile load with no zero-fill past K: K < one k-tile, so the tile's unwritten slots are read (NaN here).
    pytest.param("register_2d", "            a_tile[tile_row, tile_col] = a[row, col] if row < m and col < k_total "
                 "else float32(0.0)", "            if row < m and col < k_total:\n"
                 "                a_tile[tile_row, tile_col] = a[row, col]", "before any thread of its block wrote it",
                 marks=SIMULATOR_ONLY, id="register_2d-no-zero-fill"),
    # The accumulator (a local array) never zeroed: local arrays start as NaN on the grader's simulator.
    pytest.param("register_2d", "            acc[i, j] = 0.0", "            pass", "written as NaN",
                 marks=SIMULATOR_ONLY, id="register_2d-acc-not-zeroed"),
    # Two shared arrays made on one line: the simulator would alias them; the message says so.
    pytest.param("persistent", "    a_tile = cuda.shared.array((TILE, TILE), float32)\n"
                 "    b_tile = cuda.shared.array((TILE, TILE), float32)",
                 "    a_tile, b_tile = cuda.shared.array((TILE, TILE), float32), cuda.shared.array((TILE, TILE), "
                 "float32)", "two shared arrays on one line", marks=SIMULATOR_ONLY, id="persistent-one-line"),
]


@pytest.mark.parametrize("name, old, new, says", PLANTED)
def test_a_planted_mistake_fails_with_a_useful_message(name, old, new, says, tmp_path):
    report = _planted(exercises.get(name), tmp_path, old, new)
    assert not report.passed
    assert says in report.text(), report.text()


@SIMULATOR_ONLY
def test_acc_not_reset_between_tiles_is_not_blamed_on_the_edges(tmp_path):
    exercise = exercises.get("persistent")
    source = _solution_source(exercise)
    loop = "    for tile in range(cuda.blockIdx.x, row_tiles * col_tiles, cuda.gridDim.x):\n"
    assert loop in source and "        acc = float32(0.0)\n" in source
    source = source.replace("        acc = float32(0.0)\n", "").replace(loop, "    acc = float32(0.0)\n" + loop)
    report = _grade_source(exercise, source, tmp_path)
    assert not report.passed
    assert "fresh sum (acc = 0 inside the loop over tiles" in report.text(), report.text()
    assert "zeros in the tile" not in report.text() and "partial tiles" not in report.text(), report.text()


@SIMULATOR_ONLY
@pytest.mark.parametrize("name, barrier", [("shared_memory", 0), ("shared_memory", 1), ("register_2d", 0)])
def test_a_missing_barrier_fails_as_a_race_naming_both_lines(name, barrier, tmp_path):
    exercise = exercises.get(name)
    source = _solution_source(exercise)
    barriers = [m.start() for m in re.finditer(r"\n\s*cuda\.syncthreads\(\)[^\n]*", source)]
    assert len(barriers) >= 2
    start = barriers[barrier]
    end = source.index("\n", start + 1)
    report = _grade_source(exercise, source[:start] + source[end:], tmp_path)
    text = report.text()
    assert not report.passed
    assert "shared-memory race" in text and "syncthreads" in text, text
    # The two conflicting accesses, by their source lines: one copies into a tile, the other reads it to compute.
    lines = re.findall(r"line (\d+) of \w+\.py: (.*)", text)
    assert len(lines) == 2, text
    code = [statement for _, statement in lines]
    assert any(re.match(r"[ab]_tile\[[^\]]*\] = ", c) for c in code), text
    assert any(re.match(r"[ab]_frag\[[ij]\] = |acc \+= ", c) for c in code), text
    graded = (source[:start] + source[end:]).splitlines()
    for number, statement in lines:  # each line number is that statement's line in the graded file
        assert graded[int(number) - 1].strip() == statement, (number, statement)
    # Without the second barrier the two lines have a syncthreads between them in the text: the message says the race
    # is between passes of the loop, and after how many barriers (issue 39: it said "no syncthreads between the two")
    across = name == "shared_memory" and barrier == 1
    assert ("different passes of the loop" in text and "second cuda.syncthreads() at the end of each pass" in text) == across, text
    assert ("no cuda.syncthreads() between the two" in text) != across, text
    assert re.search(r"after \d+ cuda\.syncthreads\(\) of the block|before the first cuda\.syncthreads\(\)", text), text


@SIMULATOR_ONLY
def test_a_launch_that_never_ends_is_stopped(tmp_path):
    report = _planted(exercises.get("naive"), tmp_path, "for k in range(k_total):\n            acc += a[row, k] * b[k, col]",
                      "k = 0\n        while k < k_total:\n            acc += a[row, k] * b[k, col]",
                      time_limit=2)
    assert not report.passed
    assert "did not finish within 2 s" in report.text(), report.text()


def test_a_syntax_error_names_the_learners_file_and_line(tmp_path):
    broken = tmp_path / "naive.py"
    broken.write_text("import gemm_steps\n\ndef f(:\n    pass\n")
    text = exercises.check("naive", broken, say=lambda s: None).text()
    assert "naive.py, line 3: SyntaxError" in text and "def f(:" in text and "importlib" not in text, text
    broken.write_text("import gemm_steps\nx = 1\nraise ValueError('no')\n")
    text = exercises.check("naive", broken, say=lambda s: None).text()
    assert "naive.py does not import, line 3: raise ValueError('no')" in text and "ValueError: no" in text, text
    broken.write_text("import gemm_steps\n")
    assert "naive_kernel is not defined" in exercises.check("naive", broken, say=lambda s: None).text()
    assert "does not exist" in exercises.check("naive", tmp_path / "nope.py", say=lambda s: None).text()


# -- right numbers, wrong idea -----------------------------------------------------------------------------------------
@SIMULATOR_ONLY
def test_coalesced_with_step_1s_thread_mapping_fails(tmp_path):
    source = _step_source("naive", "naive_kernel", "coalesced_kernel")
    report = _grade_source(exercises.get("coalesced"), source, tmp_path)
    assert not report.passed
    assert "step 1's thread mapping" in report.text() and "every element right" not in report.text(), report.text()


@NEEDS_NVVM
@pytest.mark.parametrize("name", ["shared_memory", "register_2d"])
def test_step_2s_kernel_fails_an_exercise_about_shared_memory(name, tmp_path):
    exercise = exercises.get(name)
    report = _grade_source(exercise, _step_source("coalesced", "coalesced_kernel", exercise.kernel), tmp_path)
    assert not report.passed
    assert "never reads shared memory" in report.text(), report.text()


@SIMULATOR_ONLY
def test_shared_tiles_that_are_not_used_fail_the_reuse_check(tmp_path):
    # Shared memory is read (so the PTX check passes) but every multiply-add reads a and b from global memory.
    report = _planted(exercises.get("persistent"), tmp_path, "acc += a_tile[ty, kk] * b_tile[kk, tx]",
                      "acc += a_tile[ty, kk] * float32(0.0) + (a[row, k0 + kk] * b[k0 + kk, col] "
                      "if row < m and col < n and k0 + kk < k_total else float32(0.0))")
    assert not report.passed
    assert "read from global memory" in report.text() and "still computes from a and b" in report.text(), \
        report.text()


@SIMULATOR_ONLY
@pytest.mark.parametrize("old, new, says", [
    # tile_position written (and right) but unused: tiles in row-major order.
    ("tile_row, tile_col = tile_position(tile, row_tiles, col_tiles)",
     "tile_row, tile_col = tile // col_tiles, tile % col_tiles", "in grouped order, with 2 blocks"),
    # A stride of gridDim.x − 1: every tile computed, some twice.
    ("row_tiles * col_tiles, cuda.gridDim.x)", "row_tiles * col_tiles, cuda.gridDim.x - 1)",
     "computed more than once"),
    # Rows dealt out across tiles (row = ty · row_tiles + tile_row): every element once, but no block owns a tile.
    ("row = tile_row * TILE + ty", "row = ty * row_tiles + tile_row", "computed by several blocks"),
], ids=["tile_position-unused", "stride-gridDim-1", "rows-dealt-out"])
def test_a_persistent_loop_with_right_numbers_and_the_wrong_tiles_fails(old, new, says, tmp_path):
    report = _planted(exercises.get("persistent"), tmp_path, old, new)
    assert not report.passed
    assert says in report.text(), report.text()


@NEEDS_NVVM
def test_a_plain_row_loop_fails_the_persistent_exercise(tmp_path):
    report = _grade_source(exercises.get("persistent"), (CASES / "persistent_row_loop.py").read_text(), tmp_path)
    assert not report.passed
    assert "never reads shared memory" in report.text(), report.text()


# -- code that cannot run on a GPU -------------------------------------------------------------------------------------
@NEEDS_NVVM
@pytest.mark.parametrize("case, name, says, code", [
    ("naive_numpy.py", "naive", "NumPy on whole arrays", "np.dot(a[row, :], b[:, col])"),
    ("naive_generator.py", "naive", "generator expression", "for k in range(k_total))"),
    ("shared_memory_variable_shape.py", "shared_memory", "cuda.shared.array needs a shape known", "((size, size)"),
])
def test_a_kernel_that_cannot_compile_for_a_gpu_fails(case, name, says, code, tmp_path):
    source = (CASES / case).read_text()
    report = _grade_source(exercises.get(name), source, tmp_path)
    text = report.text()
    assert not report.passed
    assert "does not compile for a GPU" in text and says in text, text
    line = next(number for number, text in enumerate(source.splitlines(), 1) if code in text)
    assert f"line {line}: " in text and code in text, text  # the learner's line, with its code


@NEEDS_NVVM
def test_a_device_function_without_its_decorator_fails(tmp_path):
    report = _planted(exercises.get("persistent"), tmp_path, "@cuda.jit(device=True)\ndef tile_position",
                      "def tile_position")
    assert not report.passed
    assert "does not compile for a GPU" in report.text() and "@cuda.jit(device=True)" in report.text(), report.text()


def test_without_nvvm_the_compile_check_says_skipped_not_passed(tmp_path, monkeypatch):
    monkeypatch.setattr(exercises, "_compile",
                        lambda exercise, module, facts=None: {"unavailable": "NVVM is not installed"})
    report = exercises.check("coalesced", say=lambda line: None)  # the stub: fails at once on the simulator
    assert "  skip  compiling for a GPU: not checked here — NVVM is not installed" in report.text(), report.text()
    assert "compiles for a GPU" not in report.text()


def test_a_host_object_is_not_a_kernel(tmp_path):
    report = _grade_source(exercises.get("naive"), (CASES / "naive_host_object.py").read_text(), tmp_path)
    assert not report.passed
    assert "naive_kernel is not a CUDA kernel" in report.text(), report.text()


# -- valid variants pass -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, source", [
    # Another coalesced thread mapping: a warp's columns reversed.
    ("coalesced", lambda: _solution_source(exercises.get("coalesced")).replace(
        "col = cuda.blockIdx.x * BLOCK_SIZE + cuda.threadIdx.x", "col = cuda.blockIdx.x * BLOCK_SIZE + 31 - "
        "cuda.threadIdx.x")),
    # A while loop over tiles, padded shared tiles, if/else copies.
    ("persistent", lambda: (CASES / "persistent_while_padded.py").read_text()),
], ids=["coalesced-reversed-columns", "persistent-while-padded"])
def test_a_valid_variant_passes(name, source, tmp_path):
    report = _grade_source(exercises.get(name), source(), tmp_path)
    assert report.passed, report.text()


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
    assert exercises.compare(c, a, b, (16, 16), stored=~np.isnan(c)) is None
    assert kernelapi.FakeCUDAShared.array is before
    assert issubclass(SharedMemoryRace, RuntimeError)


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
    assert "b + 3" not in exercises.get("persistent").file.read_text()  # the grid is not always 3 blocks


def test_the_list_says_which_lesson_each_exercise_belongs_to(capsys):
    """``gemm-steps exercise list``: after the name, the lesson (its file in lessons/ and notebooks/), the same lesson
    the exercises README's table links to."""
    repo = Path(__file__).resolve().parents[1]
    readme = (repo / "exercises" / "README.md").read_text()
    assert cli.main(["exercise", "list"]) == 0
    lines = dict(zip((e.name for e in exercises.EXERCISES), capsys.readouterr().out.splitlines()))
    for exercise in exercises.EXERCISES:
        row = re.search(rf"^\| `{exercise.name}` \|.*\(\.\./lessons/(\w+)\.py\)", readme, re.M)
        assert row, f"the exercises README's table has no row linking {exercise.name} to its lesson"
        lesson = row.group(1)
        assert (repo / "lessons" / f"{lesson}.py").is_file() and (repo / "notebooks" / f"{lesson}.ipynb").is_file()
        assert lines[exercise.name].split()[1:3] == ["lesson", lesson], lines[exercise.name]


def test_grading_leaves_no_process_running_and_no_file_open(tmp_path):
    """The GPU-mode worker is stopped at exit, its pipes and log closed: once Python's exit found the grader's compile
    helper running ("ResourceWarning: subprocess … is still running", and three unclosed files) at the end of every
    test run."""
    import subprocess
    import sys

    solution = tmp_path / "naive.py"
    solution.write_text(_solution_source(exercises.get("naive")))
    code = ("from gemm_steps.course import exercises\n"
            f"print(exercises.check('naive', {str(solution)!r}, say=lambda line: None).passed)")
    done = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", code], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stdout + done.stderr
    assert "ResourceWarning" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


@SIMULATOR_ONLY
def test_an_early_return_before_a_barrier_is_named_as_such(tmp_path):
    """Threads outside C that return before the loop's barriers: the grader names the early return and the barrier
    the thread never reached (issue 39: it used to give the hint about zero-padding the tiles)."""
    exercise = exercises.get("shared_memory")
    source = _solution_source(exercise)
    start = "    acc = float32(0.0)\n"
    assert start in source
    source = source.replace(start, "    if row >= m or col >= n:\n        return\n" + start, 1)
    text = _grade_source(exercise, source, tmp_path).text()
    assert "returned before the cuda.syncthreads() at" in text, text
    line = re.search(r"line (\d+) of \w+\.py: (.*)", text)
    assert line and line.group(2).startswith("cuda.syncthreads()"), text
    assert source.splitlines()[int(line.group(1)) - 1].strip() == line.group(2), text
    assert "Does every element the loop reads get written first" not in text, text


@SIMULATOR_ONLY
def test_the_persistent_stub_hears_about_tile_position_first(tmp_path):
    """The stub says tile_position is checked first: the empty stub's first failure is about tile_position (it was
    about shared memory, from the compile check)."""
    exercise = exercises.get("persistent")
    report = exercises.grade(exercise, exercises.load(exercises.EXERCISES_DIR / "persistent.py"))
    assert not report.passed
    assert "tile_position" in report.text() and "shared" not in report.text().split("FAIL", 1)[1], report.text()
