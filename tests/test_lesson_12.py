"""Lesson 12's helpers (gemm_steps/course/lesson_12.py): the fragment layout drawn is the kernels' and the mma's,
and every number of the speed table, prediction and verdict comes from the shipped files."""

from __future__ import annotations

import numpy as np
import pytest

import gemm_steps
from gemm_steps.course import lesson, lesson_12
from gemm_steps.toolkit.tensor_core_ops import mma_tf32_reference, round_to_tf32


def test_every_element_of_a_b_and_c_belongs_to_exactly_one_lane_and_register():
    for name, shape in (("A", (16, 8)), ("B", (8, 8)), ("C", (16, 8))):
        held = lesson_12.owners(name)
        assert held.shape[:2] == shape and (held >= 0).all()
        assert len({tuple(x) for x in held.reshape(-1, 2)}) == shape[0] * shape[1]


def test_the_layout_is_the_documented_one():
    # tensor_core_ops' docstring: a0 = A[group][pair], a1 = A[group + 8][pair], a2 = A[group][pair + 4], …
    for lane in range(32):
        g, p = lane // 4, lane % 4
        assert [lesson_12.a_element(lane, r) for r in range(4)] == [(g, p), (g + 8, p), (g, p + 4), (g + 8, p + 4)]
        assert [lesson_12.b_element(lane, r) for r in range(2)] == [(p, g), (p + 4, g)]
        assert [lesson_12.c_element(lane, r) for r in range(4)] == [(g, 2 * p), (g, 2 * p + 1), (g + 8, 2 * p),
                                                                    (g + 8, 2 * p + 1)]


@pytest.mark.parametrize("step", ["tensor_cores", "three_tf32"])
def test_the_formulas_are_the_kernels(step):
    """The drawing's formulas are the ones the kernels index with: if a kernel's indexing changes, this fails."""
    source = gemm_steps.get_step(step).kernel_source()
    # A: step 13 reads a lane's own elements; step 12 gives ldmatrix each lane's row address (lane % 16 of the piece,
    # k 4·(lane // 16)), and ldmatrix hands back the same a0 … a3 (tests/test_tensor_cores.py checks that).
    a_line = ("a_read = (warp_row + lane % 16) * A_STRIDE + lane // 16 * 4" if step == "tensor_cores"
              else "a_read = (warp_row + group) * A_STRIDE + pair")
    for line in ("group = lane // 4", "pair = lane % 4", a_line,
                 "b_read = pair * B_STRIDE + warp_col + group", "row = block_row + warp_row + group + (i * 16 + r // 2 * 8)",
                 "col = block_col + warp_col + pair * 2 + (j * 8 + r % 2)"):
        assert line in source, f"{step}'s kernel no longer has `{line}`: redraw lesson 12's layout"
    if step == "three_tf32":  # register r of A: row offset r % 2 * 8, k offset r // 2 * 4 (a_element)
        assert "(i * 16 + r % 2 * 8) * A_STRIDE + kk + r // 2 * 4" in source
        assert "(kk + r * 4) * B_STRIDE + j * 8" in source


def test_one_warp_with_the_drawn_layout_computes_the_mma_and_a_wrong_one_does_not():
    rng = np.random.default_rng(7)
    a = round_to_tf32(rng.standard_normal((16, 8)).astype(np.float32))
    b = round_to_tf32(rng.standard_normal((8, 8)).astype(np.float32))
    c = rng.standard_normal((16, 8)).astype(np.float32)
    expected = mma_tf32_reference(a, b, c)
    assert np.abs(lesson_12.one_warp_product(a, b, c) - expected).max() < 1e-5
    tables = lesson_12.index_tables()
    tables[2], tables[3] = tables[3], tables[2]  # B's rows and columns swapped: a transposed B
    assert np.abs(lesson_12.one_warp_product(a, b, c, tables) - expected).max() > 0.1
    text, worst = lesson_12.one_warp_check()
    assert worst < 1e-6 and f"{worst:.1e}" in text


def test_the_tf32_loss_is_measured_and_within_the_tolerance():
    table = lesson_12.tf32_loss_table(ks=(64, 256))
    assert "`tf32_tolerance(256)`" in table and table.count("\n| C = A·B") == 2


@pytest.fixture(scope="module")
def results():
    found = lesson.load_results(["tensor_cores", "three_tf32"])
    if found is None:
        pytest.fail("no shipped benchmark with the tensor-core steps (renamed?): lesson 12 reads it")
    return found


