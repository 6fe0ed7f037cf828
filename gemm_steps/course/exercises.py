"""The exercises: write a step's kernel yourself, and a grader that says whether it is right, whether it does what
the step teaches — and if not, what is wrong.

Each exercise is a file in ``exercises/`` holding a stub: the kernel's signature, its tile constants, how it is
launched, and hints. ``gemm-steps exercise check NAME`` loads the file and grades it:

* **it compiles for a GPU**: the kernel is compiled to PTX by NVVM for a real target (compute capability 8.0; no GPU
  needed — from the simulator, in the GPU-mode worker of :mod:`gemm_steps.harness.gpu_mode`), so code only the
  simulator runs (NumPy calls, a generator expression, a shared array whose shape is not a constant, a plain Python
  function called as a device function, a host object) fails here with the learner's line; an exercise about shared
  memory must read it;
* **the numbers**, on Numba's CUDA simulator: random ragged shapes (no side a multiple of the tile; K less than one
  k-tile, then over one and not a multiple), fresh standard-normal inputs, C poisoned with NaN, shared and local
  arrays filled with NaN; every element of C compared with float64 NumPy. The report names the shape, the first
  element that is wrong, never written, or written as NaN, with a hint when the pattern points at a cause;
* **what the kernel did**, watched on the simulator (:mod:`.race_check`): a thread reading or writing outside a
  matrix, a shared-memory race (the two source lines that conflict), a read of shared memory nobody wrote, a read of
  C's old contents, an element of C stored twice; and the idea of the exercise — a warp storing neighbouring
  columns (coalesced), each element of A and B read from global memory once per tile, not once per multiply-add
  (shared memory), whole tiles in grouped order over a grid of a varying number of blocks (persistent);
* a time limit on each launch, so a kernel that never ends fails instead of hanging the grader.

On a GPU it also times the kernel against the step's own (CUDA events, median of 20, at 2048³).

The shipped steps are the solutions (the persistent exercise's is :mod:`.exercise_solutions`): the test suite
checks that each grader passes its solution and valid variants, and fails its stub and planted mistakes.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import linecache
import math
import os
import re
import sys
import threading
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..harness import gpu_mode
from ..harness.ptx import remembered_in_gpu_mode
from ..toolkit.backend import SIMULATOR
from ..toolkit.kernel_tools import ceil_div

#: The checkout's exercises/ folder (where the stubs are).
EXERCISES_DIR = Path(__file__).resolve().parents[2] / "exercises"
#: Times the rounding a correct float32 kernel may show per element: |C − ref| ≤ SLACK·eps32·√K·(|A|·|B|).
SLACK = 8.0
EPS32 = float(np.finfo(np.float32).eps)
#: Seconds one launch may take before the grader stops it (the simulator runs a correct exercise in a few seconds).
LAUNCH_SECONDS = 60.0
#: Seconds compiling the learner's file for a GPU may take (importing it included).
COMPILE_SECONDS = 120.0
#: The GPU target the learner's kernel is compiled for (any real one would do: the point is a real compiler).
COMPILE_CC = (8, 0)
SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
#: What C is filled with before a launch: a NaN with its own bit pattern, so on a GPU (which writes a computed NaN
#: as 0x7fffffff) an element never written is told apart from one written as NaN.
POISON_BITS = 0x7FC0_0BAD
#: A warp's stores to C may touch at most this many 128-byte segments on average (32 neighbouring floats: 1 or 2).
COALESCED_SEGMENTS = 2.5
#: A tiled kernel may read each element of A (B) at most this many times its tiles need (⌈N / tile columns⌉).
REUSE_SLACK = 2.0


# -- how each exercise's kernel is launched (the same grid and block as its step) -----------------------------------
def _square_blocks(size: int) -> Callable:
    def launch(kernel, a, b, c, blocks=None):
        m, n = c.shape
        kernel[(ceil_div(n, size), ceil_div(m, size)), (size, size)](a, b, c)
    launch.__doc__ = f"grid = (⌈N/{size}⌉, ⌈M/{size}⌉) blocks of {size}×{size} threads"
    return launch


def _register_2d_launch(kernel, a, b, c, blocks=None):
    """grid = (⌈N/128⌉, ⌈M/128⌉) blocks of 256 threads (threadIdx.x only)"""
    m, n = c.shape
    kernel[(ceil_div(n, 128), ceil_div(m, 128)), 256](a, b, c)


PERSISTENT_TILE, PERSISTENT_BLOCKS, PERSISTENT_GROUP_M = 16, 3, 2
#: The grid sizes the persistent exercise is graded with, one per shape: never the same, so a loop that steps by a
#: number instead of cuda.gridDim.x fails.
PERSISTENT_GRIDS = (2, 5)


def _persistent_launch(kernel, a, b, c, blocks=None):
    """grid = a few blocks of 16×16 threads, whatever the shape (fewer blocks than tiles: each block loops)"""
    kernel[blocks or PERSISTENT_BLOCKS, (PERSISTENT_TILE, PERSISTENT_TILE)](a, b, c)


def _one_warp_launch(kernel, a, b, c, blocks=None):
    """grid = 1 block of 32 threads: one warp (the tensor-core exercises)"""
    kernel[1, 32](a, b, c)


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str
    step: str  # the shipped step this exercise rebuilds
    kernel: str  # the function the learner writes
    launch: Callable  # launch(kernel, a, b, c, blocks=None)
    tile: tuple[int, int]  # the rows × columns of C one block covers (for the edge-tile hint and the shapes)
    uses_shared: bool = False
    checks: tuple[str, ...] = ()  # extra functions of the learner's file that are checked (see _check_extras)
    #: The slice of K one step of the kernel's loop covers (None: no tiles over K). The first shape's K is less than
    #: one k-tile (a tile element past K that is not zero-filled is read as NaN), the second's over one and not a
    #: multiple (the loop reuses the tiles, which is where a missing second barrier shows).
    k_tile: int | None = None
    #: The idea checked on the simulator beyond the numbers: "coalesced", "reuse" (tiles in shared memory),
    #: "tiles" (the persistent loop's order).
    ideas: tuple[str, ...] = ()
    #: The lesson whose idea it practises (None: the lesson of its step, lessons/NN_<step>.py for step NN).
    lesson: int | None = None
    #: A module of this package that grades the exercise its own way — ``grade`` (as :func:`grade`), ``solution()``
    #: and ``time_against_step`` — for kernels that are not one C = A·B over the grid (None: the checks below).
    grader: str | None = None
    #: The kernel's argument types for the compile check, and the compute capability it is compiled for.
    signature: str = SIGNATURE
    compile_cc: tuple[int, int] = COMPILE_CC

    def grader_module(self):
        return importlib.import_module(f".{self.grader}", __package__)

    @property
    def lesson_name(self) -> str:
        """The lesson's file name without its folder and suffix (``"10_persistent"``): ``lessons/`` and
        ``notebooks/`` hold it, as ``.py`` and ``.ipynb``."""
        from .. import get_step

        number = self.lesson if self.lesson is not None else get_step(self.step).number
        return f"{number:02d}_{get_step(number).name}"

    @property
    def file(self) -> Path:
        return EXERCISES_DIR / f"{self.name}.py"

    def solution(self):
        """The kernel (and the extras) that solve this exercise: the shipped step's own."""
        if self.grader is not None:
            return self.grader_module().solution()
        if self.name == "persistent":
            from . import exercise_solutions

            return exercise_solutions
        from .. import get_step

        return get_step(self.step).module


