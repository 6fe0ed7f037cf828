"""The warpgroup MMA toolkit (gemm_steps/toolkit/warpgroup_ops.py) that step 14 is built on: one warpgroup's
``wgmma_tf32`` against NumPy through the documented register layout and shared-memory descriptor, on the simulator
(its twin) and on an H100 (the instruction itself). A descriptor with its two strides swapped must give a wrong
product, and ``accumulate`` = 0 must ignore the old accumulator."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda, float32, uint32

import gemm_steps  # noqa: F401  (GPU or simulator first)
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.tensor_core_ops import below_tf32, truncate_to_tf32
from gemm_steps.toolkit.warpgroup_ops import (fence_proxy_async, matrix_descriptor, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, wgmma_tf32_reference, zero_accumulators)

N = 16  # wgmma's N: 8 accumulators per thread
ACC = N // 2
B_FLOATS = 8 * N  # B's 8 × N tile in shared memory: one float per thread of the warpgroup
LBO, SBO = 128, 256  # B: 8 columns × 16 bytes per core matrix; K-adjacent ones 128 B apart, N-adjacent 256 B


def _hardware_ok() -> bool:
    return SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)


@cuda.jit
def one_wgmma(fragments, b_core_order, out, leading, stride, accumulate_twice):
    """Thread t passes fragments[t, :] as a0 … a3; B (8×N) is copied to shared memory in core-matrix order; the
    product (twice, accumulated, if ``accumulate_twice``; else the second call starts afresh) goes to out[t, :]."""
    tiles = cuda.shared.array(B_FLOATS, float32)
    t = cuda.threadIdx.x
    tiles[t] = b_core_order[t]  # 128 threads, 8·N = 128 floats
    fence_proxy_async()
    cuda.syncthreads()
    acc = zero_accumulators(ACC)
    desc = matrix_descriptor(shared_address(tiles, 0), leading, stride)
    warpgroup_fence()
    acc = wgmma_tf32(tiles, fragments[t, 0], fragments[t, 1], fragments[t, 2], fragments[t, 3], desc, acc, 1)
    acc = wgmma_tf32(tiles, fragments[t, 0], fragments[t, 1], fragments[t, 2], fragments[t, 3], desc, acc,
                     uint32(accumulate_twice))
    warpgroup_commit()
    acc = warpgroup_wait_all(acc)
    for v in range(ACC):
        out[t, v] = acc[v]


def _core_order(b: np.ndarray) -> np.ndarray:
    """B (8×N) laid out K-major in core matrices: element (n, k) at byte (n//8)·SBO + (k//4)·LBO + (n%8)·16 + (k%4)·4."""
    flat = np.zeros(8 * N, np.float32)
    for n in range(N):
        for k in range(8):
            flat[(n // 8 * SBO + k // 4 * LBO + n % 8 * 16 + k % 4 * 4) // 4] = b[k, n]
    return flat


def _expected(fragments, b, times):
    product = wgmma_tf32_reference(fragments, b) * times
    thread = np.arange(128)[:, None]
    value = np.arange(ACC)[None, :]
    rows = thread // 32 * 16 + thread % 32 // 4 + 8 * (value % 4 // 2)
    cols = 8 * (value // 4) + 2 * (thread % 4) + value % 2
    return product[rows, cols]


@pytest.mark.skipif(not _hardware_ok(), reason="wgmma needs compute capability 9.0")
@pytest.mark.parametrize("accumulate_twice", [1, 0])
def test_one_warpgroup_product_follows_the_documented_layouts(accumulate_twice):
    rng = np.random.default_rng(7)
    fragments = rng.standard_normal((128, 4), dtype=np.float32)
    b = rng.standard_normal((8, N), dtype=np.float32)
    out = cuda.to_device(np.full((128, ACC), np.nan, np.float32))
    one_wgmma[1, 128](cuda.to_device(fragments), cuda.to_device(_core_order(b)), out, LBO, SBO, accumulate_twice)
    got = out.copy_to_host()
    want = _expected(fragments, b, 2 if accumulate_twice else 1)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


@pytest.mark.skipif(not _hardware_ok(), reason="wgmma needs compute capability 9.0")
def test_swapped_descriptor_strides_give_a_wrong_product():
    rng = np.random.default_rng(8)
    fragments = rng.standard_normal((128, 4), dtype=np.float32)
    b = rng.standard_normal((8, N), dtype=np.float32)
    out = cuda.to_device(np.full((128, ACC), np.nan, np.float32))
    one_wgmma[1, 128](cuda.to_device(fragments), cuda.to_device(_core_order(b)), out, SBO, LBO, 1)
    got = out.copy_to_host()
    assert not np.allclose(got, _expected(fragments, b, 2), rtol=1e-3, atol=1e-3)


SWIZZLED_FLOATS = N * 32  # N rows of 32 k values (128 bytes each), the 128-byte swizzle layout


@cuda.jit
def one_swizzled_wgmma(fragments, image, out, k_step):
    """As ``one_wgmma``, with B's N rows × 32 k in the 128-byte swizzle layout (``image``: the shared memory as the
    host laid it out) and the descriptor pointing at k-step ``k_step``'s 8 values (32 bytes along each row)."""
    tiles = cuda.shared.array(SWIZZLED_FLOATS, float32)
    t = cuda.threadIdx.x
    for q in range(SWIZZLED_FLOATS // 128):
        tiles[t + q * 128] = image[t + q * 128]
    fence_proxy_async()
    cuda.syncthreads()
    acc = zero_accumulators(ACC)
    desc = swizzled_descriptor(shared_address(tiles, 0) + k_step * 32)
    warpgroup_fence()
    acc = wgmma_tf32(tiles, fragments[t, 0], fragments[t, 1], fragments[t, 2], fragments[t, 3], desc, acc, 0)
    warpgroup_commit()
    acc = warpgroup_wait_all(acc)
    for v in range(ACC):
        out[t, v] = acc[v]


def _swizzled_image(rows: np.ndarray, swizzle: bool = True) -> np.ndarray:
    """N × 32 values laid out as 128-byte lines, chunk c of row r at slot c XOR r % 8 (or, unswizzled, at c)."""
    image = np.zeros(SWIZZLED_FLOATS, np.float32)
    for r in range(rows.shape[0]):
        for c in range(8):
            slot = c ^ (r % 8) if swizzle else c
            image[r * 32 + slot * 4: r * 32 + slot * 4 + 4] = rows[r, c * 4: c * 4 + 4]
    return image


@pytest.mark.skipif(not _hardware_ok(), reason="wgmma needs compute capability 9.0")
@pytest.mark.parametrize("k_step", [0, 3])
def test_the_128_byte_swizzle_layout_is_read_as_documented(k_step):
    """Step 14's layout of A: the product of k-step ``k_step`` reads values 8·k_step … of every row, wherever the
    swizzle put them — and the same values stored unswizzled give a different product."""
    rng = np.random.default_rng(10 + k_step)
    fragments = rng.standard_normal((128, 4), dtype=np.float32)
    rows = rng.standard_normal((N, 32), dtype=np.float32)  # B's N columns, each with 32 k values
    want = _expected(fragments, rows[:, 8 * k_step: 8 * k_step + 8].T, 1)
    for swizzle in (True, False):
        out = cuda.to_device(np.full((128, ACC), np.nan, np.float32))
        one_swizzled_wgmma[1, 128](cuda.to_device(fragments), cuda.to_device(_swizzled_image(rows, swizzle)), out,
                                   k_step)
        right = np.abs(out.copy_to_host() - want).max() <= 1e-5 * np.abs(want).max()
        assert right == swizzle, "swizzled: must match; stored unswizzled: must not"


@cuda.jit
def small_parts(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = below_tf32(x[i])


def test_below_tf32_is_what_the_tensor_core_drops():
    x = np.random.default_rng(9).standard_normal(1000).astype(np.float32) * np.float32(1e3)
    out = cuda.to_device(np.zeros_like(x))
    small_parts[8, 128](cuda.to_device(x), out)
    got = out.copy_to_host()
    np.testing.assert_array_equal(got, x - truncate_to_tf32(x))  # exact: x = truncated + small
    assert (np.abs(got) < np.abs(x) * 2.0 ** -10).all() and (got != 0).any()
