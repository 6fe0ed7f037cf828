"""Step 19, persistent ping-pong (gemm_steps/steps/pingpong.py: step 17 with each consumer warpgroup owning whole
tiles, the block's tiles taken in turn, the main loops ordered by named barriers), the experiment's copy of it with
the order switched off (experiments/kernels/pingpong_specialized.py: on the simulator only), and the named-barrier
twins it uses (gemm_steps/toolkit/mbarrier_ops.py: ``bar.sync`` / ``bar.arrive``).

On the simulator (32×128 tiles, 3 blocks) and on a GPU (128×128 tiles, one block an SM): the product equals float64
on the inputs the tensor core reads (A truncated to TF32, B rounded) to float32 rounding. That holds only if every
stage of the ring is filled, waited for and released in the right phase across a block's tiles — the ring's counter
runs over the block's tiles in turn, so a consumer's k-tiles sit where the other consumer's tiles end — and every
named-barrier wait meets its arrival (a missed one ends in the twin's timeout, not a wrong answer). Its compiled code
is checked with every step's (tests/test_ptx.py: the step's PTX_EXPECT and PTXAS_EXPECT). On an H100/H200
experiments/pingpong_bench.py measures it.

The same for the fair control, step 19's schedule with step 17's 256×64 tile a consumer
(experiments/kernels/pingpong_wide.py, measured by experiments/pingpong_fair.py): its product on the simulator (64×64
tiles) and a GPU, its stage counts, and its PTX and ptxas report compiled here."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness.verify import relative_error, tf32_tolerance
from gemm_steps.steps import warp_specialized, warpgroup_tf32
from gemm_steps.toolkit import mbarrier_ops
from gemm_steps.toolkit.mbarrier_ops import named_barrier_arrive, named_barrier_sync
from helpers import tf32_fed

from gemm_steps.steps import pingpong

from experiments.kernels import pingpong_specialized, pingpong_wide


def _wgmma_here() -> bool:
    return gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)


wgmma_only = pytest.mark.skipif(not _wgmma_here(), reason="wgmma and the copy engine need compute capability 9.0")
CONFIG = pingpong.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else pingpong.SEARCH_SPACE[0]


def _check_product(kernels, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    for _ in range(1 if gemm_steps.SIMULATOR else 2):  # on a GPU the second launch replays the recorded plan
        kernels.launch(cuda.to_device(a), cuda.to_device(b), c)
    got = c.copy_to_host()
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements of C never written"
    fed = tf32_fed(a, b, kernels)
    assert np.abs(got - fed).max() <= 1e-5 * np.abs(fed).max()
    assert relative_error(got, a, b) <= tf32_tolerance(k)


def _tiles_of_blocks(tiles: int, blocks: int) -> list[int]:
    """How many tiles each block of the persistent grid walks (block b: tiles b, b + blocks, …)."""
    return [len(range(b, tiles, blocks)) for b in range(blocks)]


#: (tile rows, tile columns, k-tiles, ring stages, ordered) on the simulator's 3 blocks; on a GPU the tiles are
#: 128×128, the grid one block an SM (or a tile), the ring 4 stages, and the 8-tile cases become 24×24 tiles.
#: * 4×2 tiles: blocks walk 3, 3, 2 tiles — block 0's consumer 0 takes two (its tiles 0 and 2), consumer 1 one (an
#:   odd count), block 2's one each; 2 k-tiles a tile through 3 stages, so tiles straddle the ring's wrap and a
#:   consumer's k-tiles start where the other's end (global k-tile 2j·2 + …), both phases of every barrier.
#: * 2×2 tiles, 3 k-tiles, 2 stages: blocks walk 2, 1, 1 tiles — the second and third blocks' consumer 1 has none
#:   (no order arrival may be left waiting for it); an odd k-tile count (the loop's last pass half empty).
#: * the first shape without the order barriers.
CASES = [pytest.param(4, 2, 2, 3, True, id="8tiles-3blocks-ordered"),
         pytest.param(2, 2, 3, 2, True, id="4tiles-3blocks-idle-consumer"),
         pytest.param(4, 2, 2, 3, False, id="8tiles-3blocks-unordered",
                      marks=pytest.mark.skipif(not gemm_steps.SIMULATOR, reason=(
                          "on a GPU the unordered build's consumer 1 runs two laps of the ring ahead and its parity "
                          "waits pass early: the launch failed on an H100 (experiments/pingpong_bench.py)")))]


@wgmma_only
@pytest.mark.parametrize("rows,cols,k_tiles,stages,ordered", CASES)
def test_both_consumers_take_their_turns_and_the_ring_runs_across_tiles(rows, cols, k_tiles, stages, ordered):
    stages = stages if gemm_steps.SIMULATOR else None
    # Step 19; the experiment's copy with its order switch off (experiments/kernels/pingpong_specialized.py)
    kernels = pingpong.build(CONFIG, stages) if ordered else pingpong_specialized.build(CONFIG, stages, ordered=False)
    if not gemm_steps.SIMULATOR and rows * cols > 4:  # on a GPU: 4–5 tiles a block (576 on 132 SMs), 16 k-tiles
        rows, cols, k_tiles = 24, 24, 16
    blocks = min(rows * cols, kernels.resident_blocks("fast"))
    walks = _tiles_of_blocks(rows * cols, blocks)
    if rows * cols > 4:
        assert max(walks) >= 2 and min(walks) < max(walks), walks  # several tiles a block, and uneven
    else:
        assert max(walks) <= 2 and min(walks) == 1, walks  # a consumer 1 with no tile
    _check_product(kernels, rows * CONFIG.BLOCK_M, cols * CONFIG.BLOCK_N, k_tiles * CONFIG.BLOCK_K)


@pytest.mark.gpu
@wgmma_only
def test_a_ragged_shape_runs_its_border_on_the_edge_kernel():
    """Step 19 on a GPU only (the edge kernel is step 15's, tested on the simulator by tests/test_warpgroup_tf32.py):
    the fast kernel's full tiles and the edge kernel's border together."""
    _check_product(gemm_steps.get_step("pingpong").tiled, 1000, 1100, 520)


def test_the_layout_fits_the_ring_in_shared_memory():
    """6 stages of 33,792 bytes (A 128×32, B 32×136 floats) and the 1,024-byte alignment slack fit the 232,448 bytes a
    block may have; 7 do not, and asking for them is refused. The step keeps 4 (they ran faster than 6). A consumer's
    tile must be 128 columns (two halves) and at most 128 rows (step 17's 256×128 tile would be 256 accumulators a
    thread)."""
    gpu_config = pingpong.SEARCH_SPACE[0]
    shipped = pingpong.Config.of(gpu_config)
    assert shipped.check().constants()["STAGES"] == 4 and shipped.fitting_stages() == 6
    constants = pingpong.Config.of(gpu_config, STAGES=6).check().constants()
    assert constants["STAGES"] == 6 and constants["WARPS"] == 4 and constants["BARRIERS"] == 12
    stage = (constants["A_STAGE_FLOATS"] + constants["B_STAGE_FLOATS"]) * 4
    assert stage == 33_792
    used = constants["STAGES"] * (stage + 16) + constants["EXTRA_SHARED_FLOATS"] * 4
    assert used <= pingpong.SHARED_BYTES_PER_BLOCK < used + stage + 16
    with pytest.raises(ValueError, match="2 to 6"):
        pingpong.Config.of(gpu_config, STAGES=7).check().constants()
    for other in (warp_specialized.SEARCH_SPACE[0], warpgroup_tf32.SIMULATOR_CONFIG):  # 256×128; 32×64
        with pytest.raises(ValueError, match="BLOCK_N = 128"):
            pingpong.Config.of(other).check().constants()


# -- the fair control: step 19's schedule, step 17's tile per consumer (experiments/kernels/pingpong_wide.py) --------
WIDE_CONFIG = pingpong_wide.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else pingpong_wide.CONFIG

#: (tile rows, tile columns, k-tiles, ring stages, GROUP_M) on the simulator's 3 blocks of 64×64 tiles (wgmma N = 64,
#: 256 consumer threads and a producer warpgroup); on a GPU 256×64 tiles, one block an SM, 4 stages and 5.
#: * 7×2 tiles: blocks walk 5, 5, 4 tiles — every consumer takes at least two (block 0's consumer 0 three: the order
#:   barrier used both ways and reused), 5 k-tiles a tile through 3 stages, so a tile's k-tiles wrap the ring and a
#:   block's 25 k-tiles run 8 laps of it (both phases of every barrier, many times), an odd k-tile count (the loop's
#:   last pass half empty); groups of 4 tile-rows, the last one 3 (grouped_tile's shorter group).
#: * 2×2 tiles, 3 k-tiles, 2 stages: blocks walk 2, 1, 1 tiles — the second and third blocks' consumer 1 has none
#:   (no order arrival may be left waiting for it).
WIDE_CASES = [pytest.param(7, 2, 5, 3, 4, id="14tiles-3blocks-8laps"),
              pytest.param(2, 2, 3, 2, 8, id="4tiles-3blocks-idle-consumer")]


@wgmma_only
@pytest.mark.parametrize("rows,cols,k_tiles,stages,group_m", WIDE_CASES)
def test_the_wide_pingpong_multiplies_with_each_consumer_on_whole_256_row_tiles(rows, cols, k_tiles, stages, group_m):
    """The fair ping-pong control on the simulator (and on a GPU: 12×48 tiles of 256×64, 4–5 a block on 132 SMs,
    16 k-tiles, 4 stages — the experiment's build — and the idle-consumer case with as many stages as fit)."""
    config = replace(WIDE_CONFIG, GROUP_M=group_m)
    if not gemm_steps.SIMULATOR:
        stages = 4 if rows * cols > 4 else None
        if rows * cols > 4:
            rows, cols, k_tiles = 12, 48, 16
    kernels = pingpong_wide.build(config, stages)
    assert kernels.threads == 384 and kernels.constants["ACCUMULATORS"] == config.BLOCK_M // 2
    blocks = min(rows * cols, kernels.resident_blocks("fast"))
    walks = _tiles_of_blocks(rows * cols, blocks)
    if rows * cols > 4:
        assert min(walks) >= 4 and min(walks) < max(walks), walks  # each consumer two tiles or more, uneven
    else:
        assert max(walks) <= 2 and min(walks) == 1, walks  # a consumer 1 with no tile
    _check_product(kernels, rows * config.BLOCK_M, cols * config.BLOCK_N, k_tiles * config.BLOCK_K)


@wgmma_only
def test_the_wide_pingpong_runs_a_ragged_border_on_step_15s_edge_kernel():
    """The full tiles on the fast kernel, the border on step 15's edge kernel built for the same tile with one
    warpgroup (on the simulator 150×140×96: 2×2 full 64×64 tiles, 3 k-tiles; on a GPU 1000×1100×512: 3×17 full
    256×64 tiles, K a multiple of 32 so that the fast path applies)."""
    shape = (150, 140, 96) if gemm_steps.SIMULATOR else (1000, 1100, 512)
    _check_product(pingpong_wide.build(WIDE_CONFIG, 3 if gemm_steps.SIMULATOR else 4), *shape)


def test_the_wide_pingpong_fits_4_or_5_stages_and_refuses_6():
    """A stage of the 256×64 tile is A 256×32 + B 32×72 floats = 41,984 bytes: 5 (and their barriers, and the
    1,024-byte alignment slack) fit the 232,448 bytes a block may have, 6 do not and are refused with the range. The
    consumer's work is step 17's consumer's: 128 accumulators (one m64n256k8 a k-step), B_STRIDE 72; 4 stages
    (step 17's count) on request. Step 19's tile (two 64-column halves a consumer) is refused."""
    constants = pingpong_wide.layout()
    assert constants["STAGES"] == 5 and constants["ACCUMULATORS"] == 128 and constants["B_STRIDE"] == 72
    assert constants["THREADS"] == 256 and constants["CONSUMERS"] == 2 and constants["WARPS"] == 4
    assert constants["PRODUCER_REGISTERS"] == 40 and constants["CONSUMER_REGISTERS"] == 232
    assert constants["ORDER_BARRIER"] == pingpong.Config.ORDER_BARRIER and constants["GROUP_M"] == 8
    stage = (constants["A_STAGE_FLOATS"] + constants["B_STAGE_FLOATS"]) * 4
    assert stage == constants["STAGE_BYTES"] == 41_984
    used = constants["STAGES"] * (stage + 16) + constants["EXTRA_SHARED_FLOATS"] * 4
    assert used <= pingpong.SHARED_BYTES_PER_BLOCK < used + stage + 16
    assert pingpong_wide.layout(stages=4)["STAGES"] == 4 and pingpong_wide.build(stages=4).config.STAGES == 4
    with pytest.raises(ValueError, match="6 stages: 2 to 5 fit"):
        pingpong_wide.build(stages=6)
    with pytest.raises(ValueError, match="BLOCK_N = 64"):
        pingpong_wide.layout(pingpong.SEARCH_SPACE[0])  # 128×128
    edge = pingpong_wide.build().edge_source  # step 15 on the same 256×64 tile, one warpgroup
    assert (edge.config.BLOCK_M, edge.config.BLOCK_N, edge.threads) == (256, 64, 128)


WIDE_PTX_JOB = "kernels:experiments.kernels.pingpong_wide:ptx_kernels"


@pytest.mark.ptx(WIDE_PTX_JOB)
def test_the_wide_pingpong_compiles_to_one_n256_wgmma_a_k_step(ptx):
    """Compiled for the GPU's tile (sm_90a, 4 stages): per pass of a consumer's loop (two k-tiles) 2 × BLOCK_K / 8
    wgmma, every one m64n256k8 (step 19: twice as many m64n128k8); a wait for all groups but the newest per k-tile and
    one for all after the tile; a TF32 rounding per fragment element; setmaxnreg once each way; two bar.sync
    (cuda.syncthreads() and the order's wait) and one bar.arrive (the order's hand-over); the copy engine's copies;
    no local memory, no FP32 FMA, no wgmma operand written after its fence. ptxas (nvJitLink, LTO): no spills, no
    wgmma serialised, at most 168 registers at entry (the cap for 384 threads)."""
    stats = ptx.stats(WIDE_PTX_JOB, "pingpong_wide_fast")
    assert "error" not in stats, stats.get("error")
    opcodes, k_steps = stats["opcodes"], pingpong_wide.CONFIG.BLOCK_K // 8
    assert stats["wgmma.mma_async.tf32"] == 2 * k_steps
    assert opcodes.get("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32") == 2 * k_steps
    assert stats["wgmma.wait_group"] == 2 + 1 and stats["cvt.rna.tf32.f32"] == 2 * k_steps * 4
    assert stats["setmaxnreg"] == 2 and stats["bar.sync"] == 2 and opcodes.get("bar.arrive") == 1
    assert stats["cp.async.bulk.tensor"] >= 2 and stats["mbarrier.arrive.expect_tx"] >= 1
    assert stats["local"] == 0 and stats["fma.rn.f32"] == 0 and stats["wgmma.written_after_fence"] == 0
    info = stats.get("ptxas") or {}
    assert info.get("wgmma_serialized") is not None, f"ptxas did not answer ({info})"
    assert info["spill_bytes"] == 0 and info["wgmma_serialized"] == 0 and info["registers"] <= 168, info


# -- the named-barrier twins ---------------------------------------------------------------------------------------
@cuda.jit
def _one_warp_signals_another(out, flag, count):
    """Warp 1 writes, then arrives at barrier 1; warp 0 syncs there and reads what warp 1 wrote — three rounds, the
    barrier reused each time (and a round-trip on barrier 2 so warp 1 does not run a round ahead)."""
    t = cuda.threadIdx.x
    for r in range(3):
        if t >= 32:
            flag[t - 32] = r + 1
            named_barrier_arrive(1, count)
            named_barrier_sync(2, count)
        else:
            named_barrier_sync(1, count)
            out[r * 32 + t] = flag[t]
            named_barrier_arrive(2, count)


def test_a_named_barrier_orders_one_warp_after_another():
    out = cuda.to_device(np.zeros(96, np.int32))
    _one_warp_signals_another[1, 64](out, cuda.to_device(np.zeros(32, np.int32)), 64)
    np.testing.assert_array_equal(out.copy_to_host(), np.repeat([1, 2, 3], 32))


@cuda.jit
def _only_syncs(count):
    named_barrier_sync(3, count)


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="on a GPU a bar.sync without its arrivals hangs: no time limit")
def test_a_missing_arrival_at_a_named_barrier_times_out_with_a_message(monkeypatch):
    """64 threads wait for 96: the twin gives up with the barrier, the count and how many arrived (on a GPU the
    launch would hang, which is why the pingpong kernel's arrivals are tested here)."""
    monkeypatch.setattr(mbarrier_ops, "SIMULATOR_WAIT_LIMIT_S", 0.5)
    with pytest.raises(mbarrier_ops.MbarrierTimeout, match=r"named barrier 3: 64 of 96 threads arrived"):
        _only_syncs[1, 64](96)


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the twin's checks; on a GPU a wrong count is undefined")
def test_named_barriers_refuse_what_the_isa_does_not_allow():
    with pytest.raises(ValueError, match="multiple of 32"):
        _only_syncs[1, 32](48)
    with pytest.raises(ValueError, match="barriers 0–15"):
        mbarrier_ops._check_named_barrier(16, 32)

    @cuda.jit
    def counts_differ():
        named_barrier_sync(4, 64 if cuda.threadIdx.x < 32 else 96)

    with pytest.raises(RuntimeError, match="count 96 while the phase in progress counts 64|count 64 while the phase "
                                           "in progress counts 96"):
        counts_differ[1, 64]()


# -- the experiment's bench ----------------------------------------------------------------------------------------
def test_the_bench_summary_divides_each_build_by_its_baselines():
    """experiments/pingpong_bench.py's stored ratios, on made-up records: each build over step 17 and over the
    persistent build at each shape; None where a record is missing or failed (no TFLOPS)."""
    from experiments import pingpong_bench

    def rec(step, tflops, k=4096):
        return {"step": step, "M": 4096, "N": 4096, "K": k, **({"tflops": tflops} if tflops else {})}

    records = [rec("warp_specialized", 360.0), rec("persistent_specialized", None),
               rec("pingpong_specialized", 378.0), rec("cublas_tf32", 400.0), rec("warp_specialized", 300.0, k=2048)]
    summary = pingpong_bench.summary({"records": records})
    row = summary["4096x4096x4096"]
    assert row["tflops"]["cublas_tf32"] == 400.0 and row["tflops"]["cublas"] is None
    assert row["over_warp_specialized"]["pingpong_specialized"] == pytest.approx(1.05)
    assert row["over_persistent_specialized"]["pingpong_specialized"] is None
    assert row["over_warp_specialized"]["persistent_specialized"] is None
    assert summary["4096x4096x2048"]["over_persistent_specialized"]["warp_specialized"] is None


def test_the_fair_bench_summary_divides_each_build_by_its_baselines_and_pairs():
    """experiments/pingpong_fair.py's stored ratios, on made-up records: each build over persistent_specialized, step
    17 and cuBLAS TF32, and the docstring's pairs (the schedule: pingpong_wide_4 / persistent_specialized; …); None
    where a record is missing or failed. Its builds are the six it names, the wide ones at 4 and 5 stages."""
    from experiments import pingpong_fair

    def rec(step, tflops, k=4096):
        return {"step": step, "M": 4096, "N": 4096, "K": k, **({"tflops": tflops} if tflops else {})}

    records = [rec("warp_specialized", 360.0), rec("persistent_specialized", 350.0), rec("pingpong_wide_4", 315.0),
               rec("pingpong_wide_max", None), rec("pingpong", 210.0), rec("pingpong_6", 200.0),
               rec("cublas_tf32", 400.0), rec("warp_specialized", 300.0, k=2048)]
    summary = pingpong_fair.summary({"records": records})
    row = summary["4096x4096x4096"]
    assert row["tflops"]["pingpong_wide_max"] is None and row["tflops"]["cublas"] is None
    assert row["over_persistent_specialized"]["pingpong_wide_4"] == pytest.approx(0.9)
    assert row["over_warp_specialized"]["pingpong"] == pytest.approx(210 / 360)
    assert row["over_cublas_tf32"]["warp_specialized"] == pytest.approx(0.9)
    assert row["over_persistent_specialized"]["pingpong_wide_max"] is None
    assert row["pairs"]["schedule"] == pytest.approx(0.9)
    assert row["pairs"]["tile_per_consumer"] == pytest.approx(210 / 315)
    assert row["pairs"]["stages_step_19"] == pytest.approx(200 / 210) and row["pairs"]["stages_wide"] is None
    assert summary["4096x4096x2048"]["over_warp_specialized"]["pingpong"] is None
    assert pingpong_fair.BUILDS == ["warp_specialized", "persistent_specialized", "pingpong_wide_4",
                                    "pingpong_wide_max", "pingpong", "pingpong_6"]
    assert {x for pair in pingpong_fair.PAIRS.values() for x in pair} <= set(pingpong_fair.BUILDS)
    built = pingpong_fair.builds()
    assert [built[name].config.STAGES for name in ("pingpong_wide_4", "pingpong_wide_max", "pingpong_6")] == [4, 5, 6]
    assert built["persistent_specialized"].constants["STAGES"] == 4


@wgmma_only
@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="on a GPU: python -m experiments.timeline --only "
                                                     "pingpong_specialized records it at 4096³")
