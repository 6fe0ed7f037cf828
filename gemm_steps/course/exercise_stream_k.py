"""The grader of the stream-K exercise (``exercises/stream_k.py``, lesson 11): the split and the fix-up, checked on
the simulator by what the kernel did, not only by the numbers.

Numba's simulator runs a grid one block at a time, in index order, so a fix-up that reads a partial sum before its
writer raised the flag still finds it written: the numbers are right by luck. So the grader records every access to
``workspace`` and ``flags``, every ``cuda.threadfence()`` and every ``cuda.syncthreads()``, each with a global sequence
number, and checks the protocol by order, not by timing. Within a block, one event *happens before* another if the
same thread does it first, or a ``syncthreads`` lies between them (the later one's thread has passed more barriers
than the earlier one's had). A partial sum read by block R from block W is safe when

* **W released it**: its write happens before a fence that happens before W raising ``flags[W]``, and
* **R acquired it**: R read ``flags[W]`` as raised, and that read happens before a fence that happens before the read
  of the partial sum.

Anything else is the race, named: which block read whose partial sum, at which line, and which link is missing. A
spin on a flag that can never be raised on the simulator (a block that has already ended without raising it, or one
that has not started) is stopped at once and said so.

It also records which block computed each k-iteration (a read of ``a[row, k]`` paired with the same thread's read of
``b[k, col]``): a k-iteration computed twice or never, or shares that differ by more than one, fail as such; and where
the numbers of a tile are wrong, a least-squares fit of the tile against its k-iterations' products says which were
added twice and which never (the inputs are random, so the products are independent).
"""

from __future__ import annotations

import bisect
import sys
import threading
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

import numpy as np

TILE = 16
SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[::1], int32[::1])"
#: The grid of each shape: never the same, so a kernel that assumes a grid size fails.
GRIDS = (3, 5)
#: Reads of one flag, in a row, that find it still 0 before the grader calls it a spin that cannot end here.
SPIN_READS = 2000
#: (blocks, iterations) on which stream_k_share is checked on its own.
SHARE_CHECKS = ((3, 20), (5, 14), (4, 16), (7, 3), (4, 13), (6, 37), (1, 5))


