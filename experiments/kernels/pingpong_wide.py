"""Step 19's ping-pong schedule with step 17's work per consumer: the control that isolates the schedule (issue 36,
Deliver 4: a fair ping-pong; measured by experiments/pingpong_fair.py).

Step 19 (gemm_steps/steps/pingpong.py) changed two things at once from step 17 (gemm_steps/steps/warp_specialized.py):
the *schedule* (persistent, each consumer warpgroup owns whole tiles, the block's tiles in turn, the main loops
ordered by named barriers) and the *tile per consumer* (128×128: two m64n128k8 a k-step, B's fragments for two
64-column halves — twice the fragment loads per multiply-add of step 17's consumer, which computes 256 rows × 64
columns with one m64n256k8 a k-step). Measured, step 19 ran at 0.59–0.61× step 17, and no run said which change
cost what. This build keeps step 19's schedule and gives each consumer step 17's share of work.

Changed from ``gemm_steps/steps/pingpong.py`` (step 19; copied, the right half removed, nothing else):

* **A tile per consumer of 256 rows × 64 columns** (BLOCK_M = 256, BLOCK_N = 64): exactly what one step-17 consumer
  computes of its 256×128 tile, now a whole tile of one consumer. One ``wgmma`` m64n256k8 a k-step into one array of
  BLOCK_M // 2 = 128 accumulators a thread (step 19: ``left`` and ``right``, 64 each, two m64n128k8); B's fragments
  for one 64-column tile (step 17's ``fragment_at`` without its ``warpgroup * 64``: each consumer's tile is its own),
  2 sets × 4 k-steps × 4 = 32 registers as in step 17 (step 19: 64). The store writes 128 values a thread, one
  column-block of 64.
* **The ring's stage**: one k-tile of one tile, A 256×32 + B 32×(64 + 8) floats = 41,984 bytes (step 17: 50,176 —
  its B box is 136 wide; step 19: 33,792). STAGES is the build's parameter: 4 (step 17's count) or at most 5, the
  most that fit the 232,448 bytes a block may have (``Config.fitting_stages``); None: as many as fit (step 19's
  default until it moved to 4).

Everything else is step 19's, unchanged: the producer warpgroup and its copies (two per k-tile, one full-barrier
arrival with the stage's bytes), one ring counter g over the block's tiles in the block's order (stage g % STAGES,
parity g // STAGES % 2), the empty barriers counting one consumer's 4 warps, the block's tile 2j to consumer 0 and
2j + 1 to consumer 1, step 16's grouped tile order (GROUP_M = 8), the ORDER_BARRIER protocol (``bar.sync
ORDER_BARRIER + itself, 256`` before a consumer's main loop from its second turn on; ``bar.arrive ORDER_BARRIER +
other, 256`` after its last k-tile's products are issued, when the block has a next tile), the release of a tile's
last stage after its final wait, and ``setmaxnreg`` 40 / 232 (three warpgroups: 128 × 40 + 256 × 232 = 64,512, the
block's pool at 168 a thread). The grid is persistent (``PersistentTmaTiles``: one block per SM, at most one per full
tile). So against experiments/kernels/persistent_specialized.py (step 17 persistent: the same tile work per
consumer, 4 stages, the same registers; the two consumers share each 256×128 tile) the one difference at 4 stages
is the schedule.

The ragged border runs on step 15's edge kernel, as in step 19, built for the same 256×64 tile with one warpgroup
(step 15 computes 64 columns per warpgroup of 128 threads): ``warpgroup_tf32.build`` of the tiles with THREAD_M
doubled. Fast kernel: full tiles, K a multiple of 32, N of 4, 16-byte-aligned matrices. Compute capability 9.0
only; runs on the simulator (``setmaxnreg`` a no-op, the named barriers and mbarriers have twins that time out).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import pingpong, warpgroup_tf32
from gemm_steps.steps.pingpong import grouped_tile, ring_place
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, named_barrier_arrive, named_barrier_sync,
                                             tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import PersistentTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, check_register_handoff, fence_proxy_async,
                                              first_aligned, operand_bits, registers_at_entry, registers_lower_to,
                                              registers_raise_to, shared_address, swizzled_descriptor,
                                              warpgroup_commit, warpgroup_fence, warpgroup_wait_all,
                                              warpgroup_wait_but_one, wgmma_tf32, zero_accumulators)


def pingpong_wide_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                         BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                         A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS, PRODUCER_REGISTERS,
                         CONSUMER_REGISTERS, ORDER_BARRIER):
    """Tiles b, b + gridDim.x, … of C = A·B (grouped order), the block's tiles taken in turn by its CONSUMERS (2)
    warpgroups, each a whole BLOCK_M×64 tile as Cᵀ by one TF32 ``wgmma`` a k-step; one warpgroup produces."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    tile_rows, tile_cols = uint32(full_row_blocks), uint32(full_col_blocks)
    tile_count = tile_rows * tile_cols
    tiles_per_group = uint32(GROUP_M) * tile_cols
    first, stride = uint32(cuda.blockIdx.x), uint32(cuda.gridDim.x)  # the block's tiles: first, first + stride, …
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per warp of the consumer that read it
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            g = uint32(0)  # k-tiles this block has produced, over all its tiles, in the block's tile order
            tile = first
            while tile < tile_count:
                tile_row, tile_col = grouped_tile(tile, tile_rows, tiles_per_group, GROUP_M)
                for t in range(k_tiles):
                    stage, lap = ring_place(g, STAGES)
                    if g >= STAGES:  # the stage's lap-th fill: wait until the consumer's warps released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((lap - 1) % 2))
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                    copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, tile_row * BLOCK_M, t * BLOCK_K, barriers, stage)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, tile_col * BLOCK_N,
                              barriers, stage)
                    g += 1
                tile += stride
    else:  # consumer `warpgroup`: the block's tiles warpgroup, warpgroup + 2, …; waits, multiplies, releases, stores
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warp * 16 + lane // 4  # the tile is 64 columns: no warpgroup's offset
        b_frag = registers(2, K_STEPS, 4)  # [k-tile parity][k-step][element]: k-tile u loads set u % 2
        turn = warpgroup  # the block's tile number (0, 1, 2, …) this consumer takes next
        tile = first + warpgroup * stride
        while tile < tile_count:
            tile_row, tile_col = grouped_tile(tile, tile_rows, tiles_per_group, GROUP_M)
            g0 = turn * k_tiles  # the ring's k-tiles before this tile's (the producer's counter)
            acc = zero_accumulators(ACCUMULATORS)  # the tile's 64 columns of C (rows of Cᵀ), all BLOCK_M rows
            if turn > 0:  # ping-pong: wait until the other consumer has issued the block's previous tile's products
                named_barrier_sync(ORDER_BARRIER + warpgroup, 256)
            for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
                for odd in unroll(2):
                    u = pair + odd
                    if u < k_tiles:
                        g = g0 + u
                        stage, lap = ring_place(g, STAGES)
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        mbarrier_wait(barriers, stage, uint32(lap % 2))  # its bytes have landed
                        for s in unroll(K_STEPS):
                            for q in unroll(4):
                                x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                                b_frag[odd][s][q] = operand_bits(to_tf32(x))
                        warpgroup_fence()
                        for s in unroll(K_STEPS):
                            a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                            acc = wgmma_tf32(tiles, b_frag[odd][s][0], b_frag[odd][s][1], b_frag[odd][s][2],
                                             b_frag[odd][s][3], a_tile, acc, 1)
                        warpgroup_commit()
                        acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                        if u > 0 and lane == 0:
                            mbarrier_arrive(barriers, STAGES + ring_place(g - 1, STAGES)[0])
            if tile + stride < tile_count:  # the block has a next tile, the other consumer's: its turn
                named_barrier_arrive(ORDER_BARRIER + (1 - warpgroup), 256)
            acc = warpgroup_wait_all(acc)
            if lane == 0:  # the tile's last k-tile is done too: release its stage
                mbarrier_arrive(barriers, STAGES + ring_place(g0 + k_tiles - 1, STAGES)[0])

            for v in unroll(ACCUMULATORS):  # the store: overlaps the other consumer's main loop
                row = tile_row * BLOCK_M + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = tile_col * BLOCK_N + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                c[row * n + col] = acc[v]
            turn += 2
            tile += 2 * stride


