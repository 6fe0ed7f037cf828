"""Step 22 on clusters of two: the 3xTF32 stream-K kernel with step 20's shared A tile (TMA multicast).

The one change from step 22 (``gemm_steps/steps/warp_specialized_3xtf32_stream_k.py``; ``diff`` the two kernels) is
the one experiments/kernels/cluster_stream_k.py made to step 21 — and step 23 keeps: the grid runs in clusters of
CLUSTER = 2 blocks that always compute two neighbouring tiles of one tile-row (a *pair*); for each k-tile block r
loads rows r·A_HALF_ROWS … of the pair's A tile and the copy engine multicasts them into both blocks; each block's
producer warpgroup then splits all of A as step 22's does (the split is per block: each has its own copy). An empty
barrier counts CLUSTER × CONSUMERS arrivals (warp r of each consumer warpgroup arrives on block r's); block r hands
its partial sums to block r of the cluster that finishes the pair; the barriers are initialised and fenced for the
cluster, with a cluster barrier at the start and the end.

Why it might be faster: on step 21 the cluster gained 1 % at 4096³ and 2–3 % at 8192³ by L2 bytes (step 23's
reference run: 0.81–0.88× step 21's L2 bytes per FLOP). Why it might not: a 3xTF32 k-tile does three times the
tensor-core work on the same bytes, so L2 bytes matter less; and the two blocks of a cluster wait for each other at
every stage. Prediction: predictions/cluster-3xtf32-before-run.md (written before the run). Timed by
experiments/cluster_3xtf32.py.

Fast kernel only: whole tiles in whole pairs (the rest on step 14's edge kernel), K a multiple of 32, N of 4,
16-byte-aligned matrices; no fallback to step 18.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import cluster_multicast, warp_specialized_3xtf32_stream_k, warpgroup_mma
from gemm_steps.steps.pingpong import grouped_tile, ring_place
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.steps.warp_specialized_3xtf32_stream_k import BIG_SCALE, UNSCALE
from gemm_steps.steps.warp_specialized_stream_k import MIN_SHARE_K_TILES, work_unit
from gemm_steps.toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init,
                                            mbarrier_arrive_cluster)
from gemm_steps.toolkit.intrinsics import load4_bypassing_l1, load_float4, store4, store_float4, wait_for_flag
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import split_tf32_scaled
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import StreamKTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, add_accumulators, fence_proxy_async, first_aligned,
                                              operand_bits, registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, zero_accumulators)


ARITHMETIC = "3xtf32"  # step 22's


def cluster_3xtf32_stream_k_kernel(a, b, c, m, n, k, tile_rows, tile_cols, a_map, b_map, workspace, flags, dp_pairs,
                                   sk_pairs, *,
                                   BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                   BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, SMALL_BASE, STAGE_BYTES,
                                   GROUP_M, CONSUMERS, PRODUCER_THREADS, SPLIT_BEHIND, SPLIT_VECTORS,
                                   PRODUCER_REGISTERS, CONSUMER_REGISTERS, THREADS, CLUSTER, A_HALF_ROWS,
                                   CLUSTER_MASK):
    """Step 22's kernel on clusters of CLUSTER blocks (experiments/kernels/cluster_stream_k.py's change to step 21):
    the units are pairs of tiles side by side in one tile-row, block r of a cluster computes tile r of each pair, and
    A's tile of a pair is loaded half by each block and multicast to both (each block's producer splits all of it)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, ready[s] at STAGES + s, empty[s] at 2·STAGES + s
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
    # This cluster's work (step 22's, with a cluster for a block and a pair for a tile): its data-parallel pairs,
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
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, PRODUCER_THREADS)  # ready: every producer thread split its share
            mbarrier_init(barriers, 2 * STAGES + s, CLUSTER * CONSUMERS)  # empty: each consumer warpgroup of both
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
        fence_mbarrier_init()  # the initialised barriers → visible to the peer block's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them

    if warpgroup == CONSUMERS:  # the producer warpgroup: one thread copies unit after unit, all 128 split A
        registers_lower_to(PRODUCER_REGISTERS)
        p = tid - uint32(CONSUMERS * 128)
        produced = dp_count * k_tiles + (sk_end - sk_begin)  # the block's k-tiles over all its units
        dp_done, iteration = uint32(0), sk_end  # the copy thread's walk through the units …
        k_at, left = uint32(0), uint32(0)  # … where the next copy reads along K, and k-tiles left in its unit
        tile_row, pair_col = uint32(0), uint32(0)
        for t in range(uint32(0), produced + uint32(SPLIT_BEHIND)):
            if t >= SPLIT_BEHIND:  # split ring place t − SPLIT_BEHIND (step 18's split: only the stage matters) …
                stage, lap = ring_place(uint32(t - SPLIT_BEHIND), uint32(STAGES))
                mbarrier_wait(barriers, stage, lap % uint32(2))  # its bytes have landed
                for e in unroll(SPLIT_VECTORS):  # 16-byte vectors, a warp's 512 consecutive bytes at a time
                    at = stage * A_STAGE_FLOATS + (e * PRODUCER_THREADS + p) * 4
                    x = load_float4(tiles, at)
                    big, small = registers(4), registers(4)
                    for q in unroll(4):
                        big[q], small[q] = split_tf32_scaled(x[q])  # big rounded to TF32, small·2^11
                    store_float4(tiles, at, big[0], big[1], big[2], big[3])  # over the stage (the swizzle moves
                    store_float4(tiles, SMALL_BASE + at, small[0], small[1], small[2], small[3])  # 16-byte chunks)
                fence_proxy_async()  # these writes → visible to the tensor core's reads
                mbarrier_arrive(barriers, STAGES + stage)
            if p == 0 and t < produced:  # … then copy ring place t, the next k-tile of the walk, once it is empty
                if left == 0:  # the unit ended: on to the next
                    pair, k_first, left, dp_done, iteration = work_unit(cluster, clusters, dp_done, dp_count,
                                                                        iteration, sk_begin, k_tiles, dp_pairs)
                    tile_row, pair_col = grouped_tile(pair, rows, pairs_per_group, GROUP_M)
                    k_at = k_first * uint32(BLOCK_K)
                stage, lap = ring_place(t, uint32(STAGES))
                if t >= STAGES:  # refill: wait until every consumer warpgroup of *both* blocks released it
                    mbarrier_wait(barriers, 2 * STAGES + stage, uint32((lap - uint32(1)) % uint32(2)))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile_multicast(tiles, stage * A_STAGE_FLOATS + rank * A_HALF_ROWS * BLOCK_K, a_map,
                                    tile_row * BLOCK_M + rank * A_HALF_ROWS, k_at, barriers, stage, CLUSTER_MASK)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, (pair_col * CLUSTER + rank) * BLOCK_N,
                          barriers, stage)
                k_at += uint32(BLOCK_K)
                left -= uint32(1)
    else:  # a consumer warpgroup: waits for split stages, multiplies, releases; stores C or hands its sums over
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        fresh = zero_accumulators(ACCUMULATORS)  # 2^11 × one k-tile's products (the tensor core's sum)
        total = registers(ACCUMULATORS)  # a finishing unit's sums with the other blocks' added
        b_big, b_small, b_big_scaled = registers(K_STEPS, 4), registers(K_STEPS, 4), registers(K_STEPS, 4)
        stages = uint32(STAGES)
        g0 = uint32(0)  # the block's k-tiles before this unit's (the ring's counter, as the producer's)
        dp_done, iteration = uint32(0), sk_end
        while dp_done < dp_count or iteration > sk_begin:
            pair, k_first, k_count, dp_done, iteration = work_unit(cluster, clusters, dp_done, dp_count, iteration,
                                                                   sk_begin, k_tiles, dp_pairs)
            tile_row, pair_col = grouped_tile(pair, rows, pairs_per_group, GROUP_M)
            block_row, block_col = tile_row * BLOCK_M, (pair_col * CLUSTER + rank) * BLOCK_N
            acc = zero_accumulators(ACCUMULATORS)  # 2^11 × the unit's running sum: rounded float32 adds only
            for u in range(uint32(0), k_count):
                stage, lap = ring_place(g0 + u, stages)
                stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                mbarrier_wait(barriers, stages + stage, lap % uint32(2))  # A split, B landed
                for s in unroll(K_STEPS):  # Bᵀ's fragments of the k-tile: big, small·2^11, and big·2^11 for big·big
                    for q in unroll(4):
                        x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                        x_big, x_small = split_tf32_scaled(x)
                        b_big[s][q] = operand_bits(x_big)
                        b_small[s][q] = operand_bits(x_small)
                        b_big_scaled[s][q] = operand_bits(x_big * BIG_SCALE)
                warpgroup_fence()
                for s in unroll(K_STEPS):  # the small products first: the sum is still small when they are added
                    a_big = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                    a_small = swizzled_descriptor(base + ((SMALL_BASE + stage * A_STAGE_FLOATS) * 4 + s * 32))
                    fresh = wgmma_tf32(tiles, b_small[s][0], b_small[s][1], b_small[s][2], b_small[s][3], a_big,
                                       fresh, 0 if s == 0 else 1)
                    fresh = wgmma_tf32(tiles, b_big[s][0], b_big[s][1], b_big[s][2], b_big[s][3], a_small, fresh, 1)
                for s in unroll(K_STEPS):  # then big·big
                    a_big = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                    fresh = wgmma_tf32(tiles, b_big_scaled[s][0], b_big_scaled[s][1], b_big_scaled[s][2],
                                       b_big_scaled[s][3], a_big, fresh, 1)
                warpgroup_commit()
                fresh = warpgroup_wait_all(fresh)  # the k-tile's products are in: its fragments and stage are free
                acc = add_accumulators(acc, fresh)
                if lane == 0 and warp < CLUSTER:  # warp r of the warpgroup tells block r: the stage is empty here
                    mbarrier_arrive_cluster(barriers, 2 * stages + stage, warp)
            g0 += k_count

            if k_first + k_count < k_tiles:
                # We stop before the tile's last k-tile: leave our sums (2^11·, as they are) in our slot and raise our
                # flag for the same thread of the block that finishes the tile (step 21's hand-over).
                slot = me * uint32(BLOCK_M * BLOCK_N) + tid
                for v in unroll(0, ACCUMULATORS, 4):
                    store4(workspace, slot + v * THREADS, THREADS, acc[v], acc[v + 1], acc[v + 2], acc[v + 3])
                cuda.threadfence()  # the partial sums are visible GPU-wide before the flag is
                cuda.atomic.exch(flags, me * uint32(THREADS) + tid, 1)
                continue
            for v in unroll(ACCUMULATORS):
                total[v] = acc[v]
            # We compute the tile's last k-tile: add the lower-numbered blocks' sums of its earlier k-tiles, nearest
            # first (a fixed order: the same bits on every run).
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
            special = False  # did this thread store an inf or NaN?
            for v in unroll(ACCUMULATORS):
                row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                value = total[v] * UNSCALE
                c[row * n + col] = value
                if not math.isfinite(value):
                    special = True
            if special:  # specials (step 18's rule, per thread): those results again as SGEMM computes them
                for slot in range(ACCUMULATORS):  # this thread's results, numbered as the store above
                    row = block_row + lane % 4 * 2 + (slot // 4 * 8 + slot % 2)
                    col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (slot % 4 // 2 * 8)
                    if not math.isfinite(c[row * n + col]):
                        value = float32(0.0)
                        for kk in range(k):  # one float32 FMA per k, in order, over all of K
                            value = cuda.fma(a[row * k + kk], b[kk * n + col], value)
                        c[row * n + col] = value
    cluster_sync()  # the peer's last arrivals and copies into this block are in: its shared memory may go


@dataclass(frozen=True)
class Config(warp_specialized_3xtf32_stream_k.Config, cluster_multicast.Config):
    """Step 22's constants (first in the order of lookup), and step 20's cluster: ``CLUSTER`` and the properties
    ``A_HALF_ROWS``, ``A_BOX_ROWS``, ``CLUSTER_MASK``."""

    def problems(self) -> list[str]:
        return super().problems() or cluster_multicast.Config.problems(self)  # … and step 20's halves of A


#: Step 22's tiles (the GPU's) and its simulator tiles, with this file's constants.
CONFIG = Config.of(warp_specialized_3xtf32_stream_k.SEARCH_SPACE[0])
SIMULATOR_CONFIG = Config.of(warp_specialized_3xtf32_stream_k.SIMULATOR_CONFIG)


def build(config: Config | TileConfig | None = None, split=stream_k_split,
          min_share: int = MIN_SHARE_K_TILES) -> StreamKTmaTiles:
    """The variant for a configuration's tiles (default: step 22's GPU tiles); ``split`` and ``min_share`` as step
    22's ``build``."""
    config = replace(Config.of(CONFIG if config is None else config), PARTIAL_TILES=False)
    return StreamKTmaTiles("cluster_3xtf32_stream_k", cluster_3xtf32_stream_k_kernel, config,
                           edge=warpgroup_mma.build(config),
                           requires_compute_capability=warp_specialized_3xtf32_stream_k.REQUIRES_COMPUTE_CAPABILITY,
                           split=split, min_share=min_share)  # in clusters: the Config's CLUSTER


def ptx_kernels() -> dict:
    """The fast kernel at step 22's GPU tiles, ``{label: (dispatcher, signature)}``."""
    built = build(CONFIG)
    return {"cluster_3xtf32_stream_k_fast": (built.kernel("fast"), built.signature("fast"))}
