"""Step 8 — double-buffered shared memory, and an occupancy hint.

Changed from step 7: shared memory holds *two* stages of the A and B tiles. While the block computes on one stage,
each thread already loads the next k-tile from global memory into registers (``a_next``, ``b_next``), and writes them
into the other stage after its FMAs. One barrier per k-tile instead of two, and the global-load latency (hundreds
of cycles) hides behind 1024 FMAs per thread. The load coordinates are computed once, before the loop.
``launch_bounds=(256, 2)`` tells the compiler two blocks must fit on an SM, capping registers at 128 per thread.
Why faster: in step 7 every warp stalls at the barrier until its tile's global loads arrive; now the loads for
tile t+1 are in flight while tile t is computed.
Expect: ~1.1× step 7 (an earlier H200 measurement: 77 % → 84 % of cuBLAS).
Over 48 KB of shared memory (deep k-tiles), the two stages live in one dynamic shared array (``DYNAMIC_SHARED``,
decided at compile time from the tile sizes).
Step 9 changes only which elements of C a thread owns (``gemm-steps diff 8 9``). Variants measured slower on the
H200 — fragments double-buffered in registers, ``cp.async`` copies — are in ``experiments/`` (lesson 9).
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

TITLE = "Double buffering: load the next tile while computing this one"
SUMMARY = "Two shared-memory stages: global loads for tile t+1 overlap the FMAs of tile t; one barrier per tile."


def double_buffered_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                           BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, THREADS_N, A_LOADS, B_LOADS,
                           A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, DYNAMIC_SHARED, B_BASE, EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B; a, b, c are flat row-major float32 arrays."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    # Two stages of each tile: stage s of A starts at s * BLOCK_K * BLOCK_M.
    if DYNAMIC_SHARED:  # over 48 KB: one dynamic array, sized at launch; B's stages start at B_BASE
        a_tile = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
        b_tile = a_tile  # B as is: [k][col]
    else:
        a_tile = cuda.shared.array(2 * BLOCK_K * BLOCK_M, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
        b_tile = cuda.shared.array(2 * BLOCK_K * BLOCK_N, float32, alignment=SHARED_ALIGN)  # B as is: [k][col]
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    thread_row = tid // THREADS_N * THREAD_M  # this thread's THREAD_M×THREAD_N block of C, within the block tile
    thread_col = tid % THREADS_N * THREAD_N
    # Where this thread's 128-bit loads land in each tile: fixed for the whole k-loop.
    a_row, a_k = registers(A_LOADS), registers(A_LOADS)
    b_k, b_col = registers(B_LOADS), registers(B_LOADS)
    for load in unroll(A_LOADS):
        a_row[load] = (tid + load * THREADS) // A_VECTORS_PER_ROW
        a_k[load] = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
    for load in unroll(B_LOADS):
        b_k[load] = (tid + load * THREADS) // B_VECTORS_PER_ROW
        b_col[load] = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    acc = registers(THREAD_M, THREAD_N)
    for i in unroll(THREAD_M):
        for j in unroll(THREAD_N):
            acc[i][j] = float32(0.0)
    a_next, b_next = registers(A_LOADS, 4), registers(B_LOADS, 4)  # the next k-tile, on its way to shared memory
    a_frag, b_frag = registers(THREAD_M), registers(THREAD_N)

    # The k-loop runs one extra time: iteration t loads k-tile t (if any) into registers, computes k-tile t - 1
    # (if any) from shared stage (t - 1) % 2, then stores the loaded registers into stage t % 2.
    for k_tile in range(k_tiles + 1):
        k0 = uint32(k_tile) * BLOCK_K
        if k_tile < k_tiles:
            for load in unroll(A_LOADS):
                row = block_row + a_row[load]
                if EDGE:
                    col = k0 + a_k[load]
                    for q in unroll(4):
                        a_next[load][q] = load_or_zero(a, row, col + q, m, k)
                else:
                    a_next[load][0], a_next[load][1], a_next[load][2], a_next[load][3] = load_float4(
                        a, row * k + k0 + a_k[load])
            for load in unroll(B_LOADS):
                row = k0 + b_k[load]
                if EDGE:
                    col = block_col + b_col[load]
                    for q in unroll(4):
                        b_next[load][q] = load_or_zero(b, row, col + q, k, n)
                else:
                    b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3] = load_float4(
                        b, row * n + block_col + b_col[load])
        if k_tile > 0:
            stage_a = uint32((k_tile - 1) % 2) * (BLOCK_K * BLOCK_M)
            stage_b = B_BASE + uint32((k_tile - 1) % 2) * (BLOCK_K * BLOCK_N)
            # The unrolled k-loop over the BLOCK_K columns of the computing stage.
            for kk in unroll(BLOCK_K):
                for q in unroll(0, THREAD_M, 4):
                    a_frag[q], a_frag[q + 1], a_frag[q + 2], a_frag[q + 3] = load_float4(
                        a_tile, stage_a + thread_row + (kk * BLOCK_M + q))
                for q in unroll(0, THREAD_N, 4):
                    b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                        b_tile, stage_b + thread_col + (kk * BLOCK_N + q))
                for i in unroll(THREAD_M):
                    for j in unroll(THREAD_N):
                        acc[i][j] += a_frag[i] * b_frag[j]
        if k_tile < k_tiles:
            stage_a = uint32(k_tile % 2) * (BLOCK_K * BLOCK_M)
            stage_b = B_BASE + uint32(k_tile % 2) * (BLOCK_K * BLOCK_N)
            for load in unroll(A_LOADS):
                for q in unroll(4):  # A transposed: its 4 consecutive k values go to 4 rows of a_tile
                    a_tile[stage_a + a_k[load] * BLOCK_M + a_row[load] + q * BLOCK_M] = a_next[load][q]
            for load in unroll(B_LOADS):
                store_float4(b_tile, stage_b + b_k[load] * BLOCK_N + b_col[load],
                             b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3])
        cuda.syncthreads()  # stage t % 2 is written, and everyone is done reading stage (t - 1) % 2

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
    STAGES: int = 2  # two copies of each tile: k-tile t + 1 is stored while k-tile t is computed

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


#: Configurations ``gemm-steps tune double_buffered`` tries. The first is what a GPU without a tuning table of its own
#: runs: the rule's pick of the course's sweep (results/tuning-double_buffered-nvidia-h200.json; tests/test_tile_configs.py).
SEARCH_SPACE = [
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=0),
    Config(BLOCK_M=128, BLOCK_N=64, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=3),
    # 8×16 per thread on a 128×256 tile (the shape step 9 makes conflict-free), here with the contiguous map.
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
]


def build(config: Config | TileConfig) -> TiledKernels:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    return TiledKernels("double_buffered", double_buffered_kernel, Config.of(config))


#: The step as it runs: built on first use for this machine's configuration (toolkit/tuned.py: your tuning table,
#: else SEARCH_SPACE[0]). launch, KERNELS, CONFIG: see harness/step.py
TUNING = Tuning(build, "double_buffered", SEARCH_SPACE)

# Claims about the kernel for the course's tiles: double buffering, one barrier per k-tile.
PTX_EXPECT = unrolled_k_tile("double_buffered", default_config(SEARCH_SPACE), barriers=1)
