"""What the exercise grader watches while a kernel runs on Numba's CUDA simulator: shared-memory races, reads of
memory nobody wrote, and every access to the matrices (what ``compute-sanitizer`` and a profiler tell on a GPU).

On the simulator the threads of a block are Python threads, and whether a missing ``cuda.syncthreads()`` gives a
wrong answer depends on how Python happens to interleave them — usually it does not, so a kernel with a race can
pass a correctness check by luck. This module makes the race visible every time instead. Inside
:func:`detect_races`:

* every ``cuda.shared.array`` the kernel creates is a :class:`TrackedShared`, which remembers, per element, which
  thread last wrote it and which threads read it, at which source line, and in which *barrier interval* (the
  stretch of a block's run between two ``syncthreads``);
* a thread reading an element another thread wrote in the same interval (read-after-write), or writing one another
  thread read or wrote in the same interval (write-after-read, write-after-write), is a race: nothing orders the
  two accesses, so on a GPU either may come first. :class:`SharedMemoryRace` names the two source lines;
* a thread reading an element that no thread of its block has written is :class:`UninitializedRead` (on a GPU,
  shared memory starts with whatever was there; here it starts as NaN);
* two ``cuda.shared.array`` calls on one source line fail with :class:`SharedArraysOnOneLine`: the simulator tells
  allocations apart by line, so it would give both the same storage (on a GPU they are two arrays).

:func:`nan_local_arrays` fills ``cuda.local.array``\\ s with NaN, so an accumulator that is never zeroed shows.
:class:`TrackedGlobal` wraps a matrix argument: it counts reads and records who stored each element, and when.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import os
import sys
import threading
from contextlib import contextmanager

import numpy as np

#: Barrier intervals of one block are numbered ``block * INTERVALS_PER_BLOCK + barriers passed``.
INTERVALS_PER_BLOCK = 1 << 32
#: An element read by more than one thread in an interval.
MANY_READERS = -2


class SimulatorCheck(RuntimeError):
    """A check of the grader failed inside a simulated kernel (the message says what and where)."""


class SharedMemoryRace(SimulatorCheck):
    """Two threads of a block touched one shared-memory element with no ``syncthreads`` between them."""


class UninitializedRead(SimulatorCheck):
    """A thread read a shared-memory element that no thread of its block had written."""


class EarlyReturn(SimulatorCheck):
    """A thread of a block finished while the rest of its block still had a ``syncthreads`` to reach."""


class SharedArraysOnOneLine(SimulatorCheck):
    """Two ``cuda.shared.array`` calls on one line: the simulator would give them the same storage."""


class LaunchStopped(SimulatorCheck):
    """The launch ran past its time limit: its threads stop at their next access to an array."""


class Deadline:
    """Set ``expired`` and every thread of the launch stops at its next access to a watched array or barrier (a
    simulator thread cannot be killed; a thread of a stopped launch that kept running would take a core)."""

    def __init__(self):
        self.expired = False

    def check(self) -> None:
        if self.expired:
            raise LaunchStopped("the launch ran past its time limit")


NO_DEADLINE = Deadline()


def _where_am_i() -> tuple[int, int]:
    """(linear thread index in the block, barrier interval) of the simulator thread running now."""
    me = threading.current_thread()
    try:
        return me.thread_id, me.race_interval
    except AttributeError:  # first shared access of this thread: number its block's intervals
        me.race_interval = block_number(me) * INTERVALS_PER_BLOCK
        return me.thread_id, me.race_interval


def block_number(thread=None) -> int:
    """The linear index of the block the simulator thread ``thread`` (default: this one) belongs to."""
    thread = thread or threading.current_thread()
    block, grid = thread.blockIdx, thread._manager._grid_dim
    return block.x + grid[0] * (block.y + grid[1] * block.z)


def thread_name(thread_id: int, block_dim) -> str:
    x = thread_id % block_dim[0]
    y = thread_id // block_dim[0] % block_dim[1]
    return f"threadIdx=({x}, {y})" if block_dim[1] > 1 else f"threadIdx.x={x}"


def _block_name() -> str:
    block = threading.current_thread().blockIdx
    return f"blockIdx=({block.x}, {block.y})"


def code_at(filename: str, line: int) -> str:
    """Line ``line`` of the file as it is now (a learner edits and grades again: linecache would keep the old one)."""
    linecache.checkcache(filename)
    return linecache.getline(filename, line).strip()


def source_line(where: tuple[str, int] | None) -> str:
    """``line N of FILE: the code`` for a (file, line) pair."""
    if where is None:
        return "an unknown line"
    filename, line = where
    code = code_at(filename, line)
    return f"line {line} of {os.path.basename(filename)}" + (f": {code}" if code else "")


def _caller(depth: int) -> tuple[str, int]:
    frame = sys._getframe(depth + 1)
    return frame.f_code.co_filename, frame.f_lineno


_GERUND = {"wrote": "writing", "read": "reading"}


def _barrier_between(filename: str, first: int, last: int) -> int | None:
    """The number of a line strictly between ``first`` and ``last`` of the file that calls ``syncthreads``, if any."""
    for line in range(first + 1, last):
        code = code_at(filename, line)
        if "syncthreads(" in code and not code.startswith("#"):
            return line
    return None


class TrackedShared(np.ndarray):
    """A shared array that records who touched each element when (see the module docstring)."""

    def _elements(self, key) -> list[int]:
        """Flat indices of the elements ``self[key]`` touches (fast for the usual scalar index)."""
        strides = self.tracker["strides"]
        if isinstance(key, tuple) and len(key) == len(strides):
            try:
                return [sum(int(i) * s for i, s in zip(key, strides))]
            except TypeError:  # a slice or an array in the key
                pass
        elif len(strides) == 1 and isinstance(key, (int, np.integer)):
            return [int(key)]
        return np.atleast_1d(self.tracker["index"][key]).ravel().tolist()

    def _track(self, key, writing: bool) -> None:
        thread, interval = _where_am_i()
        tracker = self.tracker
        if tracker["deadline"].expired:
            tracker["deadline"].check()
        writer, written, reader, read = tracker["writer"], tracker["written"], tracker["reader"], tracker["read"]
        lines = tracker["lines"]
        kernel = sys._getframe(2)  # _track ← __getitem__/__setitem__ ← the kernel
        here = kernel.f_lineno  # (a line number only: the other access of a race is in the same file)
        block_start = interval - interval % INTERVALS_PER_BLOCK
        # No lock: under the GIL an interleaving can only hide a race at one element (it is seen at the next),
        # never invent one, and 1024 simulator threads queueing on a lock would slow the run down a hundredfold.
        for element in self._elements(key):
            if written[element] == interval and writer[element] != thread:
                self._race(element, "wrote" if writing else "read", thread, kernel, "wrote", writer[element],
                           lines[2 * element])
            if writing:
                if read[element] == interval and reader[element] != thread:  # MANY_READERS: another thread
                    self._race(element, "wrote", thread, kernel, "read", reader[element], lines[2 * element + 1])
                writer[element], written[element], lines[2 * element] = thread, interval, here
            else:
                if written[element] < block_start and element not in tracker["unwritten_reads"]:
                    tracker["unwritten_reads"][element] = self._uninitialized(element, thread, kernel)
                if read[element] != interval:
                    reader[element], read[element] = thread, interval
                elif reader[element] != thread:
                    reader[element] = MANY_READERS
                lines[2 * element + 1] = here

    def _index(self, element) -> str:
        """``i, j`` of a flat element index, as it is written between brackets."""
        return ", ".join(str(int(i)) for i in np.unravel_index(int(element), self.tracker["index"].shape))

    def _race(self, element, doing, thread, frame, done, other, there) -> None:
        me = threading.current_thread()
        block_dim = me._manager._block_dim
        here, there = (frame.f_code.co_filename, frame.f_lineno), (frame.f_code.co_filename, there)
        other_name = "another thread" if other == MANY_READERS else thread_name(int(other), block_dim)
        barriers = me.race_interval % INTERVALS_PER_BLOCK  # the block's syncthreads both threads had passed
        passed = f"after {barriers} cuda.syncthreads() of the block" if barriers else "before the first cuda.syncthreads()"
        between = _barrier_between(here[0], min(here[1], there[1]), max(here[1], there[1]))
        if between is not None:  # a barrier stands between the lines, yet both came in one interval: two passes
            why = (f"        Both came {passed}, and line {between} between them is a cuda.syncthreads(): so the two "
                   f"accesses were in different passes of the loop — one thread still in one pass, the other already "
                   f"in the next. That barrier orders the two lines within one pass; nothing orders one pass's "
                   f"{_GERUND[done if there[1] > here[1] else doing]} with the next pass's "
                   f"{_GERUND[doing if there[1] > here[1] else done]}. A loop that refills a tile needs a second "
                   f"cuda.syncthreads() at the end of each pass, after the last read of the tile and before the next "
                   f"copy into it.")
        else:
            why = (f"        with no cuda.syncthreads() between the two ({passed} for both). On a GPU either access may "
                   f"come first: every way from one of these lines to the other must pass a cuda.syncthreads() that "
                   f"the whole block reaches.")
        raise SharedMemoryRace(
            f"shared-memory race on {self.tracker['name']}[{self._index(element)}] in block {_block_name()}: "
            f"{thread_name(int(thread), block_dim)} {doing} it at\n"
            f"            {source_line(here)}\n"
            f"        after {other_name} {done} it at\n"
            f"            {source_line(there)}\n" + why)

    def _uninitialized(self, element, thread, frame) -> str:
        """What a read of an element no thread of the block had written says (raised when the launch ends)."""
        block_dim = threading.current_thread()._manager._block_dim
        here = (frame.f_code.co_filename, frame.f_lineno)
        return (
            f"{thread_name(int(thread), block_dim)} of block {_block_name()} read "
            f"{self.tracker['name']}[{self._index(element)}] before any thread of its block wrote it, at\n"
            f"            {source_line(here)}\n"
            f"        Shared memory starts with whatever was there (here: NaN). Does every element the loop reads get "
            f"written first, with zero where the tile runs past the edge of A or B?")

    def __getitem__(self, key):
        if getattr(self, "tracker", None) is not None and not isinstance(key, str):
            self._track(key, writing=False)
        return np.ndarray.__getitem__(self.view(np.ndarray), key)

    def __setitem__(self, key, value):
        if getattr(self, "tracker", None) is not None:
            self._track(key, writing=True)
        np.ndarray.__setitem__(self.view(np.ndarray), key, value)


def track(array: np.ndarray, name: str, deadline: Deadline = NO_DEADLINE) -> TrackedShared:
    tracked = array.view(TrackedShared)
    size = array.size
    strides = [int(np.prod(array.shape[d + 1:])) for d in range(array.ndim)]
    tracked.tracker = {
        "name": name, "index": np.arange(size).reshape(array.shape), "strides": strides, "deadline": deadline,
        "writer": [-1] * size, "written": [-1] * size, "reader": [-1] * size, "read": [-1] * size,
        "lines": [0] * (2 * size),  # per element: the line of its last write, of its last read
        # Reads of elements no thread of the block had written yet, reported when the launch ends: another thread may
        # still write the element in the same barrier interval, and then the read was a race (raised at that write,
        # with both lines), not a read of memory nobody writes — which of the two a thread sees first must not decide
        # the message.
        "unwritten_reads": {},
    }
    return tracked


def _filled(shape, dtype) -> np.ndarray:
    """An array as memory nobody wrote: NaN for floating point (so a read of it shows), anything otherwise."""
    if np.dtype(dtype).kind in "fc":
        return np.full(shape, np.nan, dtype)
    return np.empty(shape, dtype)


class Observed:
    """What :func:`detect_races` saw: the shared arrays the kernel created (their names)."""

    def __init__(self):
        self.shared_arrays: list[str] = []


def _early_return(thread, gone, where: tuple[str, int]) -> str:
    block_dim = thread._manager._block_dim
    return (f"{thread_name(int(gone.thread_id), block_dim)} of block {_block_name()} returned before the "
            f"cuda.syncthreads() at\n            {source_line(where)}\n"
            f"        that {thread_name(int(thread.thread_id), block_dim)} of its block reached. On a GPU every thread of "
            f"a block must reach every cuda.syncthreads(): a thread that has returned leaves the barrier waiting for "
            f"it, or the block runs on with shared memory half written. Don't return early — a thread whose element "
            f"of C lies outside the matrix still copies its part of the tiles (zero where a tile runs past A or B) "
            f"and reaches every barrier; guard only its store to C with an if.")


@contextmanager
def detect_races(deadline: Deadline = NO_DEADLINE):
    """Within this block, simulator kernels raise a :class:`SimulatorCheck` at their first shared-memory race, read
    of an unwritten shared element, or two shared arrays made on one line (or once ``deadline`` has expired, at
    their next shared access or barrier). Yields an :class:`Observed`."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi
    from numba.cuda import types
    from numba.cuda.np import numpy_support

    original_array = kernelapi.FakeCUDAShared.array
    original_sync = sim_kernel.BlockThread.syncthreads
    creating = threading.Lock()
    observed = Observed()
    trackers: list[dict] = []

    def array(self, shape, dtype, alignment=None):
        if shape == 0:  # dynamic shared memory: one buffer for every such call, as the simulator has it
            return original_array(self, shape, dtype, alignment)
        # The simulator tells allocations apart by the kernel line that makes them (every thread runs that line
        # and must get the same array); so do we, with a tracker on each. Two calls on one line are told apart by
        # where in the line they are (the bytecode offset): the simulator would give them one array.
        caller = sys._getframe(1)
        where = (caller.f_code.co_filename, caller.f_lineno)
        with creating:  # every thread of the block runs this line at once: exactly one of them makes the array
            tracked = self.__dict__.setdefault("_tracked", {})
            if where not in tracked:
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                name = code_at(*where).split("=")[0].strip() or f"the shared array of line {where[1]}"
                tracked[where] = (caller.f_lasti, track(_filled(shape, dtype), name, deadline))
                trackers.append(tracked[where][1].tracker)
                observed.shared_arrays.append(name)
            offset, result = tracked[where]
        if offset != caller.f_lasti:
            raise SharedArraysOnOneLine(
                f"{source_line(where)}\n        makes two shared arrays on one line. Numba's simulator tells shared "
                "arrays apart by the line that makes them, so these two would share one storage here (on a GPU "
                "they are two arrays): give each cuda.shared.array its own line.")
        return result

    def syncthreads(self):
        deadline.check()
        barrier = getattr(self, "_block_barrier", None)
        if barrier is not None and barrier.gone:  # a thread of this block has returned: it never reaches this barrier
            raise EarlyReturn(_early_return(self, barrier.gone[0], _caller(2)))  # the kernel's line
        original_sync(self)
        _where_am_i()  # (numbers the intervals if this thread has not touched shared memory yet)
        self.race_interval += 1

    kernelapi.FakeCUDAShared.array = array
    sim_kernel.BlockThread.syncthreads = syncthreads
    try:
        yield observed
    finally:
        kernelapi.FakeCUDAShared.array = original_array
        sim_kernel.BlockThread.syncthreads = original_sync
    for tracker in trackers:  # the launch ended without a race: a read of an unwritten element is one of its own
        if tracker["unwritten_reads"]:
            raise UninitializedRead(next(iter(tracker["unwritten_reads"].values())))


