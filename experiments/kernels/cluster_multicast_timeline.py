"""Step 20's kernel with a clock: the timeline of its producer warpgroup and of each consumer warpgroup in the two
blocks of one cluster, recorded like step 17's (experiments/kernels/warp_specialized_timeline.py: the same events
and layout). A debug copy of ``gemm_steps/steps/cluster_multicast.py``; the lines marked ``RECORDING`` are the
difference, and ``ONE_ARRIVAL`` chooses the release: True (the default) as step 20 now releases a stage, one arrival
a consumer warpgroup and block; False as it did when the first run was recorded (0af299e,
experiment-timeline-warp-specialized-cluster-multicast-nvidia-h200.json): every consumer warp on both blocks. Role 0 is the producer (thread 256), roles 1 and 2 the consumer warpgroups; blocks 0 and 1 are the first
cluster. Run by experiments/timeline.py (``--only cluster_multicast``): deep dive 17 asks whether step 20's copies
land sooner than step 17's, A crossing L2 once per cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import cluster_multicast, warpgroup_tf32
from gemm_steps.toolkit.cluster_ops import cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init, \
    mbarrier_arrive_cluster
from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import copy_tile, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, \
    tensor_map_acquire
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.timers import clock_cycles
from gemm_steps.toolkit.tma_tiles import ClusterTmaTiles, TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

from .tma_pipeline_timeline import EVENTS, ROLES, launch


def cluster_multicast_timeline_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map,
                                      timeline, *,
                             BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                             A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                             PRODUCER_REGISTERS, CONSUMER_REGISTERS, CLUSTER, A_HALF_ROWS, CLUSTER_MASK,
                             RECORDED_BLOCKS, RECORDED_K_TILES, ONE_ARRIVAL):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``; CLUSTER blocks side by side share A's tile."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rank = cluster_rank()  # this block's place in its cluster: blockIdx.x % CLUSTER
    # Cluster j takes pair j of tiles in grouped order (step 16's, over pairs); block r of it the pair's r-th column.
    tile_rows, pair_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x) // CLUSTER
    cluster_index = uint32(cuda.blockIdx.y) * pair_cols + uint32(cuda.blockIdx.x) // CLUSTER
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = cluster_index - first_row * pair_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = (across * CLUSTER + rank) * BLOCK_N  # …then on to the next pair of columns
    k_tiles = k // BLOCK_K
    block = uint32(cuda.blockIdx.y) * uint32(cuda.gridDim.x) + uint32(cuda.blockIdx.x)  # RECORDING
    recording = block < RECORDED_BLOCKS  # RECORDING: blocks 0 and 1 are one cluster
    row_at = block * 3 * RECORDED_K_TILES * 4  # RECORDING: timeline[block] as a flat index
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: this block's producer arrives once; both blocks' bytes land
            if ONE_ARRIVAL:  # as step 20 now: one arrival a consumer warpgroup and block
                mbarrier_init(barriers, STAGES + s, CLUSTER * CONSUMERS)
            else:  # as step 20 was at 0af299e: every consumer warp of the cluster
                mbarrier_init(barriers, STAGES + s, CLUSTER * WARPS)
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
        fence_mbarrier_init()  # the initialised barriers → visible to the peer block's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(k_tiles):
                stage = t % STAGES
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 0] = clock_cycles()  # RECORDING 0: the producer turns to k-tile t
                if t >= STAGES:  # refill: wait until every consumer warp of *both* blocks released the stage
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 1] = clock_cycles()  # RECORDING 1: its stage is empty
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)  # all of A (two halves) and B land here
                copy_tile_multicast(tiles, stage * A_STAGE_FLOATS + rank * A_HALF_ROWS * BLOCK_K, a_map,
                                    block_row + rank * A_HALF_ROWS, t * BLOCK_K, barriers, stage, CLUSTER_MASK)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
                if recording and t < RECORDED_K_TILES:
                    timeline[row_at + t * 4 + 2] = clock_cycles()  # RECORDING 2: both copies issued
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
                    at = row_at + (1 + warpgroup) * RECORDED_K_TILES * 4 + u * 4  # RECORDING
                    record = recording and tid % 128 == 0 and u < RECORDED_K_TILES  # RECORDING
                    if record:
                        timeline[at + 0] = clock_cycles()  # RECORDING 0: the warpgroup turns to k-tile u
                    mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # both halves of A and B have landed
                    if record:
                        timeline[at + 1] = clock_cycles()  # RECORDING 1: its data is there
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
                        timeline[at + 2] = clock_cycles()  # RECORDING 2: its wgmma issued
                    acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                    if record:
                        timeline[at + 3] = clock_cycles()  # RECORDING 3: k-tile u − 1's products are done
                    if u > 0 and lane == 0:
                        if ONE_ARRIVAL:  # warp r of the warpgroup tells block r
                            if warp < CLUSTER:
                                mbarrier_arrive_cluster(barriers, STAGES + (u - 1) % STAGES, warp)
                        else:  # every warp tells every block
                            for r in unroll(CLUSTER):
                                mbarrier_arrive_cluster(barriers, STAGES + (u - 1) % STAGES, r)
        acc = warpgroup_wait_all(acc)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            c[row * n + col] = acc[v]
    cluster_sync()  # the peer's last arrivals on this block's barriers are in: its shared memory may go


@dataclass(frozen=True)
class Config(cluster_multicast.Config):
    """Step 20's configuration and what the recording needs."""

    RECORDED_BLOCKS: int = 2
    RECORDED_K_TILES: int = 48
    ONE_ARRIVAL: bool = True  # step 20's release now; False: as it was when the first run was recorded


class ClusterTimelineTiles(ClusterTmaTiles):
    """Step 20's launches, the fast kernel taking the timeline buffer after the two tensor maps."""

    signature_fast = TmaTiles.signature_fast[:-1] + ", uint64[::1])"


def build(config, recorded_blocks: int, recorded_k_tiles: int, one_arrival: bool = True) -> ClusterTimelineTiles:
    config = Config.of(config, RECORDED_BLOCKS=recorded_blocks, RECORDED_K_TILES=recorded_k_tiles,
                       ONE_ARRIVAL=one_arrival)
    return ClusterTimelineTiles("cluster_multicast_timeline", cluster_multicast_timeline_kernel, config,
                                edge=warpgroup_tf32.build(config), requires_compute_capability=(9, 0))


__all__ = ["build", "launch", "EVENTS", "ROLES"]
