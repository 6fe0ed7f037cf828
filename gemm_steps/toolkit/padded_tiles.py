"""Any shape on a build's fast kernel: :class:`PaddedTiles` copies a ragged product into whole tiles.

A tiled build runs its fast kernel on full tiles only, and only where K is a multiple of BLOCK_K, N of 4 and the
matrices are 16-byte aligned (the copy engine's tensor maps and the 128-bit accesses need a row pitch of 16 bytes);
everything else runs on the guarded edge kernel. For the FP32 steps that costs little — step 11's guarded kernel runs
nearly as fast as its fast one — but a tensor-core step's edge kernel is a different, slower kernel (steps 17–18
borrow steps 15's and 14's, which load with every thread and meet at ``bar.sync``), and K = 3333 sends *every* tile
there.

So ``matmul`` may take another way round (the ``…+padded`` candidates of :mod:`gemm_steps.harness.dispatch`): copy A
into an M'×K' buffer and B into a K'×N' one — M', N', K' rounded up to whole tiles, zeros in the padding — run the
fast kernel over every tile of the padded product, and copy C's M×N corner out of the M'×N' result. The zeros change
no element of C: a padded k adds 0·0 to every sum, and padded rows and columns of C (where an inf of A or B meets a
padded zero and gives NaN) are computed and never copied out. The price: one more read and write of each matrix that
needs it (memory-bound copies, :func:`copy_padded_kernel`) and the work of the padded part of the edge tiles. Whether
that pays is measured per shape (the shape suite times the padded candidates beside the steps); a product that needs
no padding launches the build as it is.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import cuda, float32

from .backend import SIMULATOR
from .kept import Kept
from .kernel_tools import DirectLaunch, ceil_div, device_pointer, flat_array_arguments
from .workspaces import Workspaces

#: Threads a block of the copy kernel; each thread copies one column of its block's rows.
COPY_THREADS = 256
#: The most rows of blocks a copy launches (a grid's y dimension is at most 65,535; each block strides on).
COPY_ROW_BLOCKS = 65535
#: On the simulator every thread is a Python thread, started and joined: there a copy launches one row of blocks, each
#: thread striding down its column, and no more threads than the widest row needs (rounded up to a warp). The same
#: kernel and the same copy; a 32 × 40 padded A took 32 blocks of 256 threads (8,192 threads for 1,280 floats), now 1
#: block of 64.
SIMULATED_COPY_ROW_BLOCKS = 1
#: The argument types the copy kernel is compiled for (the sizes as 64-bit integers: Python ints).
COPY_SIGNATURE = "void(float32[::1], int64, float32[::1], int64, int64, int64, int64)"


@cuda.jit
def copy_padded_kernel(src, src_cols, dst, dst_rows, dst_cols, rows, cols):
    """``dst`` (dst_rows × dst_cols, row-major) = the rows × cols corner of ``src`` (row pitch src_cols), zeros in
    the rest of ``dst``. Both matrices flat; consecutive threads copy consecutive columns (coalesced)."""
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if col < dst_cols:
        for row in range(cuda.blockIdx.y, dst_rows, cuda.gridDim.y):
            value = float32(0.0)
            if row < rows and col < cols:
                value = src[row * src_cols + col]
            dst[row * dst_cols + col] = value


def copy_threads(dst_cols: int) -> int:
    """Threads a block of the copy: :data:`COPY_THREADS`; on the simulator at most the row's width, whole warps."""
    return min(COPY_THREADS, ceil_div(dst_cols, 32) * 32) if SIMULATOR else COPY_THREADS


def copy_grid(dst_rows: int, dst_cols: int) -> tuple[int, int]:
    row_blocks = SIMULATED_COPY_ROW_BLOCKS if SIMULATOR else COPY_ROW_BLOCKS
    return ceil_div(dst_cols, copy_threads(dst_cols)), min(dst_rows, row_blocks)


def copy_padded(src, dst, stream=0) -> None:
    """Copy 2-D ``src`` into the top-left corner of 2-D ``dst`` and zero the rest of ``dst`` (one launch)."""
    rows, cols = src.shape
    dst_rows, dst_cols = dst.shape
    copy_padded_kernel[copy_grid(dst_rows, dst_cols), copy_threads(dst_cols), stream](
        src.reshape(rows * cols), cols, dst.reshape(dst_rows * dst_cols), dst_rows, dst_cols, rows, cols)


