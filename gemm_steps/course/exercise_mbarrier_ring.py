"""The grader of the mbarrier-ring exercise (``exercises/mbarrier_ring.py``, lesson 16): a ring of stages with
full/empty mbarriers and phase bits, checked on the simulator by what each thread did, in its own program order.

The simulator's mbarriers are Python twins (``toolkit/mbarrier_ops.py``); its threads run in whatever order Python
picks, so a wrong parity may happen to work. The grader wraps the twins for the launch and checks each thread against
the ring's protocol, which does not depend on that order:

* **parity**: a consumer's i-th wait on ``full[s]`` is for fill i of stage s (k-tile i·STAGES + s), so it names
  parity i % 2; the producer's wait on ``empty[s]`` before fill r names (r − 1) % 2 (release r − 1). Another parity
  passes at once (the phase before) or waits for a phase that never comes. Said with a drawing of the ring then;
* **a consumer that frees a stage before it has read it**: a read of stage s by a thread that has already arrived on
  ``empty[s]`` for the fill it waited for (the producer may be copying the next k-tile over it);
* **expect_tx**: the bytes the producer announces for a fill against the bytes its copy moves;
* **a missing arrival**: the twin's deadlock detector (:class:`~gemm_steps.toolkit.mbarrier_ops.MbarrierTimeout`),
  with a short wait limit here (:data:`WAIT_LIMIT_S`), its message, the ring, and who never arrived.

The first of these, in the order they happened, is reported; then the numbers.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

STAGES, BLOCK_K, BLOCK_M, MAX_N, CONSUMERS = 3, 8, 8, 32, 64
STAGE_FLOATS = BLOCK_K * MAX_N
THREADS = 32 + CONSUMERS
SIGNATURE = "void(float32[:, ::1], float32[::1], float32[:, ::1])"
#: The simulator's mbarrier wait limit while grading (the twin's own is 60 s): a right solution's longest wait is a
#: fraction of a second here.
WAIT_LIMIT_S = 5.0


def solution():
    from . import exercise_mbarrier_ring_solution

    return exercise_mbarrier_ring_solution


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"M×N×K = {self.m}×{self.n}×{self.k}"

    @property
    def blocks(self) -> int:
        return -(-self.m // BLOCK_M)


def cases(seed: int = 0) -> list[Case]:
    """Two shapes: N a multiple of 4 up to 32 (a k-tile of B is rows × N floats, a multiple of 16 bytes), K not a
    multiple of BLOCK_K (a short last k-tile) and over 2·STAGES k-tiles (every stage filled three times: both parities
    waited on, and a second wrap)."""
    rng = np.random.default_rng(seed)
    return [Case(BLOCK_M + int(rng.integers(1, BLOCK_M)), 4 * int(rng.integers(4, 8)),
                 BLOCK_K * (2 * STAGES + 1) + int(rng.integers(1, BLOCK_K))),
            Case(int(rng.integers(1, BLOCK_M)), 4 * int(rng.integers(2, 4)),
                 BLOCK_K * (3 * STAGES) + int(rng.integers(1, BLOCK_K)))]


# -- watching the launch ---------------------------------------------------------------------------------------------
@dataclass
class Violation:
    seq: int
    text: str
    hints: list


@dataclass
class Watch:
    kernel_file: str
    n: int = 0
    seq: int = 0
    names: dict = field(default_factory=dict)  # id(base buffer) → "full" / "empty" / "stages"
    barriers: dict = field(default_factory=dict)  # (name, index) → the twin
    waits: dict = field(default_factory=dict)  # (thread, name, index) → waits so far
    waiting: dict = field(default_factory=dict)  # (block, thread) → (name, index, parity, line) while it waits
    arrivals: dict = field(default_factory=dict)  # (thread, name, index) → arrivals so far
    arrived: dict = field(default_factory=dict)  # (block, name, index, phase) → threads that arrived in that phase
    fills: dict = field(default_factory=dict)  # stage → k-tiles copied into it, in order
    expects: dict = field(default_factory=dict)  # stage → [(bytes, line)] announced by arrive_expect_tx
    copies: dict = field(default_factory=dict)  # stage → [(bytes, line)] moved by copy_bulk
    consumers: set = field(default_factory=set)  # threads that arrived on an empty barrier
    violations: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> int:
        with self.lock:
            self.seq += 1
            return self.seq

    def line(self) -> int:
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != self.kernel_file:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else 0

    def code(self, line: int) -> str:
        from .race_check import source_line

        return source_line((self.kernel_file, line)) if line else "an unknown line"

    def fail(self, text: str, *hints: str) -> None:
        self.violations.append(Violation(self.next(), text, list(hints)))

    def picture(self, mark: tuple | None = None, note: str = "") -> str:
        """The ring as it is now: per stage, the k-tile it holds and its two barriers' phases."""
        lines = [f"the ring then ({STAGES} stages, k-tile t in stage t % {STAGES}):"]
        for s in range(STAGES):
            held = self.fills.get(s, [])
            cells = [f"stage {s}: {'k-tile ' + str(held[-1]) if held else 'nothing yet':<11}"]
            for name in ("full", "empty"):
                twin = self.barriers.get((name, s))
                if twin is None:
                    cells.append(f"{name}[{s}]: not initialised")
                    continue
                done = getattr(twin, "completed", 0)
                arrived = twin.expected - twin.pending
                cells.append(f"{name}[{s}]: {done} phase{'s' if done != 1 else ''} done, now phase {done} (parity "
                             f"{done % 2}): {arrived}/{twin.expected} arrived"
                             + (f", {twin.bytes_pending} bytes pending" if name == "full" else ""))
            row = " │ ".join(cells)
            if mark is not None and mark[1] == s:
                row += f"   ◀ {note}"
            lines.append("            " + row)
        return "\n".join(lines)


