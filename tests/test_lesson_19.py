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
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.mbarrier_ops import mbarrier_arrive, mbarrier_init, mbarrier_try_wait

REPO = Path(__file__).resolve().parent.parent
STEP17, STEP19 = gemm_steps.get_step("warp_specialized"), gemm_steps.get_step(19)
RUN, TIMELINE, TIMELINE17 = lesson_19.bench_run(), lesson_19.timeline_run(), lesson_19.step17_timeline_run()
MODEL = lesson_19.model(STEP17, STEP19, RUN, TIMELINE17)
BIG4, BIG8, FLAT = lesson_19.SIZES


def test_step_19_is_the_experiments_ordered_build_the_run_measured():
    """The run timed step 19 as ``pingpong_specialized`` (experiments/kernels/pingpong_specialized.py, ordered): the
    two kernels' statements are the same once the experiment's order switch is taken out."""
    from experiments.kernels import pingpong_specialized

    def statements(source: str) -> list[str]:
        lines = [re.sub(r"\s+#.*$", "", line).strip() for line in source.splitlines()]
        lines = [line for line in lines if line and not line.startswith("#") and line != "if ORDERED:"]
        return lines[next(i for i, line in enumerate(lines) if line.startswith("barriers = ")):]

    assert statements(STEP19.kernel_source()) == statements(
        inspect.getsource(pingpong_specialized.pingpong_specialized_kernel))
    assert lesson_19.find(RUN, lesson_19.RECORD, BIG4) is not None


