"""The grader of the TMA-store exercise (``exercises/tma_store.py``, lesson 23): it passes its solution and orders that
are as safe, and fails its stub and planted mistakes, each with the message that names the mistake.

A planted mistake is the solution's source with an edit or two (the table below, helpers.planted_source), graded like a
learner's file on the simulator, without the GPU compile (the solution's test compiles it for compute capability 9.0,
and test_exercises.py compiles the solution and the stub). The simulator's store writes at once and its waits wait
for nothing, so every mistake of order here gives the right numbers: only the grader's model of the copy engine's
reads tells them. One grading per case, about a second each; the barrier with the wrong count waits out the grader's
named-barrier limit (5 s).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gemm_steps.course import cli, exercises
from helpers import planted_file, planted_source

NAME = "tma_store"
SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="the order is checked on the simulator, where the "
                                                                   "grader models the copy engine's reads")

#: The exercise's entry in exercises.EXERCISES. Until that list holds it, the fixture below adds it for these tests;
#: once it does, the test after the fixture checks that both say the same.
ENTRY = exercises.Exercise(
    "tma_store", "step 23's epilogue: chunks of C through three shared buffers, stored by the copy engine",
    "cluster_stream_k_tma_store", "tma_store_kernel", None, (32, 32), grader="exercise_tma_store",
    signature="void(float32[:, ::1], float32[:, ::1], uint64[::1])", compile_cc=(9, 0))


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    if not any(exercise.name == NAME for exercise in exercises.EXERCISES):
        monkeypatch.setattr(exercises, "EXERCISES", [*exercises.EXERCISES, ENTRY])


def test_the_registered_entry_is_this_one():
    exercise = exercises.get(NAME)
    assert (exercise.step, exercise.kernel, exercise.tile, exercise.grader, exercise.signature, exercise.compile_cc,
            exercise.uses_shared) == (ENTRY.step, ENTRY.kernel, ENTRY.tile, ENTRY.grader, ENTRY.signature,
                                      ENTRY.compile_cc, ENTRY.uses_shared)


WAIT = ("        if leader:\n"
        "            store_wait_read(1)  # chunk j − 2's store has read its buffer: the one chunk j + 1 writes\n")
BARRIER = "        cuda.syncthreads()  # chunk j written and fenced; chunk j + 1's buffer free\n"
FENCE = "        fence_proxy_async()  # this thread's shared stores → visible to the copy engine (the async proxy)\n"
WRITE = "        buffers[buffer + tid] = acc[j]  # row tid // 32, column tid % 32 of chunk j\n"
STORE = ("        if leader:\n"
         "            store_tile(c_map, block_row + j * CHUNK_ROWS, block_col, buffers, buffer)  # clipped to C\n"
         "            store_commit()\n")
BOX = "store_tile(c_map, block_row + j * CHUNK_ROWS, block_col, buffers, buffer)"
LAST_WAIT = "        store_wait(0)  # every store has read its buffer (and written C) before the block ends\n"
NAMED_BARRIER = [("from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async\n",
                  "from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async\n"
                  "from gemm_steps.toolkit.mbarrier_ops import named_barrier_sync\n")]

#: Wrong solutions: {case: (what is wrong, [(old, new) edits of the solution])}.
MISTAKES = {
    # 1. A write into a buffer the copy engine may still be reading.
    "wait_too_weak": ("the wait leaves two stores reading: chunk j + 1 overwrites chunk j − 2's buffer.",
                      [("store_wait_read(1)", "store_wait_read(2)")]),
    "no_wait": ("no wait before a buffer is written again.", [(WAIT, "")]),
    "no_barrier_after_wait": (
        "the wait stands before the write of chunk j with no barrier after it.",
        [(WAIT, ""), (WRITE, "        if leader:\n            store_wait_read(2)\n" + WRITE)]),
    # 2. A store before the chunk is ready: no barrier, no fence, a fence after the barrier.
    "no_barrier": ("no barrier between the writes and the store.", [(BARRIER, "")]),
    "no_fence": ("no fence_proxy_async() after the writes.", [(FENCE, "")]),
    "fence_after_barrier": ("the fence comes after the barrier.", [(FENCE, ""), (BARRIER, BARRIER + FENCE)]),
    # 3. Who stores what.
    "every_thread_stores": (
        "every thread issues the store.",
        [(STORE, f"        {BOX}\n        store_commit()\n")]),
    "wrong_box": ("chunk j's box at row block_row + j.",
                  [(BOX, "store_tile(c_map, block_row + j, block_col, buffers, buffer)")]),
    "stored_twice": ("chunk j's box at the row of chunk j % BUFFERS: chunks 0–2 stored again, 3–7 never.",
                     [(BOX, "store_tile(c_map, block_row + (j % BUFFERS) * CHUNK_ROWS, block_col, buffers, buffer)")]),
    "no_commit": ("the stores are never committed.", [("            store_commit()\n", "")]),
    "barrier_in_leader": ("the barrier only in the leader's branch.",
                          [(BARRIER, "        if leader:\n            cuda.syncthreads()\n")]),
    "named_barrier_of_two_warps": ("a named barrier that counts 64 threads.",
                                   [*NAMED_BARRIER, (BARRIER, "        named_barrier_sync(1, 64)\n")]),
    # 4. The end.
    "no_last_wait": ("no wait before the block ends.", [(LAST_WAIT, "        pass\n")]),
    # 5. The numbers.
    "chunks_reversed": ("each chunk's buffer holds the elements of chunk CHUNKS − 1 − j.",
                        [("= acc[j]  #", "= acc[CHUNKS - 1 - j]  #")]),
}

#: What each mistake's report says (a regular expression, searched with re.S).
SAYS = {
    "wait_too_weak": r"a thread wrote into a buffer the copy engine may still be reading: threadIdx.x=0 of block "
                     r"\(0, 0\) wrote buffers\[0\] \(buffer 0\) at\n.*while the store of chunk 0, issued from that "
                     r"buffer at\n.*may still be reading it: the last wait before this write,\n\s+line \d+ of "
                     r"wait_too_weak.py: store_wait_read\(2\).*lets 2 groups of threadIdx.x=0 go on reading \(the "
                     r"stores of chunk 0 and chunk 1\).*the buffers then \(3 buffers.*\n\s+buffer 0: chunk 0, its "
                     r"store \(line \d+\) may still be reading it   ◀ threadIdx.x=0 writes here\n\s+buffer 1: chunk 1, "
                     r"its store .*may still be reading it\n\s+buffer 2: chunk 2.*store_wait_read\(1\)",
    "no_wait": r"a thread wrote into a buffer the copy engine may still be reading: .*wrote buffers\[\d+\] \(buffer 0\)"
               r".*store of chunk 0.*threadIdx.x=0 called no store_wait_read or store_wait between that store and "
               r"this write",
    "no_barrier_after_wait": r"a thread wrote into a buffer the copy engine may still be reading: threadIdx.x=\d+ "
                             r".*store of chunk 0.*threadIdx.x=0's wait that retires it,\n\s+line \d+ of "
                             r"no_barrier_after_wait.py: store_wait_read\(2\)\n\s+has no barrier between it and this "
                             r"write.*wait, then barrier, then write",
    "no_barrier": r"a store was issued before every thread had written its part of the chunk: threadIdx.x=0 of block "
                  r"\(0, 0\) issued the store of chunk 0 at\n.*and threadIdx.x=\d+ wrote buffers\[\d+\], which that "
                  r"store reads, at\n\s+line \d+ of no_barrier.py: buffers\[buffer \+ tid\] = acc\[j\].*with no "
                  r"barrier between the two",
    "no_fence": r"a store was issued before a thread's writes were fenced: threadIdx.x=\d+ of block \(0, 0\) wrote "
                r"buffers\[\d+\] at\n.*and executed no fence_proxy_async\(\) between that write and the barrier before "
                r"the store of chunk 0, which reads it, at\n.*generic proxy",
    "fence_after_barrier": r"a store was issued before a thread's writes were fenced: threadIdx.x=\d+ .*which reads it "
                           r"\(its fence_proxy_async\(\) at line \d+ comes after the barrier\)",
    "every_thread_stores": r"chunk 0 of block \(0, 0\) was stored 128 times, by threads 0–127, at\n\s+line \d+ of "
                           r"every_thread_stores.py: store_tile.*one thread issues a chunk's store_tile",
    "wrong_box": r"a box at coordinates where no chunk starts: threadIdx.x=0 of block \(0, 0\) stored the box at "
                 r"\(row, column\) = \(1, 0\), at\n.*chunk j of this block is the box at \(0 \+ 4·j, 0\)",
    "stored_twice": r"chunk 0 of block \(0, 0\) was stored 3 times \(its box at \(0, 0\)\), and chunks 3, 4, 5, 6 and "
                    r"7 never: threadIdx.x=0 stored it again at\n\s+line \d+ of stored_twice.py",
    "no_commit": r"a store was never committed: threadIdx.x=0 of block \(0, 0\) issued the store of chunk 0 at\n.*and "
                 r"no store_commit\(\) after it",
    "barrier_in_leader": r"the threads of block \(0, 0\) did not pass the same barriers: thread 0 passed 8, threads "
                         r"1–127 passed \d",
    "named_barrier_of_two_warps": r"a barrier never completed: named barrier 1: \d+ of 64 threads arrived in 5 s",
    "no_last_wait": r"block \(0, 0\) may end while the store of chunk 6 still reads its buffer \(and 1 more\): "
                    r"threadIdx.x=0 issued it at\n.*no later store_wait_read or store_wait of that thread retired it"
                    r".*buffer 0: chunk 6, its store \(line \d+\) may still be reading it\n\s+buffer 1: chunk 7, its "
                    r"store .*may still be reading it\n\s+buffer 2: chunk 5, read \(retired by store_wait_read\(1\), "
                    r"line \d+\).*store_wait\(0\)",
    "chunks_reversed": r"3068 of 3068 elements of C are wrong, first C\[0, 0\]",
}

#: Orders as safe as the solution's: {case: [(old, new) edits of the solution]}.
VARIANTS = {
    # The wait before the write of chunk j, then a barrier (two barriers a chunk), and a named barrier of the block.
    "wait_before_the_write": [(WAIT, ""), (WRITE, "        if leader:\n            store_wait_read(2)\n"
                                                   "        cuda.syncthreads()\n" + WRITE)],
    "named_barrier": [*NAMED_BARRIER, (BARRIER, "        named_barrier_sync(1, THREADS)\n")],
    "last_wait_for_the_reads": [(LAST_WAIT, "        store_wait_read(0)\n")],
}


def _grade(path: Path):
    return exercises.grade(exercises.get(NAME), exercises.load(path), say=None, compile=False)


def test_the_solution_passes_and_the_stub_fails():
    exercise = exercises.get(NAME)
    report = exercises.grade(exercise, exercise.solution())
    assert report.passed, report.text()
    # On a GPU the grader compiles the kernel and checks the numbers; the order is the simulator's.
    assert sum("every element right" in line for line in report.lines) == 2, report.text()
    if exercises.SIMULATOR:
        assert sum("every chunk written and fenced before its store" in line for line in report.lines) == 2, \
            report.text()
    stub = exercises.check(NAME, say=lambda line: None)
    assert not stub.passed
    if exercises.SIMULATOR:
        assert "block (0, 0) stored no chunk: no thread called store_tile, so its elements of C were never written" \
            in stub.text(), stub.text()


@SIMULATOR_ONLY
@pytest.mark.parametrize("case", list(MISTAKES))
def test_a_mistake_fails_with_its_message(case, tmp_path):
    report = _grade(planted_file(NAME, case, MISTAKES[case], tmp_path))
    text = report.text()
    assert not report.passed
    assert re.search(SAYS[case], text, re.S), text
    assert "every element right" not in text, text


def test_every_mistake_has_its_message():
    assert set(SAYS) == set(MISTAKES)


@SIMULATOR_ONLY
@pytest.mark.parametrize("case", list(VARIANTS))
def test_a_safe_order_passes(case, tmp_path):
    path = tmp_path / f"{case}.py"
    path.write_text(planted_source(NAME, VARIANTS[case]))
    report = _grade(path)
    assert report.passed, report.text()


def test_the_shapes_are_ragged_with_n_a_multiple_of_four():
    from gemm_steps.course.exercise_tma_store import BLOCK_M, BLOCK_N, CHUNK_ROWS, cases

    first, second = cases()
    for case in (first, second):
        assert case.m % BLOCK_M and case.n % BLOCK_N and case.n % 4 == 0, case
    assert first.grid == (2, 2) and second.grid == (3, 1) and second.m % CHUNK_ROWS, (first, second)


def test_the_exercise_is_listed_after_its_lesson(capsys):
    assert cli.main(["exercise", "list"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.split()[0] == NAME)
    assert line.split()[1:5] == ["lesson", "23_cluster_stream_k_tma_store", "step", "23"], line
