"""Padded products (gemm_steps/toolkit/padded_tiles.py): a ragged product copied into whole tiles, run on a build's
fast kernel alone, its corner copied out — and the dispatch rule's view of such candidates (harness/dispatch.py)."""

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import dispatch
from gemm_steps.harness import fp32_contract as contract
from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.toolkit.padded_tiles import PaddedTiles, copy_padded
from helpers import run_in_nan_margin

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="builds step 18 for the simulator's tiles")


@pytest.mark.parametrize("rows, cols, padded_rows, padded_cols", [(5, 7, 8, 12), (37, 300, 40, 320)],
                         ids=["small", "wider_than_a_block"])
def test_copy_pads_with_zeros_and_crops(rows, cols, padded_rows, padded_cols):
    """Into a larger buffer: the corner is the source, the rest zeros (poisoned first, so a skipped element shows);
    out of it again: the source back, bit for bit. The second shape is wider than a block's threads and taller than
    the simulator's one row of blocks (each thread strides down its column)."""
    source = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    padded = cuda.to_device(np.full((padded_rows, padded_cols), np.nan, np.float32))
    copy_padded(cuda.to_device(source), padded)
    got = padded.copy_to_host()
    assert (got[:rows, :cols] == source).all()
    assert (got[rows:, :] == 0).all() and (got[:, cols:] == 0).all()
    back = cuda.to_device(np.full((rows, cols), np.nan, np.float32))
    copy_padded(padded, back)
    assert (back.copy_to_host() == source).all()


@simulator_only
def test_the_simulator_copies_with_few_threads():
    """On the simulator (a Python thread a GPU thread) a copy is one row of blocks no wider than its rows need: a
    32 × 40 buffer, one block of 64 threads (a GPU's grid: 32 blocks of 256)."""
    from gemm_steps.toolkit.padded_tiles import copy_grid, copy_threads

    assert copy_grid(32, 40) == (1, 1) and copy_threads(40) == 64
    assert copy_grid(32, 600) == (3, 1) and copy_threads(600) == 256


def test_which_matrices_a_shape_copies():
    """A, B and C are copied only where their own sides are not whole tiles."""
    tiles = PaddedTiles(step18.build(step18.SIMULATOR_CONFIG))
    config = tiles.tiled.config
    whole = (2 * config.BLOCK_M, 3 * config.BLOCK_N, 2 * config.BLOCK_K)
    assert tiles.copies(*whole) == (False, False, False)
    assert tiles.padded_shape(*whole) == whole
    m, n, k = whole
    assert tiles.copies(m, n + 1, k) == (False, True, True)  # a ragged N: B and C
    assert tiles.copies(m + 1, n, k) == (True, False, True)  # a ragged M: A and C
    assert tiles.copies(m, n, k - 3) == (True, True, False)  # a ragged K: A and B
    assert tiles.padded_shape(m + 1, n, k - 3) == (m + config.BLOCK_M, n, k)


