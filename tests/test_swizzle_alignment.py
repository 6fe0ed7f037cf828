"""The 128-byte swizzle needs 1,024-byte-aligned tiles, and static shared memory must not break steps 14–15.

The hardware XORs shared-address bits 4–6 with bits 7–9, so a swizzled tile is read as written only if it starts at
a multiple of 1,024 bytes *of address*. Numba declares the dynamic shared array ``.align 16``; it lands at 0x400 only
while no static shared memory comes before it, and one 8-byte static array (an mbarrier) moves it to 0x410. Steps
14–15 therefore take their tiles from ``tiles[first_aligned(tiles, SWIZZLE_ALIGN):]``.

Each test runs the step with static shared memory before its tiles — on a GPU, a real 8-byte static array, added
through the build's ``overrides``; on the simulator, whose twins model shared addresses, the array moved to 0x410 —
and checks the product; and the same with ``first_aligned`` replaced by one that does not align, which must be wrong
(it is what the steps did before: the failing-before case, kept so that the test can fail).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda, uint32, uint64

import gemm_steps  # noqa: F401  (GPU or simulator first)
from gemm_steps.steps import warpgroup_mma, warpgroup_tf32
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.warpgroup_ops import first_aligned, shared_address, simulated_shared_base

#: An 8-byte static shared array, like an mbarrier, placed before the dynamic one (the base is 0x410 then).
MOVED_BASE = 0x410


@cuda.jit(device=True)
def aligned_after_static_shared(array, alignment):
    barrier = cuda.shared.array(1, uint64)  # 8 bytes of static shared memory: the dynamic array moves past them
    if shared_address(barrier, 0) == uint32(0xFFFFFFFF):  # never true; keeps the array from being optimised away
        barrier[0] = uint64(0)
    return first_aligned(array, alignment)


@cuda.jit(device=True)
def unaligned_after_static_shared(array, alignment):
    barrier = cuda.shared.array(1, uint64)
    if shared_address(barrier, 0) == uint32(0xFFFFFFFF):
        barrier[0] = uint64(0)
    return uint32(0)  # what steps 14-15 did before: the tiles wherever the array starts


def _wgmma_gpu() -> bool:
    return not SIMULATOR and tuple(cuda.get_current_device().compute_capability) == (9, 0)


def _error_with_static_shared(step, align) -> float:
    config = step.SIMULATOR_CONFIG if SIMULATOR else step.SEARCH_SPACE[0]
    m, n, k = (64, 64, 64) if SIMULATOR else (2 * config.BLOCK_M, 2 * config.BLOCK_N, 256)
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    kernels = step.build(config, {"first_aligned": align})
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    with simulated_shared_base(MOVED_BASE):
        kernels.launch(cuda.to_device(a), cuda.to_device(b), c)
    cuda.synchronize()
    got = c.copy_to_host()
    want = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.abs(got - want).max() / np.abs(want).max())


needs_wgmma = pytest.mark.skipif(not (SIMULATOR or _wgmma_gpu()), reason="wgmma needs compute capability 9.0")
GPU_TOO = [pytest.param(step, id=step.__name__.rsplit(".", 1)[1], marks=needs_wgmma)
           for step in (warpgroup_tf32, warpgroup_mma)]


@pytest.mark.parametrize("step", GPU_TOO)
def test_static_shared_memory_before_the_tiles_leaves_the_product_right(step):
    error = _error_with_static_shared(step, aligned_after_static_shared)
    tolerance = 1e-2 if step.ARITHMETIC == "tf32" else 1e-5  # TF32's inputs; 3xTF32 is float32-accurate
    assert error <= tolerance, f"{step.__name__}: relative error {error:.2e} with static shared memory before the tiles"


@pytest.mark.parametrize("step", GPU_TOO[:1])
def test_without_the_alignment_the_static_array_breaks_the_swizzle(step):
    """The failing-before case: tiles that start where the array starts (0x410) are read wrong by the tensor core."""
    error = _error_with_static_shared(step, unaligned_after_static_shared)
    assert error > 0.1, (f"unaligned tiles after static shared memory gave relative error {error:.2e}: the static "
                         "array did not move the dynamic one, so this test no longer tests the alignment")


def test_the_simulated_base_moves_shared_addresses_and_comes_back():
    @cuda.jit
    def address_of(out):
        tiles = cuda.shared.array(64, np.float32)
        out[0] = shared_address(tiles, 0)
        out[1] = shared_address(tiles, first_aligned(tiles, 64))

    if not SIMULATOR:
        pytest.skip("the simulator's model of shared addresses")
    out = np.zeros(2, np.uint32)
    with simulated_shared_base(MOVED_BASE):
        address_of[1, 1](out)
    assert list(out) == [MOVED_BASE, MOVED_BASE + 48]
    assert int(simulated_shared_base()) == 0x400  # put back after the block
