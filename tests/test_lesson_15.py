"""Lesson 15's helpers (gemm_steps/course/lesson_15.py) on made-up data: why no flush, the registers, the prediction
from the swizzled experiment build, which timings are shown, the table, the verdict against the TF32 target, the
accuracy against cuBLAS TF32 — and lesson 18's line on step 15."""

from __future__ import annotations

import pytest

import gemm_steps
from cell_count import MAX_CELLS, lesson_cells
from gemm_steps.course import lesson_15, lesson_25, timings

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
                    _record(timings.STEP15_BUILD, s, ratio * 140.0, 5e-4)]
    return {"environment": {"gpu": "Fake GPU", "date": "2026-01-01"}, "records": records,
            "path": "experiments/results/fake.json"}


def test_the_error_budget_compares_tf32_inputs_with_the_measured_accumulator():
    run = {"environment": {}, "path": "experiments/results/fake.json",
           "records": [_record(timings.NO_FLUSH_BUILD, 4096, 60.0, 3e-5),
                       _record(timings.NO_FLUSH_BUILD, 8192, 60.0, 6e-5),
                       _record("tensor_cores", 8192, 150.0, 3e-4)]}
    b = lesson_15.error_budget(run)
    assert b.u == 2.0 ** -11 and b.size == 8192 and b.accumulator == 6e-5 and b.step12 == 3e-4
    assert b.combined == pytest.approx(0.0198, abs=1e-4)  # hypot(6e-5, 3e-4) / 3e-4 - 1
    assert lesson_15.error_budget(None).accumulator is None


def test_registers_are_counted_from_the_kernels_and_configs():
    r = lesson_15.registers(gemm_steps.get_step("warpgroup_mma"), gemm_steps.get_step("warpgroup_tf32"))
    assert (r[14].sets, r[14].per_set, r[14].floats) == (3, 64, 192)
    assert (r[15].sets, r[15].per_set, r[15].tile) == (1, 128, (256, 128)) and r[15].reuse > r[14].reuse


def test_the_benchmark_is_shown_when_it_has_step_15_and_the_steps_own_run_otherwise():
    with_step, run = _results(step15=280.0), _results(step15=270.0, path="experiments/results/own.json")
    assert lesson_15.shown_timings(with_step, run) == (with_step, "benchmark")
    assert lesson_15.shown_timings(_results(), run) == (run, "step run")
    assert lesson_15.shown_timings(_results(), None) == (None, None)


def test_the_prediction_keeps_the_builds_ratio_to_step_12():
    p = lesson_15.predicted(_results(), _swizzled_run(ratio=2.0))
    assert p[(8192, 8192, 8192)].ratio == pytest.approx(2.0) and p[(8192, 8192, 8192)].tflops == pytest.approx(290.0)


def test_the_verdict_judges_the_tf32_target_at_both_sizes_and_times_the_build():
    v = lesson_15.verdict(_results(step15=290.0), _swizzled_run(ratio=2.0))
    assert v.met and not v.step12_met
    row = v.sizes[(8192, 8192, 8192)]
    assert row.vs_step12 == pytest.approx(2.0) and row.predicted == pytest.approx(290.0)
    assert row.build_minus_step_ms == pytest.approx(2.0 * 8192 ** 3 / 280.0 / 1e9 - 2.0 * 8192 ** 3 / 290.0 / 1e9)
    short = _results(step15={2048: 300.0, 4096: 140.0, 8192: 300.0})
    assert not lesson_15.verdict(short, None).met
    assert lesson_15.verdict(_results(), None) is None


def test_the_speed_table_and_figure():
    table = lesson_15.speed_table(_results())
    assert "| step 15, TF32 (wgmma) | — |" in table
    assert "| 290.0 |" in lesson_15.speed_table(_results(step15=290.0))
    assert lesson_15.speed_figure(_results()).axes


def test_truncating_a_costs_accuracy_on_the_cpu():
    check = lesson_15.truncation_check(k=256)
    assert check.truncated > 1.3 * check.rounded


def test_the_lesson_keeps_to_25_cells():
    assert lesson_cells("15_warpgroup_tf32") <= MAX_CELLS


def _rows(results, step):
    return [r for r in lesson_25.target_rows(results) if r["step"].startswith(step)]


def test_lesson_24_reports_step_15_against_the_tf32_target_only_when_it_is_there():
    assert [(r["measured"], r["met"]) for r in _rows(_results(), "15")] == [("not in this file", None)]
    assert [(r["measured"], r["met"]) for r in _rows(_results(step15=290.0), "15")] == [("290.0 TFLOPS", True)] * 2
    slow = _rows(_results(step15={2048: 300.0, 4096: 140.0, 8192: 300.0}), "15")
    assert [r["met"] for r in slow] == [False, True] and slow[0]["measured"] == "140.0 TFLOPS"


@pytest.mark.parametrize("step15", [None, 290.0])
def test_lesson_24s_targets_keep_steps_12_and_13_and_add_step_15(step15):
    results = _results(step15=step15)
    for r in list(results["records"]):
        if r["step"] == "tensor_cores":
            results["records"].append({**_record("three_tf32", r["M"], 60.0, 5e-7)})
    (t12,), (t13,) = _rows(results, "12"), _rows(results, "13")
    assert t12["measured"] == "145.0 TFLOPS" and t13["measured"] == "1.20× SGEMM" and t13["error"] == 5e-7
    assert t12["size"] == "8192³" and len(_rows(results, "15")) == (1 if step15 is None else 2)


def test_lesson_18_quotes_the_sizes_of_the_steps_the_benchmark_has():
    assert lesson_25.steps_in(_results()) == ["tensor_cores"]
    assert lesson_25.steps_in(_results(step15=290.0)) == ["tensor_cores", "warpgroup_tf32"]
