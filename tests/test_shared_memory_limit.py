"""Shared memory above 48 KB per block: the one place that handles it (:mod:`gemm_steps.tiling`) and its checks.

A tile configuration whose stages need more than ``STATIC_SHARED_LIMIT`` bytes gets one dynamic shared array
(the template's ``DYNAMIC_SHARED`` branch), launched with its size and opted in with ``cuKernelSetAttribute``.
Checked here: the switch happens exactly above the limit, such a kernel computes the right product (simulator and
GPU), its PTX declares dynamic (``.extern``) shared memory and still loads fragments 128 bits at a time, and a
template without a dynamic variant refuses the configuration with a clear error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import gemm_steps
from gemm_steps import tiling
from gemm_steps.tiling import TileConfig
from helpers import assert_close, random_matrices, rng_for

BIG = TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1)  # 96 KB
AT_LIMIT = TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1)  # 48 KB


def _warp_tiling(config):
    from gemm_steps.steps import warp_tiling

    return warp_tiling.build(config)


def test_dynamic_exactly_above_the_static_limit():
    at_limit, big = _warp_tiling(AT_LIMIT), _warp_tiling(BIG)
    assert at_limit.shared_bytes == tiling.STATIC_SHARED_LIMIT and at_limit.dynamic_shared_bytes == 0
    assert "shared.array(0," not in at_limit.source()
    assert big.shared_bytes == 2 * (128 + 256) * 32 * 4 == big.dynamic_shared_bytes
    assert "shared.array(0," in big.source() and f"uint32({2 * 32 * 128}) + " in big.source()


def test_single_stage_template_refuses_a_config_over_the_limit():
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


_PTX_CHILD = """
import json
from gemm_steps.ptx import compile_kernel_ptx, ptx_stats
from gemm_steps.steps import warp_tiling
from gemm_steps.tiling import TileConfig
kernels = warp_tiling.build(TileConfig(**json.loads(CONFIG)))
dispatcher = kernels.kernels["fast"]
ptx = compile_kernel_ptx(dispatcher, kernels.signature("fast"))
stats = ptx_stats(ptx)
print(json.dumps({"extern_shared": ".extern .shared" in ptx, "ld.shared.v4.f32": stats["ld.shared.v4.f32"],
                  "fma.rn.f32": stats["fma.rn.f32"], "local": stats["local"]}))
"""


def test_big_config_ptx_uses_dynamic_shared_memory():
    from dataclasses import asdict

    from gemm_steps.ptx import nvvm_version  # noqa: F401  (import check only; the child process compiles)

    code = f"CONFIG = {json.dumps(json.dumps(asdict(BIG)))}\n" + _PTX_CHILD
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
                          capture_output=True, text=True, timeout=900)
    if done.returncode and "NVVM" in done.stderr and "unavailable" in done.stderr.lower():
        pytest.skip("NVVM unavailable")
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    assert stats["extern_shared"], "a >48 KB configuration must use dynamic (.extern) shared memory"
    assert stats["ld.shared.v4.f32"] == BIG.BLOCK_K * (BIG.THREAD_M + BIG.THREAD_N) // 4
    assert stats["fma.rn.f32"] == BIG.BLOCK_K * BIG.THREAD_M * BIG.THREAD_N
    assert stats["local"] == 0
