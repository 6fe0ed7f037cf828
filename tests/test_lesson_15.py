"""Lesson 15's helpers (gemm_steps/course/lesson_15.py) on made-up data: why no flush, the registers, the prediction
from the swizzled experiment build, which timings are shown, the table, the verdict against the TF32 target, the
accuracy against cuBLAS TF32 — and lesson 16's line on step 15."""

from __future__ import annotations

import pytest

import gemm_steps
from gemm_steps.course import lesson_14, lesson_15, lesson_16

SIZES = (2048, 4096, 8192)


def _record(step, size, tflops, error):
    return {"step": step, "M": size, "N": size, "K": size, "tflops": tflops, "median_ms": 2.0 * size ** 3 / tflops / 1e9,
            "pct_of_cublas": 100 * tflops / 50.0, "sampled_rel_error_fp64": error}


def _results(step15=None, step12=145.0, path="results/bench-fake.json"):
    """A fake benchmark: cuBLAS SGEMM 50, cuBLAS TF32 350, step 12 at ``step12`` and step 15 at ``step15`` TFLOPS
    (a number, or {size: number}) if given."""
    records = []
    for s in SIZES:
        records += [_record("cublas", s, 50.0, 1e-6), _record("cublas_tf32", s, 350.0, 3e-4),
                    _record("tensor_cores", s, step12, 3e-4)]
        if step15 is not None:
            records.append(_record("warpgroup_tf32", s, step15[s] if isinstance(step15, dict) else step15, 5e-4))
    return {"environment": {"gpu": "Fake GPU", "date": "2026-01-01"}, "records": records, "path": path}


def _swizzled_run(ratio=2.0):
    """The swizzle experiment: step 12 at 140, the swizzled TF32 build at ``ratio`` × that."""
    records = []
    for s in SIZES:
        records += [_record("tensor_cores", s, 140.0, 3e-4),
                    _record(lesson_14.SWIZZLED_TF32_BUILD, s, ratio * 140.0, 5e-4)]
    return {"environment": {"gpu": "Fake GPU", "date": "2026-01-01"}, "records": records,
            "path": "experiments/results/fake.json"}


def test_the_error_budget_compares_tf32_inputs_with_the_measured_truncation():
    run = {"environment": {}, "path": "experiments/results/fake.json",
           "records": [_record(lesson_14.NO_FLUSH_BUILD, 4096, 60.0, 3e-5), _record(lesson_14.NO_FLUSH_BUILD, 8192, 60.0, 6e-5),
                       _record("tensor_cores", 8192, 150.0, 3e-4)]}
    text = lesson_15.error_budget(run)
    assert "2^-11 = 4.9e-04" in text and "**6.0e-05** at 8192³" in text and "0.20× TF32's own error" in text
    assert "adds about 2 %" in text  # hypot(6e-5, 3e-4) / 3e-4 = 1.0198
    assert "Measured" not in lesson_15.error_budget(None)


def test_registers_are_counted_from_the_kernels_and_configs():
    text = lesson_15.registers_text(gemm_steps.get_step("warpgroup_mma"), gemm_steps.get_step("warpgroup_tf32"))
    assert "**3 sets of 64**" in text and "192 floats" in text
    assert "**1 set of 128** at 256×128: 128 floats — fewer registers" in text and "2× as tall" in text


def test_the_benchmark_is_shown_when_it_has_step_15_and_the_steps_own_run_otherwise():
    with_step, run = _results(step15=280.0), _results(step15=270.0, path="experiments/results/own.json")
    assert lesson_15.shown_timings(with_step, run) == (with_step, "")
    shown, note = lesson_15.shown_timings(_results(), run)
    assert shown is run and "not in the course benchmark yet" in note and "own.json" in note
    assert lesson_15.shown_timings(_results(), None)[0] is None


def test_the_prediction_carries_the_builds_ratio_to_step_12_over():
    text = lesson_15.prediction(_results(), _swizzled_run(ratio=2.0))
    assert "**2.00× step 12**, 290 TFLOPS" in text and "(the build ran 280.0)" in text and "— above" in text
    assert "— not above" in lesson_15.prediction(_results(), _swizzled_run(ratio=1.0))
    assert "No prediction" in lesson_15.prediction(_results(), None)


def test_the_verdict_is_computed_against_the_target_and_the_prediction():
    met = lesson_15.verdict(_results(step15=290.0), _swizzled_run(ratio=2.0))
    assert "is met**" in met and "(as predicted)" in met and "2.00× step 12" in met and "83 % of cuBLAS TF32" in met
    assert "as step 12 alone did not quite do" in met
    above = lesson_15.verdict(_results(step15=350.0), _swizzled_run(ratio=2.0))
    assert "above the predicted 290 by 21 %" in above
    short = _results(step15={2048: 300.0, 4096: 149.0, 8192: 300.0})
    assert lesson_15.target_check(short)["met"] is False and "is not met**" in lesson_15.verdict(short, None)
    assert lesson_15.target_check(_results()) is None and "No verdict" in lesson_15.verdict(_results(), None)


def test_the_table_and_figure_show_a_missing_step_as_a_dash():
    table = lesson_15.speed_table(_results())
    assert "| step 15, TF32 (wgmma) | — | — | — | — | — |" in table
    assert "| 290.0 |" in lesson_15.speed_table(_results(step15=290.0))
    assert lesson_15.speed_figure(_results()).axes


def test_truncating_a_costs_accuracy_against_rounding_it():
    check = lesson_15.truncation_check(k=256)
    assert check["truncated"] > 1.3 * check["rounded"]
    text = lesson_15.accuracy_text(_results(step15=290.0), check)
    assert "5.0e-04 against cuBLAS TF32's 3.0e-04 (1.67×)" in text and "*truncates* A" in text


def test_what_is_left_is_cublas_tf32_over_step_15():
    assert "**1.25 / 1.25×** faster at 4096³ / 8192³" in lesson_15.what_is_left(_results(step15=280.0))
    assert "nothing to compare" in lesson_15.what_is_left(_results())


def test_lesson_16_reports_step_15_against_the_tf32_target_only_when_it_is_there():
    assert "not in this results file" in lesson_16.tf32_step_summary(_results())
    assert "**290 TFLOPS**" in lesson_16.tf32_step_summary(_results(step15=290.0))
    assert "met at both sizes" in lesson_16.tf32_step_summary(_results(step15=290.0))
    assert "not met at both sizes" in lesson_16.tf32_step_summary(_results(step15={2048: 300.0, 4096: 140.0,
                                                                                   8192: 300.0}))


@pytest.mark.parametrize("step15", [None, 290.0])
def test_lesson_16s_summary_keeps_step_12_and_adds_step_15(step15):
    results = _results(step15=step15)
    for r in list(results["records"]):
        if r["step"] == "tensor_cores":
            results["records"].append({**_record("three_tf32", r["M"], 60.0, 5e-7)})
    text = lesson_16.tensor_core_summary(results)
    assert "step 12 (TF32) **145 TFLOPS**" in text and "Step 15 (TF32 on `wgmma`)" in text


def test_lesson_16_quotes_the_sizes_of_the_steps_the_benchmark_has():
    assert lesson_16.steps_in(_results()) == ["tensor_cores"]
    assert lesson_16.steps_in(_results(step15=290.0)) == ["tensor_cores", "warpgroup_tf32"]
