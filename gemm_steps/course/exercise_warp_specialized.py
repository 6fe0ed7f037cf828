"""The grader of exercise ``warp_specialized`` (``exercises/warp_specialized.py``, lesson 17): a block split into a
producer warpgroup and consumer warpgroups, with registers handed over by ``setmaxnreg``.

The kernel runs on the simulator with its twins watched (:func:`.exercise_wgmma.watched`: the toolkit is unchanged,
the kernel's module sees recording stand-ins for the launch): which thread, of which warpgroup, called ``setmaxnreg``
with what count, issued a ``wgmma``, announced or copied bytes, and which mbarrier each thread waited on, with which
parity, at which line — and whether the wait returned. The mbarrier twins' deadlock detector
(:class:`..toolkit.mbarrier_ops.MbarrierTimeout`) ends a wait that can never complete after a short limit
(:data:`WAIT_LIMIT_S`, instead of the toolkit's minute), so a wrong barrier fails in seconds, named. The checks:

* **the register counts fit the block's pool**, first on the file's constants and then on the counts the warpgroups
  asked for: ``setmaxnreg.inc`` draws from a pool kept per block, threads × registers at entry (384 × 168 = 64,512
  for three warpgroups: :func:`..toolkit.warpgroup_ops.registers_at_entry`), and asking for more than it holds hangs
  the raising warpgroups (:func:`..toolkit.warpgroup_ops.check_register_handoff`'s message); the producer lowers
  (``registers_lower_to``), the consumers raise (``registers_raise_to``);
* **it compiles for a GPU** (NVVM, compute capability 9.0) and keeps the ``wgmma`` rules in its PTX;
* **the roles**: the producer warpgroup issues no ``wgmma`` and stores no element of C (it gave its registers away:
  40 hold no accumulators), the consumers issue no copies;
* **the barriers**: each consumer thread's wait for k-tile t is on full[t % STAGES], the producer's on
  empty[t % STAGES]; a wait that never completed is named — the thread's role, the barrier, the parity, the line;
* **the numbers**: C = A·B with A and B read as TF32.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import numpy as np

from ..toolkit.backend import SIMULATOR
from . import exercise_wgmma as wg_grader
from .race_check import abort_after

CONSUMERS, STAGES, BLOCK_K = 2, 2, 8
THREADS = 128 * (CONSUMERS + 1)
M, N, K = 64 * CONSUMERS, 16, 32
K_TILES = K // BLOCK_K
SIGNATURE = "void(float32[:, ::1], float32[::1], float32[:, ::1])"
#: Seconds an mbarrier wait may last on the simulator before the twin calls it a deadlock (the whole check of the
#: solution, compile included, took about 2 s on a 2-core machine with no GPU: no wait of it lasts longer).
WAIT_LIMIT_S = 6.0
LAUNCH_SECONDS = 40.0


def solution():
    from . import exercise_warp_specialized_solution

    return exercise_warp_specialized_solution


def time_against_step(exercise, module) -> str:
    return ("one block on a 128×16×32 problem: nothing here to time against step 17 (lesson 17 times the step; "
            "gemm-steps bench --steps 17)")


def b_tiles(b: np.ndarray) -> np.ndarray:
    """B (K×N) as the copy engine would lay it out: k-tile after k-tile, each in the wgmma exercise's core-matrix
    order (B[k][n] of k-tile t at float t·128 + (k % 8 // 4)·64 + (n // 8)·32 + (n % 8)·4 + k % 4)."""
    flat = np.zeros(K * N, np.float32)
    for k in range(K):
        for n in range(N):
            kk = k % BLOCK_K
            flat[k // BLOCK_K * N * BLOCK_K + (kk // 4) * 64 + (n // 8) * 32 + (n % 8) * 4 + kk % 4] = b[k, n]
    return flat


def launch(kernel, a, b, c, blocks=None):
    """one block of three warpgroups: warp_specialized_kernel[1, 384](a, b_tiles, c)"""
    kernel[1, THREADS](a, b, c)


def _role(tid: int) -> str:
    group = tid // 128
    return (f"the producer warpgroup (threads {CONSUMERS * 128}–{THREADS - 1})" if group == CONSUMERS else
            f"consumer warpgroup {group} (threads {128 * group}–{128 * group + 127})")


def _barrier_name(index: int) -> str:
    if index < STAGES:
        return f"full[{index}]"
    return f"empty[{index - STAGES}]" if index < 2 * STAGES else f"barrier {index}"


def _mbarrier_stand_ins(watch):
    from ..toolkit import mbarrier_ops as mb

    real = {name: getattr(mb, name) for name in ("mbarrier_wait", "mbarrier_arrive", "mbarrier_arrive_expect_tx",
                                                 "copy_bulk")}

    def mbarrier_wait(array, index, parity):
        event = watch.record("mbarrier_wait", index=int(index), parity=int(parity) & 1, done=False)
        real["mbarrier_wait"](array, index, parity)
        if event is not None:
            event.detail["done"] = True

    def mbarrier_arrive(array, index):
        watch.record("mbarrier_arrive", index=int(index))
        real["mbarrier_arrive"](array, index)

    def mbarrier_arrive_expect_tx(array, index, count):
        watch.record("expect_tx", index=int(index), bytes=int(count))
        real["mbarrier_arrive_expect_tx"](array, index, count)

    def copy_bulk(destination, to, source, start, count, array, index):
        watch.record("copy", index=int(index))
        while hasattr(source, "_item"):  # the simulator's in-kernel array → its array → NumPy
            source = source._item
        real["copy_bulk"](destination, to, getattr(source, "_ary", source), start, count, array, index)

    return {mb: {"mbarrier_wait": mbarrier_wait, "mbarrier_arrive": mbarrier_arrive,
                 "mbarrier_arrive_expect_tx": mbarrier_arrive_expect_tx, "copy_bulk": copy_bulk}}


@contextmanager
def _short_waits(seconds: float):
    from ..toolkit import mbarrier_ops as mb

    saved, mb.SIMULATOR_WAIT_LIMIT_S = mb.SIMULATOR_WAIT_LIMIT_S, seconds
    try:
        yield
    finally:
        mb.SIMULATOR_WAIT_LIMIT_S = saved


# -- the checks -------------------------------------------------------------------------------------------------
def register_problem(roles: list[tuple[int, int]], said: str) -> tuple[str, list[str]] | None:
    """Whether (threads, registers) per role fit the block's pool, in check_register_handoff's words."""
    from ..toolkit.warpgroup_ops import check_register_handoff, registers_at_entry

    entry = registers_at_entry(THREADS)
    try:
        check_register_handoff(THREADS, roles, entry)
    except ValueError as error:
        return (f"{said}: {error}",
                [f"{THREADS} threads start with {entry} registers each (65,536 / {THREADS}, in steps of 8): the "
                 f"block's pool is {THREADS} × {entry} = {THREADS * entry:,}, and what the producer gives back is all "
                 "the consumers can take — not the SM's 65,536 (lesson 17; gemm_steps/steps/warp_specialized.py)"])
    return None


def constants_problem(module) -> tuple[str, list[str]] | None:
    producer, consumer = getattr(module, "PRODUCER_REGISTERS", None), getattr(module, "CONSUMER_REGISTERS", None)
    if not (isinstance(producer, int) and isinstance(consumer, int)):
        return None
    from ..toolkit.warpgroup_ops import registers_at_entry

    entry = registers_at_entry(THREADS)
    for name, count in (("PRODUCER_REGISTERS", producer), ("CONSUMER_REGISTERS", consumer)):
        if not (24 <= count <= 256 and count % 8 == 0):
            return (f"{name} = {count}: setmaxnreg takes 24 to 256 registers a thread, a multiple of 8", [])
    if producer > entry:
        return (f"PRODUCER_REGISTERS = {producer} is more than the {entry} a thread starts with: the producer lowers "
                "its registers (setmaxnreg.dec) to give them to the consumers", [])
    if consumer < entry:
        return (f"CONSUMER_REGISTERS = {consumer} is fewer than the {entry} a thread starts with: the consumers raise "
                "theirs (setmaxnreg.inc) — they hold the accumulators", [])
    return register_problem([(128, producer), (128 * CONSUMERS, consumer)],
                            f"PRODUCER_REGISTERS = {producer}, CONSUMER_REGISTERS = {consumer}")


def setmaxnreg_problem(watch) -> tuple[str, list[str]] | None:
    """What each warpgroup asked setmaxnreg for (thread 0 of each speaks for it), against the roles and the pool."""
    from ..toolkit.warpgroup_ops import registers_at_entry

    entry = registers_at_entry(THREADS)
    counts = []
    for group in range(CONSUMERS + 1):
        calls = watch.of(128 * group, "setmaxnreg")
        producer = group == CONSUMERS
        if not calls:
            return (f"{_role(128 * group)} never called setmaxnreg: it keeps the {entry} registers a thread starts "
                    "with", ["the producer calls registers_lower_to(PRODUCER_REGISTERS) first thing in its branch, "
                             "each consumer registers_raise_to(CONSUMER_REGISTERS) in its"])
        call = calls[-1]
        want = "dec" if producer else "inc"
        if call.detail["action"] != want:
            rule = ("the producer lowers its registers (registers_lower_to)" if producer else
                    "the consumers raise theirs (registers_raise_to)")
            return (f"{_role(128 * group)} called {'registers_raise_to' if want == 'dec' else 'registers_lower_to'}"
                    f"({call.detail['count']}) at {wg_grader.at(call)}\n        {rule}",
                    ["the producer only issues copies and needs few registers; the consumers hold the accumulators "
                     "and the fragments"])
        counts.append(call.detail["count"])
    return register_problem([(128, counts[-1])] + [(128, count) for count in counts[:-1]],
                            "the warpgroups asked setmaxnreg for " + ", ".join(
                                f"{count} ({'producer' if g == CONSUMERS else f'consumer {g}'})"
                                for g, count in [(CONSUMERS, counts[-1])] + list(enumerate(counts[:-1]))))


def roles_problem(watch, observed) -> tuple[str, list[str]] | None:
    producers = range(CONSUMERS * 128, THREADS)
    for tid in producers:
        wgmma = watch.of(tid, "wgmma")
        if wgmma:
            return (f"{_role(tid)} issued a wgmma (thread {tid}, at {wg_grader.at(wgmma[0])}): the producer also "
                    "multiplies", ["the producer warpgroup only issues the copies: it lowered its registers to "
                                   "PRODUCER_REGISTERS, too few for accumulators. The consumers compute all of C, "
                                   "consumer w its rows 64w … 64w + 63; the producer's branch ends after its loop"])
    if observed is not None:
        stored = sorted({store[2] for store in observed.stores if store[2] in producers})
        if stored:
            return (f"{_role(stored[0])} stored elements of C (threads {wg_grader.ranges(stored)}): the producer also "
                    "computes", ["only the consumers store C: each its 64 rows"])
    for tid in range(CONSUMERS * 128):
        copies = watch.of(tid, "copy") + watch.of(tid, "expect_tx")
        if copies:
            return (f"{_role(tid)} issued a copy (thread {tid}, at {wg_grader.at(copies[0])}): the consumers only "
                    "wait, multiply and release stages", ["the producer's one thread issues every k-tile's copy"])
    return None


def barrier_problem(watch, failure: str | None) -> tuple[str, list[str]] | None:
    """A wait on the wrong barrier or with the wrong parity, or a wait that never completed, named."""
    expected = {}
    for tid in range(THREADS):
        producer = tid // 128 == CONSUMERS
        waits = watch.of(tid, "mbarrier_wait")
        if producer:
            want = [(STAGES + t % STAGES, (t // STAGES - 1) % 2) for t in range(STAGES, K_TILES)]
        else:
            want = [(t % STAGES, (t // STAGES) % 2) for t in range(K_TILES)]
        expected[tid] = want
        for number, event in enumerate(waits):
            got = (event.detail["index"], event.detail["parity"])
            if number < len(want) and got == want[number]:
                continue
            t = number + (STAGES if producer else 0)
            if producer:
                what = (f"before refilling stage {t % STAGES} with k-tile {t}, the producer waits on "
                        f"{_barrier_name(want[number][0])} (every consumer warp's arrival: the stage is free) with "
                        f"parity {want[number][1]}" if number < len(want) else
                        f"the producer waits only before a refill: k-tiles {STAGES} … {K_TILES - 1}")
            else:
                what = (f"before k-tile {t} a consumer waits on {_barrier_name(want[number][0])} (the producer's "
                        f"arrival and the copy's bytes: the stage is full) with parity {want[number][1]}"
                        if number < len(want) else f"a consumer waits once per k-tile, {K_TILES} times")
            never = "" if event.detail["done"] else " — and that wait never completed"
            return (f"{_role(tid)} waited on {_barrier_name(got[0])} with parity {got[1]} (thread {tid}, its wait "
                    f"number {number + 1}, at {wg_grader.at(event)}){never}: {what}",
                    ["full[s] completes when the producer has arrived (expect_tx) and the copy's bytes have landed; "
                     "empty[s] when every consumer warp has released the stage (lesson 17; lesson 16 for the ring and "
                     "its parities)"] + ([failure.split("\n")[0]] if failure and never else []))
    return None


def grade(exercise, module, seed: int = 0, say=None, time_limit: float = LAUNCH_SECONDS, compile: bool = True):
    from . import exercises

    report = exercises.Report(exercise)
    kernel = exercises.kernel_or_failure(exercise, module, report)
    if kernel is None:
        return report
    found = constants_problem(module)
    if found is not None:
        return report.fail(*found[:1], *found[1])
    if compile and not exercises.compiles(exercise, module, report, wg_grader.check_compiles):
        return report
    exercise = dataclasses.replace(exercise, launch=launch)
    rng = np.random.default_rng(seed + 1)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.full((M, N), exercises.POISON_BITS, dtype=np.uint32).view(np.float32)
    if say is not None:
        say(f"  …     A {M}×{K}, B {K}×{N}, one block of {THREADS} threads on the "
            f"{'simulator' if SIMULATOR else 'GPU'}")
    if not SIMULATOR:
        failure, observed = exercises._launch(exercise, kernel, a, b_tiles(b), c, None, time_limit)
        if failure is not None:
            return report.fail(failure)
    else:
        with wg_grader.watched(module, _mbarrier_stand_ins) as watch, _short_waits(WAIT_LIMIT_S), \
                abort_after(time_limit):
            failure, observed = exercises._launch(exercise, kernel, a, b_tiles(b), c, None, time_limit + 10)
        found = (setmaxnreg_problem(watch) or roles_problem(watch, observed) or barrier_problem(watch, failure)
                 or (wg_grader.protocol_problem(watch, range(THREADS)) if failure is None else None))
        if found is not None:
            return report.fail(found[0], *found[1])
        if failure is not None:
            return report.fail(wg_grader.missing_arrivals(watch, THREADS) or failure)
        if observed is not None and observed.early_read is not None:
            return report.fail(exercises._early_read(observed, N))
    wrong = wg_grader.numbers_problem(c, a, b, observed, "each consumer stores its 64 rows with store (given), "
                                      "after its loop over the k-tiles")
    if wrong is not None:
        return report.fail(wrong)
    report.ok(f"every element right (C = A·B with A and B read as TF32, {M}×{N}×{K})"
              + (": the producer lowered its registers and only copied, the consumers raised theirs within the "
                 "block's pool and waited on the full barriers" if SIMULATOR else ""))
    if not SIMULATOR:
        report.skip("the roles, the register counts asked and the barriers waited on: checked on the simulator "
                    f"(NUMBA_ENABLE_CUDASIM=1 gemm-steps exercise check {exercise.name})")
    return report
