"""Steps 17's and 18's split-K (gemm_steps/toolkit/tma_tiles.SplitKTmaTiles): where a product has fewer tiles than the
GPU has SMs, slices of K run as a third grid dimension into a workspace and a second kernel adds them in order. On the
simulator with the policy forced (its 3 simulated SMs would rarely split), the policies themselves, and the launch's
rule that no slice is empty."""

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import fp32_contract as contract
from gemm_steps.harness.verify import relative_error, tf32_tolerance
from gemm_steps.steps import warp_specialized as step17
from gemm_steps.steps import warp_specialized_3xtf32 as step18
from helpers import run_in_nan_margin, tf32_product

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="forces the policy on the simulator's tiles")


@simulator_only
@pytest.mark.parametrize("slices, shape", [(2, (32, 64, 128)), (3, (40, 70, 96))], ids=["even", "uneven_ragged"])
def test_slices_add_up_to_the_product(slices, shape):
    """Two slices of 2 k-tiles; three slices of 1 k-tile over a ragged shape (its edge on step 14's kernel): within
    the FP32 contract's bound of the sequential float32 sum, every element written."""
    m, n, k = shape
    rng = np.random.default_rng(slices)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    tiles = step18.build(step18.SIMULATOR_CONFIG, slices=lambda *_: slices)
    assert tiles.slice_count(m, n, k, 1) == slices
    c = run_in_nan_margin(tiles, a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    reference = contract.normwise_error(contract.sgemm_model(a, b), a, b, exact)
    assert not np.isnan(c).any()
    assert contract.normwise_error(c, a, b, exact) <= contract.contract_bound(reference)


@simulator_only
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_special_in_one_slice_gives_sgemms_pattern():
    """inf in A's row 0 in the first slice's k, −inf in row 1 split across both slices' k, NaN in B's column 3 in the
    second slice: C's inf/NaN pattern is the sequential FMA sum's (the second kernel recomputes a non-finite sum)."""
    m, n, k = 32, 64, 64
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    a[0, 3] = np.inf
    a[1, 5], a[1, 40] = np.inf, -np.inf
    b[50, 3] = np.nan
    tiles = step18.build(step18.SIMULATOR_CONFIG, slices=lambda *_: 2)
    got = contract.special_pattern(run_in_nan_margin(tiles, a, b))
    expected = contract.special_pattern(contract.sgemm_model(a, b))
    assert (got == expected).all(), f"{(got != expected).sum()} elements off SGEMM's pattern"
    assert (expected == 3).any() and (expected != 0).sum() > n


def test_the_policy_fills_the_sms_once_with_long_enough_slices():
    assert step18.slices(36, 512, 132) == 3  # 768×768×16384: 108 blocks, one wave
    assert step18.slices(32, 256, 132) == 4  # 1024×512×8192
    assert step18.slices(64, 512, 132) == 2  # 1024×1024×16384
    assert step18.slices(512, 128, 132) == 1  # 4096³: the tiles fill the SMs
    assert step18.slices(16, 16, 132) == 8  # 512³: slices of MIN_SLICE_K_TILES (2) k-tiles
    assert step18.slices(4, 8, 132) == 4  # 256³
    assert step18.slices(49, 4, 132) == 1  # 726×793×102 padded: fewer than MIN_SPLIT_K_TILES k-tiles, no split
    assert step18.slices(1, 4096, 132) == 132  # one tile, long K: every SM (no cap since 2026-11-29; it was 8)
    assert step18.slices(1, 512, 132) == 132  # 128×128×16384: launched as 128 slices of 4 (launched_slices)


def test_a_split_that_does_not_pay_is_not_made_but_step_22_still_hands_the_product_over():
    """2400×256×288 is 38 tiles of 9 k-tiles: a split would take 3 slices (``split_asked``), saving 6 k-tiles of a
    block (6.6 µs) for a reduction costing more (7.9 µs), so step 18 runs one slice (0.86–0.96× the time of the split
    at eight such products, experiment-split-pays-nvidia-h200.json); 700×500×400 (24 tiles of 13 k-tiles) still splits
    in 5. Step 22 hands both to step 18 as before: it ran slower than step 18 at such products."""
    from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step22

    assert step18.split_asked(38, 9, 132) == 3 and step18.slices(38, 9, 132) == 1
    assert step18.slices(24, 13, 132) == 5
    assert not step18.split_pays(38, 9, 3) and step18.split_pays(24, 13, 5)
    assert step22.runs_step_18(38, 9, 132) and step22.runs_step_18(24, 13, 132)


@pytest.mark.skipif(not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
                    reason="wgmma and the copy engine need compute capability 9.0")
@pytest.mark.parametrize("slices, sim_shape, gpu_shape", [(2, (32, 64, 128), (256, 128, 256)),
                                                          (3, (40, 70, 96), (300, 130, 96)),
                                                          (8, (32, 64, 17 * 32), (256, 128, 17 * 32))],
                         ids=["even", "uneven_ragged_copied_B", "eight_asked_six_run"])
def test_step_17s_slices_add_up_to_the_tf32_product(slices, sim_shape, gpu_shape, monkeypatch):
    """Step 17's split-K, on the simulator's tiles and on a GPU's (256 × 128): two slices on a full tile; three slices
    of 1 k-tile on a ragged shape whose N (70, 130) makes B be copied first (its partial build splits too); 17
    k-tiles asked in 8 slices run in 6 (8 slices of ⌈17 / 8⌉ = 3 would leave the last two past K). The product equals
    float64 on the TF32 inputs the tensor core reads to float32 rounding, every element written."""
    from helpers import spy_launches

    from gemm_steps.toolkit.tuned import default_config

    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    config = step17.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else default_config(step17.SEARCH_SPACE)
    rng = np.random.default_rng(17 + slices)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    tiles = step17.build(config, slices=lambda *_: slices)
    built = tiles.partial if tiles.partial_applies(cuda.to_device(a), cuda.to_device(b),
                                                   cuda.device_array((m, n), np.float32)) else tiles
    launched = spy_launches(monkeypatch, tiles)
    c = run_in_nan_margin(tiles, a, b)
    expected = 6 if slices == 8 else slices
    assert built.slice_count(m, n, k, 1) == expected
    assert [grid[2] for _, grid in launched] == [expected], launched
    assert not np.isnan(c).any()
    # what the tensor core multiplies: A and B rounded to nearest (ties to even) by the copy engine (TF32_COPIES)
    fed = tf32_product(a, b, True)  # the copy engine rounds A and B (TF32_COPIES)
    assert np.abs(c - fed).max() <= 1e-5 * np.abs(fed).max()
    assert relative_error(c, a, b) <= tf32_tolerance(k)


def test_step_17s_policy_fills_the_sms_once_with_slices_of_sixteen_k_tiles():
    assert step17.slices(20, 448, 132) == 6  # 900×640×14336: 4 × 5 tiles, 120 blocks
    assert step17.slices(16, 159, 132) == 8  # 2 × 8 tiles, 159 k-tiles: 8 slices of 20 (SMs ÷ tiles)
    assert step17.slices(1, 512, 132) == 32  # 128×128×16384: slices of 16, no cap (8 before 2026-11-29)
    assert step17.slices(32, 64, 132) == 4  # 1024×1024×2048: slices of 16
    assert step17.slices(52, 94, 132) == 2  # 1 × 52 tiles, 94 k-tiles: 104 blocks, slices of 47
    assert step17.slices(32, 32, 132) == 1  # 1024³: fewer than MIN_SPLIT_K_TILES k-tiles (split, it lost)
    assert step17.slices(15, 20, 132) == 1  # 640³
    assert step17.slices(512, 128, 132) == 1  # 4096³: the tiles fill the SMs
    assert step17.slices(96, 192, 132) == 1  # 96 tiles: a second slice would make 192 blocks, past one wave


@pytest.mark.parametrize("asked, k_tiles, runs", [(8, 17, 6), (8, 16, 8), (3, 10, 3), (4, 9, 3), (5, 2, 2)])
def test_no_slice_is_empty(asked, k_tiles, runs):
    """The kernel gives each slice ⌈k-tiles / slices⌉ k-tiles; the launch takes as many slices as that needs."""
    tiles = step18.build(step18.SIMULATOR_CONFIG, slices=lambda *_: asked)
    k = k_tiles * step18.SIMULATOR_CONFIG.BLOCK_K
    assert tiles.slice_count(32, 64, k, 1) == runs
    per_slice = -(-k_tiles // runs)
    assert (runs - 1) * per_slice < k_tiles  # the last slice has k-tiles