@contextmanager
def abort_after(seconds: float):
    """After ``seconds``, set the simulator's abort flag on every simulated thread: threads waiting in a warp or
    warpgroup operation (``mma_tf32``'s, ``wgmma_tf32``'s twins) for threads that never come then stop — the twins
    check the flag while they wait. The exercise graders of lessons 12–17 launch under it."""
    done = threading.Event()

    def watch():
        if done.wait(seconds):
            return
        from numba.cuda.simulator.kernel import BlockThread

        for thread in threading.enumerate():
            if isinstance(thread, BlockThread):
                thread.abort = True

    watchdog = threading.Thread(target=watch, daemon=True)
    watchdog.start()
    try:
        yield
    finally:
        done.set()


@contextmanager
def nan_local_arrays():
    """Within this block, ``cuda.local.array`` on the simulator starts filled with NaN (floating point), so a value
    read before it is written — an accumulator never zeroed — shows in the result."""
    from numba.cuda.simulator import kernelapi
    from numba.cuda import types
    from numba.cuda.np import numpy_support

    original = kernelapi.FakeCUDALocal.array

    def array(self, shape, dtype, alignment=None):
        if alignment is not None:
            return original(self, shape, dtype, alignment)  # (the simulator's own error)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        return _filled(shape, dtype)

    kernelapi.FakeCUDALocal.array = array
    try:
        yield
    finally:
        kernelapi.FakeCUDALocal.array = original


