"""The grader of exercise ``tensor_cores`` (lesson 12): one warp's 16×8×8 ``mma_tf32``, its A and B fragments loaded
and its D fragment stored by the layout — and the pieces the ``three_tf32`` grader shares (one warp's launch, the
watched ``mma_tf32``).

``exercises.py`` registers the exercise (``Exercise.grader``) and calls :func:`grade`. The checks, on the simulator:

* **it compiles for a GPU** (``exercises._check_compiles``: NVVM in the GPU-mode worker);
* **the fragments, lane by lane**: A and B hold their own index as their value (``A[i][k] = 1 + 8i + k``,
  ``B[k][n] = 129 + 8k + n``: every value exact in TF32), and the simulator's ``mma_tf32`` is watched — each lane's
  ten operands are recorded, and instead of D each lane gets back a code of its own (``lane``, ``r``). So the grader
  reads which element each lane passed as ``a[r]`` and ``b[r]``, and which lane's ``d[r]`` each element of C holds,
  and names the first one out of place ("lane 5's a[1] holds A[13][2], the layout wants A[9][1]") — with a hint when
  the pattern is a transposed fragment, lanes mapped to the wrong (group, pair), or registers swapped;
* **the numbers**: random A and B through the simulator's real ``mma_tf32`` twin, against A·B with A and B rounded to
  TF32 (``mma_tf32_reference``); a kernel that hands the tensor core unrounded floats gets A·B of truncated inputs
  (what the tensor core reads of them), and is told to round with ``to_tf32``.

On a GPU only the compile check and the numbers run (the watched twin is the simulator's).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..toolkit.backend import SIMULATOR
from ..toolkit.tensor_core_ops import mma_tf32_reference, round_to_tf32, truncate_to_tf32
from .gpu_model import a_element, b_element, c_element
from .race_check import abort_after

WARP = 32
#: Seconds one launch of one warp may take (a right kernel takes well under one on the simulator); past it, lanes
#: waiting in a warp operation are aborted.
LAUNCH_SECONDS = 20.0
A_SHAPE, B_SHAPE, C_SHAPE = (16, 8), (8, 8), (16, 8)
A_FIRST, B_FIRST = 1, 129  # A[i][k] = 1 + 8i + k (1 … 128), B[k][n] = 129 + 8k + n (129 … 192)
D_FIRST = 1000  # lane L's d[r] comes back as 1000 + 4L + r (1000 … 1127): which lane's d[r] an element of C holds
#: A right kernel's C is A·B of TF32-rounded inputs to this many float32 epsilons of |A|·|B| (the twin sums in float64).
NUMBERS_SLACK = 4.0
EPS32 = float(np.finfo(np.float32).eps)
LAYOUT_TEXT = ("with group = lane // 4 and pair = lane % 4: a0 = A[group][pair], a1 = A[group + 8][pair], "
               "a2 = A[group][pair + 4], a3 = A[group + 8][pair + 4]; b0 = B[pair][group], b1 = B[pair + 4][group]; "
               "d0 → C[group][2·pair], d1 → C[group][2·pair + 1], d2 → C[group + 8][2·pair], "
               "d3 → C[group + 8][2·pair + 1] (lesson 12, 'The idea')")


# -- watching mma_tf32 on the simulator ---------------------------------------------------------------------------------
@dataclass
class MmaRecord:
    """What the warp's ``mma_tf32`` calls saw: per completed call, the 32 lanes' (a0..a3, b0, b1, c0..c3); per lane,
    how many calls it entered (a lane still waiting when the launch ended is in ``arrivals`` and not in ``calls``)."""
    calls: list = field(default_factory=list)
    arrivals: list = field(default_factory=lambda: [0] * WARP)

    def waiting(self) -> list[int]:
        """Lanes that entered an ``mma_tf32`` the rest of the warp never reached."""
        return [lane for lane in range(WARP) if self.arrivals[lane] > len(self.calls)]


def _warp_tiles(slots):
    """The 16×8 A, 8×8 B and 16×8 C a warp's 32 lanes handed ``mma_tf32``, assembled by the layout (float32)."""
    lanes = np.array(slots, dtype=np.float32)
    a, b, c = np.zeros(A_SHAPE, np.float32), np.zeros(B_SHAPE, np.float32), np.zeros(C_SHAPE, np.float32)
    for lane in range(WARP):
        for r in range(4):
            a[a_element(lane, r)] = lanes[lane, r]
            c[c_element(lane, r)] = lanes[lane, 6 + r]
        for r in range(2):
            b[b_element(lane, r)] = lanes[lane, 4 + r]
    return a, b, c


