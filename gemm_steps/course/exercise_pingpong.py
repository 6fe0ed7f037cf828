"""The grader of exercise ``pingpong`` (``exercises/pingpong.py``, lesson 19): two consumer warps take a persistent
block's tiles in turn, their main loops ordered by two named barriers, each store running under the other
consumer's main loop.

The kernel runs on the simulator with its twins watched: for the launch, the learner's module sees stand-ins of
``named_barrier_sync``, ``named_barrier_arrive`` and ``mbarrier_wait`` (each does what the toolkit's twin does, on the
twin's own barrier objects) and of the given ``main_loop`` and ``store``. They record, per thread, what the thread did
at which line of the kernel, numbered in one order with the stores to C (:data:`.race_check._sequence`). A thread's
records are in its program order, so the checks read the protocol, not the schedule the simulator happened to pick;
the order the threads did run in is drawn in each message, as a timeline of the two consumers.

The stand-ins' waits look at their barrier at least every :data:`POLL_S`. When every live thread of the block waits
and none of the waits can complete (the copy engine's twin completes at once: nothing else could), the block is
deadlocked, and the launch stops after :data:`STALL_S` rather than at a time limit (:data:`WAIT_LIMIT_S` bounds any
one wait besides). The checks, the first that fails reported, for the first block in which one fails:

* **the tiles** (``main_loop``'s ``turn``): each of the block's tiles taken by one consumer — not by both, not by
  neither; the tiles alternating between the consumers (tile i to consumer i % 2, or consistently the other way);
  each consumer's taken in the block's order, the order the producer fills the ring in;
* **the barriers**, where a deadlock is said as who waits for whom: every thread of a consumer warp executes the same
  ``bar.sync`` and ``bar.arrive``; a phase counts :data:`ORDER_THREADS`; neither consumer uses barrier 0; a consumer
  waits at the barrier the other arrives at, and not at one it arrives at itself or both wait at; each wait has its
  arrive — "consumer X waits at barrier N for consumer Y's arrive, which never comes", with what consumer Y did
  instead (a missing arrive, another barrier) or why it cannot come (a wait before the block's first tile);
* **the order**: the main loop of the block's tile i > 0 starts after a wait whose arrive came after the main loop
  of tile i − 1 ended (no wait, or a hand-over before the main loop, is named); no two main loops ran at once;
* **the epilogue**: a tile's store after its main loop, and the hand-over (the arrive) before the store: after it,
  the order still holds, but the store no longer runs under the other consumer's main loop;
* **the numbers**: every element of C against a float64 reference (C filled with NaN first), on two shapes with
  partial tiles (M and K not multiples of the tiles), on a grid of 2 blocks (3 and 2 tiles) and of 1 (4 tiles); a
  tile never written or written twice is named, with the consumer it belongs to.

An arrive after the block's last main loop, which nobody waits for, is allowed (step 19 leaves it out: ``if tile +
stride < tile_count``). On a GPU the kernel is compiled (compute capability 9.0) and not run: a ``bar.sync`` that
never gets its arrivals hangs a GPU, and the checks need the twins.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .exercise_wgmma import ranges
from .race_check import _sequence

CONSUMERS, CONSUMER_THREADS = 2, 32
THREADS = CONSUMER_THREADS * (CONSUMERS + 1)
BLOCK_M, BLOCK_K, STAGES = 8, 8, 2
ORDER_BARRIER, ORDER_THREADS = 1, 2 * CONSUMER_THREADS
SIGNATURE = "void(float32[:, ::1], float32[::1], float32[:, ::1])"
#: Seconds the block's live threads must all wait, with no wait able to complete, before the grader calls it a
#: deadlock: the stand-ins re-check their barrier at least every :data:`POLL_S`, so a released thread has moved on.
STALL_S = 0.6
POLL_S = 0.05
#: Seconds any one wait may last while some thread of the block still runs (a deadlock ends sooner, by the detector):
#: a right solution's longest wait, consumer 1's for consumer 0's first main loop, lasts a fraction of a second on a
#: loaded 2-core machine.
WAIT_LIMIT_S = 20.0
#: Rows of the timeline drawn in a message, at most.
TIMELINE_ROWS = 24


def solution():
    from . import exercise_pingpong_solution

    return exercise_pingpong_solution


def time_against_step(exercise, module) -> str:
    return ("not timed: warps of CUDA-core multiply-adds on a few 8-row tiles; step 19's speed is gemm-steps bench "
            "--steps pingpong (lesson 19)")


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int
    blocks: int

    def __str__(self) -> str:
        return f"M×N×K = {self.m}×{self.n}×{self.k}, {self.blocks} block{'s' if self.blocks > 1 else ''}"

    @property
    def tiles(self) -> int:
        return -(-self.m // BLOCK_M)

    def turns(self, block: int) -> int:
        return len(range(block, self.tiles, self.blocks))

    def tile(self, block: int, turn: int) -> int:
        return block + turn * self.blocks


def cases(seed: int = 0) -> list[Case]:
    """Two shapes, M and K not multiples of the tiles (a partial last tile, a short last k-tile), N a multiple of 4
    up to 32: 5 tiles on 2 blocks (3 turns and 2: block 0's consumer 0 waits once, block 1's not at all), then 4 tiles
    on 1 block; 3 and 4 k-tiles a turn, so that the ring of 2 stages wraps within a turn."""
    rng = np.random.default_rng(seed)
    return [Case(4 * BLOCK_M + int(rng.integers(1, BLOCK_M)), 4 * int(rng.integers(4, 8)),
                 2 * BLOCK_K + int(rng.integers(1, BLOCK_K)), 2),
            Case(3 * BLOCK_M + int(rng.integers(1, BLOCK_M)), 4 * int(rng.integers(2, 4)),
                 3 * BLOCK_K + int(rng.integers(1, BLOCK_K)), 1)]


# -- watching the launch ---------------------------------------------------------------------------------------------
class Deadlock(RuntimeError):
    """Every live thread of a block waits, and none of the waits can complete."""


@dataclass
class Event:
    seq: int
    kind: str  # "main", "main_end", "store", "sync", "synced", "arrive", "wait" (an mbarrier), "c" (a store to C)
    line: int  # the kernel's line that was running (0: unknown)
    detail: dict = field(default_factory=dict)


class Watch:
    """The events of one launch, per (block, thread), each thread's in its program order."""

    def __init__(self, kernel):
        self.code = kernel.py_func.__code__
        self.file = self.code.co_filename
        self.events: dict[tuple[int, int], list[Event]] = {}
        self.waiting: dict[tuple[int, int], tuple] = {}  # (block, thread) → (can_complete, what, line) while it waits
        self.deadlock: dict[int, tuple] | None = None  # thread → (what, line) of the waits when the block deadlocked
        self.progress = 0  # events so far: a wait sees whether anything happened while it waited
        self.lock = threading.Lock()
        self.last_look = 0.0  # when a waiter last looked whether the block is deadlocked
        self.suspect: tuple | None = None  # (when, progress) the block first looked deadlocked, since no event came

    def line(self) -> int:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not self.code:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else 0

    def record(self, kind: str, **detail) -> Event:
        me = threading.current_thread()
        event = Event(next(_sequence), kind, self.line(), detail)
        self.events.setdefault((me.blockIdx.x, me.thread_id), []).append(event)  # only this thread appends here
        self.progress += 1
        return event

    def of(self, block: int, thread: int) -> list[Event]:
        return self.events.get((block, thread), [])

    def code_at(self, line: int) -> str:
        from .race_check import source_line

        return source_line((self.file, line)) if line else "an unknown line"

    # The waits: each polls its twin's barrier; the block is deadlocked when all its live threads wait in vain.
    def wait(self, can_complete, what: tuple, condition) -> None:
        me = threading.current_thread()
        key = (me.blockIdx.x, me.thread_id)
        line = self.line()
        start = time.monotonic()
        self.waiting[key] = (can_complete, what, line)
        try:
            with condition:
                while not can_complete():
                    if getattr(me, "abort", False):  # another simulated thread failed: stop waiting
                        raise RuntimeError("a simulated thread failed while this one waited")
                    now = time.monotonic()
                    if now - start > WAIT_LIMIT_S:
                        from ..toolkit.mbarrier_ops import MbarrierTimeout

                        raise MbarrierTimeout(f"{_what(what)}: the wait did not end in {WAIT_LIMIT_S:g} s")
                    if now - self.last_look >= POLL_S:  # one look at the whole block per POLL_S, by any waiter
                        self.last_look = now
                        if not self._stuck(me):
                            self.suspect = None
                        elif self.suspect is None or self.suspect[1] != self.progress:
                            self.suspect = (now, self.progress)
                        elif now - self.suspect[0] >= STALL_S:
                            self._declare(me)
                    condition.wait(POLL_S)
        finally:
            self.waiting.pop(key, None)

    def _block_threads(self, me):
        from numba.cuda.simulator.kernel import BlockThread

        return [t for t in threading.enumerate() if isinstance(t, BlockThread) and t._manager is me._manager
                and tuple(t.blockIdx) == tuple(me.blockIdx) and t.is_alive()]

    def _stuck(self, me) -> bool:
        for thread in self._block_threads(me):
            if thread.syncthreads_blocked:
                continue
            waiting = self.waiting.get((me.blockIdx.x, thread.thread_id))
            if waiting is None or waiting[0]():
                return False
        return True

    def _declare(self, me) -> None:
        with self.lock:
            if self.deadlock is None:
                self.deadlock = {thread: (what, line) for (block, thread), (_, what, line) in list(self.waiting.items())
                                 if block == me.blockIdx.x}
        raise Deadlock("every live thread of the block waits, and none of the waits can complete")