def _thread() -> int:
    return threading.current_thread().thread_id


def _block() -> int:
    return threading.current_thread().blockIdx.x


def _thread_name(thread: int) -> str:
    role = "the producer" if thread < 32 else f"consumer warp {thread // 32}"
    return f"threadIdx.x={thread} ({role})"


def _name(watch: Watch, array) -> str:
    buffer = np.asarray(array)
    while isinstance(buffer.base, np.ndarray):
        buffer = buffer.base
    return watch.names.get(id(buffer), "a barrier")


def _wrappers(watch: Watch, ops):
    """The learner's mbarrier calls, watched (each calls the twin it replaces)."""
    from types import SimpleNamespace

    twins = SimpleNamespace(**{name: getattr(ops, name) for name in ("mbarrier_init", "mbarrier_arrive",
                                                                     "mbarrier_arrive_expect_tx", "copy_bulk",
                                                                     "mbarrier_wait")})

    def mbarrier_init(array, index, count):
        twins.mbarrier_init(array, index, count)
        name = _name(watch, array)
        watch.barriers[(name, int(index))] = ops._barrier(array, index)
        if name == "full":  # a new block's ring (the simulator runs the blocks one after another)
            for log in (watch.fills, watch.expects, watch.copies):
                log.pop(int(index), None)

    def mbarrier_arrive(array, index):
        name, s, me = _name(watch, array), int(index), _thread()
        twin = ops._barrier(array, s)
        watch.arrived.setdefault((_block(), name, s, getattr(twin, "completed", 0)), set()).add(me)
        key = (_block(), me, name, s)
        watch.arrivals[key] = watch.arrivals.get(key, 0) + 1
        if name == "empty":
            watch.consumers.add(me)
        twins.mbarrier_arrive(array, index)

    def mbarrier_arrive_expect_tx(array, index, count):
        name, s, me = _name(watch, array), int(index), _thread()
        twin = ops._barrier(array, s)
        watch.arrived.setdefault((_block(), name, s, getattr(twin, "completed", 0)), set()).add(me)
        watch.expects.setdefault(s, []).append((int(count), watch.line()))
        _check_bytes(watch, s)
        twins.mbarrier_arrive_expect_tx(array, index, count)

    def copy_bulk(destination, to, source, start, count, array, index):
        s = int(index)
        watch.fills.setdefault(s, []).append(int(start) // (BLOCK_K * watch.n) if watch.n else -1)
        watch.copies.setdefault(s, []).append((int(count), watch.line()))
        _check_bytes(watch, s)
        twins.copy_bulk(destination, to, source, start, count, array, index)

    def mbarrier_wait(array, index, parity):
        name, s, me = _name(watch, array), int(index), _thread()
        key = (_block(), me, name, s)
        line = watch.line()
        i = watch.waits.get(key, 0)
        watch.waits[key] = i + 1
        parity = int(parity) & 1
        if name == "full":
            want, what = i % 2, f"its wait number {i} on full[{s}], for fill {i} of stage {s} (k-tile {i * STAGES + s})"
        else:
            fill = len(watch.copies.get(s, []))  # the fill the producer is about to make
            want = (fill - 1) % 2
            what = (f"before fill {fill} of stage {s} (k-tile {fill * STAGES + s}), for the consumers' release of "
                    f"fill {fill - 1}" if fill else f"before the first fill of stage {s}")
            if fill == 0 and parity == 1:
                want = 1  # a fresh barrier's 'phase before' passes at once: a producer may wait this way (CUTLASS)
        if parity != want:
            watch.fail(f"wrong parity: {_thread_name(me)} waited on {name}[{s}] with parity {parity}, at\n"
                       f"            {watch.code(line)}\n"
                       f"        {what}: that phase has parity {want}. With parity {parity} the wait "
                       + ("passes at once (it means the phase before, long complete)" if parity != want and
                          getattr(watch.barriers.get((name, s)), "completed", 0) > i - (name == "empty")
                          else "waits for a phase that has not begun — or passes at once on the phase before") +
                       f"\n        {watch.picture((name, s), f'{name}[{s}] waited on with parity {parity}, needs {want}')}",
                       "the r-th time a stage is filled completes phase r of its full barrier: the consumer of k-tile "
                       "t waits on full[t % STAGES] with parity (t // STAGES) % 2, the producer before refilling it "
                       "on empty[t % STAGES] with parity (t // STAGES − 1) % 2 (lesson 16, 'The ring')")
        watch.waiting[(_block(), me)] = (name, s, parity, line)
        try:
            twins.mbarrier_wait(array, index, parity)
        except ops.MbarrierTimeout as timeout:
            _deadlock(watch, name, s, me, line, parity, timeout)
            raise
        finally:
            watch.waiting.pop((_block(), me), None)

    return {"mbarrier_init": mbarrier_init, "mbarrier_arrive": mbarrier_arrive,
            "mbarrier_arrive_expect_tx": mbarrier_arrive_expect_tx, "copy_bulk": copy_bulk,
            "mbarrier_wait": mbarrier_wait}


def _check_bytes(watch: Watch, s: int) -> None:
    """The r-th expect_tx on full[s] against the r-th copy into stage s, once both are there."""
    expects, copies = watch.expects.get(s, []), watch.copies.get(s, [])
    r = min(len(expects), len(copies)) - 1
    if r < 0 or len(expects) != len(copies):
        return
    (announced, at), (moved, copied_at) = expects[r], copies[r]
    if announced != moved:
        tile = r * STAGES + s
        watch.fail(f"expect_tx with the wrong byte count: for k-tile {tile} (fill {r} of stage {s}) the producer "
                   f"announced {announced} bytes on full[{s}], at\n            {watch.code(at)}\n"
                   f"        and its copy moves {moved}, at\n            {watch.code(copied_at)}\n"
                   "        The phase completes when the announced bytes have landed: "
                   + ("more than come, so it never completes (a hang on a GPU)" if announced > moved else
                      "fewer, so on a GPU it may complete before the copy has landed"),
                   "announce exactly what the copy moves: rows × N × 4 bytes, with rows = BLOCK_K except for the "
                   "last k-tile when K is not a multiple of BLOCK_K")


def _deadlock(watch: Watch, name: str, s: int, me: int, line: int, parity: int, timeout) -> None:
    from gemm_steps.toolkit import mbarrier_ops

    said = f"the twin said: {timeout}"
    if name == "full":
        # A consumer that waits for a fill the producer never made: if the producer is itself stuck on an empty
        # barrier, that is where an arrival is missing. Whichever of the two waits timed out first (the simulator's
        # schedule decides), the report names the root: the producer's wait and the arrivals its barrier lacks.
        stuck = [(thread, waiting) for (block, thread), waiting in list(watch.waiting.items())
                 if block == _block() and waiting[0] == "empty"]
        if stuck:
            me, (name, s, parity, line) = stuck[0]
            twin = watch.barriers.get((name, s))
            said = (f"the deadlock detector found: mbarrier {s}: phase of parity {parity} did not complete in "
                    f"{mbarrier_ops.SIMULATOR_WAIT_LIMIT_S:g} s ({getattr(twin, 'pending', '?')} of "
                    f"{getattr(twin, 'expected', '?')} arrivals and {getattr(twin, 'bytes_pending', '?')} bytes still "
                    "missing), and the consumers wait for the fill that comes after it")
    twin = watch.barriers.get((name, s))
    phase = getattr(twin, "completed", 0)
    arrived = watch.arrived.get((_block(), name, s, phase), set())
    if name == "empty":
        everyone = watch.consumers | set(range(32, THREADS))
        missing = sorted(everyone - arrived)
        who = (f"consumer threads that never arrived on empty[{s}] in this phase: "
               f"{_ranges(missing)}" if missing else "")
    else:
        who = (f"the producer's arrive_expect_tx on full[{s}] never came" if not arrived else
               f"the producer arrived; {twin.bytes_pending if twin else '?'} bytes it announced never landed")
    watch.fail(f"a missing arrival — the deadlock detector: {_thread_name(me)} waited on {name}[{s}] with parity "
               f"{parity} at\n            {watch.code(line)}\n        and {said}\n"
               f"        {who}\n        {watch.picture((name, s), f'{_thread_name(me)} waits here')}",
               "every phase needs all its arrivals: full[s] one (the producer's arrive_expect_tx) and the bytes it "
               f"announced; empty[s] one from each of the {CONSUMERS} consumer threads, after it read the stage — "
               "every k-tile, whichever branch the thread took")


def _ranges(values: list[int]) -> str:
    runs = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in runs)


