"""Step 20 with a TMA-store epilogue (experiments/kernels/cluster_multicast_tma_store.py): the consumer warpgroups
stage C in the stage memory, 128-byte swizzled, and the copy engine stores it (toolkit/tma_store_ops.py).

On the simulator (the twins of the copy engine, the barriers and the cluster): the product is step 20's, bit for bit
(the same main loop; only where C goes on the way out changed), and equals float64 on the TF32 inputs to float32
rounding, within the TF32 tolerance; with one consumer warpgroup (step 20's simulator tiles) and with two (so the
meeting of both warpgroups and warpgroup 1's boxes run), in grids of two clusters. The fast kernel alone writes its
full tiles and nothing else: not the odd tile-column or the ragged edges it leaves to the edge kernel (NaN-poisoned,
the edge launch suppressed), not past C (a NaN margin around C in one buffer). The staging layout is the copy
engine's 128-byte swizzle, and a warp's 32 stores of one accumulator hit 32 banks. The fast kernel's PTX at the GPU's
tiles (compiled on a CPU): the bulk tensor stores, their commit and read-wait, the proxy fence, the two named
barriers, no st.global, and ptxas keeps step 20's register hand-off without spills.

On a GPU of compute capability 9.0 the same tests run the GPU's tiles (256 × 128, two consumer warpgroups) at the
same tile counts, more k-tiles: ``python -m pytest tests/test_tma_store_epilogue.py`` there checks the variant before
it is timed (experiments/tma_store_epilogue.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness.verify import relative_error, tf32_tolerance
from gemm_steps.steps import cluster_multicast
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import TiledKernels
from helpers import nan_c_with_margin, only_c_written, random_matrices, tf32_product

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments.kernels import cluster_multicast_tma_store as variant  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
    reason="wgmma, clusters and the copy engine need compute capability 9.0")

#: Step 20's simulator tiles (one consumer warpgroup on 32 × 64), and the same rows with two consumer warpgroups
#: (32 × 128, 384 threads a block): the warpgroups meet before staging, and warpgroup 1 stores columns 64–127.
ONE_WARPGROUP = variant.SIMULATOR_CONFIG
TWO_WARPGROUPS = variant.Config.of(TileConfig(BLOCK_M=32, BLOCK_N=128, BLOCK_K=32, THREAD_M=4, THREAD_N=4,
                                              MIN_BLOCKS_PER_SM=1))


def _on_this_machine(config, k_tiles: int):
    """The tiles and k-tiles a test runs here: as given on the simulator; the GPU's tiles, 4× the k-tiles, on a GPU."""
    return (config, k_tiles) if gemm_steps.SIMULATOR else (variant.CONFIG, 4 * k_tiles)


def _spy(monkeypatch, skip_edge: bool = False) -> list:
    """Record the variants each launch configures ("fast", "edge"); with ``skip_edge`` the edge launches do nothing."""
    launched: list = []
    original = TiledKernels.configured

    def spy(self, which, grid, stream, launches=None):
        launched.append(which)
        if skip_edge and which == "edge":
            return lambda *arguments: None
        return original(self, which, grid, stream, launches)

    monkeypatch.setattr(TiledKernels, "configured", spy)
    return launched


@pytest.mark.parametrize("config, k_tiles", [pytest.param(ONE_WARPGROUP, 8, id="one_warpgroup-32x64-8_k_tiles"),
                                             pytest.param(TWO_WARPGROUPS, 4, id="two_warpgroups-32x128-4_k_tiles")])
def test_the_product_is_step_20s_bit_for_bit(config, k_tiles, monkeypatch):
    """2 × 2 full tiles (two clusters of two blocks) over k_tiles k-tiles (8: each of the 4 stages filled twice):
    every element of C written, nothing around it, the same bits as step 20, and float64's product of the TF32
    inputs to float32 rounding."""
    config, k_tiles = _on_this_machine(config, k_tiles)
    m, n, k = 2 * config.BLOCK_M, 2 * config.BLOCK_N, k_tiles * config.BLOCK_K
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    launched = _spy(monkeypatch)
    buffer, c = nan_c_with_margin(m, n)
    variant.build(config).launch(cuda.to_device(a), cuda.to_device(b), c)
    assert launched == ["fast"], f"expected the fast kernel alone (whole clusters of full tiles), got {launched}"
    got = only_c_written(buffer, m, n)
    assert np.isfinite(got).all(), f"{int((~np.isfinite(got)).sum())} elements of C not written (or not finite)"

    step_20 = cuda.to_device(np.full((m, n), np.nan, np.float32))
    cluster_multicast.build(config).launch(cuda.to_device(a), cuda.to_device(b), step_20)
    expected = step_20.copy_to_host()
    differ = got.view(np.uint32) != expected.view(np.uint32)
    assert not differ.any(), (f"{int(differ.sum())} elements differ from step 20's, first at "
                              f"{tuple(int(i) for i in np.argwhere(differ)[0])}")
    fed = tf32_product(a, b, False)  # float32 maps: A truncated, B rounded
    assert np.abs(got - fed).max() <= 1e-5 * np.abs(fed).max()
    assert relative_error(got, a, b) <= tf32_tolerance(k)