def _what(what: tuple) -> str:
    if what[0] == "barrier":
        return f"named barrier {what[1]}"
    index, parity = what[1], what[2]
    name = f"full[{index}]" if index < STAGES else f"empty[{index - STAGES}]"
    return f"{name} with parity {parity}"


def _stand_ins(watch: Watch, module) -> dict:
    """{name: stand-in} for the learner's module and the toolkit's mbarrier_ops: each records, then does what the
    function it stands in for does."""
    from ..toolkit import mbarrier_ops as mb

    real_arrive = mb.named_barrier_arrive

    def named_barrier_sync(barrier_id, count):
        barrier_id, count = int(barrier_id), int(count)
        watch.record("sync", barrier=barrier_id, count=count)
        _, barrier = mb._named_barrier(barrier_id, count)  # the twin's barrier of this block
        generation = barrier.arrive(barrier_id, count)
        watch.wait(lambda: barrier.generation != generation, ("barrier", barrier_id), barrier.changed)
        watch.record("synced", barrier=barrier_id)

    def named_barrier_arrive(barrier_id, count):
        watch.record("arrive", barrier=int(barrier_id), count=int(count))
        real_arrive(barrier_id, count)

    def mbarrier_wait(array, index, parity):
        index, parity = int(index), int(parity) & 1
        watch.record("wait", index=index, parity=parity)
        barrier = mb._barrier(array, index)
        watch.wait(lambda: barrier.phase != parity, ("mbarrier", index, parity), barrier.changed)

    functions = {"named_barrier_sync": named_barrier_sync, "named_barrier_arrive": named_barrier_arrive,
                 "mbarrier_wait": mbarrier_wait}
    for name, kind in (("main_loop", "main"), ("store", "store")):
        real = module.__dict__.get(name)
        if real is None or not callable(real):
            continue
        try:
            signature = inspect.signature(getattr(real, "py_func", real))
        except (TypeError, ValueError):
            continue
        if "turn" not in signature.parameters:
            continue
        functions[name] = _recording(watch, real, signature, kind)
    return functions


