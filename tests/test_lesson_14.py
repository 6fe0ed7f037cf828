"""Lesson 14's helpers (gemm_steps/course/lesson_14.py) on made-up data: the descriptor layout and the step's
staging, the hazards' evidence, the prediction, the tables and the verdict — with and without step 14 in the
benchmark — and lesson 15's summary of the tensor-core steps."""

from __future__ import annotations

import pytest

import gemm_steps
from gemm_steps.course import lesson_12, lesson_14, lesson_15

SGEMM_TFLOPS = 50.0


def _record(step, size, tflops, error, sgemm=SGEMM_TFLOPS):
    flop = 2.0 * size ** 3
    return {"step": step, "M": size, "N": size, "K": size, "tflops": tflops, "median_ms": flop / tflops / 1e9,
            "pct_of_cublas": 100 * tflops / sgemm, "sampled_rel_error_fp64": error}


def _results(step14=None, sizes=(2048, 4096, 8192)):
    """A fake benchmark: cuBLAS SGEMM at 50 TFLOPS, cuBLAS TF32, steps 12 and 13, and step 14 at ``step14``
    (× SGEMM, error) per size, if given."""
    records = []
    for s in sizes:
        records += [_record("cublas", s, SGEMM_TFLOPS, 1e-6), _record("cublas_tf32", s, 350.0, 3e-4),
                    _record("tensor_cores", s, 145.0, 3e-4), _record("three_tf32", s, 60.0, 5e-7)]
        if step14 is not None:
            ratio, error = step14[s] if isinstance(step14, dict) else step14
            records.append(_record("warpgroup_mma", s, ratio * SGEMM_TFLOPS, error))
    env = {"gpu": "Fake GPU", "date": "2026-01-01T00:00:00+00:00", "sm_count": 132}
    return {"environment": env, "records": records, "path": "results/fake.json"}


def _run(build_ratio=1.3, no_flush=(1e-5, 2e-5, 4e-5), sizes=(2048, 4096, 8192)):
    """A fake experiment run: cuBLAS, steps 12–13, step 14's build at ``build_ratio`` × SGEMM, the build without the
    flush with errors ``no_flush`` (growing like K), two TF32 builds, the checks of the two wait orders."""
    records = []
    for s, err in zip(sizes, no_flush):
        records += [_record("cublas", s, SGEMM_TFLOPS, 1e-6), _record("tensor_cores", s, 150.0, 3e-4),
                    _record("three_tf32", s, 60.0, 5e-7),
                    _record(lesson_14.STEP_BUILD, s, build_ratio * SGEMM_TFLOPS, 3e-7),
                    _record(lesson_14.NO_FLUSH_BUILD, s, 70.0, err),
                    _record(lesson_14.TF32_BUILDS[0], s, 120.0, 4e-4), _record(lesson_14.TF32_BUILDS[1], s, 100.0, 4e-4),
                    _record(lesson_14.TRANSPOSING_BUILD, s, 110.0, 7e-4)]
    checks = {lesson_14.OVERLAPPED_BUILD: {"shape": [512, 512, 256], "max_rel_error_vs_fed_inputs": 0.3},
              lesson_14.SERIAL_BUILD: {"shape": [512, 512, 256], "max_rel_error_vs_fed_inputs": 9e-7}}
    env = {"gpu": "Fake GPU", "date": "2026-01-01T00:00:00+00:00"}
    return {"environment": env, "records": records, "checks": checks, "path": "experiments/results/fake.json"}


# -- the picture -----------------------------------------------------------------------------------------------------
def test_a_core_matrix_is_128_contiguous_bytes_and_the_strides_are_lbo_and_sbo():
    inside = sorted(lesson_14.descriptor_byte(n, k, 128, 1024) for n in range(8) for k in range(4))
    assert inside == list(range(0, 128, 4))
    assert lesson_14.descriptor_byte(0, 4, 128, 1024) == 128  # next core matrix in k: LBO
    assert lesson_14.descriptor_byte(8, 0, 128, 1024) == 1024  # next 8 columns: SBO
    assert lesson_14.descriptor_byte(3, 2, 128, 1024, start=256) == 256 + 3 * 16 + 2 * 4


def test_the_step_stages_a_where_its_descriptors_point():
    layout = lesson_14.gpu_layout(gemm_steps.get_step("warpgroup_mma"))
    elements = layout["BLOCK_M"] * layout["BLOCK_K"]
    assert f"**{elements} of {elements}**" in lesson_14.layout_check(layout)
    swapped = {**layout, "LBO": layout["SBO"], "SBO": layout["LBO"]}  # the strides the wrong way round
    assert f"**{elements} of {elements}**" not in lesson_14.layout_check(swapped)


def test_each_element_of_the_register_operand_has_one_holder_in_lesson_12s_layout():
    assert "held by **512** different" in lesson_14.layout_check(lesson_14.gpu_layout(gemm_steps.get_step(14)))
    for lane in range(32):
        for r in range(4):
            row, k = lesson_12.a_element(lane, r)
            assert lesson_14.fragment_holder(row + 16, k) == (1, lane, r)  # warp 1: rows 16…31


