"""Lesson 22's helpers (gemm_steps/course/lesson_22.py) on the shipped runs: the model's waves and the rule it
shares with step 22, the verdicts against the committed prediction, the pace, the profile and the suite rows."""

from __future__ import annotations

import pytest

from gemm_steps.course import lesson_22, predictions
from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step_22


def test_the_waves_follow_step_22s_rule():
    w = lesson_22.waves(10077, 164, 4066)
    assert (w.tiles, w.k_tiles, w.step18_waves) == (158, 128, 2) and w.runs_own
    assert w.model_gain == pytest.approx(2 * 132 / 158)
    assert not lesson_22.waves(4096, 4096, 4096).runs_own and not lesson_22.waves(3000, 3000, 3000).runs_own
    assert lesson_22.waves(1152, 2048, 4096).runs_own == (not step_22.runs_step_18(144, 128, 132))


def test_the_first_run_against_its_prediction():
    runs = lesson_22.runs()
    assert len(runs) == 4, "the four runs of experiments/stream_k_3xtf32.py are shipped"
    found = {v.shape: v for v in lesson_22.verdicts(runs[0], predictions.get(22, "stream_k_over_step18_h200"))}
    assert len(found) == 7
    assert found["1152x2048x4096"].where == "inside" and found["4096x4096x4096"].where == "below"
    assert 1.4 < found["1152x2048x4096"].ratio < 1.5 and found["10077x164x4066"].over_reference > 1.0


def test_the_warp_wait_run_against_its_prediction():
    found = {v.shape: v for v in lesson_22.verdicts(lesson_22.runs()[2],
                                                    predictions.get(22, "warp_wait_persistent_over_step18_h200"))}
    assert set(found) == {"4096x4096x4096", "2048x2048x2048"}
    assert found["2048x2048x2048"].where == "inside" and 0.88 < found["4096x4096x4096"].ratio < 0.95


def test_the_short_tile_run_against_its_prediction():
    found = {v.shape: v for v in lesson_22.verdicts(lesson_22.runs()[3],
                                                    predictions.get(22, "short_k_persistent_over_step18_h200"))}
    assert len(found) == 10
    assert found["4096x8192x64"].where == "inside" and found["4096x8192x64"].ratio > 1.3
    assert found["4096x4096x4096"].ratio < 0.95 and found["4096x8192x1024"].where == "below"
    short = str(lesson_22.waves_table([(4096, 8192, 64), (4096, 8192, 1024)]))
    assert short.endswith("| no | step 18 |") and "| yes | its own kernel |" in short


def test_the_pace_and_the_profile():
    pace = str(lesson_22.pace_table(lesson_22.runs()[1]))
    assert "persistent loop, 56 producer registers / step 18" in pace and "0.866" in pace
    a, b = lesson_22.profile(lesson_22.STEP_18), lesson_22.profile(lesson_22.STEP_22)
    assert a["DRAM (MB)"] == pytest.approx(b["DRAM (MB)"], rel=0.01)
    assert b["cycles an issued instruction"] > a["cycles an issued instruction"]
    assert lesson_22.profile_table() is not None


def test_the_suite_rows_where_step_22_runs_its_own_kernel():
    rows = lesson_22.suite_rows(lesson_22.suite())
    own = {r["M×N×K"]: r for r in rows if r["runs"] == "own"}
    assert set(own) == {"2777×1111×3333", "2432×1792×4096", "2432×1792×1024", "9001×99×5003"}
    assert all(r["step 22 / step 18"] > 1.05 for r in own.values())
    assert lesson_22.held_out() is not None