def truncating_warp_mma(slots) -> list:
    """The twin's D = A·B + C with each float32 result truncated toward zero instead of rounded to nearest: the model
    of the tensor core's biased accumulation lesson 13 and docs/fp32_contract.md use (inputs read as TF32, as the
    twin reads them)."""
    from ..harness.fp32_contract import _f32

    a, b, c = _warp_tiles(slots)
    with np.errstate(invalid="ignore", over="ignore"):
        d = truncate_to_tf32(a).astype(np.float64) @ truncate_to_tf32(b).astype(np.float64) + c
    d = _f32(d, truncate=True)
    return [tuple(d[c_element(lane, r)] for r in range(4)) for lane in range(WARP)]


@contextmanager
def watched_mma(answer=None):
    """Within this block the simulator's ``mma_tf32`` records every warp's operands (:class:`MmaRecord`), and each
    lane's result is ``answer(slots)[lane]`` (default: the twin's own D)."""
    from ..toolkit import tensor_core_ops as tc

    record = MmaRecord()
    compute, exchange = tc._warp_mma, tc._exchange
    lock = threading.Lock()

    def watched_compute(slots):
        record.calls.append([tuple(float(v) for v in lane) for lane in slots])
        return (answer or compute)(slots)

    def watched_exchange(thread):
        with lock:
            record.arrivals[thread.thread_id % WARP] += 1
        return exchange(thread)

    tc._warp_mma, tc._exchange = watched_compute, watched_exchange
    try:
        yield record
    finally:
        tc._warp_mma, tc._exchange = compute, exchange


def _ranges(lanes: list[int]) -> str:
    """``[0, 1, 2, 3, 8]`` → ``"0–3, 8"``."""
    parts, start = [], None
    for i, lane in enumerate(lanes):
        if start is None:
            start = lane
        if i + 1 == len(lanes) or lanes[i + 1] != lane + 1:
            parts.append(str(start) if start == lane else f"{start}–{lane}")
            start = None
    return ", ".join(parts)


def run_one_warp(exercise, kernel, a, b, c, answer=None, time_limit: float = LAUNCH_SECONDS):
    """Launch ``kernel`` on one warp with ``mma_tf32`` watched (simulator) or as it is (GPU): (failure message or
    None, :class:`exercises.Observation` or None, :class:`MmaRecord` or None)."""
    from . import exercises

    if not SIMULATOR:
        failure, observed = exercises._launch(exercise, kernel, a, b, c, None, time_limit)
        return failure, observed, None
    with watched_mma(answer) as record, abort_after(time_limit):
        failure, observed = exercises._launch(exercise, kernel, a, b, c, None, time_limit + 10)
    if failure is not None:
        waiting = record.waiting()
        if waiting:
            absent = [lane for lane in range(WARP) if lane not in waiting]
            failure = (f"lanes {_ranges(waiting)} called mma_tf32 and waited for lane{'s' if len(absent) > 1 else ''} "
                       f"{_ranges(absent)}, which never called it (stopped after {time_limit:.0f} s): mma_tf32 is one "
                       "instruction of the whole warp (.sync.aligned) — every lane calls it, together, with its own "
                       "fragments")
        elif "outside a matrix" in failure:
            failure = failure.split("\n")[0] + (f"\n        a is {A_SHAPE[0]}×{A_SHAPE[1]}, b {B_SHAPE[0]}×{B_SHAPE[1]} "
                                                f"(K×N), c {C_SHAPE[0]}×{C_SHAPE[1]}: {LAYOUT_TEXT}")
    return failure, observed, record


# -- the exercise's checks ------------------------------------------------------------------------------------------------
def coded_inputs() -> tuple[np.ndarray, np.ndarray]:
    """A and B whose values name their own element: A[i][k] = 1 + 8i + k, B[k][n] = 129 + 8k + n."""
    a = (A_FIRST + np.arange(16 * 8)).reshape(A_SHAPE).astype(np.float32)
    b = (B_FIRST + np.arange(8 * 8)).reshape(B_SHAPE).astype(np.float32)
    return a, b


def element_name(value: float) -> str:
    """What a value of the coded inputs is: ``"A[13][2]"``, ``"B[3][1]"``, or the value itself."""
    if value == int(value) and A_FIRST <= value < A_FIRST + 128:
        i = int(value) - A_FIRST
        return f"A[{i // 8}][{i % 8}]"
    if value == int(value) and B_FIRST <= value < B_FIRST + 64:
        i = int(value) - B_FIRST
        return f"B[{i // 8}][{i % 8}]"
    return f"{value:g} (no element of A or B)"


def _want(operand: str, lane: int, r: int) -> str:
    row, col = (a_element if operand == "a" else b_element)(lane, r)
    return f"{operand.upper()}[{row}][{col}]"


