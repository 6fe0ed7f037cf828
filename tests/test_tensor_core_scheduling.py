"""Step 12's tensor-core kernel on step 11's schedule (experiments/kernels/tensor_cores_stream_k.py) stays correct.

The experiment (experiments/tensor_core_scheduling.py) times it on a GPU; here it runs on the simulator, on step 12's
SIMULATOR_CONFIG (64×32 tiles of 4 warps, BLOCK_K = 16) and the simulator's grid of 3 blocks (or 2, forced), on small
products where the schedule really does what it is for — each launch's (data-parallel, stream-K) split is recorded
and checked, not assumed:

* one ragged tile whose 12 k-tiles are shared by all 3 blocks, 4 each (more than the pipeline's 3 stages): the
  finishing block adds two partial sums (guarded kernel), and a second launch gives the same bits (the fixed order);
* full tiles (fast kernel) on a grid of 2 forced: whole waves data-parallel, the rest split by k-iterations, a tile
  split in the middle of the blocks' shares;
* a ragged product whose tiles fill whole waves: no stream-K tiles, each block loops over two tiles (step 10's loop);
* step 11's fallback rule applied to step 12 (``hybrid_launch``), with stand-in launches;
* the experiment script builds its three entries, and its predictions name exactly the shapes that step 11's
  split gives stream-K tiles on an H100 (128×256 tiles, 132 blocks);
* the PTX of both kernels for the GPU's tiles: step 12's tensor-core k-tile, the fixup's loads, no local memory
  (compiled by the GPU-mode worker, tests/ptx_jobs.py).

Every product is checked against float64 with the TF32 tolerance (``tolerance_for``: the module says
``ARITHMETIC = "tf32"``) and, sharper, against float64 on TF32-rounded inputs with the float32 tolerance: a dropped or
doubled partial sum moves C by O(1), a dropped k-tile by ~1/√(k-tiles).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness.verify import tolerance_for
from gemm_steps.toolkit.tensor_core_ops import round_to_tf32
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.toolkit.tiles import SIMULATED_RESIDENT_BLOCKS
from helpers import random_matrices, record_schedule_launches, rel_error, rng_for, tolerance

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments.kernels import tensor_cores_stream_k as tc_stream_k  # noqa: E402

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR,
                                    reason="sizes chosen for the simulator's 64×32 tiles and grid of 3 blocks")
PTX_JOB = "kernels:experiments.kernels.tensor_cores_stream_k:ptx_kernels"


def _recording(built, blocks: int | None = None) -> list:
    """Make ``built`` record each launch as (variant, grid, dp_tiles, sk_tiles); ``blocks`` forces its grid size."""
    return record_schedule_launches(built, [], blocks=blocks)


def _product(built, m, n, k, name):
    a, b = random_matrices(rng_for(name), m, n, k)
    c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    built.launch(cuda.to_device(a), cuda.to_device(b), c)
    c = c.copy_to_host()
    assert not np.isnan(c).any(), f"{int(np.isnan(c).sum())} elements unwritten"
    error, limit = rel_error(c, a, b), tolerance_for(tc_stream_k, k)
    assert error <= limit, f"error {error:.2e} > TF32 tolerance {limit:.2e}"
    on_rounded = rel_error(c, round_to_tf32(a), round_to_tf32(b))
    assert on_rounded <= tolerance(k), f"error {on_rounded:.2e} on TF32-rounded inputs > {tolerance(k):.2e}"
    return c


def test_the_simulator_runs_step_12s_small_tiles():
    from gemm_steps.steps import tensor_cores

    assert tc_stream_k.CONFIG == tensor_cores.TUNING.kernels().config
    assert tolerance_for(tc_stream_k, 64) > tolerance(64), "judged by the TF32 tolerance"


@simulator_only
def test_one_ragged_tile_split_over_three_blocks_is_fixed_up_in_a_fixed_order():
    built = tc_stream_k.build()
    launches = _recording(built)
    m, n, k = 50, 20, 187  # one partial tile; 12 k-tiles of 16 (the last 11 deep)
    first = _product(built, m, n, k, "one tile, three blocks")
    assert launches == [("edge", SIMULATED_RESIDENT_BLOCKS, 0, 1)], "1 tile on 3 blocks: all stream-K"
    # 12 k-tiles over 3 blocks: 4 each (more than the pipeline's 3 stages), and the block with the last four adds
    # the other two blocks' partial sums.
    again = _product(built, m, n, k, "one tile, three blocks")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


@simulator_only
def test_whole_waves_stay_data_parallel_and_the_rest_is_split_by_k():
    built = tc_stream_k.build()
    launches = _recording(built, blocks=2)
    config = built.config
    m, n, k = 5 * config.BLOCK_M, config.BLOCK_N, 5 * config.BLOCK_K  # 5 full tiles of 5 k-tiles: fast kernel
    assert stream_k_split(5, 2) == (2, 3)
    _product(built, m, n, k, "five tiles, two blocks")
    # 2 tiles data-parallel (one per block), then 3 tiles × 5 k-tiles = 15 iterations, [0, 7) and [7, 15): block 0
    # has stream-K tile 0 and k-tiles 0–1 of tile 1, block 1 k-tiles 2–4 of tile 1 (fixed up) and tile 2.
    assert launches == [("fast", 2, 2, 3)]


@simulator_only
def test_tiles_filling_whole_waves_run_the_persistent_loop():
    built = tc_stream_k.build()
    launches = _recording(built)
    _product(built, 150, 60, 13, "six tiles, three blocks")  # 3 × 2 partial tiles, one k-tile
    assert launches == [("edge", SIMULATED_RESIDENT_BLOCKS, 6, 0)], "6 tiles on 3 blocks: no stream-K tiles"
    assert tc_stream_k.no_stream_k(5, 3) == (5, 0) and tc_stream_k.all_stream_k(5, 3) == (0, 5)


def test_hybrid_launch_runs_step_12_where_the_split_leaves_nothing_to_stream_k():
    built = tc_stream_k.build()
    calls = []
    built.launch = lambda a, b, c, stream=0: calls.append("stream-K")

    class DataParallel:
        @staticmethod
        def launch(a, b, c, stream=0):
            calls.append("step 12")

    launch = tc_stream_k.hybrid_launch(built, DataParallel)
    config, blocks = built.config, built.estimated_resident_blocks()
    for tiles, expected in [(blocks, "step 12"), (blocks + 1, "stream-K"), (2 * blocks, "step 12")]:
        a, b = np.empty((tiles * config.BLOCK_M, 1), np.float32), np.empty((1, config.BLOCK_N), np.float32)
        launch(a, b, None)
        assert calls[-1] == expected, f"{tiles} tiles on {blocks} blocks"


@pytest.mark.ptx(PTX_JOB)
def test_ptx_is_step_12s_k_tile_with_the_fixup_and_no_local_memory(ptx):
    from gemm_steps.steps import tensor_cores
    from gemm_steps.toolkit.tuned import tuned_config

    step_12 = tensor_cores.PTX_EXPECT["tensor_cores_fast"]  # step 12's claims, for the tiles a GPU build uses
    gpu_config = tuned_config("tensor_cores", tensor_cores.SEARCH_SPACE)
    fixup_loads = gpu_config.THREAD_M * gpu_config.THREAD_N  # one scalar ld.global.cg per accumulator
    for label in ("tensor_cores_stream_k_fast", "tensor_cores_stream_k_edge"):
        stats = ptx.stats(PTX_JOB, label)
        assert "error" not in stats, f"{label} failed to compile: {stats['error']}"
        assert stats["local"] == 0, f"{label}: local memory"
        for key in ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32",
                    "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.wait_group", "fma.rn.f32"):
            assert stats[key] == step_12[key], f"{label}: {key} is {stats[key]}, step 12 has {step_12[key]}"
        assert stats["ld.global.f32"] == fixup_loads, f"{label}: {stats['ld.global.f32']} scalar global loads"
        assert stats["bar.sync"] == 3, "one barrier per k-tile, two in the fixup"
    assert ptx.stats(PTX_JOB, "tensor_cores_stream_k_fast")["cp.async.cg.shared.global"] == step_12[
        "cp.async.cg.shared.global"]


def test_the_experiment_builds_its_entries_and_predicts_the_shapes_it_splits():
    from experiments import tensor_core_scheduling as experiment
    from gemm_steps.steps import tensor_cores

    entries = experiment.variants()
    assert [e.name for e in entries] == [experiment.STEP_12, experiment.PERSISTENT, experiment.STREAM_K]
    assert all(e.arithmetic == "tf32" for e in entries) and callable(experiment.main)
    assert entries[2].built.split is stream_k_split
    h100_tiles, h100_blocks = tensor_cores.SEARCH_SPACE[0], 132
    split = {}
    for m, n, k in experiment.shapes(h100_tiles):
        tiles = -(-m // h100_tiles.BLOCK_M) * -(-n // h100_tiles.BLOCK_N)
        split[tiles] = stream_k_split(tiles, h100_blocks)[1]
    assert {tiles for tiles, stream_k in split.items() if stream_k} == set(experiment.PREDICTED)
    assert {132, 264, 128, 512, 2048} <= {tiles for tiles, stream_k in split.items() if not stream_k}
