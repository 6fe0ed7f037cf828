"""The graders of the second half's pipeline exercises: ``stream_k`` (lesson 11) and ``mbarrier_ring`` (lesson 16).

Each passes its shipped solution and fails its stub and planted mistakes with the message that names the mistake.
A planted mistake is the solution's source with an edit or two (the tables below, helpers.planted_source), graded like a
learner's file (compiled for a GPU only where the test is about that: the compile check has its own tests).
"""

from __future__ import annotations

import pytest

from gemm_steps.course import exercises
from helpers import planted_source

SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="the ordering checks need the simulator")


def _grade(name: str, source: str, tmp_path, **options):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    exercise = exercises.get(name)
    return exercises.grade(exercise, exercises.load(path), say=None, **options)


def _planted(name: str, tmp_path, *edits, **options):
    return _grade(name, planted_source(name, edits), tmp_path, compile=False, **options)


def _mistake(name: str, case: str) -> str:
    """A wrong solution from the tables below, its docstring saying what is wrong."""
    what, edits = MISTAKES[name][case]
    return planted_source(name, edits, docstring=f"Planted ({name}): {what}")


#: Wrong solutions of stream_k: {case: (what is wrong, [(old, new) edits of the solution])}.
STREAM_K_MISTAKES = {
    'stream_k_flag_before_partial': (
        'the writer raises its flag first, then stores its partial sum.',
        [
            (('            workspace[block * TILE * TILE + thread] = acc\n'
              '            cuda.threadfence()  # our partial sum is visible GPU-wide before the flag is\n'
              "            cuda.syncthreads()  # … every thread's, before thread 0 raises it\n"),
             ''),
            ('        else:\n',
             ('            workspace[block * TILE * TILE + thread] = acc\n'
              '            cuda.threadfence()\n'
              '        else:\n')),
        ]),
    'stream_k_nearest_only': (
        "the owner adds only the nearest block's partial sum: a tile split among three blocks misses one part.",
        [
            ('                    covered = other_begin\n',
             '                    covered = tile_start  # (wrong: as if the nearest block had the rest of the tile)\n'),
        ]),
    'stream_k_partial_added_twice': (
        "the owner adds each other block's partial sum twice.",
        [
            ('                    covered = other_begin\n',
             ('                    acc += workspace[other * TILE * TILE + thread]\n'
              '                    covered = other_begin\n')),
        ]),
    'stream_k_pieces_overlap': (
        "each piece starts at its tile's first k-iteration, not at the share's: k-iterations computed twice.",
        [
            ('        first = max(begin, tile_start)  # this piece: k-iterations first … iteration − 1 of the tile\n',
             "        first = tile_start  # (wrong: the tile's start, even if the share starts later)\n"),
        ]),
    'stream_k_reads_before_the_flag': (
        "the owner adds the other blocks' partial sums without waiting for their flags (the race: right numbers on "
        'the simulator, which runs the writer first).',
        [
            ('                    if thread == 0:\n',
             ('                    acc += workspace[other * TILE * TILE + thread]  # no wait: the partial sum is there, surely\n'
              '                    if thread == 0:\n')),
            (('                        while cuda.atomic.add(flags, other, 0) == 0:\n'
              '                            pass  # spin until block `other` has released its partial sums\n'
              '                        cuda.threadfence()  # acquire: the reads below see what was written before its flag\n'),
             ''),
            (("                    cuda.syncthreads()  # the other threads read after thread 0's fence\n"
              '                    acc += workspace[other * TILE * TILE + thread]\n'),
             ''),
        ]),
    'stream_k_uneven_split': (
        'the last block gets the remainder: shares of 6, 6 and 8 k-iterations (right numbers, every iteration once).',
        [
            ('    return block * iterations // blocks, (block + 1) * iterations // blocks\n',
             ('    share = iterations // blocks\n'
              '    return block * share, iterations if block == blocks - 1 else (block + 1) * share\n')),
        ]),
}


