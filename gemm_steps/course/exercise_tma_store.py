"""The grader of the TMA-store exercise (``exercises/tma_store.py``, lesson 23): a tile of C stored through chunk
buffers in shared memory by the copy engine, checked on the simulator by the order of what each thread did.

On the simulator ``store_tile`` writes its box into C at once and the waits have nothing to wait for
(``toolkit/tma_store_ops.py``), so a kernel that writes a buffer while the copy engine still reads it gets the right
numbers there. The grader watches the twins during the launch — every write to the shared buffers, every
``fence_proxy_async``, barrier (``cuda.syncthreads``, ``named_barrier_sync``), ``store_tile``, ``store_commit``,
``store_wait_read`` and ``store_wait``, each with its thread, its line and the number of barriers the thread had
passed — and models the copy engine's asynchronous read itself: a committed store group goes on reading its buffer
until a wait of the thread that issued it retires it (``store_wait_read(n)`` and ``store_wait(n)`` leave at most n
of that thread's groups). Two events of a block are ordered if one thread did both, in that order, or if a barrier
of the whole block lies between them. The checks, each naming the learner's lines:

* **a write into a buffer the copy engine may still be reading**: a write that comes after a store of that buffer
  without the store's retiring wait ordered before it (no wait, a count that leaves it reading, or no barrier
  between the issuing thread's wait and the other threads' writes), with a drawing of the buffers then;
* **a store issued before the chunk was ready**: a thread's write of an element the store reads with no barrier
  between it and the store, or with no ``fence_proxy_async()`` of that thread between its write and the barrier;
* **who stores what**: a chunk stored by more than one thread, a box at coordinates where no chunk starts, a chunk
  stored twice or never, a tile read from an address the copy engine cannot read (not 128-byte aligned), a store
  never committed; and every thread of the block passing the same barriers;
* **the end**: a block that may end while one of its stores still reads its buffer (no last wait);
* **the numbers**: C poisoned with NaN first, against a float64 reference, at two ragged shapes (the copy engine
  clips each box to C).

One finding is reported, block by block: the barriers, who issued the stores and their commits first (the order is
read from them), then store by store in the block's order — its chunk not ready, then its buffer overwritten — then
the end and the boxes; the numbers last.

On a GPU the grader compiles the kernel (compute capability 9.0) and checks the numbers; the order is checked on the
simulator only.
"""

from __future__ import annotations

import bisect
import itertools
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..toolkit.backend import SIMULATOR

THREADS, BLOCK_M, BLOCK_N, CHUNK_ROWS, BUFFERS = 128, 32, 32, 4, 3
CHUNKS = BLOCK_M // CHUNK_ROWS
CHUNK_FLOATS = CHUNK_ROWS * BLOCK_N
SIGNATURE = "void(float32[:, ::1], float32[:, ::1], uint64[::1])"
#: The simulator's wait limit for a named barrier while grading (the twin's own is 60 s).
WAIT_LIMIT_S = 5.0
#: The copy engine reads a stored tile from a shared address that is a multiple of this many bytes.
TILE_ALIGN_BYTES = 128


def solution():
    from . import exercise_tma_store_solution

    return exercise_tma_store_solution


