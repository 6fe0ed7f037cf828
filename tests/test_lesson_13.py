"""Lesson 13's helpers (gemm_steps/course/lesson_13.py): the split and its four terms, the accumulation model, and
the tables and verdicts read from the shipped files."""

from __future__ import annotations

import numpy as np
import pytest

from gemm_steps.course import lesson, lesson_12, lesson_13


def test_truncation_drops_the_low_13_bits():
    x = np.float32(1 + 2 ** -10 + 2 ** -12)
    assert lesson_13.truncate_to_tf32(x) == np.float32(1 + 2 ** -10)
    assert lesson_13.truncate_to_tf32(np.float32(-1 - 2 ** -12)) == np.float32(-1)


def test_the_split_is_exact_and_three_products_get_near_float32():
    assert "| 0e+00 |" in lesson_13.split_table((np.pi,))
    table = lesson_13.product_errors(size=32, ks=(256,))
    errors = {line.split("|")[1].strip(): float(line.split("|")[2]) for line in table.splitlines()[2:]}
    one, three = errors["1: big·big (TF32)"], errors["3: small·big + big·small + big·big (step 13)"]
    assert one > 1e-4 and three < 3e-7 and one / three > 1000


def test_the_model_shows_truncation_growing_like_k_and_rounding_like_its_root():
    model = lesson_13.accumulation_model(ks=(64, 256, 1024, 4096), outputs=256)
    assert lesson_13.slope(model["K"], model["truncate"]) == pytest.approx(1.0, abs=0.15)
    assert lesson_13.slope(model["K"], model["nearest"]) == pytest.approx(0.5, abs=0.2)


@pytest.fixture(scope="module")
def runs():
    first, now = lesson_12.load_run(lesson_12.FIRST_TRY_RUN), lesson_12.load_run(lesson_12.TENSOR_CORES_RUN)
    results = lesson.load_results(["tensor_cores", "three_tf32"])
    if None in (first, now, results):
        pytest.fail(f"shipped tensor-core files missing (renamed?): first try {first is not None}, current run {now is not None}, benchmark {results is not None}")
    return first, now, results


def test_the_first_try_grew_like_k_in_the_file(runs):
    first, now, _ = runs
    points = lesson_13.first_try_points(first)
    assert len(points) >= 4 and lesson_13.slope(*zip(*[(k, e) for k, e, _ in points])) > 0.8
    assert "K^0.9" in lesson_13.first_try_text(first, now) or "K^1.0" in lesson_13.first_try_text(first, now)


def test_the_accuracy_table_has_every_row_of_the_sweep(runs):
    _, now, results = runs
    table = lesson_13.accuracy_table(now)
    assert table.count("| standard normal |") + table.count("| wide exponent") == len(now["accuracy"])
    worst = max(r["three_tf32"] / r["cublas"] for r in now["accuracy"])
    text = lesson_13.accuracy_verdict(now, results)
    assert f"{worst:.1f}×" in text and ("not ≤ SGEMM" in text) == (worst > 1)


def test_the_speed_verdict_follows_the_benchmark(runs):
    _, _, results = runs
    text = lesson_13.speed_verdict(results)
    ratios = [lesson_12.rec(results, "three_tf32", s)["pct_of_cublas"] / 100 for s in lesson_12.sizes(results)[-2:]]
    for ratio in ratios:
        assert f"{ratio:.2f}× cuBLAS SGEMM" in text
    assert ("is met" in text) == (min(ratios) >= lesson_12.TARGET_3XTF32_VS_SGEMM)


def test_small_parts_go_subnormal_below_about_two_to_the_minus_115():
    rows = lesson_13.subnormal_table((-100, -126)).splitlines()[2:]
    assert "| no |" in rows[0] and "| yes |" in rows[1]


def test_the_split_table_shows_what_the_tensor_core_reads_and_one_bit_count():
    table = lesson_13.split_table((np.pi,))
    worst = lesson_13.split_worst()
    assert 2.0 ** -24 < worst <= 2.0 ** -22 and f"about **{-np.log2(worst):.0f} bits**" in table


def test_the_subnormal_table_shows_the_error_per_row():
    rows = lesson_13.subnormal_table((-100, -120, -126)).splitlines()[2:5]
    errors = [row.split("|")[4].strip() for row in rows]
    assert errors[0] == "0" and len(set(errors)) == 3


def test_the_speed_prediction_is_a_third_of_step_12_and_the_verdict_compares(runs):
    _, _, results = runs
    p = lesson_13.predicted(results)
    assert p["tflops"] == pytest.approx(lesson_12.rec(results, "tensor_cores", p["size"])["tflops"] / 3)
    assert f"**{p['tflops']:.1f} TFLOPS**" in lesson_13.prediction(results)
    assert f"The prediction was {p['tflops']:.1f} TFLOPS" in lesson_13.speed_verdict(results)
