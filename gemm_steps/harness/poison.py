"""Fill a device array with one value (NaN to poison an output, anything to flush L2), without a host copy."""

from __future__ import annotations

from numba import cuda, float32

from ..toolkit.kernel_tools import ceil_div, kernel


@kernel
def _fill_kernel(flat, value):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < flat.size:
        flat[i] = value
        i += stride


def fill(array, value: float, stream=0) -> None:
    flat = array.reshape(array.size)
    blocks = min(ceil_div(array.size, 256), 4096)
    _fill_kernel[blocks, 256, stream](flat, float32(value))
