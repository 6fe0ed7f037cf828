"""Step 21 (steps/warp_specialized_stream_k.py: step 17's k-tile on step 11's schedule) is right where its schedule
does something.

The experiment (experiments/tensor_core_stream_k.py) times it on a GPU; here it runs on the simulator, on its
SIMULATOR_CONFIG (32×64 tiles, one consumer warpgroup and the producer, BLOCK_K = 32) and the simulator's grid of 3
blocks (or 2, forced), on small products where the schedule does what it is for — each launch's (data-parallel,
stream-K) split is recorded and checked, not assumed:

* one tile whose 7 k-tiles are shared by all 3 blocks (2, 2 and 3): the finishing block adds two blocks' partial
  sums, and a second launch gives the same bits (the fixed order);
* full tiles on a grid of 2 forced: whole waves data-parallel, the rest split by k-tiles, a tile split in the middle
  of the blocks' shares, the ring running on from unit to unit (more units than stages);
* ragged products on the PARTIAL_TILES build (one after a readable copy of B): every element written, none past C;
* where the split leaves nothing to stream-K, the persistent tile loop (no more blocks than tiles); where step 17
  would split K, step 17 runs (the fallback);
* where step 17 runs instead, for a GPU of 132 SMs: only the few tiles and long K step 17 splits;
* on a GPU, four shapes (one tile over every block, a ragged wave boundary, one wave data-parallel and the rest split,
  A copied into readable rows) right and the same bits twice.

Its PTX and ptxas claims (``PTX_EXPECT``, ``PTXAS_EXPECT``) are checked with every step's by tests/test_ptx.py.

Every product is checked against float64 with the TF32 tolerance and, sharper, against float64 on TF32 inputs (A
truncated, B rounded: what step 17 multiplies) with the float32 tolerance: a dropped or doubled partial sum moves C by
O(1), a dropped k-tile by ~1/√(k-tiles).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.steps import warp_specialized
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.toolkit.tiles import SIMULATED_RESIDENT_BLOCKS
from helpers import checked_tf32_product, record_stream_k_launches

from gemm_steps.steps import warp_specialized_stream_k as variant

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR,
                                    reason="sizes chosen for the simulator's 32×64 tiles and grid of 3 blocks")


def _product(built, m, n, k, name):
    """C = A·B by ``built``, checked (``helpers.checked_tf32_product``: nothing outside C, all of C, both tolerances)."""
    return checked_tf32_product(built, m, n, k, name, variant)


def test_the_step_is_step_17s_tiles_and_kernel_constants():
    assert variant.SEARCH_SPACE[0].constants().items() >= {
        name: value for name, value in warp_specialized.SEARCH_SPACE[0].constants().items()
        if name in variant.Config().constants()}.items(), "a constant of step 17's k-tile changed"
    assert variant.ARITHMETIC == warp_specialized.ARITHMETIC and variant.BUILDS_ON == "warp_specialized"
    built = variant.build(variant.SEARCH_SPACE[0])
    assert built.fallback is gemm_steps.get_step("warp_specialized").module.TUNING.kernels() or \
        built.fallback.config == warp_specialized.Config.of(variant.SEARCH_SPACE[0])
    assert variant.build(variant.SEARCH_SPACE[0], fallback=False).fallback is None


@simulator_only
def test_one_tile_split_over_three_blocks_is_fixed_up_in_a_fixed_order():
    built = variant.build(variant.SIMULATOR_CONFIG, split=variant.all_stream_k, fallback=False, min_share=1)
    launches = record_stream_k_launches(built)
    config = built.config
    m, n, k = config.BLOCK_M, config.BLOCK_N, 7 * config.BLOCK_K  # one full tile of 7 k-tiles: 2, 2 and 3 a block
    first = _product(built, m, n, k, "one tile, three blocks")
    assert launches == [("full", SIMULATED_RESIDENT_BLOCKS, 0, 1)], "1 tile on 3 blocks: all stream-K"
    again = _product(built, m, n, k, "one tile, three blocks")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


@simulator_only
def test_whole_waves_stay_data_parallel_and_the_rest_is_split_by_k():
    built = variant.build(variant.SIMULATOR_CONFIG, min_share=1)
    launches = record_stream_k_launches(built, blocks=2)
    config = built.config
    m, n, k = 5 * config.BLOCK_M, config.BLOCK_N, 5 * config.BLOCK_K  # 5 full tiles of 5 k-tiles
    assert stream_k_split(5, 2) == (2, 3)
    _product(built, m, n, k, "five tiles, two blocks")
    # 2 tiles data-parallel (one a block), then 3 tiles × 5 k-tiles = 15 iterations, [0, 7) and [7, 15): block 0 has
    # stream-K tile 0 and k-tiles 0–1 of tile 1, block 1 k-tiles 2–4 of tile 1 (fixed up) and tile 2 — four units
    # and 12 k-tiles on block 1, three times round its ring of 4 stages
    assert launches == [("full", 2, 2, 3)]


@simulator_only
@pytest.mark.parametrize("m, n, k", [(50, 70, 200), (70, 130, 93)], ids=["B-copied", "ragged-K"])
def test_ragged_products_run_the_partial_build_inside_c_only(m, n, k):
    built = variant.build(variant.SIMULATOR_CONFIG, split=variant.all_stream_k, fallback=False, min_share=1)
    launches = record_stream_k_launches(built)
    _product(built, m, n, k, f"ragged {m}x{n}x{k}")
    assert [launch[0] for launch in launches] == ["partial"]


def test_step_17_runs_only_where_it_would_split_k():
    built = variant.build(variant.SEARCH_SPACE[0])
    built.sm_count = lambda: 132
    assert built.runs_fallback(32, 8192), "32 tiles of 256 k-tiles: step 17 splits K"
    for tiles, k in [(150, 4096), (512, 4096), (132, 8192), (100, 1024)]:  # part-empty, whole waves, short K
        assert not built.runs_fallback(tiles, k), (tiles, k)
    assert variant.runs_step_17(32, 256, 132) and not variant.runs_step_17(100, 32, 132)
    assert not variant.build(variant.SEARCH_SPACE[0], fallback=False).runs_fallback(32, 8192)


@simulator_only
def test_a_small_product_gives_each_block_min_share_k_tiles_or_a_tile():
    built = variant.build(variant.SIMULATOR_CONFIG, min_share=4)
    launches = record_stream_k_launches(built)
    config = built.config
    _product(built, config.BLOCK_M, config.BLOCK_N, 7 * config.BLOCK_K, "one tile, shares of four")
    assert launches == [("full", 1, 0, 1)], "7 k-tiles in shares of at least 4: one block"
    _product(built, 2 * config.BLOCK_M, config.BLOCK_N, 3 * config.BLOCK_K, "two tiles, shares of four")
    assert launches[-1] == ("full", 2, 0, 2), "6 k-tiles in shares of four, but a block a tile: two blocks"
    assert variant.MIN_SHARE_K_TILES == variant.build(variant.SIMULATOR_CONFIG).min_share
    short = variant.build(variant.SIMULATOR_CONFIG, min_share=6)
    short_launches = record_stream_k_launches(short, blocks=2)
    assert stream_k_split(5, 2) == (2, 3)
    _product(short, 5 * config.BLOCK_M, config.BLOCK_N, 5 * config.BLOCK_K, "five tiles of five k-tiles")
    assert short_launches == [("full", 2, 5, 0)], "tiles of 5 k-tiles, shares of at least 6: nothing split"


@simulator_only
def test_whole_waves_run_the_persistent_loop_and_split_k_products_step_17():
    built = variant.build(variant.SIMULATOR_CONFIG)
    launches = record_stream_k_launches(built)
    config = built.config
    assert stream_k_split(6, SIMULATED_RESIDENT_BLOCKS) == (6, 0)
    _product(built, 6 * config.BLOCK_M, config.BLOCK_N, 3 * config.BLOCK_K, "six tiles, persistent")
    assert launches == [("full", SIMULATED_RESIDENT_BLOCKS, 6, 0)], "6 tiles on 3 blocks: two tiles a block"
    loop = variant.build(variant.SIMULATOR_CONFIG, split=variant.no_stream_k, fallback=False)
    loop_launches = record_stream_k_launches(loop)
    _product(loop, 2 * config.BLOCK_M, config.BLOCK_N, 3 * config.BLOCK_K, "two tiles, two blocks")
    assert loop_launches == [("full", 2, 2, 0)], "2 tiles, nothing split: a grid of 2"
    step17 = []
    built.fallback.launch_full_tiles = lambda *arguments, **keywords: step17.append(arguments[2:4])
    built.fallback_when = lambda tiles, k_tiles, sms: True
    a = np.zeros((config.BLOCK_M, config.BLOCK_K), np.float32)
    b = np.zeros((config.BLOCK_K, config.BLOCK_N), np.float32)
    built.launch(cuda.to_device(a), cuda.to_device(b), cuda.to_device(np.zeros((config.BLOCK_M, config.BLOCK_N),
                                                                               np.float32)))
    assert step17 == [(1, 1)] and len(launches) == 1, "where fallback_when says so, step 17 runs"
    assert variant.no_stream_k(5, 3) == (5, 0) and variant.all_stream_k(5, 3) == (0, 5)


#: On a GPU (132 SMs an H100 or H200, step 17's 256 × 128 tiles): one tile shared by every block; a wave boundary of
#: ragged tiles (all stream-K); 270 tiles (one wave data-parallel, the rest by k-tiles); a K not a multiple of 4
#: (A copied into readable rows first).
GPU_SHAPES = [(256, 128, 4096), (1152, 3840, 512), (6784, 1280, 320), (700, 2500, 1001)]


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in GPU_SHAPES])
def test_on_the_gpu_every_split_is_right_and_the_same_bits_twice(m, n, k):
    if tuple(cuda.get_current_device().compute_capability) != (9, 0):
        pytest.skip("wgmma and the copy engine's tensor copies need compute capability 9.0")
    built = variant.build(variant.SEARCH_SPACE[0], fallback=False, min_share=1)
    first = _product(built, m, n, k, f"gpu {m}x{n}x{k}")
    again = _product(built, m, n, k, f"gpu {m}x{n}x{k}")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"
