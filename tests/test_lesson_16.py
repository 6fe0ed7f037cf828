"""Lesson 16's numbers (gemm_steps/course/lesson_16.py, step 16): the ring's parities from the kernel's formulas, the
pause model, the verdict from the records of the shipped run and on made-up ones, the timeline's medians against the
raw events, the claims the lesson and its deep dive make in words, and the cell-count rule."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

import gemm_steps
from cell_count import MAX_CELLS, lesson_cells
from gemm_steps.course import gpu_model, lesson_16, predictions, timelines
from gemm_steps.course.targets import HOPPER_SIZES, hopper_tf32_verdict
from gemm_steps.course.timings import load_run, producer_order_run, record
from gemm_steps.course.targets import TARGET_HOPPER_TF32_PCT_OF_CUBLAS

STEP16 = gemm_steps.get_step("tma_pipeline")
RUN = producer_order_run()
TIMELINE = timelines.timeline_run()
BIG = HOPPER_SIZES


def test_the_ring_schedule_is_the_kernels_formulas():
    ring = gpu_model.ring_constants(STEP16)
    stages = ring["STAGES"]
    for e in gpu_model.ring_schedule(stages, 3 * stages):
        t = e["k_tile"]
        assert e["stage"] == t % stages and e["full_parity"] == (t // stages) % 2  # the consumers' wait
        if t >= stages:
            assert e["empty_parity"] == (t // stages - 1) % 2  # the producer's wait before a refill
            # the refill waits for the release of the k-tile STAGES before it, whose fill completed the other parity
            assert e["empty_parity"] != e["full_parity"]
        else:
            assert e["empty_parity"] is None


def test_the_snapshot_holds_the_k_tiles_the_lesson_names():
    ring = gpu_model.ring_constants(STEP16)
    snap = {e.state: e.k_tile for e in lesson_16.ring_snapshot(ring["STAGES"], ring["LOAD_AHEAD"], 6)}
    assert snap == {"filling": 6, "ahead": 5, "read": 4, "in flight": 3}  # four stages, all in use
    assert lesson_16.ring_figure(STEP16).axes


def test_the_pause_model():
    """Worked out after the run (the lesson labels it so): the exact k-tile of 1,024 clocks, not the prediction's."""
    model = lesson_16.pause_model(STEP16, RUN)
    assert model.tensor_clocks == 2 * 256 * 128 * 32 / 2048
    for size, q in model.sizes.items():
        step15 = record(RUN, "warpgroup_tf32", size)["tflops"]
        assert q.predicted == pytest.approx(step15 * (1 + model.pause_clocks / model.tensor_clocks))


def test_the_verdict_against_the_committed_prediction():
    """Issue 36: the lesson compares step 16 with the +5 to +10 % written before the run (predictions/16.json),
    not with a number worked out afterwards; inside the range at 4096³, above it at 8192³, where the grouped order
    (left out of the model) alone bought over 4 %."""
    p = predictions.get(16, "tma_ring_over_step15")
    assert p.before_the_run and "+5 to +10 % over step 15" in p.text and "~1,100" not in p.text
    low, high = predictions.ratio_range(p)
    v = hopper_tf32_verdict(RUN, "tma_pipeline")["sizes"]
    assert low <= v[BIG[0]]["vs_previous"] <= high
    assert v[BIG[1]]["vs_previous"] > high
    gain = lesson_16.order_gain(load_run(lesson_16.ORDER_RUN)).gain
    assert gain[BIG[1]] > 1.04 and abs(gain[BIG[0]] - 1) < 0.02


def test_the_lesson_says_who_adds_and_who_subtracts_the_bytes():
    text = (Path(__file__).resolve().parents[1] / "lessons/16_tma_pipeline.py").read_text()
    assert "copy engine can add" not in text  # a thread announces the bytes; the copy engine's complete_tx subtracts
    assert "mbarrier.expect_tx" in text and "complete_tx" in text
    assert "All the timings in this lesson come\n# from one run" not in text  # the builds' table is four H100 runs
    assert "four runs on an **H100**" in text
    assert {row.gpu for row in lesson_16.history()} == {"NVIDIA H100 80GB HBM3"} and len(lesson_16.history()) == 4


def _fake_run(step16: float, cublas_tf32: float = 400.0):
    run = copy.deepcopy(RUN)
    for r in run["records"]:
        if r["step"] == "tma_pipeline":
            r["tflops"] = step16
        if r["step"] == "cublas_tf32":
            r["tflops"] = cublas_tf32
    return run