def _recording(watch: Watch, real, signature, kind: str):
    def stand_in(*args, **kwargs):
        try:
            turn = int(signature.bind(*args, **kwargs).arguments["turn"])
        except (TypeError, ValueError):
            turn = None
        watch.record(kind, turn=turn)
        result = real(*args, **kwargs)
        if kind == "main":
            watch.record("main_end", turn=turn)
        return result
    return stand_in


@contextmanager
def _watched(watch: Watch, module):
    """The stand-ins, for the launch: in the toolkit, and in the learner's module wherever it holds a twin (under
    any name) or the given main_loop and store; shared arrays filled with NaN. Everything put back after."""
    from numba.cuda.simulator import kernelapi

    from ..toolkit import mbarrier_ops as mb
    from .race_check import _filled

    functions = _stand_ins(watch, module)
    twins = {id(getattr(mb, name)): name for name in functions if hasattr(mb, name)}
    saved = [(vars(mb), name, getattr(mb, name)) for name in twins.values()]
    for key, value in vars(module).items():
        if key in ("main_loop", "store") and key in functions:
            saved.append((vars(module), key, value))
        elif callable(value) and id(value) in twins:
            saved.append((vars(module), key, value))
    original_shared = kernelapi.FakeCUDAShared.array
    types, numpy_support = kernelapi.types, kernelapi.numpy_support

    def shared_array(self, shape, dtype, alignment=None):
        if shape == 0:
            return original_shared(self, shape, dtype, alignment)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        found = self._allocations.get(caller)
        if found is None:  # a block's arrays start as memory nobody wrote: NaN (a stage read before its copy shows)
            found = self._allocations.setdefault(caller, _filled(
                shape, numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype))
        return found

    for space, key, value in saved:
        space[key] = functions[twins.get(id(value), key)]
    kernelapi.FakeCUDAShared.array = shared_array
    try:
        yield
    finally:
        for space, key, value in reversed(saved):
            space[key] = value
        kernelapi.FakeCUDAShared.array = original_shared


def launch(kernel, module, case: Case, a, b, c, time_limit: float):
    """One launch on the simulator, watched: (failure or None, :class:`Watch`, C's stores)."""
    from . import exercises
    from .race_check import nan_local_arrays

    watch = Watch(kernel)
    failure, tc = exercises.watched_launch(
        kernel, f"pingpong_kernel on {case}", time_limit, lambda tc: kernel[case.blocks, THREADS](a, b.ravel(), tc),
        [nan_local_arrays(), _watched(watch, module)], c, known=[(Deadlock, lambda error: "deadlock")])
    stores = tc.stores if tc is not None else []
    return failure, watch, stores


# -- what each consumer did -------------------------------------------------------------------------------------
def _role(thread: int) -> str:
    warp = thread // CONSUMER_THREADS
    return "the producer" if warp == CONSUMERS else f"consumer {warp}"


@dataclass
class Consumer:
    """What one consumer warp did in one block, read from its first thread (lane 0): its events in program order."""
    index: int
    events: list

    @property
    def name(self) -> str:
        return f"consumer {self.index}"

    def mains(self) -> list[tuple[Event, Event | None]]:
        """(start, end or None) of each main loop, in program order."""
        found = []
        for event in self.events:
            if event.kind == "main":
                found.append([event, None])
            elif event.kind == "main_end" and found and found[-1][1] is None:
                found[-1][1] = event
        return [tuple(pair) for pair in found]

    def main(self, turn: int):
        return next(((start, end) for start, end in self.mains() if start.detail["turn"] == turn), None)

    def of(self, *kinds: str) -> list[Event]:
        return [event for event in self.events if event.kind in kinds]

    def passed(self, sync: Event) -> Event | None:
        """The event that ended this wait at a named barrier (None: it never did)."""
        after = [e for e in self.events if e.seq > sync.seq]
        return after[0] if after and after[0].kind == "synced" else None

    def store(self, turn: int) -> Event | None:
        """The start of its store of that turn: the call of store (given), or else its first store to the turn's rows
        of C."""
        calls = [e for e in self.events if e.kind == "store" and e.detail["turn"] == turn]
        if calls:
            return calls[0]
        stores = [e for e in self.events if e.kind == "c" and e.detail["turn"] == turn]
        return stores[0] if stores else None