#: Wrong solutions of mbarrier_ring: {case: (what is wrong, [(old, new) edits of the solution])}.
MBARRIER_RING_MISTAKES = {
    'mbarrier_ring_consumer_parity': (
        'the consumers wait on full[s] with the parity of the phase before (the first wait passes at once).',
        [
            ('            mbarrier_wait(full, s, t // STAGES % 2)  # the (t // STAGES)-th fill of stage s has landed\n',
             '            mbarrier_wait(full, s, (t // STAGES + 1) % 2)  # the (t // STAGES)-th fill of stage s has landed\n'),
        ]),
    'mbarrier_ring_expect_tx_bytes': (
        "the producer announces a whole k-tile's bytes for the short last k-tile too.",
        [
            ('            mbarrier_arrive_expect_tx(full, s, rows * n * 4)  # one arrival, and the bytes to wait for\n',
             '            mbarrier_arrive_expect_tx(full, s, BLOCK_K * n * 4)  # one arrival, and the bytes to wait for\n'),
        ]),
    'mbarrier_ring_frees_before_read': (
        'each consumer releases the stage as soon as its data has landed, before reading it.',
        [
            ('            rows = min(BLOCK_K, k_total - t * BLOCK_K)\n',
             ('            mbarrier_arrive(empty, s)  # (wrong: released before it is read)\n'
              '            rows = min(BLOCK_K, k_total - t * BLOCK_K)\n')),
            ('            mbarrier_arrive(empty, s)  # read: the producer may refill it\n',
             ''),
        ]),
    'mbarrier_ring_missing_arrival': (
        "consumer lanes past the last column of C skip their arrival on empty[s]: the producer's wait never ends.",
        [
            ('            mbarrier_arrive(empty, s)  # read: the producer may refill it\n',
             '                mbarrier_arrive(empty, s)  # (wrong: only the lanes with a column arrive)\n'),
        ]),
}

MISTAKES = {"stream_k": STREAM_K_MISTAKES, "mbarrier_ring": MBARRIER_RING_MISTAKES}


# -- stream_k ----------------------------------------------------------------------------------------------------------
@SIMULATOR_ONLY
@pytest.mark.parametrize("case, says", [
    # The race, named: reader, writer, the partial sum's slot, and the missing link.
    ("stream_k_reads_before_the_flag", r"race: block 1 read block 0's partial sum workspace\[\d+\].*"
                                          r"block 1 never waited for flags\[0\]"),
    ("stream_k_flag_before_partial", r"race: block 1 read block 0's partial sum .*block 0 raised flags\[0\] at\n"
                                        r".*\n\s+before its threadIdx=\(\d+, \d+\) wrote that partial sum"),
    # A tile summed twice or never: by the k-iterations' owners, and by a fit of the tile against its products.
    ("stream_k_pieces_overlap", r"k-iteration \d+ \(tile \d+ .*\) was computed by blocks \d+, \d+: that part of "
                                   r"the tile is summed twice"),
    ("stream_k_partial_added_twice", r"tile \(0, 1\) of C \(tile 1\) holds its k-iterations' products with "
                                        r"k-iteration 5 \(block 0's\) twice"),
    ("stream_k_nearest_only", r"tile \(0, 0\) of C \(tile 0\) holds its k-iterations' products with "
                                 r"k-iterations 0–1 \(block 0's\) never"),
    # A split that is not even: the function on its own, and what the kernel did.
    ("stream_k_uneven_split", r"stream_k_share with 3 blocks and 20 k-iterations: the split is not even: block 2 "
                                 r"gets 8 k-iterations and block 0 6(.|\n)*FAIL  .*the split is not even: block 2 "
                                 r"computed 8 k-iterations and block 0 6"),
])
def test_a_stream_k_mistake_fails_with_its_message(case, says, tmp_path):
    import re

    report = _grade("stream_k", _mistake("stream_k", case), tmp_path, compile=False)
    assert not report.passed
    assert re.search(says, report.text(), re.S), report.text()
    assert "every element right" not in report.text().split("FAIL", 1)[1], report.text()


READER_SPIN = ("                        while cuda.atomic.add(flags, other, 0) == 0:\n"
               "                            pass  # spin until block `other` has released its partial sums\n")
