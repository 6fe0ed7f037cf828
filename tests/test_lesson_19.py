"""Lesson 19's numbers (gemm_steps/course/lesson_19.py, step 19 ``pingpong``): the ring's counter and the parity
rule (checked against the mbarrier twin), the model against the prediction its docstring wrote before the run, the
speed and verdict from the H100 run, the ping-pong timeline, and what the lesson's prose says of them — each claim
a number can break. No kernel runs here but one simulated thread's barrier."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, uint32, uint64

import gemm_steps
from cell_count import MAX_CELLS, lesson_cells
from gemm_steps.course import lesson_19
from gemm_steps.course.timings import record
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.mbarrier_ops import mbarrier_arrive, mbarrier_init, mbarrier_try_wait

REPO = Path(__file__).resolve().parent.parent
STEP17, STEP19 = gemm_steps.get_step("warp_specialized"), gemm_steps.get_step(19)
RUN, TIMELINE, TIMELINE17 = lesson_19.bench_run(), lesson_19.timeline_run(), lesson_19.step17_timeline_run()
MODEL = lesson_19.model(STEP17, STEP19, RUN, TIMELINE17)
BIG4, BIG8, FLAT = lesson_19.SIZES


#: Step 19's ring arithmetic since the fair ping-pong run (``ring_place``: one 32-bit division), and the expressions it
#: replaced in the kernel the H100 run timed.
RING_NOW_THEN = [("stage, lap = ring_place(g, STAGES)", "stage = g % STAGES"),
                 ("if g >= STAGES:", "if g >= STAGES:"),
                 ("mbarrier_wait(barriers, STAGES + stage, uint32((lap - 1) % 2))",
                  "mbarrier_wait(barriers, STAGES + stage, uint32((g // STAGES - 1) % 2))"),
                 ("mbarrier_wait(barriers, stage, uint32(lap % 2))", "mbarrier_wait(barriers, stage, uint32(g // STAGES % 2))"),
                 ("mbarrier_arrive(barriers, STAGES + ring_place(g - 1, STAGES)[0])",
                  "mbarrier_arrive(barriers, STAGES + (g - 1) % STAGES)"),
                 ("mbarrier_arrive(barriers, STAGES + ring_place(g0 + k_tiles - 1, STAGES)[0])",
                  "mbarrier_arrive(barriers, STAGES + (g0 + k_tiles - 1) % STAGES)")]


def test_step_19_is_the_experiments_ordered_build_the_run_measured_but_for_the_ring():
    """The run timed step 19 as ``pingpong_specialized`` (experiments/kernels/pingpong_specialized.py, ordered): the
    two kernels' statements are the same once the experiment's order switch is taken out, but for the ring's
    arithmetic, which step 19 has done in 32 bits since (``ring_place``; the lesson says so). Its stage count then was
    6, the most that fit; step 19 keeps 4 now."""
    from experiments.kernels import pingpong_specialized

    def statements(source: str) -> list[str]:
        lines = [re.sub(r"\s+#.*$", "", line).strip() for line in source.splitlines()]
        lines = [line for line in lines if line and not line.startswith("#") and line != "if ORDERED:"]
        return lines[next(i for i, line in enumerate(lines) if line.startswith("barriers = ")):]

    now = statements(STEP19.kernel_source())
    for ring_now, ring_then in RING_NOW_THEN:
        assert ring_now in now, ring_now
    then = dict(RING_NOW_THEN)
    assert [then.get(line, line) for line in now] == statements(
        inspect.getsource(pingpong_specialized.pingpong_specialized_kernel))
    assert record(RUN, lesson_19.RECORD, BIG4) is not None


# -- the ring and the parity rule ---------------------------------------------------------------------------------
def test_the_ring_walk_is_the_kernels_counter():
    stages = STEP19.module.Config.of(STEP19.module.SEARCH_SPACE[0]).check().constants()["STAGES"]
    walk = lesson_19.ring_walk(STEP19, k_tiles=5, tiles=3)
    assert [e.consumer for e in walk] == [0] * 5 + [1] * 5 + [0] * 5
    assert all(e.stage == e.k_tile % stages and e.full_parity == e.k_tile // stages % 2 for e in walk)
    source = STEP19.kernel_source()
    for formula in ("g0 = turn * k_tiles", "stage, lap = ring_place(g, STAGES)", "uint32(lap % 2)", "turn += 2"):
        assert formula in source, formula
    assert all(STEP19.module.ring_place(g, stages) == (g % stages, g // stages) for g in range(40))


def test_a_parity_wait_is_right_only_within_one_lap():
    for fill in range(1, 9):
        right = [p for p in range(0, fill + 5) if lesson_19.parity_wait(fill, p).right]
        assert right == [fill, fill + 1]
        for p in range(fill):  # begun too early: it ends before fill `fill` lands (at once, or at an older fill)
            w = lesson_19.parity_wait(fill, p)
            assert w.at_once or w.ends_at < fill


@cuda.jit
def _phases(out):
    """One barrier of one arrival a phase: before each arrival, what try_wait says for parity 0 and 1."""
    bar = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        mbarrier_init(bar, 0, 1)
        for p in range(out.shape[0]):
            out[p, 0] = mbarrier_try_wait(bar, 0, uint32(0))
            out[p, 1] = mbarrier_try_wait(bar, 0, uint32(1))
            mbarrier_arrive(bar, 0)


@pytest.mark.skipif(not SIMULATOR and tuple(cuda.get_current_device().compute_capability) != (9, 0),
                    reason="mbarrier try_wait needs compute capability 9.0")
def test_the_parity_rule_is_the_barriers():
    out = cuda.to_device(np.full((8, 2), 7, np.uint32))
    _phases[1, 32](out)
    got = out.copy_to_host()
    for phase in range(8):
        for fill in range(8):
            assert bool(got[phase, fill % 2]) == lesson_19.parity_wait(fill, phase).at_once, (phase, fill)


def test_without_the_order_consumer_1_asks_two_laps_ahead_as_the_bench_says():
    u = lesson_19.unordered_start(STEP19, 4096, lesson_19.RUN_STAGES)  # the 6-stage build the H100 run tried
    assert (u.g, u.stage, u.wait.fill) == (128, 128 % 6, 128 // 6)
    assert u.wait.at_once and not u.wait.landed and not u.wait.right
    four = lesson_19.unordered_start(STEP19, 4096)  # step 19 now: fill 32 has parity 0, the stage's phase 0 …
    assert four.stages == 4 and not four.wait.at_once and not four.wait.right  # … so it waits, for fill 0: as wrong
    bench = (REPO / "experiments" / "pingpong_bench.py").read_text()
    assert f"g // STAGES = {u.g} // {u.stages} = {u.wait.fill}" in bench


def test_the_ring_figure_draws_both_panels():
    assert len(lesson_19.ring_figure(STEP19).axes) == 2


# -- the model, against the docstring that stated it before the run ----------------------------------------------------
def test_the_model_is_the_docstrings_prediction():
    doc = (REPO / "experiments" / "kernels" / "pingpong_specialized.py").read_text()
    assert "≈ 1,500–2,500 cycles" in doc and lesson_19.SAVED_CLOCKS == (1_500, 2_500)
    assert abs(MODEL.period17 - 1_330) < 15  # "k_tiles × ≈ 1,330 cycles"
    assert "≈ 665 cycles a k-tile" in doc and abs(MODEL.same_rate_period - 665) < 5
    assert "≈ 170,000 cycles" in doc and abs(MODEL.sizes[BIG4].tile_clocks / 170_000 - 1) < 0.02
    quoted = re.search(r"pingpong ≈ persistent_specialized \+ ([\d.]+) to ([\d.]+) %, \+ ([\d.]+) % and \+ ([\d.]+) "
                       r"to ([\d.]+) %", " ".join(doc.split()))
    lo4, hi4, one8, lo6, hi6 = map(float, quoted.groups())
    for size, (lo, hi) in ((BIG4, (lo4, hi4)), (BIG8, (one8, one8)), (FLAT, (lo6, hi6))):
        gain = [100 * g for g in MODEL.sizes[size].gain]
        assert abs(gain[0] - lo) <= 0.3 and abs(gain[1] - hi) <= 0.3, (size, gain, lo, hi)
    assert "66 KB per 2^20 multiply-adds against step 17's 49 (+35 %" in " ".join(doc.split())
    assert round(MODEL.bytes19 / 1024) == 66 and round(MODEL.bytes17 / 1024) == 49
    assert MODEL.fragments19 == 2 * MODEL.fragments17  # the lesson: twice the fragments per multiply-add
    assert lesson_19.k_tile_macs(STEP19) == lesson_19.k_tile_macs(STEP17)


# -- speed and verdict --------------------------------------------------------------------------------------------------
def test_the_verdict_the_lesson_words():
    v = lesson_19.verdict(RUN, MODEL)
    assert not v.prediction_met and not v.target_met and not v.at_least_step17_at_8192
    for size, q in v.sizes.items():
        assert 0.6 < q.over_step17 < 0.7, size  # "about two thirds of step 17 at every size"
        assert q.over_persistent < q.predicted_over_persistent[0]
    q8 = v.sizes[BIG8]
    assert q8.mhz > q8.step17_mhz and q8.over_step17_per_clock < q8.over_step17  # "further behind still"
    table = lesson_19.speed_table(RUN)
    assert "| step 19: persistent ping-pong" in table and lesson_19.BENCH_RUN in table


# -- the timelines ------------------------------------------------------------------------------------------------------
def test_the_consumers_take_turns_and_the_store_hides():
    for block, a in enumerate(lesson_19.alternation(TIMELINE)):
        summary = TIMELINE["steps"][lesson_19.TIMELINE_BUILD]["summary"]["blocks"][block]
        assert a.tiles == 4 and a.overlap < 0  # main loops never at once
        assert a.handoff == summary["handoff"]
        assert 0.8 < a.turn_wait / a.other_main_loop < 1.0  # a turn waits out the other's main loop
        assert a.mark_after_turn < 100 and a.mark_before_arrival  # the mark the lesson does not use
        assert a.store_covered > 0.5  # "covered most of it"
    s = lesson_19.store_numbers(STEP19, TIMELINE)
    assert s.store > 2 * s.estimate[1]  # "far longer than the docstring guessed"
    assert len(lesson_19.pingpong_figure(TIMELINE).axes) == 1


def test_a_consumers_k_tile_is_mostly_its_own_serial_work():
    k = lesson_19.kloop_numbers(STEP17, STEP19, TIMELINE17, TIMELINE, RUN)
    p17, p19 = k.step17, k.step19
    assert p19.period == float(np.median([c["period"] for c in TIMELINE["steps"][lesson_19.TIMELINE_BUILD]
                                          ["summary"]["blocks"][0]["consumers"]]))
    assert 0.9 < p19.period / p17.period < 1.25  # "about as long in step 19 as in step 17"
    for q in (p17, p19):
        assert 2.3 < q.period / q.tensor_clocks < 3.3  # "about three times the tensor core's share"
        stretches = q.wait_data + q.issue + q.wait_previous + q.rest
        assert abs(stretches / q.period - 1) < 0.1
    assert (p17.running, p19.running) == (2, 1) and p19.busy < p17.busy / 2
    v = lesson_19.verdict(RUN, MODEL)
    assert k.bench_ratio == pytest.approx(v.sizes[BIG4].over_step17_per_clock)
    assert k.ratio < k.bench_ratio  # the lesson: the timelines' ratio is lower than the benchmark's
    table = lesson_19.kloop_table(k)
    assert f"| **period** (turn to turn) | **{p17.period:,.0f}** | **{p19.period:,.0f}** |" in table
    assert len(lesson_19.kloop_figure(STEP17, STEP19, TIMELINE17, TIMELINE).axes) == 2


def test_the_lesson_keeps_to_the_cell_rule():
    assert lesson_cells("19_pingpong") <= MAX_CELLS


def test_the_lesson_does_not_blame_the_operand_path():
    """Issue 36: CUTLASS's sm90 builder takes the register path (GMMA_TMA_WS_RS) for non-16-bit inputs not K-major
    on both sides, under ping-pong too, and cuBLAS's TF32 kernel feeds one operand from registers: lessons 19 and
    22 and docs/tensor_cores.md must not say the operand path is wrong for ping-pong, and must cite the controlled
    run (experiments/pingpong_fair.py) that separates the schedule from the tile."""
    for path in ("lessons/19_pingpong.py", "lessons/25_where_next.py", "docs/tensor_cores.md"):
        text = " ".join((REPO / path).read_text().replace("#", " ").split())
        assert "this operand path is wrong for it" not in text, path
        assert "feeds both operands from shared memory" not in text, path
        assert "a main loop that runs alone stalls its own tensor core" not in text, path
        assert "not explained yet" not in text and "pingpong_fair" in text, path  # the controlled run explains it
    lesson = " ".join((REPO / "lessons/19_pingpong.py").read_text().replace("#", " ").split())
    assert "GMMA_TMA_WS_RS" in lesson and "together with the schedule" in lesson
    p = __import__("gemm_steps.course.predictions", fromlist=["get"]).get(19, "pingpong_over_persistent")
    assert p.before_the_run and "+ 1 to 1.5 %" in p.text


# -- ping-pong, fairly (experiments/pingpong_fair.py, two H200 runs, and Nsight Compute) ------------------------------
FAIR = lesson_19.fair_runs()
COUNTERS = lesson_19.fair_counters()


def test_the_fair_runs_and_counters_are_shipped_with_the_builds_the_lesson_names():
    assert len(FAIR) == 2 and COUNTERS is not None
    for run in FAIR:
        for name, _ in lesson_19.FAIR_ROWS + [("cublas_tf32", "")]:
            for size in lesson_19.FAIR_SIZES:
                assert record(run, name, size) is not None, (name, size)
    assert set(COUNTERS["builds"]) == {name for name, _ in lesson_19.FAIR_ROWS}


def test_the_schedule_alone_costs_about_a_third_inside_the_prediction():
    """The lesson: "Inside the prediction … the schedule alone costs about a third"."""
    from gemm_steps.course import predictions

    p = predictions.get(19, "pingpong_fair_schedule")
    for (_, size), q in lesson_19.fair_numbers(FAIR).items():
        lo, hi = predictions.ratio_range(p, size)
        assert lo <= q.schedule <= hi and 0.6 <= q.schedule <= 0.7, (size, q)


def test_the_wide_pingpong_takes_its_bytes_ratio_in_cycles_at_the_highest_l2_rate():
    """The lesson: about 1.44× the bytes and 1.44× the cycles, at the same L2 rate as step 17 persistent, the highest
    any build drew; step 19's tile moves fewer bytes, well below that rate, with more instructions per FLOP."""
    bt = lesson_19.bytes_and_time(COUNTERS)
    assert round(bt.bytes, 2) == round(bt.cycles, 2) == 1.44
    assert abs(bt.rate_wide / bt.rate_coop - 1) < 0.02
    builds = COUNTERS["builds"]
    assert max(b["l2_tb_per_s"] for b in builds.values()) <= max(bt.rate_wide, bt.rate_coop)
    narrow, wide = builds["pingpong_4"], builds["pingpong_wide_4"]
    assert narrow["l2_bytes_per_kflop"] < wide["l2_bytes_per_kflop"] and narrow["l2_tb_per_s"] < 0.85 * wide["l2_tb_per_s"]
    assert narrow["warp_instructions_per_mflop"] > 1.3 * wide["warp_instructions_per_mflop"]


