"""Lesson 9's helpers (gemm_steps/course/lesson_09.py): the shared-memory model of both thread maps against the
shipped profiles, the maps themselves, and the issue rates read from the reports."""

from __future__ import annotations

import pytest

import gemm_steps
from gemm_steps.course import lesson_09

STEP8, STEP9 = gemm_steps.get_step("double_buffered"), gemm_steps.get_step("warp_tiling")
MISSING = type("Missing", (), {"rows": []})


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
    assert m8.b_loads.conflicts > 0 and m8.a_loads.conflicts == 0
    assert m9.a_loads.conflicts == m9.b_loads.conflicts == 0


def test_the_model_counts_the_conflicts_the_profiler_counts():
    for step in (STEP8, STEP9):
        measured = lesson_09.measured_per_k_step(step)
        if measured is None:
            pytest.fail("the shipped Nsight Compute reports are missing (renamed?): lesson 9 reads them")
        assert lesson_09.k_step_model(step).total.conflicts == pytest.approx(measured["conflicts"], abs=0.05)


def test_issue_rates_are_read_from_the_reports():
    from gemm_steps.course import profiles

    rows = (lesson_09.issue_table() or MISSING).rows
    if [r["GPU, size"] for r in rows] != ["H100, 2048³", "H200, 4096³"]:
        pytest.fail("the shipped Nsight Compute reports are missing (renamed?): lesson 9 reads them")
    for r in rows:
        assert 0 < r["step 9"] < r["cuBLAS"] <= 1 and 0.9 < r["cuBLAS's warp-instructions / step 9's"] < 1.1
    assert rows[0]["step 9"] == profiles.load("warp_tiling").value("Issued Warp Per Scheduler")
    h200 = {k.kernel: k for k in lesson_09.ncu_h200_kernels()}
    assert rows[1]["step 9"] == h200["step9_shipped_fast_kernel"].issue


def test_pictures_are_drawn_from_the_configuration():
    fig = lesson_09.tiling_figure(STEP9)
    assert f"{STEP9.config['BLOCK_M']} × {STEP9.config['BLOCK_N']}" in fig.axes[0].get_title()
    assert len(lesson_09.bank_figure([STEP8, STEP9]).axes) == 4


def test_the_shipped_sass_covers_every_kernel_and_reads_as_tables():
    sass = lesson_09.k_loop_sass()
    if sass is None:
        pytest.fail(f"the shipped {lesson_09.SASS_FILE} is missing (renamed?): lesson 9's deep dive reads it")
    labels = ["step9 shipped", "row_order", "step9 pipelined", "uint32 stage", "async B", "async A+B",
              "async A+B, uint32 stage"]
    assert list(sass["kernels"]) == labels
    for k in sass["kernels"].values():
        assert k["ffma"] == STEP9.config["THREAD_M"] * STEP9.config["THREAD_N"] * STEP9.config["BLOCK_K"]
        assert k["ffma"] <= k["instructions"] and 0 <= k["reuse"] <= k["ffma"] and 0 < k["registers"] <= 255
    rows = lesson_09.sass_table(sass, labels).rows
    assert [r["instructions in the k-tile loop"] for r in rows] == [k["instructions"] for k in sass["kernels"].values()]
    assert rows[0]["change"] == 0 and rows[2]["change"] == pytest.approx(
        sass["kernels"]["step9 pipelined"]["instructions"] / sass["kernels"]["step9 shipped"]["instructions"] - 1)


def test_the_shipped_sass_is_what_ptxas_and_nvdisasm_give_here():
    """Recomputes the shipped kernel's row (about 6 s) where this machine has ptxas and nvdisasm."""
    import shutil
    from pathlib import Path

    from gemm_steps.course import sass
    from gemm_steps.course.compiled import LOCAL_PTXAS
    from gemm_steps.harness import gpu_mode

    if sass.nvdisasm_binary() is None or not (shutil.which("ptxas") or Path(LOCAL_PTXAS).exists()):
        pytest.skip("no nvdisasm or ptxas here")
    shipped = lesson_09.k_loop_sass()
    try:
        found = gpu_mode.call("gemm_steps.course.sass:step_k_loop", "warp_tiling", timeout=600)
    except gpu_mode.GPUModeError as exc:
        pytest.skip(f"NVVM cannot compile here: {exc}")
    if found["tools"]["ptxas"] != shipped["tools"]["ptxas"]:
        pytest.skip(f"another ptxas here ({found['tools']['ptxas']}; the file's: {shipped['tools']['ptxas']})")
    assert found["kernels"]["warp_tiling"] == shipped["kernels"]["step9 shipped"]


def test_the_loop_mix_finds_the_loop_with_the_most_ffmas():
    from gemm_steps.course.sass import loop_mix

    listing = """
.L_x_1:
        /*0010*/                   FFMA R1, R2, R3, R1 ;
        /*0020*/              @P0 BRA `(.L_x_1) ;
.L_x_2:
        /*0030*/                   FFMA R1, R2.reuse, R3, R1 ;
        /*0040*/                   FFMA R4, R2, R5, R4 ;
        /*0050*/                   LDS R2, [R6] ;
        /*0060*/              @P1 BRA `(.L_x_2) ;
"""
    mix, size = loop_mix(listing)
    assert mix["FFMA"] == 2 and mix["FFMA.reuse"] == 1 and mix["LDS"] == 1 and size == 5


