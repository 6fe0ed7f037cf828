"""Step 16 with the producer's work moved behind the wgmma it overlaps: thread 0 waits for an empty stage and issues
the next copies *after* its warpgroup has issued this k-tile's ``wgmma`` (and before it waits for the last k-tile's),
instead of before it loads its fragments. (issue: Hopper's own GEMM design)

Why: step 16's timeline (experiments/results/experiment-timeline-tma-pipeline-nvidia-h200.json) shows thread 0's
producer work — the empty-stage wait and the two copies, ≈ 600–800 cycles a k-tile — on warpgroup 0's critical path:
``wgmma`` is an instruction of the whole warpgroup, so its other 127 threads wait for thread 0 at the fence. Warpgroup 0
then runs ≈ 2 k-tiles behind warpgroup 1, and since the loads are paced by warpgroup 0, warpgroup 1 waits ≈ 770
cycles a k-tile for its data. Here the producer's work overlaps the warpgroup's own ``wgmma`` in flight.
The first LOAD_AHEAD k-tiles are still loaded before any consumer starts. Measured by experiments/producer_order_bench.py.
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
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              shared_address, swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

def tma_pipeline_late_producer_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                        BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, LOAD_AHEAD, WARPS,
                        BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``, its k-tiles brought by the copy engine."""
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
            if tid == 0 and t < LOAD_AHEAD and t < k_tiles:  # the first LOAD_AHEAD k-tiles, before any wgmma
                mbarrier_arrive_expect_tx(barriers, t, STAGE_BYTES)
                copy_tile(tiles, t * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, t)
                copy_tile(tiles, B_BASE + t * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, t)
            if t >= LOAD_AHEAD and t < k_tiles + LOAD_AHEAD:  # every warp computes k-tile u, with set u % 2 = half
                u = t - LOAD_AHEAD
                stage = u % STAGES
                stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
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
                if tid == 0 and t < k_tiles:  # thread 0 produces k-tile t while the wgmma it just issued run
                    fill = t % STAGES
                    if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every warp released the last one
                        mbarrier_wait(barriers, STAGES + fill, uint32((t // STAGES - 1) % 2))
                    mbarrier_arrive_expect_tx(barriers, fill, STAGE_BYTES)
                    copy_tile(tiles, fill * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, fill)
                    copy_tile(tiles, B_BASE + fill * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, fill)
                acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage and registers are free
                if u > 0 and lane == 0:
                    mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
    acc = warpgroup_wait_all(acc)

    for v in unroll(ACCUMULATORS):
        row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
        col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        c[row * n + col] = acc[v]


def build(config: TileConfig, group_m: int = tma_pipeline.Config.GROUP_M) -> TmaTiles:
    return TmaTiles("tma_pipeline_late_producer", tma_pipeline_late_producer_kernel, config,
                    tma_pipeline.Config.of(config, GROUP_M=group_m).check().constants(),
                    edge=warpgroup_tf32.build(config),
                    requires_compute_capability=(9, 0))


def ptx_kernels() -> dict:
    built = build(tma_pipeline.SEARCH_SPACE[0])
    return {"tma_pipeline_late_producer_fast": (built.kernel("fast"), built.signature("fast"))}
