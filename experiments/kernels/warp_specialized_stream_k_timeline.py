"""Step 21's kernel (gemm_steps/steps/warp_specialized_stream_k.py) with a timeline: thread 0 of each block records
``%clock64`` when each work unit's k-loop ends (code 1, with its k-tiles), after a partial tile is handed over
(stored, fenced, flagged: 2), after each wait for another block's flag (3) and its read (4), and after each store of C
(5); ``%globaltimer`` at the block's start and end. The kernel is otherwise the step's as first written (it was
generated from the experiment kernel that became step 21, with these records added; nothing else changed); its
``work_unit``, launch class and splits are the step's and the toolkit's, launched with no minimum share (as the run
of experiments/results/experiment-stream-k-timeline-nvidia-h200.json was, before step 21 had one) and no fallback. Measured by experiments/stream_k_timeline.py.
"""

from __future__ import annotations

from dataclasses import replace

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized_stream_k as step
from gemm_steps.steps import warpgroup_tf32
from gemm_steps.steps.pingpong import grouped_tile, ring_place
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.steps.warp_specialized_stream_k import work_unit
from gemm_steps.toolkit.intrinsics import load4_bypassing_l1, store4, wait_for_previous_grid
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import StreamKTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, registers_lower_to,
                                              registers_raise_to, rounded_operand_bits, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)
from gemm_steps.toolkit.timers import clock_cycles, global_timer

ARITHMETIC = "tf32"  # step 17's


