"""Shared memory above 48 KB per block: the one place that handles it (:mod:`gemm_steps.toolkit.kernel_builds`; the
opt-in: :mod:`gemm_steps.toolkit.tiles`) and its
checks.

A tile configuration whose stages need more than ``STATIC_SHARED_LIMIT`` bytes gets one dynamic shared array
(the kernel's compile-time ``if DYNAMIC_SHARED:`` branch), launched with its size and opted in with
``cuKernelSetAttribute``. Checked here: the switch happens exactly above the limit, such a kernel computes the right
product (simulator and GPU), its PTX declares dynamic (``.extern``) shared memory and still loads fragments 128 bits
at a time, and a kernel without a dynamic variant refuses the configuration with a clear error.
"""

from __future__ import annotations

import functools

import pytest

import gemm_steps
from gemm_steps.toolkit.kernel_builds import STATIC_SHARED_LIMIT
from gemm_steps.toolkit.tile_config import TileConfig
from helpers import assert_close, random_matrices, rng_for
from ptx_jobs import warp_tiling_job

BIG = TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1)  # 96 KB
AT_LIMIT = TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1)  # 48 KB


@functools.cache
def _warp_tiling(config):
    """Step 9 built for ``config``, once per test session (expanding a 96 KB configuration takes seconds)."""
    from gemm_steps.steps import warp_tiling

    return warp_tiling.build(config)


def test_dynamic_exactly_above_the_static_limit():
    at_limit, big = _warp_tiling(AT_LIMIT), _warp_tiling(BIG)
    assert at_limit.shared_bytes == STATIC_SHARED_LIMIT and at_limit.dynamic_shared_bytes == 0
    assert big.shared_bytes == 2 * (128 + 256) * 32 * 4 == big.dynamic_shared_bytes
    assert at_limit.constants["B_BASE"] == 0 and not at_limit.constants["DYNAMIC_SHARED"]
    assert big.constants["B_BASE"] == 2 * 32 * 128 and big.constants["DYNAMIC_SHARED"]  # B after A's two stages
    for variant in ("fast", "edge"):
        assert "shared.array(0," not in at_limit.generated(variant)
        assert "shared.array(0," in big.generated(variant) and "b_tile = a_tile" in big.generated(variant)
        assert big.kernel(variant).py_func.__globals__["B_BASE"] == 2 * 32 * 128  # what the running kernel reads


def test_single_stage_kernel_refuses_a_config_over_the_limit():
    from gemm_steps.steps import unrolled

    with pytest.raises(ValueError, match="no dynamic shared-memory variant"):
        unrolled.build(TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, THREAD_M=8, THREAD_N=8))


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the simulator run; the GPU run is test_big_config_on_gpu")
@pytest.mark.parametrize("shape", [(128, 256, 64), (130, 260, 40)], ids=["full-tile", "edges"])
def test_big_config_on_simulator(shape):
    from numba import cuda
    import numpy as np

    m, n, k = shape
    a, b = random_matrices(rng_for(f"big-{shape}"), m, n, k)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    _warp_tiling(BIG).launch(cuda.to_device(a), cuda.to_device(b), c)
    assert_close(c.copy_to_host(), a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(512, 1024, 256), (300, 520, 100)], ids=["full-tiles", "edges"])
def test_big_config_on_gpu(shape):
    from numba import cuda
    import numpy as np

    m, n, k = shape
    a, b = random_matrices(rng_for(f"big-gpu-{shape}"), m, n, k)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    kernels = _warp_tiling(BIG)
    kernels.launch(cuda.to_device(a), cuda.to_device(b), c)
    cuda.synchronize()
    assert_close(c.copy_to_host(), a, b)
    assert kernels.resident_blocks() >= cuda.get_current_device().MULTIPROCESSOR_COUNT  # 1 block/SM fits


@pytest.mark.ptx(warp_tiling_job(BIG))
def test_big_config_ptx_uses_dynamic_shared_memory(ptx):
    stats = ptx.stats(warp_tiling_job(BIG), "fast")
    assert "error" not in stats, stats.get("error")
    assert stats["extern_shared"], "a >48 KB configuration must use dynamic (.extern) shared memory"
    assert stats["ld.shared.v4.f32"] == BIG.BLOCK_K * (BIG.THREAD_M + BIG.THREAD_N) // 4
    assert stats["fma.rn.f32"] == BIG.BLOCK_K * BIG.THREAD_M * BIG.THREAD_N
    assert stats["local"] == 0
