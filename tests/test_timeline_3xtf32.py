"""Step 18's timeline build (experiments/kernels/warp_specialized_3xtf32_timeline.py: step 18 with ``%clock64``
writes) and the summary experiments/timeline.py prints and stores for it.

On the simulator (one consumer warpgroup on a 32×64 tile, 8 k-tiles: every stage of the ring filled twice): the
product is step 18's to float32's tolerance, every event is written, each role's events come in order, and events
that wait on one another across roles come after what they wait for; the run's document (``collect``) is strict
JSON with the summary in it. The summary's arithmetic is checked on made-up timelines of two consumer warpgroups,
in lockstep and alternating, whose shares of time in flight are known. The clocks of a simulator run mean nothing:
on a GPU, ``python -m experiments.timeline --only warp_specialized_3xtf32`` records one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.steps import warp_specialized_3xtf32

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments import timeline  # noqa: E402
from experiments.kernels import warp_specialized_3xtf32_timeline as debug  # noqa: E402

K_TILES = 8


def _wgmma_here() -> bool:
    return gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)


@pytest.mark.skipif(not _wgmma_here(), reason="wgmma and the copy engine need compute capability 9.0")
def test_the_step_18_timeline_records_its_events_in_causal_order():
    config = (warp_specialized_3xtf32.SIMULATOR_CONFIG if gemm_steps.SIMULATOR
              else warp_specialized_3xtf32.SEARCH_SPACE[0])
    m, n, k = config.BLOCK_M, config.BLOCK_N, K_TILES * config.BLOCK_K
    rng = np.random.default_rng(18)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    # collect: record (which checks the product against float32's tolerance) and the summary
    collected = timeline.collect(["warp_specialized_3xtf32"], a, b, cuda.default_stream(), blocks=1, k_tiles=K_TILES,
                                 configs={"warp_specialized_3xtf32": config})
    document = json.loads(json.dumps(collected, allow_nan=False))  # strict JSON: no NaN anywhere
    run = document["steps"]["warp_specialized_3xtf32"]
    assert run["events"] == debug.EVENT_NAMES
    assert all(len(names) == debug.EVENTS for names in debug.EVENT_NAMES.values())
    events = np.array(run["cycles_since_first_event"], dtype=np.int64)[0]
    assert events.shape == (debug.ROLES, K_TILES, debug.EVENTS)
    consumers = config.THREADS // 128
    p, c = events[0], events[1:1 + consumers]
    assert (p >= 0).all() and (c >= 0).all(), "an event was never written"
    assert (events[1 + consumers:] == -1).all(), "a role that does not exist wrote events"
    assert (np.diff(p[:, :3], axis=1) >= 0).all() and (np.diff(p[:, 3:], axis=1) >= 0).all()
    assert (np.diff(c, axis=2) >= 0).all()
    assert (p[:, 1] >= p[:, 5]).all(), "a k-tile's bytes landed before its copies were issued"
    assert (c[:, :, 3] >= p[None, :, 1]).all(), "a stage was ready before the producer's first thread split it"
    stages = warp_specialized_3xtf32.Config.of(config).check().constants()["STAGES"]
    # k-tile t's stage is empty once every consumer released k-tile t − STAGES (after its wait_group 0 at
    # t − STAGES + 1)
    assert (p[stages:, 4] >= c[:, 1:K_TILES - stages + 1, 1]).all(), "a stage was refilled before it was released"
    summary = run["summary"]
    assert summary["k_tiles_summarised"] == [2, K_TILES]
    block = summary["blocks"][0]
    assert len(block["warpgroups"]) == consumers and ("consumers" in block) == (consumers == 2)
    for role in [block["producer"], *block["warpgroups"]]:
        for key, value in role.items():
            assert value is not None and (value >= 0 or key in ("split_slack", "landed_after_issue")), (key, value)


def _made_up(offset: float, period: float = 1000.0, k_tiles: int = 40) -> np.ndarray:
    """A timeline of one block with two consumers whose k-tiles take ``period`` cycles: from its turn at u·period
    waits 0 for its wgmma, adds and releases for 100, waits 0 for ready, loads fragments for 200 and issues for 100;
    its wgmma are done at its next turn, 600 after the commit. Warpgroup 1 runs ``offset`` later; the producer's
    first thread turns to k-tile u 1,000 before warpgroup 0 and has split its share 500 later."""
    e = np.full((1, 3, k_tiles, 6), -1.0)
    for w, shift in ((1, 0.0), (2, offset)):
        turn = np.arange(k_tiles) * period + shift + 10_000
        e[0, w] = np.stack([turn, turn, turn + 100, turn + 100, turn + 300, turn + 400], axis=1)
    producer = np.arange(k_tiles) * period + 9_000
    e[0, 0] = np.stack([producer + d for d in (0, 10, 500, 510, 520, 600)], axis=1)
    return e


def test_the_summary_tells_lockstep_from_alternating_warpgroups():
    """Each warpgroup's window (fragments split → the k-tile's wait_group 0 done) is 300 → 1,000 of its period:
    in lockstep both are in flight 70 % of the time and neither 30 %; half a period apart, one is always in flight
    and both 40 % (to within the part-period at the ends of the span)."""
    lockstep = timeline.summary_3xtf32(_made_up(0.0))["blocks"][0]
    alternating = timeline.summary_3xtf32(_made_up(500.0))["blocks"][0]
    w = lockstep["warpgroups"][0]
    assert w["period"] == 1000 and w["bookkeeping"] == 400 and w["add_release"] == 100 and w["fragments"] == 200
    assert w["in_flight"] == 600 and w["wait_ready"] == 0 and w["bookkeeping_without_ready_wait"] == 400
    assert w["split_slack"] == 1000 + 100 - 500  # the consumer asks 1,100 after the producer's turn, split at 500
    assert lockstep["producer"]["split"] == 490 and lockstep["producer"]["split_period"] == 1000
    c = lockstep["consumers"]
    assert c["commit_gap"] == 0 and c["phase"] == 0 and c["windows_overlap"]
    assert c["share_both_in_flight"] == pytest.approx(0.7, abs=0.01)
    assert c["share_neither_in_flight"] == pytest.approx(0.3, abs=0.01)
    c = alternating["consumers"]
    assert c["commit_gap"] == 500 and c["phase"] == 0.5
    assert c["share_neither_in_flight"] == pytest.approx(0.0, abs=1e-9)
    assert c["share_both_in_flight"] == pytest.approx(0.4, abs=0.01)
    assert c["share_one_in_flight"] == pytest.approx(0.6, abs=0.01)
