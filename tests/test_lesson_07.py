"""Lesson 7's helpers (gemm_steps/course/lesson_07.py) on the shipped files: fast, no compiling."""

import re

import gemm_steps
from gemm_steps.course import lesson_07
from gemm_steps.course.timings import load_shipped


def test_sweep_findings_compare_block_k_and_the_hint_with_everything_else_equal():
    sweep = load_shipped("tuning-unrolled-*.json", "test")
    assert sweep
    text = lesson_07.sweep_findings(sweep, gemm_steps.get_step("unrolled"))
    assert "`BLOCK_K` 8 against 16" in text and "The occupancy hint" in text
    records = lesson_07.sweep_records(sweep)
    k8 = lesson_07._find(records, BLOCK_M=128, BLOCK_N=128, THREAD_M=8, THREAD_N=8, BLOCK_K=8, MIN_BLOCKS_PER_SM=0)
    k16 = lesson_07._find(records, BLOCK_M=128, BLOCK_N=128, THREAD_M=8, THREAD_N=8, BLOCK_K=16, MIN_BLOCKS_PER_SM=0)
    hint = lesson_07._find(records, BLOCK_M=128, BLOCK_N=128, THREAD_M=8, THREAD_N=8, BLOCK_K=16, MIN_BLOCKS_PER_SM=2)
    assert k8 is not k16 and k16 is not hint
    assert f"{k8['median_ms']:.3f} ms against {k16['median_ms']:.3f} ms" in text
    assert f"{k16['median_ms']:.3f} ms → {hint['median_ms']:.3f} ms" in text


def test_first_call_summary_reads_the_run_and_its_log():
    text = lesson_07.first_call_summary("unrolled")
    assert "first-call-nvidia-h100.json" in text
    assert re.search(r"\*\*[\d.]+ s with empty caches\*\*", text)
    assert "compiled one kernel" in text


def test_shipped_compile_times_are_labelled_as_before_the_patches():
    text = lesson_07.shipped_compile_times()
    assert "before these patches" in text and "| unrolled |" in text


def test_compile_profile_table_groups_and_totals():
    groups = {"SSA reconstruction": 0.2, "lowering to LLVM IR": 0.6, "NVVM: LLVM IR → PTX": 0.2}
    profile = {"kernel": "x_fast", "with": {"groups": groups, "total_s": 1.0},
               "without": {"groups": {**groups, "SSA reconstruction": 3.0}, "total_s": 3.8},
               "ptxas": "nvJitLink 13.5", "ptxas_s": 0.1, "same_ptx": True}
    table = lesson_07.compile_profile_table(profile)._repr_markdown_()
    assert "| SSA reconstruction | 0.20 s | 20% | 3.00 s |" in table
    assert "**1.00 s**" in table and "**3.80 s**" in table
    text = lesson_07.compile_profile_text(profile)
    assert "the same code either way" in text and "SSA reconstruction (2.8 s)" in text
