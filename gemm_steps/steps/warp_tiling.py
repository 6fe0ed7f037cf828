"""Step 9 — warp tiling: arrange each warp's results so its shared-memory reads are contiguous.

Changed from step 8: only *which* elements of C a thread owns (``gemm-steps diff 8 9`` shows the lines).
Before, thread t owned a contiguous 8×8 block, so the 16 threads along a row of the block read B fragments 32 bytes
apart: a warp's ``LDS.128`` touched 16 different 32-byte pieces spread over 512 bytes — bank conflicts, and many
distinct addresses. Now the block tile is split into warp tiles of WARP_TILE_M × WARP_TILE_N = (8·THREAD_M) ×
(4·THREAD_N) — 64×32 for 8×8 per thread (a 128×128 block tile, 2×4 warps), 64×64 for the tuned 8×16 (128×256, 2×4
warps) — and inside a warp tile lane l owns 4×4 sub-blocks spaced LANES_M·4 = 32 rows and LANES_N·4 = 16 columns
apart. A warp's fragment loads then read 8 contiguous float4 of A (128 bytes) and 4 of B (64 bytes), each
broadcast to the lanes that share them: conflict-free, and the fewest shared-memory wavefronts per FMA.
And the FMAs run in **serpentine order**: row i of the outer product goes left to right for even
i and right to left for odd i, so every FMA shares an operand with the one before it, also where a row ends.
``ptxas`` can then feed more operands from the register reuse cache instead of the register file (in the SASS,
877 of 1024 FMAs per k-tile carry a ``.reuse`` flag, against 837 in row order: lesson 9's deep dive counts them), so
fewer operands are read from the register file, whose bank conflicts can stall an FMA (Hopper's banks are not
documented). Measured in one run on the H200: +1.9 points of cuBLAS at 4096³ and +2.1 at 8192³
(experiments/results/experiment-fma-order-nvidia-h200.json).
Why faster: shared-memory bandwidth and latency were the remaining limit of step 8's inner loop; after that, how
fast the FMAs issue.
Expect: a few percent over step 8; measured in results/.
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import load_float4, load_or_zero, store4_if_inside, store_float4
from ..toolkit.kernel_builds import STATIC_SHARED_LIMIT
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.ptx_claims import unrolled_k_tile
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll

TITLE = "Warp tiling: conflict-free shared-memory fragments"
SUMMARY = "Give each warp its own sub-tile and each lane 4×4 pieces spaced apart, so fragment loads are contiguous."


def warp_tiling_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                       BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N,
                       LANES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_CHUNK_STRIDE, B_CHUNK_STRIDE,
                       DYNAMIC_SHARED, B_BASE, EDGE):
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
    # Warp tiling: warp w owns a WARP_TILE_M×WARP_TILE_N block; inside it, lane l owns 4×4 sub-blocks spaced
    # A_CHUNK_STRIDE rows and B_CHUNK_STRIDE columns apart, so a warp's fragment loads hit contiguous shared memory.
    warp = tid // 32
    lane = tid % 32
    thread_row = warp // WARPS_N * WARP_TILE_M + lane // LANES_N * 4
    thread_col = warp % WARPS_N * WARP_TILE_N + lane % LANES_N * 4
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
                        a_tile, stage_a + thread_row + (kk * BLOCK_M + q // 4 * A_CHUNK_STRIDE))
                for q in unroll(0, THREAD_N, 4):
                    b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                        b_tile, stage_b + thread_col + (kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE))
                for i in unroll(THREAD_M):
                    for jj in unroll(THREAD_N):
                        j = THREAD_N - 1 - jj if i % 2 else jj  # serpentine: odd rows run right to left
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
        row = block_row + thread_row + (i // 4 * A_CHUNK_STRIDE + i % 4)
        if EDGE:  # only the elements inside C, four neighbours per call
            for j in unroll(0, THREAD_N, 4):
                store4_if_inside(c, row, block_col + thread_col + j // 4 * B_CHUNK_STRIDE, m, n,
                                 acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])
        else:
            for j in unroll(0, THREAD_N, 4):
                store_float4(c, row * n + block_col + thread_col + j // 4 * B_CHUNK_STRIDE,
                             acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 256  # columns of C per thread block
    BLOCK_K: int = 8  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 16  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    STAGES: int = 2  # two copies of each tile: k-tile t + 1 is stored while k-tile t is computed
    LANES_M: int = 8  # a warp's 32 lanes as an 8×4 grid …
    LANES_N: int = 4

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

    @property
    def WARP_TILE_M(self) -> int:  # a warp's tile: 8 lanes × (THREAD_M / 4 sub-blocks of 4 rows) …
        return self.LANES_M * self.THREAD_M

    @property
    def WARP_TILE_N(self) -> int:  # … 4 lanes × (THREAD_N / 4 sub-blocks of 4 columns)
        return self.LANES_N * self.THREAD_N

    @property
    def WARPS_N(self) -> int:  # warps along a row of the block tile
        return self.BLOCK_N // self.WARP_TILE_N

    @property
    def A_CHUNK_STRIDE(self) -> int:  # rows between a lane's 4×4 sub-blocks …
        return self.LANES_M * 4

    @property
    def B_CHUNK_STRIDE(self) -> int:  # … and columns
        return self.LANES_N * 4

    def problems(self) -> list[str]:
        warps_m = self.BLOCK_M // self.WARP_TILE_M
        if (warps_m * self.WARP_TILE_M != self.BLOCK_M or self.WARPS_N * self.WARP_TILE_N != self.BLOCK_N
                or warps_m * self.WARPS_N * 32 != self.THREADS):
            return [f"warp tiling needs BLOCK_M, BLOCK_N to split into {self.WARP_TILE_M}×{self.WARP_TILE_N} warp tiles"]
        return []


#: Configurations ``gemm-steps tune warp_tiling`` tries. The first is what a GPU without a tuning table of its own
#: runs: the rule's pick of the course's sweep (results/tuning-warp_tiling-nvidia-h200.json; tests/test_tile_configs.py).
SEARCH_SPACE = [
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=8, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=0),
    # 8×16 per thread on a 128×128 tile: 128 threads (2×2 warps), and two or three blocks per SM.
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=2),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=3),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=2),
    # Deep k-tiles: 2 stages × (128 + 256) × 32 floats = 96 KB of shared memory, over the 48 KB static limit, so
    # this one runs on dynamic shared memory with the opt-in (kernel_builds.STATIC_SHARED_LIMIT).
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
]


def build(config: Config | TileConfig, overrides: dict | None = None) -> TiledKernels:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    return TiledKernels("warp_tiling", warp_tiling_kernel, Config.of(config), overrides=overrides)


#: The step as it runs: built on first use for this machine's configuration (toolkit/tuned.py: your tuning table,
#: else SEARCH_SPACE[0]). launch, KERNELS, CONFIG: see harness/step.py
TUNING = Tuning(build, "warp_tiling", SEARCH_SPACE)


PTX_EXPECT = unrolled_k_tile("warp_tiling", default_config(SEARCH_SPACE), barriers=1)
