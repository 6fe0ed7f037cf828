"""Wrong on purpose: a learner's wgmma with no warpgroup_fence() before it."""
from numba import cuda, float32

from gemm_steps.toolkit.warpgroup_ops import (fence_proxy_async, matrix_descriptor, operand_bits, shared_address,
                                     warpgroup_commit, warpgroup_fence, warpgroup_wait_all, wgmma_tf32,
                                     zero_accumulators)

M, N, K = 64, 16, 8  # one wgmma.m64n16k8: C (64×16) = A (64×8) · B (8×16)
ACCUMULATORS = N // 2  # float32 accumulators per thread
B_FLOATS = N * K  # B's tile in shared memory, no padding
# B's tile, K-major, in "core matrices" of 8 columns (n) × 4 k (16 bytes a column): 128 contiguous bytes each.
# The two core matrices of k = 0–3 first (columns 0–7, then 8–15), then the two of k = 4–7.
LEADING_BYTES = 256  # between core matrices adjacent in K: b_offset(n, k + 4) − b_offset(n, k) = 64 floats
STRIDE_BYTES = 128  # between core matrices adjacent in N: b_offset(n + 8, k) − b_offset(n, k) = 32 floats


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
    """Given: value 4j + r of this thread's accumulators is C[16w + lane // 4 + 8·(r // 2)][8j + 2·(lane % 4) + r % 2]."""
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
    """The 64-bit descriptor of B's tile: its start address, LBO and SBO (no swizzle)."""
    return matrix_descriptor(shared_address(tile, 0), LEADING_BYTES, STRIDE_BYTES)


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
    a0, a1, a2, a3 = operand_bits(x0), operand_bits(x1), operand_bits(x2), operand_bits(x3)  # before the fence
    acc = fresh_accumulators()
    acc = wgmma_tf32(tile, a0, a1, a2, a3, b_descriptor(tile), acc, 0)
    warpgroup_commit()
    acc = warpgroup_wait_all(acc)  # the product has landed: only now read the accumulators
    store_accumulators(c, acc, warp, lane)
