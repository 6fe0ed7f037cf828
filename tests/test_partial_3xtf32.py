"""Step 18's partial-tile build (``PARTIAL_TILES``, as step 17's: tests/test_tma_edges.py): its 3xTF32 kernel over
every tile of C in one launch — and over every slice of K where it splits K — the copy engine's out-of-bounds zeros
standing for the border, its stores keeping to C.

On the simulator (one consumer warpgroup on step 18's 32 × 64 simulator tile): on ragged shapes (M and N not
multiples of the tile, K a multiple of 4 but not of 32; smaller than one tile), one launch of the fast kernel over
⌈N / BLOCK_N⌉ × ⌈M / BLOCK_M⌉ tiles, within the FP32 contract's bound, nothing around C written; split in two slices of
K with a partial last k-tile, the same and the reduction's launch; with an inf in A and B (and zero-filled rows and
columns around C, where 0·inf is NaN), C's inf/NaN pattern is SGEMM's. On full tiles the partial build gives the
full-tile build's bits. A GPU of compute capability 9.0 runs the same tests at its own tiles (128 × 128).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import fp32_contract as contract
from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.toolkit.kernel_tools import ceil_div
from gemm_steps.toolkit.tuned import default_config
from helpers import random_matrices, run_in_nan_margin, spy_launches, spy_row_copies

pytestmark = pytest.mark.skipif(
    not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
    reason="wgmma and the copy engine need compute capability 9.0")

CONFIG = step18.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else default_config(step18.SEARCH_SPACE)


def _within_the_contract(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    assert np.isfinite(got).all(), f"{int((~np.isfinite(got)).sum())} elements of C not written (or not finite)"
    exact = a.astype(np.float64) @ b.astype(np.float64)
    reference = contract.normwise_error(contract.sgemm_model(a, b), a, b, exact)
    assert contract.normwise_error(got, a, b, exact) <= contract.contract_bound(reference)


#: (M, N, K) on the simulator's 32 × 64 tile, and on the GPU's 128 × 128 tile: 2 × 2 tiles, three partial, one
#: partial k-tile (K = 20); four k-tiles, the last with 4 of 32 columns, one tile-column narrower than a tile (the
#: ring of 4 stages full); smaller than a tile in every dimension.
RAGGED = [pytest.param((45, 68, 20), (200, 200, 20), id="2x2_tiles-K20"),
          pytest.param((33, 60, 100), (130, 100, 100), id="2x1_tiles-K100"),
          pytest.param((5, 12, 8), (5, 12, 8), id="tiny-5x12x8")]


@pytest.mark.parametrize("sim_shape, gpu_shape", RAGGED)
def test_a_ragged_shape_takes_one_launch_within_the_contract(sim_shape, gpu_shape, monkeypatch):
    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    assert k % 4 == 0 and n % 4 == 0 and (m % CONFIG.BLOCK_M or n % CONFIG.BLOCK_N) and k % CONFIG.BLOCK_K
    a, b = random_matrices(np.random.default_rng(m * n + k), m, n, k)
    kernels = step18.build(CONFIG, slices=lambda *_: 1)
    launched = spy_launches(monkeypatch, kernels)
    got = run_in_nan_margin(kernels, a, b)
    assert launched == [("fast", (ceil_div(n, CONFIG.BLOCK_N), ceil_div(m, CONFIG.BLOCK_M), 1))], launched
    _within_the_contract(got, a, b)


def test_slices_of_k_with_a_partial_last_k_tile_add_up():
    """Two slices over 4 k-tiles, the last with 4 of 32 columns, on 2 × 2 tiles (three partial): the slices' sums
    over C's every element (and only C's) are added into C, within the contract."""
    m, n, k = (45, 68, 100) if gemm_steps.SIMULATOR else (200, 200, 100)
    a, b = random_matrices(np.random.default_rng(18), m, n, k)
    kernels = step18.build(CONFIG, slices=lambda *_: 2)
    assert kernels.partial.slice_count(m, n, k, 4) == 2 and kernels.partial.k_tiles(k) == 4
    _within_the_contract(run_in_nan_margin(kernels, a, b), a, b)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("slices", [1, 2], ids=["one_slice", "two_slices"])
def test_specials_on_a_partial_tile_give_sgemms_pattern(slices):
    """inf in A's last row (a partial tile-row), −inf in B's last column (a partial tile-column: A's zero-filled rows
    below M make 0·(−inf) = NaN outside C, which must not count), NaN in B's last row (the partial k-tile): C's
    inf/NaN pattern is the sequential FMA sum's."""
    m, n, k = (45, 68, 100) if gemm_steps.SIMULATOR else (200, 200, 100)
    a, b = random_matrices(np.random.default_rng(5), m, n, k)
    a[m - 1, 3] = np.inf
    b[7, n - 1] = -np.inf
    b[k - 1, 10] = np.nan
    kernels = step18.build(CONFIG, slices=lambda *_: slices)
    got = contract.special_pattern(run_in_nan_margin(kernels, a, b))
    expected = contract.special_pattern(contract.sgemm_model(a, b))
    assert (got == expected).all(), f"{(got != expected).sum()} elements off SGEMM's pattern"
    assert (expected != 0).sum() >= 2 * m + n - 3  # a row, two columns