READER_FENCE = "                        cuda.threadfence()  # acquire: the reads below see what was written before its flag\n"
WRITER_FENCE = "            cuda.threadfence()  # our partial sum is visible GPU-wide before the flag is\n"
READER_BARRIER = "                    cuda.syncthreads()  # the other threads read after thread 0's fence\n"


@SIMULATOR_ONLY
@pytest.mark.parametrize("edits, says", [
    ([(READER_FENCE, "")], r"race: block 1 read block 0's partial sum .*with no cuda.threadfence\(\) between that "
                           r"read of the flag and this read"),
    ([(WRITER_FENCE, "")], r"race: block 1 read block 0's partial sum .*and raised flags\[0\] at\n.*\n\s+with no "
                           r"cuda.threadfence\(\) between the two"),
    ([(READER_BARRIER, "")], r"race: block 1 read block 0's partial sum .*no cuda.syncthreads\(\) lies between that "
                             r"wait and this read"),
    ([(READER_SPIN, "                        while flags[other] == 0:\n                            pass\n")],
     r"read flags\[0\] with a plain load"),
    ([("                        flags[other] = 0  # reset for the next launch\n", "")],
     r"after the launch flags\[0, 1\] are still raised"),
    # An owner that waits for the block after it: on the simulator that block has not started; stopped at once.
    ([("while cuda.atomic.add(flags, other, 0) == 0:", "while cuda.atomic.add(flags, block + 1, 0) == 0:")],
     r"block 1's threadIdx=\(0, 0\) read flags\[2\] \d+ times and found it 0 every time(.|\n)*block 2 comes after "
     r"block 1"),
    # A writer that stores its partial sum to C as well: two blocks store the tile.
    ([("            if thread == 0:\n                cuda.atomic.exch(flags, block, 1)\n",
       "            if thread == 0:\n                cuda.atomic.exch(flags, block, 1)\n"
       "            if row < m and col < n:\n                c[row, col] = acc\n")],
     r"tile \(0, 1\) of C was stored by blocks 0, 1: only the block that computes a tile's last k-iteration"),
], ids=["reader-no-fence", "writer-no-fence", "reader-no-barrier", "plain-spin", "flags-not-reset",
        "waits-for-a-later-block", "writer-stores-c"])
def test_a_planted_stream_k_mistake_fails_with_its_message(edits, says, tmp_path):
    import re

    report = _planted("stream_k", tmp_path, *edits)
    assert not report.passed
    assert re.search(says, report.text(), re.S), report.text()


def test_stream_k_share_on_its_own():
    from gemm_steps.course.exercise_stream_k import even_shares, share_problem

    for blocks, iterations in ((3, 20), (5, 14), (7, 3), (1, 5)):
        assert share_problem(even_shares(blocks, iterations), blocks, iterations) is None
    assert "belong to no block" in share_problem([(0, 6), (7, 13), (13, 20)], 3, 20)
    assert "belong to blocks 0 and 1" in share_problem([(0, 7), (6, 13), (13, 20)], 3, 20)
    assert "not even" in share_problem([(0, 4), (4, 12), (12, 20)], 3, 20)
    assert "belong to no block" in share_problem([(0, 6), (6, 13), (13, 19)], 3, 20)


@pytest.mark.parametrize("name", ["stream_k", "mbarrier_ring"])
def test_the_solution_passes_and_the_stub_fails(name):
    exercise = exercises.get(name)
    report = exercises.grade(exercise, exercise.solution())
    assert report.passed, report.text()
    # On a GPU stream_k checks the numbers (its protocol checks need the simulator); mbarrier_ring only compiles there
    # (seen on an H200, 2026-11-28: stream_k's solution "every element right" at both shapes)
    on_gpu = {"stream_k": 2, "mbarrier_ring": 0}[name]
    assert sum("every element right" in line for line in report.lines) == (2 if exercises.SIMULATOR else on_gpu), \
        report.text()
    stub = exercises.check(name, say=lambda line: None)
    assert not stub.passed and ("never written" in stub.text() or "never reads shared memory" in stub.text()), \
        stub.text()


