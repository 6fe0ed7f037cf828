"""The graders of the warpgroup exercises: ``wgmma`` (lessons 14–15) and ``warp_specialized`` (lesson 17).

Each passes its shipped solution and fails its stub and planted mistakes with the message that names the mistake.
A planted mistake is the solution's source with an edit or two (the tables below, helpers.planted_source), graded like a
learner's file — on the simulator without the GPU-mode compile where the test is about what the watched twins saw,
with it where the test is about the PTX (the wgmma rule the compiled code must keep).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from gemm_steps.course import exercises
from helpers import planted_file, planted_source

SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="the watched twins are the simulator's")


@functools.lru_cache(maxsize=None)
def _needs_nvvm():
    from gemm_steps.harness import gpu_mode

    try:
        return gpu_mode.call("gemm_steps.harness.ptx:nvvm_version") is None
    except Exception:
        return True


NEEDS_NVVM = pytest.mark.skipif(not exercises.SIMULATOR or _needs_nvvm(),
                                reason="compiling for a GPU from the simulator needs NVVM (numba-cuda[cu13])")


def _grade_file(name: str, path: Path, **options):
    return exercises.grade(exercises.get(name), exercises.load(path), say=None, **options)


def _planted(name: str, tmp_path, *edits, **options):
    path = tmp_path / f"{name}.py"
    path.write_text(planted_source(name, edits))
    return _grade_file(name, path, **options)


def _mistake(name: str, case: str, tmp_path) -> Path:
    """A wrong solution from the tables below, written as ``<case>.py`` (the name the grader's messages show), its
    docstring saying what is wrong."""
    return planted_file(name, case, MISTAKES[name][case], tmp_path)


#: Wrong solutions of wgmma: {case: (what is wrong, [(old, new) edits of the solution])}.
WGMMA_MISTAKES = {
    'wgmma_contiguous_lbo': (
        "a learner's wgmma whose LBO takes the core matrices adjacent in K as contiguous (128 bytes).",
        [
            ('LEADING_BYTES = 256  # between core matrices adjacent in K: b_offset(n, k + 4) − b_offset(n, k) = 64 floats\n',
             'LEADING_BYTES = 128  # between core matrices adjacent in K: b_offset(n, k + 4) − b_offset(n, k) = 64 floats\n'),
        ]),
    'wgmma_no_fence': (
        "a learner's wgmma with no warpgroup_fence() before it.",
        [
            ('    warpgroup_fence()  # every register the wgmma reads is written above; none below\n',
             ''),
        ]),
    'wgmma_no_wait': (
        "a learner's wgmma whose accumulators are stored with no wait.",
        [
            ('    acc = warpgroup_wait_all(acc)  # the product has landed: only now read the accumulators\n',
             ''),
        ]),
    'wgmma_swapped_strides': (
        "a learner's wgmma with LBO and SBO swapped (the grader names both fields).",
        [
            (('LEADING_BYTES = 256  # between core matrices adjacent in K: b_offset(n, k + 4) − b_offset(n, k) = 64 floats\n'
              'STRIDE_BYTES = 128  # between core matrices adjacent in N: b_offset(n + 8, k) − b_offset(n, k) = 32 floats\n'),
             ('LEADING_BYTES = 128  # between core matrices adjacent in K: b_offset(n, k + 4) − b_offset(n, k) = 64 floats\n'
              'STRIDE_BYTES = 256  # between core matrices adjacent in N: b_offset(n + 8, k) − b_offset(n, k) = 32 floats\n')),
        ]),
    'wgmma_swizzled_descriptor': (
        "a learner's wgmma that describes the no-swizzle tile with the 128-byte swizzle descriptor.",
        [
            ('from gemm_steps.toolkit.warpgroup_ops import (fence_proxy_async, matrix_descriptor, operand_bits, shared_address,\n',
             ('from gemm_steps.toolkit.warpgroup_ops import swizzled_descriptor\n'
              'from gemm_steps.toolkit.warpgroup_ops import (fence_proxy_async, matrix_descriptor, operand_bits, shared_address,\n')),
            ('    return matrix_descriptor(shared_address(tile, 0), LEADING_BYTES, STRIDE_BYTES)\n',
             '    return swizzled_descriptor(shared_address(tile, 0))\n'),
        ]),
    'wgmma_wait_before_commit': (
        "a learner's wgmma that waits before it commits the group.",
        [
            ('    warpgroup_commit()\n',
             ('    acc = warpgroup_wait_all(acc)\n'
              '    warpgroup_commit()\n')),
            ('    acc = warpgroup_wait_all(acc)  # the product has landed: only now read the accumulators\n',
             ''),
        ]),
    'wgmma_wait_result_unused': (
        "a learner's wgmma that waits but stores the accumulators that did not pass through the wait.",
        [
            ('    acc = warpgroup_wait_all(acc)  # the product has landed: only now read the accumulators\n',
             '    warpgroup_wait_all(acc)\n'),
        ]),
    'wgmma_wait_too_early': (
        "a learner's wgmma whose wait comes before the wgmma.",
        [
            ('    warpgroup_fence()  # every register the wgmma reads is written above; none below\n',
             ('    acc = warpgroup_wait_all(acc)\n'
              '    warpgroup_fence()  # every register the wgmma reads is written above; none below\n')),
            ('    acc = warpgroup_wait_all(acc)  # the product has landed: only now read the accumulators\n',
             ''),
        ]),
    'wgmma_write_after_fence': (
        "a learner's wgmma whose A fragments are turned into bits after the fence.",
        [
            ('    a0, a1, a2, a3 = operand_bits(x0), operand_bits(x1), operand_bits(x2), operand_bits(x3)  # before the fence\n',
             ''),
            ('    warpgroup_fence()  # every register the wgmma reads is written above; none below\n',
             ('    warpgroup_fence()\n'
              '    a0, a1, a2, a3 = operand_bits(x0), operand_bits(x1), operand_bits(x2), operand_bits(x3)\n')),
        ]),
}


#: Wrong solutions of warp_specialized: {case: (what is wrong, [(old, new) edits of the solution])}.
WARP_SPECIALIZED_MISTAKES = {
    'warp_specialized_consumer_waits_on_empty': (
        'consumers that wait on the empty barrier instead of the full one.',
        [
            ("            mbarrier_wait(barriers, FULL + t % STAGES, (t // STAGES) % 2)  # k-tile t's bytes have landed\n",
             '            mbarrier_wait(barriers, EMPTY + t % STAGES, (t // STAGES) % 2)\n'),
        ]),
    'warp_specialized_producer_multiplies': (
        'a producer warpgroup that also multiplies.',
        [
            ('    else:  # a consumer: takes the registers; waits for data, multiplies, releases the stage\n',
             '    else:\n'),
            (('        acc = fresh_accumulators()\n'
              '        for t in range(K_TILES):\n'
              "            mbarrier_wait(barriers, FULL + t % STAGES, (t // STAGES) % 2)  # k-tile t's bytes have landed\n"
              '            acc = multiply(tiles, a, t, acc, warpgroup, warp, lane)\n'
              '            if lane == 0:\n'
              '                mbarrier_arrive(barriers, EMPTY + t % STAGES)  # its wgmma is done: the stage may be refilled\n'
              '        store(c, acc, warpgroup, warp, lane)\n'),
             ("    # Every warpgroup multiplies: the producer's has nothing else to do once its copies are out.\n"
              '    rows = warpgroup % CONSUMERS\n'
              '    acc = fresh_accumulators()\n'
              '    for t in range(K_TILES):\n'
              '        mbarrier_wait(barriers, FULL + t % STAGES, (t // STAGES) % 2)\n'
              '        acc = multiply(tiles, a, t, acc, rows, warp, lane)\n'
              '        if lane == 0:\n'
              '            mbarrier_arrive(barriers, EMPTY + t % STAGES)\n'
              '    store(c, acc, rows, warp, lane)\n')),
        ]),
    'warp_specialized_registers_overflow': (
        "register counts that fit the SM's 65,536 but not the block's pool of 384 × 168.",
        [
            (('PRODUCER_REGISTERS = 40  # setmaxnreg.dec: the producer only issues copies\n'
              'CONSUMER_REGISTERS = 232  # setmaxnreg.inc: 128 × 40 + 256 × 232 = 64,512 — the whole pool, no more\n'),
             ('PRODUCER_REGISTERS = 32  # setmaxnreg.dec: the producer only issues copies\n'
              'CONSUMER_REGISTERS = 240  # setmaxnreg.inc: 128 × 40 + 256 × 232 = 64,512 — the whole pool, no more\n')),
        ]),
}

MISTAKES = {"wgmma": WGMMA_MISTAKES, "warp_specialized": WARP_SPECIALIZED_MISTAKES}


@pytest.mark.parametrize("name", ["wgmma", "warp_specialized"])
def test_the_solution_passes_and_says_what_it_checked(name):
    report = exercises.grade(exercises.get(name), exercises.get(name).solution())
    assert report.passed, report.text()
    assert "every element right" in report.text()
    if exercises.SIMULATOR:
        assert ("the descriptor's fields" if name == "wgmma" else "within the block's pool") in report.text()
        if not _needs_nvvm():
            assert "compiles for a GPU (NVVM, compute capability 9.0)" in report.text(), report.text()


@SIMULATOR_ONLY
@pytest.mark.parametrize("name, says", [
    ("wgmma", r"the warpgroup never called wgmma_tf32, and 1024 of 1024 elements of C were never written"),
    ("warp_specialized", r"PRODUCER_REGISTERS = 0: setmaxnreg takes 24 to 256 registers a thread"),
])
def test_the_stub_fails_with_its_first_missing_piece(name, says):
    report = exercises.grade(exercises.get(name), exercises.load(exercises.get(name).file), say=None, compile=False)
    assert not report.passed
    assert re.search(says, report.text()), report.text()


# -- wgmma: the simulator's watched twins ------------------------------------------------------------------------------
@SIMULATOR_ONLY
@pytest.mark.parametrize("case, says", [
    # A wrong stride: which field, what it holds, what the layout needs.
    ("wgmma_swapped_strides", r"has its two strides swapped: leading byte offset \(LBO, bits 16–29\) 128 "
                                 r"bytes and stride byte offset \(SBO, bits 32–45\) 256; this tile needs LBO = 256"),
    ("wgmma_contiguous_lbo", r"has a leading byte offset \(LBO, bits 16–29\) of 128 bytes; this tile's "
                                r"layout needs 256: the distance between core matrices adjacent in K"),
    ("wgmma_swizzled_descriptor", r"has layout type 1 \(128-byte swizzle, bits 62–63\); B's tile is stored "
                                     r"with no swizzle \(type 0\)"),
    # The fence: missing, or a register written after it.
    ("wgmma_no_fence", r"thread 0 issued a wgmma with no warpgroup_fence\(\) before it, at\n.*line 6\d of "
                          r"wgmma_no_fence.py: acc = wgmma_tf32.*\n\s+the wgmma.fence is missing"),
    ("wgmma_write_after_fence", r"thread 0 wrote a register the wgmma reads \(operand_bits\) after the "
                                   r"warpgroup_fence\(\) and before the wgmma, at\n.*a0, a1, a2, a3 = operand_bits"),
    # The wait: none, too early, before the commit, its result not read.
    ("wgmma_no_wait", r"read the accumulators of the wgmma at .*\n\s+before a wait retired it, at\n.*= acc\[v\]\n"
                         r"\s+no wait comes between the wgmma and that read"),
    ("wgmma_wait_too_early", r"no wait comes between the wgmma and that read: the last wait before it, at line \d+ "
                                r"of wgmma_wait_too_early.py: acc = warpgroup_wait_all\(acc\)\n\s+comes before the "
                                r"wgmma, with nothing to wait for yet"),
    ("wgmma_wait_before_commit", r"comes before warpgroup_commit\(\) \(at line \d+ of wgmma_wait_before_commit.py: "
                                    r"warpgroup_commit\(\)\): a wait counts committed groups"),
    ("wgmma_wait_result_unused", r"retired it, but what was read is not what came back from the wait: acc = "
                                    r"warpgroup_wait_all\(acc\)"),
])
def test_a_wgmma_mistake_fails_with_its_message(case, says, tmp_path):
    report = _grade_file("wgmma", _mistake("wgmma", case, tmp_path), compile=False)
    assert not report.passed
    assert re.search(says, report.text()), report.text()


@SIMULATOR_ONLY
def test_wait_but_one_leaves_the_newest_group_running(tmp_path):
    report = _planted("wgmma", tmp_path, ("acc = warpgroup_wait_all(acc)  # the product",
                                          "acc = warpgroup_wait_but_one(acc)  # the product"),
                      ("warpgroup_wait_all, wgmma_tf32,", "warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,"),
                      compile=False)
    assert not report.passed
    assert "is warpgroup_wait_but_one: it leaves the newest group — this wgmma's — running" in report.text()


@SIMULATOR_ONLY
def test_the_twins_are_put_back_after_grading(tmp_path):
    from gemm_steps.toolkit import mbarrier_ops, warpgroup_ops

    module = exercises.load(_mistake("wgmma", "wgmma_no_wait", tmp_path))
    before = (warpgroup_ops.wgmma_tf32, warpgroup_ops.warpgroup_fence, module.wgmma_tf32, mbarrier_ops.mbarrier_wait,
              mbarrier_ops.SIMULATOR_WAIT_LIMIT_S)
    assert not exercises.grade(exercises.get("wgmma"), module, compile=False).passed
    assert not _planted("warp_specialized", tmp_path, ("registers_raise_to(CONSUMER_REGISTERS)",
                                                      "registers_raise_to(240)"), compile=False).passed
    assert (warpgroup_ops.wgmma_tf32, warpgroup_ops.warpgroup_fence, module.wgmma_tf32, mbarrier_ops.mbarrier_wait,
            mbarrier_ops.SIMULATOR_WAIT_LIMIT_S) == before


# -- wgmma: the PTX of the GPU-mode compile ----------------------------------------------------------------------------
@NEEDS_NVVM
@pytest.mark.parametrize("case, says", [
    ("wgmma_no_fence", r"compiled code issues a wgmma with no wgmma.fence before it \(PTX line \d+: "
                          r"wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 .*warpgroup_fence\(\) is missing"),
    ("wgmma_write_after_fence", r"compiled code writes %r\d+, a register the wgmma reads, between the wgmma.fence "
                                   r"and the wgmma \(PTX line \d+: mov.b32 %r\d+, %f\d+;\)"),
])
def test_the_compiled_code_keeps_the_wgmma_rule(case, says, tmp_path):
    report = _grade_file("wgmma", _mistake("wgmma", case, tmp_path))
    assert not report.passed
    assert re.search(says, report.text()), report.text()


@NEEDS_NVVM
def test_zeros_made_before_the_fence_are_written_after_it(tmp_path):
    """zero_accumulators gives constants, which the compiler writes where the wgmma uses them — after the fence."""
    report = _planted("wgmma", tmp_path, ("    acc = fresh_accumulators()\n",
                                          "    acc = zero_accumulators(ACCUMULATORS)\n"))
    assert not report.passed
    assert "a register the wgmma reads, between the wgmma.fence and the wgmma" in report.text(), report.text()
    assert "is a constant: the compiler writes a constant into a register where it is used" in report.text()


# -- warp_specialized --------------------------------------------------------------------------------------------------
@SIMULATOR_ONLY
@pytest.mark.parametrize("case, says", [
    ("warp_specialized_producer_multiplies", r"the producer warpgroup \(threads 256–383\) issued a wgmma \(thread "
                                                r"\d+, at line \d+ of .*: acc = wgmma_tf32.*\): the producer also "
                                                r"multiplies"),
    ("warp_specialized_registers_overflow", r"PRODUCER_REGISTERS = 32, CONSUMER_REGISTERS = 240: setmaxnreg: the "
                                               r"roles ask for 128 × 32 \+ 256 × 240 = 65,536 registers, but the "
                                               r"block's pool holds 384 × 168 = 64,512"),
    ("warp_specialized_consumer_waits_on_empty", r"consumer warpgroup 0 \(threads 0–127\) waited on empty\[0\] "
                                                    r"with parity 0 \(thread 0, its wait number 1, at line \d+ "
                                                    r".*\) — and that wait never completed: before k-tile 0 a "
                                                    r"consumer waits on full\[0\](.|\n)*MbarrierTimeout: .*did not "
                                                    r"complete in 6 s"),
])
def test_a_warp_specialized_mistake_fails_with_its_message(case, says, tmp_path):
    report = _grade_file("warp_specialized", _mistake("warp_specialized", case, tmp_path), compile=False)
    assert not report.passed
    assert re.search(says, report.text()), report.text()


@SIMULATOR_ONLY
def test_the_counts_asked_at_run_time_are_checked_too(tmp_path):
    """Constants that fit, a literal that does not: the grader checks what the warpgroups asked setmaxnreg for."""
    report = _planted("warp_specialized", tmp_path,
                      ("registers_raise_to(CONSUMER_REGISTERS)", "registers_raise_to(240)"), compile=False)
    assert not report.passed
    assert ("the warpgroups asked setmaxnreg for 40 (producer), 240 (consumer 0), 240 (consumer 1): setmaxnreg: the "
            "roles ask for 128 × 40 + 128 × 240 + 128 × 240 = 66,560 registers") in report.text(), report.text()


@SIMULATOR_ONLY
def test_a_wait_on_the_wrong_full_barrier_is_named_even_when_it_completes(tmp_path):
    """full[1] instead of full[0]: that first wait completes (the producer fills stage 1 soon after; a later wait may
    not, as the threads run), and the wrong barrier is named at it."""
    report = _planted("warp_specialized", tmp_path,
                      ("mbarrier_wait(barriers, FULL + t % STAGES, (t // STAGES) % 2)",
                       "mbarrier_wait(barriers, FULL + (t + 1) % STAGES, (t // STAGES) % 2)"), compile=False)
    assert not report.passed
    assert "waited on full[1] with parity 0 (thread 0, its wait number 1" in report.text(), report.text()
    assert "before k-tile 0 a consumer waits on full[0]" in report.text()
    assert "never completed" not in report.text()