EXERCISES = [
    Exercise("naive", "one thread per element of C", "naive", "naive_kernel", _square_blocks(32), (32, 32)),
    Exercise("coalesced", "the same, with a warp reading a row of B", "coalesced", "coalesced_kernel",
             _square_blocks(32), (32, 32), ideas=("coalesced",)),
    Exercise("shared_memory", "32×32 tiles of A and B staged in shared memory", "shared_memory",
             "shared_memory_kernel", _square_blocks(32), (32, 32), uses_shared=True, k_tile=32, ideas=("reuse",)),
    Exercise("register_2d", "an 8×8 block of C per thread, from shared memory", "register_2d", "register_2d_kernel",
             _register_2d_launch, (128, 128), uses_shared=True, k_tile=8, ideas=("reuse",)),
    Exercise("persistent", "a fixed grid of blocks looping over tiles in grouped order", "persistent",
             "persistent_kernel", _persistent_launch, (PERSISTENT_TILE, PERSISTENT_TILE), uses_shared=True,
             checks=("tile_position",), k_tile=PERSISTENT_TILE, ideas=("tiles", "reuse")),
    Exercise("stream_k", "the tiles' k-iterations split evenly over the blocks, and fixed up", "stream_k",
             "stream_k_kernel", None, (16, 16), grader="exercise_stream_k",
             signature="void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[::1], int32[::1])"),
    Exercise("mbarrier_ring", "a ring of stages with full/empty mbarriers and phase bits, fed by copy_bulk",
             "tma_pipeline", "mbarrier_ring_kernel", None, (8, 32), uses_shared=True, grader="exercise_mbarrier_ring",
             signature="void(float32[:, ::1], float32[::1], float32[:, ::1])", compile_cc=(9, 0)),
    Exercise("tensor_cores", "one warp's 16×8×8 mma.sync, its fragments loaded and stored by the layout",
             "tensor_cores", "mma_kernel", _one_warp_launch, (16, 8), grader="exercise_tensor_cores"),
    Exercise("three_tf32", "3xTF32 on one warp: split into big + small, three products, one FP32 sum", "three_tf32",
             "three_tf32_kernel", _one_warp_launch, (16, 8), checks=("split",), grader="exercise_three_tf32"),
    Exercise("wgmma", "one warpgroup's wgmma: B's shared-memory descriptor, the fence, the commit and the wait",
             "warpgroup_mma", "wgmma_kernel", None, (64, 16), grader="exercise_wgmma", compile_cc=(9, 0)),
    Exercise("warp_specialized", "a producer warpgroup and two consumers, registers handed over by setmaxnreg",
             "warp_specialized", "warp_specialized_kernel", None, (128, 16), grader="exercise_warp_specialized",
             signature="void(float32[:, ::1], float32[::1], float32[:, ::1])", compile_cc=(9, 0)),
    Exercise("pingpong", "two consumer warps take a block's tiles in turn, their main loops ordered by named barriers",
             "pingpong", "pingpong_kernel", None, (8, 32), grader="exercise_pingpong",
             signature="void(float32[:, ::1], float32[::1], float32[:, ::1])", compile_cc=(9, 0)),
    Exercise("cluster_multicast", "two blocks of a cluster share B's k-tiles: each multicasts half, both release",
             "cluster_multicast", "cluster_multicast_kernel", None, (8, 32), uses_shared=True,
             grader="exercise_cluster_multicast", signature="void(float32[:, ::1], uint64[::1], float32[:, ::1])",
             compile_cc=(9, 0)),
    Exercise("tma_store", "step 23's epilogue: chunks of C through three shared buffers, stored by the copy engine",
             "cluster_stream_k_tma_store", "tma_store_kernel", None, (32, 32), grader="exercise_tma_store",
             signature="void(float32[:, ::1], float32[:, ::1], uint64[::1])", compile_cc=(9, 0)),
]


def get(name: str) -> Exercise:
    for exercise in EXERCISES:
        if exercise.name == name:
            return exercise
    raise KeyError(f"no exercise {name!r}; the exercises are: {', '.join(e.name for e in EXERCISES)}")


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int
    blocks: int | None = None  # the grid of the persistent exercise

    def __str__(self) -> str:
        return f"M×N×K = {self.m}×{self.n}×{self.k}" + (f", {self.blocks} blocks" if self.blocks else "")


