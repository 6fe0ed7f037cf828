"""The exercises: write a step's kernel yourself, and a grader that says whether it is right — and if not, what is wrong.

Each exercise is a file in ``exercises/`` holding a stub: the kernel's signature, its tile constants, how it is
launched, and hints. ``gemm-steps exercise check NAME`` loads the file and grades the kernel on Numba's CUDA
simulator (no GPU needed):

* random ragged shapes (no side a multiple of the tile), fresh standard-normal inputs, C poisoned with NaN first;
* every element of C compared with float64 NumPy: the report names the shape, the first element that is wrong or
  was never written (still NaN), and how many, with a hint when the pattern points at a cause (only the edge
  tiles, every element, …);
* a kernel that reads or writes outside a matrix fails with the simulator's message and the thread that did it;
* where the kernel uses shared memory, a race check (:mod:`.race_check`): a missing ``cuda.syncthreads()`` fails
  every time, not only when the thread schedule happens to expose it.

On a GPU it also times the kernel against the step's own (CUDA events, median of 20, at 2048³).

The shipped steps are the solutions (the persistent exercise's is :mod:`.exercise_solutions`): the test suite
checks that each grader passes its solution and fails its stub and planted mistakes.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..toolkit.backend import SIMULATOR
from ..toolkit.kernel_tools import ceil_div

#: The checkout's exercises/ folder (where the stubs are).
EXERCISES_DIR = Path(__file__).resolve().parents[2] / "exercises"
#: Times the rounding a correct float32 kernel may show per element: |C − ref| ≤ SLACK·eps32·√K·(|A|·|B|).
SLACK = 8.0
EPS32 = float(np.finfo(np.float32).eps)


# -- how each exercise's kernel is launched (the same grid and block as its step) -----------------------------------
def _square_blocks(size: int) -> Callable:
    def launch(kernel, a, b, c):
        m, n = c.shape
        kernel[(ceil_div(n, size), ceil_div(m, size)), (size, size)](a, b, c)
    launch.__doc__ = f"grid = (⌈N/{size}⌉, ⌈M/{size}⌉) blocks of {size}×{size} threads"
    return launch


def _register_2d_launch(kernel, a, b, c):
    """grid = (⌈N/128⌉, ⌈M/128⌉) blocks of 256 threads (threadIdx.x only)"""
    m, n = c.shape
    kernel[(ceil_div(n, 128), ceil_div(m, 128)), 256](a, b, c)


PERSISTENT_TILE, PERSISTENT_BLOCKS, PERSISTENT_GROUP_M = 16, 3, 2


def _persistent_launch(kernel, a, b, c):
    """grid = 3 blocks of 16×16 threads, whatever the shape (fewer blocks than tiles: each block loops)"""
    kernel[PERSISTENT_BLOCKS, (PERSISTENT_TILE, PERSISTENT_TILE)](a, b, c)


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str
    step: str  # the shipped step this exercise rebuilds
    kernel: str  # the function the learner writes
    launch: Callable  # launch(kernel, a, b, c)
    tile: tuple[int, int]  # the rows × columns of C one block covers (for the edge-tile hint and the shapes)
    uses_shared: bool = False
    checks: tuple[str, ...] = ()  # extra functions of the learner's file that are checked (see _check_extras)
    #: K is drawn from this range: over one k-tile and not a multiple of it, so the loop over K runs a partial tile
    #: and (with shared memory) reuses the tiles, which is where a missing second barrier shows.
    sizes: tuple[tuple[int, int], ...] = field(default=((17, 50),))

    @property
    def file(self) -> Path:
        return EXERCISES_DIR / f"{self.name}.py"

    def solution(self):
        """The kernel (and the extras) that solve this exercise: the shipped step's own."""
        if self.name == "persistent":
            from . import exercise_solutions

            return exercise_solutions
        from .. import get_step

        return get_step(self.step).module