@simulator_only
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_ragged_product_keeps_the_fp32_contract_and_sgemms_specials():
    """K and N not multiples of 4 (no tensor map could read A or B as they are), M and N not whole tiles (one tile on
    the simulator's tiles, padded on three sides): within the FP32 contract's bound of the sequential float32 sum,
    every element written. Then an inf in A's last row and last k and a NaN in B's last column (beside the padding,
    where inf·0 = NaN): C's inf/NaN pattern is that sum's — padded rows and columns are never copied out."""
    m, n, k = 30, 61, 35
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    tiles = PaddedTiles(step18.build(step18.SIMULATOR_CONFIG))
    assert tiles.copies(m, n, k) == (True, True, True)
    c = run_in_nan_margin(tiles, a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    reference = contract.normwise_error(contract.sgemm_model(a, b), a, b, exact)
    assert not np.isnan(c).any()
    assert contract.normwise_error(c, a, b, exact) <= contract.contract_bound(reference)

    a[m - 1, k - 1] = np.inf
    b[5, n - 1] = np.nan
    got = contract.special_pattern(run_in_nan_margin(tiles, a, b))
    expected = contract.special_pattern(contract.sgemm_model(a, b))
    assert (got == expected).all(), f"{(got != expected).sum()} elements off SGEMM's pattern"
    assert (expected[m - 1] != 0).all() and (expected[:, n - 1] != 0).all()


def test_padded_candidates_are_judged_where_they_copy_as_they_would():
    """The dispatch rule compares a padded candidate with itself only at shapes where it copies the same way: its
    4096³ time (nothing copied) says nothing of 3000³ (all three copied); its 3001×2999×1531 time does."""
    name = "warp_specialized_3xtf32+padded"
    assert dispatch._step_arithmetic(name) == "3xtf32"
    assert dispatch._step_number(name) == gemm_steps.get_step("warp_specialized_3xtf32").number
    assert dispatch.fast_share(name, 3000, 3000, 3000) == 1.0
    assert not dispatch._same_path(name, (3000, 3000, 3000), (4096, 4096, 4096))
    assert dispatch._same_path(name, (3000, 3000, 3000), (3001, 2999, 1531))


def test_a_padded_candidate_is_allowed_only_with_its_step():
    """At precision "ieee" no tensor-core step may run, so neither may its padded candidate; at "tf32x3" step 18's
    may (where this GPU runs step 18), step 17's (TF32) may not."""
    assert not set(dispatch.PADDED_VARIANTS) & dispatch.allowed_steps("ieee")
    allowed = dispatch.allowed_steps("tf32x3")
    assert "warp_specialized+padded" not in allowed
    assert ("warp_specialized_3xtf32+padded" in allowed) == ("warp_specialized_3xtf32" in allowed)


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(dispatch.PADDED_VARIANTS))
def test_gpu_padded_candidates_on_ragged_shapes(name):
    """On the GPU's own tiles, ragged products (all three matrices copied; K = 1, a k-tile and a bit, a long K not a
    multiple of 4), every element written: step 18's candidate within the FP32 contract's bound for every finite
    class and with the sequential sum's inf/NaN pattern on the specials; step 17's (TF32) within TF32's tolerance on
    standard normal inputs."""
    from gemm_steps.harness.verify import relative_error, tolerance_of

    step = dispatch.candidate(name)
    if step.unavailable():
        pytest.skip(step.unavailable())

    def run(a, b):
        c = cuda.to_device(np.full((a.shape[0], b.shape[1]), np.nan, np.float32))
        step(cuda.to_device(a), cuda.to_device(b), out=c)
        return c.copy_to_host()

    contract_kept = step.arithmetic == "3xtf32"
    for k in (1, 33, 3333):
        assert step.padded().copies(257, 255, k) == (True, True, True)
        if not contract_kept:
            rng = np.random.default_rng(k)
            a, b = rng.standard_normal((257, k)).astype(np.float32), rng.standard_normal((k, 255)).astype(np.float32)
            assert relative_error(run(a, b), a, b) <= tolerance_of(step.arithmetic, k), f"K = {k}"
            continue
        for label, a, b in contract.input_classes(257, 255, k, seed=k):
            c = run(a, b)
            assert not np.isnan(c).any(), f"{label}, K = {k}: an element left unwritten"
            exact = a.astype(np.float64) @ b.astype(np.float64)
            bound = contract.contract_bound(contract.normwise_error(contract.sgemm_model(a, b), a, b, exact))
            assert contract.normwise_error(c, a, b, exact) <= bound, f"{label}, K = {k}"
    if contract_kept:
        for label, a, b in contract.special_inputs(300, 261, 51):
            if label == "finite overflow":
                b = np.abs(b) + 1  # as in test_fp32_contract: +inf in any order
            expected = contract.special_pattern(contract.sgemm_model(a, b))
            assert (contract.special_pattern(run(a, b)) == expected).all(), label
