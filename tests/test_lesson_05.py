"""Lesson 5's helpers (gemm_steps/course/lesson_05.py): the wavefront model against the shipped profiles, the PTX
sign-test reader, the tile-size table and the picture."""

from __future__ import annotations

import pytest

import gemm_steps
from gemm_steps.course import lesson_05

STEP4, STEP5 = gemm_steps.get_step("register_1d"), gemm_steps.get_step("register_2d")


def test_wavefront_model_of_one_warp_k_step():
    c5 = STEP5.config
    contiguous, strided = lesson_05.thread_map(c5), lesson_05.thread_map(c5, strided=True)
    assert lesson_05.k_step_wavefronts(STEP4.config, lesson_05.thread_map(STEP4.config)) == (8, 1)
    assert lesson_05.k_step_wavefronts(c5, contiguous) == (16, 32)  # scalar loads, as written
    assert lesson_05.k_step_wavefronts(c5, contiguous, b_width=2) == (16, 32)  # 64-bit: a half-warp at a time
    assert lesson_05.k_step_wavefronts(c5, contiguous, b_width=4) == (16, 16)  # 128-bit: a quarter-warp at a time
    assert lesson_05.k_step_wavefronts(c5, strided) == (8, 8)
    assert lesson_05.k_step_wavefronts(c5, strided, a_transposed=True) == (8, 8)


def test_thread_maps_cover_the_block_tile_once():
    c5 = STEP5.config
    for strided in (False, True):
        element = lesson_05.thread_map(c5, strided)
        owned = [element(t, i, j) for t in range(c5["THREADS"]) for i in range(c5["THREAD_M"])
                 for j in range(c5["THREAD_N"])]
        assert sorted(owned) == [(r, c) for r in range(c5["BLOCK_M"]) for c in range(c5["BLOCK_N"])]


def test_the_shipped_profiles_match_the_model_the_lesson_says_they_match():
    """Step 4 as written; step 5 with B's fragment in two 128-bit loads (lesson 5's profiler section)."""
    old, new = lesson_05.profile_counts(STEP4), lesson_05.profile_counts(STEP5)
    if old is None or new is None:
        pytest.fail("the shipped Nsight Compute reports of steps 4-5 are missing (renamed?): lesson 5 reads them")
    model4 = lesson_05._model_rows(STEP4.config).scalar
    model5 = lesson_05._model_rows(STEP5.config)
    assert old.wavefronts == pytest.approx(model4.total, rel=0.02)
    assert new.wavefronts == pytest.approx(model5.wide.total, rel=0.02)
    assert new.conflicts == pytest.approx(model5.wide.conflicts, rel=0.02)
    assert abs(new.wavefronts - model5.scalar.total) > 10


def test_sign_tests_are_read_from_ptx():
    ptx = "\n".join(["add.s64 %rd7, %rd129, %rd120;",
                     f"and.b64 %rd131, %rd129, {lesson_05.SIGN_BIT};",
                     "shr.u64 %rd132, %rd131, 56;",
                     "add.s64 %rd133, %rd132, %rd129;",
                     "shr.s64 %rd140, %rd139, 63;"])
    assert lesson_05.sign_tests(ptx) == {128: 1}
    assert lesson_05.sign_masks(ptx) == 1
    assert lesson_05.sign_test_example(ptx).splitlines()[2].startswith("shr.u64")


def test_reuse_table_and_picture_come_from_the_tile_constants():
    rows = lesson_05.reuse_table([gemm_steps.get_step("shared_memory"), STEP4, STEP5]).rows
    assert [r["FMAs per shared load"] for r in rows] == [0.5, 8 / 9, 4.0]
    assert [r["global loads per FMA"] for r in rows] == ["1/16", "1/32", "1/64"]
    fig = lesson_05.outer_product_figure(STEP5.config)
    assert len(fig.axes) == 2