def test_the_speed_table_and_verdict_quote_the_benchmark(results):
    table = lesson_12.speed_table(results)
    for size in lesson_12.sizes(results):
        for name, _ in lesson_12.SPEED_ROWS:
            r = lesson_12.rec(results, name, size)
            assert f"{r['tflops']:.1f} ({r['pct_of_cublas']:.0f} %)" in table
    big = lesson_12.sizes(results)[-1]
    t12 = lesson_12.rec(results, "tensor_cores", big)["tflops"]
    text = lesson_12.verdict(results)
    assert f"**{t12:.1f} TFLOPS**" in text
    met = max(lesson_12.rec(results, "tensor_cores", s)["tflops"] for s in lesson_12.sizes(results)) >= 150
    assert ("is met" in text) == met and ("is not met" in text) == (not met)
    assert f"{lesson_12.tf32_peak_tflops(results):.0f} TFLOPS" in lesson_12.prediction(results)
    assert lesson_12.tf32_peak_tflops(results) == pytest.approx(8 * results["environment"]["fp32_peak_tflops_estimate"])


def test_the_instruction_budget_counts_the_warp_tile():
    count = lesson_12.k_step_instructions({"THREAD_M": 8, "THREAD_N": 16})  # a 64×64 warp tile: 4 × 8 mma tiles
    assert count["hmma"] == 32 and count["elements"] == 4 * 4 + 8 * 2 and count["loads"] == 4 + 8 * 2
    assert count["per_hmma"] == (32 + 20 + 2 * 32) / 32  # 3.6: HMMAs, loads, two instructions per rounding
    assert lesson_12.clocks_per_hmma() == 4


def test_the_profile_is_read_from_the_shipped_report(results):
    profiles = lesson_12.tensor_core_profiles(results)
    if profiles is None:
        pytest.fail("the shipped Nsight Compute report of the tensor-core steps is missing (renamed?): lesson 12 reads it")
    found = lesson_12.limits(profiles["tensor_cores"])
    assert found["tensor_pipe"] == pytest.approx(46.07)  # "…hmma_cycles_active… 46.07" in the file
    assert found["per_hmma"] == pytest.approx(317_218_816 / 67_108_864)
    assert found["warps_per_sm"] == 8 and found["registers"] == 246  # the report's launch statistics
    assert "latency-bound" in lesson_12.limits_text(profiles)


def test_the_mma_sync_rate_is_inferred_from_the_profile_and_the_budget_follows(results):
    profiles = lesson_12.tensor_core_profiles(results)
    if profiles is None:
        pytest.fail("the shipped Nsight Compute report of the tensor-core steps is missing (renamed?): lesson 12 reads it")
    metrics = profiles["tensor_cores"]
    # the pipe's active cycles over the HMMAs of one scheduler (528 = 132 SMs × 4 schedulers in this report)
    expected = 0.4607 * metrics["SM Active Cycles"] / (67_108_864 / 528)
    assert lesson_12.mma_sync_clocks(metrics) == pytest.approx(expected, rel=1e-3)
    assert 5 < lesson_12.mma_sync_clocks(metrics) < 7  # not the datasheet's 4
    ceiling = lesson_12.mma_sync_ceiling_tflops(results, metrics)
    assert ceiling == pytest.approx(lesson_12.tf32_peak_tflops(results) * 4 / lesson_12.mma_sync_clocks(metrics))
    text = lesson_12.limits_text(profiles, results=results)
    assert f"≈ {ceiling:.0f} TFLOPS" in text and "within that budget" in text
    assert f"(mma.sync reaches ≈ {ceiling:.0f})" in str([t.get_text() for t in
                                                        lesson_12.speed_figure(results).axes[0].get_legend().texts])


def test_the_prediction_uses_no_step_12_timing_and_the_verdict_compares_with_it(results):
    p = lesson_12.predicted(results)
    text = lesson_12.prediction(results)
    for s in lesson_12.sizes(results):
        assert f"{lesson_12.rec(results, 'tensor_cores', s)['tflops']:.1f}" not in text
    assert f"{p['carried']:.0f} TFLOPS" in text and f"{p['low']:.0f} TFLOPS" in text
    assert f"The prediction was {p['low']:.0f}–{p['carried']:.0f} TFLOPS" in lesson_12.verdict(results)
    assert "issue" not in lesson_12.verdict(results).replace("issues", "")
