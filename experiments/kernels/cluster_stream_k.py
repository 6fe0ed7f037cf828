"""Step 21 on clusters of two: the persistent stream-K grid with step 20's shared A tile (TMA multicast).

The one change from step 21 (``gemm_steps/steps/warp_specialized_stream_k.py``; ``diff`` the two kernels) is step 20's
(``gemm_steps/steps/cluster_multicast.py``): the grid runs in **clusters of CLUSTER = 2** blocks, and the two blocks of
a cluster always compute two neighbouring tiles of one tile-row — a *pair* — so that for each k-tile block r loads
rows r·A_HALF_ROWS … of the A tile they share and the copy engine multicasts them into both blocks.

* **The schedule, over pairs.** Step 21's schedule runs as it is, with a cluster in the place of a block and a pair of
  tiles in the place of a tile: ``work_unit(cluster, clusters, …)`` gives both blocks of a cluster the same units
  (pair, first k-tile, k-tiles), so their rings run in step — the multicast needs that: block r's copy of A lands in
  its peer's stage s, and the peer must be waiting for the same k-tile there. Stream-K's split is over the pairs'
  k-tiles on the clusters (``stream_k_split(pairs, clusters)``).
* **Who frees a stage** (step 20's): an empty barrier counts CLUSTER × CONSUMERS arrivals, warp r of each consumer
  warpgroup arriving on block r's barrier.
* **The fixup** (step 21's, per block): block r of a cluster hands its partial sums to block r of the cluster that
  finishes the pair — the same tile, the same thread, the same elements. A block's slot and flags are indexed by its
  block number, cluster · CLUSTER + r; the finishing block waits only for blocks of lower-numbered clusters.
* **Start and end together** (step 20's): the barriers initialised and fenced for the cluster, a cluster barrier
  before any copy, another at the end (a block's shared memory outlives its peer's last arrivals and copies).

Why it might be faster: step 20's reason (L2 sends each A tile once per cluster: results/reference-*.json measured
cuBLAS's TF32 kernel reading fewer L2 bytes per FLOP than step 17, with a cluster of 2) on step 21's persistent grid,
which is what cuBLAS's kernel is (grid 132, cluster 2). Step 20 measured +1.6 to +3.1 % over step 17
(experiments/results/experiment-step-20-lean-loop-nvidia-h200*.json). Why it might not: a cluster's two blocks wait for
each other at every stage (the slower one sets the pace), and stream-K's shares are over half as many units.
Prediction: predictions/cluster-stream-k-before-run.md (written before the run). Timed by
experiments/cluster_stream_k.py. Measured (experiment-cluster-stream-k-nvidia-h200.json, -2.json; two H200 runs): over
step 21 1.009 / 1.010 at 4096³, 1.020 / 1.033 at 8192³, about 1.00 where stream-K splits; lesson 20 reads them.

ptxas (sm_90a, on a CPU, 2026-11-29): 168 registers at entry, the consumers spill nothing; the producer warpgroup,
at 40 registers after the hand-off, spills 112 bytes (step 21's producer fits: the cluster's rank and A's half are
two more live values) — local loads by the one thread that issues copies, four stages ahead of the consumers.

Fast kernel only: whole tiles in whole clusters (the last odd tile-column and every ragged edge run on step 15's edge
kernel, as step 20's), K a multiple of 32, N of 4, 16-byte-aligned matrices; no fallback to step 17's split-K.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import cluster_multicast, warp_specialized_stream_k, warpgroup_tf32
from gemm_steps.steps.pingpong import grouped_tile, ring_place
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.steps.warp_specialized_stream_k import MIN_SHARE_K_TILES, work_unit
from gemm_steps.toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init,
                                            mbarrier_arrive_cluster)
from gemm_steps.toolkit.intrinsics import load4_bypassing_l1, store4, wait_for_flag
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
                                             tensor_map_acquire)
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import StreamKTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, registers_lower_to,
                                              registers_raise_to, rounded_operand_bits, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

ARITHMETIC = "tf32"  # step 21's


def cluster_stream_k_kernel(a, b, c, m, n, k, tile_rows, tile_cols, a_map, b_map, workspace, flags, dp_pairs,
                            sk_pairs, *,
                            BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                            A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                            PRODUCER_REGISTERS, CONSUMER_REGISTERS, THREADS, CLUSTER, A_HALF_ROWS, CLUSTER_MASK):
    """Step 21's kernel on clusters of CLUSTER blocks: the units are pairs of tiles side by side in one tile-row,
    block r of a cluster computes tile r of each pair, and A's tile of a pair is loaded half by each block and
    multicast to both."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rank = cluster_rank()  # this block's place in its cluster: the pair's tile it computes
    rows, pair_cols = uint32(tile_rows), uint32(tile_cols) // CLUSTER
    pairs_per_group = uint32(GROUP_M) * pair_cols
    k_tiles = uint32(k // BLOCK_K)
    # This cluster's work (step 21's, with a cluster for a block and a pair for a tile): its data-parallel pairs,
    # then its share [sk_begin, sk_end) of the stream-K pairs' k-tiles, walked down from sk_end.
    clusters, cluster = uint32(cuda.gridDim.x) // CLUSTER, uint32(cuda.blockIdx.x) // CLUSTER
    me = uint32(cuda.blockIdx.x)  # = cluster · CLUSTER + rank: this block's workspace slot and flags
    dp_pairs = uint32(dp_pairs)
    sk_iterations = uint64(sk_pairs) * k_tiles  # 64-bit: cluster · sk_iterations may pass 2³²
    sk_begin = uint32(cluster * sk_iterations // clusters)
    sk_end = uint32((cluster + uint32(1)) * sk_iterations // clusters)
    dp_count = uint32((dp_pairs + clusters - uint32(1) - cluster) // clusters)
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: this block's producer arrives once; both blocks' bytes land
            mbarrier_init(barriers, STAGES + s, CLUSTER * CONSUMERS)  # empty: each consumer warpgroup of the cluster
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
        fence_mbarrier_init()  # the initialised barriers → visible to the peer block's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them

    if warpgroup == CONSUMERS:  # the producer: gives up registers; one thread issues the copies, unit after unit
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            g = uint32(0)  # k-tiles this block has produced, over all its units: the ring runs on across them
            dp_done, iteration = uint32(0), sk_end
            while dp_done < dp_count or iteration > sk_begin:
                pair, k_first, k_count, dp_done, iteration = work_unit(cluster, clusters, dp_done, dp_count,
                                                                       iteration, sk_begin, k_tiles, dp_pairs)
                tile_row, pair_col = grouped_tile(pair, rows, pairs_per_group, GROUP_M)
                for t in range(k_count):
                    stage, lap = ring_place(g, uint32(STAGES))
                    if g >= STAGES:  # refill: wait until every consumer warpgroup of *both* blocks released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((lap - uint32(1)) % uint32(2)))
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)  # all of A (two halves) and B land here
                    k_at = (k_first + t) * BLOCK_K
                    copy_tile_multicast(tiles, stage * A_STAGE_FLOATS + rank * A_HALF_ROWS * BLOCK_K, a_map,
                                        tile_row * BLOCK_M + rank * A_HALF_ROWS, k_at, barriers, stage, CLUSTER_MASK)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at,
                              (pair_col * CLUSTER + rank) * BLOCK_N, barriers, stage)
                    g += uint32(1)
    else:  # a consumer warpgroup: waits for data, multiplies, releases stages; stores C or hands partial sums over
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        total = registers(ACCUMULATORS)  # a finishing unit's sums with the other blocks' added
        stages = uint32(STAGES)
        g0 = uint32(0)  # the block's k-tiles before this unit's (the ring's counter, as the producer's)
        dp_done, iteration = uint32(0), sk_end
        while dp_done < dp_count or iteration > sk_begin:
            pair, k_first, k_count, dp_done, iteration = work_unit(cluster, clusters, dp_done, dp_count, iteration,
                                                                   sk_begin, k_tiles, dp_pairs)
            tile_row, pair_col = grouped_tile(pair, rows, pairs_per_group, GROUP_M)
            block_row, block_col = tile_row * BLOCK_M, (pair_col * CLUSTER + rank) * BLOCK_N
            acc = zero_accumulators(ACCUMULATORS)
            for two in range(uint32(0), k_count, uint32(2)):  # two k-tiles a pass: the register set known
                for half in unroll(2):
                    u = uint32(two + half)
                    if u < k_count:
                        stage, lap = ring_place(g0 + u, stages)
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        mbarrier_wait(barriers, stage, lap % uint32(2))  # both halves of A and B have landed
                        for s in unroll(K_STEPS):
                            for q in unroll(4):
                                x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                                b_frag[half][s][q] = rounded_operand_bits(x)  # rounded to TF32: 2 instructions
                        warpgroup_fence()
                        a_stage = swizzled_descriptor(uint32(base + stage * uint32(A_STAGE_FLOATS * 4)))
                        for s in unroll(K_STEPS):  # k-step s reads 32 bytes further along A's rows
                            acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                             b_frag[half][s][3], a_stage + uint64(s * 2), acc, 1)
                        warpgroup_commit()
                        acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                        if u > 0 and lane == 0 and warp < CLUSTER:  # warp r of the warpgroup tells block r
                            mbarrier_arrive_cluster(barriers, stages + ring_place(g0 + u - uint32(1), stages)[0],
                                                    warp)
            acc = warpgroup_wait_all(acc)
            if lane == 0 and warp < CLUSTER:  # the unit's last k-tile is done too: release its stage on both blocks
                mbarrier_arrive_cluster(barriers, stages + ring_place(g0 + k_count - uint32(1), stages)[0], warp)
            g0 += k_count

            if k_first + k_count < k_tiles:
                # We stop before the tile's last k-tile: leave our partial sums in our slot and raise our flag for
                # the same thread of block r of the cluster that finishes the pair (a higher-numbered cluster).
                slot = me * uint32(BLOCK_M * BLOCK_N) + tid
                for v in unroll(0, ACCUMULATORS, 4):
                    store4(workspace, slot + v * THREADS, THREADS, acc[v], acc[v + 1], acc[v + 2], acc[v + 3])
                cuda.threadfence()  # the partial sums are visible GPU-wide before the flag is
                cuda.atomic.exch(flags, me * uint32(THREADS) + tid, 1)
                continue
            for v in unroll(ACCUMULATORS):
                total[v] = acc[v]
            # We compute the pair's last k-tile: add the partial sums of block r of the lower-numbered clusters that
            # computed its earlier k-tiles, nearest first (a fixed order: the same bits on every run).
            if k_first > 0:
                pair_begin = uint64(pair - dp_pairs) * k_tiles  # the pair's first iteration in the stream-K range
                other = cluster  # count down through the clusters before us whose share ends inside this pair
                while other > 0 and other * sk_iterations // clusters > pair_begin:
                    other -= uint32(1)
                    if other * sk_iterations // clusters < (other + uint32(1)) * sk_iterations // clusters:
                        peer = other * uint32(CLUSTER) + rank  # block r of that cluster: the same tile
                        flag = peer * uint32(THREADS) + tid  # the same thread of it: the same elements
                        wait_for_flag(flags, flag)  # that block never waits on us; the warp polls together
                        cuda.threadfence()  # pairs with the writer's fence across the flag: the sums are visible
                        flags[flag] = 0  # reset for the next launch (each flag is raised once per launch)
                        slot = peer * uint32(BLOCK_M * BLOCK_N) + tid
                        for v in unroll(0, ACCUMULATORS, 4):
                            w0, w1, w2, w3 = load4_bypassing_l1(workspace, slot + v * THREADS, THREADS)
                            total[v] += w0
                            total[v + 1] += w1
                            total[v + 2] += w2
                            total[v + 3] += w3
            for v in unroll(ACCUMULATORS):
                row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                c[row * n + col] = total[v]
    cluster_sync()  # the peer's last arrivals and copies into this block are in: its shared memory may go


@dataclass(frozen=True)
class Config(warp_specialized_stream_k.Config, cluster_multicast.Config):
    """Step 21's constants (first in the order of lookup), and step 20's cluster: ``CLUSTER`` and the properties
    ``A_HALF_ROWS``, ``A_BOX_ROWS``, ``CLUSTER_MASK``."""

    TF32_COPIES: bool = False  # float32 maps, as the experiment ran (step 21 loads TFLOAT32 since 2026-11-30)

    def problems(self) -> list[str]:
        return super().problems() or cluster_multicast.Config.problems(self)  # … and step 20's halves of A


#: Step 21's tiles (the GPU's) and its simulator tiles, with this file's constants.
CONFIG = Config.of(warp_specialized_stream_k.SEARCH_SPACE[0])
SIMULATOR_CONFIG = Config.of(warp_specialized_stream_k.SIMULATOR_CONFIG)


def build(config: Config | TileConfig | None = None, split=stream_k_split,
          min_share: int = MIN_SHARE_K_TILES) -> StreamKTmaTiles:
    """The variant for a configuration's tiles (default: step 21's GPU tiles); ``split`` and ``min_share`` as step
    21's ``build``."""
    config = replace(Config.of(CONFIG if config is None else config), PARTIAL_TILES=False)
    return StreamKTmaTiles("cluster_stream_k", cluster_stream_k_kernel, config, edge=warpgroup_tf32.build(config),
                           requires_compute_capability=warp_specialized_stream_k.REQUIRES_COMPUTE_CAPABILITY,
                           split=split, min_share=min_share)  # in clusters: the Config's CLUSTER


def ptx_kernels() -> dict:
    """The fast kernel at step 21's GPU tiles, ``{label: (dispatcher, signature)}`` (a ``kernels:`` job of
    tests/ptx_jobs.py, compiled on a CPU in the GPU-mode worker)."""
    built = build(CONFIG)
    return {"cluster_stream_k_fast": (built.kernel("fast"), built.signature("fast"))}