def warp_specialized_stream_k_kernel(a, b, c, m, n, k, tile_rows, tile_cols, a_map, b_map, workspace, flags,
                                     dp_tiles, sk_tiles, times, *,
                                     BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                     BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M,
                                     CONSUMERS, PRODUCER_REGISTERS, CONSUMER_REGISTERS, PARTIAL_TILES, THREADS):
    """Tiles of C = A·B as Cᵀ by TF32 ``wgmma`` (CONSUMERS warpgroups compute, one produces): dp_tiles whole tiles,
    then sk_tiles shared out by k-tiles over the grid. PARTIAL_TILES: the build whose tiles and k-tiles cover every
    shape (the copy engine zero-fills, the stores keep to C)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rows, cols = uint32(tile_rows), uint32(tile_cols)
    tiles_per_group = uint32(GROUP_M) * cols
    if PARTIAL_TILES:  # every k-tile, the last one partial: A's columns and B's rows past K arrive as zeros
        k_tiles = (k + uint32(BLOCK_K - 1)) // BLOCK_K
    else:
        k_tiles = k // BLOCK_K
    k_tiles = uint32(k_tiles)
    # This block's work (step 11's): its data-parallel tiles, then its share [sk_begin, sk_end) of the stream-K
    # tiles' k-tiles, walked down from sk_end.
    blocks, block = uint32(cuda.gridDim.x), uint32(cuda.blockIdx.x)
    dp_tiles = uint32(dp_tiles)
    sk_iterations = uint64(sk_tiles) * k_tiles  # 64-bit: block · sk_iterations may pass 2³²
    sk_begin = uint32(block * sk_iterations // blocks)
    sk_end = uint32((block + uint32(1)) * sk_iterations // blocks)
    dp_count = uint32((dp_tiles + blocks - uint32(1) - block) // blocks)
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier
    wait_for_previous_grid()  # launched early after a readable copy (PDL): its A and B are written now
    rec = uint32(cuda.blockIdx.x) * uint32(64)
    if tid == 0:
        times[rec] = global_timer()
        times[rec + 1] = clock_cycles()
    ev = uint32(2)

    if warpgroup == CONSUMERS:  # the producer: gives up registers; one thread issues the copies, unit after unit
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            g = uint32(0)  # k-tiles this block has produced, over all its units: the ring runs on across them
            dp_done, iteration = uint32(0), sk_end
            while dp_done < dp_count or iteration > sk_begin:
                tile, k_first, k_count, dp_done, iteration = work_unit(block, blocks, dp_done, dp_count, iteration,
                                                                       sk_begin, k_tiles, dp_tiles)
                tile_row, tile_col = grouped_tile(tile, rows, tiles_per_group, GROUP_M)
                for t in range(k_count):
                    stage, lap = ring_place(g, uint32(STAGES))
                    if g >= STAGES:  # the stage's lap-th fill: wait until every consumer warp released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((lap - uint32(1)) % uint32(2)))
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                    k_at = (k_first + t) * BLOCK_K
                    copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, tile_row * BLOCK_M, k_at, barriers, stage)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, tile_col * BLOCK_N, barriers,
                              stage)
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
            tile, k_first, k_count, dp_done, iteration = work_unit(block, blocks, dp_done, dp_count, iteration,
                                                                   sk_begin, k_tiles, dp_tiles)
            tile_row, tile_col = grouped_tile(tile, rows, tiles_per_group, GROUP_M)
            block_row, block_col = tile_row * BLOCK_M, tile_col * BLOCK_N
            acc = zero_accumulators(ACCUMULATORS)
            for pair in range(uint32(0), k_count, uint32(2)):  # two k-tiles a pass: the register set known
                for half in unroll(2):
                    u = uint32(pair + half)
                    if u < k_count:
                        stage, lap = ring_place(g0 + u, stages)
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        mbarrier_wait(barriers, stage, lap % uint32(2))  # its bytes have landed
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
                        if u > 0 and lane == 0:
                            mbarrier_arrive(barriers, stages + ring_place(g0 + u - uint32(1), stages)[0])
            acc = warpgroup_wait_all(acc)
            if tid == 0 and ev < 60:
                times[rec + ev] = uint64(1) << uint64(56) | uint64(k_count) << uint64(40) | clock_cycles()
                ev += uint32(1)
            if lane == 0:  # the unit's last k-tile is done too: release its stage (the producer fills the next)
                mbarrier_arrive(barriers, stages + ring_place(g0 + k_count - uint32(1), stages)[0])
            g0 += k_count

            if k_first + k_count < k_tiles:
                # We stop before the tile's last k-tile: leave our partial sums in our slot and raise our flag for
                # the thread of the block that finishes the tile (a higher number: it never makes us wait). Sum v of
                # thread t goes to slot + v · THREADS + t: a warp stores 128 bytes in a row.
                slot = block * uint32(BLOCK_M * BLOCK_N) + tid
                for v in unroll(0, ACCUMULATORS, 4):
                    store4(workspace, slot + v * THREADS, THREADS, acc[v], acc[v + 1], acc[v + 2], acc[v + 3])
                cuda.threadfence()  # the partial sums are visible GPU-wide before the flag is
                cuda.atomic.exch(flags, block * uint32(THREADS) + tid, 1)
                if tid == 0 and ev < 60:
                    times[rec + ev] = uint64(2) << uint64(56) | clock_cycles()
                    ev += uint32(1)
                continue
            for v in unroll(ACCUMULATORS):
                total[v] = acc[v]
            # We compute the tile's last k-tile: add the partial sums of the lower-numbered blocks that computed its
            # earlier k-tiles, nearest first (a fixed order: the same bits on every run).
            if k_first > 0:
                tile_begin = uint64(tile - dp_tiles) * k_tiles  # the tile's first iteration in the stream-K range
                other = block  # count down through the blocks before us whose share ends inside this tile
                while other > 0 and other * sk_iterations // blocks > tile_begin:
                    other -= uint32(1)
                    if other * sk_iterations // blocks < (other + uint32(1)) * sk_iterations // blocks:  # it had work
                        flag = other * uint32(THREADS) + tid  # the same thread of that block: the same elements
                        while cuda.atomic.add(flags, flag, 0) == 0:
                            pass  # spin: that block never waits on us
                        cuda.threadfence()  # pairs with the writer's fence across the flag: the sums are visible
                        flags[flag] = 0  # reset for the next launch (each flag is raised once per launch)
                        if tid == 0 and ev < 60:
                            times[rec + ev] = uint64(3) << uint64(56) | clock_cycles()
                            ev += uint32(1)
                        slot = other * uint32(BLOCK_M * BLOCK_N) + tid
                        for v in unroll(0, ACCUMULATORS, 4):
                            w0, w1, w2, w3 = load4_bypassing_l1(workspace, slot + v * THREADS, THREADS)
                            total[v] += w0
                            total[v + 1] += w1
                            total[v + 2] += w2
                            total[v + 3] += w3
                        if tid == 0 and ev < 60:
                            times[rec + ev] = uint64(4) << uint64(56) | clock_cycles()
                            ev += uint32(1)
            for v in unroll(ACCUMULATORS):
                row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                if not PARTIAL_TILES or (row < m and col < n):  # a partial tile: only what lies inside C
                    c[row * n + col] = total[v]
            if tid == 0 and ev < 60:
                times[rec + ev] = uint64(5) << uint64(56) | clock_cycles()
                ev += uint32(1)
    if tid == 0:
        times[rec + 63] = global_timer()


class TimelineTiles(StreamKTmaTiles):
    """Step 21's launch, its fast kernel given the timeline buffer (``times``, 64 records a block) as a last argument."""

    signature_fast = StreamKTmaTiles.signature_fast[:-1] + ", uint64[::1])"
    times = None

    def configured(self, variant: str, grid, stream, launches: list | None = None):
        launch = super().configured(variant, grid, stream, launches)
        return (lambda *arguments: launch(*arguments, self.times)) if variant == "fast" else launch


CONFIG = step.SEARCH_SPACE[0]
SIMULATOR_CONFIG = step.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG, split=stream_k_split) -> TimelineTiles:
    """The timeline kernel on step 21's launch for a configuration's tiles: the full-tile build with the PARTIAL_TILES
    build beside it, every launch on this kernel (no fallback), no minimum share."""
    config = step.Config.of(config)
    common = dict(edge=warpgroup_tf32.build(config), requires_compute_capability=(9, 0), split=split)
    partial = TimelineTiles("warp_specialized_stream_k_timeline_partial", warp_specialized_stream_k_kernel,
                            replace(config, PARTIAL_TILES=True), **common)
    return TimelineTiles("warp_specialized_stream_k_timeline", warp_specialized_stream_k_kernel,
                         replace(config, PARTIAL_TILES=False), partial=partial, **common)