def test_the_model_table_holds_the_model_and_the_profilers_counts():
    assert lesson_09.model_agrees([STEP8, STEP9])
    rows = {r["per warp and k-step"]: r for r in lesson_09.model_table([STEP8, STEP9]).rows}
    for step in (STEP8, STEP9):
        model, measured, column = lesson_09.k_step_model(step), lesson_09.measured_per_k_step(step), f"step {step.number}"
        assert rows["**bank conflicts (model)**"][column] == model.total.conflicts
        assert rows["**bank conflicts (profiler)**"][column] == measured["conflicts"]
        assert 0 <= model.total.wavefronts - rows["**wavefronts (profiler)**"][column] < 5
    assert rows["bank conflicts (model): B loads"]["step 8"] > 0 == rows["bank conflicts (model): B loads"]["step 9"]


def test_the_reuse_counts_and_the_pipelining_budget_come_from_the_sass_file():
    sass = lesson_09.k_loop_sass()
    reuse = lesson_09.reuse_counts(sass, STEP9).numbers
    c = STEP9.config
    assert reuse["extra .reuse at most (row ends)"] == (c["THREAD_M"] - 1) * c["BLOCK_K"]
    assert reuse["extra .reuse found"] == sass["kernels"]["step9 shipped"]["reuse"] - sass["kernels"]["row_order"]["reuse"]
    assert 0 < reuse["extra .reuse found"] <= reuse["extra .reuse at most (row ends)"]
    budget = lesson_09.pipelining_prediction(sass, STEP9).numbers
    assert budget["cycles per k-tile"] == pytest.approx(
        budget["warps per scheduler"] * budget["instructions per k-tile (SASS)"] / list(budget.values())[2])
    assert 0 < budget["30 cycles of latency, as a share"] < 0.05


def test_the_sweeps_separate_the_map_from_the_tiles():
    from gemm_steps.course.timings import load_shipped

    sweep = load_shipped("tuning-warp_tiling-*.json", "test")
    step8 = load_shipped("tuning-double_buffered-*.json", "test")
    if not (sweep and step8):
        pytest.fail("the shipped tuning sweeps of steps 8 and 9 are missing (renamed?): lesson 9 reads them")
    parts = lesson_09.map_and_tiles(sweep, step8)
    assert parts.map_alone == pytest.approx(parts.best8["median_ms"] / parts.same_tiles["median_ms"])
    assert parts.map_alone * parts.tiles_alone == pytest.approx(parts.best8["median_ms"] / parts.best9["median_ms"])
    assert [r["ms"] for r in parts.table.rows[:3]] == [
        parts.best8["median_ms"], parts.same_tiles["median_ms"], parts.best9["median_ms"]]


def test_the_experiments_read_as_numbers():
    from gemm_steps.course.timings import load_shipped

    fma = load_shipped("experiment-fma-order-*.json", "test")
    shapes = load_shipped("experiment-code-shapes-*.json", "test")
    if not (fma and shapes):
        pytest.fail("the shipped FMA-order or code-shapes experiments are missing (renamed?): lesson 9 reads them")
    from gemm_steps.course.sweeps import variants_table
    from gemm_steps.course.timings import record, time_ratios

    gains = time_ratios(fma, "row_order", ["serpentine"])["serpentine"]
    assert gains and all(g > 1 for g in gains.values())
    m = max(gains)
    assert gains[m] == record(fma, "row_order", m)["median_ms"] / record(fma, "serpentine", m)["median_ms"]
    assert f"{gains[m]:.3f}×" in variants_table(fma, only=["serpentine"], base="row_order")
    found = lesson_09.code_shapes(shapes)
    assert found.adopt == (min(found.gains[found.best]) > 0.01)
    assert all(min(found.gains[found.best]) >= min(g) for g in found.gains.values())


def test_a_table_of_rows_formats_and_aligns_by_column():
    from gemm_steps.course.display import table

    rows = [{"kernel": "a", "ms": 1.23456, "n": 1234, "note": None}, {"kernel": "b", "ms": 2.0, "n": 5, "note": "x"}]
    t = table(rows, {"ms": "{:.3f}"})
    assert t.splitlines() == ["| kernel | ms | n | note |", "|:--|--:|--:|:--|", "| a | 1.235 | 1,234 | — |",
                              "| b | 2.000 | 5 | x |"]
    assert t.rows is rows


def test_a_table_aligns_as_told_and_can_write_blank_cells_tight():
    from gemm_steps.course.display import table

    rows = [{"": "error", "A": "1.2e-05", "B": "yes"}, {"": "tile", "A": "", "B": "—"}]
    assert table(rows).splitlines()[:2] == ["|  | A | B |", "|:--|:--|:--|"]  # letters make a column left-aligned
    t = table(rows, align="lrc", tight_blanks=True)
    assert t.splitlines() == ["| | A | B |", "|:--|--:|:-:|", "| error | 1.2e-05 | yes |", "| tile | | — |"]
    assert table(rows, align="lrc").splitlines()[3] == "| tile |  | — |"
    with pytest.raises(ValueError):
        table(rows, align="lr")