@dataclass(frozen=True)
class Config(pingpong.Config):
    """Step 19's Config with a consumer's tile 256 rows × 64 columns. Step 19's formulas hold for this tile as they
    are — ACCUMULATORS = BLOCK_M // 2 (128), B_STRIDE = BLOCK_N + 8 (72), the stages' floats and bytes, WARPS = 4 (one
    consumer's), CONSUMERS = THREADS // 128 (2), STAGES None → ``fitting_stages()`` (5) — so only the tile fields'
    defaults and :meth:`problems` (step 19 asks for two 64-column halves a consumer) differ."""

    BLOCK_M: int = 256  # rows of C per tile: wgmma N = 256, as step 17
    BLOCK_N: int = 64  # columns of C per tile: one consumer's 64, as a step-17 consumer's share
    BLOCK_K: int = 32
    THREAD_M: int = 16  # (256 / 16) × (64 / 4) = 256 threads: the two consumer warpgroups
    THREAD_N: int = 4
    MIN_BLOCKS_PER_SM: int = 1
    STAGES: int | None = None  # as many as fit (5), unless the build asks (step 19 now keeps 4 by default)

    def problems(self) -> list[str]:
        if (self.BLOCK_N != 64 or self.THREADS != 256 or self.BLOCK_M % 8 or not 8 <= self.BLOCK_M <= 256
                or self.BLOCK_K != 32):
            return ["a consumer owns a whole tile of 64 columns: BLOCK_N = 64, 256 threads (two consumer "
                    "warpgroups), BLOCK_M a multiple of 8 up to 256 (wgmma N = BLOCK_M, BLOCK_M // 2 accumulators "
                    "a thread) and BLOCK_K = 32"]
        threads = self.THREADS + self.PRODUCER_THREADS
        try:
            check_register_handoff(threads, [(self.PRODUCER_THREADS, self.PRODUCER_REGISTERS),
                                             (self.THREADS, self.CONSUMER_REGISTERS)],
                                   registers_at_entry(threads, max(1, self.MIN_BLOCKS_PER_SM)))
        except ValueError as error:
            return [str(error)]
        fitting = self.fitting_stages()
        if not 2 <= self.STAGES <= fitting:
            return [f"{self.STAGES} stages: 2 to {fitting} fit a block's shared memory"]
        return []


