"""The copy engine's store (toolkit/tma_store_ops.py): a tile written by the threads into shared memory lands in C as the
tensor map's box — plainly or through the 128-byte swizzle — and only where the box lies inside C (clipping). On the
simulator, and the same kernel on a GPU of compute capability 9.0 (``gpu``-marked)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda, float32

from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.mbarrier_ops import tensor_map_2d
from gemm_steps.toolkit.tma_store_ops import store_commit, store_tile, store_wait, store_wait_read
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async, first_aligned, shared_address

ROWS, COLS = 16, 32  # the box: 16 rows of 128 bytes (the swizzle's line)
SHARED_FLOATS = ROWS * COLS + 256  # + 1 KB: room to align (a shared array's size must be one constant)
HOPPER = SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)


@cuda.jit
def store_one_tile(tensor_map, row, col, swizzled):
    """Each thread writes tile element i = r·COLS + c (value i) where the map's layout puts it, then thread 0 stores
    the tile at (row, col)."""
    raw = cuda.shared.array(SHARED_FLOATS, float32)
    tile = raw[first_aligned(raw, 1024):]
    base = shared_address(tile, 0)
    for i in range(cuda.threadIdx.x, ROWS * COLS, cuda.blockDim.x):
        address = base + i * 4
        if swizzled:
            address = address ^ (((address >> 7) & 7) << 4)
        tile[(address - base) // 4] = float32(i)
    fence_proxy_async()  # the threads' writes → visible to the copy engine
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        store_tile(tensor_map, row, col, tile, 0)
        store_commit()
        store_wait_read(0)
        store_wait(0)


def _stored(shape, row, col, swizzled):
    c = cuda.to_device(np.full(shape, -1.0, np.float32))
    store_one_tile[1, 64](tensor_map_2d(c, ROWS, COLS, swizzle_128=swizzled), row, col, swizzled)
    cuda.synchronize()
    return c.copy_to_host()


def _expected(shape, row, col):
    out = np.full(shape, -1.0, np.float32)
    box = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
    r0, c0 = max(row, 0), max(col, 0)
    r1, c1 = min(row + ROWS, shape[0]), min(col + COLS, shape[1])
    out[r0:r1, c0:c1] = box[r0 - row: r1 - row, c0 - col: c1 - col]
    return out


#: Inside C, and past its last rows and columns. A box starting before row or column 0 stopped the kernel with an
#: illegal instruction on an H200 (2026-11-28): the twin refuses it (test below).
CASES = [((40, 64), 8, 16), ((40, 64), 30, 48), ((20, 36), 10, 20)]


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twin (the GPU's: test_the_store_on_a_gpu)")
@pytest.mark.parametrize("swizzled", [False, True])
@pytest.mark.parametrize("shape, row, col", CASES)
def test_the_tile_lands_inside_c_and_nowhere_else(shape, row, col, swizzled):
    assert np.array_equal(_stored(shape, row, col, swizzled), _expected(shape, row, col))


@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR or not HOPPER, reason="the copy engine's store needs compute capability 9.0")
@pytest.mark.parametrize("swizzled", [False, True])
@pytest.mark.parametrize("shape, row, col", CASES)
def test_the_store_on_a_gpu(shape, row, col, swizzled):
    assert np.array_equal(_stored(shape, row, col, swizzled), _expected(shape, row, col))


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twin")
@pytest.mark.parametrize("row, col", [(-4, 8), (8, -8)])
def test_a_store_before_row_or_column_zero_is_refused(row, col):
    """On an H200 a TMA store whose box starts at a negative coordinate stopped the kernel (CUDA_ERROR_ILLEGAL_
    INSTRUCTION), where a load there is zero-filled: the twin refuses it with a message instead of clipping."""
    with pytest.raises(Exception, match="must start inside the matrix"):
        _stored((40, 64), row, col, False)
