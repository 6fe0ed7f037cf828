"""Step 11 — stream-K: share the last, part-empty wave out by k-iterations, not by tiles.

Changed from step 10: with T output tiles and G resident blocks, a tile-per-block schedule runs ceil(T / G) waves
and the last one is only (T mod G) / G full — 144 tiles on 132 SMs take two waves for 1.09 waves of work.
Stream-K cuts the *k-loop* instead: the stream-K tiles' k-iterations are split evenly over the G blocks, so a
block may compute k-tiles 0–40 of one tile and 0–12 of the next. Blocks that stop before a tile's last k-tile
write their partial sums to a workspace, fence, and raise a flag; the block that computes the tile's last k-tile
waits for the flags of the (lower-numbered) blocks that share the tile, fences, adds their partial sums in a fixed
order, and stores C. Each block walks its share backwards, so the pieces others wait for are computed first (walking
forwards chains every block's wait onto the previous block's: measured 6.7 % of cuBLAS at 4096³ that way).
Hybrid (``stream_k_split``, below the kernel): if a tile-per-block schedule keeps ≥ 90 % of block slots busy, step
11 simply runs step 10; otherwise whole waves stay data-parallel and only the remainder (plus one wave, for
balance) is stream-K.
Deterministic: the partial sums are added in a fixed order (nearest block first) for a given grid size, so
repeated runs give bitwise-identical results on one GPU; the order (and so the rounding) differs from step 10's.
Deadlock-free in practice, not by guarantee: a block only ever waits for lower-numbered blocks, whose partial sums
never wait on anything, and the grid is sized to SMs × occupancy so that all blocks fit on the GPU at once. Only a
cooperative launch would guarantee they are co-resident; the kernel assumes the GPU is not shared with other work
that holds SM slots. (GPUs are observed to dispatch blocks in increasing index order, so a waiting block's
lower-numbered partners were dispatched before it even if they were not all resident; NVIDIA does not document
this.)
Expect: ≈ step 10 where tiles fill whole waves; up to (waves rounded up)/(waves) faster on wave-boundary and
K-heavy shapes (few tiles, long k-loops), minus the fixup traffic.
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32, uint64

from ..toolkit.intrinsics import (load4_bypassing_l1, load_float4, load_or_zero, store4, store4_if_inside,
                                  store_float4)
from ..toolkit.kernel_builds import STATIC_SHARED_LIMIT
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.persistent_tiles import StreamKTiles
from ..toolkit.ptx_claims import unrolled_k_tile
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tuned import Tuning, built, default_config
from ..toolkit.unroll import registers, unroll
from . import persistent, warp_tiling

TITLE = "Stream-K: split the last wave's work by k-iterations"
SUMMARY = "Whole waves run data-parallel; the leftover tiles' k-loops are split evenly over all blocks and fixed up."


def stream_k_kernel(a, b, c, m, n, k, tile_rows, tile_cols, workspace, flags, dp_tiles, sk_tiles, *,
                    BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N,
                    LANES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_CHUNK_STRIDE, B_CHUNK_STRIDE,
                    DYNAMIC_SHARED, B_BASE, EDGE):
    """Tiles of C = A·B (tile_cols per row of tiles): dp_tiles whole tiles, then sk_tiles shared out by k-iterations
    over the grid. The guarded variant (EDGE) covers partial tiles too."""
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
    acc = registers(THREAD_M, THREAD_N)
    a_next, b_next = registers(A_LOADS, 4), registers(B_LOADS, 4)
    a_frag, b_frag = registers(THREAD_M), registers(THREAD_N)

    # This block first computes its data-parallel tiles (block, block + G, … below dp_tiles), then an equal share
    # [sk_begin, sk_end) of the k-iterations of the sk_tiles that follow, which may start or end in the middle of
    # a tile. It walks its share backwards, so the piece other blocks wait for (the start of a tile, at the end of
    # the share) is computed first and the piece that waits (the end of a tile, at the start of the share) last:
    # no block waits for a block that is itself waiting.
    k_tiles = uint32((k + BLOCK_K - 1) // BLOCK_K)
    blocks = uint32(cuda.gridDim.x)
    block = uint32(cuda.blockIdx.x)
    sk_iterations = uint64(sk_tiles) * k_tiles  # 64-bit: block * sk_iterations may pass 2³²
    sk_begin = uint32(block * sk_iterations // blocks)
    sk_end = uint32((block + uint32(1)) * sk_iterations // blocks)
    dp_count = uint32((dp_tiles + blocks - uint32(1) - block) // blocks)
    dp_done = uint32(0)
    iteration = sk_end  # walks down to sk_begin
    while dp_done < dp_count or iteration > sk_begin:
        if dp_done < dp_count:  # a whole tile
            tile = uint32(block + dp_done * blocks)
            k_first = uint32(0)
            k_count = k_tiles
            dp_done += uint32(1)
        else:  # the last run of k-iterations left in our share, all within one tile
            tile_start = (iteration - uint32(1)) // k_tiles * k_tiles  # the tile's first iteration
            tile = uint32(dp_tiles + tile_start // k_tiles)
            first = max(sk_begin, tile_start)
            k_first = uint32(first - tile_start)
            k_count = uint32(iteration - first)
            iteration = first
        block_row = tile // tile_cols * BLOCK_M
        block_col = tile % tile_cols * BLOCK_N
        for i in unroll(THREAD_M):
            for j in unroll(THREAD_N):
                acc[i][j] = float32(0.0)

        # Step 9's double-buffered k-loop, over k-tiles k_first … k_first + k_count - 1 of this tile.
        for k_tile in range(k_count + 1):
            k0 = uint32(k_first + k_tile) * BLOCK_K
            if k_tile < k_count:
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
            if k_tile < k_count:
                stage_a = uint32(k_tile % 2) * (BLOCK_K * BLOCK_M)
                stage_b = B_BASE + uint32(k_tile % 2) * (BLOCK_K * BLOCK_N)
                for load in unroll(A_LOADS):
                    for q in unroll(4):
                        a_tile[stage_a + a_k[load] * BLOCK_M + a_row[load] + q * BLOCK_M] = a_next[load][q]
                for load in unroll(B_LOADS):
                    store_float4(b_tile, stage_b + b_k[load] * BLOCK_N + b_col[load],
                                 b_next[load][0], b_next[load][1], b_next[load][2], b_next[load][3])
            cuda.syncthreads()

        if k_first + k_count < k_tiles:
            # We stop before the tile's last k-tile: leave our partial sums in our workspace slot and raise our
            # flag for the block that finishes the tile (it has a higher number, so it never makes us wait).
            # Sum (i, j) of thread t goes to slot + (i * THREAD_N + j) * THREADS + t: a warp stores 128 bytes in a row.
            slot = block * (BLOCK_M * BLOCK_N) + tid
            for i in unroll(THREAD_M):
                for j in unroll(0, THREAD_N, 4):
                    store4(workspace, slot + (i * THREAD_N + j) * THREADS, THREADS,
                           acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3])
            cuda.threadfence()  # the partial sums are visible GPU-wide before the flag is
            cuda.syncthreads()
            if tid == 0:
                cuda.atomic.exch(flags, block, 1)
            continue
        # We compute the tile's last k-tile: add the partial sums of the lower-numbered blocks that computed its
        # earlier k-tiles, nearest first (a fixed order: the result is the same bit for bit on every run).
        if k_first > 0:
            tile_begin = uint64(tile - dp_tiles) * k_tiles  # the tile's first iteration in the stream-K range
            other = block  # count down through the blocks before us whose share ends inside this tile
            while other > 0 and other * sk_iterations // blocks > tile_begin:
                other -= uint32(1)
                if other * sk_iterations // blocks < (other + uint32(1)) * sk_iterations // blocks:  # it had work
                    if tid == 0:
                        while cuda.atomic.add(flags, other, 0) == 0:
                            pass  # spin: that block never waits on us (see the docstring on residency)
                        # The writer's fence and this one pair up across the flag: reads after it see the partial
                        # sums (PTX memory model: fence-fence synchronization; the spin's atomic alone is relaxed).
                        cuda.threadfence()
                        flags[other] = 0  # reset for the next launch (each flag is raised once per launch)
                    cuda.syncthreads()  # the other threads read after thread 0's fence
                    slot = other * (BLOCK_M * BLOCK_N) + tid
                    for i in unroll(THREAD_M):
                        for j in unroll(0, THREAD_N, 4):
                            w0, w1, w2, w3 = load4_bypassing_l1(workspace, slot + (i * THREAD_N + j) * THREADS,
                                                                THREADS)
                            acc[i][j] += w0
                            acc[i][j + 1] += w1
                            acc[i][j + 2] += w2
                            acc[i][j + 3] += w3
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


#: Below this fraction of busy block-slots in a tile-per-block schedule, this step splits work by k-iterations.
WAVE_EFFICIENCY_FOR_DATA_PARALLEL = 0.9


def stream_k_split(tiles: int, blocks: int) -> tuple[int, int]:
    """(data-parallel tiles, stream-K tiles) — the hybrid rule of step 11.

    A tile-per-block schedule runs ceil(tiles / blocks) waves; its efficiency is tiles / (waves × blocks). When
    that is at least :data:`WAVE_EFFICIENCY_FOR_DATA_PARALLEL`, everything stays data-parallel (and step 11 runs
    step 10's kernel: the stream-K bookkeeping costs a few percent where it has nothing to fix). Otherwise whole
    waves stay data-parallel and only the partial last wave plus one full wave before it (so every block still
    gets about a tile of work) is shared out by k-iterations; with fewer than two waves, all of it is.
    """
    waves = -(-tiles // blocks)
    if tiles / (waves * blocks) >= WAVE_EFFICIENCY_FOR_DATA_PARALLEL:
        return tiles, 0
    if tiles < 2 * blocks:
        return 0, tiles
    data_parallel = (tiles // blocks - 1) * blocks
    return data_parallel, tiles - data_parallel


def build(config: Config | TileConfig, overrides: dict | None = None, data_parallel=None) -> StreamKTiles:
    """Step 11 for a configuration, or another's tiles. ``data_parallel``: the kernels to run where the split leaves
    nothing to stream-K (step 10's). Partial tiles run on the guarded variant, with the same schedule."""
    return StreamKTiles("stream_k", stream_k_kernel, Config.of(config), overrides=overrides, split=stream_k_split,
                        data_parallel_fallback=data_parallel)


def build_with_fallback(config: Config | TileConfig) -> StreamKTiles:
    """Step 11 as it runs: :func:`build`, with step 10's kernels for the same tiles as the data-parallel fallback — the
    very build step 10 runs (``toolkit.tuned.built`` keeps one per configuration), so they compile once."""
    return build(config, data_parallel=built(persistent.build, persistent.Config.of(config)))


#: The step whose kernels run where the split leaves nothing to stream-K (``scripts/profile_steps.py`` looks for either
#: step's). No ``FALLBACK_RULE``: the choice is the schedule's, not a rule ``harness.dispatch`` judges by.
FALLBACK_STEP = "persistent"


# The step as it runs, on step 9's tiles like step 10 (step 9's table entry decides: toolkit/tuned.py), built on
# first use. Where the tiles fill whole waves, step 11 is step 10 (same configuration, same compiled kernel).
TUNING = Tuning(build_with_fallback, "warp_tiling", SEARCH_SPACE)  # harness/step.py

# The fixup adds barriers, and one scalar ld.global.cg per accumulator (reading another block's partial sums).
_CLAIMED = default_config(SEARCH_SPACE)
PTX_EXPECT = unrolled_k_tile("stream_k", _CLAIMED)
PTX_EXPECT["stream_k_fast"]["ld.global.f32"] = _CLAIMED.THREAD_M * _CLAIMED.THREAD_N
