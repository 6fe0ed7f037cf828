"""The course tools behind lessons 0b and 12 and the profiler cells: the shipped Nsight Compute reports are read
right, the where-am-I kernel reports the hierarchy right, and the roofline places each step where its tile says."""

from __future__ import annotations

import numpy as np
import pytest

import gemm_steps
from gemm_steps.course import gpu_model, lesson_12, plots, profiles
from helpers import synthetic_results


def test_a_shipped_report_is_read_into_the_numbers_it_shows():
    naive = profiles.load("naive")
    assert naive is not None, "experiments/results/ncu-steps-nvidia-h100/ncu-naive.txt is missing"

    assert "naive_kernel" in naive.kernel
    assert naive.duration_ms == pytest.approx(43.90)  # "Duration  ms  43.90" in the file
    assert naive.value("L1/TEX Cache Throughput") == pytest.approx(99.23)
    assert naive.value("Registers Per Thread") == 30 and naive.value("Block Size") == 1024
    assert naive.stalls and naive.stalls[0][2] == pytest.approx(58.5) and "L1TEX" in naive.stalls[0][0]
    assert naive.value("Memory Throughput") == pytest.approx(96.23)  # the first of two rows of that name (%, not GB/s)
    shared = profiles.load("shared_memory")
    assert shared.bytes("Static Shared Memory Per Block") == pytest.approx(8190)  # "8.19 Kbyte/block"
    assert profiles.load("no_such_step") is None


def test_the_profile_table_has_a_row_per_report_and_says_which_are_missing():
    table = profiles.table(["naive", "coalesced", "no_such_step"])
    rows = [line for line in table.splitlines() if line.startswith("| naive") or line.startswith("| coalesced")]
    assert len(rows) == 2 and "| 43.90 |" in rows[0]
    assert "no shipped report for no_such_step" in table


def test_every_step_and_cublas_has_a_shipped_report_of_its_own_kernel():
    for name in [s.name for s in gemm_steps.steps()] + ["cublas"]:
        report = profiles.load(name)
        assert report is not None, f"no shipped Nsight Compute report for {name}"
        if name not in ("cublas", "stream_k"):  # stream-K runs step 10's kernel where nothing is left to split
            assert name in report.kernel, f"the report for {name} profiled {report.kernel}"


def test_where_am_i_reports_the_hierarchy():
    seen = gpu_model.where_am_i(grid=(2, 3), block=(8, 4))
    assert seen["block_x"].shape == (12, 16)
    rows, cols = np.indices((12, 16))
    assert (seen["block_x"] == cols // 8).all() and (seen["block_y"] == rows // 4).all()
    assert (seen["thread_x"] == cols % 8).all() and (seen["thread_y"] == rows % 4).all()
    assert (seen["warp"] == (rows % 4 * 8 + cols % 8) // 32).all()


def test_tiling_intensity_follows_the_block_tile():
    assert lesson_12.tiling_intensity(gemm_steps.get_step("naive")) == 0.25
    assert lesson_12.tiling_intensity(gemm_steps.get_step("shared_memory")) == 8.0  # 32·32 / (2·64)
    assert lesson_12.tiling_intensity(gemm_steps.get_step("warp_tiling")) == pytest.approx(128 * 256 / (2 * 384))


def test_the_speedup_curves_have_both_panels_and_refuse_a_single_step():
    fig = plots.plot_speedup_curves(synthetic_results())
    left, right = fig.axes[:2]
    assert len(left.lines) >= 2 and len(right.lines) >= 2  # a line per size
    with pytest.raises(ValueError):
        plots.plot_speedup_curves(synthetic_results(names=["naive"]))


def test_the_memory_levels_come_from_shipped_files():
    levels = gpu_model.memory_levels()
    assert levels["sm_count"] and levels["l2_bytes"]
    assert levels["bandwidth_tbs"]["shared_conflict_free_tbs"] > levels["bandwidth_tbs"]["shared_32_way_conflict_tbs"]
