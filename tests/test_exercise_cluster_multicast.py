"""The grader of the cluster-multicast exercise (``exercises/cluster_multicast.py``, lesson 20): it passes its solution
and fails its stub and planted mistakes, each with the message that names the mistake.

A planted mistake is the solution's source with an edit or two (the table below, helpers.planted_source), graded like a
learner's file on the simulator, without the GPU compile (test_exercises.py compiles the solution and the stub for
compute capability 9.0). One grading per mistake; only the missing remote arrival waits out the grader's wait limit
(5 s), the others stop at the thread that broke the rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gemm_steps.course import cli, exercises
from helpers import planted_file

NAME = "cluster_multicast"
SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="the watched twins and clusters are the "
                                                                   "simulator's")

COPY = ("            copy_tile_multicast(stages, s * STAGE_FLOATS + rank * HALF_FLOATS, b_map, t * BLOCK_K + rank * "
        "HALF_K, 0,\n                                full, s, CLUSTER_MASK)  # my half, into both blocks\n")
ARRIVALS = ("            for r in range(CLUSTER):  # read: block r's producer may refill it (its multicast writes here "
            "too)\n                mbarrier_arrive_cluster(empty, s, r)\n")
REFILL_WAIT = ("            if t >= STAGES:  # refill: wait until the consumers of both blocks released the fill "
               "before\n                mbarrier_wait(empty, s, (t // STAGES - 1) % 2)\n")
LAST_SYNC = "    cluster_sync()  # the peer's last arrivals on this block's barriers are in: this block may end\n"

#: Wrong solutions: {case: (what is wrong, [(old, new) edits of the solution])}.
MISTAKES = {
    "same_half": (
        "both blocks load half 0 of every k-tile.",
        [("s * STAGE_FLOATS + rank * HALF_FLOATS, b_map, t * BLOCK_K + rank * HALF_K, 0,",
          "s * STAGE_FLOATS, b_map, t * BLOCK_K, 0,")]),
    "one_loads_all": (
        "block 0 loads both halves of every k-tile, block 1 none.",
        [(COPY, "            if rank == 0:  # (wrong: block 0 loads the whole k-tile)\n"
                "                for h in range(CLUSTER):\n"
                "                    copy_tile_multicast(stages, s * STAGE_FLOATS + h * HALF_FLOATS, b_map,\n"
                "                                        t * BLOCK_K + h * HALF_K, 0, full, s, CLUSTER_MASK)\n")]),
    "no_multicast": (
        "each block loads its half with copy_tile: into itself only.",
        [("mbarrier_arrive_expect_tx, mbarrier_init,", "copy_tile, mbarrier_arrive_expect_tx, mbarrier_init,"),
         (COPY, "            copy_tile(stages, s * STAGE_FLOATS + rank * HALF_FLOATS, b_map, t * BLOCK_K + "
                "rank * HALF_K, 0, full, s)\n")]),
    "own_mask": (
        "the mask names this block only.",
        [("full, s, CLUSTER_MASK)", "full, s, 1 << rank)")]),
    "own_half_bytes": (
        "expect_tx announces this block's own half only.",
        [("CLUSTER * HALF_FLOATS * 4)", "HALF_FLOATS * 4)")]),
    "empty_one_block": (
        "empty[s] counts one block's consumers.",
        [("mbarrier_init(empty, s, CLUSTER * CONSUMERS)", "mbarrier_init(empty, s, CONSUMERS)")]),
    "no_remote_arrival": (
        "each consumer arrives on its own block's empty[s] only.",
        [(ARRIVALS, "            mbarrier_arrive_cluster(empty, s, rank)  # (wrong: its own block only)\n")]),
    "no_refill_wait": (
        "the producer refills a stage without waiting on empty[s].",
        [(REFILL_WAIT, "")]),
    "consumer_parity": (
        "the consumers wait on full[s] with the parity of the phase before.",
        [("mbarrier_wait(full, s, t // STAGES % 2)", "mbarrier_wait(full, s, (t // STAGES + 1) % 2)")]),
    "no_last_sync": (
        "no cluster_sync() at the end.",
        [(LAST_SYNC, "")]),
    "idle_lanes_skip_last_sync": (
        "lanes 1–31 of the producer's warp skip the last cluster_sync().",
        [(LAST_SYNC, "    if tid == 0 or tid >= 32:\n        cluster_sync()\n")]),
    "no_fence": (
        "no fence_mbarrier_init() after the initialisation.",
        [("        fence_mbarrier_init()  # the initialised barriers → visible to the peer's arrivals and "
          "copies\n", "")]),
    "no_first_sync": (
        "no cluster_sync() between the initialisation and the first copy.",
        [("    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them\n",
          "")]),
}

#: What each mistake's report says (a regular expression, searched with re.S).
SAYS = {
    # 1. who loads what: the same half twice, all of it in one block, a load without multicast — with the drawing.
    "same_half": r"threadIdx.x=0 \(the producer\) of block 1 \(rank 1\) loaded half 0 of k-tile 0 \(rows 0–3 of B\)"
                 r".*half 0 is rank 0's: both blocks load it, and half 1 \(rows 4–7 of B\) reaches neither block"
                 r".*the cluster then .*block 1 stage 0: k-tile 0: [^\n]*half 0 ← block 1[^\n]*◀ half 0 of k-tile 0 "
                 r"from block 1",
    "one_loads_all": r"of block 0 \(rank 0\) loaded half 1 of k-tile 0 \(rows 4–7 of B\) after half 0.*one block loads "
                     r"all of B's k-tile.*block 0 stage 0: k-tile 0: half 0 ← block 0, half 1 ← block 0 [^\n]*◀",
    "no_multicast": r"of block ([01]) \(rank \1\) loaded half \1 of k-tile 0 with copy_tile.*copy_tile writes into "
                    r"this block's shared memory only: block [01] needs this half too",
    # 2. the mask.
    "own_mask": r"multicast mask 0b(01|10) from threadIdx.x=0 \(the producer\) of block [01] \(rank [01]\), for half "
                r"[01] of k-tile 0.*it reaches this block only: block [01] never gets half [01]",
    # 3. expect_tx.
    "own_half_bytes": r"expect_tx with the wrong byte count: block [01]'s producer announced 512 bytes on full\[0\] "
                      r"for k-tile 0.*1,024 bytes land in each block per k-tile: its own half \(512 bytes"
                      r".*Announced for its own half only",
    # 4. the empty barrier: its count, a missing remote arrival (the deadlock detector), a refill before the release.
    "empty_one_block": r"empty\[0\] of block [01] initialised with count 64.*that is one block's consumers.*while the "
                       r"peer's still read the stage",
    "no_remote_arrival": r"a missing arrival — the deadlock detector: threadIdx.x=0 \(the producer\) of block ([01]) "
                         r"waited on empty\[0\] with parity 0.*did not complete in 5 s \(64 of 128 arrivals.*never "
                         r"arrived on block \1's empty\[0\] in this phase: block [01]'s consumer threads 32–95"
                         r".*◀ threadIdx.x=0 \(the producer\) waits here",
    "no_refill_wait": r"a refill before every consumer released the stage: threadIdx.x=0 \(the producer\) of block "
                      r"[01] \(rank [01]\) (began to refill stage \d with k-tile \d+ \(arrive_expect_tx\)|multicast "
                      r"half [01] of k-tile \d+ into stage \d of block [01]), fill \d+ of the stage, at.*while (its own|"
                      r"the peer block [01]'s) consumer threads [\d–, ]+ had not released k-tile \d+ there.*they may "
                      r"still be reading it",
    # 5. parities.
    "consumer_parity": r"wrong parity: threadIdx.x=\d+ \(consumer warp [12]\) of block [01] waited on full\[0\] with "
                       r"parity 1.*that phase has parity 0.*◀ full\[0\] waited on with parity 1, needs 0",
    # 6. the end: no last cluster_sync() (from the watch: the simulator keeps an ended block's memory), or one skipped.
    "no_last_sync": r"no cluster_sync\(\) at the end: threadIdx.x=32 \(consumer warp 1\) of block 0 arrived on block "
                    r"1's empty\[\d\].*returned with no cluster_sync\(\) after it.*block 0, threadIdx.x=32:  … "
                    r"arrived on block 1's empty\[\d\] ──▶ block 1\n\s+block 1: +… its threads return, the block ends",
    "idle_lanes_skip_last_sync": r"threads 1–31 of block 0 executed cluster_sync\(\) 1 time, other threads of the "
                                 r"cluster 2; the one they skipped:\n\s+line \d+ of idle_lanes_skip_last_sync.py: "
                                 r"cluster_sync\(\)\n",
    # … and the start.
    "no_fence": r"threadIdx.x=0 \(the producer\) of block [01] initialised the barriers .*reached its first "
                r"cluster_sync\(\) with no fence_mbarrier_init\(\) after that",
    "no_first_sync": r"threadIdx.x=0 \(the producer\) of block [01] multicast half [01] of k-tile 0 into block [01] "
                     r"before any cluster_sync\(\)",
}


def _grade(path: Path):
    return exercises.grade(exercises.get(NAME), exercises.load(path), say=None, compile=False)


@SIMULATOR_ONLY
def test_the_solution_passes_on_both_shapes():
    report = exercises.grade(exercises.get(NAME), exercises.get(NAME).solution(), compile=False)
    assert report.passed, report.text()
    assert sum("every element right; each block multicast its half of every k-tile into both" in line
               for line in report.lines) == 2, report.text()


@SIMULATOR_ONLY
def test_the_stub_fails_saying_nothing_was_written():
    report = _grade(exercises.get(NAME).file)
    assert not report.passed
    assert "of C were never written" in report.text() and "does the kernel store to c?" in report.text(), \
        report.text()


@SIMULATOR_ONLY
@pytest.mark.parametrize("case", list(MISTAKES))
def test_a_mistake_fails_with_its_message(case, tmp_path):
    report = _grade(planted_file(NAME, case, MISTAKES[case], tmp_path))
    text = report.text()
    assert not report.passed
    assert re.search(SAYS[case], text, re.S), text
    assert f"of {case}.py:" in text, text  # the learner's line, named
    assert "every element right" not in text, text


def test_every_mistake_has_its_message():
    assert set(SAYS) == set(MISTAKES)


def test_the_exercise_is_listed_after_its_lesson(capsys):
    assert cli.main(["exercise", "list"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.split()[0] == NAME)
    assert line.split()[1:5] == ["lesson", "20_cluster_multicast", "step", "20"], line
    names = [exercise.name for exercise in exercises.EXERCISES]
    assert names.index(NAME) > names.index("warp_specialized")
