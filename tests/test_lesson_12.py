"""Lesson 12's helpers (gemm_steps/course/lesson_12.py): the fragment layout drawn is the kernels' and the mma's,
and every number of the speed table, prediction and verdict comes from the shipped files."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import gemm_steps
from gemm_steps.course import gpu_model, lesson, lesson_12
from gemm_steps.course.gpu_model import clocks_per_hmma, mma_sync_ceiling_tflops, mma_sync_clocks, tf32_peak_tflops
from gemm_steps.course.lesson_12 import COMPARED, PROFILED_RUN, limits, tensor_core_profiles
from gemm_steps.course.targets import TARGET_TF32_TFLOPS
from gemm_steps.course.timings import common_sizes, load_run, record
from gemm_steps.toolkit.tensor_core_ops import mma_tf32_reference, round_to_tf32
from cell_count import MAX_CELLS, lesson_cells


def test_every_element_of_a_b_and_c_belongs_to_exactly_one_lane_and_register():
    for name, shape in (("A", (16, 8)), ("B", (8, 8)), ("C", (16, 8))):
        held = gpu_model.owners(name)
        assert held.shape[:2] == shape and (held >= 0).all()
        assert len({tuple(x) for x in held.reshape(-1, 2)}) == shape[0] * shape[1]


def test_the_layout_is_the_documented_one():
    # tensor_core_ops' docstring: a0 = A[group][pair], a1 = A[group + 8][pair], a2 = A[group][pair + 4], …
    for lane in range(32):
        g, p = lane // 4, lane % 4
        assert [gpu_model.a_element(lane, r) for r in range(4)] == [(g, p), (g + 8, p), (g, p + 4), (g + 8, p + 4)]
        assert [gpu_model.b_element(lane, r) for r in range(2)] == [(p, g), (p + 4, g)]
        assert [gpu_model.c_element(lane, r) for r in range(4)] == [(g, 2 * p), (g, 2 * p + 1), (g + 8, 2 * p),
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
    warp = lesson_12.one_warp_check()
    assert warp.right < 1e-6 and warp.wrong > 0.1
    assert 1e-4 < lesson_12.truncation_check() < 1e-2  # the tensor core reads unrounded inputs truncated


def test_the_tf32_loss_is_measured_and_within_the_tolerance():
    table = lesson_12.tf32_loss_table(ks=(64, 256))
    assert "`tf32_tolerance(256)`" in table and table.count("\n| C = A·B") == 2


@pytest.fixture(scope="module")
def results():
    found = lesson.load_results(["tensor_cores", "three_tf32"])
    if found is None:
        pytest.fail("no shipped benchmark with the tensor-core steps (renamed?): lesson 12 reads it")
    return found


@pytest.fixture(scope="module")
def profiles():
    found = tensor_core_profiles()
    if found is None:
        pytest.fail("the shipped Nsight Compute report of the tensor-core steps is missing (renamed?): lesson 12 reads it")
    return found


def test_the_speed_table_and_verdict_quote_the_benchmark(results):
    table = lesson_12.speed_table(results)
    for size in common_sizes(results, COMPARED):
        for name, *_ in lesson_12.SPEED_ROWS:
            r = record(results, name, size)
            assert f"{r['tflops']:.1f} ({r['pct_of_cublas']:.0f} %)" in table
    v = lesson_12.verdict(results)
    for size, row in v.sizes.items():
        assert row.tflops == record(results, "tensor_cores", size)["tflops"]
    best = max(record(results, "tensor_cores", s)["tflops"] for s in common_sizes(results, COMPARED))
    assert v.best == best and v.met == (best >= TARGET_TF32_TFLOPS)
    p = lesson_12.predicted(results)
    assert v.where == ("inside" if p.low <= v.at_prediction <= p.carried
                       else "below" if v.at_prediction < p.low else "above")


def test_the_target_is_counted_over_every_benchmark_of_the_gpu(results, tmp_path):
    """The lesson says step 12 sits at the target (so one run's verdict can flip): every shipped benchmark of this GPU
    within 3 % of it; and the count reads each file (two copies of the newest run, one pushed under the target, one
    on another GPU)."""
    runs = lesson_12.target_across_runs(results)
    assert runs.runs >= 2 and runs.gpu == results["environment"]["gpu"]
    assert all(abs(t / TARGET_TF32_TFLOPS - 1) < 0.03 for t in runs.bests.values()), runs.bests
    def write(name, factor, gpu):
        run = copy.deepcopy(results)
        run["environment"]["gpu"] = gpu
        for r in run["records"]:
            if r["step"] == "tensor_cores":
                r["tflops"] = TARGET_TF32_TFLOPS * factor
        (tmp_path / name).write_text(json.dumps(run))

    write("bench-a.json", 1.01, "GPU X")
    write("bench-b.json", 0.99, "GPU X")
    write("bench-c.json", 1.5, "GPU Y")
    x = copy.deepcopy(results)
    x["environment"]["gpu"] = "GPU X"
    found = lesson_12.target_across_runs(x, tmp_path)
    assert (found.runs, found.met) == (2, 1) and set(found.bests) == {"bench-a.json", "bench-b.json"}


def test_the_roof_is_eight_times_fp32_at_the_runs_maximum_clock(results):
    env = results["environment"]
    assert tf32_peak_tflops(results) == pytest.approx(8 * env["fp32_peak_tflops_estimate"])
    assert env["fp32_peak_tflops_estimate"] == pytest.approx(env["sm_count"] * 128 * 2 * env["sm_clock_max_mhz"] / 1e6)


def test_the_instruction_budget_counts_the_warp_tile():
    count = lesson_12.k_step_instructions({"THREAD_M": 8, "THREAD_N": 16})  # a 64×64 warp tile: 4 × 8 mma tiles
    assert count.hmma == 32 and count.elements == 4 * 4 + 8 * 2 and count.loads == 4 + 8 * 2
    assert count.per_hmma == (32 + 20 + 2 * 32) / 32  # HMMAs, loads, two instructions per rounding
    assert clocks_per_hmma() == 4


def test_the_profile_is_read_from_the_shipped_report(profiles):
    found = limits(profiles["tensor_cores"])
    assert found.tensor_pipe == pytest.approx(46.07)  # "…hmma_cycles_active… 46.07" in the file
    assert found.per_hmma == pytest.approx(317_218_816 / 67_108_864)
    assert found.warps_per_sm == 8 and found.registers == 246  # the report's launch statistics
    assert "| 46 % |" in lesson_12.profile_table(profiles)


def test_the_mma_sync_rate_is_inferred_from_the_profile(results, profiles):
    metrics = profiles["tensor_cores"]
    # the pipe's active cycles over the HMMAs of one scheduler (528 = 132 SMs × 4 schedulers in this report)
    expected = 0.4607 * metrics["SM Active Cycles"] / (67_108_864 / 528)
    assert mma_sync_clocks(metrics) == pytest.approx(expected, rel=1e-3)
    assert 5 < mma_sync_clocks(metrics) < 7  # not the dense rate's 4
    ceiling = mma_sync_ceiling_tflops(results, metrics)
    assert ceiling == pytest.approx(tf32_peak_tflops(results) * 4 / mma_sync_clocks(metrics))
    assert f"mma.sync reaches ≈ {ceiling:.0f}" in str([t.get_text() for t in
                                                      lesson_12.speed_figure(results).axes[0].get_legend().texts])


def test_the_pipe_cross_check_counts_three_hmma_per_3xtf32_product(results, profiles):
    """Issue 26, claim 2: 3xTF32 issues three HMMAs per useful product, so its full-pipe rate is 3× its TFLOPS over
    its busy share — near the mma.sync ceiling, like step 12's, not a third of it."""
    profiled = load_run(PROFILED_RUN)  # the timing made with the profile: same GPU, same kernels
    one, three = (lesson_12.pipe_rate(profiles, profiled, s) for s in ("tensor_cores", "three_tf32"))
    assert one.products == 1 and three.products == 3
    t13 = record(profiled, "three_tf32", 4096)["tflops"]
    assert three.full_pipe == pytest.approx(3 * t13 / (limits(profiles["three_tf32"]).tensor_pipe / 100))
    for rate in (one, three):
        assert 0.8 * rate.ceiling < rate.full_pipe <= 1.02 * rate.ceiling


def test_the_lessons_claims_hold_on_the_shipped_files(results, profiles):
    """The lesson's prose says: step 12 lands below the top of the predicted range (step 11's share of its roof did
    not carry over); per HMMA the pipe is busy longer than the dense rate's clocks, yet the instructions per HMMA fit within
    them; cuBLAS TF32 runs above the mma.sync ceiling; the issue slots are mostly idle and in most cycles no warp is
    ready; one block of 8 warps per SM; no bank conflicts."""
    assert lesson_12.verdict(results).of_carried < 1
    found = limits(profiles["tensor_cores"])
    assert clocks_per_hmma() < found.clocks_per_hmma and found.per_hmma <= found.clocks_per_hmma
    ceiling = lesson_12.pipe_rate(profiles, load_run(PROFILED_RUN)).ceiling
    assert all(record(results, "cublas_tf32", s)["tflops"] > ceiling for s in common_sizes(results, COMPARED)[-2:])
    assert found.issue_busy < 50 and found.no_eligible > 50
    assert found.warps_per_sm == 8 and found.bank_conflicts == 0


def test_the_prediction_uses_no_step_12_timing(results):
    p = lesson_12.predicted(results)
    faster = copy.deepcopy(results)
    for r in faster["records"]:
        if r["step"] == "tensor_cores":
            r["tflops"] *= 2
    assert lesson_12.predicted(faster) == p
    assert p.low == TARGET_TF32_TFLOPS and p.carried > p.low


def test_the_lesson_keeps_to_25_cells():
    assert lesson_cells("12_tensor_cores") <= MAX_CELLS
