"""Three run-time fixes for Numba's CUDA simulator (numba-cuda 0.30): ``syncthreads`` without a polling coordinator,
static shared arrays found without walking the call stack (:func:`_shared_arrays_by_caller_line`), and a longer
thread switch interval while a block runs (:data:`LAUNCH_SWITCH_INTERVAL_S`) — and one addition: thread-block
clusters (:class:`simulated_cluster`).

The simulator runs a block as one Python thread per GPU thread. Its ``BlockManager.run`` then loops, for the whole
launch, over every live thread: blocked in ``syncthreads``? raised? alive? — and when all are blocked it sets each
thread's event. That loop holds the GIL most of the time the block's own threads want it. Here ``syncthreads`` is
a counting barrier instead (a ``threading.Condition``): the last thread to arrive releases the others; a thread that
finishes counts as gone, as the original's shrinking set of live threads did, so a barrier met by the threads still
running completes. The launching thread only waits for the block to end or for a thread to raise; on a raise it
aborts the others (their next ``syncthreads`` raises) and re-raises the first exception, as before.

What a kernel computes does not change: threads meet at the same barriers in the same groups
(``tests/test_simulator_cpu.py`` checks early-returning threads, ``syncthreads_count`` and an abort). Measured on the
2-core CI machine, one call after a warm-up, at BLOCK_M + 5 × BLOCK_N + 4 × 2·BLOCK_K: step 5 1.44 → 1.23 s, step 9
1.39 → 1.14 s, step 11 1.42 → 1.23 s, step 12 0.90 → 0.75 s, step 17 1.00 → 0.71 s; step 3 (1,024 threads a block,
most of its time starting them) within its noise, 2.5–3.3 s.
"""

from __future__ import annotations

import sys
import threading
import time

_APPLIED = False
#: Python's thread switch interval while a simulated block runs (default 0.005 s). A block's threads mostly give up
#: the GIL themselves, at barriers; a thread waiting for the GIL wakes every interval to ask for it, so with hundreds
#: of them waiting a short interval is mostly wake-ups. Measured on the 2-core CI machine, one call after a warm-up,
#: 0.005 → 0.2 s: step 3 at 64³ 1.36-1.65 → 0.97-1.00 s, step 11 at 133×261×48 2.02 → 1.80 s, step 5 at 129×133×40
#: 1.81 → 1.66 s, step 14 at 70×140×40 2.85 → 2.66 s; no step slower (steps 1-19).
LAUNCH_SWITCH_INTERVAL_S = 0.2


class _BlockBarrier:
    """``syncthreads`` for one block: ``live`` threads still running, ``waiting`` of them at the barrier."""

    def __init__(self, threads: int):
        self.changed = threading.Condition()
        self.threads = threads
        self.gone: list = []  # the threads that finished, in order (the exercise grader names an early return)
        self.live = threads
        self.waiting = 0
        self.generation = 0
        self.failed = None  # the first thread that raised

    def _release(self) -> None:
        self.waiting = 0
        self.generation += 1
        self.changed.notify_all()

    def wait(self, thread) -> None:
        with self.changed:
            self.waiting += 1
            if self.waiting == self.live:
                self._release()
                return
            generation = self.generation
            while self.generation == generation and not thread.abort:
                self.changed.wait()

    def finished(self, thread) -> None:
        with self.changed:
            self.live -= 1
            self.gone.append(thread)
            if thread.exception is not None and self.failed is None:
                self.failed = thread
            if self.waiting and self.waiting == self.live:
                self._release()
            self.changed.notify_all()  # the launching thread waits for this too


def apply() -> None:
    """Install the barrier (idempotent; only where the simulator is the backend)."""
    global _APPLIED
    if _APPLIED:
        return
    import numpy as np
    from numba.cuda.simulator import kernel as sim

    def syncthreads(self):
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads call")
        self._block_barrier.wait(self)
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads clear")

    original_thread_run = sim.BlockThread.run

    def thread_run(self):
        try:
            original_thread_run(self)  # sets self.exception if the kernel raised
        finally:
            self._block_barrier.finished(self)
            cluster = getattr(self, "_cluster", None)
            if cluster is not None:
                cluster.barrier.finished(self)

    def manager_run(self, grid_point, *args):
        def target():
            self._f(*args)

        cluster = getattr(_LAUNCH, "cluster", None)
        if cluster is not None:  # a cluster launch: keep the block, run whole clusters once the grid is walked
            pending = _LAUNCH.pending
            pending.append((self, grid_point, target))
            if tuple(grid_point) != tuple(d - 1 for d in self._grid_dim):
                return
            _LAUNCH.pending = []
            run = lambda: _run_clusters(pending, cluster, sim)  # noqa: E731
        else:
            run = lambda: run_block(self, grid_point, target)  # noqa: E731
        previous = sys.getswitchinterval()
        sys.setswitchinterval(max(previous, LAUNCH_SWITCH_INTERVAL_S))
        try:
            run()
        finally:
            sys.setswitchinterval(previous)

    def run_block(self, grid_point, target):
        barrier = _BlockBarrier(int(np.prod(self._block_dim)))
        threads = []
        for block_point in np.ndindex(*self._block_dim):
            t = sim.BlockThread(target, self, grid_point, block_point, self._debug)
            t._block_barrier = barrier
            threads.append(t)
        _run_threads(threads, [barrier])

    sim.BlockThread.syncthreads = syncthreads
    sim.BlockThread.run = thread_run
    sim.BlockManager.run = manager_run
    _shared_arrays_by_caller_line()
    _shared_memory_per_block()
    _APPLIED = True