def test_the_timeline_build_shows_the_consumers_taking_turns():
    """experiments/kernels/pingpong_specialized_timeline.py on one block walking 4 tiles of 2 k-tiles (3 stages):
    the product, every event of the ring's 8 k-tiles written by the role that owns it (consumer 0: the ring's k-tiles
    0, 1, 4, 5; consumer 1: 2, 3, 6, 7), no consumer sees a k-tile before the producer issued it, and — the order —
    no tile's turn comes before the block's previous tile (the other consumer's) has issued its last wgmma."""
    from experiments.kernels import pingpong_specialized_timeline as debug

    config, k_tiles, tiles = CONFIG, 2, 4
    m, n, k = 2 * config.BLOCK_M, 2 * config.BLOCK_N, k_tiles * config.BLOCK_K
    kernels = debug.build(config, 1, tiles * k_tiles, stages=3)
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    timeline = cuda.to_device(np.zeros(debug.ROLES * tiles * k_tiles * debug.EVENTS, np.uint64))
    debug.launch(kernels, cuda.to_device(a), cuda.to_device(b), c, timeline, blocks=1)
    fed = tf32_fed(a, b, kernels)
    assert np.abs(c.copy_to_host() - fed).max() <= 1e-5 * np.abs(fed).max()
    events = timeline.copy_to_host().reshape(debug.ROLES, tiles * k_tiles, debug.EVENTS).astype(np.int64)
    producer = events[0, :, :3]
    assert (producer > 0).all() and (np.diff(producer, axis=1) >= 0).all()
    assert not events[0, :, 3:].any(), "the producer writes three events"
    for tile in range(tiles):
        rows = slice(tile * k_tiles, (tile + 1) * k_tiles)
        own, other = events[1 + tile % 2, rows], events[2 - tile % 2, rows]
        assert (own[:, :4] > 0).all() and not other.any(), f"tile {tile}: written by the wrong consumer"
        assert (own[:, 1] >= producer[rows, 2]).all(), f"tile {tile}: data before its copies were issued"
        first, last = own[0], own[-1]
        assert first[0] <= first[4] <= first[1] and last[2] <= last[4] <= last[5], f"tile {tile}: events out of order"
        if tile > 0:
            previous_last_issue = events[1 + (tile - 1) % 2, tile * k_tiles - 1, 2]
            assert first[4] >= previous_last_issue, f"tile {tile}'s turn came before tile {tile - 1} was issued"
    summary = debug.summary(np.where(events > 0, events - events[events > 0].min(), -1)[None])["blocks"][0]
    assert [x["tiles"] for x in summary["consumers"]] == [2, 2]
    assert summary["handoff"] is not None and 0 <= summary["store_covered"] <= 1