# -- mbarrier_ring -----------------------------------------------------------------------------------------------------
@SIMULATOR_ONLY
@pytest.mark.parametrize("case, says", [
    # A wrong parity, with the ring drawn at that moment (one line per stage, the stage marked).
    ("mbarrier_ring_consumer_parity", r"wrong parity: threadIdx.x=\d+ \(consumer warp [12]\) waited on full\[0\] "
                                         r"with parity 1(.|\n)*that phase has parity 0(.|\n)*the ring then \(3 stages"
                                         r"(.|\n)*stage 0: .*full\[0\]: .*◀ full\[0\] waited on with parity 1, "
                                         r"needs 0\n\s+stage 1: (.|\n)*stage 2: "),
    # A missing arrival: the deadlock detector's own message (short limit: no hang), and who never arrived.
    ("mbarrier_ring_missing_arrival", r"a missing arrival — the deadlock detector: threadIdx.x=0 \(the producer\) "
                                         r"waited on empty\[0\](.|\n)*and the (twin said|deadlock detector found): mbarrier 0: phase of parity 0 "
                                         r"did not complete in 5 s \(16 of 64 arrivals(.|\n)*never arrived on "
                                         r"empty\[0\] in this phase: 56–63, 88–95"),
    ("mbarrier_ring_frees_before_read", r"a consumer freed a stage before it read it: threadIdx.x=\d+ \(consumer "
                                           r"warp [12]\) arrived on empty\[\d\] \(released k-tile \d+\) and then "
                                           r"read stage \d"),
    ("mbarrier_ring_expect_tx_bytes", r"expect_tx with the wrong byte count: for k-tile 7 \(fill 2 of stage 1\) the "
                                         r"producer announced 768 bytes on full\[1\](.|\n)*and its copy moves 384"),
])
def test_an_mbarrier_ring_mistake_fails_with_its_message(case, says, tmp_path):
    import re

    report = _grade("mbarrier_ring", _mistake("mbarrier_ring", case), tmp_path, compile=False)
    assert not report.passed
    assert re.search(says, report.text()), report.text()


@SIMULATOR_ONLY
def test_the_producers_parity_is_checked_too(tmp_path):
    report = _planted("mbarrier_ring", tmp_path, ("mbarrier_wait(empty, s, (t // STAGES - 1) % 2)",
                                                  "mbarrier_wait(empty, s, t // STAGES % 2)"))
    assert not report.passed
    assert "wrong parity: threadIdx.x=0 (the producer) waited on empty[0] with parity 1" in report.text(), \
        report.text()


def test_a_missing_arrival_is_reported_at_its_root_whichever_wait_times_out_first(monkeypatch):
    """The producer waits on empty[0] (consumers skipped their arrival); the consumers wait on full[0] for the fill it
    never makes. Under load the consumer's wait may time out first (a clean-clone CI run, 2026-11-28, reported
    'consumer warp 2 waited on full[0]'): the report still names the producer's wait on empty[0] and its missing
    arrivals."""
    import threading
    from types import SimpleNamespace

    from gemm_steps.course import exercise_mbarrier_ring as ring

    monkeypatch.setattr(threading, "current_thread", lambda: SimpleNamespace(blockIdx=SimpleNamespace(x=0),
                                                                             thread_id=91))
    watch = ring.Watch(kernel_file=__file__)
    watch.barriers[("empty", 0)] = SimpleNamespace(completed=0, pending=16, expected=64, bytes_pending=0)
    watch.barriers[("full", 0)] = SimpleNamespace(completed=1, pending=1, expected=1, bytes_pending=0)
    watch.consumers |= set(range(32, 96))
    watch.arrived[(0, "empty", 0, 0)] = set(range(32, 56)) | set(range(64, 88))
    watch.waiting[(0, 0)] = ("empty", 0, 0, 1)  # the producer, stuck
    watch.waiting[(0, 91)] = ("full", 0, 1, 1)
    ring._deadlock(watch, "full", 0, 91, 1, 1, "mbarrier 0: phase of parity 1 did not complete in 5 s (…)")
    text = watch.violations[0].text
    assert "threadIdx.x=0 (the producer) waited on empty[0] with parity 0" in text, text
    assert "deadlock detector found: mbarrier 0: phase of parity 0" in text and "16 of 64 arrivals" in text, text
    assert "never arrived on empty[0] in this phase: 56–63, 88–95" in text, text