def fragment_problems(lanes: list) -> tuple[str, list[str]] | None:
    """None if every lane passed A's and B's elements by the layout (and zeros as C); else the first one out of place
    and hints. ``lanes``: the 32 lanes' (a0..a3, b0, b1, c0..c3) of one ``mma_tf32``."""
    got = {(op, lane, r): element_name(lanes[lane][r if op == "a" else 4 + r])
           for lane in range(WARP) for op, count in (("a", 4), ("b", 2)) for r in range(count)}
    wrong = [(op, lane, r) for (op, lane, r), name in got.items() if name != _want(op, lane, r)]
    if not wrong:
        nonzero = [(lane, r) for lane in range(WARP) for r in range(4) if lanes[lane][6 + r] != 0]
        if nonzero:
            lane, r = nonzero[0]
            return (f"lane {lane} passed c[{r}] = {lanes[lane][6 + r]:g}: D = A·B + C, and this exercise's C starts at "
                    "zero", ["pass float32(0.0) as c0 … c3"])
        return None
    op, lane, r = wrong[0]
    what = (f"lane {lane}'s {op}[{r}] holds {got[op, lane, r]}, the layout wants {_want(op, lane, r)} ({len(wrong)} of "
            f"{WARP * 6} A and B elements the lanes passed are out of place)")
    hints = []
    for operand in ("a", "b"):
        mine = [(o, l, q) for o, l, q in wrong if o == operand]
        if not mine:
            continue
        letter = operand.upper()
        names = {key: got[key] for key in mine}
        element = a_element if operand == "a" else b_element
        swapped = [f"{letter}[{element(l, q)[1]}][{element(l, q)[0]}]" for _, l, q in mine]
        if all(name == flipped for name, flipped in zip(names.values(), swapped)):
            stored = "A is 16×8, a[row, k]" if operand == "a" else "B is K×N, b[k, n]: k = pair (+ 4), n = group"
            hints.append(f"every misplaced {letter} element is the transpose of the one wanted ({letter}[col][row] "
                         f"for {letter}[row][col]): {stored}")
            continue
        count = 4 if operand == "a" else 2
        lanes_wrong = sorted({l for _, l, _ in mine})
        moved = {}
        for l in lanes_wrong:  # does lane l pass exactly what another lane should?
            row = [got[operand, l, q] for q in range(count)]
            moved[l] = next((other for other in range(WARP) if [_want(operand, other, q) for q in range(count)] == row),
                            None)
        if all(other is not None for other in moved.values()):
            l = lanes_wrong[0]
            hints.append(f"{len(lanes_wrong)} lanes pass another lane's {letter} elements (lane {l} passes lane "
                         f"{moved[l]}'s): lane = 4·group + pair, so group = lane // 4 and pair = lane % 4")
            continue
        regs = {}
        for l in lanes_wrong:  # or its own elements in the wrong registers?
            want = [_want(operand, l, q) for q in range(count)]
            row = [got[operand, l, q] for q in range(count)]
            regs[l] = sorted(row) == sorted(want)
        if all(regs.values()):
            hints.append(f"each lane passes its own {letter} elements, in the wrong registers: the order is "
                         + ("a0 = A[group][pair], a1 = A[group + 8][pair], a2 = A[group][pair + 4], "
                            "a3 = A[group + 8][pair + 4]" if operand == "a" else
                            "b0 = B[pair][group], b1 = B[pair + 4][group]"))
    hints.append(f"the layout: {LAYOUT_TEXT}")
    return what, hints


def store_problems(c: np.ndarray, observed) -> tuple[str, list[str]] | None:
    """None if each lane's d[r] (coded ``D_FIRST + 4·lane + r``) is where the layout puts it; else the first one out
    of place."""
    codes = {}
    for (i, j), value in np.ndenumerate(c):
        if np.isfinite(value) and value == int(value) and D_FIRST <= value < D_FIRST + 4 * WARP:
            codes.setdefault(divmod(int(value) - D_FIRST, 4), []).append((i, j))
    where = lambda ij: f"C[{ij[0]}][{ij[1]}]"  # noqa: E731
    for lane in range(WARP):
        for r in range(4):
            want = c_element(lane, r)
            places = codes.get((lane, r), [])
            if places == [want]:
                continue
            hint = [f"the layout: {LAYOUT_TEXT}"]
            if not places:
                return f"lane {lane}'s d[{r}] was stored nowhere in C; the layout puts it at {where(want)}", hint
            other = [p for p in places if p != want]
            return (f"lane {lane}'s d[{r}] was stored at {', '.join(map(where, other))}; the layout puts it at "
                    f"{where(want)}" + (" (and there)" if want in places else ""), hint)
    counts = np.bincount([store[3] for store in observed.stores], minlength=c.size) if observed else None
    if counts is not None and (counts > 1).any():
        flat = int(np.flatnonzero(counts > 1)[0])
        return (f"C[{flat // c.shape[1]}][{flat % c.shape[1]}] was stored {counts[flat]} times: each lane stores its "
                "four d values once", [f"the layout: {LAYOUT_TEXT}"])
    return None