def test_full_tiles_give_the_full_tile_builds_bits():
    """The partial build on 2 × 2 full tiles over 3 k-tiles: the same bits as the full-tile build (the same loop
    and boxes; only the stores' guard, always true here, differs)."""
    m, n, k = 2 * CONFIG.BLOCK_M, 2 * CONFIG.BLOCK_N, 3 * CONFIG.BLOCK_K
    a, b = random_matrices(np.random.default_rng(17), m, n, k)
    kernels = step18.build(CONFIG, slices=lambda *_: 1)
    got = run_in_nan_margin(kernels.partial, a, b)
    whole = run_in_nan_margin(kernels, a, b)
    differ = got.view(np.uint32) != whole.view(np.uint32)
    assert not differ.any(), f"{int(differ.sum())} elements differ from the full-tile build's"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("slices", [1, 2], ids=["one_slice", "two_slices"])
@pytest.mark.parametrize("way", ["copies", "b_rows"])
def test_a_shape_the_copy_engine_cannot_read_is_copied_or_b_read_by_its_rows(way, slices, monkeypatch):
    """K = 37 and N = 70 (rows of A and B not multiples of 16 bytes; on a GPU K = 101, N = 198): with B read by its
    rows mod 4 (``b_rows``, the policy's choice at so few rows) A is copied into rows of 40 floats and the
    B_ROWS_MOD_4 build runs; with that policy off (``copies``), A and B are copied into rows of 40 and 72 floats, then
    the partial build. One launch (over two slices of K too), within the contract (the two ways' bits are compared
    by test_b_read_by_its_rows_mod_4_gives_the_copy_paths_bits); an inf in A's last column (the partial k-tile, next to the zeros) and a NaN in B's last column give SGEMM's
    pattern."""
    if way == "copies":
        monkeypatch.setattr(step18, "B_BY_ROWS_MAX_M", 0)
    m, n, k = (45, 70, 37) if gemm_steps.SIMULATOR else (200, 198, 101)
    a, b = random_matrices(np.random.default_rng(101), m, n, k)
    kernels = step18.build(CONFIG, slices=lambda *_: slices)
    assert kernels.copies(cuda.to_device(a), cuda.to_device(b)) == (True, True)
    copied = spy_row_copies(monkeypatch)
    launched = spy_launches(monkeypatch, kernels)
    got = run_in_nan_margin(kernels, a, b)
    _within_the_contract(got, a, b)
    grid = (ceil_div(n, CONFIG.BLOCK_N), ceil_div(m, CONFIG.BLOCK_M), slices)
    if way == "copies":
        assert launched == [("fast", grid)] and copied == ["A", "B"], (launched, copied)
    else:
        assert launched == [("B by rows mod 4: fast", grid)] and copied == ["A"], (launched, copied)
    a[7, k - 1] = np.inf
    b[3, n - 1] = np.nan
    got = contract.special_pattern(run_in_nan_margin(kernels, a, b))
    expected = contract.special_pattern(contract.sgemm_model(a, b))
    assert (got == expected).all(), f"{(got != expected).sum()} elements off SGEMM's pattern"


@pytest.mark.parametrize("m, n, k, widths", [(5, 6, 7, (8, 8)), (101, 9, 11, (12, 12))],
                         ids=["one_block", "more_than_a_block"])
