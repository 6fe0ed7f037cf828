"""Step 16's kernel with a clock: the timeline of the producer and of each warpgroup, from a real GPU run (issue:
Hopper's own GEMM design, "timelines from the GPU"). A debug copy of ``gemm_steps/steps/tma_pipeline.py``; the
diff against it is the recording.

The first RECORDED_BLOCKS blocks write ``%clock64`` (``toolkit/timers.clock_cycles``: the SM's own cycle counter —
all warps of a block share an SM, so their readings compare; ``%globaltimer`` ticks too coarsely for a k-tile of
≈ 1,000 cycles) at these events of their first RECORDED_K_TILES k-tiles:

* the producer (thread 0), for k-tile t: 0 it turns to t, 1 the stage is empty (after its wait), 2 both copies issued;
* each warpgroup's first thread, for k-tile u: 0 it turns to u, 1 u's bytes have landed (after its wait), 2 u's
  ``wgmma`` issued, 3 u − 1's ``wgmma`` done (after ``wgmma.wait_group 1``).

Each write is a global store in the loop, so the recorded blocks run a little slower than the rest;
experiments/timeline.py runs it and lessons draw the picture.
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import tma_pipeline, warpgroup_tf32
from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.timers import clock_cycles
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              shared_address, swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

def tma_pipeline_timeline_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, timeline, *,
                        BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, LOAD_AHEAD, WARPS,
                        BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M,
                                 RECORDED_BLOCKS, RECORDED_K_TILES):
    """Step 16's kernel, writing ``clock64`` at each event of the first RECORDED_K_TILES k-tiles of the first
    RECORDED_BLOCKS blocks into ``timeline[block][role][k_tile][event]`` (role 0: the producer, 1 + w: warpgroup w)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    # Block b takes tile b in grouped order: column by column within groups of GROUP_M tile-rows.
    tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
    tile = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = across * BLOCK_N  # …then on to the next column
    base = shared_address(tiles, 0)
    fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
    acc = zero_accumulators(ACCUMULATORS)
    b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
    k_tiles = k // BLOCK_K
    block = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    recording = block < RECORDED_BLOCKS
    watcher = tid % 128 == 0  # one thread per warpgroup writes its events
    row_at = block * 3 * RECORDED_K_TILES * 4  # timeline[block] as a flat index
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    for pair in range(0, k_tiles + LOAD_AHEAD, 2):  # two turns a pass: the register set is known when compiling
        for half in unroll(2):
            t = pair + half
            if tid == 0 and t < k_tiles:  # thread 0 produces: k-tile t into stage t % STAGES
                stage = t % STAGES
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 0] = clock_cycles()  # 0: the producer turns to k-tile t
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every warp released the last one
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 1] = clock_cycles()  # 1: its stage is empty
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 2] = clock_cycles()  # 2: both copies issued
            if t >= LOAD_AHEAD and t < k_tiles + LOAD_AHEAD:  # every warp computes k-tile u, with set u % 2 = half
                u = t - LOAD_AHEAD
                stage = u % STAGES
                stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                at = row_at + (1 + warpgroup) * RECORDED_K_TILES * 4 + u * 4
                record = recording and watcher and u < RECORDED_K_TILES
                if record:
                    timeline[at + 0] = clock_cycles()  # 0: the warpgroup turns to k-tile u
                mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
                if record:
                    timeline[at + 1] = clock_cycles()  # 1: its data is there
                for s in unroll(K_STEPS):  # k-tile u − 1's wgmma may still run: they read the other set
                    for q in unroll(4):
                        x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                        b_frag[half][s][q] = operand_bits(to_tf32(x))
                warpgroup_fence()
                for s in unroll(K_STEPS):
                    a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                    acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                     b_frag[half][s][3], a_tile, acc, 1)
                warpgroup_commit()
                if record:
                    timeline[at + 2] = clock_cycles()  # 2: its wgmma issued
                acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage and registers are free
                if record:
                    timeline[at + 3] = clock_cycles()  # 3: k-tile u − 1's products are done
                if u > 0 and lane == 0:
                    mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
    acc = warpgroup_wait_all(acc)

    for v in unroll(ACCUMULATORS):
        row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
        col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        c[row * n + col] = acc[v]


#: Events per role and k-tile, and the roles (the producer, then one per warpgroup).
EVENTS, ROLES = 4, 3


class TimelineTiles(TmaTiles):
    """Step 16's launches, the fast kernel taking the timeline buffer after the two tensor maps."""

    signature_fast = TmaTiles.signature_fast[:-1] + ", uint64[::1])"


def build(config: TileConfig, recorded_blocks: int, recorded_k_tiles: int) -> TmaTiles:
    constants = {**tma_pipeline.Config.of(config).check().constants(), "RECORDED_BLOCKS": recorded_blocks,
                 "RECORDED_K_TILES": recorded_k_tiles}
    return TimelineTiles("tma_pipeline_timeline", tma_pipeline_timeline_kernel, config, constants,
                    edge=warpgroup_tf32.build(config), requires_compute_capability=(9, 0))


def launch(kernels: TmaTiles, a, b, c, timeline, stream=0) -> None:
    """The fast kernel over the full tiles of A·B (shapes that are whole tiles only), recording into ``timeline``."""
    import numpy as np

    config = kernels.config
    m, k = a.shape
    n = b.shape[1]
    if m % config.BLOCK_M or n % config.BLOCK_N or k % config.BLOCK_K:
        raise ValueError("the timeline build runs whole tiles only")
    flat = (a.reshape(m * k), b.reshape(k * n), c.reshape(m * n))
    sizes = [np.uint32(x) for x in (m, n, k, m // config.BLOCK_M, n // config.BLOCK_N)]
    kernels.configured("fast", (n // config.BLOCK_N, m // config.BLOCK_M), stream)(
        *flat, *sizes, *kernels.tensor_maps(a, b), timeline)