def _coded_answer(slots) -> list:
    return [tuple(np.float32(D_FIRST + 4 * lane + r) for r in range(4)) for lane in range(WARP)]


def grade(exercise, module, seed: int = 0, say=None, time_limit: float = LAUNCH_SECONDS, compile: bool = True):
    from . import exercises

    report, kernel = exercises.opening_checks(exercise, module, compile)
    if kernel is None:
        return report
    time_limit = min(time_limit, LAUNCH_SECONDS)
    if SIMULATOR:
        if say is not None:
            say("  …     the fragments, on index-coded A and B")
        a, b = coded_inputs()
        c = np.full(C_SHAPE, exercises.POISON_BITS, dtype=np.uint32).view(np.float32)
        failure, observed, record = run_one_warp(exercise, kernel, a, b, c, _coded_answer, time_limit)
        if failure is not None:
            return report.fail(f"the fragments: {failure}")
        if observed.early_read is not None:
            return report.fail(f"the fragments: {exercises._early_read(observed, C_SHAPE[1])}")
        if not record.calls:
            return report.fail("the warp never called mma_tf32: this exercise is one warp's D = A·B on the tensor core",
                               "every lane loads its 4 elements of A and 2 of B, calls mma_tf32 once with them (and "
                               "four zeros as C), and stores the 4 values it gets back", f"the layout: {LAYOUT_TEXT}")
        if len(record.calls) > 1:
            return report.fail(f"the warp called mma_tf32 {len(record.calls)} times: one 16×8×8 product is one call "
                               "of the whole warp", "call it once, outside any loop, every lane with its own fragments")
        found = fragment_problems(record.calls[0]) or store_problems(c, observed)
        if found is not None:
            return report.fail(f"the fragments: {found[0]}", *found[1])
        report.ok("the fragments: each lane passed the A and B elements the layout names and stored its d where the "
                  "layout puts it (A and B index-coded, 32 lanes × 10 operands and 128 elements of C checked)")
    else:
        report.skip("the fragments lane by lane: checked on the simulator (NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise "
                    f"check {exercise.name})")
    _check_numbers(exercise, kernel, report, seed, say, time_limit)
    return report


def _check_numbers(exercise, kernel, report, seed: int, say, time_limit: float) -> None:
    from . import exercises

    if say is not None:
        say("  …     random A and B, through the mma")
    rng = np.random.default_rng(seed + 1)
    a = rng.standard_normal(A_SHAPE, dtype=np.float32)
    b = rng.standard_normal(B_SHAPE, dtype=np.float32)
    c = np.full(C_SHAPE, exercises.POISON_BITS, dtype=np.uint32).view(np.float32)
    failure, observed, _ = run_one_warp(exercise, kernel, a, b, c, None, time_limit)
    if failure is not None:
        report.fail(f"random A and B: {failure}")
        return
    reference = mma_tf32_reference(a, b, np.zeros(C_SHAPE, np.float32)).astype(np.float64)
    scale = np.abs(round_to_tf32(a)).astype(np.float64) @ np.abs(round_to_tf32(b)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        error = np.abs(c.astype(np.float64) - reference) / scale
    wrong = ~(error <= NUMBERS_SLACK * EPS32)
    if not wrong.any():
        report.ok(f"random A and B: D = A·B with A and B rounded to TF32, every element to {NUMBERS_SLACK:g} float32 "
                  "epsilons of |A|·|B|")
        return
    i, j = (int(x) for x in np.argwhere(wrong)[0])
    truncated = truncate_to_tf32(a).astype(np.float64) @ truncate_to_tf32(b).astype(np.float64)
    with np.errstate(invalid="ignore"):
        like_truncated = np.abs(c.astype(np.float64) - truncated) / scale <= NUMBERS_SLACK * EPS32
    hints = []
    if like_truncated.all():
        hints.append(f"C is A·B of A and B truncated to TF32 (largest error {np.nanmax(error):.1e} of |A|·|B|): that "
                     "is what the tensor core reads of floats handed to it unrounded — round each element with "
                     "to_tf32 as you load it (lesson 12, 'TF32: what is lost': rounding halves the error)")
    report.fail(f"random A and B: {int(wrong.sum())} of {c.size} elements of C are not A·B of A and B rounded to TF32, "
                f"first C[{i}][{j}] = {c[i, j]:.7g} where it is {reference[i, j]:.7g}", *hints)


def solution():
    from . import exercise_solutions_tensor_cores

    return exercise_solutions_tensor_cores


def time_against_step(exercise, module) -> str:
    return ("one warp's 16×8×8 tile: nothing here to time against step 12's kernel (lesson 12 times the step; "
            "gemm-steps bench --steps 12)")
