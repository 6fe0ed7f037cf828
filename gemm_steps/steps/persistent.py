"""Step 10 — persistent kernel: launch only what the GPU runs at once, and loop over tiles in L2-friendly order.

Changed from step 9: the same warp-tiled, double-buffered tile computation, now inside a loop over tiles. The grid
is ``SMs × resident blocks per SM`` (the occupancy the driver reports for this kernel: ``PersistentTiles`` in
:mod:`gemm_steps.toolkit.persistent_tiles`), and block b computes tiles b, b + gridDim.x, … (grid-stride over tiles). Tiles are numbered by
column within groups of GROUP_M tile-rows, column by column, so the tiles in flight together reuse the same
rows of A and columns of B from L2 (GROUP_M = 1 is plain row-major order: swizzle off).
Why it can be faster: no block launch/retire per tile, and a deliberate L2-friendly order. Why it may not be:
with 1 block/SM a non-persistent grid already runs in waves of 132 tiles, and the hardware scheduler is fast;
the last wave is just as partial either way (wave quantization: see the stream-K discussion in the lesson).
Measure both; the lesson shows where it wins, where it is flat, and why.
Edges: where every tile is full and the 128-bit path applies, the fast variant loops over the tiles; otherwise the
guarded variant (the ``if EDGE:`` branches: scalar loads zero-filled outside the matrices, stores only inside C)
loops over every tile, partial ones included — one kernel, one schedule, whatever the shape.
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import load_float4, load_or_zero, store4_if_inside, store_float4
from ..toolkit.kernel_builds import STATIC_SHARED_LIMIT
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.persistent_tiles import PersistentTiles
from ..toolkit.ptx_claims import unrolled_k_tile
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from . import warp_tiling

TITLE = "Persistent: one resident wave of blocks loops over L2-grouped tiles"
SUMMARY = "Launch SMs × occupancy blocks that grid-stride over tiles in grouped (swizzled) order for L2 reuse."


def persistent_kernel(a, b, c, m, n, k, tile_rows, tile_cols, *,
                      BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N,
                      LANES_N, GROUP_M, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_CHUNK_STRIDE,
                      B_CHUNK_STRIDE, DYNAMIC_SHARED, B_BASE, EDGE):
    """The tile_rows × tile_cols BLOCK_M×BLOCK_N tiles of C = A·B, looping over them; a, b, c are flat row-major
    float32 arrays."""
    if DYNAMIC_SHARED:  # over 48 KB: one dynamic array, sized at launch; B's stages start at B_BASE
        a_tile = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
        b_tile = a_tile  # B as is: [k][col]
    else:
        a_tile = cuda.shared.array(2 * BLOCK_K * BLOCK_M, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
        b_tile = cuda.shared.array(2 * BLOCK_K * BLOCK_N, float32, alignment=SHARED_ALIGN)  # B as is: [k][col]
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warp = tid // 32  # the warp-tiled thread → C map of step 9
    lane = tid % 32
    thread_row = warp // WARPS_N * WARP_TILE_M + lane // LANES_N * 4
    thread_col = warp % WARPS_N * WARP_TILE_N + lane % LANES_N * 4
    a_row, a_k = registers(A_LOADS), registers(A_LOADS)
    b_k, b_col = registers(B_LOADS), registers(B_LOADS)
    for load in unroll(A_LOADS):
        a_row[load] = (tid + load * THREADS) // A_VECTORS_PER_ROW
        a_k[load] = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
    for load in unroll(B_LOADS):
        b_k[load] = (tid + load * THREADS) // B_VECTORS_PER_ROW
        b_col[load] = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K
    acc = registers(THREAD_M, THREAD_N)
    a_next, b_next = registers(A_LOADS, 4), registers(B_LOADS, 4)
    a_frag, b_frag = registers(THREAD_M), registers(THREAD_N)

    # Persistent: the grid is only as large as the GPU holds at once, and block b computes full tiles b,
    # b + gridDim.x, b + 2·gridDim.x, … Tiles are numbered column by column within groups of GROUP_M tile-rows,
    # so tiles in flight together share rows of A and columns of B in L2 (GROUP_M = 1: plain row-major order).
    tiles_per_group = uint32(GROUP_M) * tile_cols
    for tile in range(uint32(cuda.blockIdx.x), tile_rows * tile_cols, uint32(cuda.gridDim.x)):
        first_row = tile // tiles_per_group * GROUP_M  # the group's first tile-row
        rows_in_group = min(tile_rows - first_row, uint32(GROUP_M))  # the last group may be shorter
        block_row = (first_row + tile % tiles_per_group % rows_in_group) * BLOCK_M  # down the group's rows…
        block_col = tile % tiles_per_group // rows_in_group * BLOCK_N  # …then on to the next column
        for i in unroll(THREAD_M):
            for j in unroll(THREAD_N):
                acc[i][j] = float32(0.0)

        # Step 9's double-buffered k-loop, unchanged.
        for k_tile in range(k_tiles + 1):
            k0 = uint32(k_tile) * BLOCK_K
            if k_tile < k_tiles:
                for load in unroll(A_LOADS):
                    row = block_row + a_row[load]
                    if EDGE:  # the guarded variant: scalar loads, zero outside A
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
                for kk in unroll(BLOCK_K):
                    for q in unroll(0, THREAD_M, 4):
                        a_frag[q], a_frag[q + 1], a_frag[q + 2], a_frag[q + 3] = load_float4(
                            a_tile, stage_a + thread_row + (kk * BLOCK_M + q // 4 * A_CHUNK_STRIDE))
                    for q in unroll(0, THREAD_N, 4):
                        b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                            b_tile, stage_b + thread_col + (kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE))
                    for i in unroll(THREAD_M):
                        for jj in unroll(THREAD_N):
                            j = THREAD_N - 1 - jj if i % 2 else jj  # serpentine
                            acc[i][j] += a_frag[i] * b_frag[j]
            if k_tile < k_tiles:
                stage_a = uint32(k_tile % 2) * (BLOCK_K * BLOCK_M)
                stage_b = B_BASE + uint32(k_tile % 2) * (BLOCK_K * BLOCK_N)
                for load in unroll(A_LOADS):
                    for q in unroll(4):
                        a_tile[stage_a + a_k[load] * BLOCK_M + a_row[load] + q * BLOCK_M] = a_next[load][q]
                for load in unroll(B_LOADS):
                    store_float4(b_tile, stage_b + b_k[load] * BLOCK_N + b_col[load],
                                 b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3])
            cuda.syncthreads()  # also keeps the next tile's first stores out of this tile's last reads

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
    STAGES: int = 2  # two copies of each tile: k-tile t + 1 is stored while k-tile t is computed (step 9's)
    LANES_M: int = 8  # a warp's 32 lanes as an 8×4 grid …
    LANES_N: int = 4
    GROUP_M: int = 8  # tile-rows per group in the tile order; 1 = row-major (no swizzle)

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


#: Step 9's candidates (``gemm-steps tune warp_tiling`` decides for steps 9–11: their tiles are the same).
SEARCH_SPACE = [Config.of(tiles) for tiles in warp_tiling.SEARCH_SPACE]


def build(config: Config | TileConfig, group_m: int | None = None, overrides: dict | None = None) -> PersistentTiles:
    """Step 10 for a configuration, or another's tiles (its guarded variant covers partial tiles: no separate edge
    kernel). ``group_m``: another ``GROUP_M`` (an experiment's)."""
    config = Config.of(config, **({} if group_m is None else {"GROUP_M": group_m}))
    return PersistentTiles("persistent", persistent_kernel, config, overrides=overrides)


#: The step as it runs, on step 9's tiles (step 9's table entry decides: toolkit/tuned.py), built on first use.
#: launch, KERNELS, CONFIG: see harness/step.py
TUNING = Tuning(build, "warp_tiling", SEARCH_SPACE)

PTX_EXPECT = unrolled_k_tile("persistent", default_config(SEARCH_SPACE), barriers=1)
