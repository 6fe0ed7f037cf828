"""The template's experiment-only variants stay correct and compile to what they claim.

Step 8's template has switches that no shipped step turns on, because the H200 measured them slower (lesson 9,
``scripts/experiment_pipelining.py`` and ``scripts/experiment_async_copy.py``): ``PIPELINED`` (two register sets
of fragments, loaded one k-column ahead) and ``ASYNC_A`` / ``ASYNC_B`` (``cp.async`` copies from global to shared
memory, skipping the registers). The experiments must stay reproducible, so the variants are tested like steps:
against float64 on the simulator, full-tile and ragged shapes, and their PTX on a CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import gemm_steps
from gemm_steps.steps import warp_tiling
from gemm_steps.steps.double_buffered import LAYOUT, TEMPLATE
from gemm_steps.tiling import TileConfig, TiledKernels

#: One warp, 64×32 tiles: small enough for the simulator, large enough for warp tiling's 8×4 lane grid.
SMALL = TileConfig(BLOCK_M=64, BLOCK_N=32, BLOCK_K=8, THREAD_M=8, THREAD_N=8)
FLAGS = {"pipelined": {"PIPELINED": True}, "async_b": {"ASYNC_B": True},
         "async_a_b": {"ASYNC_A": True, "ASYNC_B": True}}
LAYOUTS = {"contiguous": LAYOUT, "warp_tiled": warp_tiling.layout(SMALL),
           "persistent": {**warp_tiling.layout(SMALL), "PERSISTENT": True},
           "stream_k": {**warp_tiling.layout(SMALL), "STREAM_K": True}}


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="builds kernels for the simulator")
@pytest.mark.parametrize("flags", FLAGS, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("shape", [(128, 64, 24), (130, 70, 19), (192, 96, 40)], ids=lambda s: "x".join(map(str, s)))
def test_variant_matches_float64(flags, layout, shape, random_matrices):
    kernels = TiledKernels(f"variant_{flags}_{layout}", TEMPLATE, SMALL, {**LAYOUTS[layout], **FLAGS[flags]})
    a, b = random_matrices(*shape)
    c = gemm_steps.api.run(kernels.launch, a, b, np.full((shape[0], shape[1]), np.nan, dtype=np.float32))
    assert not np.isnan(c).any(), "some element of C was never written"
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - reference) / np.linalg.norm(reference) < 1e-6


def test_variant_flags_change_the_generated_code():
    """Each switch really changes the kernel (a misspelt flag would silently build the shipped one)."""
    shipped = TiledKernels("variant_plain", TEMPLATE, SMALL, LAYOUTS["warp_tiled"]).sources["fast"]
    for name, flags in FLAGS.items():
        source = TiledKernels(f"variant_src_{name}", TEMPLATE, SMALL, {**LAYOUTS["warp_tiled"], **flags}).sources["fast"]
        assert source.replace(f"variant_src_{name}", "variant_plain") != shipped, name
    assert "copy_async(" not in shipped and "a1_0" not in shipped


_PTX_OF_ASYNC_VARIANT = """
import json
from gemm_steps.steps import warp_tiling
from gemm_steps.steps.double_buffered import TEMPLATE
from gemm_steps.tiling import TileConfig, TiledKernels
from gemm_steps.ptx import compile_kernel_ptx, nvvm_version, ptx_stats
if nvvm_version() is None:
    raise SystemExit("NVVM unavailable")
config = TileConfig(BLOCK_M=64, BLOCK_N=32, BLOCK_K=8, THREAD_M=8, THREAD_N=8)
kernels = TiledKernels("variant_async_ptx", TEMPLATE, config,
                       {**warp_tiling.layout(config), "ASYNC_A": True, "ASYNC_B": True})
print(json.dumps(ptx_stats(compile_kernel_ptx(kernels.kernels["fast"], kernels.signature("fast")))))
"""


def test_async_copy_variant_ptx():
    """With ASYNC_A and ASYNC_B, every global load of a k-tile is a cp.async into shared memory: 4-byte copies of A
    (to its transposed places), 16-byte copies of B, one wait per k-tile, and no shared-memory store left."""
    done = subprocess.run([sys.executable, "-c", _PTX_OF_ASYNC_VARIANT], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}, timeout=900)
    if done.returncode == 1 and done.stderr.strip().endswith("NVVM unavailable"):
        pytest.skip("NVVM unavailable: cannot compile to PTX here")
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    opcodes = stats["opcodes"]
    constants = SMALL.constants()
    assert opcodes.get("cp.async.ca.shared.global") == 4 * constants["A_LOADS"]
    assert opcodes.get("cp.async.cg.shared.global") == constants["B_LOADS"]
    assert opcodes.get("cp.async.wait_all") == 1
    assert stats["st.shared.f32"] == stats["st.shared.v4.f32"] == 0
    assert stats["ld.global.v4.f32"] == 0 and stats["local"] == 0
    assert stats["fma.rn.f32"] == SMALL.BLOCK_K * SMALL.THREAD_M * SMALL.THREAD_N
