"""Lesson 10's helpers (gemm_steps/course/lesson_10.py): the tile order drawn from the kernel's formula, the register
counts by compiler, and the verdicts computed from the shipped persistence experiment."""

from __future__ import annotations

import pytest

import gemm_steps
from gemm_steps.course import lesson_10, profiles
from gemm_steps.course.exercise_solutions import expected_tile_order

PERSISTENT = gemm_steps.get_step("persistent")


@pytest.mark.parametrize("rows, cols, group_m", [(6, 8, 1), (6, 8, 2), (12, 16, 8), (13, 5, 8), (3, 7, 8)])
def test_the_kernels_formula_gives_the_exercises_order(rows, cols, group_m):
    order = lesson_10.tile_order(rows, cols, group_m)
    assert order == expected_tile_order(rows, cols, group_m)
    assert sorted(order) == [(r, c) for r in range(rows) for c in range(cols)]


def test_the_picture_uses_the_shipped_group_m_and_counts_the_first_wave():
    group_m = PERSISTENT.config["GROUP_M"]
    fig = lesson_10.tile_order_figure(PERSISTENT, rows=12, cols=16, resident=32)
    row_major, grouped = fig.axes
    assert "GROUP_M = 1" in row_major.get_title() and f"GROUP_M = {group_m}" in grouped.get_title()
    assert "2 rows of A's tiles, 16 columns" in row_major.get_xlabel()
    assert f"{group_m} rows of A's tiles, {32 // group_m} columns" in grouped.get_xlabel()
    wave = lesson_10.first_wave(PERSISTENT, rows=12, cols=16, resident=32).numbers
    assert wave["GROUP_M = 1: rows of A's tiles, columns of B's"] == "2, 16"
    assert wave["row-major / grouped"] == pytest.approx(2.1, abs=0.05)


def test_blocks_per_sm_are_counted_at_the_registers_that_ran():
    """The driver's count from the shipped report decides, not nvJitLink's (64 registers would fit more blocks)."""
    profile = profiles.load("persistent")
    if profile is None:
        pytest.fail("the shipped Nsight Compute report of step 10 is missing (renamed?): lesson 10 reads it")
    entry = {"step": "persistent", "registers": 64, "shared_bytes": 24576}
    driver = int(profile.value("Registers Per Thread"))
    assert lesson_10.resident_per_sm({"persistent_fast": entry}, PERSISTENT)["blocks"] == (65536 // (256 * driver))
    assert lesson_10.resident_per_sm({"persistent_fast": entry}, PERSISTENT)["blocks"] == 1


def test_the_verdicts_are_computed_from_the_experiment():
    experiment = lesson_10.load_experiment(1)
    if experiment is None:
        pytest.fail("the shipped persistence experiment is missing (renamed?): lesson 10 reads it")
    found = lesson_10.verdict(experiment)
    verdict = found.numbers
    for row, speedup in lesson_10.persistence(experiment):
        assert verdict[f"persistent / twin at {lesson_10.size_label(row['shape'])}"] == speedup
    assert verdict["persistence flat (within 2 %)"] == all(abs(d - 1) < 0.02 for _, d in lesson_10.persistence(experiment))
    ratios = [d for _, d in lesson_10.order(experiment).diffs]
    assert verdict["grouped / row-major, lowest"] == min(ratios) and verdict["grouped / row-major, highest"] == max(ratios)
    assert found.order in ("no consistent sign", "no difference", "one-sided")
    assert len(lesson_10.experiment_table(experiment).splitlines()) == 2 + len(experiment.rows)
    assert lesson_10.worst_table(experiment, 3).count("\n") == 4
    waves = lesson_10.waves(experiment).numbers
    assert waves["wave model's time ratio"] == 2 and 1 < waves["time ratio"] < 2
    assert 0 < lesson_10.dram_table(experiment).share < 1


def test_the_saw_tooth_reads_the_family_and_its_wave_model():
    import math

    sweep = lesson_10.saw_tooth(1)
    if sweep is None:
        pytest.fail("the shipped scheduling sweep is missing (renamed?): lesson 10's deep dive reads it")
    anchor = sweep.anchor
    assert anchor["tiles"] == sweep.blocks and anchor["model"] == anchor["dp"]["tflops"]
    for row in sweep.family:
        assert row["shape"][2] == 4096 and row["shape"][0] != row["shape"][1]
        assert row["model"] == pytest.approx(anchor["dp"]["tflops"] * row["waves"] / math.ceil(row["waves"]))
    rows = lesson_10.saw_tooth_table(sweep).rows
    assert [r["step 9 TFLOPS"] for r in rows] == [row["dp"]["tflops"] for row in sweep.family]
    numbers = lesson_10.saw_tooth_numbers(sweep).numbers
    assert numbers["above the model past every whole wave"] == all(
        row["dp"]["tflops"] >= row["model"] for row in sweep.family if row["waves"] % 1 and row["waves"] > 1)