#: On an H100/H200: 256×64 tiles (wgmma N = 256), two consumers and a producer.
CONFIG = Config()
#: On the simulator: 64×64 tiles (wgmma N = 64; 4×4 a thread makes the two consumer warpgroups' 256 threads).
SIMULATOR_CONFIG = Config(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def layout(config: Config | TileConfig = CONFIG, stages: int | None = None) -> dict:
    """The kernel's constants for a configuration's tiles and a stage count (None: as many as fit)."""
    return _config(config, stages).check().constants()


def _config(config: Config | TileConfig, stages: int | None) -> Config:
    return Config.of(config, **({} if stages is None else {"STAGES": stages}))


def edge_tiles(config: Config) -> TileConfig:
    """The same tile for step 15's edge kernel, with one warpgroup (step 15: 64 columns per 128 threads)."""
    return replace(config.tiles(), THREAD_M=2 * config.THREAD_M)


def build(config: Config | TileConfig = CONFIG, stages: int | None = None,
          name: str = "pingpong_wide") -> PersistentTmaTiles:
    """The build for a configuration's tiles with ``stages`` stages in the ring (None: as many as fit — 5 on the
    GPU's tile); a stage count that does not fit a block's shared memory is refused (ValueError)."""
    config = _config(config, stages)
    return PersistentTmaTiles(name, pingpong_wide_kernel, config, edge=warpgroup_tf32.build(edge_tiles(config)),
                              requires_compute_capability=pingpong.REQUIRES_COMPUTE_CAPABILITY)


def ptx_kernels() -> dict:
    """The GPU build's fast kernel at step 17's 4 stages (tests/test_pingpong.py compiles it to PTX and through
    ptxas)."""
    built = build(CONFIG, stages=4)
    return {"pingpong_wide_fast": (built.kernel("fast"), built.signature("fast"))}