def _shared_arrays_by_caller_line() -> None:
    """``cuda.shared.array`` tells a block's static arrays apart by the file and line that asks for one; the
    simulator found them with ``traceback.extract_stack``, which walks the whole call stack — through the harness,
    pytest or a notebook — and has ``linecache`` check every file on it, at every call of every thread. The calling
    frame alone gives the same (file, line)."""
    import numpy as np
    from numba.cuda.simulator import kernelapi

    types, numpy_support = kernelapi.types, kernelapi.numpy_support  # the simulator's own, whichever they are

    original = kernelapi.FakeCUDAShared.array

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:
            return original(self, shape, dtype, alignment)  # the error, and the dynamic array, as before
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        found = self._allocations.get(caller)
        if found is None:  # every thread of the block runs the line: setdefault keeps the first array made
            found = self._allocations.setdefault(caller, np.empty(
                shape, numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype))
        return found

    kernelapi.FakeCUDAShared.array = array


# --- Thread-block clusters -----------------------------------------------------------------------------------------
#
# On a GPU the blocks of a cluster run at the same time on SMs of one GPC; each has its own shared memory, and each can
# reach the others' (distributed shared memory: ``mapa``, a remote mbarrier arrival, a TMA multicast). The simulator
# runs one block at a time with one shared memory for the whole launch, so a block that waits for its peer would wait
# forever. Inside ``with simulated_cluster((2, 1, 1)):`` a launch instead keeps every block until the grid is walked,
# then runs the blocks of one cluster together — each with its own shared memory, each thread knowing its cluster
# (``thread._cluster``: the blocks' shared memories by rank, and the cluster-wide barrier) and its rank in it — and
# the clusters one after another. The twins in :mod:`~gemm_steps.toolkit.cluster_ops` read these.

_LAUNCH = threading.local()  # the launching thread's cluster shape while it launches in a simulated_cluster


class simulated_cluster:
    """``with simulated_cluster((x, y, z)):`` — simulated launches in the block are cluster launches of that shape
    (blocks per cluster along each grid dimension; the grid must be a whole number of clusters)."""

    def __init__(self, shape):
        shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        self.shape = shape + (1,) * (3 - len(shape))
        if min(self.shape) < 1:
            raise ValueError(f"cluster shape {shape}: every side at least 1")

    def __enter__(self):
        self._saved = getattr(_LAUNCH, "cluster", None), getattr(_LAUNCH, "pending", None)
        _LAUNCH.cluster, _LAUNCH.pending = self.shape, []
        return self

    def __exit__(self, *exc):
        _LAUNCH.cluster, _LAUNCH.pending = self._saved
        return False


class _ClusterBarrier:
    """``barrier.cluster.arrive`` + ``wait`` of every thread of a cluster; a thread that finished counts as gone."""

    def __init__(self, threads: int):
        self.changed = threading.Condition()
        self.live = threads
        self.waiting = 0
        self.generation = 0

    def wait(self, thread, limit_s: float) -> None:
        with self.changed:
            self.waiting += 1
            if self.waiting == self.live:
                self.waiting = 0
                self.generation += 1
                self.changed.notify_all()
                return
            generation, deadline = self.generation, time.monotonic() + limit_s
            while self.generation == generation:
                if thread.abort:
                    raise RuntimeError("a simulated thread of the cluster failed while this one waited at the "
                                       "cluster barrier")
                left = deadline - time.monotonic()
                if left <= 0:
                    arrived, live = self.waiting, self.live
                    self.waiting -= 1
                    raise TimeoutError(f"cluster barrier: {arrived} of {live} threads of the cluster arrived in "
                                       f"{limit_s:g} s — a thread that skips cluster_sync(), or one that waits for "
                                       "something only a later phase gives")
                self.changed.wait(min(left, 0.2))

    def finished(self, thread) -> None:
        with self.changed:
            self.live -= 1
            if self.waiting and self.waiting == self.live:
                self.waiting = 0
                self.generation += 1
            self.changed.notify_all()