def test_a_readable_copy_widens_each_row_with_zeros(m, n, k, widths):
    """TmaTiles.readable_copy on its own: A (5 × 7) into rows of 8 floats and B (7 × 6) into rows of 8, each row's
    values in place and zeros past its end — the zeros matter: the copy engine reads them, and an inf or NaN there
    would meet the zero-filled rows of the other matrix as NaN. Then A of 101 × 11 (303 quads of 4 floats, a thread a
    quad: more than a block's 256 threads, which on the simulator's one block stride on)."""
    from gemm_steps.toolkit.tiles import flat_operands

    a, b = random_matrices(np.random.default_rng(7), m, n, k)
    kernels = step18.build(CONFIG)
    a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
    _, flat = flat_operands(a_dev, b_dev, cuda.device_array((m, n), np.float32))
    for which, (matrix, width) in enumerate(zip((a, b), widths)):
        rows = kernels.readable_copy(which, flat, (m, n, k), 0)
        rows.copy_to_device(np.full(rows.shape, np.nan, np.float32))  # a reused buffer holds anything
        got = kernels.readable_copy(which, flat, (m, n, k), 0).copy_to_host()
        assert got.shape == (matrix.shape[0], width)
        assert np.array_equal(got[:, :matrix.shape[1]], matrix) and not got[:, matrix.shape[1]:].any()


@pytest.mark.parametrize("m, n, k", [(40, 70, 45), (33, 131, 36), (20, 7, 9), (20, 129, 4)],
                         ids=["N70_K45", "N131", "N7_K9", "K4"])
def test_b_read_by_its_rows_mod_4_gives_the_copy_paths_bits(m, n, k):
    """Where N is not a multiple of 4 (every residue (r·N) % 4 occurs), the B_ROWS_MOD_4 build — four maps of B, one
    a residue of its rows mod 4 — gives the bits of the path that copies B first, nothing around C written; one
    product of a partial k-tile, one of K = 4 (one row a map)."""
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    kernels = step18.build(CONFIG)
    assert kernels.b_rows.config.B_ROWS_MOD_4 and kernels.b_by_rows_at(m, n, k)
    by_rows = run_in_nan_margin(kernels, a, b)
    _within_the_contract(by_rows, a, b)
    copied = run_in_nan_margin(step18.build(CONFIG, b_rows_when=None), a, b)
    assert np.array_equal(by_rows.view(np.uint32), copied.view(np.uint32)), "not the copy path's bits"


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(69, 1001, 700), (130, 2003, 1555), (1000, 3001, 300), (101, 4957, 287)])
def test_on_the_gpu_b_read_by_rows_gives_the_copy_paths_bits(m, n, k):
    """On a GPU, step 18's tiles: the B_ROWS_MOD_4 build against the copy path, bit for bit, within the contract,
    nothing around C written (N ≡ 1, 3, 1, 1 mod 4; 130×2003×1555 split along K)."""
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    by_rows = run_in_nan_margin(step18.build(CONFIG, b_rows_when=lambda *_: True), a, b)
    _within_the_contract(by_rows, a, b)
    copied = run_in_nan_margin(step18.build(CONFIG, b_rows_when=None), a, b)
    assert np.array_equal(by_rows.view(np.uint32), copied.view(np.uint32)), "not the copy path's bits"


def test_b_is_read_by_rows_only_where_the_run_saw_it_pay():
    """experiments/b_rows_mod_4.py --step 18 (H200): the rows build 1.12–1.61× the copy path at M = 64–200 on both
    tiles, 0.95–0.99× at 1000, 0.89–0.96× at 3001 and 4096: M ≤ 200 reads B by rows, more rows copy it; step 22
    hands such products to step 18's build."""
    from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step22

    assert step18.reads_b_by_rows(200, 7001, 3000) and step18.reads_b_by_rows(64, 6001, 6000)
    assert not step18.reads_b_by_rows(1000, 3001, 2000)
    shipped = step22.build(CONFIG)
    assert shipped.b_rows.config.B_ROWS_MOD_4 and shipped.b_rows.name == "warp_specialized_3xtf32_b_rows"
    assert shipped.b_by_rows_at(101, 4957, 287) and not shipped.b_by_rows_at(1001, 4957, 287)


def test_step_22_hands_a_b_read_by_rows_to_step_18(monkeypatch):
    """Step 22 has no B_ROWS_MOD_4 build of its own: where B is unreadable and M at most B_BY_ROWS_MAX_M, one
    launch of step 18's, no copy of B, and step 18's bits."""
    from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step22

    m, n, k = 40, 70, 64
    a, b = random_matrices(np.random.default_rng(22), m, n, k)
    kernels = step22.build(CONFIG)
    copied = spy_row_copies(monkeypatch)
    launched = spy_launches(monkeypatch, kernels)
    got = run_in_nan_margin(kernels, a, b)
    grid = (ceil_div(n, CONFIG.BLOCK_N), ceil_div(m, CONFIG.BLOCK_M), 1)
    assert launched == [("B by rows mod 4: fast", grid)] and copied == [], (launched, copied)
    assert np.array_equal(got.view(np.uint32), run_in_nan_margin(step18.build(CONFIG), a, b).view(np.uint32))
