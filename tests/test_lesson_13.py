"""Lesson 13's helpers (gemm_steps/course/lesson_13.py): the split and its four terms, the accumulation models, and
the numbers read from the shipped files."""

from __future__ import annotations

import numpy as np
import pytest

from cell_count import MAX_CELLS, lesson_cells
from gemm_steps.course import lesson, lesson_13
from gemm_steps.course.lesson_13 import COMPARED, FIRST_TRY_RUN, TENSOR_CORES_RUN
from gemm_steps.course.targets import TARGET_3XTF32_VS_SGEMM, slope
from gemm_steps.course.timings import common_sizes, load_run, record


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
    assert 2.0 ** -24 < lesson_13.split_worst() <= 2.0 ** -22


def test_the_model_shows_truncation_growing_like_k_and_rounding_like_its_root():
    model = lesson_13.accumulation_model(ks=(64, 256, 1024, 4096), outputs=256)
    assert slope(model.ks, model.truncate) == pytest.approx(1.0, abs=0.15)
    assert slope(model.ks, model.nearest) == pytest.approx(0.5, abs=0.2)


def test_adding_blocks_of_products_before_each_float32_add_cuts_the_error():
    errors = lesson_13.blocked_sums(k=1024, size=32)
    assert errors[1] > errors[8] > errors[32] and errors[1] / errors[8] > 1.5


@pytest.fixture(scope="module")
def runs():
    first, now = load_run(FIRST_TRY_RUN), load_run(TENSOR_CORES_RUN)
    results = lesson.load_results(["tensor_cores", "three_tf32"])
    if None in (first, now, results):
        pytest.fail(f"shipped tensor-core files missing (renamed?): first try {first is not None}, current run "
                    f"{now is not None}, benchmark {results is not None}")
    return first, now, results


def test_the_first_try_grew_like_k_in_the_file(runs):
    first, now, _ = runs
    f = lesson_13.first_try(first, now)
    assert f.slope > 0.8 and f.error / f.sgemm > 10 and f.step13 < f.error / 10


def test_one_accuracy_rule_judges_the_sweep_and_the_squares(runs):
    _, now, results = runs
    table = lesson_13.accuracy_table(now)
    assert table.count("| standard normal |") + table.count("| wide exponent") == len(now["accuracy"])
    a = lesson_13.accuracy(now, results)
    normal = max(r["three_tf32"] / r["cublas"] for r in now["accuracy"] if r["inputs"] == "standard normal")
    assert a["worst"]["standard normal"] == pytest.approx(max(normal, max(
        record(results, "three_tf32", s)["sampled_rel_error_fp64"]
        / record(results, "cublas", s)["sampled_rel_error_fp64"]
        for s in common_sizes(results, COMPARED)[-2:])))
    assert a["met"] == (not a["misses"]) and (a["met"] or normal > 1 or a["worst"]["wide exponent"] > 2)
    # the lesson: where step 13 misses, it is within a small factor of SGEMM and two to three orders of magnitude
    # below TF32 (the table's columns)
    assert all(ratio < 3 for *_, ratio in a["misses"])
    assert all(100 < r["tensor_cores"] / r["three_tf32"] < 10_000 for r in now["accuracy"])


def test_every_fp32_kernel_makes_sgemms_error_at_the_large_squares(runs):
    """Issue 26, claim 5: the FP32 steps and cuBLAS SGEMM add in one order, so their errors are identical; step 13's
    is lower because it adds blocks of products first."""
    _, _, results = runs
    for s, errors in lesson_13.fp32_errors(results).items():
        assert len(errors) >= 10 and len(set(errors.values())) == 1
        assert record(results, "three_tf32", s)["sampled_rel_error_fp64"] < errors["cublas"]


def test_the_speed_prediction_is_a_third_of_step_12_and_the_verdict_follows(runs):
    _, _, results = runs
    p = lesson_13.predicted(results)
    assert p.tflops == pytest.approx(record(results, "tensor_cores", p.size)["tflops"] / 3)
    sp = lesson_13.speed(results)
    ratios = [record(results, "three_tf32", s)["pct_of_cublas"] / 100 for s in common_sizes(results, COMPARED)[-2:]]
    assert [r.vs_sgemm for r in sp.sizes.values()] == pytest.approx(ratios)
    assert sp.met == (min(ratios) >= TARGET_3XTF32_VS_SGEMM)
    assert sp.over_prediction == pytest.approx(record(results, "three_tf32", p.size)["tflops"] / p.tflops)
    assert sp.over_prediction > 1  # the lesson: three products per piece cost less than a factor of 3


def test_small_parts_go_subnormal_and_the_error_grows_per_row():
    rows = lesson_13.subnormal_table((-120, -125, -130)).splitlines()[2:5]
    assert "| no |" in rows[0] and "| yes |" in rows[1] and "| yes |" in rows[2]
    scaled = [row.split("|")[4].strip() for row in rows]
    unscaled = [row.split("|")[5].strip() for row in rows]
    assert scaled[0] == "0" and len(set(scaled)) == 3  # exact while normal, then growing
    assert unscaled[0] != "0"  # the first version's split already lost bits at 2^-120
    low, high = lesson_13.subnormal_threshold(scaled=True)
    low0, high0 = lesson_13.subnormal_threshold(scaled=False)
    assert -116 < low0 < high0 < -110
    assert (low, high) == pytest.approx((low0 - 11, high0 - 11))  # the 2^11 scaling moves it 11 binades down


def test_the_scaled_split_reads_x_to_2_to_the_minus_23_down_to_2_to_the_minus_124():
    x = (np.random.default_rng(1).uniform(1, 2, 20_000) * 2.0 ** -124).astype(np.float32)
    assert lesson_13.read_error(x, scaled=True).max() <= 2.0 ** -23
    assert lesson_13.read_error(x, scaled=False).max() > 2.0 ** -15


def test_the_lesson_keeps_to_25_cells():
    assert lesson_cells("13_three_tf32") <= MAX_CELLS


def test_the_contract_cost_is_read_pass_by_pass_from_the_ab_run():
    from gemm_steps.course.lesson_24 import CONTRACT_AB_RUN, contract_cost

    run = load_run(CONTRACT_AB_RUN)
    if run is None:
        pytest.fail("the FP32-contract A/B run is missing (renamed?): lessons 13 and 14 read it")
    for step in ("three_tf32", "warpgroup_mma"):
        cost = contract_cost(run, step)
        assert (8192, 8192, 8192) in cost
        for size, c in cost.items():
            old, new = ([r["tflops"] for r in run["records"] if r["step"] == f"{step} ({w})"
                         and (r["M"], r["N"], r["K"]) == size] for w in ("old", "new"))
            assert len(old) == len(new) >= 2
            ratios = sorted(1 - n / o for o, n in zip(old, new))
            assert c["cost"] == pytest.approx((ratios[0], ratios[-1]))
            assert min(old) <= c["old"] <= max(old) and min(new) <= c["new"] <= max(new)