EXERCISES = [
    Exercise("naive", "one thread per element of C", "naive", "naive_kernel", _square_blocks(32), (32, 32)),
    Exercise("coalesced", "the same, with a warp reading a row of B", "coalesced", "coalesced_kernel",
             _square_blocks(32), (32, 32)),
    Exercise("shared_memory", "32×32 tiles of A and B staged in shared memory", "shared_memory",
             "shared_memory_kernel", _square_blocks(32), (32, 32), uses_shared=True, sizes=((33, 70),)),
    Exercise("register_2d", "an 8×8 block of C per thread, from shared memory", "register_2d", "register_2d_kernel",
             _register_2d_launch, (128, 128), uses_shared=True, sizes=((9, 20),)),
    Exercise("persistent", "a fixed grid of blocks looping over tiles in grouped order", "persistent",
             "persistent_kernel", _persistent_launch, (PERSISTENT_TILE, PERSISTENT_TILE), uses_shared=True,
             checks=("tile_position",)),
]


def get(name: str) -> Exercise:
    for exercise in EXERCISES:
        if exercise.name == name:
            return exercise
    raise KeyError(f"no exercise {name!r}; the exercises are: {', '.join(e.name for e in EXERCISES)}")


def shapes(exercise: Exercise, seed: int = 0) -> list[tuple[int, int, int]]:
    """Two random ragged shapes (no side a multiple of the tile, K too): one full tile plus partial tiles each way;
    then a strip less than a tile tall and over two tiles wide (the persistent exercise: more tiles than blocks)."""
    rng = np.random.default_rng(seed)
    tm, tn = exercise.tile
    k_low, k_high = exercise.sizes[0]

    def part(size):  # 1 … size-1
        return int(rng.integers(1, size))

    second = (3 * tm + part(tm), 2 * tn + part(tn)) if exercise.name == "persistent" else (part(tm), 2 * tn + part(tn))
    return [(tm + part(tm), tn + part(tn), int(rng.integers(k_low, k_high))),
            (*second, int(rng.integers(k_low, k_high)))]


# -- grading ---------------------------------------------------------------------------------------------------------
@dataclass
class Report:
    exercise: Exercise
    passed: bool = True
    lines: list[str] = field(default_factory=list)

    def ok(self, line: str) -> None:
        self.lines.append(f"  ok    {line}")

    def fail(self, line: str, *hints: str) -> "Report":
        self.passed = False
        self.lines.append(f"  FAIL  {line}")
        self.lines += [f"        {hint}" for hint in hints]
        return self

    def text(self) -> str:
        verdict = "passed" if self.passed else "not yet"
        return "\n".join([f"exercise {self.exercise.name}: {verdict}", *self.lines])


