"""Step 18's kernel with a clock: the timeline of its producer warpgroup (the split of A and the copies) and of each
consumer warpgroup, from a real GPU run — to see what holds a k-tile at ≈ 2,400 cycles when the tensor core needs
≈ 1,536. A debug copy of the kernel of ``gemm_steps/steps/warp_specialized_3xtf32.py`` as committed in 2f2da27 (the
build that ran ≈ 2,400 cycles a k-tile; split-K, added to the step later, takes one slice at 4096³ and is left out
here); the diff against that file is the recording (``git show 2f2da27:gemm_steps/steps/warp_specialized_3xtf32.py
| diff - experiments/kernels/warp_specialized_3xtf32_timeline.py``). Run by ``python -m experiments.timeline --only
warp_specialized_3xtf32``.

The first RECORDED_BLOCKS blocks write ``%clock64`` (``toolkit/timers.clock_cycles``, the SM's cycle counter: all
warps of a block share an SM, so their readings compare) into ``timeline[block][role][k-tile][event]`` for their
first RECORDED_K_TILES k-tiles. Role 0 is the producer warpgroup's first thread (it splits its share of A and issues
the copies), roles 1 and 2 the first thread of consumer warpgroups 0 and 1. Events (:data:`EVENT_NAMES`):

* producer, for k-tile j: 0 it turns to splitting j (before the wait on full[j's stage]), 1 j's bytes have landed
  (after that wait: its split starts), 2 its share of j is split, fenced and arrived on ready (the stage is ready
  once all 128 producer threads arrived: a consumer's event 3 says when), 3 it turns to copying j (before the wait
  on empty), 4 j's stage is empty (after that wait), 5 both copies of j issued;
* consumer, for k-tile u: 0 it turns to u (before ``wgmma.wait_group 0``), 1 k-tile u − 1's products are in (after
  it), 2 they are added to the running sum and u − 1's stage released (before the wait on ready), 3 u's stage is
  ready (after that wait), 4 B's fragments of u loaded and split (before ``wgmma.fence``), 5 u's 12 wgmma issued
  and committed.

Each write is a global store (and the clock reads are ordered as the compiler keeps them, so a boundary between
two stretches of plain arithmetic — event 4 — is approximate), so the recorded blocks run a little slower than the
rest.
"""

from __future__ import annotations

import math

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized_3xtf32, warpgroup_mma
from gemm_steps.steps.warp_specialized_3xtf32 import BIG_SCALE, UNSCALE
from gemm_steps.toolkit.intrinsics import divide_u32, load_float4, store_float4
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import split_tf32_scaled
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.timers import clock_cycles
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, add_accumulators, fence_proxy_async, first_aligned,
                                              operand_bits, registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, zero_accumulators)

from .tma_pipeline_timeline import TimelineTiles, launch

#: Events per role and k-tile, and the roles (the producer, then one per consumer warpgroup).
EVENTS, ROLES = 6, 3
EVENT_NAMES = {
    "producer": ["turns to splitting k-tile j", "j's bytes landed: split starts", "j split, fenced, arrived on ready",
                 "turns to copying j", "j's stage empty", "j's copies issued"],
    "warpgroup": ["turns to k-tile u", "u-1's wgmma done (wait_group 0)", "u-1 added and released",
                  "u's stage ready", "u's B fragments loaded and split", "u's wgmma issued and committed"]}