def time_against_step(exercise, module) -> str:
    return ("not timed: one warpgroup stores a 32 × 32 tile computed by a plain loop over K; step 23's speed is "
            "gemm-steps bench --steps cluster_stream_k_tma_store")


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"M×N×K = {self.m}×{self.n}×{self.k}"

    @property
    def grid(self) -> tuple[int, int]:
        return -(-self.n // BLOCK_N), -(-self.m // BLOCK_M)


def cases(seed: int = 0) -> list[Case]:
    """Two ragged shapes, N a multiple of 4 (a tensor map's rows are a multiple of 16 bytes): 2 × 2 blocks, the
    bottom ones' last rows and the right ones' last columns past C; then one row of three blocks, M not a multiple of
    CHUNK_ROWS (a chunk across C's last row, the chunks after it wholly past C)."""
    rng = np.random.default_rng(seed)
    return [Case(BLOCK_M + int(rng.integers(1, BLOCK_M)), BLOCK_N + 4 * int(rng.integers(1, BLOCK_N // 4)),
                 int(rng.integers(17, 50))),
            Case(CHUNK_ROWS * int(rng.integers(1, CHUNKS - 1)) + int(rng.integers(1, CHUNK_ROWS)),
                 2 * BLOCK_N + 4 * int(rng.integers(1, BLOCK_N // 4)), int(rng.integers(17, 50)))]


# -- watching the launch ---------------------------------------------------------------------------------------------
@dataclass(slots=True)
class Event:
    kind: str  # "write", "fence", "barrier", "store", "commit", "wait"
    seq: int  # the order of all events of the launch (within a thread: its program order)
    thread: int
    epoch: int  # barriers of the whole block the thread had passed
    line: int
    element: tuple = ()  # a write: (id of the shared array's own buffer, the element in it)
    detail: tuple = ()  # a store: (row, col, start, id of the array's buffer, the elements read); a wait: (count, read)


def before(x: Event, y: Event) -> bool:
    """Whether ``x`` happens before ``y``: one thread did both, in that order, or a barrier of the whole block lies
    between them (the thread of ``y`` has passed the barrier the thread of ``x`` reached after ``x``)."""
    return x.seq < y.seq if x.thread == y.thread else x.epoch < y.epoch


@dataclass
class Watch:
    kernel_file: str
    m: int
    n: int
    grid: tuple[int, int]
    events: dict = field(default_factory=dict)  # block number → its events
    names: dict = field(default_factory=dict)  # id(a shared array's own buffer) → its name in the kernel
    stored: np.ndarray | None = None  # C's elements some store's box covered
    counter: itertools.count = field(default_factory=itertools.count)

    def line(self) -> int:
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != self.kernel_file:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else 0

    def record(self, kind: str, element: tuple = (), detail: tuple = (), line: int | None = None) -> None:
        me = threading.current_thread()
        block = me.blockIdx.x + self.grid[0] * me.blockIdx.y
        event = Event(kind, next(self.counter), me.thread_id, getattr(me, "tma_store_epoch", 0),
                      self.line() if line is None else line, element, detail)
        self.events.setdefault(block, []).append(event)

    def code(self, line: int) -> str:
        from .race_check import source_line

        return source_line((self.kernel_file, line)) if line else "an unknown line"


def _root(array) -> tuple[np.ndarray, int]:
    """The buffer a shared array (or a view of one) lives in, and where the view starts in it, in elements."""
    buffer = np.asarray(array)
    view_start = buffer.__array_interface__["data"][0]
    while isinstance(buffer.base, np.ndarray):
        buffer = buffer.base
    return buffer, (view_start - buffer.__array_interface__["data"][0]) // buffer.itemsize


class Buffers(np.ndarray):
    """A shared array of the kernel whose element writes are recorded (reads are plain)."""

    def __array_finalize__(self, obj):
        self._watch = getattr(obj, "_watch", None)

    def _elements(self, key) -> tuple[int, list[int]]:
        """(id of the array's own buffer, the elements of it that ``self[key]`` is)."""
        root, start = _root(self)
        if self.ndim == 1 and isinstance(key, (int, np.integer)):
            return id(root), [start + int(key) % self.shape[0] * (self.strides[0] // self.itemsize)]
        offsets = sum(np.indices(self.shape)[d] * (self.strides[d] // self.itemsize) for d in range(self.ndim))
        return id(root), (start + np.atleast_1d(np.asarray(offsets)[key]).ravel()).tolist()

    def __setitem__(self, key, value):
        watch = self._watch
        if watch is not None:
            line = watch.line()
            root, elements = self._elements(key)
            for element in elements:
                watch.record("write", element=(root, element), line=line)
        np.ndarray.__setitem__(self.view(np.ndarray), key, value)


def _stand_ins(watch: Watch, twins: dict) -> dict:
    """The learner's store, commit, waits, fence and named barrier, recorded (each calls the twin it replaces)."""
    from ..toolkit import mbarrier_ops

    def store_tile(tensor_map, row, col, source, start):
        target, box_rows, box_cols, swizzle_128 = mbarrier_ops.tensor_map_box(tensor_map)
        root, view_start = _root(source)
        read = view_start + mbarrier_ops.box_in_shared(source, start, box_rows * box_cols, swizzle_128)
        watch.record("store", detail=(int(row), int(col), view_start + int(start), id(root), read.tolist()))
        if row >= 0 and col >= 0:
            in_matrix, _ = mbarrier_ops.box_inside(row, col, box_rows, box_cols, target.shape)
            watch.stored[in_matrix] = True
        twins["store_tile"](tensor_map, row, col, source, start)

    def store_commit():
        watch.record("commit")
        twins["store_commit"]()

    def store_wait_read(count):
        watch.record("wait", detail=(int(count), True))
        twins["store_wait_read"](count)

    def store_wait(count):
        watch.record("wait", detail=(int(count), False))
        twins["store_wait"](count)

    def fence_proxy_async():
        watch.record("fence")
        twins["fence_proxy_async"]()

    def named_barrier_sync(barrier_id, count):
        twins["named_barrier_sync"](barrier_id, count)
        if int(count) >= THREADS:  # the whole block met (a barrier of fewer threads orders nothing here)
            _passed_barrier(watch)

    return {"store_tile": store_tile, "store_commit": store_commit, "store_wait_read": store_wait_read,
            "store_wait": store_wait, "fence_proxy_async": fence_proxy_async,
            "named_barrier_sync": named_barrier_sync}


def _passed_barrier(watch: Watch) -> None:
    me = threading.current_thread()
    me.tma_store_epoch = getattr(me, "tma_store_epoch", 0) + 1
    watch.record("barrier")


@contextmanager
def _watched(watch: Watch, module):
    """The learner's module and the toolkit's twins, watched for the launch; its shared arrays recorded (a fresh one,
    NaN, per block), every ``cuda.syncthreads()`` counted."""
    from numba.cuda import types
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi

    from ..toolkit import mbarrier_ops, tma_store_ops, warpgroup_ops
    from .race_check import _filled, code_at

    homes = {"store_tile": tma_store_ops, "store_commit": tma_store_ops, "store_wait_read": tma_store_ops,
             "store_wait": tma_store_ops, "fence_proxy_async": warpgroup_ops, "named_barrier_sync": mbarrier_ops}
    twins = {name: getattr(home, name) for name, home in homes.items()}
    stand_ins = _stand_ins(watch, twins)
    saved_module = {name: module.__dict__[name] for name in stand_ins if module.__dict__.get(name) is twins[name]}
    saved_limit = mbarrier_ops.SIMULATOR_WAIT_LIMIT_S
    original_shared = kernelapi.FakeCUDAShared.array
    original_sync = sim_kernel.BlockThread.syncthreads
    arrays: dict = {}
    creating = threading.Lock()

    def shared_array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:  # the simulator's own error; the dynamic array
            return original_shared(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        me = threading.current_thread()
        key = (me.blockIdx.x, me.blockIdx.y, caller.f_code.co_filename, caller.f_lineno)
        with creating:
            if key not in arrays:
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                plain = _filled(shape, dtype)
                watch.names[id(plain)] = code_at(*key[2:]).split("=")[0].strip() or "the shared array"
                array = plain.view(Buffers)
                array._watch = watch
                arrays[key] = array
            return arrays[key]

    def syncthreads(self):
        original_sync(self)
        _passed_barrier(watch)

    for name, stand_in in stand_ins.items():
        if name in saved_module:
            module.__dict__[name] = stand_in
        setattr(homes[name], name, stand_in)
    mbarrier_ops.SIMULATOR_WAIT_LIMIT_S = WAIT_LIMIT_S
    kernelapi.FakeCUDAShared.array = shared_array
    sim_kernel.BlockThread.syncthreads = syncthreads
    try:
        yield
    finally:
        module.__dict__.update(saved_module)
        for name, twin in twins.items():
            setattr(homes[name], name, twin)
        mbarrier_ops.SIMULATOR_WAIT_LIMIT_S = saved_limit
        kernelapi.FakeCUDAShared.array = original_shared
        sim_kernel.BlockThread.syncthreads = original_sync


def launch(kernel, module, a, b, c, time_limit: float):
    """Run the kernel on the simulator, watched: (failure message or None, the :class:`Watch`)."""
    from . import exercises
    from ..toolkit.mbarrier_ops import MbarrierTimeout, tensor_map_2d
    from .race_check import nan_local_arrays

    m, n = c.shape
    case = Case(m, n, a.shape[1])
    watch = Watch(kernel.py_func.__code__.co_filename, m, n, case.grid, stored=np.zeros(c.shape, bool))
    c_map = tensor_map_2d(c, CHUNK_ROWS, BLOCK_N)
    failure, _ = exercises.watched_launch(
        kernel, f"tma_store_kernel on {m}×{n}×{a.shape[1]}", time_limit,
        lambda tc: kernel[case.grid, THREADS](a, b, c_map), [_watched(watch, module), nan_local_arrays()],
        known=[(MbarrierTimeout, lambda error: (
            f"a barrier never completed: {exercises._without_thread_prefix(str(error))} — every thread of the "
            f"block reaches every barrier (named_barrier_sync(id, {THREADS}) counts all {THREADS})"))])
    return failure, watch


# -- what the watched launch says --------------------------------------------------------------------------------
@dataclass
class Group:
    """A bulk async-group: the stores one thread committed together, and the wait that retired it (None: none did)."""
    stores: list
    commit: Event
    retired: Event | None = None


@dataclass
class Block:
    """One block's events, sorted out: whose stores, their groups, the writes of each element, each thread's fences."""
    watch: Watch
    number: int
    events: list
    stores: list = field(default_factory=list)
    group_of: dict = field(default_factory=dict)  # id(store event) → its Group (absent: never committed)
    groups: dict = field(default_factory=dict)  # thread → its groups, in commit order
    writes: dict = field(default_factory=dict)  # element → the writes of it, in order
    fences: dict = field(default_factory=dict)  # thread → its fences, in order
    waits: dict = field(default_factory=dict)  # thread → its waits, in order
    barriers: dict = field(default_factory=dict)  # thread → barriers passed

    def __post_init__(self):
        self.events.sort(key=lambda e: e.seq)
        pending: dict = {}
        for e in self.events:
            if e.kind == "write":
                self.writes.setdefault(e.element, []).append(e)
            elif e.kind == "fence":
                self.fences.setdefault(e.thread, []).append(e)
            elif e.kind == "barrier":
                self.barriers[e.thread] = self.barriers.get(e.thread, 0) + 1
            elif e.kind == "store":
                self.stores.append(e)
                pending.setdefault(e.thread, []).append(e)
            elif e.kind == "commit":  # (an empty commit makes an empty group: it counts in the waits)
                group = Group(pending.pop(e.thread, []), e)
                self.groups.setdefault(e.thread, []).append(group)
                for store in group.stores:
                    self.group_of[id(store)] = group
            elif e.kind == "wait":
                self.waits.setdefault(e.thread, []).append(e)
                reading = [g for g in self.groups.get(e.thread, []) if g.retired is None]
                for group in reading[:max(len(reading) - e.detail[0], 0)]:
                    group.retired = e

    @property
    def position(self) -> tuple[int, int]:
        return self.number % self.watch.grid[0], self.number // self.watch.grid[0]

    @property
    def name(self) -> str:
        return f"block ({self.position[0]}, {self.position[1]})"

    def chunk(self, store: Event) -> str:
        """``chunk j`` where the store's box is chunk j's, else where the box is."""
        row, col = store.detail[:2]
        block_row, block_col = self.position[1] * BLOCK_M, self.position[0] * BLOCK_N
        j, rest = divmod(row - block_row, CHUNK_ROWS)
        if col == block_col and not rest and 0 <= j < CHUNKS:
            return f"chunk {j}"
        return f"the box at ({row}, {col})"

    def buffer_name(self, element: int) -> str:
        return f"buffer {element // CHUNK_FLOATS}" if element < BUFFERS * CHUNK_FLOATS else "past the buffers"

    def picture(self, point: Event | None, mark: int | None = None, note: str = "") -> str:
        """The buffers as the thread of ``point`` sees them there (None: at the end of the block): for each, the last
        store that read it, and whether a wait ordered before that point has retired it."""
        who = "" if point is None else f", as threadIdx.x={point.thread} sees them at that write"
        lines = [f"the buffers then ({BUFFERS} buffers of {CHUNK_ROWS} rows × {BLOCK_N} floats, chunk j in buffer "
                 f"j % {BUFFERS}){who}:"]
        for b in range(BUFFERS):
            first, last = b * CHUNK_FLOATS, (b + 1) * CHUNK_FLOATS
            seen = [s for s in self.stores if (point is None or s is point or before(s, point))
                    and any(first <= i < last for i in s.detail[4])]
            if not seen:
                row = f"buffer {b}: no store has read it yet"
            else:
                store = seen[-1]
                group = self.group_of.get(id(store))
                retired = group.retired if group is not None else None
                if retired is not None and (point is None or before(retired, point)):
                    kind = "store_wait_read" if retired.detail[1] else "store_wait"
                    row = (f"buffer {b}: {self.chunk(store)}, read (retired by {kind}({retired.detail[0]}), line "
                           f"{retired.line})")
                else:
                    row = f"buffer {b}: {self.chunk(store)}, its store (line {store.line}) may still be reading it"
            if mark == b:
                row += f"   ◀ {note}"
            lines.append("            " + row)
        return "\n".join(lines)


def _threads(threads) -> str:
    """``thread 0`` or ``threads 1–127``."""
    from .exercise_wgmma import ranges

    threads = sorted(threads)
    return f"thread{'s' if len(threads) > 1 else ''} {ranges(threads)}"


def _numbers(numbers) -> str:
    """``3, 4 and 7``."""
    numbers = [str(x) for x in numbers]
    return numbers[0] if len(numbers) == 1 else f"{', '.join(numbers[:-1])} and {numbers[-1]}"


def _first(found):
    return next((x for x in found if x is not None), None)


def _barrier_counts(block: Block):
    counts = {t: block.barriers.get(t, 0) for t in range(THREADS)}
    most = max(counts.values())
    short = [t for t, n in counts.items() if n < most]
    if not short:
        return None
    full = [t for t, n in counts.items() if n == most]
    fewer = " or ".join(str(n) for n in sorted({counts[t] for t in short}))
    return (f"the threads of {block.name} did not pass the same barriers: {_threads(full)} passed {most}, "
            f"{_threads(short)} passed {fewer}",
            [f"every thread of the block reaches every barrier, the same number of times: a cuda.syncthreads() (or "
             f"named_barrier_sync(id, {THREADS})) inside `if leader:` is met by the other threads' next barrier, "
             "and on a GPU the block hangs or runs on with the buffers half written"])


def _issuers(block: Block):
    threads = sorted({s.thread for s in block.stores})
    if len(threads) <= 1:
        return None
    first = block.stores[0]
    same = [s for s in block.stores if s.detail[:2] == first.detail[:2]]
    return (f"{block.chunk(first)} of {block.name} was stored {len(same)} times, by "
            f"{_threads({s.thread for s in same})}, at\n            {block.watch.code(first.line)}\n"
            f"        {len(threads)} threads issued store_tile: each asks the copy engine to store the whole box",
            ["one thread issues a chunk's store_tile, commits it and waits for it (a thread's waits count only the "
             "groups it committed); the others write their elements, fence and meet it at the barrier"])


def _order(block: Block):
    """The first store (in the block's order) whose chunk was not ready when it was issued, or whose buffer was
    written while it may still have been reading it."""
    for store in block.stores:
        found = _unready(block, store) or _overwritten(block, store)
        if found is not None:
            return found
    return None


def _unready(block: Block, store: Event):
    watch = block.watch
    root, elements = store.detail[3], store.detail[4]
    name = watch.names.get(root, "buffers")
    for element in elements:  # a write with no barrier between it and the store
        for w in block.writes.get((root, element), []):
            if w.thread != store.thread and w.epoch == store.epoch:
                when = ("here the write came after the store was issued" if w.seq > store.seq else
                        "here the write came first, by chance")
                return (f"a store was issued before every thread had written its part of the chunk: "
                        f"threadIdx.x={store.thread} of {block.name} issued the store of {block.chunk(store)} at\n"
                        f"            {watch.code(store.line)}\n"
                        f"        and threadIdx.x={w.thread} wrote {name}[{element}], which that store reads, at\n"
                        f"            {watch.code(w.line)}\n"
                        f"        with no barrier between the two ({when}): on a GPU the copy engine may read the "
                        "buffer before that write",
                        ["every thread writes its elements of chunk j and fences, then the block meets at a barrier "
                         "(cuda.syncthreads()), and only after it does the one thread issue the chunk's store_tile"])
    for element in elements:  # the last write before the store, not fenced before it
        earlier = [w for w in block.writes.get((root, element), []) if before(w, store)]
        if not earlier:
            continue
        w = max(earlier, key=lambda e: (e.epoch, e.seq))
        fences = block.fences.get(w.thread, [])
        later = fences[bisect.bisect_right([f.seq for f in fences], w.seq):]
        if later and before(later[0], store):
            continue
        where = (f" (its fence_proxy_async() at line {later[0].line} comes after the barrier)" if later else "")
        return (f"a store was issued before a thread's writes were fenced: threadIdx.x={w.thread} of {block.name} "
                f"wrote {name}[{element}] at\n            {watch.code(w.line)}\n"
                f"        and executed no fence_proxy_async() between that write and the barrier before the store "
                f"of {block.chunk(store)}, which reads it{where}, at\n            {watch.code(store.line)}\n"
                "        The threads' writes go through the generic proxy and the copy engine reads through the "
                "async proxy: without the fence it may read what the buffer held before",
                ["every thread that wrote the buffer calls fence_proxy_async() after its writes and before the "
                 "barrier (lesson 23's table: write, fence, meet, store)"])
    return None


def _overwritten(block: Block, store: Event):
    group = block.group_of.get(id(store))
    retired = group.retired if group is not None else None
    root = store.detail[3]
    for element in store.detail[4]:
        for w in block.writes.get((root, element), []):
            if not (w.seq > store.seq if w.thread == store.thread else w.epoch > store.epoch):
                continue  # (not after the store: _unready's)
            if retired is not None and before(retired, w):
                continue
            return _overwrite_message(block, store, w, element, retired)
    return None


def _overwrite_message(block: Block, store: Event, w: Event, element: int, retired: Event | None):
    watch = block.watch
    issuer = store.thread
    waits = [x for x in block.waits.get(issuer, []) if x.seq > store.seq and before(x, w)]
    if retired is not None and retired.epoch == w.epoch and w.thread != issuer:
        why = (f"threadIdx.x={issuer}'s wait that retires it,\n            {watch.code(retired.line)}\n"
               f"        has no barrier between it and this write: the other threads run ahead of the wait and write "
               "while the copy engine may still be reading")
        hint = ("after the issuing thread's wait, the block meets at a barrier before any thread writes the buffer "
                "again: wait, then barrier, then write")
    elif waits:
        last = waits[-1]
        kind = "store_wait_read" if last.detail[1] else "store_wait"
        groups = block.groups.get(issuer, [])
        reading = [g for g in groups if g.commit.seq < last.seq and (g.retired is None or g.retired.seq > last.seq)]
        chunks = [block.chunk(s) for g in reading for s in g.stores]
        why = (f"the last wait before this write,\n            {watch.code(last.line)}\n"
               f"        lets {last.detail[0]} group{'s' if last.detail[0] != 1 else ''} of threadIdx.x={issuer} go on "
               f"reading (the stores of {' and '.join(chunks)}), and this buffer's store is one of them")
        hint = (f"{kind}(n) returns once at most n of this thread's groups are still reading. Count the stores "
                "issued after the one that read the buffer written next: waiting just before chunk j's barrier (as "
                f"step 23 does), the next buffer written is chunk j + 1's, read by chunk j − {BUFFERS - 1}'s store, "
                f"and {BUFFERS - 2} store{'s' if BUFFERS - 2 != 1 else ''} was issued after it — store_wait_read("
                f"{BUFFERS - 2}); waiting before writing chunk j (then a barrier), chunk j's buffer was read by chunk "
                f"j − {BUFFERS}'s store, and {BUFFERS - 1} were issued after it — store_wait_read({BUFFERS - 1})")
        stored = sum(len(g.stores) > 0 for g in groups)
        if stored < CHUNKS:
            hint += (f". This block stored {stored} of its {CHUNKS} chunks: a chunk with no store makes no group, "
                     "so fewer stores lie behind the buffer than the count assumes — store every chunk (the copy "
                     "engine writes nothing of a box that lies past C)")
    else:
        others = sorted({t for t, ws in block.waits.items() if t != issuer})
        also = (f" (threadIdx.x={others[0]} waited, but a thread's waits count only the groups it committed itself)"
                if others else "")
        why = f"threadIdx.x={issuer} called no store_wait_read or store_wait between that store and this write{also}"
        hint = ("before a buffer is written again, the thread that issued its store waits until the copy engine has "
                "read it — store_wait_read(n) leaves at most n of its groups reading — and the block meets at a "
                "barrier after that wait")
    name = watch.names.get(store.detail[3], "buffers")
    return (f"a thread wrote into a buffer the copy engine may still be reading: threadIdx.x={w.thread} of "
            f"{block.name} wrote {name}[{element}] ({block.buffer_name(element)}) at\n"
            f"            {watch.code(w.line)}\n"
            f"        while the store of {block.chunk(store)}, issued from that buffer at\n"
            f"            {watch.code(store.line)}\n"
            f"        may still be reading it: {why}\n"
            f"        {block.picture(w, element // CHUNK_FLOATS, f'threadIdx.x={w.thread} writes here')}",
            [hint])


def _uncommitted(block: Block):
    watch = block.watch
    uncommitted = [s for s in block.stores if id(s) not in block.group_of]
    if uncommitted:
        s = uncommitted[0]
        return (f"a store was never committed: threadIdx.x={s.thread} of {block.name} issued the store of "
                f"{block.chunk(s)} at\n            {watch.code(s.line)}\n"
                "        and no store_commit() after it: only committed groups are waited for, so nothing tells "
                "when it has read its buffer",
                ["store_commit() after each chunk's store_tile closes it into a group; store_wait_read(n) and "
                 "store_wait(n) count those groups"])
    return None


def _left_reading(block: Block):
    watch = block.watch
    for thread, groups in sorted(block.groups.items()):
        reading = [g for g in groups if g.retired is None and g.stores]
        if reading:
            store = reading[0].stores[0]
            more = len(reading) - 1
            return (f"{block.name} may end while the store of {block.chunk(store)} still reads its buffer"
                    + (f" (and {more} more)" if more else "") + f": threadIdx.x={thread} issued it at\n"
                    f"            {watch.code(store.line)}\n"
                    "        and no later store_wait_read or store_wait of that thread retired it. When a block ends, "
                    "its shared memory goes to the next block while the copy engine may still be reading it\n"
                    f"        {block.picture(None)}",
                    ["before the block ends, the thread that issued the stores waits for them: store_wait(0) (every "
                     "store complete) or store_wait_read(0) (every store has read its buffer)"])
    return None


def _boxes(block: Block):
    watch = block.watch
    bx, by = block.position
    block_row, block_col = by * BLOCK_M, bx * BLOCK_N
    if block_col >= watch.n or block_row >= watch.m:
        return None
    if not block.stores:
        return (f"{block.name} stored no chunk: no thread called store_tile, so its elements of C were never "
                "written",
                ["after the barrier of chunk j, one thread stores it: store_tile(c_map, row, col, buffers, start of "
                 "its buffer), then store_commit()"])
    expected = {(block_row + j * CHUNK_ROWS, block_col): j for j in range(CHUNKS)}
    for s in block.stores:
        row, col, start = s.detail[:3]
        if (row, col) not in expected:
            return (f"a box at coordinates where no chunk starts: threadIdx.x={s.thread} of {block.name} stored the "
                    f"box at (row, column) = ({row}, {col}), at\n            {watch.code(s.line)}\n"
                    f"        chunk j of this block is the box at ({block_row} + {CHUNK_ROWS}·j, {block_col})",
                    [f"chunk j holds rows block_row + {CHUNK_ROWS}·j … of the block's tile, and its box starts at "
                     "(block_row + j * CHUNK_ROWS, block_col): row first, then column"])
        if start * 4 % TILE_ALIGN_BYTES:
            return (f"a tile the copy engine cannot read: threadIdx.x={s.thread} of {block.name} stored from element "
                    f"{start} of the buffers, at\n            {watch.code(s.line)}\n"
                    f"        a shared address that is not a multiple of {TILE_ALIGN_BYTES} bytes (on a GPU: an "
                    "illegal instruction)",
                    [f"buffer j starts at element j · CHUNK_FLOATS = j · {CHUNK_FLOATS}"])
    seen: dict = {}
    for s in block.stores:
        seen.setdefault(s.detail[:2], []).append(s)
    for box, stores in seen.items():
        if len(stores) > 1:
            never = [j for b, j in expected.items() if b not in seen and b[0] < watch.m]
            also = f", and chunk{'s' if len(never) > 1 else ''} {_numbers(never)} never" if never else ""
            return (f"chunk {expected[box]} of {block.name} was stored {len(stores)} times (its box at {box}){also}: "
                    f"threadIdx.x={stores[1].thread} stored it again at\n            {watch.code(stores[1].line)}",
                    [f"chunk j's box starts at (block_row + j * CHUNK_ROWS, block_col): each of the {CHUNKS} chunks "
                     "once"])
    for box, j in expected.items():
        if box not in seen and box[0] < watch.m:
            return (f"chunk {j} of {block.name} (rows {box[0]}–{min(box[0] + CHUNK_ROWS, watch.m) - 1} of C) was "
                    "never stored: its elements of C were never written",
                    [f"every chunk that holds rows of C is stored: j = 0 … {CHUNKS - 1}, each once"])
    return None


def problem(watch: Watch) -> tuple[str, list[str]] | None:
    """The first thing the watched launch did wrong, block by block: the barriers, who stores, the order, the end,
    the boxes."""
    grid_x, grid_y = watch.grid
    for number in range(grid_x * grid_y):
        block = Block(watch, number, list(watch.events.get(number, [])))
        checks = (_barrier_counts, _issuers, _uncommitted, _order, _left_reading, _boxes)
        found = _first(check(block) for check in checks)
        if found is not None:
            return found
    return None


# -- grading -----------------------------------------------------------------------------------------------------
def grade(exercise, module, seed: int = 0, say=None, time_limit: float | None = None, compile: bool = True):
    from . import exercises

    time_limit = exercises.LAUNCH_SECONDS if time_limit is None else time_limit
    report, kernel = exercises.opening_checks(exercise, module, compile)
    if kernel is None:
        return report
    rng = np.random.default_rng(seed + 1)
    for case in cases(seed):
        if say is not None:
            say(f"  …     {case} on the {'simulator' if SIMULATOR else 'GPU'}")
        a, b, c = exercises.case_inputs(rng, case)
        if not SIMULATOR:
            failure = _launch_on_gpu(kernel, a, b, c, time_limit)
            if failure is not None:
                return report.fail(f"{case}: {failure}")
            wrong = exercises.compare(c, a, b, (BLOCK_M, BLOCK_N))
            if wrong is not None:
                return report.fail(f"{case}: {wrong.what}", *_hints(wrong))
            report.ok(f"{case}: every element right")
            continue
        failure, watch = launch(kernel, module, a, b, c, time_limit)
        if failure is not None:
            return report.fail(f"{case}: {failure}")
        found = problem(watch)
        if found is not None:
            return report.fail(f"{case}: {found[0]}", *found[1])
        wrong = exercises.compare(c, a, b, (BLOCK_M, BLOCK_N), watch.stored)
        if wrong is not None:
            return report.fail(f"{case}: {wrong.what}", *_hints(wrong))
        report.ok(f"{case}: every element right; every buffer written only after its last store had read it (the "
                  "issuing thread's wait, then a barrier), every chunk written and fenced before its store, each "
                  "chunk stored once by one thread, every store waited for before the block ends")
    if not SIMULATOR:
        report.skip("the order of writes, fences, barriers, stores and waits is checked on the simulator (its copy "
                    "engine is modelled there): NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check tma_store")
    return report


def _hints(wrong) -> list[str]:
    """The comparison's hints, in this exercise's terms where C is never written at all (the kernel has no c: the
    copy engine writes it)."""
    if wrong.kind == "unwritten" and wrong.mask.all():
        return ["no element at all: after the barrier of chunk j, one thread of the block stores it — "
                "store_tile(c_map, row, col, buffers, start of its buffer), then store_commit()"]
    return wrong.hints


def _launch_on_gpu(kernel, a, b, c, time_limit: float) -> str | None:
    """The kernel on this GPU, C poisoned first (copied back into ``c``): a failure message, or None."""
    from numba import cuda

    from . import exercises
    from ..toolkit.kernel_tools import quiet_small_grids
    from ..toolkit.mbarrier_ops import tensor_map_2d

    case = Case(c.shape[0], c.shape[1], a.shape[1])
    try:
        c_device = cuda.to_device(c)
        c_map = tensor_map_2d(c_device, CHUNK_ROWS, BLOCK_N)
        with exercises._time_limit(time_limit, f"tma_store_kernel on {case}", kernel), quiet_small_grids():
            kernel[case.grid, THREADS](cuda.to_device(a), cuda.to_device(b), c_map)
            cuda.synchronize()
        c[...] = c_device.copy_to_host()
    except Exception as error:
        return f"the kernel failed: {type(error).__name__}: {error}"
    return None
