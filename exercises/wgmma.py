"""Exercise `wgmma` (lessons 14–15): one warpgroup's wgmma — B described to the tensor core by a shared-memory
matrix descriptor, A in registers, and the fence, commit and wait around the instruction.

Grade it:  gemm-steps exercise check wgmma

The grader launches one warpgroup (four warps, 128 threads):
    wgmma_kernel[1, 128](a, b, c)
a is 64×8 (M×K), b is 8×16 (K×N), c is 64×16, float32. One wgmma.m64n16k8 computes C = A·B:
* A from registers: each thread's four elements (load_a_fragment, given: lesson 12's mma layout, warp w on rows
  16w … 16w + 15), handed to the wgmma as bits (operand_bits);
* B from shared memory, read by the tensor core itself: the kernel stages it (given) K-major in "core matrices" of 8
  columns × 4 k, 128 contiguous bytes each — B[k][n] at float b_offset(n, k) of `tile` — and describes the tile
  with a 64-bit descriptor: start address, LBO (leading byte offset: bytes between core matrices adjacent in K),
  SBO (stride byte offset: adjacent in N), layout type (here no swizzle). matrix_descriptor(address, LBO, SBO)
  packs them (bytes in, 16-byte units in the fields);
* the accumulators: ACCUMULATORS = 8 floats a thread, zeros from fresh_accumulators() (given), stored by
  store_accumulators (given).

You write
1. LEADING_BYTES and STRIDE_BYTES, read off b_offset, and b_descriptor(tile).
2. In the kernel, the wgmma and its fences, in this order: every register the wgmma reads written (A's fragments
   as operand_bits, the accumulators from fresh_accumulators()) — warpgroup_fence() — wgmma_tf32(tile, a0, a1, a2,
   a3, descriptor, acc, 0) — warpgroup_commit() — acc = warpgroup_wait_all(acc) — then read acc
   (store_accumulators).

What the grader checks: that it compiles for a GPU (compute capability 9.0) and that its PTX has a wgmma.fence
before the wgmma and no operand register written between them; on the simulator (whose wgmma is done when it
returns, so a missing wait gives right numbers there) it watches the order of your fence, register writes, wgmma,
commit and wait and every read of the accumulators, and reads your descriptor's fields; then the numbers.

Hints
* Lesson 14, "The idea" (the descriptor) and "Two hazards the kernel respects" (the fence and the wait);
  gemm_steps/toolkit/warpgroup_ops.py's docstring: "Element (n, k) of B lies at byte start + (n // 8)·sbo +
  (k // 4)·lbo + (n % 8)·16 + (k % 4)·4".
* wgmma is asynchronous: it returns at once, and the accumulators are written later. Only what comes back from the
  wait is safe to read.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32

from gemm_steps.toolkit.warpgroup_ops import (fence_proxy_async, matrix_descriptor, operand_bits,  # noqa: F401
                                              shared_address, warpgroup_commit, warpgroup_fence, warpgroup_wait_all,
                                              wgmma_tf32, zero_accumulators)

M, N, K = 64, 16, 8  # one wgmma.m64n16k8: C (64×16) = A (64×8) · B (8×16)
ACCUMULATORS = N // 2  # float32 accumulators per thread
B_FLOATS = N * K  # B's tile in shared memory, no padding
LEADING_BYTES = 0  # your value: bytes between core matrices adjacent in K
STRIDE_BYTES = 0  # your value: bytes between core matrices adjacent in N


@cuda.jit(device=True)
def b_offset(n, k):
    """Given: where B[k][n] lies in the shared tile, in floats."""
    return (k // 4) * 64 + (n // 8) * 32 + (n % 8) * 4 + k % 4


@cuda.jit(device=True)
def load_a_fragment(a, warp, lane):
    """Given: this thread's four elements of A (lesson 12's mma A layout, warp w on rows 16w … 16w + 15)."""
    row, t = warp * 16 + lane // 4, lane % 4
    return a[row, t], a[row + 8, t], a[row, t + 4], a[row + 8, t + 4]


@cuda.jit(device=True)
def store_accumulators(c, acc, warp, lane):
    """Given: value 4j + r of this thread's accumulators is
    C[16w + lane // 4 + 8·(r // 2)][8j + 2·(lane % 4) + r % 2]."""
    for v in range(ACCUMULATORS):
        c[warp * 16 + lane // 4 + 8 * (v % 4 // 2), 8 * (v // 4) + 2 * (lane % 4) + v % 2] = acc[v]


@cuda.jit(device=True)
def fresh_accumulators():
    """Given: ACCUMULATORS zeros in registers written here, before the fence. (zero_accumulators alone gives
    constants, and the compiler writes a constant into the register where it is used — after the fence, a write the
    PTX ISA forbids; passed through a wait, with no wgmma in flight, the zeros are written here.)"""
    return warpgroup_wait_all(zero_accumulators(ACCUMULATORS))


@cuda.jit(device=True)
def b_descriptor(tile):
    # Your code here: the 64-bit descriptor of B's tile.
    return 0


@cuda.jit
def wgmma_kernel(a, b, c):
    tile = cuda.shared.array(B_FLOATS, float32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    # Given: B staged into its tile (one element a thread), made visible to the tensor core and to every thread.
    k, n = tid // N, tid % N
    tile[b_offset(n, k)] = b[k, n]
    fence_proxy_async()
    cuda.syncthreads()

    x0, x1, x2, x3 = load_a_fragment(a, warp, lane)
    # Your code here: the registers, the fence, the wgmma, the commit, the wait; then store_accumulators(c, acc, warp,
    # lane).