def _consumers(watch: Watch, block: int, case: Case, stores: list) -> list[Consumer]:
    found = []
    for index in range(CONSUMERS):
        thread = index * CONSUMER_THREADS
        events = list(watch.of(block, thread))
        for seq, store_block, store_thread, flat in stores:
            if store_block == block and store_thread == thread:
                tile = flat // case.n // BLOCK_M
                if (tile - block) % case.blocks == 0:
                    events.append(Event(seq, "c", 0, {"turn": (tile - block) // case.blocks}))
        found.append(Consumer(index, sorted(events, key=lambda e: e.seq)))
    return found


def _tile_of(case: Case, block: int, turn: int) -> str:
    tile = case.tile(block, turn)
    return f"tile {tile} of C, rows {tile * BLOCK_M}–{min(case.m, (tile + 1) * BLOCK_M) - 1}"


# -- the timeline -----------------------------------------------------------------------------------------------------
def timeline(watch: Watch, block: int, case: Case, consumers: list[Consumer]) -> str:
    """The two consumers' main loops, waits, arrives and stores, in the order the simulator ran them."""
    rows = []
    for consumer in consumers:
        stored = set()
        for event in consumer.events:
            kind, turn = event.kind, event.detail.get("turn")
            if kind == "main":
                text = f"main loop, tile {turn} ▶"
            elif kind == "main_end":
                text = f"main loop, tile {turn} ◀ done"
            elif kind == "sync":
                text = f"waits at barrier {event.detail['barrier']}"
            elif kind == "synced":
                text = f"passes barrier {event.detail['barrier']}"
            elif kind == "arrive":
                text = f"arrives at barrier {event.detail['barrier']}"
            elif kind in ("store", "c") and turn not in stored:
                stored.add(turn)
                text = f"stores tile {turn}"
            else:
                continue
            rows.append((event.seq, consumer.index, text))
    rows.sort()
    if watch.deadlock is not None:
        for consumer in consumers:
            what = watch.deadlock.get(consumer.index * CONSUMER_THREADS)
            if what is not None:
                rows.append((float("inf"), consumer.index, f"still waits: {_what(what[0])}"))
    if not rows:
        return ""
    turns = case.turns(block)
    head = (f"block {block}'s consumers, as the simulator ran them (the block's tiles 0–{turns - 1} are tiles "
            f"{', '.join(str(case.tile(block, t)) for t in range(turns))} of C):")
    width = max([30] + [len(text) + 2 for _, index, text in rows if index == 0])
    lines = [head, "    " + f"{'consumer 0':<{width}}│ consumer 1"]
    shown = rows if len(rows) <= TIMELINE_ROWS else rows[:TIMELINE_ROWS - 1]
    for _, index, text in shown:
        lines.append("    " + (f"{text:<{width}}│" if index == 0 else f"{'':<{width}}│ {text}"))
    if len(shown) < len(rows):
        lines.append(f"    … ({len(rows) - len(shown)} more)")
    return "\n        ".join(lines)


# -- the checks -------------------------------------------------------------------------------------------------------
def tiles_problem(watch: Watch, block: int, case: Case, consumers: list[Consumer], complete: bool) -> tuple | None:
    """Each of the block's turns taken by one consumer, in the block's order."""
    turns = case.turns(block)
    taken: dict[int, list] = {}
    for consumer in consumers:
        mains = consumer.mains()
        for start, _ in mains:
            turn = start.detail["turn"]
            if turn is None or not 0 <= turn < turns:
                return (f"{consumer.name} ran main_loop for turn {turn}, at\n            {watch.code_at(start.line)}"
                        f"\n        block {block} has {turns} tiles: its "
                        f"turns 0–{turns - 1} (turn i is tile {block} + i·{case.blocks} of C, which block_turns "
                        "counts and main_loop finds itself)",
                        ["pass main_loop the block's turn, not the tile of C: consumer w takes turns w, w + 2, … up "
                         "to block_turns"])
            taken.setdefault(turn, []).append((consumer, start))
        order = [start.detail["turn"] for start, _ in mains]
        if order != sorted(order):
            return (f"{consumer.name} took the block's tiles in the order {', '.join(map(str, order))}: the producer "
                    "fills the ring in the block's order, tile 0's k-tiles first, so each consumer takes its tiles "
                    "in that order", ["consumer w: turns w, w + 2, w + 4, …"])
    for turn in range(turns):
        both = taken.get(turn, [])
        if len({consumer.index for consumer, _ in both}) > 1:
            lines = "\n".join(f"            {consumer.name}: {watch.code_at(start.line)}" for consumer, start in both)
            return (f"the block's tile {turn} ({_tile_of(case, block, turn)}) was taken by both consumers:\n{lines}\n"
                    "        a tile is one consumer's: the block's tiles 0, 2, 4, … go to consumer 0, 1, 3, 5, … to "
                    "consumer 1", ["consumer w takes turns w, w + 2, w + 4, … — for turn in range(consumer, turns, 2)"])
    # Tiles alternate between the consumers: each consumer's tiles are two apart, the other's in between.
    parity = {c.index: sorted({start.detail["turn"] % 2 for start, _ in c.mains()}) for c in consumers}
    for consumer in consumers:
        mine = [start.detail["turn"] for start, _ in consumer.mains()]
        other = consumers[1 - consumer.index]
        theirs = [start.detail["turn"] for start, _ in other.mains()]
        if len(parity[consumer.index]) > 1 or (set(parity[consumer.index]) & set(parity[other.index])
                                               and consumer.index == 1):
            said = (f"{consumer.name} took the block's tiles {', '.join(map(str, mine))}" if len(mine) > 1 else
                    f"{consumer.name} took the block's tile {mine[0]}")
            if theirs and len(parity[consumer.index]) == 1:
                said += f", and {other.name} {'tiles' if len(theirs) > 1 else 'tile'} {', '.join(map(str, theirs))}"
            return (f"{said}: the block's tiles alternate between the two consumers — tile i to consumer i % 2 — so "
                    "that each main loop follows the one of the tile before it, which the other consumer ran, and "
                    "the ring's k-tiles are read in the order the producer fills them",
                    ["consumer w takes turns w, w + 2, w + 4, … — for turn in range(consumer, turns, 2)"])
    if complete:
        never = [turn for turn in range(turns) if turn not in taken]
        if never:
            return (f"the block's tile{'s' if len(never) > 1 else ''} {', '.join(map(str, never))} "
                    f"({'; '.join(_tile_of(case, block, t) for t in never)}) {'were' if len(never) > 1 else 'was'} "
                    f"taken by neither consumer: block {block} has {turns} tiles, turns 0–{turns - 1}",
                    ["consumer w takes turns w, w + 2, w + 4, … while turn < turns (block_turns)"])
    return None


def lanes_problem(watch: Watch, block: int, complete: bool) -> tuple | None:
    """Every thread of a consumer warp executes the same bar.sync and bar.arrive as its lane 0."""
    for consumer in range(CONSUMERS):
        first = consumer * CONSUMER_THREADS
        calls = {thread: [(e.kind, e.detail["barrier"], e.line) for e in watch.of(block, thread)
                          if e.kind in ("sync", "arrive")] for thread in range(first, first + CONSUMER_THREADS)}
        length = max(len(c) for c in calls.values())
        for position in range(length):
            seen = {thread: c[position] if position < len(c) else None for thread, c in calls.items()}
            kinds = {value for value in seen.values()}
            if len(kinds) == 1:
                continue
            if None in kinds and not complete and len(kinds) == 2:
                continue  # some threads had not got there when the launch stopped
            call = next(value for value in seen.values() if value is not None)
            did = sorted(thread - first for thread, value in seen.items() if value == call)
            did_not = sorted(thread - first for thread, value in seen.items() if value != call)
            verb = "waited" if call[0] == "sync" else "arrived"
            return (f"{_lanes(did)} of consumer {consumer} {verb} at barrier {call[1]}, at\n            "
                    f"{watch.code_at(call[2])}\n        and {_lanes(did_not)} did not: bar.sync and bar.arrive "
                    "are instructions of the whole warp (.aligned), and the barrier counts threads — "
                    f"ORDER_THREADS = {ORDER_THREADS}, every thread of both warps",
                    ["call named_barrier_sync and named_barrier_arrive with every thread of the consumer warp, not "
                     "inside an `if lane == 0:`"])
    return None


def _lanes(lanes: list[int]) -> str:
    return f"lane{'s' if len(lanes) > 1 else ''} {ranges(lanes)}"


def barriers_problem(watch: Watch, block: int, case: Case, consumers: list[Consumer]) -> tuple | None:
    """The counts, the barrier ids, and each wait's arrive: a wait that can never complete, said."""
    for consumer in consumers:
        for event in consumer.of("sync", "arrive"):
            if event.detail["count"] != ORDER_THREADS:
                name = "named_barrier_sync" if event.kind == "sync" else "named_barrier_arrive"
                return (f"{consumer.name} called {name} with a count of {event.detail['count']}, at\n            "
                        f"{watch.code_at(event.line)}\n        a phase of an order barrier counts the threads of both "
                        f"warps — the {CONSUMER_THREADS} that wait and the {CONSUMER_THREADS} that arrive: "
                        f"ORDER_THREADS = {ORDER_THREADS}",
                        ["with one warp's count the wait completes on its own arrival and orders nothing; with more "
                         "than both warps it never completes"])
    waits_at = {c.index: {e.detail["barrier"] for e in c.of("sync")} for c in consumers}
    arrives_at = {c.index: {e.detail["barrier"] for e in c.of("arrive")} for c in consumers}
    for consumer in consumers:
        for barrier in waits_at[consumer.index] | arrives_at[consumer.index]:
            if barrier == 0:
                event = next(e for e in consumer.of("sync", "arrive") if e.detail["barrier"] == 0)
                return (f"{consumer.name} used barrier 0, at\n            {watch.code_at(event.line)}\n        "
                        "barrier 0 is cuda.syncthreads()'s: it counts every thread of the block",
                        [f"the order barriers are ORDER_BARRIER = {ORDER_BARRIER} (consumer 0 waits there) and "
                         f"ORDER_BARRIER + 1 (consumer 1)"])
    # Each consumer waits where the other arrives: the first wait (in the order they ran) that breaks it, said.
    syncs = sorted(((e, c) for c in consumers for e in c.of("sync")), key=lambda pair: pair[0].seq)
    for sync, consumer in syncs:
        other = consumers[1 - consumer.index]
        barrier = sync.detail["barrier"]
        if barrier in arrives_at[other.index] and barrier not in waits_at[other.index] | arrives_at[consumer.index]:
            continue
        waiting = (f"{consumer.name} waits at barrier {barrier}, at\n            {watch.code_at(sync.line)}\n        "
                   f"for {other.name}'s arrive, which never comes")
        hints = ["each consumer waits at its own barrier and arrives at the other's: consumer w waits at "
                 "ORDER_BARRIER + w and arrives at ORDER_BARRIER + 1 − w"]
        if barrier in arrives_at[consumer.index]:
            arrive = next(e for e in consumer.of("arrive") if e.detail["barrier"] == barrier)
            return (f"{waiting}: {consumer.name} itself arrives at barrier {barrier}, at\n            "
                    f"{watch.code_at(arrive.line)}\n        so its own arrive may complete its own wait, and the two "
                    "consumers' main loops are no longer ordered", hints)
        if barrier in waits_at[other.index]:
            return (f"{waiting}: both consumers wait at barrier {barrier}, so a phase completes when both wait — "
                    "or when one arrives and the other waits, whichever turn it is: it orders nothing", hints)
        arrives = other.of("arrive")
        if arrives:
            return (f"{waiting}: {other.name} arrives at barrier {arrives[0].detail['barrier']}, at\n            "
                    f"{watch.code_at(arrives[0].line)}", hints)
        # (The other consumer has not arrived anywhere yet: whether it should have, the pairing below says.)
    # Each wait paired with the other consumer's arrive at its barrier: the k-th wait with the k-th arrive.
    for sync, consumer in syncs:
        other = consumers[1 - consumer.index]
        barrier = sync.detail["barrier"]
        number = [e.seq for e in consumer.of("sync")].index(sync.seq)
        arrives = [e for e in other.of("arrive") if e.detail["barrier"] == barrier]
        if number < len(arrives) or consumer.passed(sync) is not None:
            continue
        turn = _turn_after(consumer, sync)
        first = not consumer.mains() or consumer.mains()[0][0].seq > sync.seq
        before_what = (f"its first main loop (the block's tile {turn})" if first else
                       f"its main loop for the block's tile {turn}")
        waiting = (f"{consumer.name} waits at barrier {barrier} before {before_what}, at\n            "
                   f"{watch.code_at(sync.line)}\n        for {other.name}'s arrive, which never comes")
        if turn == 0:
            return (f"{waiting}: {consumer.name}'s first tile is the block's tile 0, which has no tile before it, and "
                    f"{other.name} arrives only after a main loop — its first is for tile 1, which waits for tile 0",
                    ["the block's first tile starts without waiting: if turn > 0: named_barrier_sync(…)"])
        before = other.main(turn - 1)
        if before is None or before[1] is None:
            continue  # the other consumer never finished the tile before: its own wait is the one to explain
        later = [e for e in other.events if e.seq > before[1].seq and e.kind not in ("c",)]
        then = (f"its next step: {_step(later[0])}, at\n            {watch.code_at(later[0].line)}" if later else
                "then it ended")
        never = "" if other.of("arrive") else " (it never calls named_barrier_arrive)"
        return (f"{waiting}: {other.name} ran its main loop for the block's tile {turn - 1}, at\n            "
                f"{watch.code_at(before[0].line)}\n        and did not arrive at barrier {barrier} after it{never} — "
                f"{then}",
                ["after its main loop for the block's tile i, a consumer hands tile i + 1 to the other consumer: "
                 "named_barrier_arrive(ORDER_BARRIER + 1 − w, ORDER_THREADS), if the block has a tile i + 1"])
    return None


def _turn_after(consumer: Consumer, sync: Event) -> int:
    """The turn of the main loop this wait comes before: the next one the consumer ran, else the one it would run."""
    after = [e for e in consumer.events if e.seq > sync.seq and e.kind == "main"]
    if after and after[0].detail["turn"] is not None:
        return after[0].detail["turn"]
    before = [e.detail["turn"] for e in consumer.events if e.seq < sync.seq and e.kind == "main"]
    if before and before[-1] is not None:
        return before[-1] + 2
    return consumer.index  # its first: the block's tile 0 is consumer 0's, tile 1 consumer 1's


def _step(event: Event) -> str:
    turn = event.detail.get("turn")
    return {"store": f"its store of tile {turn}", "sync": f"a wait at barrier {event.detail.get('barrier')}",
            "arrive": f"an arrive at barrier {event.detail.get('barrier')}", "main": f"its main loop for tile {turn}",
            "wait": "a wait in a main loop"}.get(event.kind, event.kind)


def order_problem(watch: Watch, block: int, case: Case, consumers: list[Consumer]) -> tuple | None:
    """The main loops alternate, each after the one of the turn before it has ended."""
    runs = sorted(((start, end, c) for c in consumers for start, end in c.mains()), key=lambda r: r[0].detail["turn"])
    hints = ["each consumer waits at its barrier before a main loop (the block's tile i > 0) and the other consumer "
             "arrives there after its main loop for tile i − 1: named_barrier_sync before main_loop, "
             "named_barrier_arrive after it (lesson 19, 'The idea')"]
    for (start, _, first), (next_start, _, second) in zip(runs, runs[1:]):
        if first is second:
            return (f"{first.name} ran the main loops of the block's tiles {start.detail['turn']} and "
                    f"{next_start.detail['turn']} in a row, at\n            {watch.code_at(next_start.line)}\n"
                    "        the consumers take the block's tiles in turn: tile i to consumer i % 2",
                    ["consumer w takes turns w, w + 2, w + 4, …"])
    for start, end, consumer in runs:
        turn = start.detail["turn"]
        if turn == 0:
            continue
        other = consumers[1 - consumer.index]
        before = other.main(turn - 1)
        if before is None:
            continue
        previous = [e for e in consumer.events if e.kind == "main_end" and e.seq < start.seq]
        since = previous[-1].seq if previous else -1
        waits = [e for e in consumer.of("sync") if since < e.seq < start.seq]
        overlap = before[1] is None or before[1].seq > start.seq
        ran = (f"\n        here it began before {other.name}'s main loop for tile {turn - 1} had ended: the two ran at "
               "once" if overlap else "")
        if not waits:
            return (f"{consumer.name} started its main loop for the block's tile {turn} without waiting at a barrier, "
                    f"at\n            {watch.code_at(start.line)}\n        {other.name}'s main loop for tile "
                    f"{turn - 1} may still run{ran}", hints)
        sync = waits[-1]
        barrier = sync.detail["barrier"]
        number = [e.seq for e in consumer.of("sync")].index(sync.seq)
        arrives = [e for e in other.of("arrive") if e.detail["barrier"] == barrier]
        # (a main loop that never ended — the block deadlocked inside it — ended after any arrive)
        if number < len(arrives) and (before[1] is None or arrives[number].seq < before[1].seq):
            arrive = arrives[number]
            return (f"{other.name} arrived at barrier {barrier} before its main loop for the block's tile {turn - 1} "
                    f"ended, at\n            {watch.code_at(arrive.line)}\n        so {consumer.name}'s wait before "
                    f"tile {turn} may end while that main loop still runs{ran}", hints)
    intervals = [(start.seq, end.seq if end else float("inf"), start, consumer) for start, end, consumer in runs]
    for (s1, e1, start1, c1), (s2, e2, start2, c2) in zip(intervals, intervals[1:]):
        if s2 < e1:
            return (f"the main loops of the block's tiles {start1.detail['turn']} ({c1.name}) and "
                    f"{start2.detail['turn']} ({c2.name}) ran at once", hints)
    return None


def epilogue_problem(watch: Watch, block: int, case: Case, consumers: list[Consumer]) -> tuple | None:
    """The hand-over (the arrive after a main loop) before the store of the same tile."""
    turns = case.turns(block)
    for consumer in consumers:
        for start, end in consumer.mains():
            turn = start.detail["turn"]
            if end is None:
                continue
            store = consumer.store(turn)
            if store is not None and store.seq < start.seq:
                return (f"{consumer.name} stored the block's tile {turn} before its main loop for it: store at\n"
                        f"            {watch.code_at(store.line)}\n        main loop at\n            "
                        f"{watch.code_at(start.line)}\n        what it stored is the accumulators of its tile before "
                        "(or nothing yet)", ["for each turn: wait, main_loop, hand over, then store"])
            arrive = next((e for e in consumer.of("arrive") if e.seq > end.seq), None)
            if turn + 1 >= turns or store is None or arrive is None or store.seq < end.seq or arrive.seq < store.seq:
                continue
            other = consumers[1 - consumer.index]
            return (f"{consumer.name} arrived at barrier {arrive.detail['barrier']} after its store of the block's "
                    f"tile {turn}: store at\n            {watch.code_at(store.line)}\n        arrive at\n            "
                    f"{watch.code_at(arrive.line)}\n        The order holds, but {other.name}'s main loop for tile "
                    f"{turn + 1} waits for the store: the store no longer runs under the other consumer's main loop, "
                    "which is the point of ping-pong",
                    ["hand the turn over as soon as the main loop is done — named_barrier_arrive right after "
                     "main_loop — then store (step 19: the arrive, then the last wgmma wait and the store)"])
    return None


def deadlock_text(watch: Watch, block: int) -> str:
    """Who waits where when the block deadlocked: the threads of a role grouped by their wait."""
    groups: dict[tuple, list[int]] = {}
    for thread, (what, line) in sorted((watch.deadlock or {}).items()):
        groups.setdefault((_role(thread), what, line), []).append(thread)
    said = "".join(f"\n            {role} (thread{'s' if len(threads) > 1 else ''} {ranges(threads)}) waits on "
                   f"{_what(what)}, at {watch.code_at(line)}" for (role, what, line), threads in groups.items())
    return f"block {block} deadlocked: every live thread waits, and no wait can complete —{said}"


def check_launch(watch: Watch, case: Case, failure: str | None, stores: list) -> tuple | None:
    """The first problem the checks find, for the first block in which one is found: (message, hints)."""
    complete = failure is None
    blocks = sorted({block for block, _ in watch.events}) or [0]
    for block in blocks:
        consumers = _consumers(watch, block, case, stores)
        last = block == blocks[-1]
        # The consumers are done: the block completed, or when it deadlocked no consumer thread was among the waiters.
        done = complete or not last or not any(thread < CONSUMERS * CONSUMER_THREADS for thread in watch.deadlock or {})
        if done and not any(c.mains() for c in consumers):
            did = any(c.of("sync", "arrive") for c in consumers)
            found = (("neither consumer called main_loop: "
                      + ("the grader follows each consumer's main loops through it (given)" if did else
                         "the block's tiles were taken by neither consumer")
                      + (" — the producer waits on an empty barrier for a consumer that never comes"
                         if not complete else "")),
                     ["consumer w takes the block's turns w, w + 2, …: for each, wait (turn > 0), "
                      "main_loop(acc, a, stages, barriers, n, turn, lane), hand over, store (the stub's steps 1–4)"])
        else:
            found = (tiles_problem(watch, block, case, consumers, done)
                     or lanes_problem(watch, block, complete or not last)
                     or barriers_problem(watch, block, case, consumers)
                     or order_problem(watch, block, case, consumers)
                     or epilogue_problem(watch, block, case, consumers))
        if found is not None:
            message, hints = found
            drawn = timeline(watch, block, case, consumers)
            return message + (f"\n        {drawn}" if drawn else ""), hints
    if failure is not None:
        block = blocks[-1]
        consumers = _consumers(watch, block, case, stores)
        said = deadlock_text(watch, block) if failure == "deadlock" else failure
        drawn = timeline(watch, block, case, consumers)
        return said + (f"\n        {drawn}" if drawn else ""), []
    return None


def numbers_hints(problem, case: Case, stores: list) -> list[str]:
    """Wrong numbers said by tiles: which tiles of C were never written or stored more than once, and whose they are
    (empty: the comparison's own hints say it)."""
    def whose(tile: int) -> str:
        block, turn = tile % case.blocks, tile // case.blocks
        return f"tile {tile} of C (block {block}'s tile {turn}, consumer {turn % 2}'s)"

    hints = []
    if problem.kind == "unwritten":
        rows = np.nonzero(problem.mask)[0]
        tiles = sorted({int(row) // BLOCK_M for row in rows})
        hints.append("never written: " + ", ".join(whose(tile) for tile in tiles))
    counts = np.bincount([flat for *_, flat in stores], minlength=case.m * case.n)
    twice = sorted({int(flat) // case.n // BLOCK_M for flat in np.flatnonzero(counts > 1)})
    if twice:
        hints.append("stored more than once: " + ", ".join(whose(tile) for tile in twice))
    if hints:
        hints.append("store(c, acc, turn, lane) writes the block's tile `turn`: is each store given the turn whose "
                     "main loop filled acc?")
    return hints


def grade(exercise, module, seed: int = 0, say=None, time_limit: float | None = None, compile: bool = True):
    from . import exercises

    time_limit = exercises.LAUNCH_SECONDS if time_limit is None else time_limit
    report, kernel = exercises.opening_checks(exercise, module, compile)
    if kernel is None:
        return report
    if not exercises.SIMULATOR:
        report.skip("the order of the main loops, the barriers and the numbers are checked on the simulator (its "
                    "named barriers and mbarriers are twins there; a missing arrive would hang a GPU): "
                    "NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check pingpong")
        return report
    rng = np.random.default_rng(seed + 1)
    for case in cases(seed):
        if say is not None:
            say(f"  …     {case} on the simulator")
        a, b, c = exercises.case_inputs(rng, case)
        failure, watch, stores = launch(kernel, module, case, a, b, c, time_limit)
        found = check_launch(watch, case, failure, stores)
        if found is not None:
            return report.fail(f"{case}: {found[0]}", *found[1])
        problem = exercises.compare(c, a, b, (BLOCK_M, case.n), exercises.stored_mask(c.shape, stores))
        if problem is not None:
            return report.fail(f"{case}: {problem.what}", *(numbers_hints(problem, case, stores) or problem.hints))
        report.ok(f"{case}: every element right; each tile taken by one consumer, the main loops in turn, each "
                  "consumer's hand-over before its store")
    return report
