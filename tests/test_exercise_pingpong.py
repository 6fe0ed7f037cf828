"""The grader of the ping-pong exercise (``exercises/pingpong.py``, lesson 19): it passes its solution and right
variants of it, and fails its stub and planted mistakes, each with the message that names the mistake.

A planted mistake is the solution's source with an edit or two (the table below, helpers.planted_source), graded like a
learner's file on the simulator, without the GPU compile (test_exercises.py compiles the solution and the stub for
compute capability 9.0; one test here does too, where NVVM is installed). A mistake that deadlocks the block stops when
every live thread waits in vain (the grader's detector, about a second), not at a time limit.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from gemm_steps.course import exercises
from helpers import planted_file, planted_source

NAME = "pingpong"
SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="the watched twins are the simulator's")

SYNC = ("            if turn > 0:  # wait until the other consumer has issued the last products of the block's turn "
        "− 1\n                named_barrier_sync(ORDER_BARRIER + consumer, ORDER_THREADS)\n")
MAIN = "            main_loop(acc, a, stages, barriers, n, turn, lane)\n"
ARRIVE = ("            if turn + 1 < turns:  # the block has a next tile, the other consumer's: its main loop may "
          "start\n                named_barrier_arrive(ORDER_BARRIER + 1 - consumer, ORDER_THREADS)\n")
STORE = "            store(c, acc, turn, lane)  # the epilogue, under the other consumer's main loop\n"
TURNS = "        for turn in range(consumer, turns, 2):\n"

#: Wrong solutions: {case: (what is wrong, [(old, new) edits of the solution])}.
MISTAKES = {
    # 1. the order: a main loop that does not wait, a hand-over before the main loop.
    "no_wait": (
        "the consumers never wait at their barrier.",
        [(SYNC, "")]),
    "arrive_before_main_loop": (
        "each consumer hands over before its main loop instead of after it.",
        [(MAIN + ARRIVE, ARRIVE + MAIN)]),
    # 2. a wait that never completes: no arrive, the other consumer's barrier, a wait before the block's first tile;
    #    and the barrier rules: every lane, both warps' count.
    "no_arrive": (
        "the consumers never arrive at the other's barrier.",
        [(ARRIVE, "")]),
    "wrong_barrier": (
        "each consumer waits at the other consumer's barrier.",
        [("named_barrier_sync(ORDER_BARRIER + consumer, ORDER_THREADS)",
          "named_barrier_sync(ORDER_BARRIER + 1 - consumer, ORDER_THREADS)")]),
    "first_tile_waits": (
        "consumer 0 waits before the block's first tile too.",
        [("            if turn > 0:  # wait", "            if True:  # wait")]),
    "lane_zero_arrives": (
        "only lane 0 of a consumer warp arrives.",
        [(ARRIVE, "            if turn + 1 < turns and lane == 0:\n"
                  "                named_barrier_arrive(ORDER_BARRIER + 1 - consumer, ORDER_THREADS)\n")]),
    "one_warp_count": (
        "the barriers count one warp.",
        [("named_barrier_sync(ORDER_BARRIER + consumer, ORDER_THREADS)",
          "named_barrier_sync(ORDER_BARRIER + consumer, CONSUMER_THREADS)"),
         ("named_barrier_arrive(ORDER_BARRIER + 1 - consumer, ORDER_THREADS)",
          "named_barrier_arrive(ORDER_BARRIER + 1 - consumer, CONSUMER_THREADS)")]),
    # 3. the epilogue: the hand-over after the store; the store before the main loop.
    "arrive_after_store": (
        "each consumer stores before it hands over.",
        [(ARRIVE + STORE, STORE + ARRIVE)]),
    "store_before_main_loop": (
        "each consumer stores its accumulators before its main loop.",
        [(MAIN + ARRIVE + STORE, STORE + MAIN + ARRIVE)]),
    # 4. the tiles: every tile by both consumers, the block's last tile by neither.
    "both_take_every_tile": (
        "both consumers take every tile of the block.",
        [(TURNS, "        for turn in range(turns):\n")]),
    "last_tile_dropped": (
        "the consumers stop one tile short.",
        [(TURNS, "        for turn in range(consumer, turns - 1, 2):\n")]),
    # 5. the numbers: the order right, the store given the wrong tile (each consumer stores its first tile again).
    "store_wrong_tile": (
        "each consumer passes store its own number instead of the turn.",
        [(STORE, "            store(c, acc, consumer, lane)\n")]),
}

#: What each mistake's report says (a regular expression, searched with re.S), before the timeline where it matters.
SAYS = {
    "no_wait": r"consumer 1 started its main loop for the block's tile 1 without waiting at a barrier, at\n\s+line \d+ "
               r"of no_wait.py: main_loop\(acc, a, stages, barriers, n, turn, lane\)\n\s+consumer 0's main loop for "
               r"tile 0 may still run",
    "arrive_before_main_loop": r"consumer 0 arrived at barrier 2 before its main loop for the block's tile 0 ended, "
                               r"at\n\s+line \d+ of arrive_before_main_loop.py: named_barrier_arrive.*so consumer 1's "
                               r"wait before tile 1 may end while that main loop still runs",
    "no_arrive": r"consumer 1 waits at barrier 2 before its first main loop \(the block's tile 1\), at\n\s+line \d+ of "
                 r"no_arrive.py: named_barrier_sync\(ORDER_BARRIER \+ consumer, ORDER_THREADS\)\n\s+for consumer 0's "
                 r"arrive, which never comes: consumer 0 ran its main loop for the block's tile 0, at\n.*\n\s+and did "
                 r"not arrive at barrier 2 after it \(it never calls named_barrier_arrive\) — its next step: its store "
                 r"of tile 0, at\n\s+line \d+ of no_arrive.py: store\(c, acc, turn, lane\)",
    "wrong_barrier": r"consumer 1 waits at barrier 1, at\n\s+line \d+ of wrong_barrier.py: named_barrier_sync\("
                     r"ORDER_BARRIER \+ 1 - consumer, ORDER_THREADS\)\n\s+for consumer 0's arrive, which never comes: "
                     r"consumer 0 arrives at barrier 2, at\n\s+line \d+ of wrong_barrier.py: named_barrier_arrive",
    "first_tile_waits": r"consumer 0 waits at barrier 1 before its first main loop \(the block's tile 0\), at\n.*for "
                        r"consumer 1's arrive, which never comes: consumer 0's first tile is the block's tile 0, which "
                        r"has no tile before it",
    "lane_zero_arrives": r"lane 0 of consumer 0 arrived at barrier 2, at\n\s+line \d+ of lane_zero_arrives.py: "
                         r"named_barrier_arrive.*\n\s+and lanes 1–31 did not: bar.sync and bar.arrive are "
                         r"instructions of the whole warp",
    "one_warp_count": r"consumer [01] called named_barrier_(sync|arrive) with a count of 32, at\n.*ORDER_THREADS = 64",
    "arrive_after_store": r"consumer 0 arrived at barrier 2 after its store of the block's tile 0: store at\n\s+"
                          r"line \d+ of arrive_after_store.py: store\(c, acc, turn, lane\).*\n\s+arrive at\n\s+"
                          r"line \d+ of arrive_after_store.py: named_barrier_arrive.*The order holds, but consumer 1's "
                          r"main loop for tile 1 waits for the store: the store no longer runs under the other "
                          r"consumer's main loop, which is the point of ping-pong",
    "store_before_main_loop": r"consumer [01] stored the block's tile [01] before its main loop for it: store at\n\s+"
                              r"line \d+ of store_before_main_loop.py: store\(c, acc, turn, lane\)",
    "both_take_every_tile": r"the block's tile 0 \(tile 0 of C, rows 0–7\) was taken by both consumers:\n\s+consumer "
                            r"[01]: line \d+ of both_take_every_tile.py: main_loop",
    "last_tile_dropped": r"the block's tile 2 \(tile 4 of C, rows 32–\d+\) was taken by neither consumer: block 0 has "
                         r"3 tiles",
    "store_wrong_tile": r"M×N×K = 38×24×20, 2 blocks: 144 of 912 elements of C were never written, first C\[32, 0\]\n"
                        r"\s+never written: tile 4 of C \(block 0's tile 2, consumer 0's\)\n\s+stored more than once: "
                        r"tile 0 of C \(block 0's tile 0, consumer 0's\)",
}


@functools.lru_cache(maxsize=None)
def _needs_nvvm():
    from gemm_steps.harness import gpu_mode

    try:
        return gpu_mode.call("gemm_steps.harness.ptx:nvvm_version") is None
    except Exception:
        return True


def _grade(path: Path, **options):
    return exercises.grade(exercises.get(NAME), exercises.load(path), say=None, **{"compile": False, **options})


@SIMULATOR_ONLY
def test_the_solution_passes_on_both_shapes():
    report = exercises.grade(exercises.get(NAME), exercises.get(NAME).solution(), compile=False)
    assert report.passed, report.text()
    assert sum("every element right; each tile taken by one consumer, the main loops in turn" in line
               for line in report.lines) == 2, report.text()


@pytest.mark.skipif(not exercises.SIMULATOR or _needs_nvvm(), reason="compiling for a GPU needs NVVM")
def test_the_solution_compiles_for_hopper():
    report = exercises.grade(exercises.get(NAME), exercises.get(NAME).solution())
    assert report.passed, report.text()
    assert "compiles for a GPU (NVVM, compute capability 9.0)" in report.text(), report.text()


@SIMULATOR_ONLY
def test_the_stub_fails_saying_no_consumer_ran_a_main_loop():
    report = _grade(exercises.get(NAME).file)
    assert not report.passed
    assert "neither consumer called main_loop" in report.text(), report.text()


#: Mistakes whose report is also checked for the timeline of block 0's consumers.
TIMELINE = {"no_wait", "no_arrive", "arrive_after_store"}


@SIMULATOR_ONLY
@pytest.mark.parametrize("case", list(MISTAKES))
def test_a_mistake_fails_with_its_message(case, tmp_path):
    report = _grade(planted_file(NAME, case, MISTAKES[case], tmp_path))
    text = report.text()
    assert not report.passed
    assert re.search(SAYS[case], text, re.S), text
    assert "every element right" not in text, text
    if case in TIMELINE:
        assert re.search(r"block 0's consumers, as the simulator ran them \(the block's tiles 0–2 are tiles 0, 2, 4 "
                         r"of C\):\n\s+consumer 0 +│ consumer 1\n", text), text
        assert re.search(r"\n\s+main loop, tile 0 ▶ +│", text), text


#: Right solutions written otherwise: {case: [(old, new) edits of the solution]}.
VARIANTS = {
    # step 19's loop: a while over the turns
    "while_loop": [(TURNS, "        turn = consumer\n        while turn < turns:\n"),
                   (STORE, STORE + "            turn += 2\n")],
    # an arrive after the block's last tile too, which nobody waits for
    "arrive_always": [("            if turn + 1 < turns:  # the block has a next tile",
                       "            if True:  # (always)")],
    # the barriers the other way round: consumer w waits at ORDER_BARRIER + 1 − w, arrives at ORDER_BARRIER + w
    "barriers_swapped": [("named_barrier_sync(ORDER_BARRIER + consumer,",
                          "named_barrier_sync(ORDER_BARRIER + 1 - consumer,"),
                         ("named_barrier_arrive(ORDER_BARRIER + 1 - consumer,",
                          "named_barrier_arrive(ORDER_BARRIER + consumer,")],
    # consumer 0 waits before every tile, its first wait completed by consumer 1's arrive up front
    "arrive_up_front": [(TURNS, "        if consumer == 1:\n"
                                "            named_barrier_arrive(ORDER_BARRIER, ORDER_THREADS)\n" + TURNS),
                        ("            if turn > 0:  # wait", "            if True:  # wait")],
}


@SIMULATOR_ONLY
@pytest.mark.parametrize("case", list(VARIANTS))
def test_a_right_variant_passes(case, tmp_path):
    path = tmp_path / f"{case}.py"
    path.write_text(planted_source(NAME, VARIANTS[case]))
    report = _grade(path)
    assert report.passed, report.text()


def test_every_mistake_has_its_message():
    assert set(SAYS) == set(MISTAKES)


@SIMULATOR_ONLY
def test_the_twins_are_put_back_after_grading(tmp_path):
    from gemm_steps.toolkit import mbarrier_ops

    path = tmp_path / "no_arrive.py"
    path.write_text(planted_source(NAME, MISTAKES["no_arrive"][1]))
    module = exercises.load(path)
    before = (mbarrier_ops.named_barrier_sync, mbarrier_ops.named_barrier_arrive, mbarrier_ops.mbarrier_wait,
              module.named_barrier_sync, module.main_loop, module.store)
    assert not exercises.grade(exercises.get(NAME), module, compile=False).passed
    assert (mbarrier_ops.named_barrier_sync, mbarrier_ops.named_barrier_arrive, mbarrier_ops.mbarrier_wait,
            module.named_barrier_sync, module.main_loop, module.store) == before


def test_the_exercise_is_listed_after_warp_specialized():
    names = [exercise.name for exercise in exercises.EXERCISES]
    assert names.index("warp_specialized") < names.index(NAME)
    assert exercises.get(NAME).lesson_name == "19_pingpong"


def test_a_hand_over_before_a_main_loop_that_never_ended_is_named():
    """The interleaving of arrive_before_main_loop that the simulator runs now and then (a CI run hit it): consumer 1
    passed its wait and ran its whole main loop while consumer 0's, started after its early arrive, waited on the ring
    for stages consumer 1 had taken and never ended. The report still names the early arrive, not only the overlap."""
    from gemm_steps.course.exercise_pingpong import Consumer, Event, order_problem

    class Lines:
        def code_at(self, line):
            return f"line {line} of arrive_before_main_loop.py: " + {
                10: "named_barrier_arrive(ORDER_BARRIER + 1 - consumer, ORDER_THREADS)",
                11: "main_loop(acc, a, stages, barriers, n, turn, lane)",
                12: "named_barrier_sync(ORDER_BARRIER + consumer, ORDER_THREADS)"}[line]

    first = Consumer(0, [Event(1, "arrive", 10, {"barrier": 2}), Event(2, "main", 11, {"turn": 0}),
                         Event(9, "wait", 0, {})])
    second = Consumer(1, [Event(3, "sync", 12, {"barrier": 2}), Event(4, "synced", 12, {"barrier": 2}),
                          Event(5, "main", 11, {"turn": 1}), Event(6, "main_end", 11, {"turn": 1}),
                          Event(7, "arrive", 10, {"barrier": 1}), Event(8, "store", 0, {"turn": 1})])
    message, _ = order_problem(Lines(), 0, None, [first, second])
    assert re.search(SAYS["arrive_before_main_loop"], message, re.S), message
    assert "the two ran at once" in message, message
