"""The persistent ping-pong build with a clock: when the producer issues each k-tile of the ring, when each consumer
waits for its turn, multiplies each k-tile and stores each tile — the ping-pong timeline the issue asks for from a
real GPU (issue: Hopper's own GEMM design, "timelines from the GPU"). A debug copy of
experiments/kernels/pingpong_specialized.py; the diff against its kernel is the recording. Run by
experiments/timeline.py (``--only pingpong_specialized``).

The first RECORDED_BLOCKS blocks write ``%clock64`` at these events of the ring's first RECORDED_K_TILES k-tiles
(``g``: the block's k-tile counter over its tiles, so consumer 0's k-tiles and consumer 1's alternate tile by tile;
a consumer records only the tiles that lie wholly in the recorded range):

* the producer (thread 256), for k-tile g: 0 it turns to g, 1 the stage is empty (after its wait), 2 both copies
  issued;
* each consumer warpgroup's first thread, for k-tile g of its tile (u = g − the tile's first): 0 it turns to u
  (for u = 0: to the tile, before the order barrier), 1 u's bytes have landed, 2 u's ``wgmma`` issued, 3 u − 1's
  ``wgmma`` done (``wait_group 1``); at u = 0 also 4 its turn came (past the order barrier: ``bar.sync``); at the
  tile's last k-tile also 4 the tile's products are done (``wait_group 0``) and 5 its stores issued.

:func:`summary` turns a recorded block into the numbers a lesson quotes: per consumer the k-tile period, the wait
for its turn and the store; between the two, the hand-off (one consumer's last ``wgmma`` issued to the other's
first) and how much of each store the other consumer's main loop covers.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, uint32, uint64

from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, named_barrier_arrive, named_barrier_sync,
                                             tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.timers import clock_cycles
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

from . import pingpong_specialized
from .persistent_specialized import grouped_tile
from .pingpong_specialized import CONFIG

EVENTS, ROLES = 6, 3
EVENT_NAMES = {"producer": ["turns to k-tile g", "stage empty", "copies issued"],
               "warpgroup": ["turns to k-tile u (u = 0: to the tile)", "data landed", "wgmma issued",
                             "k-tile u-1 done", "u = 0: its turn came; last u: the tile's products done",
                             "last u: its stores issued"]}
#: For experiments/timeline.py: what the product is checked against, the GPU tiles, and how many of the ring's
#: k-tiles to record (at 4096³ a tile is 128 k-tiles: 4 tiles, two each consumer).
ARITHMETIC = "tf32"
SEARCH_SPACE = [CONFIG]
RECORDED_K_TILES = 4 * 128


def pingpong_timeline_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, timeline, *,
                                BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                                A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                                PRODUCER_REGISTERS, CONSUMER_REGISTERS, ORDERED, ORDER_BARRIER, RECORDED_BLOCKS,
                                RECORDED_K_TILES):
    """Tiles b, b + gridDim.x, … of C = A·B (grouped order), the block's tiles taken in turn by its CONSUMERS (2)
    warpgroups, each a whole BLOCK_M×BLOCK_N tile as Cᵀ by TF32 ``wgmma``; one warpgroup produces."""
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
    recording = first < RECORDED_BLOCKS
    row_at = first * 3 * RECORDED_K_TILES * EVENTS  # timeline[block] as a flat index
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
                    stage = g % STAGES
                    record = recording and g < RECORDED_K_TILES
                    if record:
                        timeline[row_at + g * EVENTS + 0] = clock_cycles()  # 0: the producer turns to k-tile g
                    if g >= STAGES:  # the stage's (g // STAGES)-th fill: wait until the consumer's warps released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((g // STAGES - 1) % 2))
                    if record:
                        timeline[row_at + g * EVENTS + 1] = clock_cycles()  # 1: its stage is empty
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                    copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, tile_row * BLOCK_M, t * BLOCK_K, barriers, stage)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, tile_col * BLOCK_N,
                              barriers, stage)
                    if record:
                        timeline[row_at + g * EVENTS + 2] = clock_cycles()  # 2: both copies issued
                    g += 1
                tile += stride
    else:  # consumer `warpgroup`: the block's tiles warpgroup, warpgroup + 2, …; waits, multiplies, releases, stores
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warp * 16 + lane // 4  # in the tile's left half; + 64: the right
        b_frag = registers(2, 2, K_STEPS, 4)  # [k-tile parity][half][k-step][element]: u loads set u % 2
        turn = warpgroup  # the block's tile number (0, 1, 2, …) this consumer takes next
        tile = first + warpgroup * stride
        while tile < tile_count:
            tile_row, tile_col = grouped_tile(tile, tile_rows, tiles_per_group, GROUP_M)
            g0 = turn * k_tiles  # the ring's k-tiles before this tile's (the producer's counter)
            left = zero_accumulators(ACCUMULATORS)  # C's columns 0–63 of the tile (rows of Cᵀ) …
            right = zero_accumulators(ACCUMULATORS)  # … and 64–127
            first_at = row_at + ((1 + warpgroup) * RECORDED_K_TILES + g0) * EVENTS  # the tile's first k-tile
            record_tile = recording and tid % 128 == 0 and g0 + k_tiles <= RECORDED_K_TILES
            if record_tile:
                timeline[first_at + 0] = clock_cycles()  # 0 (u = 0): the consumer turns to the tile
            if ORDERED:
                if turn > 0:  # wait until the other consumer has issued the block's previous tile
                    named_barrier_sync(ORDER_BARRIER + warpgroup, 256)
            if record_tile:
                timeline[first_at + 4] = clock_cycles()  # 4 (u = 0): its turn came (the order barrier passed)
            for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
                for odd in unroll(2):
                    u = pair + odd
                    if u < k_tiles:
                        g = g0 + u
                        stage = g % STAGES
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        at = row_at + ((1 + warpgroup) * RECORDED_K_TILES + g) * EVENTS
                        if record_tile and u > 0:
                            timeline[at + 0] = clock_cycles()  # 0: the consumer turns to k-tile u
                        mbarrier_wait(barriers, stage, uint32(g // STAGES % 2))  # its bytes have landed
                        if record_tile:
                            timeline[at + 1] = clock_cycles()  # 1: its data is there
                        for h in unroll(2):
                            for s in unroll(K_STEPS):
                                for q in unroll(4):
                                    x = tiles[stage_b + fragment_at + (h * 64 + (s * 8 + q // 2 * 4) * B_STRIDE
                                                                       + q % 2 * 8)]
                                    b_frag[odd][h][s][q] = operand_bits(to_tf32(x))
                        warpgroup_fence()
                        for s in unroll(K_STEPS):
                            a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                            left = wgmma_tf32(tiles, b_frag[odd][0][s][0], b_frag[odd][0][s][1], b_frag[odd][0][s][2],
                                              b_frag[odd][0][s][3], a_tile, left, 1)
                            right = wgmma_tf32(tiles, b_frag[odd][1][s][0], b_frag[odd][1][s][1],
                                               b_frag[odd][1][s][2], b_frag[odd][1][s][3], a_tile, right, 1)
                        warpgroup_commit()
                        if record_tile:
                            timeline[at + 2] = clock_cycles()  # 2: its wgmma issued
                        left = warpgroup_wait_but_one(left)  # k-tile u − 1's wgmma are done: its stage is free
                        right = warpgroup_wait_but_one(right)
                        if record_tile:
                            timeline[at + 3] = clock_cycles()  # 3: k-tile u − 1's products are done
                        if u > 0 and lane == 0:
                            mbarrier_arrive(barriers, STAGES + (g - 1) % STAGES)
            if ORDERED:
                if tile + stride < tile_count:  # the block has a next tile, the other consumer's: its turn
                    named_barrier_arrive(ORDER_BARRIER + (1 - warpgroup), 256)
            left = warpgroup_wait_all(left)
            right = warpgroup_wait_all(right)
            if lane == 0:  # the tile's last k-tile is done too: release its stage
                mbarrier_arrive(barriers, STAGES + (g0 + k_tiles - 1) % STAGES)
            last_at = row_at + ((1 + warpgroup) * RECORDED_K_TILES + g0 + k_tiles - 1) * EVENTS
            if record_tile:
                timeline[last_at + 4] = clock_cycles()  # 4 (last k-tile): the tile's products are done: store

            for v in unroll(ACCUMULATORS):  # the store: overlaps the other consumer's main loop
                row = tile_row * BLOCK_M + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = tile_col * BLOCK_N + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                c[row * n + col] = left[v]
                c[row * n + col + 64] = right[v]
            if record_tile:
                timeline[last_at + 5] = clock_cycles()  # 5 (last k-tile): its stores issued
            turn += 2
            tile += 2 * stride


class PingpongTimelineTiles(TmaTiles):
    """The fast kernel taking the timeline buffer after the two tensor maps."""

    signature_fast = TmaTiles.signature_fast[:-1] + ", uint64[::1])"


def build(config: TileConfig = CONFIG, recorded_blocks: int = 2, recorded_k_tiles: int = RECORDED_K_TILES,
          stages: int | None = None, ordered: bool = True) -> TmaTiles:
    constants = {**pingpong_specialized.layout(config, stages, ordered), "RECORDED_BLOCKS": recorded_blocks,
                 "RECORDED_K_TILES": recorded_k_tiles}
    return PingpongTimelineTiles("pingpong_timeline" if ordered else "pingpong_unordered_timeline",
                                 pingpong_timeline_kernel, config, constants, edge=None,
                                 requires_compute_capability=(9, 0))


def launch(kernels: TmaTiles, a, b, c, timeline, stream=0, blocks: int | None = None) -> None:
    """The fast kernel over the full tiles of A·B (whole tiles only) on ``blocks`` blocks (default: as many as the GPU
    holds, at most one a tile), recording into ``timeline``."""
    config = kernels.config
    m, k = a.shape
    n = b.shape[1]
    if m % config.BLOCK_M or n % config.BLOCK_N or k % config.BLOCK_K:
        raise ValueError("the timeline build runs whole tiles only")
    tiles = (m // config.BLOCK_M) * (n // config.BLOCK_N)
    blocks = min(tiles, blocks or kernels.resident_blocks("fast"))
    flat = (a.reshape(m * k), b.reshape(k * n), c.reshape(m * n))
    sizes = [np.uint32(x) for x in (m, n, k, m // config.BLOCK_M, n // config.BLOCK_N)]
    kernels.configured("fast", blocks, stream)(*flat, *sizes, *kernels.tensor_maps(a, b), timeline)


def _tiles(consumer: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) ring k-tile of each tile a consumer recorded: runs of k-tiles with event 1 written."""
    written = np.flatnonzero(np.isfinite(consumer[:, 1]))
    if not written.size:
        return []
    breaks = np.flatnonzero(np.diff(written) > 1)
    starts = np.concatenate([[written[0]], written[breaks + 1]])
    ends = np.concatenate([written[breaks], [written[-1]]])
    return list(zip(starts.tolist(), ends.tolist()))


