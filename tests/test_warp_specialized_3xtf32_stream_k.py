"""Step 22 (steps/warp_specialized_3xtf32_stream_k.py: step 18's 3xTF32 k-tile on step 21's schedule) is right where
its schedule does something, to float32's tolerance, and gives cuBLAS SGEMM's specials where its parts meet.

On the simulator, on its SIMULATOR_CONFIG (32×64 tiles, one consumer warpgroup and the producer that copies and splits
A) and the simulator's grid of 3 blocks (or 2, forced); each launch's (data-parallel, stream-K) split is recorded and
checked, not assumed:

* one tile whose 7 k-tiles are shared by all 3 blocks: the finishing block adds two blocks' partial sums (scaled by
  2^11, as its own), the same bits on a second launch;
* full tiles on a grid of 2 forced: whole waves data-parallel, the rest split, more units and k-tiles than stages (the
  producer's split and copies crossing units);
* ragged products on the PARTIAL_TILES build (one after a readable copy of B);
* specials where the tile is shared: an inf in A inside another block's k-tiles, a NaN in B in the finishing
  block's, and a finite sum past float32's range — each result as the sequential float32 sum gives it (pattern and
  value), the tile's other results within float32's tolerance;
* step 18 where it would split K or where the waves are (nearly) whole; the persistent loop alone is right;
* on a GPU, four shapes (one tile over every block, a ragged wave boundary, whole waves plus a split, A copied) right
  and the same bits twice, and specials on one shared tile.

Every product is checked against float64 with the float32 tolerance (3xTF32's contract): a dropped or doubled partial
sum moves C by O(1), a sum computed in TF32 only by ~2^-11.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness.fp32_contract import sgemm_model, special_pattern
from gemm_steps.steps import warp_specialized_3xtf32
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.steps.warp_specialized_stream_k import all_stream_k, no_stream_k
from gemm_steps.toolkit.tiles import SIMULATED_RESIDENT_BLOCKS
from helpers import random_matrices, record_stream_k_launches, rel_error, rng_for, run_in_nan_margin, tolerance

from gemm_steps.steps import warp_specialized_3xtf32_stream_k as variant

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR,
                                    reason="sizes chosen for the simulator's 32×64 tiles and grid of 3 blocks")


def _product(built, m, n, k, name):
    """A random product, every element written and within float32's tolerance."""
    a, b = random_matrices(rng_for(name), m, n, k)
    result = run_in_nan_margin(built, a, b)
    assert not np.isnan(result).any(), f"{int(np.isnan(result).sum())} elements unwritten"
    error = rel_error(result, a, b)
    assert error <= tolerance(k), f"error {error:.2e} > float32 tolerance {tolerance(k):.2e}"
    return result


def test_the_step_is_step_18s_tiles_and_kernel_constants():
    assert variant.SEARCH_SPACE[0].constants().items() >= {
        name: value for name, value in warp_specialized_3xtf32.SEARCH_SPACE[0].constants().items()
        if name in variant.Config().constants()}.items(), "a constant of step 18's k-tile changed"
    assert variant.ARITHMETIC == warp_specialized_3xtf32.ARITHMETIC
    assert variant.BUILDS_ON == "warp_specialized_stream_k"
    built = variant.build(variant.SEARCH_SPACE[0])
    assert built.fallback.config == warp_specialized_3xtf32.Config.of(variant.SEARCH_SPACE[0])
    assert variant.build(variant.SEARCH_SPACE[0], fallback=False).fallback is None


@simulator_only
def test_one_tile_split_over_three_blocks_is_fixed_up_in_a_fixed_order():
    built = variant.build(variant.SIMULATOR_CONFIG, split=all_stream_k, fallback=False, min_share=1)
    launches = record_stream_k_launches(built)
    config = built.config
    m, n, k = config.BLOCK_M, config.BLOCK_N, 7 * config.BLOCK_K  # one full tile of 7 k-tiles: 2, 2 and 3 a block
    first = _product(built, m, n, k, "one tile, three blocks")
    assert launches == [("full", SIMULATED_RESIDENT_BLOCKS, 0, 1)], "1 tile on 3 blocks: all stream-K"
    again = _product(built, m, n, k, "one tile, three blocks")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