def test_the_verdict_follows_from_the_records():
    v = hopper_tf32_verdict(RUN, "tma_pipeline")
    for size, q in v["sizes"].items():
        r, tf32 = (record(RUN, k, size) for k in ("tma_pipeline", "cublas_tf32"))
        assert q["pct_of_cublas_tf32"] == pytest.approx(100 * r["tflops"] / tf32["tflops"])
    assert v["met"] == all(q["pct_of_cublas_tf32"] >= TARGET_HOPPER_TF32_PCT_OF_CUBLAS for q in v["sizes"].values())
    assert hopper_tf32_verdict(_fake_run(370.0), "tma_pipeline")["met"]
    assert not hopper_tf32_verdict(_fake_run(350.0), "tma_pipeline")["met"]
    assert not hopper_tf32_verdict(_fake_run(100.0), "tma_pipeline")["at_least_previous_at_8192"]


def test_the_speed_table_has_every_kernel_with_its_clock():
    table = lesson_16.speed_table(RUN)
    for kernel, label, _ in lesson_16.ROWS:
        assert label in table
    r = record(RUN, "tma_pipeline", BIG[1])
    assert f"**{r['tflops']:.1f}**" in table and f"{r['sm_clock_mhz_median']:.0f} (" in table
    assert lesson_16.speed_figure(RUN).axes


def test_the_ragged_shape_runs_the_edge_kernel_in_every_step():
    assert lesson_16.ragged_same(RUN).same


def test_the_timeline_medians_come_from_the_events():
    e = timelines.events(TIMELINE, "tma_pipeline")[0]
    assert np.array_equal(timelines.events(TIMELINE, "tma_pipeline", 0), e, equal_nan=True)  # one block, the same
    m = timelines.timeline_medians(TIMELINE, "tma_pipeline")
    w1 = e[2, timelines.WARM_UP_K_TILES:]
    assert m["warpgroups"][1]["wait_data"] == np.median(w1[:, 1] - w1[:, 0])
    assert m["warpgroups"][1]["period"] == np.median(np.diff(w1[:, 0]))
    # the lesson's reading: warpgroup 0 carries the producer and runs about two k-tiles behind; warpgroup 1 waits
    # longer for data than warpgroup 0; each period is about twice the tensor cores' need; the recording slows it
    assert 1.5 <= m["behind"] <= 2.5
    assert m["warpgroups"][1]["wait_data"] > 2 * m["warpgroups"][0]["wait_data"]
    assert 1.7 <= m["period"] / gpu_model.tensor_clocks(gpu_model.ring_constants(STEP16)) <= 2.3
    implied = lesson_16.implied_tflops(TIMELINE, "tma_pipeline", STEP16)
    assert implied < record(RUN, "tma_pipeline", BIG[0])["tflops"]
    assert timelines.timeline_figure(TIMELINE, ["tma_pipeline"]).axes


def test_the_history_and_the_late_producer():
    rows = lesson_16.history()
    assert rows[1].sizes[BIG[0]].vs_step15 < 1 < rows[-1].sizes[BIG[0]].vs_step15  # slower, then faster
    for size in BIG:  # "gained little"
        assert record(RUN, "late_producer", size)["tflops"] / record(RUN, "tma_pipeline", size)[
            "tflops"] < 1.05


def test_the_8192_drop_deep_dive():
    gain = lesson_16.order_gain(load_run(lesson_16.ORDER_RUN))
    assert 0.25 <= gain.share_recovered <= 0.45  # "about a third"
    drop = lesson_16.drop(RUN)
    assert all(q.per_clock >= 1.0 for k, q in drop.items() if k != "cublas")  # per clock, no drop
    for size in (4096, 8192):  # the model: grouped by 8 reads the fewest bytes per FLOP of the orders
        per = {g: lesson_16.wave_traffic(size, g, 132).mb_per_gflop for g in (1, 4, 8, 16)}
        assert min(per, key=per.get) == 8
    assert lesson_16.wave_traffic(8192, 1, 132).mb_per_gflop > lesson_16.wave_traffic(4096, 1, 132).mb_per_gflop
    profile = lesson_16.order_profile()
    assert profile[(8192, 1)].dram_gb > 1.5 * profile[(8192, 8)].dram_gb
    assert lesson_16.timing_agreement(load_run(lesson_16.TIMING_RUN)) < 0.02


def test_the_lesson_keeps_to_25_cells():
    assert lesson_cells("16_tma_pipeline") <= MAX_CELLS