class _Cluster:
    """One running cluster: its shape, its blocks' shared memories by rank (made on first use), its barrier."""

    def __init__(self, shape, threads: int):
        self.shape = shape
        self.size = shape[0] * shape[1] * shape[2]
        self.shared_memories: dict = {}
        self.lock = threading.Lock()
        self.barrier = _ClusterBarrier(threads)

    def shared_memory(self, rank: int, make):
        with self.lock:
            found = self.shared_memories.get(rank)
            if found is None:
                found = self.shared_memories[rank] = make()
            return found


def cluster_rank_of(block, shape) -> int:
    """The rank of block index ``block`` (x, y, z) in its cluster of ``shape``: x fastest, as ``%cluster_ctarank``."""
    x, y, z = (int(v) % int(s) for v, s in zip(block, shape))
    return x + shape[0] * (y + shape[1] * z)


def _run_clusters(pending: list, shape, sim) -> None:
    """Run the kept blocks of a launch cluster by cluster, the blocks of a cluster at the same time."""
    grid = pending[0][0]._grid_dim
    if any(int(g) % s for g, s in zip(grid, shape)):
        raise ValueError(f"a cluster launch of grid {tuple(grid)} in clusters of {shape}: each grid side must be a "
                         "multiple of the cluster's")
    clusters: dict = {}
    for manager, grid_point, target in pending:
        key = tuple(int(v) // s for v, s in zip(grid_point, shape))
        clusters.setdefault(key, []).append((manager, grid_point, target))
    for key in sorted(clusters, key=lambda k: (k[2], k[1], k[0])):
        _run_one_cluster(clusters[key], shape, sim)


def _run_one_cluster(blocks: list, shape, sim) -> None:
    import numpy as np

    threads_per_block = int(np.prod(blocks[0][0]._block_dim))
    cluster = _Cluster(shape, threads_per_block * len(blocks))
    threads, barriers = [], []
    for manager, grid_point, target in blocks:
        barrier = _BlockBarrier(threads_per_block)
        barriers.append(barrier)
        rank = cluster_rank_of(grid_point, shape)
        for block_point in np.ndindex(*manager._block_dim):
            t = sim.BlockThread(target, manager, grid_point, block_point, manager._debug)
            t._block_barrier, t._cluster, t._cluster_rank = barrier, cluster, rank
            threads.append(t)
    _run_threads(threads, barriers, cluster.barrier)


def _run_threads(threads: list, barriers: list, cluster_barrier: "_ClusterBarrier | None" = None) -> None:
    """Start the simulated threads of one block, or of the blocks of one cluster (``barriers``: each block's), and
    wait until every block has ended or a thread has raised; on a raise, abort the others (their next barrier
    raises), do not join them (as the original launch: easier debugging), and re-raise the first exception."""
    for t in threads:
        t.start()
    # one block: wait to be told (a thread's end notifies); several: look at each block in turn
    timeout = None if len(barriers) == 1 else 0.05
    failed = None
    while failed is None and any(b.live for b in barriers):
        for b in barriers:
            with b.changed:
                if b.failed is not None:
                    failed = b.failed
                    break
                if b.live:
                    b.changed.wait(timeout)
    if failed is None:  # the last thread to end may be one that raised
        failed = next((b.failed for b in barriers if b.failed is not None), None)
    if failed is not None:
        for t in threads:
            t.abort = True
        for condition in [b.changed for b in barriers] + ([cluster_barrier.changed] if cluster_barrier else []):
            with condition:
                condition.notify_all()
        raise failed.exception[0].with_traceback(failed.exception[1])
    for t in threads:
        t.join()
        if t.exception:
            raise t.exception[0].with_traceback(t.exception[1])


def _shared_memory_per_block() -> None:
    """``cuda.shared`` of a thread in a cluster launch is its own block's (the simulator's is one per launch)."""
    from numba.cuda.simulator import kernelapi

    def shared(self):
        thread = threading.current_thread()
        cluster = getattr(thread, "_cluster", None)
        if cluster is None:
            return self._shared
        return cluster.shared_memory(thread._cluster_rank,
                                     lambda: kernelapi.FakeCUDAShared(self._shared._dynshared_size))

    kernelapi.FakeCUDAModule.shared = property(shared)