@simulator_only
def test_whole_waves_stay_data_parallel_and_the_rest_is_split_by_k():
    built = variant.build(variant.SIMULATOR_CONFIG, min_share=1, fallback=False)  # (1.67 waves: step 18's by the rule)
    launches = record_stream_k_launches(built, blocks=2)
    config = built.config
    m, n, k = 5 * config.BLOCK_M, config.BLOCK_N, 5 * config.BLOCK_K  # 5 full tiles of 5 k-tiles
    assert stream_k_split(5, 2) == (2, 3)
    _product(built, m, n, k, "five tiles, two blocks")
    # 2 tiles data-parallel, then 15 stream-K k-tiles as [0, 7) and [7, 15): block 1 walks four units and 12 k-tiles,
    # three times round its ring of 4 stages, its producer splitting A across the units' ends
    assert launches == [("full", 2, 2, 3)]


@simulator_only
@pytest.mark.parametrize("m, n, k", [(50, 70, 200), (70, 130, 93)], ids=["B-copied", "ragged-K"])
def test_ragged_products_run_the_partial_build_inside_c_only(m, n, k):
    built = variant.build(variant.SIMULATOR_CONFIG, split=all_stream_k, fallback=False, min_share=1)
    launches = record_stream_k_launches(built)
    _product(built, m, n, k, f"ragged {m}x{n}x{k}")
    assert [launch[0] for launch in launches] == ["partial"]