def warp_specialized_3xtf32_timeline_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map,
                                            timeline, *,
                                   BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                   BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, SMALL_BASE, STAGE_BYTES,
                                   GROUP_M, CONSUMERS, PRODUCER_THREADS, SPLIT_BEHIND, SPLIT_VECTORS,
                                   PRODUCER_REGISTERS, CONSUMER_REGISTERS, RECORDED_BLOCKS, RECORDED_K_TILES):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by 3xTF32 ``wgmma``: CONSUMERS warpgroups compute, one produces."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, ready[s] at STAGES + s, empty[s] at 2·STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    # Block b takes tile b in grouped order: column by column within groups of GROUP_M tile-rows (step 16).
    tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
    tile = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M
    block_col = across * BLOCK_N
    k_tiles = max(k // BLOCK_K, uint32(1))  # ≥ 1 (K = 0 never gets here): no path around the consumers' loop
    block = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    recording = block < RECORDED_BLOCKS
    row_at = block * ROLES * RECORDED_K_TILES * EVENTS  # timeline[block] as a flat index
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, PRODUCER_THREADS)  # ready: every producer thread split its share
            mbarrier_init(barriers, 2 * STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier before the end
    special = 0  # did this thread store an inf or NaN?

    if warpgroup == CONSUMERS:  # the producer warpgroup: copies (one thread) and splits A (all 128)
        registers_lower_to(PRODUCER_REGISTERS)
        p = tid - CONSUMERS * 128
        for t in range(k_tiles + SPLIT_BEHIND):
            u = t - SPLIT_BEHIND  # split k-tile u, SPLIT_BEHIND behind the copies …
            if u >= 0:
                stage = u % STAGES
                record = recording and p == 0 and u < RECORDED_K_TILES
                if record:
                    timeline[row_at + u * EVENTS + 0] = clock_cycles()  # 0: turns to splitting k-tile u
                mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
                if record:
                    timeline[row_at + u * EVENTS + 1] = clock_cycles()  # 1: they have landed, the split starts
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
                if record:
                    timeline[row_at + u * EVENTS + 2] = clock_cycles()  # 2: its share split and arrived on ready
            if p == 0 and t < k_tiles:  # … then copy k-tile t once its stage is empty
                stage = t % STAGES
                record = recording and t < RECORDED_K_TILES
                if record:
                    timeline[row_at + t * EVENTS + 3] = clock_cycles()  # 3: turns to copying k-tile t
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, 2 * STAGES + stage, uint32((t // STAGES - 1) % 2))
                if record:
                    timeline[row_at + t * EVENTS + 4] = clock_cycles()  # 4: its stage is empty
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
                if record:
                    timeline[row_at + t * EVENTS + 5] = clock_cycles()  # 5: both copies issued
    else:  # a consumer warpgroup: waits for split stages, multiplies, releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        total = zero_accumulators(ACCUMULATORS)  # 2^11 × the running sum of C: rounded float32 adds only
        fresh = zero_accumulators(ACCUMULATORS)  # 2^11 × one k-tile's products (the tensor core's sum)
        b_big, b_small, b_big_scaled = registers(K_STEPS, 4), registers(K_STEPS, 4), registers(K_STEPS, 4)
        for u in range(k_tiles):
            at = row_at + ((1 + warpgroup) * RECORDED_K_TILES + u) * EVENTS
            record = recording and tid % 128 == 0 and u < RECORDED_K_TILES
            if record:
                timeline[at + 0] = clock_cycles()  # 0: the warpgroup turns to k-tile u
            fresh = warpgroup_wait_all(fresh)  # k-tile u − 1's products are in: its fragments and stage are free
            if record:
                timeline[at + 1] = clock_cycles()  # 1: k-tile u − 1's products are in
            total = add_accumulators(total, fresh)  # (zeros before the first k-tile: no branch around the wgmma)
            if u > 0 and lane == 0:
                mbarrier_arrive(barriers, 2 * STAGES + (u - 1) % STAGES)
            stage = u % STAGES
            stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
            if record:
                timeline[at + 2] = clock_cycles()  # 2: added, and u − 1's stage released
            mbarrier_wait(barriers, STAGES + stage, uint32(u // STAGES % 2))  # A split, B landed
            if record:
                timeline[at + 3] = clock_cycles()  # 3: u's stage is ready
            for s in unroll(K_STEPS):  # Bᵀ's fragments of the k-tile: big, small·2^11, and big·2^11 for big·big
                for q in unroll(4):
                    x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                    x_big, x_small = split_tf32_scaled(x)
                    b_big[s][q] = operand_bits(x_big)
                    b_small[s][q] = operand_bits(x_small)
                    b_big_scaled[s][q] = operand_bits(x_big * BIG_SCALE)
            if record:
                timeline[at + 4] = clock_cycles()  # 4: B's fragments loaded and split
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
            if record:
                timeline[at + 5] = clock_cycles()  # 5: u's wgmma issued and committed
        fresh = warpgroup_wait_all(fresh)
        total = add_accumulators(total, fresh)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            value = total[v] * UNSCALE
            c[row * n + col] = value
            if not math.isfinite(value):
                special = 1

    # Specials (step 14's rule): an inf or NaN in A or B, or a sum past float32's range (here: past 2^-11 of it),
    # leaves an inf or NaN in the tile; then the consumers compute the tile again as cuBLAS SGEMM does, one float32
    # FMA per k in order, which gives exactly SGEMM's inf/NaN pattern (docs/fp32_contract.md).
    if cuda.syncthreads_or(special) and warpgroup < CONSUMERS:
        for slot in range(ACCUMULATORS):  # this thread's results, numbered as the store above
            row = block_row + lane % 4 * 2 + (slot // 4 * 8 + slot % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (slot % 4 // 2 * 8)
            value = float32(0.0)
            for kk in range(k):
                value = cuda.fma(a[row * k + kk], b[kk * n + col], value)
            c[row * n + col] = value


def layout(config: TileConfig, recorded_blocks: int, recorded_k_tiles: int) -> dict:
    """Step 18's constants, and how many blocks and k-tiles record."""
    return {**warp_specialized_3xtf32.Config.of(config).check().constants(), "RECORDED_BLOCKS": recorded_blocks,
            "RECORDED_K_TILES": recorded_k_tiles}


def build(config: TileConfig, recorded_blocks: int, recorded_k_tiles: int) -> TmaTiles:
    return TimelineTiles("warp_specialized_3xtf32_timeline", warp_specialized_3xtf32_timeline_kernel, config,
                         layout(config, recorded_blocks, recorded_k_tiles), edge=warpgroup_mma.build(config),
                         requires_compute_capability=(9, 0))


__all__ = ["build", "launch", "EVENTS", "ROLES", "EVENT_NAMES"]