def test_six_stages_ran_slower_than_four_with_either_ring_and_the_ring_prediction_missed():
    """The lesson: 6 stages ran slower than 4; the 32-bit ring closed part of the gap, below the predicted 0.97."""
    from gemm_steps.course import predictions

    numbers = lesson_19.fair_numbers(FAIR)
    lo, _ = predictions.ratio_range(predictions.get(19, "pingpong_ring_32bit"), 4096)
    for size in (4096, 8192):
        first, second = numbers[(0, size)].six_over_four, numbers[(1, size)].six_over_four
        assert first < second < lo, (size, first, second)
    change = lesson_19.step19_before_after()
    assert all(q.after > q.before * 1.15 for q in change.values()), change


def test_step_19s_source_quotes_the_fair_runs_as_they_are():
    """ring_place's docstring and Config.STAGES's comment quote the stage-count ratios of the two fair runs."""
    source = inspect.getsource(STEP19.module)
    numbers = lesson_19.fair_numbers(FAIR)
    first, second = numbers[(0, 4096)].six_over_four, (numbers[(1, 4096)], numbers[(1, 8192)])
    assert f"ran {first:.2f}×" in " ".join(source.split())
    assert f"{second[0].six_over_four:.2f}× / {second[1].six_over_four:.2f}×" in source
    assert f"{1 / second[0].six_over_four:.2f}× / {1 / second[1].six_over_four:.2f}×" in source