def load(path: Path):
    """The learner's file as a module (a fresh import every time, so an edit is seen)."""
    spec = importlib.util.spec_from_file_location(f"exercise_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(c: np.ndarray, a: np.ndarray, b: np.ndarray, tile: tuple[int, int]) -> tuple[str, list[str]] | None:
    """None if C is A·B to float32 rounding; else (what is wrong, hints)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    reference = a64 @ b64
    bound = SLACK * EPS32 * math.sqrt(max(a.shape[1], 1)) * (np.abs(a64) @ np.abs(b64)) + 1e-30
    unwritten = np.isnan(c)
    wrong = ~unwritten & ~(np.abs(c - reference) <= bound)
    m, n = c.shape
    if unwritten.any():
        rows, cols = np.nonzero(unwritten)
        what = (f"{int(unwritten.sum())} of {m * n} elements of C were never written (still NaN), "
                f"first C[{rows[0]}, {cols[0]}]")
        hints = []
        if unwritten.all():
            hints.append("no element at all: does the kernel store to c?")
        elif _only_edges(unwritten, tile):
            hints.append(f"all in the partial tiles at the bottom or right edge ({tile[0]}×{tile[1]} tiles): "
                         "do the threads there compute and store?")
        return what, hints
    if wrong.any():
        rows, cols = np.nonzero(wrong)
        i, j = rows[0], cols[0]
        what = (f"{int(wrong.sum())} of {m * n} elements of C are wrong, first C[{i}, {j}] = {c[i, j]:.6g} "
                f"where A·B has {reference[i, j]:.6g}")
        hints = []
        if wrong.all():
            hints.append("every element: check the index math (a[row, k] · b[k, col]) and the sum over all of K")
        elif _only_edges(wrong, tile):
            hints.append(f"only in the partial tiles at the edges ({tile[0]}×{tile[1]} tiles): do loads outside A or "
                         "B put zeros in the tile, and does the k-loop cover the last partial tile of K?")
        return what, hints
    return None


def _only_edges(mask: np.ndarray, tile: tuple[int, int]) -> bool:
    m, n = mask.shape
    interior = mask[: m // tile[0] * tile[0], : n // tile[1] * tile[1]]
    return bool(interior.size) and not interior.any()


def _launch(exercise: Exercise, kernel, a, b, c) -> str | None:
    """Run the kernel; None, or a failure message."""
    from .race_check import SharedMemoryRace, detect_races

    try:
        with warnings.catch_warnings():  # a wrong kernel may multiply garbage: its result says so, not NumPy
            warnings.simplefilter("ignore", RuntimeWarning)
            if exercise.uses_shared and SIMULATOR:
                with detect_races():
                    exercise.launch(kernel, a, b, c)
            elif SIMULATOR:
                exercise.launch(kernel, a, b, c)
            else:  # on a GPU: device arrays (no copy-overhead warnings), and our small grids are small on purpose
                from numba import cuda

                from ..toolkit.kernel_tools import quiet_small_grids

                c_device = cuda.to_device(c)
                with quiet_small_grids():
                    exercise.launch(kernel, cuda.to_device(a), cuda.to_device(b), c_device)
                c[...] = c_device.copy_to_host()
    except SharedMemoryRace as race:
        return f"{race}"
    except IndexError as error:
        return (f"a thread read or wrote outside a matrix: {error}\n        (thread and block as tid=[x, y, z] "
                "ctaid=[x, y, z]) — check row < M and col < N (and k < K) before touching a, b or c")
    except Exception as error:  # the learner's kernel may fail in any way; say how, in their terms
        return f"the kernel failed: {type(error).__name__}: {error}"
    return None


def _check_extras(exercise: Exercise, module, report: Report) -> None:
    if "tile_position" in exercise.checks:
        from .exercise_solutions import expected_tile_order

        position = getattr(module, "tile_position", None)
        if position is None:
            report.fail("tile_position(tile, row_tiles, col_tiles) is missing")
            return
        position = getattr(position, "py_func", position)  # a @cuda.jit(device=True) function, called from Python
        for row_tiles, col_tiles in ((5, 3), (4, 4), (1, 6), (7, 2)):
            want = expected_tile_order(row_tiles, col_tiles, PERSISTENT_GROUP_M)
            try:
                got = [tuple(int(x) for x in position(t, row_tiles, col_tiles)) for t in range(row_tiles * col_tiles)]
            except Exception as error:
                report.fail(f"tile_position failed: {type(error).__name__}: {error}")
                return
            if got != want:
                first = next(t for t in range(len(want)) if got[t] != want[t])
                report.fail(f"tile_position on a {row_tiles}×{col_tiles} grid of tiles: tile {first} goes to "
                            f"(row, col) = {got[first]}, grouped order puts it at {want[first]}",
                            f"the order (GROUP_M = {PERSISTENT_GROUP_M}): {want}")
                return
        report.ok("tile_position numbers the tiles column by column within groups of "
                  f"{PERSISTENT_GROUP_M} tile-rows")


def grade(exercise: Exercise, module, seed: int = 0, say: Callable[[str], None] | None = None) -> Report:
    """Grade the kernel ``module`` defines for ``exercise`` (module: the learner's file, or a solution)."""
    report = Report(exercise)
    kernel = getattr(module, exercise.kernel, None)
    if kernel is None:
        return report.fail(f"{exercise.kernel} is not defined in the file")
    _check_extras(exercise, module, report)
    if not report.passed:
        return report
    rng = np.random.default_rng(seed + 1)
    for m, n, k in shapes(exercise, seed):
        if say is not None:
            say(f"  …     {m}×{n}×{k} on the {'simulator' if SIMULATOR else 'GPU'}")
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        c = np.full((m, n), np.nan, dtype=np.float32)
        failure = _launch(exercise, kernel, a, b, c)
        if failure is not None:
            return report.fail(f"M×N×K = {m}×{n}×{k}: {failure}")
        problem = compare(c, a, b, exercise.tile)
        if problem is not None:
            what, hints = problem
            return report.fail(f"M×N×K = {m}×{n}×{k}: {what}", *hints)
        report.ok(f"M×N×K = {m}×{n}×{k}: every element right"
                  + (", no shared-memory race" if exercise.uses_shared and SIMULATOR else ""))
    if not SIMULATOR:  # a GPU does not check indices, and races show only when the schedule exposes them
        report.ok("out-of-bounds accesses" + (" and shared-memory races" if exercise.uses_shared else "") +
                  f": not checked on a GPU — NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check {exercise.name} "
                  "checks them on the simulator (or run under compute-sanitizer)")
    return report


def time_against_step(exercise: Exercise, module, size: int = 2048, repeats: int = 20) -> str:
    """On a GPU: the learner's kernel and the step's own, CUDA-event median of ``repeats`` at size³."""
    from numba import cuda

    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), dtype=np.float32)
    medians = {}
    for label, kernel in (("yours", getattr(module, exercise.kernel)),
                          ("the step's", getattr(exercise.solution(), exercise.kernel))):
        exercise.launch(kernel, a, b, c)  # compiles
        cuda.synchronize()
        start, end = cuda.event(), cuda.event()
        times = []
        for _ in range(repeats):
            start.record()
            exercise.launch(kernel, a, b, c)
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end))
        medians[label] = float(np.median(times))
    yours, step = medians["yours"], medians["the step's"]
    return (f"{size}³ on this GPU: yours {yours:.3f} ms ({2 * size**3 / yours / 1e9:.2f} TFLOPS), the step's "
            f"{step:.3f} ms ({2 * size**3 / step / 1e9:.2f} TFLOPS): yours takes {yours / step:.2f}× the step's time")