@contextmanager
def _watched(watch: Watch, module):
    """The learner's module and the toolkit's twins, watched for the launch; the stage buffer's reads checked."""
    from numba.cuda.simulator import kernelapi

    from ..toolkit import mbarrier_ops as ops
    from .race_check import _filled, code_at

    wrappers = _wrappers(watch, ops)
    saved_module = {name: module.__dict__[name] for name in wrappers if name in module.__dict__}
    saved_ops = {name: getattr(ops, name) for name in wrappers}
    saved_limit = ops.SIMULATOR_WAIT_LIMIT_S
    original_shared = kernelapi.FakeCUDAShared.array
    original_complete = ops._Mbarrier._complete_if_done

    def complete_if_done(self):
        before = self.phase
        original_complete(self)
        if self.phase != before:
            self.completed = getattr(self, "completed", 0) + 1

    class Stages(np.ndarray):
        def __getitem__(self, key):
            if isinstance(key, (int, np.integer)):
                _stage_read(watch, int(key))
            return np.ndarray.__getitem__(self.view(np.ndarray), key)

    arrays: dict = {}
    creating = threading.Lock()

    def shared_array(self, shape, dtype, alignment=None):
        caller = sys._getframe(1)
        where = (caller.f_code.co_filename, caller.f_lineno)
        with creating:
            if where not in arrays:
                from numba.cuda import types
                from numba.cuda.np import numpy_support

                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                array = _filled(shape, dtype)
                name = code_at(*where).split("=")[0].strip()
                watch.names[id(array)] = name
                arrays[where] = array.view(Stages) if array.dtype.kind == "f" else array
            return arrays[where]

    for name, wrapper in wrappers.items():
        if name in module.__dict__:
            module.__dict__[name] = wrapper
        setattr(ops, name, wrapper)
    ops.SIMULATOR_WAIT_LIMIT_S = WAIT_LIMIT_S
    ops._Mbarrier._complete_if_done = complete_if_done
    kernelapi.FakeCUDAShared.array = shared_array
    try:
        yield
    finally:
        module.__dict__.update(saved_module)
        for name, original in saved_ops.items():
            setattr(ops, name, original)
        ops.SIMULATOR_WAIT_LIMIT_S = saved_limit
        ops._Mbarrier._complete_if_done = original_complete
        kernelapi.FakeCUDAShared.array = original_shared


