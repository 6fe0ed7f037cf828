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

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import load_float4, load_or_zero, store_float4, store_if_inside
from ..toolkit.kernel_builds import STATIC_SHARED_LIMIT
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.ptx_claims import unrolled_k_tile
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import Tuning, default_config
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


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 16  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 2  # launch_bounds occupancy hint (0 = none)
    STAGES: int = 1  # one copy of each tile in shared memory: load, barrier, compute, barrier

    @property
    def THREADS(self) -> int:  # one thread per THREAD_M × THREAD_N block of C
        return (self.BLOCK_M // self.THREAD_M) * (self.BLOCK_N // self.THREAD_N)

    @property
    def THREADS_N(self) -> int:  # threads along a row of the block tile
        return self.BLOCK_N // self.THREAD_N

    @property
    def A_LOADS(self) -> int:  # 128-bit loads of A per thread per tile …
        return self.BLOCK_M * self.BLOCK_K // 4 // self.THREADS

    @property
    def B_LOADS(self) -> int:  # … and of B
        return self.BLOCK_K * self.BLOCK_N // 4 // self.THREADS

    @property
    def A_VECTORS_PER_ROW(self) -> int:  # 128-bit vectors in a row of A's tile …
        return self.BLOCK_K // 4

    @property
    def B_VECTORS_PER_ROW(self) -> int:  # … and of B's
        return self.BLOCK_N // 4

    @property
    def A_STAGE_FLOATS(self) -> int:  # one stage of A's tile in shared memory …
        return self.BLOCK_M * self.BLOCK_K

    @property
    def B_STAGE_FLOATS(self) -> int:  # … and of B's
        return self.BLOCK_K * self.BLOCK_N

    @property
    def SHARED_BYTES(self) -> int:
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS) * 4

    @property
    def DYNAMIC_SHARED(self) -> bool:  # over the 48 KB static limit: one dynamic array, sized at launch
        return self.SHARED_BYTES > STATIC_SHARED_LIMIT

    @property
    def B_BASE(self) -> int:  # where B's stages start in the dynamic array (0: A and B in two static arrays)
        return self.STAGES * self.A_STAGE_FLOATS if self.DYNAMIC_SHARED else 0

    def problems(self) -> list[str]:
        if self.DYNAMIC_SHARED:
            return [f"{self.SHARED_BYTES} bytes of shared memory, over the {STATIC_SHARED_LIMIT}-byte static limit, "
                    "and this step's kernel has no dynamic shared-memory variant (steps 8 onward have one)"]
        return []


#: Configurations ``gemm-steps tune unrolled`` tries. The first is what a GPU without a tuning table of its own
#: runs: the rule's pick of the course's sweep (results/tuning-unrolled-nvidia-h200.json; tests/test_tile_configs.py).
SEARCH_SPACE = [
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=0),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=0),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=0),
    Config(BLOCK_M=128, BLOCK_N=64, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=0),
    Config(BLOCK_M=64, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=0),
    Config(BLOCK_M=64, BLOCK_N=64, BLOCK_K=16, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=0),
    # 8×16 per thread on a 128×256 tile (the shape step 9 makes conflict-free), here with the contiguous map.
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
]


def build(config: Config | TileConfig) -> TiledKernels:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    return TiledKernels("unrolled", unrolled_kernel, Config.of(config))


#: The step as it runs: built on first use for this machine's configuration (toolkit/tuned.py: your tuning table,
#: else SEARCH_SPACE[0]). launch, KERNELS, CONFIG: see harness/step.py
TUNING = Tuning(build, "unrolled", SEARCH_SPACE)

# Claims about the kernel for the course's tiles: an unrolled k-tile, two barriers per k-tile.
PTX_EXPECT = unrolled_k_tile("unrolled", default_config(SEARCH_SPACE), barriers=2)