def check(name: str, path: str | Path | None = None, say: Callable[[str], None] = print) -> Report:
    """Load the learner's file for exercise ``name`` and grade it; on a GPU, time it if it passes."""
    exercise = get(name)
    path = Path(path) if path is not None else exercise.file
    say(f"exercise {name}: grading {path} on the {'simulator' if SIMULATOR else 'GPU'} …")
    if not path.exists():
        return Report(exercise).fail(f"{path} does not exist")
    try:
        module = load(path)
    except Exception as error:
        import traceback

        where = traceback.extract_tb(error.__traceback__)[-1]
        return Report(exercise).fail(f"{path.name} does not import: {type(error).__name__}: {error} "
                                     f"(line {where.lineno})")
    report = grade(exercise, module, say=say)
    if report.passed and not SIMULATOR:
        report.ok(time_against_step(exercise, module))
    return report


def listing() -> str:
    """One line per exercise, the name first."""
    width = max(len(e.name) for e in EXERCISES)
    return "\n".join(f"{e.name:<{width}}  step {get_number(e.step):>2} — {e.title}  ({_shown(e.file)})"
                     for e in EXERCISES)


def get_number(step_name: str) -> int:
    from .. import get_step

    return get_step(step_name).number


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":  # python -m gemm_steps.course.exercises NAME [FILE]
    result = check(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    print(result.text())
    sys.exit(0 if result.passed else 1)