def cases(exercise: Exercise, seed: int = 0) -> list[Case]:
    """Two random ragged shapes (no side a multiple of the tile): one full tile plus partial tiles each way; then a
    strip less than a tile tall and over two tiles wide (the persistent exercise: 4×3 tiles, more than blocks).
    K: less than one k-tile first, then over one and not a multiple of it."""
    rng = np.random.default_rng(seed)
    tm, tn = exercise.tile

    def part(size):  # 1 … size-1
        return int(rng.integers(1, size))

    if exercise.k_tile is None:
        k_first, k_second = int(rng.integers(17, 50)), int(rng.integers(17, 50))
    else:
        kt = exercise.k_tile
        k_first, k_second = int(rng.integers(kt // 2, kt)), kt + int(rng.integers(1, kt))
    if exercise.name == "persistent":
        return [Case(tm + part(tm), tn + part(tn), k_first, PERSISTENT_GRIDS[0]),
                Case(3 * tm + part(tm), 2 * tn + part(tn), k_second, PERSISTENT_GRIDS[1])]
    return [Case(tm + part(tm), tn + part(tn), k_first), Case(part(tm), 2 * tn + part(tn), k_second)]


def shapes(exercise: Exercise, seed: int = 0) -> list[tuple[int, int, int]]:
    """The (M, N, K) of :func:`cases`."""
    return [(case.m, case.n, case.k) for case in cases(exercise, seed)]


# -- grading ---------------------------------------------------------------------------------------------------------
@dataclass
class Report:
    exercise: Exercise
    passed: bool = True
    lines: list[str] = field(default_factory=list)

    def ok(self, line: str) -> None:
        self.lines.append(f"  ok    {line}")

    def skip(self, line: str) -> None:
        """A check that could not run here (said, never counted as passed or failed)."""
        self.lines.append(f"  skip  {line}")

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


def import_failure(path: Path, error: BaseException) -> str:
    """What went wrong importing the learner's file, at the learner's line (not importlib's)."""
    if isinstance(error, SyntaxError) and error.lineno is not None:
        code = (error.text or "").rstrip("\n")
        pointer = f"\n        {code.strip()}" if code.strip() else ""
        return f"{Path(error.filename or path).name}, line {error.lineno}: {type(error).__name__}: {error.msg}{pointer}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _same_file(f.filename, path)]
    where = f", line {frames[-1].lineno}: {frames[-1].line}" if frames else ""
    return f"{path.name} does not import{where}\n        {type(error).__name__}: {error}"


def _same_file(a, b) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (TypeError, ValueError):
        return False


@dataclass
class Problem:
    what: str
    hints: list[str]
    kind: str  # "unwritten", "nan" or "wrong"
    mask: np.ndarray


def compare(c: np.ndarray, a: np.ndarray, b: np.ndarray, tile: tuple[int, int],
            stored: np.ndarray | None = None) -> Problem | None:
    """None if C is A·B to float32 rounding; else what is wrong, with hints.

    ``stored``: which elements the kernel stored (watched on the simulator); without it, an element still holding
    the poison's bit pattern counts as never written."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    reference = a64 @ b64
    bound = SLACK * EPS32 * math.sqrt(max(a.shape[1], 1)) * (np.abs(a64) @ np.abs(b64)) + 1e-30
    if stored is None:
        stored = c.view(np.uint32) != POISON_BITS
    unwritten = ~stored
    nan = stored & np.isnan(c)
    wrong = stored & ~nan & ~(np.abs(c - reference) <= bound)
    m, n = c.shape
    if unwritten.any():
        rows, cols = np.nonzero(unwritten)
        what = (f"{int(unwritten.sum())} of {m * n} elements of C were never written, "
                f"first C[{rows[0]}, {cols[0]}]")
        hints = []
        if unwritten.all():
            hints.append("no element at all: does the kernel store to c?")
        elif _only_edges(unwritten, tile):
            hints.append(f"all in the partial tiles at the bottom or right edge ({tile[0]}×{tile[1]} tiles): "
                         "do the threads there compute and store?")
        return Problem(what, hints, "unwritten", unwritten)
    if nan.any():
        rows, cols = np.nonzero(nan)
        what = (f"{int(nan.sum())} of {m * n} elements of C were written as NaN, first C[{rows[0]}, {cols[0]}]: "
                "a value read before anything was written to it")
        hints = ["the grader fills C, shared arrays and local arrays with NaN before the kernel runs (on a GPU they "
                 "hold whatever was there): is every accumulator set to 0 first, and every tile element written "
                 "before it is read?"]
        return Problem(what, hints, "nan", nan)
    if wrong.any():
        rows, cols = np.nonzero(wrong)
        i, j = rows[0], cols[0]
        what = (f"{int(wrong.sum())} of {m * n} elements of C are wrong, first C[{i}, {j}] = {c[i, j]:.6g} "
                f"where A·B has {reference[i, j]:.6g}")
        hints = []
        if wrong.mean() > 0.9:
            hints.append(f"{'every' if wrong.all() else 'nearly every'} element: check the index math (a[row, k] · b[k, col]) and the sum over all of K")
        elif _only_edges(wrong, tile):
            hints.append(f"only in the partial tiles at the edges ({tile[0]}×{tile[1]} tiles): do loads outside A or "
                         "B put zeros in the tile, and does the k-loop cover the last partial tile of K?")
        return Problem(what, hints, "wrong", wrong)
    return None


def _only_edges(mask: np.ndarray, tile: tuple[int, int]) -> bool:
    m, n = mask.shape
    interior = mask[: m // tile[0] * tile[0], : n // tile[1] * tile[1]]
    return bool(interior.size) and not interior.any()


# -- is it a kernel, and does it compile for a GPU -------------------------------------------------------------------
def kernel_problem(obj, name: str) -> str | None:
    """None if ``obj`` is a ``@cuda.jit`` kernel; else what it is instead."""
    if SIMULATOR:
        from numba.cuda.simulator.kernel import FakeCUDAKernel as KernelType

        device = bool(getattr(obj, "_device", False))
    else:
        from numba.cuda.dispatcher import CUDADispatcher as KernelType

        device = bool((getattr(obj, "targetoptions", None) or {}).get("device", False))
    if inspect.isfunction(obj):
        return (f"{name} is a plain Python function: decorate it with @cuda.jit, so that it is compiled for the GPU "
                "and launched there")
    if not isinstance(obj, KernelType):
        return (f"{name} is not a CUDA kernel but an object of type {type(obj).__name__}: the grader launches a function decorated with @cuda.jit, which runs on the GPU")
    if device:
        return (f"{name} is a device function (@cuda.jit(device=True)), which only other GPU code can call: the "
                "kernel the grader launches is decorated with plain @cuda.jit")
    return None


_COMPILE_HINTS = [
    (r"Untyped global name '(\w+)'.*<class 'function'>",
     "{0} is a plain Python function: a function a kernel calls is compiled for the GPU too — decorate it with "
     "@cuda.jit(device=True)"),
    (r"yield|generator", "a generator expression (sum(x for …), any(…), …) runs only on a CPU: write the loop out, "
     "with an accumulator"),
    (r"shared\.array", "cuda.shared.array needs a shape known when the kernel compiles: numbers, or constants of "
     "the module such as TILE — not a value the kernel computes (blockDim, a.shape, even TILE + 1: name that at the top "
     "of the file, PADDED = TILE + 1)"),
    (r"local\.array", "cuda.local.array needs a shape known when the kernel compiles: numbers, or constants of the "
     "module"),
    (r"NRT required|scipy|linalg|array_allocate|numpy|np\.|Function\(<built-in function (?:dot|sum|matmul)",
     "NumPy on whole arrays (np.dot, np.sum, a[row, :] * b[:, col], @) allocates arrays or calls CPU libraries, "
     "which a kernel cannot: write the loop over k"),
    (r"Untyped global name '(\w+)'", "{0} is not something GPU code can use: numbers, tuples of numbers and "
     "@cuda.jit functions are"),
]
_NUMPY_LINE = re.compile(r"\bnp\.|\bnumpy\.|[^@\s]\s*@\s*[\w(]|\[[^\]]*:[^\]]*\]")


def _compile_failure(error: BaseException, kernel, filename: str | None) -> dict:
    """A compile error in the learner's terms: the message's first line, the learner's line, a hint."""
    text = str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    summary = next((line for line in lines if not line.startswith(("Failed in", "- Resolution"))), type(error).__name__)
    summary = re.sub(r" at 0x[0-9a-f]+", "", summary)
    line = None
    if filename is not None:
        for path, number in re.findall(r'File "([^"]+)", line (\d+)', text):
            if _same_file(path, filename):
                line = int(number)
                break
        if line is None:  # numba-cuda 0.30 loses the location of some typing errors: find it in the frames
            for frame, _ in reversed(list(traceback.walk_tb(error.__traceback__))):
                for value in (frame.f_locals.get(key) for key in ("self", "inst", "loc", "constraint")):
                    loc = getattr(value, "loc", value)
                    if _same_file(getattr(loc, "filename", None), filename) and getattr(loc, "line", None):
                        line = int(loc.line)
                        break
                if line is not None:
                    break
    hint = next((template.format(*match.groups()) for pattern, template in _COMPILE_HINTS
                 if (match := re.search(pattern, text, re.DOTALL))), "")
    suspects = []
    if line is None and "NumPy" in hint and filename is not None:  # no location: show the lines that use NumPy
        try:
            source, first = inspect.getsourcelines(getattr(kernel, "py_func", kernel))
            suspects = [first + i for i, code in enumerate(source)
                        if _NUMPY_LINE.search(code.split("#")[0]) and not code.lstrip().startswith("@")]
        except (OSError, TypeError):
            pass
    code = ""
    if line is not None and filename is not None:
        from .race_check import code_at

        code = code_at(filename, line)
    return {"ok": False, "error": f"{type(error).__name__}: {summary}", "line": line, "code": code, "hint": hint,
            "suspects": suspects}


def _ptx_summary(ptx: str) -> dict:
    from ..harness.ptx import _opcodes

    ops = _opcodes(ptx)
    return {"ld.shared": sum(n for op, n in ops.items() if op.startswith("ld.shared")),
            "st.shared": sum(n for op, n in ops.items() if op.startswith("st.shared")),
            "instructions": sum(ops.values())}


def compile_for_gpu(module, kernel_name: str, filename: str | None, cc: tuple[int, int] = COMPILE_CC,
                    signature: str = SIGNATURE, facts: Callable[[str], dict] | None = None) -> dict:
    """Compile ``module``'s kernel to PTX for compute capability ``cc`` (GPU mode, in this process): ``{"ok": True,
    "ptx": summary, "cc": cc}`` or ``{"ok": False, "error", "line", "code", "hint", "suspects", "cc"}`` or
    ``{"unavailable": why}``. ``facts(ptx)``: more entries of the summary (a grader's own reading of the PTX)."""
    from numba import cuda

    from ..harness.ptx import nvvm_version

    if nvvm_version() is None:
        return {"unavailable": "NVVM (the CUDA compiler) is not installed here: pip install 'numba-cuda[cu13]'"}
    kernel = getattr(module, kernel_name, None)
    problem = kernel_problem(kernel, kernel_name)
    if problem is not None:
        return {"ok": False, "error": problem, "line": None, "code": "", "hint": "", "suspects": []}
    options = getattr(kernel, "targetoptions", {}) or {}
    kwargs = {key: options[key] for key in ("fastmath", "lineinfo") if key in options}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ptx, _ = cuda.compile(kernel.py_func, signature, device=False, abi="numba", cc=cc, output="ptx",
                                  **kwargs)
    except Exception as error:  # whatever the compiler says, in the learner's terms
        return {**_compile_failure(error, kernel, filename), "cc": list(cc)}
    return {"ok": True, "ptx": {**_ptx_summary(ptx), **(facts(ptx) if facts else {})}, "cc": list(cc)}


_REQUESTS = itertools.count(1)


def compile_request(request: dict) -> dict:
    """Run in the GPU-mode worker (:mod:`gemm_steps.harness.gpu_mode`; no GPU needed): import the learner's file
    (``{"file": path}``) or a shipped solution (``{"module": name}``) and :func:`compile_for_gpu` its ``"kernel"``
    (with ``"cc"``, ``"signature"``, and ``"facts"``: a ``"module:function"`` adding to the PTX summary)."""
    import numba.cuda.dispatcher as dispatcher

    class _Target:  # device functions are compiled for "the current device": there is none here
        compute_capability = COMPILE_CC

    linecache.checkcache()  # the learner may have edited the file since the last request
    current_device = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Target()
    try:
        if request.get("module"):
            module = importlib.import_module(request["module"])
            filename = getattr(module, "__file__", None)
        else:
            filename = request["file"]
            spec = importlib.util.spec_from_file_location(f"exercise_compile_{next(_REQUESTS)}", filename)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        facts = None
        if request.get("facts"):
            facts_module, facts_name = request["facts"].split(":")
            facts = getattr(importlib.import_module(facts_module), facts_name)
        return compile_for_gpu(module, request["kernel"], filename, tuple(request.get("cc", COMPILE_CC)),
                               request.get("signature", SIGNATURE), facts)
    except BaseException as error:  # importing the file failed in GPU mode
        return {"ok": False, "error": f"importing it in GPU mode failed: {type(error).__name__}: {error}",
                "line": None, "code": "", "hint": "", "suspects": []}
    finally:
        dispatcher.get_current_device = current_device


def _compile(exercise: Exercise, module, facts: str | None = None) -> dict:
    """The kernel compiled for a GPU: here on a GPU, else by :func:`compile_request` in the GPU-mode worker."""
    filename = getattr(module, "__file__", None)
    if not SIMULATOR:  # on a GPU: for this GPU (its device functions are compiled for it too)
        from numba import cuda

        return compile_for_gpu(module, exercise.kernel, filename, tuple(cuda.get_current_device().compute_capability),
                               exercise.signature)
    name = getattr(module, "__name__", "")
    request = {"kernel": exercise.kernel, "signature": exercise.signature, "cc": list(exercise.compile_cc)}
    if name.startswith("gemm_steps."):  # a shipped solution: imported by name (it has relative imports)
        request["module"] = name
    elif filename is not None:
        request["file"] = filename
    else:
        return {"unavailable": "the module has no file to compile"}
    if facts:
        request["facts"] = facts
    try:
        if "module" in request:  # a shipped solution: the same answer for the same package and compilers, kept
            return remembered_in_gpu_mode("gemm_steps.course.exercises:compile_request", request,
                                          timeout=COMPILE_SECONDS)
        return gpu_mode.call("gemm_steps.course.exercises:compile_request", request, timeout=COMPILE_SECONDS)
    except gpu_mode.GPUModeTimeout:
        return {"ok": False, "error": f"importing and compiling it took more than {COMPILE_SECONDS:.0f} s (does the "
                "file run something endless when it is imported?)", "line": None, "code": "", "hint": "",
                "suspects": []}
    except gpu_mode.GPUModeError as error:  # the compiler's process ended, or could not start
        return {"unavailable": str(error)}


def _target(answer: dict) -> str:
    cc = answer.get("cc")
    return f" (NVVM, compute capability {cc[0]}.{cc[1]})" if cc else ""


def _check_compiles(exercise: Exercise, module, report: Report, facts: str | None = None) -> dict | None:
    """Compile the kernel for a GPU; fail the report where it does not compile, or lacks shared memory it needs.
    ``facts``: a ``"module:function"`` whose reading of the PTX joins the summary, from the simulator."""
    answer = _compile(exercise, module, facts)
    if "unavailable" in answer:
        report.skip(f"compiling for a GPU: not checked here — {answer['unavailable']}")
        return None
    if not answer["ok"]:
        hints = []
        if answer.get("line"):
            hints.append(f"line {answer['line']}: {answer['code']}")
        elif answer.get("suspects"):
            hints.append(f"lines of the kernel that use NumPy or whole-array slices: "
                         f"{', '.join(str(n) for n in answer['suspects'])}")
        if answer.get("hint"):
            hints.append(answer["hint"])
        report.fail(f"{exercise.kernel} does not compile for a GPU{_target(answer)}: {answer['error']}", *hints,
                    "(the simulator runs any Python; a GPU runs only what Numba can compile)")
        return answer
    if exercise.uses_shared and answer["ptx"]["ld.shared"] == 0:
        report.fail(f"{exercise.kernel} compiles, but its compiled code never reads shared memory (no ld.shared in "
                    "its PTX): this exercise is about computing from tiles staged in shared memory",
                    "cuda.shared.array((ROWS, COLUMNS), float32) makes a tile; copy a slice of A and B into tiles, "
                    "cuda.syncthreads(), then run the multiply-adds on the tiles")
        return answer
    report.ok(f"compiles for a GPU{_target(answer)}: "
              f"{answer['ptx']['instructions']} PTX instructions"
              + (f", {answer['ptx']['ld.shared']} shared-memory loads" if exercise.uses_shared else ""))
    return answer


# -- running it -------------------------------------------------------------------------------------------------------
@contextmanager
def _time_limit(seconds: float, what: str, kernel=None):
    """Stop a launch that runs past ``seconds``. On the simulator: its threads stop at their next access to a
    matrix, a shared array or a barrier (:class:`.race_check.Deadline`); a thread running the kernel's own code
    (a loop that touches no array) gets the exception raised in it, every half second until the launch ends. On a GPU a running kernel cannot
    be stopped from Python, so the grader says so and ends the process. Yields the deadline."""
    from .race_check import Deadline, LaunchStopped

    done, deadline = threading.Event(), Deadline()
    kernel_file = getattr(getattr(getattr(kernel, "py_func", None), "__code__", None), "co_filename", None)

    def watch():
        if done.wait(seconds):
            return
        deadline.expired = True
        if not SIMULATOR:
            sys.stderr.write(f"\nFAIL  {what} still runs after {seconds:.0f} s: a loop that never ends? A running GPU "
                             "kernel cannot be stopped from Python, so the grader ends here.\n")
            sys.stderr.flush()
            os._exit(1)
        if kernel_file is None:
            return
        import ctypes

        from numba.cuda.simulator.kernel import BlockThread

        while not done.wait(0.5):  # again while the launch lasts: the simulator may still be starting threads
            frames = sys._current_frames()
            for thread in threading.enumerate():
                frame = frames.get(thread.ident)
                if isinstance(thread, BlockThread) and frame is not None and frame.f_code.co_filename == kernel_file:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                               ctypes.py_object(LaunchStopped))

    watchdog = threading.Thread(target=watch, daemon=True)
    watchdog.start()
    try:
        yield deadline
    finally:
        done.set()


@dataclass
class Observation:
    """What the simulator saw during one launch (None on a GPU)."""
    a_reads: int
    b_reads: int
    stores: list  # (sequence, block, thread, flat index of C)
    early_read: tuple | None  # (flat index, thread name, (file, line)): C read before it was stored
    shared_arrays: list

    def stored(self, shape) -> np.ndarray:
        mask = np.zeros(shape[0] * shape[1], bool)
        if self.stores:
            mask[[store[3] for store in self.stores]] = True
        return mask.reshape(shape)


def _launch(exercise: Exercise, kernel, a, b, c, blocks=None, time_limit: float = LAUNCH_SECONDS):
    """Run the kernel; (failure message or None, :class:`Observation` or None)."""
    from .race_check import LaunchStopped, SimulatorCheck, detect_races, nan_local_arrays, tracked_global

    what = f"{exercise.kernel} on {c.shape[0]}×{c.shape[1]}×{a.shape[1]}"
    observed = None
    try:
        with warnings.catch_warnings(), _time_limit(time_limit, what, kernel) as deadline:
            warnings.simplefilter("ignore", RuntimeWarning)  # a wrong kernel may multiply garbage: its result says so
            try:
                if SIMULATOR:
                    ta, tb = tracked_global(a, "a", deadline=deadline), tracked_global(b, "b", deadline=deadline)
                    tc = tracked_global(c, "c", watch_stores=True, deadline=deadline)
                    with detect_races(deadline) as shared, nan_local_arrays():
                        exercise.launch(kernel, ta, tb, tc, blocks)
                else:  # on a GPU: device arrays (no copy-overhead warnings), and our small grids are small on purpose
                    from numba import cuda

                    from ..toolkit.kernel_tools import quiet_small_grids

                    c_device = cuda.to_device(c)
                    with quiet_small_grids():
                        exercise.launch(kernel, cuda.to_device(a), cuda.to_device(b), c_device, blocks)
                    c[...] = c_device.copy_to_host()
            except BaseException as error:
                if deadline.expired:
                    raise LaunchStopped() from error
                raise
    except LaunchStopped:
        return (f"the launch did not finish within {time_limit:.0f} s and was stopped: does a loop never end (a while "
                "loop whose counter never grows, a range that never reaches its end)?"), None
    except SimulatorCheck as check:
        return _without_thread_prefix(str(check)), None
    except IndexError as error:
        return (f"a thread read or wrote outside a matrix: {error}\n        (thread and block as tid=[x, y, z] "
                "ctaid=[x, y, z]) — check row < M and col < N (and k < K) before touching a, b or c"), None
    except Exception as error:  # the learner's kernel may fail in any way; say how, in their terms
        return f"the kernel failed: {type(error).__name__}: {error}", None
    if SIMULATOR:
        observed = Observation(ta.reads, tb.reads, tc.stores, tc.early_read, shared.shared_arrays)
    return None, observed


def _without_thread_prefix(message: str) -> str:
    return re.sub(r"^tid=\[[^\]]*\] ctaid=\[[^\]]*\]: ", "", message)


def case_inputs(rng, case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A (M×K) and B (K×N) drawn from ``rng``, in that order, and C (M×N) filled with the poison NaN."""
    a = rng.standard_normal((case.m, case.k), dtype=np.float32)
    b = rng.standard_normal((case.k, case.n), dtype=np.float32)
    return a, b, np.full((case.m, case.n), POISON_BITS, dtype=np.uint32).view(np.float32)


def stored_mask(shape, stores) -> np.ndarray:
    """Which elements of C (of ``shape``) the tracked stores wrote (a store's flat index is its fourth field)."""
    stored = np.zeros(int(np.prod(shape)), bool)
    stored[[store[3] for store in stores]] = True
    return stored.reshape(shape)


def watched_launch(kernel, what: str, time_limit: float, start, contexts=(), c=None, known=()):
    """One launch on the simulator for a grader that watches it (the Hopper exercises'): under the time limit, C
    tracked if given (every store recorded), inside ``contexts`` (context managers, entered in order after C is
    tracked), ``start(tracked C or None)`` launching. Returns (a failure message or None, the tracked C or None).
    ``known``: (exception type, message function) pairs, tried in order before the generic messages."""
    from contextlib import ExitStack

    from .race_check import LaunchStopped, tracked_global

    tc, failure = None, None
    try:
        with ExitStack() as stack:
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore", RuntimeWarning)
            deadline = stack.enter_context(_time_limit(time_limit, what, kernel))
            try:
                if c is not None:
                    tc = tracked_global(c, "c", watch_stores=True, deadline=deadline)
                for context in contexts:
                    stack.enter_context(context)
                start(tc)
            except BaseException as error:
                if deadline.expired:
                    raise LaunchStopped() from error
                raise
    except LaunchStopped:
        failure = f"the launch did not finish within {time_limit:.0f} s and was stopped: does a loop never end?"
    except Exception as error:
        failure = next((message(error) for kind, message in known if isinstance(error, kind)), None)
        if failure is None and isinstance(error, IndexError):
            failure = f"a thread read or wrote outside an array: {_without_thread_prefix(str(error))}"
        elif failure is None:
            failure = f"the kernel failed: {_without_thread_prefix(str(error))}"
    return failure, tc


# -- what the kernel did: the idea of each exercise ------------------------------------------------------------------
def _early_read(observed: Observation, n: int) -> str:
    from .race_check import source_line

    flat, thread, where = observed.early_read
    return (f"{thread} read c[{flat // n}, {flat % n}] before the kernel stored it, at\n"
            f"            {source_line(where)}\n"
            f"        C's old contents are not zeros (on a GPU, whatever was in memory; here NaN): start the sum from "
            f"float32(0.0) in a register, and store each element of C once, at the end")


def _stored_twice(exercise: Exercise, observed: Observation, case: Case) -> tuple[str, list[str]] | None:
    counts = np.bincount([store[3] for store in observed.stores], minlength=case.m * case.n)
    twice = np.flatnonzero(counts > 1)
    if not twice.size:
        return None
    flat = int(twice[0])
    blocks = sorted({store[1] for store in observed.stores if store[3] == flat})
    i, j = flat // case.n, flat % case.n
    if exercise.name == "persistent":
        tile = (i // PERSISTENT_TILE, j // PERSISTENT_TILE)
        return (f"{twice.size} elements of C were stored more than once, first C[{i}, {j}] ({counts[flat]} times, by "
                f"block{'s' if len(blocks) > 1 else ''} {', '.join(map(str, blocks))}): tile {tile} was computed "
                "more than once", [f"the grader launched {case.blocks} blocks this time (it varies): block b should "
                                   "compute tiles b, b + gridDim.x, b + 2·gridDim.x, … — each tile once, so the loop "
                                   "over tiles steps by cuda.gridDim.x"])
    return (f"{twice.size} elements of C were stored more than once, first C[{i}, {j}] ({counts[flat]} times): "
            "each element should be computed once, by one thread", ["sum in a register and store C once, at the end"])


def _coalescing(observed: Observation, case: Case) -> tuple[str, list[str]] | None:
    """A warp's stores to C should land in neighbouring addresses: 32 floats are one or two 128-byte segments."""
    warps: dict = {}
    for _, block, thread, flat in observed.stores:
        warps.setdefault((block, thread // 32), []).append(flat)
    segments = [len({flat * 4 // 128 for flat in flats}) for flats in warps.values()]
    mean = float(np.mean(segments)) if segments else 0.0
    if mean <= COALESCED_SEGMENTS:
        return None
    return (f"the numbers are right, but a warp's 32 stores to C land in {mean:.1f} different 128-byte segments on "
            "average (neighbouring threads store to different rows): that is step 1's thread mapping",
            ["this step's idea: threads with neighbouring threadIdx.x (a warp) take neighbouring columns of one row, "
             "so their loads of b and stores to c are 32 neighbouring floats — one or two memory transactions",
             f"a coalesced kernel's warps touch at most {COALESCED_SEGMENTS:g} segments on average"])


def _reuse(exercise: Exercise, observed: Observation, case: Case) -> tuple[str, list[str]] | None:
    """Tiles in shared memory: each element of A is read once per block-column of C, not once per column."""
    tm, tn = exercise.tile
    need_a, need_b = ceil_div(case.n, tn), ceil_div(case.m, tm)
    per_a = observed.a_reads / (case.m * case.k)
    per_b = observed.b_reads / (case.k * case.n)
    if per_a <= REUSE_SLACK * need_a and per_b <= REUSE_SLACK * need_b:
        return None
    where = ("the kernel made no shared array" if not observed.shared_arrays else
             f"it made shared arrays ({', '.join(observed.shared_arrays)}) but still computes from a and b")
    return (f"the numbers are right, but each element of A was read from global memory {per_a:.1f} times and each of "
            f"B {per_b:.1f} times; with {tm}×{tn} tiles of C a block reads its slice once: ⌈N/{tn}⌉ = {need_a} and "
            f"⌈M/{tm}⌉ = {need_b} times", [f"{where}: copy each slice of A and B into shared tiles once, "
                                          "cuda.syncthreads(), and run the multiply-adds from the tiles"])


def _tile_order(observed: Observation, case: Case) -> tuple[str, list[str]] | None:
    """The persistent loop: block b computes whole tiles b, b + G, b + 2G, … of the grouped order, in that order."""
    from .exercise_solutions import expected_tile_order

    t = PERSISTENT_TILE
    row_tiles, col_tiles = ceil_div(case.m, t), ceil_div(case.n, t)
    order = expected_tile_order(row_tiles, col_tiles, PERSISTENT_GROUP_M)
    owners: dict = {}
    first_store: dict = {}
    for sequence, block, _, flat in observed.stores:
        tile = (flat // case.n // t, flat % case.n // t)
        owners.setdefault(tile, set()).add(block)
        if (block, tile) not in first_store or sequence < first_store[block, tile]:
            first_store[block, tile] = sequence
    for tile in order:
        if len(owners.get(tile, ())) > 1:
            blocks = ", ".join(map(str, sorted(owners[tile])))
            return (f"tile {tile} of C was computed by several blocks ({blocks}), a part each: a block should "
                    f"compute whole {t}×{t} tiles, one after the other",
                    ["loop over tile numbers (for tile in range(cuda.blockIdx.x, tiles, cuda.gridDim.x)) and compute "
                     "each tile the way step 3 does, with this block's 16×16 threads on its 16×16 elements"])
    grid = case.blocks
    for block in range(grid):
        want = order[block::grid]
        got = [tile for (b, tile), _ in sorted(first_store.items(), key=lambda item: item[1]) if b == block]
        if got != want:
            shown = lambda tiles: ", ".join(map(str, tiles[:6])) + (", …" if len(tiles) > 6 else "")  # noqa: E731
            return (f"block {block} computed the tiles (row, col) {shown(got) or 'none'} in that order; in grouped "
                    f"order, with {grid} blocks, it computes {shown(want)}",
                    ["tile number t of the loop is at (row, col) = tile_position(t, row_tiles, col_tiles): does the "
                     "kernel take each tile's row and column from tile_position, and step by cuda.gridDim.x?"])
    return None


def _persistent_hints(problem: Problem, observed: Observation | None, case: Case) -> list[str]:
    """Hints for the persistent exercise's wrong numbers: whole tiles never computed; only later tiles wrong."""
    from .exercise_solutions import expected_tile_order

    t = PERSISTENT_TILE
    order = expected_tile_order(ceil_div(case.m, t), ceil_div(case.n, t), PERSISTENT_GROUP_M)

    def elements(tile):
        return problem.mask[tile[0] * t:(tile[0] + 1) * t, tile[1] * t:(tile[1] + 1) * t]

    if problem.kind == "unwritten":
        missing = [number for number, tile in enumerate(order) if elements(tile).all()]
        if missing and all(elements(tile).all() == (number in missing) for number, tile in enumerate(order)
                           if elements(tile).any()):
            return [f"whole tiles were never computed: number{'s' if len(missing) > 1 else ''} "
                    f"{', '.join(map(str, missing))} in grouped order ({', '.join(str(order[i]) for i in missing)}). "
                    f"The grader launched {case.blocks} blocks this time (it varies): block b computes tiles b, "
                    "b + gridDim.x, b + 2·gridDim.x, …, so the loop steps by cuda.gridDim.x, up to the number of tiles"]
    if problem.kind in ("wrong", "nan") and observed is not None and observed.stores:
        first = {}
        for sequence, block, _, flat in observed.stores:
            tile = (flat // case.n // t, flat % case.n // t)
            if block not in first or sequence < first[block][0]:
                first[block] = (sequence, tile)
        first_tiles = {tile for _, tile in first.values()}
        if (all(not elements(tile).any() for tile in first_tiles)
                and any(elements(tile).any() for tile in order if tile not in first_tiles)):
            return ["each block's first tile is right and its later tiles are wrong: does every tile start from a "
                    "fresh sum (acc = 0 inside the loop over tiles, not once before it)?"]
    return problem.hints


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


def kernel_or_failure(exercise: Exercise, module, report: Report):
    """The exercise's kernel from the learner's module; None, with ``report`` failed, if it is not defined or not a
    kernel the grader can run (:func:`kernel_problem`). Every grader starts here."""
    kernel = getattr(module, exercise.kernel, None)
    if kernel is None:
        report.fail(f"{exercise.kernel} is not defined in the file")
        return None
    problem = kernel_problem(kernel, exercise.kernel)
    if problem is not None:
        report.fail(problem)
        return None
    return kernel


def compiles(exercise: Exercise, module, report: Report, check: Callable | None = None) -> bool:
    """Whether the learner's kernel compiles for a GPU (``check``: a grader's own compile check, default
    :func:`_check_compiles`), the report saying so either way."""
    (check or _check_compiles)(exercise, module, report)
    return report.passed


def opening_checks(exercise: Exercise, module, compile: bool = True, check: Callable | None = None):
    """A new report and the exercise's kernel after the checks a grader opens with (:func:`kernel_or_failure`, then
    :func:`compiles` unless ``compile`` is off); the kernel is None where one failed, the report saying why."""
    report = Report(exercise)
    kernel = kernel_or_failure(exercise, module, report)
    if kernel is not None and compile and not compiles(exercise, module, report, check):
        kernel = None
    return report, kernel


def grade(exercise: Exercise, module, seed: int = 0, say: Callable[[str], None] | None = None,
          time_limit: float = LAUNCH_SECONDS, compile: bool = True) -> Report:
    """Grade the kernel ``module`` defines for ``exercise`` (module: the learner's file, or a solution).

    ``compile``: compile the kernel for a GPU first (leave it on: off only for tests of the other checks)."""
    if exercise.grader is not None:
        return exercise.grader_module().grade(exercise, module, seed=seed, say=say, time_limit=time_limit,
                                              compile=compile)
    report = Report(exercise)
    kernel = kernel_or_failure(exercise, module, report)
    if kernel is None:
        return report
    _check_extras(exercise, module, report)  # first, as the stubs say (tile_position): checked on its own
    if not report.passed:
        return report
    if compile and not compiles(exercise, module, report):
        return report
    rng = np.random.default_rng(seed + 1)
    for case in cases(exercise, seed):
        if say is not None:
            say(f"  …     {case} on the {'simulator' if SIMULATOR else 'GPU'}")
        a, b, c = case_inputs(rng, case)
        failure, observed = _launch(exercise, kernel, a, b, c, case.blocks, time_limit)
        if failure is not None:
            return report.fail(f"{case}: {failure}")
        if observed is not None and observed.early_read is not None:
            return report.fail(f"{case}: {_early_read(observed, case.n)}")
        problem = compare(c, a, b, exercise.tile, observed.stored(c.shape) if observed is not None else None)
        if problem is not None:
            hints = problem.hints
            if exercise.name == "persistent":
                hints = _persistent_hints(problem, observed, case)
            return report.fail(f"{case}: {problem.what}", *hints)
        if observed is not None:
            idea = _stored_twice(exercise, observed, case)
            if idea is None and "coalesced" in exercise.ideas:
                idea = _coalescing(observed, case)
            if idea is None and "tiles" in exercise.ideas:
                idea = _tile_order(observed, case)
            if idea is None and "reuse" in exercise.ideas:
                idea = _reuse(exercise, observed, case)
            if idea is not None:
                return report.fail(f"{case}: {idea[0]}", *idea[1])
        report.ok(f"{case}: every element right" + (", " + _what_was_checked(exercise) if SIMULATOR else ""))
    if not SIMULATOR:  # a GPU does not check indices, and races show only when the schedule exposes them
        report.skip("out-of-bounds accesses, shared-memory races and how the kernel reads and writes memory: not "
                    f"checked on a GPU — NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check {exercise.name} checks them "
                    "on the simulator (or run under compute-sanitizer)")
    return report


def _what_was_checked(exercise: Exercise) -> str:
    said = []
    if exercise.uses_shared:
        said.append("no shared-memory race")
    if "coalesced" in exercise.ideas:
        said.append("warps store neighbouring columns")
    if "reuse" in exercise.ideas:
        said.append("A and B read once per tile")
    if "tiles" in exercise.ideas:
        said.append("whole tiles in grouped order")
    return ", ".join(said or ["each element stored once"])


def time_against_step(exercise: Exercise, module, size: int = 2048, repeats: int = 20) -> str:
    """On a GPU: the learner's kernel and the step's own, CUDA-event median of ``repeats`` at size³."""
    if exercise.grader is not None:
        return exercise.grader_module().time_against_step(exercise, module)
    from numba import cuda

    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), dtype=np.float32)
    # The persistent exercise: one block per SM (step 10 launches SMs × occupancy; the grader's few blocks are for
    # correctness only).
    blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT if exercise.name == "persistent" else None
    medians = {}
    for label, kernel in (("yours", getattr(module, exercise.kernel)),
                          ("the step's", getattr(exercise.solution(), exercise.kernel))):
        exercise.launch(kernel, a, b, c, blocks)  # compiles
        cuda.synchronize()
        start, end = cuda.event(), cuda.event()
        times = []
        for _ in range(repeats):
            start.record()
            exercise.launch(kernel, a, b, c, blocks)
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end))
        medians[label] = float(np.median(times))
    yours, step = medians["yours"], medians["the step's"]
    return (f"{size}³ on this GPU: yours {yours:.3f} ms ({2 * size**3 / yours / 1e9:.2f} TFLOPS), the step's "
            f"{step:.3f} ms ({2 * size**3 / step / 1e9:.2f} TFLOPS): yours takes {yours / step:.2f}× the step's time")


def check(name: str, path: str | Path | None = None, say: Callable[[str], None] = print,
          time_limit: float = LAUNCH_SECONDS) -> Report:
    """Load the learner's file for exercise ``name`` and grade it; on a GPU, time it if it passes."""
    exercise = get(name)
    path = Path(path) if path is not None else exercise.file
    say(f"exercise {name}: grading {path} on the {'simulator' if SIMULATOR else 'GPU'} …")
    if not path.exists():
        return Report(exercise).fail(f"{path} does not exist")
    try:
        module = load(path)
    except Exception as error:
        return Report(exercise).fail(import_failure(path, error))
    report = grade(exercise, module, say=say, time_limit=time_limit)
    if report.passed and not SIMULATOR:
        report.ok(time_against_step(exercise, module))
    return report


def listing() -> str:
    """One line per exercise, the name first, then the lesson it belongs to (its notebook) and the step it rebuilds."""
    width = max(len(e.name) for e in EXERCISES)
    lesson_width = max(len(e.lesson_name) for e in EXERCISES)
    return "\n".join(f"{e.name:<{width}}  lesson {e.lesson_name:<{lesson_width}}  step {get_number(e.step):>2} — "
                     f"{e.title}  ({_shown(e.file)})" for e in EXERCISES)


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