# -- the ring and the parity rule ---------------------------------------------------------------------------------
def test_the_ring_walk_is_the_kernels_counter():
    stages = STEP19.module.layout(STEP19.module.SEARCH_SPACE[0])["STAGES"]
    walk = lesson_19.ring_walk(STEP19, k_tiles=5, tiles=3)
    assert [e["consumer"] for e in walk] == [0] * 5 + [1] * 5 + [0] * 5
    assert all(e["stage"] == e["k_tile"] % stages and e["full_parity"] == e["k_tile"] // stages % 2 for e in walk)
    source = STEP19.kernel_source()
    for formula in ("g0 = turn * k_tiles", "stage = g % STAGES", "uint32(g // STAGES % 2)", "turn += 2"):
        assert formula in source, formula


def test_a_parity_wait_is_right_only_within_one_lap():
    for fill in range(1, 9):
        right = [p for p in range(0, fill + 5) if lesson_19.parity_wait(fill, p)["right"]]
        assert right == [fill, fill + 1]
        for p in range(fill):  # begun too early: it ends before fill `fill` lands (at once, or at an older fill)
            w = lesson_19.parity_wait(fill, p)
            assert w["at_once"] or w["ends_at"] < fill


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
            assert bool(got[phase, fill % 2]) == lesson_19.parity_wait(fill, phase)["at_once"], (phase, fill)


def test_without_the_order_consumer_1_asks_two_laps_ahead_as_the_bench_says():
    u = lesson_19.unordered_start(STEP19, 4096)
    assert (u["g"], u["stage"], u["fill"]) == (128, 128 % u["stages"], 128 // u["stages"])
    assert u["at_once"] and not u["landed"] and not u["right"]
    bench = (REPO / "experiments" / "pingpong_bench.py").read_text()
    assert f"g // STAGES = {u['k_tiles']} // {u['stages']} = {u['fill']}" in bench


def test_the_ring_figure_draws_both_panels():
    assert len(lesson_19.ring_figure(STEP19).axes) == 2


# -- the model, against the docstring that stated it before the run ----------------------------------------------------
def test_the_model_is_the_docstrings_prediction():
    doc = (REPO / "experiments" / "kernels" / "pingpong_specialized.py").read_text()
    assert "≈ 1,500–2,500 cycles" in doc and lesson_19.SAVED_CLOCKS == (1_500, 2_500)
    assert abs(MODEL["period17"] - 1_330) < 15  # "k_tiles × ≈ 1,330 cycles"
    assert "≈ 665 cycles a k-tile" in doc and abs(MODEL["same_rate_period"] - 665) < 5
    assert "≈ 170,000 cycles" in doc and abs(MODEL["sizes"][BIG4]["tile_clocks"] / 170_000 - 1) < 0.02
    quoted = re.search(r"pingpong ≈ persistent_specialized \+ ([\d.]+) to ([\d.]+) %, \+ ([\d.]+) % and \+ ([\d.]+) "
                       r"to ([\d.]+) %", " ".join(doc.split()))
    lo4, hi4, one8, lo6, hi6 = map(float, quoted.groups())
    for size, (lo, hi) in ((BIG4, (lo4, hi4)), (BIG8, (one8, one8)), (FLAT, (lo6, hi6))):
        gain = [100 * g for g in MODEL["sizes"][size]["gain"]]
        assert abs(gain[0] - lo) <= 0.3 and abs(gain[1] - hi) <= 0.3, (size, gain, lo, hi)
    assert "66 KB per 2^20 multiply-adds against step 17's 49 (+35 %" in " ".join(doc.split())
    assert round(MODEL["bytes19"] / 1024) == 66 and round(MODEL["bytes17"] / 1024) == 49
    assert MODEL["fragments19"] == 2 * MODEL["fragments17"]  # the lesson: twice the fragments per multiply-add
    assert lesson_19.k_tile_macs(STEP19) == lesson_19.k_tile_macs(STEP17)


# -- speed and verdict --------------------------------------------------------------------------------------------------
def test_the_verdict_the_lesson_words():
    v = lesson_19.verdict(RUN, MODEL)
    assert not v["prediction_met"] and not v["target_met"] and not v["at_least_step17_at_8192"]
    for size, q in v["sizes"].items():
        assert 0.6 < q["over_step17"] < 0.7, size  # "about two thirds of step 17 at every size"
        assert q["over_persistent"] < q["predicted_over_persistent"][0]
    q8 = v["sizes"][BIG8]
    assert q8["mhz"] > q8["step17_mhz"] and q8["over_step17_per_clock"] < q8["over_step17"]  # "further behind still"
    table = lesson_19.speed_table(RUN)
    assert "| step 19: persistent ping-pong" in table and lesson_19.BENCH_RUN in table


# -- the timelines ------------------------------------------------------------------------------------------------------
def test_the_consumers_take_turns_and_the_store_hides():
    for block, a in enumerate(lesson_19.alternation(TIMELINE)["blocks"]):
        summary = TIMELINE["steps"][lesson_19.TIMELINE_BUILD]["summary"]["blocks"][block]
        assert a["tiles"] == 4 and a["overlap"] < 0  # main loops never at once
        assert a["handoff"] == summary["handoff"]
        assert 0.8 < a["turn_wait"] / a["other_main_loop"] < 1.0  # a turn waits out the other's main loop
        assert a["mark_after_turn"] < 100 and a["mark_before_arrival"]  # the mark the lesson does not use
        assert a["store_covered"] > 0.5  # "covered most of it"
    s = lesson_19.store_numbers(STEP19, TIMELINE)
    assert s["store"] > 2 * s["estimate"][1]  # "far longer than the docstring guessed"
    assert len(lesson_19.pingpong_figure(TIMELINE).axes) == 1


def test_a_consumers_k_tile_is_mostly_its_own_serial_work():
    k = lesson_19.kloop_numbers(STEP17, STEP19, TIMELINE17, TIMELINE, RUN)
    p17, p19 = k["warp_specialized"], k["pingpong"]
    assert p19["period"] == float(np.median([c["period"] for c in TIMELINE["steps"][lesson_19.TIMELINE_BUILD]
                                             ["summary"]["blocks"][0]["consumers"]]))
    assert 0.9 < p19["period"] / p17["period"] < 1.25  # "about as long in step 19 as in step 17"
    for q in (p17, p19):
        assert 2.3 < q["period"] / q["tensor_clocks"] < 3.3  # "about three times the tensor core's share"
        stretches = q["wait_data"] + q["issue"] + q["wait_previous"] + q["rest"]
        assert abs(stretches / q["period"] - 1) < 0.1
    assert (p17["running"], p19["running"]) == (2, 1) and p19["busy"] < p17["busy"] / 2
    v = lesson_19.verdict(RUN, MODEL)
    assert k["bench_ratio"] == pytest.approx(v["sizes"][BIG4]["over_step17_per_clock"])
    assert k["ratio"] < k["bench_ratio"]  # the lesson: the timelines' ratio is lower than the benchmark's
    table = lesson_19.kloop_table(k)
    assert f"| **period** (turn to turn) | **{p17['period']:,.0f}** | **{p19['period']:,.0f}** |" in table
    assert len(lesson_19.kloop_figure(STEP17, STEP19, TIMELINE17, TIMELINE).axes) == 2


def test_the_lesson_keeps_to_the_cell_rule():
    assert lesson_cells("19_pingpong") <= MAX_CELLS


def test_the_lesson_does_not_blame_the_operand_path():
    """Issue 36: CUTLASS's sm90 builder takes the register path (GMMA_TMA_WS_RS) for non-16-bit inputs not K-major
    on both sides, under ping-pong too, and cuBLAS's TF32 kernel feeds one operand from registers: lessons 19 and
    22 and docs/tensor_cores.md must not say the operand path is wrong for ping-pong, and must say the tile changed
    with the schedule."""
    for path in ("lessons/19_pingpong.py", "lessons/22_where_next.py", "docs/tensor_cores.md"):
        text = " ".join((REPO / path).read_text().replace("#", " ").split())
        assert "this operand path is wrong for it" not in text, path
        assert "feeds both operands from shared memory" not in text, path
        assert "a main loop that runs alone stalls its own tensor core" not in text, path
        assert "not explained yet" in text, path
    lesson = " ".join((REPO / "lessons/19_pingpong.py").read_text().replace("#", " ").split())
    assert "GMMA_TMA_WS_RS" in lesson and "together with the schedule" in lesson
    p = __import__("gemm_steps.course.predictions", fromlist=["get"]).get(19, "pingpong_over_persistent")
    assert p.before_the_run and "+ 1 to 1.5 %" in p.text
