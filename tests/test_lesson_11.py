"""Lesson 11's helpers (gemm_steps/course/lesson_11.py) on the shipped sweeps: numbers, not wording. No compiling:
the stream-K kernel's registers are given (one block per SM, as the lesson's compile finds)."""

from __future__ import annotations

import numpy as np
import pytest

import gemm_steps
from gemm_steps.course import lesson_11, targets
from gemm_steps.course.timings import common_sizes, load_shipped, record
from gemm_steps.steps.stream_k import WAVE_EFFICIENCY_FOR_DATA_PARALLEL

ONE_BLOCK_PER_SM = {"stream_k_fast": {"registers": 255, "shared_bytes": 0}}


@pytest.fixture(scope="module")
def sweep():
    found = lesson_11.load_sweep(ONE_BLOCK_PER_SM)
    if found is None:
        pytest.fail("the shipped scheduling sweep is missing (renamed?): lesson 11 reads it")
    return found


def test_the_schedule_gives_every_k_iteration_once_and_the_model_balances_it():
    tiles, k_tiles, blocks = 5, 8, 4
    work = lesson_11.shares(tiles, k_tiles, blocks)
    done = sorted((tile, first + i) for pieces in work for tile, first, count in pieces for i in range(count))
    assert done == [(t, k) for t in range(tiles) for k in range(k_tiles)]
    _, finish = lesson_11.timelines(tiles, k_tiles, blocks)
    _, one_each = lesson_11.timelines(tiles, k_tiles, blocks, split=lesson_11.one_tile_per_block)
    assert finish < one_each == 2 * k_tiles


def test_the_backward_walk_waits_one_link_deep_and_the_forward_walk_chains():
    backwards, forwards = lesson_11.waits(5, 8, 4), lesson_11.waits(5, 8, 4, backwards=False)
    assert backwards == lesson_11.Waits(lower_only=True, flags_per_block=1, waited_before_flag=[], chain=1)
    assert forwards.lower_only and forwards.waited_before_flag and forwards.chain > 1


def test_prediction_and_split_come_from_the_schedule(sweep):
    for row in sweep.rows:
        assert row["dp_tiles"] + row["sk_tiles"] == row["tiles"]
        assert row["predicted"] >= 1 - 1e-9
    pred = lesson_11.prediction(sweep).numbers
    assert pred["a partial tile (KiB)"] == sweep.BM * sweep.BN * 4 // 1024
    assert any(key.endswith("balancing can buy up to") for key in pred)
    assert pred["threshold: split below this share busy"] == WAVE_EFFICIENCY_FOR_DATA_PARALLEL
    assert all(r["sk_tiles"] == 0 for r in sweep.rows if r["busy"] >= WAVE_EFFICIENCY_FOR_DATA_PARALLEL)


def test_the_verdict_and_the_kernel_cost_are_the_sweeps_numbers(sweep):
    verdict = lesson_11.verdict(sweep).numbers
    groups = lesson_11.groups(sweep)
    speedups = [lesson_11.speedup(r) for r in groups["deep"]]
    assert verdict["deep: step 11 ÷ step 9"] == f"{min(speedups):.2f}×–{max(speedups):.2f}×"
    assert min(speedups) > 1
    cost = lesson_11.kernel_cost(sweep)
    assert verdict["stream-K kernel ÷ step 10 with nothing to split (median)"] == pytest.approx(
        float(np.median(list(cost.values()))))
    fallback = lesson_11.fallback(sweep, verdict["stream-K kernel ÷ step 10 with nothing to split (median)"])
    assert fallback.numbers["break-even share busy (1 ÷ kernel cost)"] < 1


def test_the_first_version_and_the_wait_argument(sweep):
    forward = load_shipped("experiment-scheduling-forward-walk-nvidia-h200.json", "test")
    if forward is None:
        pytest.fail("the shipped forward-walk sweep is missing (renamed?): lesson 11's deep dive reads it")
    found = lesson_11.forward_walk(sweep, forward)
    assert found.numbers["worst slowdown"] == max(w[4] for w in found.walk) > 2
    assert found.correct and found.numbers["correct"]
    waits = lesson_11.wait_table(sweep)
    assert waits.holds and waits.shapes == sum(1 for r in sweep.rows if r["sk_tiles"])


def test_the_reader_fence_run_is_read_per_shape():
    run = load_shipped("experiment-stream-k-reader-fence-nvidia-h100.json", "test")
    if run is None:
        pytest.fail("the shipped reader-fence run is missing (renamed?): lesson 11's fixup deep dive reads it")
    rows = lesson_11.reader_fence_table(run, ONE_BLOCK_PER_SM).rows
    shapes = sorted({(r["M"], r["N"], r["K"]) for r in run["records"] if r["step"] == "stream_k"},
                    key=lambda s: s[0] * s[1] * s[2])
    assert len(rows) == len(shapes) and all(r["C fully written"] == "yes" for r in rows)
    for row, shape in zip(rows, shapes):
        sk, p = (record(run, name, shape) for name in ("stream_k", "persistent"))
        assert row["step 11 ÷ step 10"] == f"{sk['median_ms'] / p['median_ms']:.2f}×"


def test_the_target_comes_from_the_targets_module():
    full = load_shipped("bench-*.json", "test")
    course = [step.name for step in gemm_steps.steps() if step.arithmetic == "fp32"]
    sizes = common_sizes(full, course)[-2:]
    verdict = lesson_11.target_verdict(full, course, sizes)
    best = max(max((r for r in full["records"] if r["step"] in course and (r["M"], r["N"], r["K"]) == s
                    and "error" not in r), key=lambda r: r["tflops"])["pct_of_cublas"] for s in sizes)
    assert verdict.numbers["target, % of cuBLAS"] == targets.TARGET_SGEMM_PCT
    assert verdict.met == (best >= targets.TARGET_SGEMM_PCT)