def test_the_figure_draws_with_the_steps_constants():
    layout = lesson_14.gpu_layout(gemm_steps.get_step("warpgroup_mma"))
    fig = lesson_14.warpgroup_figure(layout["LBO"], layout["SBO"], n=layout["BLOCK_M"])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert str(layout["SBO"]) in texts and f"+ SBO = {layout['SBO']} bytes" in " ".join(texts)


def test_gpu_layout_reads_the_benchmarks_configuration():
    results = _results(step14=(1.3, 5e-7))
    for r in results["records"]:
        if r["step"] == "warpgroup_mma":
            r["config"] = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 16, "THREAD_M": 8, "THREAD_N": 4,
                           "MIN_BLOCKS_PER_SM": 1}
    layout = lesson_14.gpu_layout(gemm_steps.get_step("warpgroup_mma"), results)
    assert (layout["BLOCK_M"], layout["BLOCK_K"], layout["SBO"]) == (64, 16, 16 * 8 * 4)


# -- the hazards -----------------------------------------------------------------------------------------------------
def test_the_flush_text_fits_the_growth_with_k():
    assert "K^1.00" in lesson_14.flush_text(_run(no_flush=(1e-5, 2e-5, 4e-5)))
    assert "K^0.50" in lesson_14.flush_text(_run(no_flush=(1e-5, 2 ** 0.5 * 1e-5, 2e-5)))
    assert lesson_14.flush_figure(_run()).axes


def test_the_overlap_table_reads_the_checks():
    table = lesson_14.overlap_table(_run())
    assert "| 3.0e-01 |" in table and "| 9.0e-07 |" in table and "an error of 0.30" in table


def test_why_swap_compares_the_transposing_build_with_step_12_in_the_same_run():
    text = lesson_14.why_swap_text(_run())
    assert "110 TFLOPS in TF32, below step 12's 150" in text
    assert "not shipped" in lesson_14.why_swap_text(None)


# -- prediction, tables, verdict -----------------------------------------------------------------------------------
def test_the_prediction_is_the_experiments_range_at_this_benchmarks_sgemm():
    runs = [_run(build_ratio=1.3), _run(build_ratio=1.4)]
    p = lesson_14.predicted(_results(), runs)
    assert p[(8192, 8192, 8192)]["low"] == pytest.approx(1.3) and p[(8192, 8192, 8192)]["high"] == pytest.approx(1.4)
    text = lesson_14.prediction(_results(), runs)
    assert "1.30–1.40× cuBLAS SGEMM" in text and "65.0–70.0 TFLOPS" in text and "above our target" in text
    assert "not safely above" in lesson_14.prediction(_results(), [_run(build_ratio=1.2), _run(build_ratio=1.3)])


def test_without_step_14_the_table_and_verdict_say_so():
    results = _results()
    assert not lesson_14.has_step(results) and lesson_14.target_check(results) is None
    assert "not in this results file yet" in lesson_14.speed_table(results)
    assert "no step 14 yet" in lesson_14.verdict(results, [_run()])
    assert lesson_14.speed_figure(results).axes
    assert "not in this results file" in lesson_15.tensor_core_summary(results)


def test_the_verdict_needs_speed_and_accuracy_at_both_large_sizes():
    met = _results(step14=(1.35, 5e-7))
    assert lesson_14.target_check(met)["met"]
    assert "is met" in lesson_14.verdict(met, [_run(build_ratio=1.35)])
    assert "(as predicted)" in lesson_14.verdict(met, [_run(build_ratio=1.35)])
    # 10 % above the experiment: more than the ~3 % a kernel moves between processes, said to be unexplained
    assert "above the predicted" in lesson_14.verdict(met, [_run(build_ratio=1.35 / 1.1)])
    slow_at_4096 = _results(step14={2048: (1.4, 5e-7), 4096: (1.2, 5e-7), 8192: (1.4, 5e-7)})
    inaccurate = _results(step14=(1.35, 2e-6))  # SGEMM's error is 1e-6
    for results in (slow_at_4096, inaccurate):
        assert not lesson_14.target_check(results)["met"]
        assert "is not met" in lesson_14.verdict(results, [_run()])
    table = lesson_14.speed_table(met)
    assert "67.5 (1.35×)" in table and "not in this results file" not in table


def test_lesson_15_names_step_14_as_the_step_that_meets_the_target_only_when_it_does():
    assert "the step that meets the 3xTF32 target" in lesson_15.tensor_core_summary(_results(step14=(1.35, 5e-7)))
    text = lesson_15.tensor_core_summary(_results(step14=(1.1, 5e-7)))
    assert "1.10×" in text and "not met" in text and "the step that meets" not in text


def test_what_is_left_compares_the_tf32_builds_with_step_12():
    text = lesson_14.what_is_left(_run(build_ratio=1.2))
    assert "100–120 TFLOPS" in text and "step 12's 150" in text and "50 % of the fastest TF32 build" in text
    assert lesson_14.profile_metric("    L2 Cache Throughput               %         91.52", "L2 Cache Throughput") == 91.52
