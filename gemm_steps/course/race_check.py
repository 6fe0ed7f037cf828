"""A shared-memory race detector for Numba's CUDA simulator: what ``compute-sanitizer --tool racecheck`` does on a GPU.

On the simulator the threads of a block are Python threads, and whether a missing ``cuda.syncthreads()`` gives a
wrong answer depends on how Python happens to interleave them — usually it does not, so a kernel with a race can
pass a correctness check by luck. This module makes the race visible every time instead. Inside
:func:`detect_races`:

* every ``cuda.shared.array`` the kernel creates is a :class:`TrackedShared`, which remembers, per element, which
  thread last wrote it and which threads read it, and in which *barrier interval* (the stretch of a block's run
  between two ``syncthreads``);
* a thread reading an element another thread wrote in the same interval (read-after-write), or writing one another
  thread read or wrote in the same interval (write-after-read, write-after-write), is a race: nothing orders the
  two accesses, so on a GPU either may come first.

The first race raises :class:`SharedMemoryRace` naming the array, the element, the two threads and the kind.
"""

from __future__ import annotations

import linecache
import sys
import threading
from contextlib import contextmanager

import numpy as np

#: Barrier intervals of one block are numbered ``block * INTERVALS_PER_BLOCK + barriers passed``.
INTERVALS_PER_BLOCK = 1 << 32
#: An element read by more than one thread in an interval.
MANY_READERS = -2


class SharedMemoryRace(RuntimeError):
    """Two threads of a block touched one shared-memory element with no ``syncthreads`` between them."""


def _where_am_i() -> tuple[int, int]:
    """(linear thread index in the block, barrier interval) of the simulator thread running now."""
    me = threading.current_thread()
    try:
        return me.thread_id, me.race_interval
    except AttributeError:  # first shared access of this thread: number its block's intervals
        block, grid = me.blockIdx, me._manager._grid_dim
        me.race_interval = (block.x + grid[0] * (block.y + grid[1] * block.z)) * INTERVALS_PER_BLOCK
        return me.thread_id, me.race_interval


def _thread_name(thread_id: int, block_dim) -> str:
    x = thread_id % block_dim[0]
    y = thread_id // block_dim[0] % block_dim[1]
    return f"threadIdx=({x}, {y})" if block_dim[1] > 1 else f"threadIdx.x={x}"


def _block_name() -> str:
    block = threading.current_thread().blockIdx
    return f"blockIdx=({block.x}, {block.y})"


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
        writer, written, reader, read = tracker["writer"], tracker["written"], tracker["reader"], tracker["read"]
        # No lock: under the GIL an interleaving can only hide a race at one element (it is seen at the next),
        # never invent one, and 1024 simulator threads queueing on a lock would slow the run down a hundredfold.
        for element in self._elements(key):
            if written[element] == interval and writer[element] != thread:
                self._race(element, "wrote" if writing else "read", thread, "wrote", writer[element])
            if writing:
                if read[element] == interval and reader[element] != thread:  # MANY_READERS: another thread
                    self._race(element, "wrote", thread, "read", reader[element])
                writer[element], written[element] = thread, interval
            elif read[element] != interval:
                reader[element], read[element] = thread, interval
            elif reader[element] != thread:
                reader[element] = MANY_READERS

    def _race(self, element, doing, thread, done, other) -> None:
        block_dim = threading.current_thread()._manager._block_dim
        index = np.unravel_index(int(element), self.tracker["index"].shape)
        index = index[0] if len(index) == 1 else tuple(int(i) for i in index)
        other_name = "several other threads" if other == MANY_READERS else _thread_name(int(other), block_dim)
        raise SharedMemoryRace(
            f"shared-memory race on {self.tracker['name']}[{index}]: {_thread_name(int(thread), block_dim)} "
            f"{doing} it after {other_name} {done} it, with no cuda.syncthreads() in between "
            f"(block {_block_name()}). On a GPU either access may come "
            f"first: is a syncthreads() missing, {'after the tile is written' if done == 'wrote' else 'before the tile is overwritten'}?")

    def __getitem__(self, key):
        if getattr(self, "tracker", None) is not None and not isinstance(key, str):
            self._track(key, writing=False)
        return np.ndarray.__getitem__(self.view(np.ndarray), key)

    def __setitem__(self, key, value):
        if getattr(self, "tracker", None) is not None:
            self._track(key, writing=True)
        np.ndarray.__setitem__(self.view(np.ndarray), key, value)


def track(array: np.ndarray, name: str) -> TrackedShared:
    tracked = array.view(TrackedShared)
    size = array.size
    strides = [int(np.prod(array.shape[d + 1:])) for d in range(array.ndim)]
    tracked.tracker = {
        "name": name, "index": np.arange(size).reshape(array.shape), "strides": strides,
        "writer": [-1] * size, "written": [-1] * size, "reader": [-1] * size, "read": [-1] * size,
    }
    return tracked


@contextmanager
def detect_races():
    """Within this block, simulator kernels raise :class:`SharedMemoryRace` at their first shared-memory race."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi
    from numba.cuda import types
    from numba.cuda.np import numpy_support

    original_array = kernelapi.FakeCUDAShared.array
    original_sync = sim_kernel.BlockThread.syncthreads
    creating = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0:  # dynamic shared memory: one buffer for every such call, as the simulator has it
            return original_array(self, shape, dtype, alignment)
        # The simulator tells allocations apart by the kernel line that makes them (every thread runs that line
        # and must get the same array); so do we, with a tracker on each.
        caller = sys._getframe(1)
        where = (caller.f_code.co_filename, caller.f_lineno)
        with creating:  # every thread of the block runs this line at once: exactly one of them makes the array
            tracked = self.__dict__.setdefault("_tracked", {})
            if where not in tracked:
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                name = linecache.getline(*where).split("=")[0].strip() or f"the shared array of line {where[1]}"
                tracked[where] = track(np.empty(shape, dtype), name)
            return tracked[where]

    def syncthreads(self):
        original_sync(self)
        _where_am_i()  # (numbers the intervals if this thread has not touched shared memory yet)
        self.race_interval += 1

    kernelapi.FakeCUDAShared.array = array
    sim_kernel.BlockThread.syncthreads = syncthreads
    try:
        yield
    finally:
        kernelapi.FakeCUDAShared.array = original_array
        sim_kernel.BlockThread.syncthreads = original_sync
