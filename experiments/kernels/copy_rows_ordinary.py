"""The readable copy as it was before 2026-11-30: ``toolkit/tma_tiles.copy_rows_kernel`` without its two PDL
instructions.

The one change (``diff`` the two kernels): the shipped copy lets the kernel after it start at once
(``let_next_grid_start``, its first statement) and, last, waits for the copy before it (``wait_for_previous_grid``), so
a launch plan launches a second copy, and the kernel after a copy, as programmatic dependent launches whose blocks start
while the copy runs. This one has neither: in a plan it is an ordinary launch, and the kernel after it (which waits
for it) may start only as its blocks exit. Timed by experiments/copy_early_start.py.
"""

from __future__ import annotations

from numba import cuda, float32, uint32

from gemm_steps.toolkit.intrinsics import divide_u32, store_float4
from gemm_steps.toolkit.kernel_tools import kernel


@kernel
def copy_rows_ordinary_kernel(a, b, c, m, n, k, which, width, rows_out):
    """``rows_out`` = A (``which`` 0) or B (1), each row widened to ``width`` floats with zeros past its end
    (``tma_tiles.copy_rows_kernel``'s docstring)."""
    rows = m if which == 0 else k
    cols = k if which == 0 else n
    quads = uint32(width >> 2)
    total = uint32(rows * quads)
    i = uint32(cuda.grid(1))
    stride = uint32(cuda.gridsize(1))
    while i < total:
        row = divide_u32(i, quads)
        col = uint32((i - row * quads) << 2)
        start = row * cols + col
        source = a if which == 0 else b
        x0 = source[start] if col < cols else float32(0.0)
        x1 = source[start + 1] if col + 1 < cols else float32(0.0)
        x2 = source[start + 2] if col + 2 < cols else float32(0.0)
        x3 = source[start + 3] if col + 3 < cols else float32(0.0)
        store_float4(rows_out, i << 2, x0, x1, x2, x3)
        i = uint32(i + stride)
