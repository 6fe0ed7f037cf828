"""Step 2 — coalesced: let a warp's threads walk along a row.

Changed from step 1: one swap. ``threadIdx.x`` now picks the *column*, so the 32 threads of a warp compute 32
neighbouring elements of one row of C.
Why faster: in the k-loop a warp now reads ``B[k, col .. col+31]`` — 128 contiguous bytes, one transaction —
and ``A[row, k]`` is one address for the whole warp (a broadcast). Stores to C are contiguous too.
Expect: on old GPUs this was the famous ~6× step. On Hopper the L1/L2 caches already absorb much of step 1's
strided traffic (each strided A line is reused by the next 31 iterations of k), so the gain is far smaller:
measure it, don't assume it.
"""

from numba import cuda, float32

from ..toolkit.kernel_tools import ceil_div, kernel

TITLE = "Coalesced: neighbouring threads read neighbouring addresses"
SUMMARY = "Swap the thread→element mapping so each warp reads contiguous rows of B and writes contiguous C."

BLOCK_SIZE = 32
CONFIG = {"BLOCK_SIZE": BLOCK_SIZE}


@kernel
def coalesced_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    row = cuda.blockIdx.y * BLOCK_SIZE + cuda.threadIdx.y  # the same row for the whole warp…
    col = cuda.blockIdx.x * BLOCK_SIZE + cuda.threadIdx.x  # …and 32 neighbouring columns
    if row < m and col < n:
        acc = float32(0.0)
        for k in range(k_total):
            acc += a[row, k] * b[k, col]  # a: broadcast; b: 32 contiguous floats
        c[row, col] = acc


def launch(a, b, c, stream=0):
    m, n = c.shape
    grid = (ceil_div(n, BLOCK_SIZE), ceil_div(m, BLOCK_SIZE))
    coalesced_kernel[grid, (BLOCK_SIZE, BLOCK_SIZE), stream](a, b, c)


_MATRIX = "float32[:, ::1]"
KERNELS = {"coalesced": (coalesced_kernel, f"void({_MATRIX}, {_MATRIX}, {_MATRIX})")}