def test_the_fast_kernel_writes_its_full_tiles_and_nothing_else(monkeypatch):
    """(2·BLOCK_M + 1) × (3·BLOCK_N + 4): 2 × 3 full tiles, of which the fast kernel takes the 2 × 2 in whole
    clusters; the third tile-column and the ragged edges are the edge kernel's, whose launch is suppressed here. C's
    rows are longer than the tiles (its tensor map's row pitch is not the box's): the 2 × 2 tiles right, every other
    element of C and the margin around it still NaN."""
    config, k_tiles = _on_this_machine(ONE_WARPGROUP, 2)
    m, n, k = 2 * config.BLOCK_M + 1, 3 * config.BLOCK_N + 4, k_tiles * config.BLOCK_K
    a, b = random_matrices(np.random.default_rng(7), m, n, k)
    launched = _spy(monkeypatch, skip_edge=True)
    buffer, c = nan_c_with_margin(m, n)
    variant.build(config).launch(cuda.to_device(a), cuda.to_device(b), c)
    assert launched == ["fast", "edge"], launched
    got = only_c_written(buffer, m, n)
    rows, cols = 2 * config.BLOCK_M, 2 * config.BLOCK_N
    outside = np.ones((m, n), bool)
    outside[:rows, :cols] = False
    assert np.isnan(got[outside]).all(), f"{int((~np.isnan(got[outside])).sum())} elements written outside the tiles"
    fed = tf32_product(a[:rows], b[:, :cols], False)
    assert np.isfinite(got[:rows, :cols]).all()
    assert np.abs(got[:rows, :cols] - fed).max() <= 1e-5 * np.abs(fed).max()


def test_the_staging_layout_is_the_swizzle_and_conflict_free():
    """The kernel's staging index (the same formula, for every thread and accumulator of a warpgroup at the GPU's
    tiles) puts C's element (row, col) where the copy engine reads it — box col // 32, the 16-byte chunk of row r
    at chunk ^ (r % 8) — each slot once, in the stage memory, and a warp's 32 stores of one accumulator hit 32
    different banks."""
    config = variant.CONFIG
    assert config.check().CONSUMERS * config.C_STAGING_FLOATS <= config.STAGES * (config.A_STAGE_FLOATS
                                                                                  + config.B_STAGE_FLOATS)
    tid = np.arange(128)
    warp, lane = tid // 32, tid % 32
    seen = np.zeros(config.C_STAGING_FLOATS, int)
    for v in range(config.ACCUMULATORS):
        row = lane % 4 * 2 + (v // 4 * 8 + v % 2)  # as in the kernel (Cᵀ fragment: row of C, column in 64)
        col = warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        x = col % config.C_BOX_COLS
        index = col // config.C_BOX_COLS * config.C_BOX_FLOATS + row * config.C_BOX_COLS + ((x // 4) ^ (row % 8)) * 4 \
            + x % 4
        seen[index] += 1
        # where the copy engine reads (row, col) of box col // 32: address bits 4–6 XOR bits 7–9 (box 1,024-aligned)
        plain = (col // config.C_BOX_COLS * config.C_BOX_FLOATS + row * config.C_BOX_COLS + x) * 4
        assert np.array_equal(index * 4, plain ^ (((plain >> 7) & 7) << 4))
        for w in range(4):
            banks = index[warp == w] % 32  # the staging starts 1,024-byte aligned
            assert len(set(banks.tolist())) == 32, f"accumulator {v}, warp {w}: banks {sorted(banks.tolist())}"
    assert (seen == 1).all(), "every staging slot written exactly once"


PTX_JOB = "kernels:experiments.kernels.cluster_multicast_tma_store:ptx_kernels"
LABEL = "cluster_multicast_tma_store_fast"


@pytest.mark.ptx(PTX_JOB)
def test_the_fast_kernel_stores_c_through_the_copy_engine(ptx):
    """At the GPU's tiles (256 × 128, two consumer warpgroups), compiled for sm_90 on a CPU: C leaves through
    C_BOXES bulk tensor stores (global ← shared), committed and waited for (read), after a proxy fence; no st.global
    is left; the two named barriers of the epilogue are the kernel's only bar.sync; step 20's main loop is unchanged
    (its wgmma, multicast and cluster barriers); ptxas keeps the hand-off (≤ 168 registers at entry, no spills, no
    serialised wgmma)."""
    stats = ptx.stats(PTX_JOB, LABEL)
    assert "error" not in stats, stats.get("error")
    opcodes = stats["opcodes"]
    config = variant.CONFIG
    assert opcodes.get("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == config.C_BOXES, opcodes
    assert opcodes.get("cp.async.bulk.commit_group") == 1
    assert opcodes.get("cp.async.bulk.wait_group.read") == 1
    assert opcodes.get("fence.proxy.async.shared::cta", 0) >= 2  # after the barriers' init, and after the staging
    assert stats["st.global.f32"] == stats["st.global.v4.f32"] == 0
    assert not [op for op in opcodes if op.startswith("st.global")], opcodes
    assert stats["st.shared.f32"] == config.ACCUMULATORS  # each accumulator staged once
    assert stats["bar.sync"] == 2  # the consumers' meeting and each warpgroup's "written"
    assert stats["wgmma.mma_async.tf32"] == 2 * config.K_STEPS and stats["wgmma.written_after_fence"] == 0
    assert stats["cp.async.bulk.tensor.multicast"] >= 1
    # two cluster barriers in the source; NVVM may copy the last into each branch before it (CUDA 13.0's NVVM on the
    # H200 printed three of each): at least two, as many arrives as waits
    assert stats["barrier.cluster.arrive"] == stats["barrier.cluster.wait"] >= 2
    assert stats["fence.proxy.tensormap.acquire.sys"] == 3  # A's, B's and C's maps
    assert stats["local"] == 0
    info = stats.get("ptxas") or {}
    assert info.get("spill_bytes") == 0 and info.get("wgmma_serialized") == 0, info
    assert info.get("registers", 999) <= 168, info
