"""Lesson 9's helpers (gemm_steps/course/lesson_09.py): the shared-memory model of both thread maps against the
shipped profiles, the maps themselves, and the issue rates read from the reports."""

from __future__ import annotations

import pytest

import gemm_steps
from gemm_steps.course import lesson_09

STEP8, STEP9 = gemm_steps.get_step("double_buffered"), gemm_steps.get_step("warp_tiling")


@pytest.mark.parametrize("step", [STEP8, STEP9], ids=["step8", "step9"])
def test_each_thread_map_covers_the_block_tile_once(step):
    c = step.config
    owned = []
    for t in range(c["THREADS"]):
        row, col = lesson_09.thread_origin(c, t)
        for i in range(c["THREAD_M"]):
            for j in range(c["THREAD_N"]):
                owned.append((row + (lesson_09.fragment_offset(c, i // 4 * 4, "A") + i % 4),
                              col + (lesson_09.fragment_offset(c, j // 4 * 4, "B") + j % 4)))
    assert sorted(owned) == [(r, k) for r in range(c["BLOCK_M"]) for k in range(c["BLOCK_N"])]


def test_the_new_map_removes_the_fragment_conflicts():
    m8, m9 = lesson_09.k_step_model(STEP8), lesson_09.k_step_model(STEP9)
    assert m8["B loads"]["conflicts"] > 0 and m8["A loads"]["conflicts"] == 0
    assert m9["A loads"]["conflicts"] == m9["B loads"]["conflicts"] == 0


def test_the_model_counts_the_conflicts_the_profiler_counts():
    for step in (STEP8, STEP9):
        measured = lesson_09.measured_per_k_step(step)
        if measured is None:
            pytest.fail("the shipped Nsight Compute reports are missing (renamed?): lesson 9 reads them")
        assert lesson_09.k_step_model(step)["total"]["conflicts"] == pytest.approx(measured["conflicts"], abs=0.05)


def test_issue_rates_are_read_from_the_reports():
    rates = lesson_09.issue_rates()
    if "h100" not in rates:
        pytest.fail("the shipped Nsight Compute reports are missing (renamed?): lesson 9 reads them")
    assert 0 < rates["h100"]["step9"] < rates["h100"]["cublas"] <= 1
    assert f"{rates['h100']['step9']:.2f}" in lesson_09.issue_text()


def test_pictures_are_drawn_from_the_configuration():
    fig = lesson_09.tiling_figure(STEP9)
    assert f"{STEP9.config['BLOCK_M']} × {STEP9.config['BLOCK_N']}" in fig.axes[0].get_title()
    assert len(lesson_09.bank_figure([STEP8, STEP9]).axes) == 4


def test_the_recorded_sass_covers_every_kernel_and_reads_as_tables():
    recorded = lesson_09.SASS_RECORDED
    assert set(recorded["kernels"]) == set(lesson_09.SASS_KERNELS)
    table = lesson_09.sass_table(recorded, list(lesson_09.SASS_KERNELS))
    assert "1,164" in table and "recorded on" in table
    assert "40 more FFMAs" in lesson_09.reuse_found(recorded, STEP9)
    assert "+4.5%" in lesson_09.sass_compare(recorded, "step9 shipped", "step9 pipelined")


def test_the_recorded_sass_is_what_ptxas_and_nvdisasm_give_here():
    """Recomputes the shipped kernel's row (about 6 s) where this machine has ptxas and nvdisasm."""
    import shutil

    from gemm_steps.course.compiled import LOCAL_PTXAS
    from pathlib import Path

    if lesson_09.nvdisasm_binary() is None or not (shutil.which("ptxas") or Path(LOCAL_PTXAS).exists()):
        pytest.skip("no nvdisasm or ptxas here")
    found = lesson_09.k_loop_sass(["step9 shipped"])
    if found["tools"]["ptxas"] != lesson_09.SASS_RECORDED["tools"]["ptxas"]:
        pytest.skip(f"another ptxas here ({found['tools']['ptxas']})")
    assert found["kernels"]["step9 shipped"] == lesson_09.SASS_RECORDED["kernels"]["step9 shipped"]