def _error_where(result, a, b, mask) -> float:
    """The normwise error of C against float64 over the elements ``mask`` selects (``‖C − AB‖ / ‖|A||B|‖`` there)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(mask, result - a64 @ b64, 0.0)
        scale = np.where(mask, np.abs(a64) @ np.abs(b64), 0.0)
    return float(np.linalg.norm(diff) / np.linalg.norm(scale))


def _specials_case(case: str, m: int, n: int, k: int):
    """A, B for one specials case on one tile of K = 7 k-tiles (shares 2, 2, 3 over three blocks)."""
    a, b = random_matrices(rng_for(f"specials {case}"), m, n, k)
    if case == "inf in A, another block's k-tiles":
        a[3, 5] = np.inf  # k-tile 0: block 0's share, handed over
    elif case == "NaN in B, the finishing block's k-tiles":
        b[6 * 32 + 1, 9] = np.nan  # k-tile 6: the block that finishes the tile
    elif case == "a sum past float32's range":  # SGEMM's sum overflows too: inf there, finite beside it
        a[7, :] = 1.0e37
        b[:, 11] = 1.0
    else:  # a sum past 2^-11 of float32's range: only the scaled sum overflows (step 18's cliff)
        a[7, :] = 1.0e35
    return a, b


#: The case whose results are all finite for SGEMM: only the 2^11-scaled sums overflow, and are recomputed.
SCALED_ONLY = "a sum past 2^-11 of float32's range"
SPECIALS = ["inf in A, another block's k-tiles", "NaN in B, the finishing block's k-tiles", "a sum past float32's range",
            SCALED_ONLY]


@simulator_only
@pytest.mark.parametrize("case", SPECIALS)
def test_specials_on_a_shared_tile_are_sgemms(case):
    built = variant.build(variant.SIMULATOR_CONFIG, split=all_stream_k, fallback=False, min_share=1)
    config = built.config
    m, n, k = config.BLOCK_M, config.BLOCK_N, 7 * config.BLOCK_K
    a, b = _specials_case(case, m, n, k)
    result = run_in_nan_margin(built, a, b)
    sgemm = sgemm_model(a, b)
    pattern = special_pattern(sgemm)
    assert pattern.any() == (case != SCALED_ONLY), "the case's specials are not what it says"
    assert np.array_equal(special_pattern(result), pattern), "inf/NaN pattern differs from SGEMM's"
    others = pattern == 0
    if "range" in case:  # the row whose scaled sums overflowed (inf unless recomputed: the pattern says it was) is
        # SGEMM's sequential sum where that is finite (the simulator's fma rounds the product: not bit for bit)
        row = (np.arange(m)[:, None] == 7) & others
        assert row.sum() >= n // 4
        error = _error_where(result, a, b, row)
        assert error <= 2.0 ** -20, f"the recomputed row: error {error:.2e}"
        others[7] = False
    error = _error_where(result, a, b, others)
    assert error <= tolerance(k), f"the other results: error {error:.2e} > {tolerance(k):.2e}"


def test_step_18_runs_where_it_splits_k_or_the_waves_are_nearly_whole():
    built = variant.build(variant.SEARCH_SPACE[0])
    built.sm_count = lambda: 132
    assert built.runs_fallback(36, 16384), "36 tiles of 512 k-tiles: step 18 splits K"
    for tiles in (1024, 576, 256, 132):  # whole waves, 4.36 waves in 5 (3000³), 1.94 in 2, one
        assert built.runs_fallback(tiles, 4096), tiles
    for tiles, k in [(144, 4096), (158, 4066), (169, 4096), (80, 128), (404, 4096)]:  # part-empty waves
        assert not built.runs_fallback(tiles, k), (tiles, k)
    assert variant.runs_step_18(36, 512, 132) and not variant.runs_step_18(80, 4, 132)
    # whole waves of short tiles (2, 4 and 8 k-tiles): step 18's cost a tile besides its k-loop is what the loop saves
    for tiles, k in [(2048, 64), (4096, 128), (2048, 256)]:
        assert not built.runs_fallback(tiles, k), (tiles, k)
    assert built.runs_fallback(2048, 1024), "32 k-tiles a tile: the saving is less than the loop's slower k-tiles"
    assert not variant.build(variant.SEARCH_SPACE[0], fallback=False).runs_fallback(36, 16384)


@simulator_only
def test_whole_waves_run_step_18_and_the_persistent_loop_is_right():
    built = variant.build(variant.SIMULATOR_CONFIG)
    launches = record_stream_k_launches(built)
    config = built.config
    step18 = []
    launch_18 = built.fallback.launch_full_tiles
    built.fallback.launch_full_tiles = lambda *arguments, **keywords: (step18.append(arguments[2:4]),
                                                                       launch_18(*arguments, **keywords))
    _product(built, 6 * config.BLOCK_M, config.BLOCK_N, 10 * config.BLOCK_K, "six tiles, step 18")
    assert step18 == [(6, 1)] and launches == [], "6 tiles of 10 k-tiles on 3 blocks, two whole waves: step 18 runs"
    del step18[:]
    _product(built, 6 * config.BLOCK_M, config.BLOCK_N, 3 * config.BLOCK_K, "six short tiles, the loop")
    assert step18 == [] and launches == [("full", SIMULATED_RESIDENT_BLOCKS, 6, 0)], \
        "6 tiles of 3 k-tiles: step 18's cost a tile besides its k-loop outweighs the loop's slower k-tiles"
    loop = variant.build(variant.SIMULATOR_CONFIG, split=no_stream_k, fallback=False)
    loop_launches = record_stream_k_launches(loop)
    _product(loop, 6 * config.BLOCK_M, config.BLOCK_N, 3 * config.BLOCK_K, "six tiles, persistent")
    assert loop_launches == [("full", SIMULATED_RESIDENT_BLOCKS, 6, 0)], "6 tiles on 3 blocks: two tiles a block"
    assert variant.MIN_SHARE_K_TILES == built.min_share


#: On a GPU (132 SMs, step 18's 128 × 128 tiles): one tile shared by every block; a ragged wave boundary (all
#: stream-K); 160 tiles (a wave data-parallel, the rest by k-tiles); K not a multiple of 4 (A copied first); two
#: whole waves of 3 k-tiles a tile (the persistent loop: short tiles, ``SHORT_TILE_K_TILES``).
GPU_SHAPES = [(128, 128, 8192), (1200, 1800, 512), (10077, 164, 4066), (700, 2500, 1001), (1536, 2816, 96)]


def _on_hopper():
    if tuple(cuda.get_current_device().compute_capability) != (9, 0):
        pytest.skip("wgmma and the copy engine's tensor copies need compute capability 9.0")


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in GPU_SHAPES])
def test_on_the_gpu_every_split_is_right_and_the_same_bits_twice(m, n, k):
    _on_hopper()
    built = variant.build(variant.SEARCH_SPACE[0], fallback=False, min_share=1)
    first = _product(built, m, n, k, f"gpu {m}x{n}x{k}")
    again = _product(built, m, n, k, f"gpu {m}x{n}x{k}")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


@pytest.mark.gpu
@pytest.mark.parametrize("case", SPECIALS)
def test_on_the_gpu_specials_on_a_shared_tile_are_sgemms(case):
    _on_hopper()
    built = variant.build(variant.SEARCH_SPACE[0], split=all_stream_k, fallback=False, min_share=1)
    config = built.config
    m, n, k = config.BLOCK_M, config.BLOCK_N, 7 * config.BLOCK_K
    a, b = _specials_case(case, m, n, k)
    result, sgemm = run_in_nan_margin(built, a, b), sgemm_model(a, b)
    assert np.array_equal(special_pattern(result), special_pattern(sgemm))
    if "range" in case:  # the recomputed row: SGEMM's sum where it is finite (the model's double rounding aside)
        finite = np.isfinite(sgemm[7])
        assert np.allclose(result[7][finite], sgemm[7][finite], rtol=1e-6, atol=0)