def padded_shape(config, m: int, n: int, k: int) -> tuple[int, int, int]:
    """(M', N', K'): M, N and K rounded up to whole tiles of ``config`` (a ``TileConfig``)."""
    return (ceil_div(m, config.BLOCK_M) * config.BLOCK_M, ceil_div(n, config.BLOCK_N) * config.BLOCK_N,
            ceil_div(k, config.BLOCK_K) * config.BLOCK_K)


def copies(config, m: int, n: int, k: int) -> tuple[bool, bool, bool]:
    """Which of A, B, C an M×N×K product on ``config``'s tiles copies into padded buffers (16-byte-aligned arrays
    assumed, as fresh ones are)."""
    mp, np_, kp = padded_shape(config, m, n, k)
    return (mp, kp) != (m, k), (kp, np_) != (k, n), (mp, np_) != (m, n)


def _aligned(array) -> bool:
    return device_pointer(array) % 16 == 0


class PaddedTiles:
    """A tiled build's fast kernel (``tiled``: a :class:`~gemm_steps.toolkit.tiles.TiledKernels`) launched on
    zero-padded copies of A, B and C wherever the product is not whole fast tiles: what a ``+padded`` candidate of
    ``matmul`` runs (``Step(..., pads=True)``). The kernels, their configuration and source are ``tiled``'s."""

    def __init__(self, tiled):
        self.tiled = tiled
        self._buffers = Workspaces(kept=48)
        self._copy_launches = Kept(64)  # (shapes, stream) → a DirectLaunch of the copy kernel (GPU only)

    def padded_shape(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        """(M', N', K'): M, N and K rounded up to whole tiles of this build."""
        return padded_shape(self.tiled.config, m, n, k)

    def copies(self, m: int, n: int, k: int) -> tuple[bool, bool, bool]:
        """Which of A, B, C a product of this shape copies (:func:`copies`, on this build's tiles)."""
        return copies(self.tiled.config, m, n, k)

    def _padded(self, which: str, shape: tuple[int, int], stream):
        return self._buffers.get((which, shape), stream,
                                 lambda: cuda.device_array(shape, dtype=np.float32, stream=stream))

    def _copy(self, src, dst, stream) -> None:
        """:func:`copy_padded`; on a GPU straight through ``cuda.core`` (:class:`~.kernel_tools.DirectLaunch`), as
        ``matmul``'s recorded launches are: Numba's dispatcher costs tens of µs of Python a launch, and a padded
        product makes up to three copies a call."""
        if SIMULATOR:
            copy_padded(src, dst, stream)
            return
        (rows, cols), (dst_rows, dst_cols) = src.shape, dst.shape
        key = (rows, cols, dst_rows, dst_cols, id(stream) if stream else 0)
        launch = self._copy_launches.made(key, lambda: DirectLaunch(
            copy_padded_kernel, COPY_SIGNATURE, copy_grid(dst_rows, dst_cols), copy_threads(dst_cols), 0, stream))
        launch(*flat_array_arguments(device_pointer(src), rows * cols), ctypes.c_int64(cols),
               *flat_array_arguments(device_pointer(dst), dst_rows * dst_cols), ctypes.c_int64(dst_rows),
               ctypes.c_int64(dst_cols), ctypes.c_int64(rows), ctypes.c_int64(cols))

    def launch(self, a, b, c, stream=0) -> None:
        """C = A·B on the build's fast kernel alone: A and B copied into padded buffers where their shape (or
        alignment) needs it, C computed in a padded buffer and its corner copied out."""
        m, k = a.shape
        n = b.shape[1]
        mp, np_, kp = self.padded_shape(m, n, k)
        copy_a, copy_b, copy_c = self.copies(m, n, k)
        copy_a, copy_b, copy_c = copy_a or not _aligned(a), copy_b or not _aligned(b), copy_c or not _aligned(c)
        if copy_a:
            a_padded = self._padded("A", (mp, kp), stream)
            self._copy(a, a_padded, stream)
            a = a_padded
        if copy_b:
            b_padded = self._padded("B", (kp, np_), stream)
            self._copy(b, b_padded, stream)
            b = b_padded
        target = self._padded("C", (mp, np_), stream) if copy_c else c
        self.tiled.launch(a, b, target, stream)
        if copy_c:
            self._copy(target, c, stream)

    def __repr__(self) -> str:
        return f"<PaddedTiles of {self.tiled!r}>"


__all__ = ["COPY_THREADS", "PaddedTiles", "copies", "copy_padded", "copy_padded_kernel", "padded_shape"]