def _median(x) -> float | None:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.median(x)) if x.size else None


def summary(cycles) -> dict:
    """A recorded run in numbers, per block (cycles; medians over the block's recorded tiles):

    * per consumer: ``period`` (one k-tile's wgmma issued to the next's, within tiles), ``turn_wait`` (from turning
      to a tile to its turn coming: the order barrier), ``store`` (products done → stores issued);
    * ``handoff``: from the last ``wgmma`` issue of one tile to the first of the block's next tile (the other
      consumer's) — near 0 or below: the tensor core never waits between tiles;
    * ``store_covered``: the share of each store during which the other consumer has a main loop under way (from
      its first wgmma issued to its last k-tile's products done); 1: every store hidden.

    ``cycles``: ``[block][role][k-tile][event]`` as experiments/timeline.py's ``record`` stores it (-1 unwritten)."""
    e = np.asarray(cycles, dtype=float)
    e[e < 0] = np.nan
    blocks = []
    for block in e:
        consumers = [block[1], block[2]]
        tiles = sorted((first, last, w) for w, x in enumerate(consumers) for first, last in _tiles(x))
        out = {"consumers": []}
        for w, x in enumerate(consumers):
            own = [(f, l_) for f, l_, who in tiles if who == w]
            out["consumers"].append({
                "tiles": len(own),
                "period": _median([v for f, l_ in own for v in np.diff(x[f:l_ + 1, 2])[1:]]),
                "turn_wait": _median([x[f, 4] - x[f, 0] for f, _ in own]),
                "store": _median([x[l_, 5] - x[l_, 4] for _, l_ in own])})
        handoffs, covered = [], []
        for (f0, l0, w0), (f1, l1, w1) in zip(tiles, tiles[1:]):
            a, b = consumers[w0], consumers[w1]
            handoffs.append(b[f1, 2] - a[l0, 2])
        for f, l_, w in tiles:
            store = consumers[w][l_, 4], consumers[w][l_, 5]
            loops = [(consumers[v][f2, 2], consumers[v][l2, 4]) for f2, l2, v in tiles if v != w]
            span = store[1] - store[0]
            if np.isfinite(span) and span > 0:
                inside = sum(max(0.0, min(store[1], hi) - max(store[0], lo)) for lo, hi in loops
                             if np.isfinite(lo) and np.isfinite(hi))
                covered.append(inside / span)
        out["handoff"] = _median(handoffs)
        out["store_covered"] = _median(covered)
        blocks.append(out)
    return {"blocks": blocks}


__all__ = ["build", "launch", "summary", "EVENTS", "ROLES", "EVENT_NAMES"]
