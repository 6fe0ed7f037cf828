"""Step 17's kernel with a clock: the timeline of its producer warpgroup and of each consumer warpgroup, from a real
GPU run, recorded like step 16's (experiments/kernels/tma_pipeline_timeline.py, the same events and layout). A debug
copy of ``gemm_steps/steps/warp_specialized.py`` as it was when first recorded; the recording is the difference
then. (Step 17 has changed since — split-K, the partial-tile build, the leaner k-loop of experiments/
loop_instructions.py — and this copy keeps its old loop: 64-bit ring arithmetic, ``cvt.rna``.) Role 0 is the producer
(thread 256 here), roles 1 and 2 the consumer warpgroups. Run by experiments/timeline.py.
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized, warpgroup_tf32
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
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

from .tma_pipeline_timeline import EVENTS, ROLES, TimelineTiles, launch

def warp_specialized_timeline_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, timeline,
                                     *,
                           BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                           A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                           PRODUCER_REGISTERS, CONSUMER_REGISTERS, RECORDED_BLOCKS, RECORDED_K_TILES):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``: CONSUMERS warpgroups compute, one produces."""
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
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M
    block_col = across * BLOCK_N
    k_tiles = k // BLOCK_K
    block = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    recording = block < RECORDED_BLOCKS
    row_at = block * 3 * RECORDED_K_TILES * 4  # timeline[block] as a flat index
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(k_tiles):
                stage = t % STAGES
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 0] = clock_cycles()  # 0: the producer turns to k-tile t
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 1] = clock_cycles()  # 1: its stage is empty
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 2] = clock_cycles()  # 2: both copies issued
    else:  # a consumer warpgroup: takes the registers; only waits for data, multiplies and releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        acc = zero_accumulators(ACCUMULATORS)
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
            for half in unroll(2):
                u = pair + half
                if u < k_tiles:
                    stage = u % STAGES
                    stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                    at = row_at + (1 + warpgroup) * RECORDED_K_TILES * 4 + u * 4
                    record = recording and tid % 128 == 0 and u < RECORDED_K_TILES
                    if record:
                        timeline[at + 0] = clock_cycles()  # 0: the warpgroup turns to k-tile u
                    mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
                    if record:
                        timeline[at + 1] = clock_cycles()  # 1: its data is there
                    for s in unroll(K_STEPS):
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
                    acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                    if record:
                        timeline[at + 3] = clock_cycles()  # 3: k-tile u − 1's products are done
                    if u > 0 and lane == 0:
                        mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
        acc = warpgroup_wait_all(acc)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            c[row * n + col] = acc[v]


def build(config: TileConfig, recorded_blocks: int, recorded_k_tiles: int) -> TmaTiles:
    constants = {**warp_specialized.Config.of(config).check().constants(), "RECORDED_BLOCKS": recorded_blocks,
                 "RECORDED_K_TILES": recorded_k_tiles}
    return TimelineTiles("warp_specialized_timeline", warp_specialized_timeline_kernel, config, constants,
                         edge=warpgroup_tf32.build(config), requires_compute_capability=(9, 0))


__all__ = ["build", "launch", "EVENTS", "ROLES"]