def solution():
    from . import exercise_stream_k_solution

    return exercise_stream_k_solution


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int
    blocks: int

    def __str__(self) -> str:
        return f"M×N×K = {self.m}×{self.n}×{self.k}, {self.blocks} blocks"

    @property
    def col_tiles(self) -> int:
        return -(-self.n // TILE)

    @property
    def tiles(self) -> int:
        return -(-self.m // TILE) * self.col_tiles

    @property
    def k_tiles(self) -> int:
        return -(-self.k // TILE)

    def tile_at(self, tile: int) -> tuple[int, int]:
        return tile // self.col_tiles, tile % self.col_tiles


def cases(seed: int = 0) -> list[Case]:
    """Two ragged shapes (no side a multiple of 16): 2×2 tiles of 5 k-iterations on 3 blocks (shares of 6 and 7 that
    cross tiles, tiles split between two blocks), then 1×2 tiles of 7 on 5 blocks (a tile split among three)."""
    rng = np.random.default_rng(seed)

    def part(low=4):
        return int(rng.integers(low, TILE))

    return [Case(TILE + part(), TILE + part(), 4 * TILE + part(1), GRIDS[0]),
            Case(part(), TILE + part(), 6 * TILE + part(1), GRIDS[1])]


def even_shares(blocks: int, iterations: int) -> list[tuple[int, int]]:
    return [(b * iterations // blocks, (b + 1) * iterations // blocks) for b in range(blocks)]


# -- the split, on its own -------------------------------------------------------------------------------------------
def check_share(module, report) -> None:
    share = getattr(module, "stream_k_share", None)
    if share is None:
        report.fail("stream_k_share(block, blocks, iterations) is missing")
        return
    share = getattr(share, "py_func", share)
    for blocks, iterations in SHARE_CHECKS:
        try:
            got = [tuple(int(x) for x in share(b, blocks, iterations)) for b in range(blocks)]
        except Exception as error:
            report.fail(f"stream_k_share failed: {type(error).__name__}: {error}")
            return
        problem = share_problem(got, blocks, iterations)
        if problem is not None:
            shown = ", ".join(f"[{b}, {e})" for b, e in got)
            report.fail(f"stream_k_share with {blocks} blocks and {iterations} k-iterations: {problem}",
                        f"your shares, block 0 first: {shown}",
                        f"an even split: block b takes [b·I // G, (b + 1)·I // G) — here "
                        f"{', '.join(f'[{b}, {e})' for b, e in even_shares(blocks, iterations))}")
            return
    report.ok("stream_k_share deals the k-iterations out evenly, in order, each once")


def share_problem(shares: list[tuple[int, int]], blocks: int, iterations: int) -> str | None:
    """What is wrong with these shares (None: contiguous, in order, covering [0, iterations), even)."""
    for block, (begin, end) in enumerate(shares):
        if end < begin:
            return f"block {block}'s share [{begin}, {end}) ends before it begins"
    if shares[0][0] != 0:
        return f"k-iterations 0 … {shares[0][0] - 1} belong to no block: block 0's share starts at {shares[0][0]}"
    for block in range(1, blocks):
        end, begin = shares[block - 1][1], shares[block][0]
        if begin > end:
            return (f"k-iterations {end} … {begin - 1} belong to no block (block {block - 1}'s share ends at {end}, "
                    f"block {block}'s starts at {begin}): a tile never summed")
        if begin < end:
            return (f"k-iterations {begin} … {end - 1} belong to blocks {block - 1} and {block} (block {block - 1}'s "
                    f"share ends at {end}, block {block}'s starts at {begin}): a tile summed twice")
    if shares[-1][1] != iterations:
        last = shares[-1][1]
        return (f"k-iterations {last} … {iterations - 1} belong to no block" if last < iterations else
                f"the last block's share ends at {last}, past the {iterations} k-iterations there are")
    counts = [end - begin for begin, end in shares]
    if max(counts) - min(counts) > 1:
        most, fewest = int(np.argmax(counts)), int(np.argmin(counts))
        return (f"the split is not even: block {most} gets {counts[most]} k-iterations and block {fewest} "
                f"{counts[fewest]}; an even split gives each block ⌊{iterations}/{blocks}⌋ = {iterations // blocks} "
                f"or ⌈{iterations}/{blocks}⌉ = {-(-iterations // blocks)}")
    return None


# -- watching the launch ---------------------------------------------------------------------------------------------
@dataclass
class Event:
    seq: int
    block: int
    thread: int
    kind: str  # "write", "read" (workspace), "flag_read", "flag_write", "fence"
    index: int = -1
    value: float = 0.0
    line: int = 0
    writer: "Event | None" = None  # a workspace read: the write it read
    atomic: bool = False


@dataclass
class Log:
    kernel_file: str
    events: list = field(default_factory=list)
    barriers: dict = field(default_factory=dict)  # (block, thread) → sequence numbers of its barrier exits
    pairs: dict = field(default_factory=dict)  # (tile-row, tile-col, k-tile) → blocks that computed it
    last_read: dict = field(default_factory=dict)  # thread ident → ("a", row, k) or ("b", k, col)
    spins: dict = field(default_factory=dict)  # (block, thread, flag) → reads in a row that found it 0
    spin: tuple | None = None  # (block, thread, flag, line) of a spin stopped as endless

    def passed(self, block: int, thread: int, seq: int) -> int:
        """Barriers this thread of this block had passed before event ``seq``."""
        return bisect.bisect_left(self.barriers.get((block, thread), ()), seq)

    def before(self, first: Event, second: Event) -> bool:
        """``first`` happens before ``second`` (same block): same thread and earlier, or a barrier between."""
        if first.block != second.block:
            return False
        if first.thread == second.thread:
            return first.seq < second.seq
        return self.passed(second.block, second.thread, second.seq) > self.passed(first.block, first.thread,
                                                                                   first.seq)


def _me() -> tuple[int, int]:
    thread = threading.current_thread()
    return thread.blockIdx.x, thread.thread_id


def _line(log: Log) -> int:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename != log.kernel_file:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else 0


class SpinForever(Exception):
    """A block spins on a flag that cannot be raised on the simulator."""


def _tracked_classes():
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    from .race_check import _sequence

    class Watched(FakeCUDAArray):
        def __init__(self, array, name, log, deadline):
            super().__init__(array)
            self.name, self.log, self.deadline = name, log, deadline

        def _index(self, index) -> int:
            return int(index[0] if isinstance(index, tuple) else index)

    class Operand(Watched):
        """a or b: pairs each thread's read of a[row, k] with its read of b[k, col] → (tile, k-tile, block)."""

        def __getitem__(self, index):
            if self.deadline.expired:
                self.deadline.check()
            value = self._ary[index]
            try:
                i, j = int(index[0]), int(index[1])
            except (TypeError, IndexError):
                return value
            log, me = self.log, threading.get_ident()
            other = log.last_read.get(me)
            if self.name == "a":
                log.last_read[me] = ("a", i, j)
                if other is not None and other[0] == "b" and other[1] == j:
                    self._pair(i, j, other[2])
            else:
                log.last_read[me] = ("b", i, j)
                if other is not None and other[0] == "a" and other[2] == i:
                    self._pair(other[1], i, j)
            return value

        def _pair(self, row, k, col):
            key = (row // TILE, col // TILE, k // TILE)
            block = threading.current_thread().blockIdx.x
            blocks = self.log.pairs.get(key)
            if blocks is None:
                self.log.pairs[key] = {block}
            elif block not in blocks:
                blocks.add(block)

    class Workspace(Watched):
        def __init__(self, *args):
            super().__init__(*args)
            self.last_write: dict = {}

        def __getitem__(self, index):
            if self.deadline.expired:
                self.deadline.check()
            value = self._ary[index]
            block, thread = _me()
            i = self._index(index)
            self.log.events.append(Event(next(_sequence), block, thread, "read", i, float(value), _line(self.log),
                                         writer=self.last_write.get(i)))
            return value

        def __setitem__(self, index, value):
            if self.deadline.expired:
                self.deadline.check()
            self._ary[index] = value
            block, thread = _me()
            i = self._index(index)
            event = Event(next(_sequence), block, thread, "write", i, float(value), _line(self.log))
            self.last_write[i] = event
            self.log.events.append(event)

    class Flags(Watched):
        def __getitem__(self, index):
            if self.deadline.expired:
                self.deadline.check()
            value = self._ary[index]
            block, thread = _me()
            i = self._index(index)
            atomic = getattr(threading.current_thread(), "_gemm_steps_atomic", False)
            self.log.events.append(Event(next(_sequence), block, thread, "flag_read", i, int(value),
                                         _line(self.log), atomic=atomic))
            key = (block, thread, i)
            if value == 0:
                spins = self.log.spins[key] = self.log.spins.get(key, 0) + 1
                if spins >= SPIN_READS:
                    self.log.spin = (block, thread, i, _line(self.log))
                    raise SpinForever("a spin that cannot end on the simulator")
            else:
                self.log.spins.pop(key, None)
            return value

        def __setitem__(self, index, value):
            if self.deadline.expired:
                self.deadline.check()
            self._ary[index] = value
            block, thread = _me()
            atomic = getattr(threading.current_thread(), "_gemm_steps_atomic", False)
            self.log.events.append(Event(next(_sequence), block, thread, "flag_write", self._index(index),
                                         int(value), _line(self.log), atomic=atomic))

    return Operand, Workspace, Flags


@contextmanager
def _watch_order(log: Log):
    """Record fences and barrier exits in ``log``; mark the simulator's atomics (a flag read inside one is atomic)."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi

    from .race_check import _sequence

    original_fence = kernelapi.FakeCUDAModule.threadfence
    original_sync = sim_kernel.BlockThread.syncthreads
    atomics = {name: getattr(kernelapi.FakeCUDAAtomic, name) for name in
               ("add", "sub", "exch", "max", "min", "compare_and_swap", "cas", "inc", "dec", "or_", "and_", "xor")
               if hasattr(kernelapi.FakeCUDAAtomic, name)}

    def threadfence(self):
        block, thread = _me()
        log.events.append(Event(next(_sequence), block, thread, "fence", line=_line(log)))

    def syncthreads(self):
        original_sync(self)
        log.barriers.setdefault((self.blockIdx.x, self.thread_id), []).append(next(_sequence))

    def marked(operation):
        def atomic(self, *args):
            me = threading.current_thread()
            me._gemm_steps_atomic = True
            try:
                return operation(self, *args)
            finally:
                me._gemm_steps_atomic = False
        return atomic

    kernelapi.FakeCUDAModule.threadfence = threadfence
    sim_kernel.BlockThread.syncthreads = syncthreads
    for name, operation in atomics.items():
        setattr(kernelapi.FakeCUDAAtomic, name, marked(operation))
    try:
        yield
    finally:
        kernelapi.FakeCUDAModule.threadfence = original_fence
        sim_kernel.BlockThread.syncthreads = original_sync
        for name, operation in atomics.items():
            setattr(kernelapi.FakeCUDAAtomic, name, operation)


def launch(kernel, a, b, c, blocks: int, time_limit: float):
    """Run the kernel on the simulator, watched: (failure message or None, Log, stores to C, workspace, flags)."""
    from . import exercises
    from .race_check import LaunchStopped, SimulatorCheck, detect_races, nan_local_arrays, tracked_global

    kernel_file = kernel.py_func.__code__.co_filename
    log = Log(kernel_file)
    workspace = np.full(blocks * TILE * TILE, np.nan, np.float32)
    flags = np.zeros(blocks, np.int32)
    what = f"stream_k_kernel on {c.shape[0]}×{c.shape[1]}×{a.shape[1]}"
    tc = None
    try:
        with ExitStack() as stack:
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore", RuntimeWarning)
            deadline = stack.enter_context(exercises._time_limit(time_limit, what, kernel))
            try:
                Operand, Workspace, Flags = _tracked_classes()
                ta, tb = Operand(a, "a", log, deadline), Operand(b, "b", log, deadline)
                tc = tracked_global(c, "c", watch_stores=True, deadline=deadline)
                tw, tf = Workspace(workspace, "workspace", log, deadline), Flags(flags, "flags", log, deadline)
                stack.enter_context(detect_races(deadline))
                stack.enter_context(nan_local_arrays())
                stack.enter_context(_watch_order(log))
                kernel[blocks, (TILE, TILE)](ta, tb, tc, tw, tf)
            except BaseException as error:
                if deadline.expired:
                    raise LaunchStopped() from error
                raise
    except LaunchStopped:
        return (f"the launch did not finish within {time_limit:.0f} s and was stopped: does a loop never end?",
                log, tc, workspace, flags)
    except Exception as error:
        if log.spin is not None:  # (the simulator re-raises a thread's exception as a new one of its type)
            return _spin_message(*log.spin, log), log, tc, workspace, flags
        if isinstance(error, SimulatorCheck):
            return exercises._without_thread_prefix(str(error)), log, tc, workspace, flags
        if isinstance(error, IndexError):
            return (f"a thread read or wrote outside an array: {error}\n        (thread and block as tid=[x, y, z] "
                    "ctaid=[x, y, z]) — check row < M, col < N, k < K, and the workspace slot (block · 256 + "
                    "thread)"), log, tc, workspace, flags
        return f"the kernel failed: {type(error).__name__}: {error}", log, tc, workspace, flags
    return None, log, tc, workspace, flags


def _thread_name(thread: int) -> str:
    return f"threadIdx=({thread % TILE}, {thread // TILE})"


def _code(log: Log, line: int) -> str:
    from .race_check import source_line

    return source_line((log.kernel_file, line)) if line else "an unknown line"


def _spin_message(block: int, thread: int, flag: int, line: int, log: Log) -> str:
    if flag > block:
        why = (f"block {flag} comes after block {block}: the simulator runs one block at a time in index order, so "
               f"block {flag} has not started; on a GPU, whether it runs while block {block} spins depends on "
               "residency. An owner waits only for lower-numbered blocks (they computed the tile's earlier "
               "k-iterations, and never wait for it)")
    elif flag == block:
        why = "that is this block's own flag: a block never waits for itself"
    else:
        raised = any(e.kind == "flag_write" and e.block == flag and e.index == flag and e.value != 0
                     for e in log.events)
        why = (f"block {flag} has already ended ({'it raised the flag, and something set it back to 0 before this wait' if raised else 'without raising it'}): "
               f"does block {flag}'s share end inside this tile, and does the writer raise flags[its block]?")
    return (f"block {block}'s {_thread_name(thread)} read flags[{flag}] {SPIN_READS} times and found it 0 every time, "
            f"at\n            {_code(log, line)}\n        {why}")


# -- what the launch says ----------------------------------------------------------------------------------------------
def coverage_problem(log: Log, case: Case) -> tuple[str, list[str]] | None:
    """Each k-iteration computed by exactly one block; each block's count within one of the others'."""
    counts = [0] * case.blocks
    for t in range(case.tiles):
        row, col = case.tile_at(t)
        for kt in range(case.k_tiles):
            blocks = sorted(log.pairs.get((row, col, kt), ()))
            iteration = t * case.k_tiles + kt
            where = f"k-iteration {iteration} (tile {t} at tile-row {row}, tile-column {col}; its k-tile {kt})"
            if not blocks:
                return (f"{where} was computed by no block: that part of the tile is never summed",
                        ["each k-iteration belongs to exactly one block's share; does the walk over your share reach "
                         "its first iteration (while iteration > begin), and compute each piece from its first "
                         "k-iteration?"])
            if len(blocks) > 1:
                return (f"{where} was computed by blocks {', '.join(map(str, blocks))}: that part of the tile is "
                        "summed twice", ["the shares must not overlap: block b computes only [begin, end) of "
                                         "stream_k_share(b, G, I), each piece from max(begin, the tile's start)"])
            counts[blocks[0]] += 1
    if max(counts) - min(counts) > 1:
        most, fewest = int(np.argmax(counts)), int(np.argmin(counts))
        total = case.tiles * case.k_tiles
        return (f"the split is not even: block {most} computed {counts[most]} k-iterations and block {fewest} "
                f"{counts[fewest]} (of {total} on {case.blocks} blocks: ⌊{total}/{case.blocks}⌋ = "
                f"{total // case.blocks} or ⌈{total}/{case.blocks}⌉ = {-(-total // case.blocks)} each)",
                [f"every block's k-iterations, block 0 first: {counts}",
                 "stream-K's point is that every block gets the same work: take the shares from stream_k_share"])
    return None


def owners_problem(stores, case: Case) -> tuple[str, list[str]] | None:
    """Each tile of C stored by one block."""
    owners: dict = {}
    for _, block, _, flat in stores:
        tile = (flat // case.n // TILE, flat % case.n // TILE)
        owners.setdefault(tile, set()).add(block)
    for tile, blocks in sorted(owners.items()):
        if len(blocks) > 1:
            return (f"tile {tile} of C was stored by blocks {', '.join(map(str, sorted(blocks)))}: only the block "
                    "that computes a tile's last k-iteration stores it",
                    ["a block whose piece stops before the tile's last k-iteration is a writer: it leaves its partial "
                     "sum in its workspace slot and raises its flag, and stores nothing to C"])
    return None


def unwritten_read_problem(log: Log) -> tuple[str, list[str]] | None:
    for event in log.events:
        if event.kind == "read" and event.writer is None:
            slot = event.index // (TILE * TILE)
            return (f"block {event.block}'s {_thread_name(event.thread)} read workspace[{event.index}] (block "
                    f"{slot}'s slot), which no block had written, at\n            {_code(log, event.line)}",
                    ["block b's partial sum is in workspace[b·256 + thread]: does the owner read the slots of the "
                     "blocks that wrote, and does each writer write its own?"])
    return None


def tile_counts(c, a, b, case: Case, tile: tuple[int, int]) -> list[int] | None:
    """How many times each k-tile's product is in C's tile (a least-squares fit, rounded; None if it fits badly)."""
    rows = slice(tile[0] * TILE, min((tile[0] + 1) * TILE, case.m))
    cols = slice(tile[1] * TILE, min((tile[1] + 1) * TILE, case.n))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    products = [(a64[rows, kt * TILE:(kt + 1) * TILE] @ b64[kt * TILE:(kt + 1) * TILE, cols]).ravel()
                for kt in range(case.k_tiles)]
    target = c[rows, cols].astype(np.float64).ravel()
    if not np.all(np.isfinite(target)) or target.size < 2 * len(products):
        return None
    basis = np.stack(products, axis=1)
    counts, *_ = np.linalg.lstsq(basis, target, rcond=None)
    rounded = np.round(counts)
    scale = np.abs(basis).sum(axis=1).max() + 1e-30
    if np.max(np.abs(basis @ rounded - target)) > 1e-3 * scale:
        return None
    return [int(x) for x in rounded]


def sum_problem(problem, c, a, b, log: Log, case: Case) -> list[str]:
    """Hints for wrong numbers: per wrong tile, the k-iterations added twice or never, and whose they were."""
    if problem.kind != "wrong":
        return problem.hints
    rows, cols = np.nonzero(problem.mask)
    for tile in sorted({(int(r) // TILE, int(col) // TILE) for r, col in zip(rows, cols)}):
        counts = tile_counts(c, a, b, case, tile)
        if counts is None or all(x == 1 for x in counts):
            continue
        t = tile[0] * case.col_tiles + tile[1]

        def named(kts):  # runs of k-iterations, each with the block that computed it
            runs = []
            for kt in kts:
                who = "/".join(map(str, sorted(log.pairs.get((*tile, kt), ())))) or "?"
                if runs and runs[-1][1] == kt - 1 and runs[-1][2] == who:
                    runs[-1][1] = kt
                else:
                    runs.append([kt, kt, who])
            return ", ".join(f"{t * case.k_tiles + first}" + (f"–{t * case.k_tiles + last}" if last > first else "")
                             + f" (block {who}'s)" for first, last, who in runs)

        said = []
        for times, word in ((0, "never"), (2, "twice"), (3, "three times")):
            kts = [kt for kt, x in enumerate(counts) if x == times]
            if kts:
                said.append(f"k-iteration{'s' if len(kts) > 1 else ''} {named(kts)} {word}")
        return [f"tile {tile} of C (tile {t}) holds its k-iterations' products with {'; '.join(said)}: a partial sum "
                "added more or less than once",
                "the owner adds the partial sum of every lower-numbered block whose share ends inside the tile, once "
                "each, to its own piece; a writer leaves its partial sum only for that"]
    return problem.hints


def order_problem(log: Log) -> tuple[str, list[str]] | None:
    """The first partial-sum read that is not ordered after its writer's release and the reader's acquire."""
    events = log.events
    fences: dict = {}
    raises: dict = {}
    seen: dict = {}
    for e in events:
        if e.kind == "fence":
            fences.setdefault(e.block, []).append(e)
        elif e.kind == "flag_write" and e.value != 0:
            raises.setdefault((e.block, e.index), []).append(e)
        elif e.kind == "flag_read" and e.value != 0:
            seen.setdefault((e.block, e.index), []).append(e)
    before = log.before
    for r in events:
        if r.kind != "read" or r.writer is None or r.writer.block == r.block:
            continue
        w, reader, writer = r.writer, r.block, r.writer.block
        head = (f"race: block {reader} read block {writer}'s partial sum workspace[{r.index}] "
                f"({_thread_name(r.thread)}, at\n            {_code(log, r.line)})\n        ")
        # The reader's side: a read of flags[writer] that saw it raised, then a fence, then this read.
        flags_seen = seen.get((reader, writer), [])
        acquired = [y for y in flags_seen if before(y, r)]
        if not acquired:
            if not flags_seen:
                why = (f"before block {writer} released it: block {reader} never waited for flags[{writer}]. On a "
                       f"GPU block {writer} may still be computing that partial sum (here the simulator ran block "
                       f"{writer} first, so the numbers came out right by luck)")
                hint = (f"before adding block {writer}'s partial sum, thread 0 spins until flags[{writer}] is raised "
                        "(cuda.atomic.add(flags, other, 0) != 0), fences, and the block meets at cuda.syncthreads()")
            else:
                y = flags_seen[0]
                why = (f"before block {writer} released it as far as this thread knows: block {reader}'s "
                       f"{_thread_name(y.thread)} saw flags[{writer}] raised at\n            {_code(log, y.line)}\n"
                       f"        but {'only after this read' if y.thread == r.thread else 'no cuda.syncthreads() lies between that wait and this read'}")
                hint = "thread 0 waits; then cuda.syncthreads(); then every thread reads the partial sum"
            return head + why, [hint]
        if not any(before(y, g) and before(g, r) for g in fences.get(reader, []) for y in acquired):
            y = acquired[0]
            return (head + f"after block {reader} saw flags[{writer}] raised at\n            {_code(log, y.line)}\n"
                    "        but with no cuda.threadfence() between that read of the flag and this read: the flag's read "
                    "is relaxed and orders nothing after it, so on a GPU this read may be served before it — and see "
                    f"block {writer}'s slot as it was before",
                    ["reader: spin on the flag, cuda.threadfence(), then read (the fix-up's acquire: lesson 11, "
                     "'Visibility'; the fixup deep dive shows both fences in the PTX)"])
        # The writer's side: this write, then a fence, then the flag raised.
        flag_raises = raises.get((writer, writer), [])
        if not flag_raises:
            return (head + f"but block {writer} never raised flags[{writer}] (the flag seen raised was not set by "
                    f"block {writer})", ["a writer raises its own flag: cuda.atomic.exch(flags, block, 1)"])
        if not any(before(w, x) for x in flag_raises):
            x = flag_raises[0]
            return (head + f"block {writer} raised flags[{writer}] at\n            {_code(log, x.line)}\n"
                    f"        before its {_thread_name(w.thread)} wrote that partial sum at\n"
                    f"            {_code(log, w.line)}\n"
                    "        (or with no cuda.syncthreads() between the two): on a GPU the owner may see the flag and read "
                    "the slot before the partial sum is in it",
                    ["writer: store the partial sum, cuda.threadfence(), cuda.syncthreads(), then thread 0 raises the "
                     "flag"])
        if not any(before(w, f) and before(f, x) for f in fences.get(writer, []) for x in flag_raises):
            x = flag_raises[0]
            return (head + f"block {writer} wrote it at\n            {_code(log, w.line)}\n"
                    f"        and raised flags[{writer}] at\n            {_code(log, x.line)}\n"
                    "        with no cuda.threadfence() between the two: on a GPU another SM may see the flag raised "
                    "before the partial sum lands",
                    ["writer: store, cuda.threadfence(), cuda.syncthreads(), then raise the flag (the release)"])
    return None


def flags_problem(flags: np.ndarray) -> tuple[str, list[str]] | None:
    raised = np.flatnonzero(flags)
    if raised.size:
        return (f"after the launch flags[{', '.join(map(str, raised.tolist()))}] "
                f"{'are' if raised.size > 1 else 'is'} still raised: the next launch (the workspace and flags are "
                "reused) would find the flag up and read a partial sum that is not written yet",
                ["the owner resets each flag it consumed (flags[other] = 0, thread 0, after its fence)"])
    return None


def plain_spin_problem(log: Log) -> tuple[str, list[str]] | None:
    """A flag read with a plain load: in a spin loop, the compiler may load it once and spin on the register."""
    for e in log.events:
        if e.kind == "flag_read" and not e.atomic:
            return (f"block {e.block}'s {_thread_name(e.thread)} read flags[{e.index}] with a plain load, at\n"
                    f"            {_code(log, e.line)}\n"
                    "        On a GPU the compiler may load a plain variable once and spin on its register forever "
                    "(here the flag was already up: the simulator ran the writer first)",
                    ["read the flag atomically: while cuda.atomic.add(flags, other, 0) == 0: pass"])
    return None


# -- grading ---------------------------------------------------------------------------------------------------------
def grade(exercise, module, seed: int = 0, say=None, time_limit: float | None = None, compile: bool = True):
    from . import exercises

    time_limit = exercises.LAUNCH_SECONDS if time_limit is None else time_limit
    report, kernel = exercises.opening_checks(exercise, module, compile)
    if kernel is None:
        return report
    check_share(module, report)  # on its own first; the kernel runs even if it fails (it says more)
    rng = np.random.default_rng(seed + 1)
    for case in cases(seed):
        if say is not None:
            say(f"  …     {case} on the {'simulator' if exercises.SIMULATOR else 'GPU'}")
        a, b, c = exercises.case_inputs(rng, case)
        if not exercises.SIMULATOR:  # the numbers only: a GPU does not say in which order memory was touched
            _run_on_gpu(kernel, a, b, c, case.blocks)
            problem = exercises.compare(c, a, b, (TILE, TILE))
            if problem is not None:
                return report.fail(f"{case}: {problem.what}", *problem.hints)
            report.ok(f"{case}: every element right")
            continue
        failure, log, tc, _, flags = launch(kernel, a, b, c, case.blocks, time_limit)
        if failure is not None:
            return report.fail(f"{case}: {failure}")
        if tc.early_read is not None:
            flat, thread, where = tc.early_read
            from .race_check import source_line

            return report.fail(f"{case}: {thread} read c[{flat // case.n}, {flat % case.n}] before the kernel stored "
                               f"it, at\n            {source_line(where)}",
                               "C's old contents are not zeros: sum in a register, store each element once")
        problem = exercises.compare(c, a, b, (TILE, TILE), exercises.stored_mask(c.shape, tc.stores))
        found = None
        if problem is None or problem.kind != "unwritten":  # (nothing stored: that says it all)
            found = coverage_problem(log, case) or owners_problem(tc.stores, case) or unwritten_read_problem(log)
        if found is None:
            if problem is not None:
                return report.fail(f"{case}: {problem.what}", *sum_problem(problem, c, a, b, log, case))
            found = order_problem(log) or plain_spin_problem(log) or flags_problem(flags)
        if found is not None:
            return report.fail(f"{case}: {found[0]}", *found[1])
        report.ok(f"{case}: every element right, each k-iteration computed once in even shares, each partial sum "
                  "read after its writer's release and the reader's acquire")
    if not exercises.SIMULATOR:
        report.skip("who computed which k-iteration, and the order of the fix-up's reads and writes: checked on the "
                    "simulator only — NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check stream_k")
    return report


def _run_on_gpu(kernel, a, b, c, blocks: int) -> None:
    from numba import cuda

    from ..toolkit.kernel_tools import quiet_small_grids

    c_device = cuda.to_device(c)
    workspace = cuda.to_device(np.full(blocks * TILE * TILE, np.nan, np.float32))
    flags = cuda.to_device(np.zeros(blocks, np.int32))
    with quiet_small_grids():
        kernel[blocks, (TILE, TILE)](cuda.to_device(a), cuda.to_device(b), c_device, workspace, flags)
    c[...] = c_device.copy_to_host()


def time_against_step(exercise, module) -> str:
    return ("not timed: this kernel teaches the schedule and the fix-up (one element per thread, no shared memory); "
            "step 11's speed is gemm-steps bench --steps stream_k")