# -- global memory: the matrices -----------------------------------------------------------------------------------
_sequence = itertools.count()  # next() is atomic under the GIL: a global order of stores across threads


@functools.lru_cache(maxsize=None)
def _tracked_global_class():
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    class TrackedGlobal(FakeCUDAArray):
        """A matrix argument on the simulator that counts its reads and records its stores (a launch passes it
        through unchanged, so the kernel's reads and writes go through here).

        * ``reads``: element reads (approximate under thread switches: a lost update makes it smaller, never larger);
        * ``stores``: ``(sequence, block, thread, flat index)`` per element stored, ``sequence`` ordering all stores;
        * ``early_read``: the first ``(flat index, thread name, (file, line))`` read of an element this launch had not
          stored yet (only when ``watch_stores``: reading C's old contents)."""

        def __init__(self, array: np.ndarray, name: str, watch_stores: bool = False,
                     deadline: Deadline = NO_DEADLINE):
            super().__init__(array)
            self.name = name
            self.deadline = deadline
            self.reads = 0
            self.stores: list[tuple[int, int, int, int]] | None = [] if watch_stores else None
            self.stored = np.zeros(array.size, bool) if watch_stores else None
            self.early_read = None
            self._columns = array.shape[-1] if array.ndim == 2 else 1

        def _flat(self, index) -> list[int]:
            array = self._ary
            if array.ndim == 2 and isinstance(index, tuple) and len(index) == 2:
                try:
                    i, j = int(index[0]), int(index[1])
                    return [i % array.shape[0] * self._columns + j % array.shape[1]]
                except TypeError:
                    pass
            return np.atleast_1d(np.arange(array.size).reshape(array.shape)[index]).ravel().tolist()

        def __getitem__(self, index):
            if self.deadline.expired:
                self.deadline.check()
            value = self._ary[index]  # (raises IndexError outside the array, as the simulator does)
            if type(value) in (np.ndarray, np.void):  # a slice: what FakeCUDAArray.__getitem__ returns for it
                value = FakeCUDAArray(value, stream=self.stream)
            self.reads += 1
            if self.stores is not None and self.early_read is None:
                for flat in self._flat(index):
                    if not self.stored[flat]:
                        me = threading.current_thread()
                        self.early_read = (flat, thread_name(me.thread_id, me._manager._block_dim),
                                           _caller(2))  # ← FakeWithinKernelCUDAArray.__getitem__ ← the kernel
                        break
            return value

        def __setitem__(self, index, value):
            if self.deadline.expired:
                self.deadline.check()
            self._ary[index] = value
            if self.stores is not None:
                me = threading.current_thread()
                block, thread = block_number(me), me.thread_id
                for flat in self._flat(index):
                    self.stores.append((next(_sequence), block, thread, flat))
                    self.stored[flat] = True

    return TrackedGlobal


def tracked_global(array: np.ndarray, name: str, watch_stores: bool = False, deadline: Deadline = NO_DEADLINE):
    """``array`` as a :class:`TrackedGlobal` (simulator only): pass it to a kernel in place of the array."""
    return _tracked_global_class()(array, name, watch_stores, deadline)
