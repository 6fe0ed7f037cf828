"""Step 7 — unrolled k-loop: generated source, registers as named scalars, tile sizes from autotuning.

Changed from step 6: the loop over the BLOCK_K columns of a shared tile, and every loop inside it, is unrolled at
compile time: ``for kk in unroll(BLOCK_K):`` (:mod:`gemm_steps.toolkit.unroll`; Numba has no unroll pragma, and
``literal_unroll`` does not unroll ``range``). The accumulators are a register tile, ``acc = registers(8, 8)``:
indexed only by compile-time constants, ``acc[i][j]`` becomes 64 named scalars ``acc_0_0 … acc_7_7`` (and the
fragments ``a_frag_0 …``, ``b_frag_0 …``) — no array indexed at run time, so nothing can fall into local memory —
and every shared-memory offset is a compile-time constant folded into the load instruction. The tuned tiles use
BLOCK_K = 16 and the launch-bounds hint of 2 blocks per SM; in the tuning sweep BLOCK_K 8 and 16 tie, and the hint is
what wins (lesson 7). ``step.generated_source()`` prints the expanded code.
Why faster: step 6's k-loop pays a counter, a compare, a branch and address arithmetic for every 64 FMAs; unrolled,
the FMA stream is uninterrupted and the scheduler can hoist the next shared loads above the current FMAs.
Expect: ~1.3× step 6 (an earlier H200 measurement: 59 % → 77 % of cuBLAS at BLOCK_K = 16).
Tile sizes: ``gemm-steps tune unrolled`` times a set of configurations on your GPU and records the best one
(:mod:`gemm_steps.harness.tuning`); the default below is the best measured on an H200.
"""

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import load_float4, load_or_zero, store_float4, store_if_inside
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.ptx_claims import unrolled_k_tile
from ..toolkit.tile_config import TileConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import TunedKernels, default_config
from ..toolkit.unroll import registers, unroll

TITLE = "Unrolled: compile-time loops, scalar registers, autotuned tiles"
SUMMARY = "Unroll the k-loop and the register tile at compile time, so the FMA stream runs without loop overhead."


def unrolled_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                    BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, THREADS_N, A_LOADS, B_LOADS,
                    A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B; a, b, c are flat row-major float32 arrays."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    a_tile = cuda.shared.array(BLOCK_K * BLOCK_M, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
    b_tile = cuda.shared.array(BLOCK_K * BLOCK_N, float32, alignment=SHARED_ALIGN)  # B as is: [k][col]
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    thread_row = tid // THREADS_N * THREAD_M  # this thread's THREAD_M×THREAD_N block of C, within the block tile
    thread_col = tid % THREADS_N * THREAD_N
    acc = registers(THREAD_M, THREAD_N)  # the register tile: acc[i][j] becomes the scalar acc_i_j
    a_frag = registers(THREAD_M)
    b_frag = registers(THREAD_N)
    for i in unroll(THREAD_M):
        for j in unroll(THREAD_N):
            acc[i][j] = float32(0.0)

    for k_tile in range((k + BLOCK_K - 1) // BLOCK_K):
        k0 = uint32(k_tile) * BLOCK_K
        # Copy A's tile (transposed) and B's tile into shared memory: A_LOADS + B_LOADS 128-bit loads per thread.
        for load in unroll(A_LOADS):
            tile_row = (tid + load * THREADS) // A_VECTORS_PER_ROW
            tile_k = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
            row = block_row + tile_row
            if EDGE:
                for q in range(4):
                    a_tile[(tile_k + q) * BLOCK_M + tile_row] = load_or_zero(a, row, k0 + tile_k + q, m, k)
            else:
                x0, x1, x2, x3 = load_float4(a, row * k + k0 + tile_k)
                a_tile[tile_k * BLOCK_M + tile_row] = x0
                a_tile[tile_k * BLOCK_M + tile_row + BLOCK_M] = x1
                a_tile[tile_k * BLOCK_M + tile_row + 2 * BLOCK_M] = x2
                a_tile[tile_k * BLOCK_M + tile_row + 3 * BLOCK_M] = x3
        for load in unroll(B_LOADS):
            tile_k = (tid + load * THREADS) // B_VECTORS_PER_ROW
            tile_col = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
            row = k0 + tile_k
            if EDGE:
                for q in range(4):
                    b_tile[tile_k * BLOCK_N + tile_col + q] = load_or_zero(b, row, block_col + tile_col + q, k, n)
            else:
                x0, x1, x2, x3 = load_float4(b, row * n + block_col + tile_col)
                store_float4(b_tile, tile_k * BLOCK_N + tile_col, x0, x1, x2, x3)
        cuda.syncthreads()

        # The unrolled k-loop: for each of the BLOCK_K columns, load two fragments and do their outer product.
        for kk in unroll(BLOCK_K):
            for q in unroll(0, THREAD_M, 4):
                a_frag[q], a_frag[q + 1], a_frag[q + 2], a_frag[q + 3] = load_float4(
                    a_tile, thread_row + (kk * BLOCK_M + q))
            for q in unroll(0, THREAD_N, 4):
                b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                    b_tile, thread_col + (kk * BLOCK_N + q))
            for i in unroll(THREAD_M):
                for j in unroll(THREAD_N):
                    acc[i][j] += a_frag[i] * b_frag[j]
        cuda.syncthreads()

    for i in unroll(THREAD_M):
        row = block_row + thread_row + i
        if EDGE:
            for j in unroll(THREAD_N):
                store_if_inside(c, row, block_col + thread_col + j, m, n, acc[i][j])
        else:
            for j in unroll(0, THREAD_N, 4):
                store_float4(c, row * n + block_col + thread_col + j,
                             acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])


#: Configurations ``gemm-steps tune unrolled`` tries. The first is what a GPU without a tuning table of its own
#: runs: the rule's pick of the course's sweep (results/tuning-unrolled-nvidia-h200.json; tests/test_tile_configs.py).
SEARCH_SPACE = [
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8),
    TileConfig(BLOCK_M=128, BLOCK_N=64, BLOCK_K=16, THREAD_M=8, THREAD_N=8),
    TileConfig(BLOCK_M=64, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8),
    TileConfig(BLOCK_M=64, BLOCK_N=64, BLOCK_K=16, THREAD_M=4, THREAD_N=4),
    # 8×16 per thread on a 128×256 tile (the shape step 9 makes conflict-free), here with the contiguous map.
    TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
]


def build(config: TileConfig) -> TiledKernels:
    return TiledKernels("unrolled", unrolled_kernel, config)


#: The step as it runs: built on first use for this machine's configuration (toolkit/tuned.py: your tuning table,
#: else SEARCH_SPACE[0]). launch, KERNELS, CONFIG: see harness/step.py
TILED = TunedKernels(build, "unrolled", SEARCH_SPACE)

# Claims about the kernel for the course's tiles: an unrolled k-tile, two barriers per k-tile.
PTX_EXPECT = unrolled_k_tile("unrolled", default_config(SEARCH_SPACE), barriers=2)
