"""Lesson 7's helpers (gemm_steps/course/lesson_07.py) on the shipped files: fast, no compiling."""

from dataclasses import replace

import pytest

import gemm_steps
from gemm_steps.course import lesson_07
from gemm_steps.course.timings import load_shipped


def test_sweep_findings_compare_block_k_and_the_hint_with_everything_else_equal():
    from gemm_steps.harness import tuning

    sweep = load_shipped("tuning-unrolled-*.json", "test")
    assert sweep
    findings = lesson_07.sweep_findings(sweep, gemm_steps.get_step("unrolled"))
    found = findings.numbers
    records = lesson_07.sweep_records(sweep)
    k8 = lesson_07._find(records, BLOCK_M=128, BLOCK_N=128, THREAD_M=8, THREAD_N=8, BLOCK_K=8, MIN_BLOCKS_PER_SM=0)
    k16 = lesson_07._find(records, BLOCK_M=128, BLOCK_N=128, THREAD_M=8, THREAD_N=8, BLOCK_K=16, MIN_BLOCKS_PER_SM=0)
    hint = lesson_07._find(records, BLOCK_M=128, BLOCK_N=128, THREAD_M=8, THREAD_N=8, BLOCK_K=16, MIN_BLOCKS_PER_SM=2)
    assert k8 is not k16 and k16 is not hint
    assert found["BLOCK_K 8, no hint (ms)"] == k8["median_ms"] and found["BLOCK_K 16, no hint (ms)"] == k16["median_ms"]
    assert found["the hint's gain"] == pytest.approx(k16["median_ms"] / hint["median_ms"] - 1)
    assert found["BLOCK_K 8 against 16: beyond the noise band"] == (
        abs(k8["median_ms"] / k16["median_ms"] - 1) > tuning.NOISE)
    assert found["**the rule picks**"] == lesson_07.config_label(tuning.choose_best(records)["config"])
    first = gemm_steps.get_step("unrolled").module.SEARCH_SPACE[0]
    assert found["the search space's first is the rule's pick"] == lesson_07.same_config(
        lesson_07.tile_fields(first), tuning.choose_best(records)["config"])
    assert f"{k8['median_ms']:.2f}" in findings.table


def test_first_call_reads_the_run_and_its_log():
    found = lesson_07.first_call("unrolled")
    assert found["file"].endswith(lesson_07.FIRST_CALL_FILE)
    assert found["first call, empty caches (s)"] > found["first call, on-disk cache (s)"] > 0
    assert found["kernel compiled"] and found["its compile (s)"] > 0


def test_shipped_compile_times_read_the_file():
    import json

    from gemm_steps.course.timings import shipped_file

    found = lesson_07.shipped_compile_times()
    data = json.loads(shipped_file("compile-times-nvidia-h200.json").read_text())
    rows = {r["step"]: r for r in found.table.rows}
    assert list(rows) == list(data["compile_times"])
    assert rows["unrolled"]["first call, empty caches"] == data["compile_times"]["unrolled"]["cold_s"]
    assert data["environment"]["gpu"] in found.measured


def test_first_call_table_has_a_row_per_step_and_size():
    found = lesson_07.load_first_calls()
    rows = lesson_07.first_call_table(found[1], ["unrolled"]).rows
    assert rows and all(r["what"] == "unrolled" for r in rows)
    cold = next(r for r in found[1] if r["what"] == "unrolled" and r["cache"] == "cold")
    assert rows[0]["first call, empty caches"] == cold["first_s"]


def test_compile_profile_table_groups_and_totals():
    from gemm_steps.course import compile_profile

    groups = {"SSA reconstruction": 0.2, "lowering to LLVM IR": 0.6, "NVVM: LLVM IR → PTX": 0.2}
    profile = {"kernel": "x_fast", "with": {"groups": groups, "total_s": 1.0},
               "without": {"groups": {**groups, "SSA reconstruction": 3.0}, "total_s": 3.8},
               "ptxas": "nvJitLink 13.5", "ptxas_s": 0.1, "same_ptx": True}
    table = compile_profile.compile_profile_table(profile)._repr_markdown_()
    assert "| SSA reconstruction | 0.20 s | 20% | 3.00 s |" in table
    assert "**1.00 s**" in table and "**3.80 s**" in table and "| yes |" in table


def test_prediction_and_verdict_from_a_made_up_compile():
    """The issue model's arithmetic on stand-in numbers: the ratio of ceilings, and the verdict's outcome bands."""
    results = {"environment": {"gpu": "x", "sm_count": 1, "max_sm_clock_mhz": 1000, "fp32_cores_per_sm": 128},
               "records": [{"step": s, "M": 64, "N": 64, "K": 64, "median_ms": ms, "tflops": tf, "pct_of_cublas": 1.0}
                           for s, ms, tf in (("vectorized", 2.0, 1.0), ("unrolled", 1.0, 2.0), ("cublas", 0.5, 4.0))]}
    predicted = lesson_07.Prediction(per_fma={}, issue={"vectorized": 4.0, "unrolled": 8.0}, size=(64, 64, 64),
                                     before=results["records"][0], share=0.25, ratio=2.0,
                                     names=("vectorized", "unrolled"), table=None)
    assert lesson_07.verdict(results, predicted).outcome == "as predicted"
    assert lesson_07.verdict(results, replace(predicted, ratio=2.2)).outcome == "most of it"
    assert lesson_07.verdict(results, replace(predicted, ratio=3.0)).outcome == "less"
