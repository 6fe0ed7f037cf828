"""The grader of the cluster-multicast exercise (``exercises/cluster_multicast.py``, lesson 20): two blocks of a
cluster share B's k-tiles, each loading half and multicasting it into both, on the mbarrier_ring exercise's ring.

The kernel runs in clusters of two on the simulator (:func:`~gemm_steps.toolkit.cluster_ops.launch_cluster`: the
two blocks of a cluster at the same time, each with its own shared memory), with the twins of the mbarrier and
cluster operations watched. The simulator's threads run in whatever order Python picks, so the grader checks each
thread against the protocol, which does not depend on that order:

* **who loads what**: rank r multicasts half r of every k-tile (rows t·BLOCK_K + r·HALF_K …) into stage t % STAGES
  at offset r·HALF_FLOATS. Two blocks loading the same half, one block loading both, a load without multicast
  (``copy_tile``: this block only) are each named, with a drawing of which block loaded what into which stage;
* **the mask**: 0b11, both blocks. 1 << rank leaves the peer without this block's half;
* **expect_tx**: both halves land in every block, so each full barrier waits for both boxes' bytes;
* **the empty barrier**: it counts the consumers of both blocks (initialised with one block's count, it is named);
  a refill — a producer's ``arrive_expect_tx`` for fill r ≥ 1 of a stage, or its copy — while a consumer of a block
  the fill lands in had not released fill r − 1 on that producer's empty barrier (the peer may still be reading
  it); a missing arrival — a remote one, typically — ends in the twin's deadlock detector (a short wait limit here,
  :data:`WAIT_LIMIT_S`), with who never arrived on which block's barrier;
* **parities**: as the mbarrier_ring exercise's (the r-th fill of a stage completes phase r of its full barrier);
  a read of a stage before its wait, or after its release, too;
* **start and end**: ``fence_mbarrier_init()`` after the barriers' initialisation, no copy into or arrival on the
  peer before a ``cluster_sync()``, and after a thread's last copy into or arrival on the peer a last
  ``cluster_sync()`` before it returns (the simulator keeps a block's shared memory until the cluster ends, so an
  access to a block that has ended goes unnoticed there: the grader checks the order instead, after the launch);
  every thread of the cluster at every ``cluster_sync()``.

A thread that breaks a rule stops the launch there (the others stop at their next watched call), and that first
break is reported; then the numbers, on two ragged shapes, C poisoned with NaN first.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from . import exercise_mbarrier_ring as ring
from .exercise_mbarrier_ring import _name, _ranges, _thread, _thread_name

CLUSTER, STAGES, BLOCK_K, BLOCK_M, MAX_N, CONSUMERS = 2, 2, 8, 8, 32, 64
HALF_K = BLOCK_K // CLUSTER
HALF_FLOATS = HALF_K * MAX_N
STAGE_FLOATS = BLOCK_K * MAX_N
HALF_BYTES = HALF_FLOATS * 4
STAGE_BYTES = CLUSTER * HALF_BYTES  # what lands in each block per k-tile: its own half and the peer's
MASK = (1 << CLUSTER) - 1
THREADS = 32 + CONSUMERS
EMPTY_COUNT = CLUSTER * CONSUMERS
SIGNATURE = "void(float32[:, ::1], uint64[::1], float32[:, ::1])"
#: The simulator's mbarrier wait limit while grading (the twin's own is 60 s): a right solution's longest wait is a
#: fraction of a second here.
WAIT_LIMIT_S = 5.0
PARITY_HINT = ("the r-th time a stage is filled completes phase r of its full barrier: the consumer of k-tile t waits "
               "on full[t % STAGES] with parity (t // STAGES) % 2, the producer before refilling it on "
               "empty[t % STAGES] with parity (t // STAGES − 1) % 2 (lesson 16, 'The ring')")


def solution():
    from . import exercise_cluster_multicast_solution

    return exercise_cluster_multicast_solution


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"M×N×K = {self.m}×{self.n}×{self.k}"

    @property
    def blocks(self) -> int:
        return CLUSTER * -(-self.m // (CLUSTER * BLOCK_M))


def cases(seed: int = 0) -> list[Case]:
    """Two shapes, N a multiple of 4 up to 32 (a tensor map's rows are a multiple of 16 bytes). The first: two
    clusters (rank ≠ blockIdx.x in the second), the last block's rows ragged, K over 2·STAGES k-tiles and not a
    multiple of BLOCK_K (every stage filled at least twice, stage 0 three times: both parities and a wrap). The
    second: one cluster whose block 1 has no row of C (it still loads its half and releases every stage)."""
    rng = np.random.default_rng(seed)
    return [Case(CLUSTER * BLOCK_M + int(rng.integers(1, CLUSTER * BLOCK_M)), 4 * int(rng.integers(4, 8)),
                 BLOCK_K * (2 * STAGES + 1) + int(rng.integers(1, BLOCK_K))),
            Case(int(rng.integers(1, BLOCK_M)), 4 * int(rng.integers(2, 4)),
                 BLOCK_K * (3 * STAGES) + int(rng.integers(1, BLOCK_K)))]


# -- watching the launch ---------------------------------------------------------------------------------------------
class Stopped(RuntimeError):
    """A thread broke a rule (the watch holds what it did): the launch stops."""


@dataclass
class Watch(ring.Watch):
    """What the threads of the launch did, by block (blockIdx.x) and thread (threadIdx.x)."""

    stopped: bool = False
    fills: dict = field(default_factory=dict)  # (block, stage) → [(k-tile, half, from block)] that landed there
    produced: dict = field(default_factory=dict)  # (block, stage) → k-tiles its producer has loaded into the stage
    halves: dict = field(default_factory=dict)  # (block, k-tile) → the halves its producer loaded
    expects: dict = field(default_factory=dict)  # (block, stage) → arrive_expect_tx calls so far
    released: dict = field(default_factory=dict)  # (block, thread, target block, stage) → arrivals on empty[stage]
    syncs: dict = field(default_factory=dict)  # (block, thread) → (seq, line) of each cluster_sync()
    remote: dict = field(default_factory=dict)  # (block, thread) → (seq, what, line) of its last access to the peer
    inits: dict = field(default_factory=dict)  # (block, thread) → (seq, line) of its last mbarrier_init
    fences: dict = field(default_factory=dict)  # (block, thread) → seq of its last fence_mbarrier_init

    def fail(self, text: str, *hints: str) -> None:
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
        super().fail(text, *hints)

    def stop(self, text: str, *hints: str) -> None:
        """Record a broken rule and stop this thread."""
        self.fail(text, *hints)
        raise Stopped("stopped by the grader")

    def picture(self, mark: tuple | None = None, note: str = "") -> str:
        """The cluster as it is now: per block and stage, the halves it holds and from whom, and its two barriers."""
        first = _block() // CLUSTER * CLUSTER
        blocks = range(first, first + CLUSTER)
        lines = [f"the cluster then (blocks {first} and {first + 1}, ranks 0 and 1; k-tile t in stage t % {STAGES}; "
                 f"half h of a k-tile: its rows {HALF_K}h … {HALF_K}h + {HALF_K - 1}):"]
        for block in blocks:
            for s in range(STAGES):
                held = self.fills.get((block, s), [])
                if held:
                    tile = held[-1][0]
                    parts = ", ".join(f"half {h} ← block {source}" for t, h, source in held if t == tile)
                    cell = f"k-tile {tile}: {parts}"
                else:
                    cell = "nothing yet"
                cells = [f"block {block} stage {s}: {cell:<44}"]
                for name in ("full", "empty"):
                    twin = self.barriers.get((block, name, s))
                    if twin is None:
                        cells.append(f"{name}[{s}]: not initialised")
                        continue
                    done = getattr(twin, "completed", 0)
                    text = (f"{name}[{s}]: {done} phase{'s' if done != 1 else ''} done, "
                            f"{twin.expected - twin.pending}/{twin.expected} arrived")
                    if name == "full":
                        text += f", {twin.bytes_pending:,} bytes pending" if twin.bytes_pending > 0 else ""
                    else:
                        came = [source for source, _ in self.arrived.get((block, name, s, done), set())]
                        text += " (" + ", ".join(f"{came.count(b)} from block {b}" for b in blocks) + ")"
                    cells.append(text)
                row = " │ ".join(cells)
                if mark == (block, s):
                    row += f"   ◀ {note}"
                lines.append("            " + row)
        return "\n".join(lines)


def _block() -> int:
    return threading.current_thread().blockIdx.x


def _rank() -> int:
    return int(getattr(threading.current_thread(), "_cluster_rank", 0))


def _who(block: int, thread: int) -> str:
    return f"{_thread_name(thread)} of block {block}"


def _rows(tile: int, half: int) -> str:
    first = tile * BLOCK_K + half * HALF_K
    return f"rows {first}–{first + HALF_K - 1} of B"


def _before_any_sync(watch: Watch, what: str, peer: int, line: int) -> None:
    """A copy into, or an arrival on, block ``peer`` by a thread that has not met it at a cluster_sync() yet."""
    block, me = _block(), _thread()
    if peer != block and not watch.syncs.get((block, me)):
        watch.stop(f"{_who(block, me)} {what} before any cluster_sync(), at\n            {watch.code(line)}\n"
                   f"        block {peer} may not have started yet, or not initialised its barriers: a block reaches "
                   "into its peer only after both have met at a cluster_sync() that follows the initialisation",
                   "thread 0 initialises the barriers, then fence_mbarrier_init(); then every thread "
                   "fence_proxy_async() and cluster_sync() — before the first copy or arrival")


def _refill(watch: Watch, s: int, fill: int, targets: list, what: str, line: int) -> None:
    """Fill ``fill`` of stage ``s`` by this block's producer, into ``targets``: every consumer thread of each target
    has released the fill before on this block's empty[s] (the barrier the producer waits on)."""
    block, me = _block(), _thread()
    for target in targets if fill else []:
        reading = [q for q in range(32, THREADS) if watch.released.get((target, q, block, s), 0) < fill]
        if reading:
            whose = "its own" if target == block else f"the peer block {target}'s"
            tile = fill * STAGES + s
            watch.stop(f"a refill before every consumer released the stage: {_who(block, me)} (rank {_rank()}) "
                       f"{what}, fill {fill} of the stage, at\n            {watch.code(line)}\n        while {whose} "
                       f"consumer threads {_ranges(reading)} had not released k-tile {tile - STAGES} there (no arrival "
                       f"on block {block}'s empty[{s}] for it): they may still be reading it\n"
                       f"        {watch.picture((target, s), f'k-tile {tile} coming, k-tile {tile - STAGES} read')}",
                       "the producer waits on its own empty[s] before a refill; that barrier counts the consumers of "
                       f"both blocks ({EMPTY_COUNT}), and each consumer thread arrives on both blocks' empty[s] after "
                       "its last read (mbarrier_arrive_cluster(empty, s, r) for r = 0, 1)")


def _remote(watch: Watch, what: str, line: int) -> None:
    watch.remote[(_block(), _thread())] = (watch.next(), what, line)


def _wrappers(watch: Watch, ops, cluster):
    """The learner's mbarrier and cluster calls, watched (each calls the twin it replaces)."""
    from types import SimpleNamespace

    names = {ops: ("mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_wait", "copy_tile"),
             cluster: ("cluster_sync", "fence_mbarrier_init", "mbarrier_arrive_cluster", "copy_tile_multicast")}
    twins = SimpleNamespace(**{name: getattr(module, name) for module, group in names.items() for name in group})
    inside = threading.local()  # in a cluster twin, which calls the mbarrier twins itself: not the learner's call

    def check():
        if watch.stopped:
            raise Stopped("stopped by the grader")

    def mbarrier_init(array, index, count):
        check()
        name, s, block, me = _name(watch, array), int(index), _block(), _thread()
        line = watch.line()
        twins.mbarrier_init(array, index, count)
        watch.barriers[(block, name, s)] = ops._barrier(array, index)
        watch.inits[(block, me)] = (watch.next(), line)
        count = int(count)
        if name == "empty" and count != EMPTY_COUNT:
            one_block = count == CONSUMERS
            watch.stop(f"empty[{s}] of block {block} initialised with count {count}, at\n"
                       f"            {watch.code(line)}\n        "
                       + ("that is one block's consumers. Both blocks read every stage (each multicast writes into "
                          "both), so a producer may refill a stage only when the consumers of both blocks have "
                          f"released it: with {count} arrivals a phase may complete on this block's consumers alone, "
                          "while the peer's still read the stage" if one_block else
                          f"a phase needs one arrival from each consumer thread of both blocks: {EMPTY_COUNT}"),
                       f"empty[s] counts CLUSTER · CONSUMERS = {EMPTY_COUNT} arrivals a phase: every consumer thread "
                       "of the cluster, each arriving on both blocks' empty[s] (mbarrier_arrive_cluster)")
        if name == "full" and count != 1:
            watch.stop(f"full[{s}] of block {block} initialised with count {count}, at\n"
                       f"            {watch.code(line)}\n        a phase of full[s] takes one arrival, this block's "
                       "producer's arrive_expect_tx; the peer's half completes bytes on it, not arrivals",
                       "mbarrier_init(full, s, 1)")

    def fence_mbarrier_init():
        check()
        watch.fences[(_block(), _thread())] = watch.next()
        twins.fence_mbarrier_init()

    def cluster_sync():
        check()
        key = (_block(), _thread())
        if key in watch.inits and not watch.syncs.get(key) and watch.fences.get(key, 0) < watch.inits[key][0]:
            watch.stop(f"{_who(*key)} initialised the barriers (last at {watch.code(watch.inits[key][1])})\n"
                       f"        and reached its first cluster_sync() with no fence_mbarrier_init() after that, at\n"
                       f"            {watch.code(watch.line())}\n        after the cluster barrier the peer block "
                       "arrives on these barriers and multicasts into this block: the initialisation must be visible "
                       "to the cluster first (on the simulator it is at once; on a GPU not without the fence)",
                       "after the last mbarrier_init, in the same thread: fence_mbarrier_init(); then cluster_sync()")
        watch.syncs.setdefault(key, []).append((watch.next(), watch.line()))
        twins.cluster_sync()

    def arrive(array, index, target: int, line: int):
        """One arrival of this thread on barrier ``array[index]`` of block ``target`` (recorded, then made)."""
        name, s, block, me = _name(watch, array), int(index), _block(), _thread()
        twin = watch.barriers.get((target, name, s))
        watch.arrived.setdefault((target, name, s, getattr(twin, "completed", 0)), set()).add((block, me))
        if name == "empty":
            key = (block, me, target, s)
            watch.released[key] = watch.released.get(key, 0) + 1
        if target != block:
            _remote(watch, f"arrived on block {target}'s {name}[{s}]", line)

    def mbarrier_arrive(array, index):
        if getattr(inside, "cluster", False):
            return twins.mbarrier_arrive(array, index)
        check()
        arrive(array, index, _block(), watch.line())
        twins.mbarrier_arrive(array, index)

    def mbarrier_arrive_cluster(array, index, rank):
        check()
        line, block = watch.line(), _block()
        if not 0 <= int(rank) < CLUSTER:
            watch.stop(f"{_who(block, _thread())} arrived on the barrier of rank {int(rank)}, at\n"
                       f"            {watch.code(line)}\n        a cluster of {CLUSTER} has ranks 0 and 1",
                       "the rank is a block's place in its cluster (cluster_rank(): blockIdx.x % 2), not its "
                       "blockIdx.x")
        target = block // CLUSTER * CLUSTER + int(rank)
        _before_any_sync(watch, f"arrived on block {target}'s {_name(watch, array)}[{int(index)}]", target, line)
        arrive(array, index, target, line)
        inside.cluster = True
        try:
            twins.mbarrier_arrive_cluster(array, index, rank)
        finally:
            inside.cluster = False

    def mbarrier_arrive_expect_tx(array, index, count):
        check()
        name, s, block = _name(watch, array), int(index), _block()
        line = watch.line()
        fill = watch.expects.get((block, s), 0)
        watch.expects[(block, s)] = fill + 1
        arrive(array, index, block, line)
        if name == "full":
            first = block - _rank()
            _refill(watch, s, fill, [first + 1 - _rank(), block], f"began to refill stage {s} with k-tile "
                                                                  f"{fill * STAGES + s} (arrive_expect_tx)", line)
        if name == "full" and int(count) != STAGE_BYTES:
            count = int(count)
            watch.stop(f"expect_tx with the wrong byte count: block {block}'s producer announced {count} bytes on "
                       f"full[{s}] for k-tile {fill * STAGES + s}, at\n            {watch.code(line)}\n"
                       f"        {STAGE_BYTES:,} bytes land in each block per k-tile: its own half ({HALF_BYTES} "
                       f"bytes: {HALF_K} rows × {MAX_N} floats × 4) and the peer's half, multicast into it "
                       f"({HALF_BYTES} more)"
                       + (". Announced for its own half only, the phase may complete before the peer's half has "
                          "landed: the consumers would read a half-filled stage" if count == HALF_BYTES else
                          ". More than land: the phase never completes (a hang on a GPU)" if count > STAGE_BYTES
                          else ". Fewer: the phase may complete before everything has landed")
                       + f"\n        {watch.picture((block, s), f'full[{s}] told {count} bytes, {STAGE_BYTES} land')}",
                       "announce every byte that lands in this block: both halves, whole boxes (a box past the end of "
                       "B completes its bytes too, as zeros) — CLUSTER × HALF_FLOATS × 4, the last k-tile's as well")
        twins.mbarrier_arrive_expect_tx(array, index, count)

    def load(to, row, col, array, index, mask, line, multicast: bool):
        """The checks of one load of a box of B by this block's producer (mask: the blocks it lands in)."""
        block, me, rank = _block(), _thread(), _rank()
        peer_rank = 1 - rank
        first = block - rank
        row, col, to, s_bar, mask = int(row), int(col), int(to), int(index), int(mask)
        tile, half = row // BLOCK_K, row % BLOCK_K // HALF_K
        s = tile % STAGES
        targets = [first + r for r in range(CLUSTER) if mask >> r & 1]
        for target in targets:
            watch.fills.setdefault((target, s), []).append((tile, half, block))
        said = f"{_who(block, me)} (rank {rank})"
        here = (block, s)
        if col != 0 or row % HALF_K:
            watch.stop(f"{said} loaded the box at row {row}, column {col} of B, at\n            {watch.code(line)}\n"
                       f"        a half of a k-tile starts at row t·BLOCK_K + r·HALF_K (a multiple of {HALF_K}), "
                       "column 0: the box covers the half's rows, every column",
                       "half r of k-tile t: copy_tile_multicast(stages, s · STAGE_FLOATS + r · HALF_FLOATS, b_map, "
                       "t · BLOCK_K + r · HALF_K, 0, full, s, mask), with r = cluster_rank()")
        done = watch.halves.setdefault((block, tile), [])
        if half in done or (done and half != rank):
            watch.stop(f"{said} loaded half {half} of k-tile {tile} ({_rows(tile, half)}) after half "
                       f"{done[0]}, at\n            {watch.code(line)}\n        one block loads all of B's k-tile: "
                       f"each loads only its half, rank r half r, and the peer's multicast brings the other\n"
                       f"        {watch.picture(here, f'block {block} loads half {half} too')}",
                       "copy_tile_multicast once per k-tile, the half of this block's rank (r = cluster_rank()), into "
                       "both blocks")
        done.append(half)
        if half != rank:
            watch.stop(f"{said} loaded half {half} of k-tile {tile} ({_rows(tile, half)}), at\n"
                       f"            {watch.code(line)}\n        half {half} is rank {half}'s: both blocks load it, "
                       f"and half {1 - half} ({_rows(tile, 1 - half)}) reaches neither block\n"
                       f"        {watch.picture(here, f'half {half} of k-tile {tile} from block {block}')}",
                       "rank r loads half r of every k-tile — rows t·BLOCK_K + r·HALF_K … + HALF_K − 1, into "
                       "stages[s·STAGE_FLOATS + r·HALF_FLOATS …] — and multicasts it: each block loads half, and "
                       "both get both (r = cluster_rank(): a block's place in its cluster, not its blockIdx.x)")
        loaded = sum(watch.produced.get((block, stage), 0) for stage in range(STAGES))
        if tile != loaded:
            watch.stop(f"{said} loaded {_rows(tile, half)} (half {half} of k-tile {tile}) as its load number "
                       f"{loaded}, at\n            {watch.code(line)}\n        the producer walks the k-tiles in "
                       f"order, k-tile t in load t: this was to be k-tile {loaded}'s half {rank}",
                       "row t·BLOCK_K + r·HALF_K with r = cluster_rank() (0 or 1), not blockIdx.x")
        if not multicast:
            watch.stop(f"{said} loaded half {half} of k-tile {tile} with copy_tile, at\n"
                       f"            {watch.code(line)}\n        copy_tile writes into this block's shared memory "
                       f"only: block {first + peer_rank} needs this half too, and no other load brings it there\n"
                       f"        {watch.picture(here, f'half {half} of k-tile {tile}: this block only')}",
                       "copy_tile_multicast(stages, offset, b_map, row, 0, full, s, mask): one load, written into "
                       "every block of the mask at the same offset, its bytes completed on each block's full[s]")
        want = s * STAGE_FLOATS + half * HALF_FLOATS
        if to != want or _name(watch, array) != "full" or s_bar != s:
            watch.stop(f"{said} loaded half {half} of k-tile {tile} to stages[{to}], its bytes completed on "
                       f"{_name(watch, array)}[{s_bar}], at\n            {watch.code(line)}\n        k-tile {tile} "
                       f"goes to stage {s}: half {half} to stages[{want}] (s · STAGE_FLOATS + h · HALF_FLOATS), its "
                       f"bytes to full[{s}]", "the same offset and barrier in every block: the multicast writes both "
                                              "blocks' shared memory at that offset")
        if mask != MASK:
            if mask & ~MASK:
                problem = (f"it names ranks beyond 0 and 1 (a cluster of {CLUSTER}): is the bit from blockIdx.x "
                           "instead of the rank?")
            elif mask == 1 << rank:
                problem = (f"it reaches this block only: block {first + peer_rank} never gets half {half}, and its "
                           f"full[{s}] waits for bytes that never land (its consumers wait for ever — a hang on a GPU)")
            else:
                problem = (f"it reaches the peer only: this block never gets its own half {half}, and its full[{s}] "
                           "waits for bytes that never land")
            watch.stop(f"multicast mask {mask:#04b} from {said}, for half {half} of k-tile {tile}, at\n"
                       f"            {watch.code(line)}\n        {problem}\n"
                       f"        {watch.picture(here, f'half {half} of k-tile {tile}, mask {mask:#04b}')}",
                       f"the mask has a bit per block that gets the box, bit r for rank r: {MASK:#04b} for both "
                       "(CLUSTER_MASK)")
        for target in targets:
            _before_any_sync(watch, f"multicast half {half} of k-tile {tile} into block {target}", target, line)
            _refill(watch, s, tile // STAGES, [target], f"multicast half {half} of k-tile {tile} into stage {s} of "
                                                        f"block {target}", line)
            if target != block:
                _remote(watch, f"multicast half {half} of k-tile {tile} into block {target}", line)
        watch.produced[(block, s)] = watch.produced.get((block, s), 0) + 1

    def copy_tile_multicast(destination, to, tensor_map, row, col, array, index, mask):
        check()
        load(to, row, col, array, index, mask, watch.line(), True)
        inside.cluster = True
        try:
            twins.copy_tile_multicast(destination, to, tensor_map, row, col, array, index, mask)
        finally:
            inside.cluster = False

    def copy_tile(destination, to, tensor_map, row, col, array, index):
        if getattr(inside, "cluster", False):
            return twins.copy_tile(destination, to, tensor_map, row, col, array, index)
        check()
        load(to, row, col, array, index, 1 << _rank(), watch.line(), False)
        twins.copy_tile(destination, to, tensor_map, row, col, array, index)

    def mbarrier_wait(array, index, parity):
        check()
        name, s, block, me = _name(watch, array), int(index), _block(), _thread()
        line = watch.line()
        key = (block, me, name, s)
        i = watch.waits.get(key, 0)
        watch.waits[key] = i + 1
        parity = int(parity) & 1
        want = None
        if name == "full":
            want = i % 2
            what = f"its wait number {i} on full[{s}], for fill {i} of stage {s} (k-tile {i * STAGES + s})"
        elif name == "empty":
            fill = watch.expects.get((block, s), 0)  # the fill the producer is about to begin
            want = (fill - 1) % 2
            what = (f"before fill {fill} of stage {s} (k-tile {fill * STAGES + s}), for the release of fill {fill - 1} "
                    "by the consumers of both blocks" if fill else f"before the first fill of stage {s}")
            if fill == 0 and parity == 1:
                want = 1  # a fresh barrier's 'phase before' passes at once: a producer may wait this way (CUTLASS)
        if want is not None and parity != want:
            done = getattr(watch.barriers.get((block, name, s)), "completed", 0)
            watch.stop(f"wrong parity: {_who(block, me)} waited on {name}[{s}] with parity {parity}, at\n"
                       f"            {watch.code(line)}\n        {what}: that phase has parity {want}. With parity "
                       f"{parity} the wait "
                       + ("passes at once (it means the phase before, long complete)"
                          if done > i - (name == "empty") else
                          "waits for a phase that has not begun — or passes at once on the phase before")
                       + "\n        "
                       + watch.picture((block, s), f"{name}[{s}] waited on with parity {parity}, needs {want}"),
                       PARITY_HINT)
        watch.waiting[(block, me)] = (name, s, parity, line)
        try:
            twins.mbarrier_wait(array, index, parity)
        except ops.MbarrierTimeout as timeout:
            _deadlock(watch, name, s, block, me, line, parity, timeout)
            raise
        finally:
            watch.waiting.pop((block, me), None)

    wrappers = {ops: {"mbarrier_init": mbarrier_init, "mbarrier_arrive": mbarrier_arrive,
                      "mbarrier_arrive_expect_tx": mbarrier_arrive_expect_tx, "mbarrier_wait": mbarrier_wait,
                      "copy_tile": copy_tile},
                cluster: {"cluster_sync": cluster_sync, "fence_mbarrier_init": fence_mbarrier_init,
                          "mbarrier_arrive_cluster": mbarrier_arrive_cluster,
                          "copy_tile_multicast": copy_tile_multicast}}
    return wrappers


def _deadlock(watch: Watch, name: str, s: int, block: int, me: int, line: int, parity: int, timeout) -> None:
    """A wait the twin gave up on, at its root: a consumer waiting on full[s] for a fill its producer never made is
    reported as the producer's wait on empty[s], and the arrivals it lacks, by block."""
    from ..toolkit import mbarrier_ops

    said = f"the twin said: {timeout}"
    first = block // CLUSTER * CLUSTER
    if name == "full":
        stuck = sorted((key, waiting) for key, waiting in list(watch.waiting.items())
                       if key[0] // CLUSTER == block // CLUSTER and waiting[0] == "empty")
        if stuck:
            (block, me), (name, s, parity, line) = stuck[0]
            twin = watch.barriers.get((block, name, s))
            said = (f"the deadlock detector found: mbarrier {s}: phase of parity {parity} did not complete in "
                    f"{mbarrier_ops.SIMULATOR_WAIT_LIMIT_S:g} s ({getattr(twin, 'pending', '?')} of "
                    f"{getattr(twin, 'expected', '?')} arrivals and {getattr(twin, 'bytes_pending', '?')} bytes still "
                    "missing), and the consumers wait for the fill that comes after it")
    twin = watch.barriers.get((block, name, s))
    arrived = watch.arrived.get((block, name, s, getattr(twin, "completed", 0)), set())
    if name == "empty":
        missing = []
        for source in range(first, first + CLUSTER):
            threads = [q for q in range(32, THREADS) if (source, q) not in arrived]
            if threads:
                missing.append(f"block {source}'s consumer threads {_ranges(threads)}")
        who = (f"never arrived on block {block}'s empty[{s}] in this phase: " + "; ".join(missing)) if missing else ""
    else:
        who = (f"the producer's arrive_expect_tx on full[{s}] never came" if not arrived else
               f"the producer arrived; {twin.bytes_pending if twin else '?'} bytes it announced never landed")
    watch.fail(f"a missing arrival — the deadlock detector: {_who(block, me)} waited on {name}[{s}] with parity "
               f"{parity} at\n            {watch.code(line)}\n        and {said}\n        {who}\n"
               f"        {watch.picture((block, s), f'{_thread_name(me)} waits here')}",
               "every phase needs all its arrivals: full[s] one (this block's producer's arrive_expect_tx) and both "
               f"halves' bytes; empty[s] one from each of the {EMPTY_COUNT} consumer threads of the cluster — each "
               "consumer arrives on its own block's empty[s] and on the peer's (mbarrier_arrive_cluster), every "
               "k-tile, whether or not it has a row or a column of C")


def _end_problem(watch: Watch, blocks: int) -> tuple[str, list[str]] | None:
    """After the launch: a thread that reached into its peer and returned with no cluster_sync() after that; a
    thread that skipped a cluster_sync() the others of its cluster executed."""
    late = [(key, watch.remote[key]) for key in sorted(watch.remote)
            if watch.remote[key][0] > max((seq for seq, _ in watch.syncs.get(key, [])), default=0)]
    if late:
        consumers = [item for item in late if item[0][1] >= 32]
        (block, me), (_, what, line) = (consumers or late)[0]
        peer = block - block % CLUSTER + (1 - block % CLUSTER)
        mine = f"block {block}, threadIdx.x={me}:  "
        return (f"no cluster_sync() at the end: {_who(block, me)} {what}, at\n            {watch.code(line)}\n"
                f"        and then returned with no cluster_sync() after it ({len(late)} threads of the launch "
                "returned so). A block's shared memory and barriers last only while the block runs, and only a "
                "last cluster barrier keeps a block from ending before its peer's last access to it (on a GPU an "
                "access to a block that has exited is undefined; the simulator keeps the memory, so nothing showed "
                "here):\n"
                f"            {mine}… {what} ──▶ block {peer}\n"
                f"            {f'block {peer}:':<{len(mine)}}… its threads return, the block ends   ◀ nothing "
                "orders this after that access\n"
                "        with a last cluster_sync() in every thread, neither block ends before both have arrived there",
                ["end the kernel with cluster_sync(), in every thread of both blocks, after the consumers' last "
                 "arrivals and the stores (step 20's last line)"])
    for first in range(0, blocks, CLUSTER):
        counts = {(b, q): len(watch.syncs.get((b, q), [])) for b in range(first, first + CLUSTER)
                  for q in range(THREADS)}
        most = max(counts.values())
        fewer = sorted(key for key, count in counts.items() if count < most)
        if fewer:
            block = fewer[0][0]
            threads = [q for b, q in fewer if b == block]
            done = counts[fewer[0]]
            others = next(watch.syncs[key] for key, count in counts.items() if count == most)
            return (f"threads {_ranges(threads)} of block {block} executed cluster_sync() {done} "
                    f"time{'s' if done != 1 else ''}, other threads of the cluster {most}; the one they skipped:\n"
                    f"            {watch.code(others[done][1])}\n        every thread of both blocks executes every "
                    "cluster_sync() (the rule in gemm_steps/toolkit/cluster_ops.py)",
                    ["put the cluster_sync() calls where every thread passes: after the barriers' initialisation, "
                     "and at the very end of the kernel, outside the producer's and the consumers' branches"])
    return None


@contextmanager
def _watched(watch: Watch, module):
    """The learner's module and the toolkit's twins, watched for the launch; each block's shared arrays made here,
    filled with NaN, the stages' reads checked."""
    from numba.cuda.simulator import kernelapi

    from ..toolkit import cluster_ops
    from ..toolkit import mbarrier_ops as ops
    from .race_check import _filled, code_at

    wrappers = _wrappers(watch, ops, cluster_ops)
    saved_module = {name: module.__dict__[name] for group in wrappers.values() for name in group
                    if name in module.__dict__}
    saved = {toolkit: {name: getattr(toolkit, name) for name in group} for toolkit, group in wrappers.items()}
    saved_limit = ops.SIMULATOR_WAIT_LIMIT_S
    original_shared = kernelapi.FakeCUDAShared.array
    original_complete = ops._Mbarrier._complete_if_done

    def complete_if_done(self):
        before = self.phase
        original_complete(self)
        if self.phase != before:
            self.completed = getattr(self, "completed", 0) + 1

    class Stages(np.ndarray):  # a float shared array whose reads by element are checked
        def __getitem__(self, key):
            if isinstance(key, (int, np.integer)):
                _stage_read(watch, int(key))
            return np.ndarray.__getitem__(self.view(np.ndarray), key)

    creating = threading.Lock()

    def shared_array(self, shape, dtype, alignment=None):  # self: this block's shared memory (a cluster has two)
        if shape == 0:
            return original_shared(self, shape, dtype)
        caller = sys._getframe(1)
        where = (caller.f_code.co_filename, caller.f_lineno)
        with creating:
            found = self._allocations.get(where)  # (a multicast or a remote arrival may have made it first)
            if found is None:
                from numba.cuda import types
                from numba.cuda.np import numpy_support

                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                found = _filled(shape, dtype)
                if found.dtype.kind == "f":  # its own buffer, not a view: cluster_ops.peer_array finds it by identity
                    stages = Stages(found.shape, found.dtype)
                    np.ndarray.__setitem__(stages, Ellipsis, found)
                    found = stages
                self._allocations[where] = found
            watch.names[id(found)] = code_at(*where).split("=")[0].strip()
        return found

    for toolkit, group in wrappers.items():
        for name, wrapper in group.items():
            if name in module.__dict__:
                module.__dict__[name] = wrapper
            setattr(toolkit, name, wrapper)
    ops.SIMULATOR_WAIT_LIMIT_S = WAIT_LIMIT_S
    ops._Mbarrier._complete_if_done = complete_if_done
    kernelapi.FakeCUDAShared.array = shared_array
    try:
        yield
    finally:
        module.__dict__.update(saved_module)
        for toolkit, originals in saved.items():
            for name, original in originals.items():
                setattr(toolkit, name, original)
        ops.SIMULATOR_WAIT_LIMIT_S = saved_limit
        ops._Mbarrier._complete_if_done = original_complete
        kernelapi.FakeCUDAShared.array = original_shared


def _stage_read(watch: Watch, element: int) -> None:
    if watch.stopped:
        raise Stopped("stopped by the grader")
    s, block, me = element // STAGE_FLOATS, _block(), _thread()
    if not 0 <= s < STAGES:
        return
    waited = watch.waits.get((block, me, "full", s), 0)
    first = block // CLUSTER * CLUSTER
    released = max(watch.released.get((block, me, target, s), 0) for target in range(first, first + CLUSTER))
    if waited == 0:
        line = watch.line()
        watch.stop(f"{_who(block, me)} read stage {s} before it ever waited on full[{s}], at\n"
                   f"            {watch.code(line)}\n        {watch.picture((block, s), 'read here')}",
                   "a consumer waits on full[s] (both halves have landed) before it reads stage s")
    elif released >= waited:
        line = watch.line()
        watch.stop(f"a consumer freed a stage before it read it: {_who(block, me)} arrived on empty[{s}] (released "
                   f"k-tile {(waited - 1) * STAGES + s}) and then read stage {s}, at\n            {watch.code(line)}\n"
                   f"        a producer may already be copying k-tile {waited * STAGES + s} over it\n"
                   f"        {watch.picture((block, s), 'read after its release')}",
                   "arrive on both blocks' empty[s] after the last read of the stage, never before")


def launch(kernel, module, a, b, c, time_limit: float):
    from numba import cuda

    from ..toolkit.cluster_ops import launch_cluster
    from ..toolkit.mbarrier_ops import tensor_map_2d
    from . import exercises

    watch = Watch(kernel.py_func.__code__.co_filename, n=c.shape[1])
    blocks = CLUSTER * -(-c.shape[0] // (CLUSTER * BLOCK_M))
    b_map = tensor_map_2d(cuda.to_device(b), HALF_K, MAX_N)
    failure, tc = exercises.watched_launch(
        kernel, f"cluster_multicast_kernel on {c.shape[0]}×{c.shape[1]}×{a.shape[1]}", time_limit,
        lambda tc: launch_cluster(kernel, SIGNATURE, blocks, THREADS, 0, 0, (CLUSTER, 1, 1), (a, b_map, tc)),
        [_watched(watch, module)], c, known=[(IndexError, ring._outside)])
    if not watch.violations and failure is None:
        problem = _end_problem(watch, blocks)
        if problem is not None:
            watch.fail(*[problem[0], *problem[1]])
    return failure, watch, tc


def grade(exercise, module, seed: int = 0, say=None, time_limit: float | None = None, compile: bool = True):
    from . import exercises

    time_limit = exercises.LAUNCH_SECONDS if time_limit is None else time_limit
    report, kernel = exercises.opening_checks(exercise, module, compile)
    if kernel is None:
        return report
    if not exercises.SIMULATOR:
        report.skip("the cluster is checked on the simulator (its blocks, barriers and copies are twins there): "
                    "NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check cluster_multicast")
        return report
    rng = np.random.default_rng(seed + 1)
    for case in cases(seed):
        if say is not None:
            say(f"  …     {case}, {case.blocks} blocks in clusters of {CLUSTER}, on the simulator")
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
        report.ok(f"{case}: every element right; each block multicast its half of every k-tile into both, every "
                  "expect_tx counted both halves, every refill came after both blocks' consumers released the stage, "
                  "every wait named its phase's parity, every thread ended at a last cluster_sync()")
    return report


def time_against_step(exercise, module) -> str:
    return ("not timed: this ring feeds CUDA-core multiply-adds from one producer thread a block; step 20's speed is "
            "gemm-steps bench --steps cluster_multicast")