def test_prediction_and_verdict_are_numbers_from_the_shipped_benchmark():
    from gemm_steps.course import timings

    results = timings.load_results(["shared_memory", "register_1d", "register_2d"])
    if results is None:
        pytest.fail("no shipped course benchmark with steps 3-5 (renamed?): lesson 5 reads it")
    pred = lesson_05.prediction(results, STEP4, STEP5)
    model = pred.model
    assert (model["register_1d"]["A wavefronts"], model["register_1d"]["B wavefronts"]) == (8, 1)
    assert (model["register_2d"]["A wavefronts"], model["register_2d"]["B wavefronts"]) == (16, 32)
    assert pred.ratio == pytest.approx(model["register_2d"]["FMAs per wavefront"]
                                          / model["register_1d"]["FMAs per wavefront"])
    measured = lesson_05.verdict(results, [gemm_steps.get_step("shared_memory"), STEP4, STEP5], pred)
    numbers = measured.numbers
    assert numbers["step 5 / step 4"] > 1 and numbers["step 5 / step 3"] > 1
    assert measured.beats_model == (numbers["step 5 / step 4"] > pred.ratio)
    assert numbers["ceiling, B in 128-bit loads (TFLOPS)"] > numbers["ceiling, loads as written (TFLOPS)"]
    sizes = measured.sizes.rows
    assert measured.idle_sms == any(r["SMs idle"] for r in sizes) and sizes[0]["SMs idle"]
    assert sizes[0]["blocks in the grid"] == (512 // 128) ** 2 and not sizes[-1]["SMs idle"]


def test_the_experiment_tables_read_the_shipped_run():
    experiment = lesson_05.load_experiment()
    if experiment is None:
        pytest.fail(f"no shipped {lesson_05.EXPERIMENT} (renamed?): lesson 5 reads it")
    rows = lesson_05.strided_table(experiment, STEP5.config).rows
    assert [r["wavefronts per k-step (A + B)"] for r in rows] == [
        "16 + 16 (B as two 128-bit loads)", "8 + 8 (scalar loads)", "8 + 8 (scalar loads)"]
    assert rows[0]["× step 5"] == 1 and rows[1]["FMAs per wavefront"] == 2048 / 16


def test_the_profile_check_and_the_load_widths_hold_the_models_counts():
    check = {r["per warp and k-step"]: r for r in lesson_05.profile_check(STEP4, STEP5).rows}
    model = lesson_05._model_rows(STEP5.config)
    assert check["step 5: shared wavefronts"]["model, B as two 128-bit loads"] == model.wide.total == 33
    assert check["step 5: of them bank conflicts"]["profiler"] == lesson_05.profile_counts(STEP5).conflicts
    widths = lesson_05.load_widths(STEP5).rows
    assert [r["B wavefronts (model)"] for r in widths[:3]] == [32, 32, 16]
    assert widths[3]["A + B + stores (model)"] == lesson_05.profile_counts(STEP5).wavefronts


def test_the_ceilings_and_the_sign_tests_of_made_up_kernels():
    ptx = "\n".join([f"and.b64 %rd1, %rd2, {lesson_05.SIGN_BIT};", "shr.u64 %rd3, %rd1, 56;",
                     f"and.b64 %rd4, %rd5, {lesson_05.SIGN_BIT};", "shr.u64 %rd6, %rd4, 60;",
                     "shr.s64 %rd7, %rd8, 63;"] + ["fma.rn.f32 %f1, %f2, %f3, %f1;"] * 128)
    compiled = {"a": {"ptx": ptx, "step": "register_2d"}, "b": {"ptx": "", "step": "register_1d"}}
    rows = lesson_05.sign_table(compiled).rows
    assert rows[0] == {"kernel": "a", "sign-bit tests": 2, "of them adding": "128: 1, 8: 1", "sign masks": 1}
    assert rows[1]["sign-bit tests"] == 0 and rows[1]["of them adding"] is None
    assert lesson_05.fmas_in_ptx(compiled, STEP5) == {"a": 2.0}