def _stage_read(watch: Watch, element: int) -> None:
    s, me = element // STAGE_FLOATS, _thread()
    waited = watch.waits.get((_block(), me, "full", s), 0)
    released = watch.arrivals.get((_block(), me, "empty", s), 0)
    if waited == 0:
        line = watch.line()
        watch.fail(f"{_thread_name(me)} read stage {s} before it ever waited on full[{s}], at\n"
                   f"            {watch.code(line)}\n        {watch.picture((None, s), 'read here')}",
                   "a consumer waits on full[s] (its bytes have landed) before it reads stage s")
    elif released >= waited:
        line = watch.line()
        watch.fail(f"a consumer freed a stage before it read it: {_thread_name(me)} arrived on empty[{s}] (released "
                   f"k-tile {(waited - 1) * STAGES + s}) and then read stage {s}, at\n            {watch.code(line)}\n"
                   f"        The producer may already be copying k-tile {waited * STAGES + s} over it\n"
                   f"        {watch.picture((None, s), 'read after its release')}",
                   "arrive on empty[s] after the last read of the stage, never before")


def launch(kernel, module, a, b, c, time_limit: float):
    from . import exercises

    watch = Watch(kernel.py_func.__code__.co_filename, n=c.shape[1])
    failure, tc = exercises.watched_launch(
        kernel, f"mbarrier_ring_kernel on {c.shape[0]}×{c.shape[1]}×{a.shape[1]}", time_limit,
        lambda tc: kernel[-(-c.shape[0] // BLOCK_M), THREADS](a, b.ravel(), tc), [_watched(watch, module)], c,
        known=[(IndexError, _outside)])
    return failure, watch, tc


def _outside(error) -> str:
    """A read or write outside an array, with where to look (this exercise's and the cluster exercise's)."""
    return (f"a thread read or wrote outside an array: {error}\n        (as tid=[x, y, z] ctaid=[x, y, z]) — "
            "check row < M and col < N, and the stage offsets (stage s at s · STAGE_FLOATS)")


def grade(exercise, module, seed: int = 0, say=None, time_limit: float | None = None, compile: bool = True):
    from . import exercises

    time_limit = exercises.LAUNCH_SECONDS if time_limit is None else time_limit
    report, kernel = exercises.opening_checks(exercise, module, compile)
    if kernel is None:
        return report
    if not exercises.SIMULATOR:
        report.skip("the ring is checked on the simulator (its mbarriers are twins there): NUMBA_ENABLE_CUDASIM=1 "
                    "gemm-steps exercise check mbarrier_ring")
        return report
    rng = np.random.default_rng(seed + 1)
    for case in cases(seed):
        if say is not None:
            say(f"  …     {case} on the simulator")
        a, b, c = exercises.case_inputs(rng, case)
        failure, watch, tc = launch(kernel, module, a, b, c, time_limit)
        if watch.violations:
            first = min(watch.violations, key=lambda v: v.seq)
            return report.fail(f"{case}: {first.text}", *first.hints)
        if failure is not None:
            return report.fail(f"{case}: {failure}")
        problem = exercises.compare(c, a, b, (BLOCK_M, case.n), exercises.stored_mask(c.shape, tc.stores))
        if problem is not None:
            return report.fail(f"{case}: {problem.what}", *problem.hints)
        report.ok(f"{case}: every element right; every wait named its phase's parity, every stage read between its "
                  "wait and its release, every expect_tx the bytes of its copy")
    return report


def time_against_step(exercise, module) -> str:
    return ("not timed: this ring feeds CUDA-core multiply-adds from one producer thread; step 16's speed is "
            "gemm-steps bench --steps tma_pipeline")
