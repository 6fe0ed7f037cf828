"""Step 22 — the default precision on stream-K: step 18's 3xTF32 k-tile on step 21's schedule.

Changed from step 21 (same persistent grid of one block an SM, same work units walked backwards, same ring counter
across units, same per-thread fixup through a workspace and flags): the arithmetic — step 18's 3xTF32, float32
accuracy from three TF32 products per k-step — with step 18's roles and tile.

* **The producer splits A, unit after unit.** As in step 18 the producer warpgroup's 128 threads split each stage of
  A into its big and small TF32 parts (ready barrier) SPLIT_BEHIND k-tiles behind the copies its first thread issues.
  Here the copies walk the block's work units (the copy thread moves to the next unit where one ends) while the
  split only needs the ring's place: pass t splits ring place t − SPLIT_BEHIND, whatever unit it belongs to, so the
  loop is step 18's over all of the block's k-tiles at once.
* **The consumers, per unit.** A unit's k-tiles go to ``fresh`` (three products a k-step, the two small ones first)
  and join ``acc`` (2^11 · the unit's sum, rounded float32 adds) as in step 18. A unit that stops before its tile's
  last k-tile hands ``acc`` over as step 21 hands its sums over — still scaled by 2^11: every part of a tile's sum
  carries the same scale, so the finishing thread adds them as they are and unscales once.
* **Specials, per thread.** Step 18 votes over the block (``syncthreads_or``) and recomputes the tile where any
  result is inf or NaN. Here the producer runs ahead into the next unit and the two consumer warpgroups never wait
  for each other, so there is no block-wide barrier to vote at: each consumer thread, after storing its results of a
  tile it finishes, computes again those that came out inf or NaN, one float32 FMA per k over all of K in order, as
  cuBLAS SGEMM does. That is the same rule at a finer grain: an inf or NaN in A or B makes its whole row or column of
  the 3xTF32 sum NaN through the split and a sum past float32's range (here 2^-11 of it) makes inf, finite inputs
  within the contract never do (docs/fp32_contract.md) — so exactly the results step 18 would give SGEMM's values are
  recomputed here, and the tile's other results keep their 3xTF32 sums.
* **When.** As step 21: whole waves data-parallel, the last part-empty wave plus one shared out by k-tiles
  (``stream_k.stream_k_split``); where step 18 would split K (few tiles, long K:
  ``warp_specialized_3xtf32.split_asked``), step 18 runs. Unlike step 21's, this kernel's k-tiles run slower than
  its base step's (0.90× step 18's where both run the same waves; the cause is only partly found:
  ``PACE_OF_STEP_18``), so it runs only where what it saves is worth more than that (``runs_step_18``): a part-empty
  wave, or — where a tile has a few k-tiles — the cost of each of step 18's tiles besides its k-loop
  (``SHORT_TILE_K_TILES``); no persistent loop where long tiles fill whole waves.

Deadlock-free for step 11's reason: a block waits only for lower-numbered blocks, whose partial sums never wait, and
the grid is the blocks the GPU holds at once.

Why faster than step 18 where it runs: a part-empty last wave costs step 18 a whole wave — 10077×164×4066 is 158
tiles of 128×128 for 132 SMs, 1.20 waves of work in 2; here every SM computes ≈ 158 · 128 / 132 k-tiles instead of
2 · 128. Expect: predictions/stream-k-3xtf32-before-run.md, written before the first GPU run. Measured: lesson 22
reads experiments/results/experiment-stream-k-3xtf32-*.json.

Shapes: as step 18 — the full-tile build where the tiles are whole and the copy engine can read A and B, else the
PARTIAL_TILES build (the copy engine zero-fills past A and B, the stores keep to C), after a readable copy where a row
pitch is not a multiple of 16 bytes; compute capability 9.0 only; runs on the simulator (a grid of 3 blocks).
"""

import math

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from ..toolkit.intrinsics import (load4_bypassing_l1, load_float4, store4, store_float4, wait_for_flag,
                                  wait_for_previous_grid)
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait, tensor_map_acquire)
from ..toolkit.tensor_core_ops import split_tf32_scaled
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_tiles import StreamKTmaTiles
from ..toolkit.tuned import Tuning, built, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, add_accumulators, check_register_handoff, fence_proxy_async,
                                     first_aligned, operand_bits, registers_at_entry, registers_lower_to,
                                     registers_raise_to, shared_address, swizzled_descriptor, warpgroup_commit,
                                     warpgroup_fence, warpgroup_wait_all, wgmma_tf32, zero_accumulators)
from . import warp_specialized_3xtf32, warpgroup_mma
from .pingpong import grouped_tile, ring_place
from .stream_k import stream_k_split
from .warp_specialized_stream_k import work_unit

TITLE = "The default precision on stream-K: 3xTF32 with the last wave shared out"
SUMMARY = ("Step 18's 3xTF32 k-tile (the producer splits A, three TF32 products a k-step) on step 21's persistent "
           "stream-K schedule: float32 accuracy without step 18's part-empty last wave.")
ARITHMETIC = "3xtf32"  # step 18's: float32 accuracy, verified with the float32 tolerance
#: The step this one changes (step 18's arithmetic on its schedule; `gemm-steps diff 21 22`).
BUILDS_ON = "warp_specialized_stream_k"
#: wgmma, the copy engine's tensor copies and setmaxnreg: compute capability 9.0 only (H100, H200).
REQUIRES_COMPUTE_CAPABILITY = (9, 0)
#: B's big part is scaled like the small parts (2^11, exact), so all three products share one accumulator …
BIG_SCALE = float32(2.0 ** 11)
#: … and the store takes the scale off, once (after the fixup: every part of a tile's sum carries it).
UNSCALE = float32(2.0 ** -11)


def warp_specialized_3xtf32_stream_k_kernel(a, b, c, m, n, k, tile_rows, tile_cols, a_map, b_map, workspace, flags,
                                            dp_tiles, sk_tiles, *,
                                            BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                            BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, SMALL_BASE, STAGE_BYTES,
                                            GROUP_M, CONSUMERS, PRODUCER_THREADS, SPLIT_BEHIND, SPLIT_VECTORS,
                                            PRODUCER_REGISTERS, CONSUMER_REGISTERS, PARTIAL_TILES, THREADS):
    """Tiles of C = A·B as Cᵀ by 3xTF32 ``wgmma`` (CONSUMERS warpgroups compute, one copies and splits A): dp_tiles
    whole tiles, then sk_tiles shared out by k-tiles over the grid. PARTIAL_TILES: the build whose tiles and k-tiles
    cover every shape (the copy engine zero-fills, the stores keep to C)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, ready[s] at STAGES + s, empty[s] at 2·STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rows, cols = uint32(tile_rows), uint32(tile_cols)
    tiles_per_group = uint32(GROUP_M) * cols
    # PARTIAL_TILES: every k-tile, the last one partial (A's columns and B's rows past K arrive as zeros)
    k_tiles = uint32((k + uint32(BLOCK_K - 1)) // BLOCK_K if PARTIAL_TILES else k // BLOCK_K)
    # This block's work (step 21's): its data-parallel tiles, then its share [sk_begin, sk_end) of the stream-K
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
            mbarrier_init(barriers, STAGES + s, PRODUCER_THREADS)  # ready: every producer thread split its share
            mbarrier_init(barriers, 2 * STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier
    wait_for_previous_grid()  # launched early after a readable copy (PDL): its A and B are written now

    if warpgroup == CONSUMERS:  # the producer warpgroup: one thread copies unit after unit, all 128 split A
        registers_lower_to(PRODUCER_REGISTERS)
        p = tid - uint32(CONSUMERS * 128)
        produced = dp_count * k_tiles + (sk_end - sk_begin)  # the block's k-tiles over all its units
        dp_done, iteration = uint32(0), sk_end  # the copy thread's walk through the units …
        k_at, left = uint32(0), uint32(0)  # … where the next copy reads along K, and k-tiles left in its unit
        tile_row, tile_col = uint32(0), uint32(0)
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
                    tile, k_first, left, dp_done, iteration = work_unit(block, blocks, dp_done, dp_count, iteration,
                                                                        sk_begin, k_tiles, dp_tiles)
                    tile_row, tile_col = grouped_tile(tile, rows, tiles_per_group, GROUP_M)
                    k_at = k_first * uint32(BLOCK_K)
                stage, lap = ring_place(t, uint32(STAGES))
                if t >= STAGES:  # the stage's lap-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, 2 * STAGES + stage, uint32((lap - uint32(1)) % uint32(2)))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, tile_row * BLOCK_M, k_at, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, tile_col * BLOCK_N, barriers, stage)
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
            tile, k_first, k_count, dp_done, iteration = work_unit(block, blocks, dp_done, dp_count, iteration,
                                                                   sk_begin, k_tiles, dp_tiles)
            tile_row, tile_col = grouped_tile(tile, rows, tiles_per_group, GROUP_M)
            block_row, block_col = tile_row * BLOCK_M, tile_col * BLOCK_N
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
                if lane == 0:
                    mbarrier_arrive(barriers, 2 * stages + stage)  # the stage is empty (an arrival a warp)
            g0 += k_count

            if k_first + k_count < k_tiles:
                # We stop before the tile's last k-tile: leave our sums (2^11·, as they are) in our slot and raise our
                # flag for the same thread of the block that finishes the tile (step 21's hand-over).
                slot = block * uint32(BLOCK_M * BLOCK_N) + tid
                for v in unroll(0, ACCUMULATORS, 4):
                    store4(workspace, slot + v * THREADS, THREADS, acc[v], acc[v + 1], acc[v + 2], acc[v + 3])
                cuda.threadfence()  # the partial sums are visible GPU-wide before the flag is
                cuda.atomic.exch(flags, block * uint32(THREADS) + tid, 1)
                continue
            for v in unroll(ACCUMULATORS):
                total[v] = acc[v]
            # We compute the tile's last k-tile: add the lower-numbered blocks' sums of its earlier k-tiles, nearest
            # first (a fixed order: the same bits on every run).
            if k_first > 0:
                tile_begin = uint64(tile - dp_tiles) * k_tiles  # the tile's first iteration in the stream-K range
                other = block
                while other > 0 and other * sk_iterations // blocks > tile_begin:
                    other -= uint32(1)
                    if other * sk_iterations // blocks < (other + uint32(1)) * sk_iterations // blocks:  # it had work
                        flag = other * uint32(THREADS) + tid  # the same thread of that block: the same elements
                        wait_for_flag(flags, flag)  # that block never waits on us; the warp polls together
                        cuda.threadfence()  # pairs with the writer's fence across the flag: the sums are visible
                        flags[flag] = 0  # reset for the next launch (each flag is raised once per launch)
                        slot = other * uint32(BLOCK_M * BLOCK_N) + tid
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
                if not PARTIAL_TILES or (row < m and col < n):  # a partial tile keeps to C (outside it 0·inf is NaN)
                    value = total[v] * UNSCALE
                    c[row * n + col] = value
                    if not math.isfinite(value):
                        special = True
            if special:  # specials (step 18's rule, per thread): those results again as SGEMM computes them
                for slot in range(ACCUMULATORS):  # this thread's results, numbered as the store above
                    row = block_row + lane % 4 * 2 + (slot // 4 * 8 + slot % 2)
                    col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (slot % 4 // 2 * 8)
                    if (not PARTIAL_TILES or (row < m and col < n)) and not math.isfinite(c[row * n + col]):
                        value = float32(0.0)
                        for kk in range(k):  # one float32 FMA per k, in order, over all of K
                            value = cuda.fma(a[row * k + kk], b[kk * n + col], value)
                        c[row * n + col] = value


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 128  # rows of C per thread block (step 18's tile: three products a k-step)
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 32  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    STAGES: int = 4  # four k-tiles in flight (step 18's)
    GROUP_M: int = 8  # tile-rows per group in the tile order (1 = row-major)
    PRODUCER_THREADS: int = 128  # one producer warpgroup beside the consumers: it copies (one thread) and splits A
    # Registers a thread keeps in each role after the hand-off (setmaxnreg: 24–256, multiples of 8). Three warpgroups
    # start with 65,536 / 384 → 168 each: the block's pool is 384 × 168 = 64,512, and 128 × 40 + 256 × 232 = 64,512
    # fills it exactly (setmaxnreg.inc draws from that pool, not from the SM's 65,536: asking for more hangs).
    PRODUCER_REGISTERS: int = 40
    CONSUMER_REGISTERS: int = 232
    # The build for shapes with partial tiles or a partial last k-tile (step 18's): its tiles cover every tile and its
    # units every k-tile, the copy engine filling with zeros whatever of a box lies outside A or B, and its store
    # keeps to C. build() makes it beside the full-tile build (False).
    PARTIAL_TILES: bool = False

    @property
    def THREADS(self) -> int:  # one thread per THREAD_M × THREAD_N block of C
        return (self.BLOCK_M // self.THREAD_M) * (self.BLOCK_N // self.THREAD_N)

    @property
    def THREADS_N(self) -> int:  # threads along a row of the block tile
        return self.BLOCK_N // self.THREAD_N

    @property
    def A_LOADS(self) -> int:  # 128-bit loads of A per thread per tile …
        return self.BLOCK_M * self.BLOCK_K // 4 // self.THREADS

    @property
    def B_LOADS(self) -> int:  # … and of B
        return self.BLOCK_K * self.BLOCK_N // 4 // self.THREADS

    @property
    def A_VECTORS_PER_ROW(self) -> int:  # 128-bit vectors in a row of A's tile …
        return self.BLOCK_K // 4

    @property
    def B_VECTORS_PER_ROW(self) -> int:  # … and of B's
        return self.BLOCK_N // 4

    @property
    def K_STEPS(self) -> int:  # wgmma k-steps (k = 8) per k-tile
        return self.BLOCK_K // 8

    @property
    def ACCUMULATORS(self) -> int:  # results of C a consumer thread holds: Cᵀ is BLOCK_N × BLOCK_M, 64 rows a warpgroup
        return self.BLOCK_M // 2

    @property
    def B_STRIDE(self) -> int:  # floats per row of a stage of B (the copy's box is that wide): rows 8 banks apart
        return self.BLOCK_N + 8

    @property
    def A_STAGE_FLOATS(self) -> int:  # a stage of A: BLOCK_M rows of BLOCK_K = 32 floats, one 128-byte swizzled row each
        return self.BLOCK_M * self.BLOCK_K

    @property
    def B_STAGE_FLOATS(self) -> int:
        return self.BLOCK_K * self.B_STRIDE

    @property
    def STAGE_BYTES(self) -> int:  # what one stage's copies bring (both boxes, whole): its full barrier waits for it
        return (self.BLOCK_M + self.B_STRIDE) * self.BLOCK_K * 4

    @property
    def BARRIERS(self) -> int:
        return 3 * self.STAGES  # full[s], ready[s] (A's small parts split) and empty[s]

    @property
    def EXTRA_SHARED_FLOATS(self) -> int:  # a buffer of A's small parts per stage + first_aligned's slack
        return self.STAGES * self.A_STAGE_FLOATS + SWIZZLE_ALIGN // 4

    @property
    def SMALL_BASE(self) -> int:  # where the small parts' buffers start: after the stages, 1,024-byte aligned
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS)

    @property
    def SPLIT_BEHIND(self) -> int:  # k-tiles the producer's split of A runs behind its copies (step 18's)
        return self.STAGES - 2

    @property
    def SPLIT_VECTORS(self) -> int:  # 16-byte vectors a producer thread splits per k-tile
        return self.A_STAGE_FLOATS // 4 // self.PRODUCER_THREADS

    @property
    def SHARED_BYTES(self) -> int:
        return (self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS) + self.EXTRA_SHARED_FLOATS) * 4

    @property
    def DYNAMIC_SHARED(self) -> bool:  # the stages always live in one dynamic array, whatever its size
        return True

    @property
    def B_BASE(self) -> int:  # where B's stages start in it
        return self.STAGES * self.A_STAGE_FLOATS

    @property
    def WARPS(self) -> int:  # warps of the consumers
        return self.THREADS // 32

    @property
    def CONSUMERS(self) -> int:  # consumer warpgroups
        return self.THREADS // 128

    def problems(self) -> list[str]:
        warpgroups = self.BLOCK_N // 64
        if (warpgroups * 64 != self.BLOCK_N or self.THREADS != 128 * warpgroups or self.BLOCK_M % 8
                or not 8 <= self.BLOCK_M <= 256 or self.BLOCK_K != 32):
            return ["needs BLOCK_N = 64 per warpgroup of 128 threads, BLOCK_M a multiple of 8 up to 256 and "
                    "BLOCK_K = 32"]
        threads = self.THREADS + self.PRODUCER_THREADS
        try:
            check_register_handoff(threads, [(self.PRODUCER_THREADS, self.PRODUCER_REGISTERS),
                                             (self.THREADS, self.CONSUMER_REGISTERS)],
                                   registers_at_entry(threads, max(1, self.MIN_BLOCKS_PER_SM)))
        except ValueError as error:
            return [str(error)]
        # Every buffer of A's small parts starts 1,024-byte aligned (the swizzle's period), like A's stages.
        if (self.SMALL_BASE * 4) % SWIZZLE_ALIGN or (self.A_STAGE_FLOATS * 4) % SWIZZLE_ALIGN:
            return ["A's small parts must start 1,024-byte aligned for the 128-byte swizzle"]
        if self.A_STAGE_FLOATS % (4 * self.PRODUCER_THREADS):
            return ["the producer's threads split A's stage in 16-byte vectors, evenly: BLOCK_M·BLOCK_K must be a "
                    "multiple of 512"]
        return []


#: This kernel's k-tiles run at about this pace of step 18's: its persistent loop alone (nothing split, the same waves)
#: ran 0.87× step 18 at 4096³ and 0.92× at 2048³ on an H200, 0.85× and 0.90× with 56 producer registers instead of 40
#: (experiments/stream_k_3xtf32.py, runs 1 and 2: the same DRAM and L2 bytes, 2.5 % more instructions, fewer issued a
#: cycle). Part of it was the fixup's flag wait, a loop whose exit differed from lane to lane: ptxas then moved every
#: wgmma descriptor through R2UR; with the warp's wait (``wait_for_flag``) the loop ran 0.905× and 0.956× (run 3).
#: The rest is not found. Step 21's persistent loop runs 1.03–1.05× step 17's.
PACE_OF_STEP_18 = 0.90
#: Where a tile has at most this many k-tiles, this kernel's loop runs whatever the waves: step 18 computes one tile a
#: block and one block an SM, so a block's start, its first copies' wait and its stores run with no other tile's
#: k-loop under them, a cost of its own a tile that the loop hides (it starts the next tile's copies while it stores).
#: Measured on an H200 (experiments/stream_k_3xtf32.py, run 4: whole and nearly whole waves, K = 64 … 4096): the
#: loop 1.27–1.42× step 18 at 2–4 k-tiles a tile, 1.08× at 8, 0.94× at 32, 0.90–0.91× at 64 and 128. Nothing was
#: measured between 8 and 32: the last k-tile count measured to gain.
SHORT_TILE_K_TILES = 8
#: … so, where tiles are longer, this kernel runs a product only where the waves it saves are worth more than that,
#: by this margin.
MIN_GAIN = 1.05


def runs_step_18(tiles: int, k_tiles: int, sms: int) -> bool:
    """Whether step 18 runs a product instead: where step 18 would split K (``split_asked``: fewer tiles than SMs and a
    long K, as step 21 leaves such products to step 17; step 18 then splits only where it pays, and at the products
    where it no longer does it ran 1.0–1.2× this kernel's speed, experiment-split-pays-nvidia-h200.json), and, where a tile has more than ``SHORT_TILE_K_TILES`` k-tiles,
    where the waves this kernel saves do not pay for its slower k-tiles — step 18's ceil(T / sms) waves over the
    T / sms this kernel computes, times ``PACE_OF_STEP_18``, under ``MIN_GAIN``: whole waves (4096³: 1024 tiles, 7.76
    waves in 8) and nearly whole ones (3000³: 4.36 in 5, where the first run measured 0.97×) run step 18; 144–169
    tiles (1.09–1.28 waves in 2) this kernel, and so does every product of short tiles (4096×8192×64: 2048 tiles of 2
    k-tiles)."""
    if warp_specialized_3xtf32.split_asked(tiles, k_tiles, sms) > 1:
        return True
    if k_tiles <= SHORT_TILE_K_TILES:
        return False
    waves = -(-tiles // sms)
    return waves * sms / tiles * PACE_OF_STEP_18 < MIN_GAIN


#: The step whose build runs the products ``FALLBACK_RULE`` names (``harness.dispatch`` judges this step only where it
#: ran the same kernel; ``scripts/profile_steps.py`` looks for either step's kernels).
FALLBACK_STEP, FALLBACK_RULE = "warp_specialized_3xtf32", runs_step_18


#: The fewest k-tiles a block's share of the stream-K k-tiles has (step 21's rule, step 21's model): handing a
#: partial tile over cost step 21 about 9 of its k-tiles (a 256×128 tile: 128 KB stored, fenced, waited for, read).
#: Here the tile is half as large (64 KB) and a k-tile about 1.6× as long (three products on half the tile, at step
#: 18's pace), so a hand-over costs about 3 k-tiles, and a share of 8 keeps it under half the share's work. A value
#: from that model, not from a sweep.
MIN_SHARE_K_TILES = 8

#: Step 18's tile: 128×128, two consumer warpgroups of 64 columns, a producer warpgroup that copies and splits.
SEARCH_SPACE = [Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one consumer warpgroup on a 32×64 tile, as steps 14–21 (a grid of 3 blocks).
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, split=stream_k_split, fallback_when=runs_step_18,
          fallback: bool = True, min_share: int = MIN_SHARE_K_TILES) -> StreamKTmaTiles:
    """The step built for a configuration (or another configuration's tiles): the full-tile build with the
    PARTIAL_TILES build beside it, each leaving to step 18's build for the same tiles (``toolkit.tuned.built``: the
    one step 18 runs, compiled once) the launches ``fallback_when`` names. ``fallback=False``: this kernel runs every
    launch; ``split``, ``min_share``: as step 21's."""
    config = Config.of(config)
    step18 = built(warp_specialized_3xtf32.build, warp_specialized_3xtf32.Config.of(config)) if fallback else None
    common = dict(edge=warpgroup_mma.build(config), requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY,
                  split=split, fallback_when=fallback_when, min_share=min_share)
    partial = StreamKTmaTiles("warp_specialized_3xtf32_stream_k_partial", warp_specialized_3xtf32_stream_k_kernel,
                              replace(config, PARTIAL_TILES=True), fallback=step18 and step18.partial, **common)
    # Where step 18 reads an unreadable B by its rows mod 4 (its B_ROWS_MOD_4 build), it runs the product whole: this
    # kernel has no such build (it would not fit its 160 lines), and step 18's build saves B's copy (4.7–5.5 µs, 15–22 %
    # of small products' time: experiments/small_copies.py).
    return StreamKTmaTiles("warp_specialized_3xtf32_stream_k", warp_specialized_3xtf32_stream_k_kernel,
                           replace(config, PARTIAL_TILES=False), partial=partial, fallback=step18,
                           b_rows=step18 and step18.b_rows, b_rows_when=step18 and step18.b_rows_when,
                           **common)


TUNING = Tuning(build, "warp_specialized_3xtf32", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show (tests/test_ptx.py): step 18's k-loop (three wgmma per k-step, one commit and
#: one wait for all, one setmaxnreg each way, the producer's tensor copies, the maps acquired at system scope, the one
#: block-wide barrier) and step 21's fixup (one ``ld.global.cg`` per accumulator), plus the specials' loads (A, B and
#: the stored result, which the compiler unrolls: at least three); no local memory.
_GPU = default_config(SEARCH_SPACE)
_PTX = {"cp.async.bulk.tensor": ">=2", "mbarrier.arrive.expect_tx": ">=1", "wgmma.mma_async.tf32": 3 * _GPU.BLOCK_K // 8,
        "wgmma.wait_group": 1, "setmaxnreg": 2, "bar.sync": 1, "fence.proxy.tensormap.acquire.sys": 2,
        "ld.global.f32": f">={_GPU.BLOCK_M // 2 + 3}", "cp.async.cg.shared.global": 0, "local": 0,
        "wgmma.written_after_fence": 0}
PTX_EXPECT = {"warp_specialized_3xtf32_stream_k_fast": _PTX, "warp_specialized_3xtf32_stream_k_partial_fast": _PTX}
#: … and ptxas, building it as numba-cuda does on a GPU (nvJitLink with LTO, sm_90a): at most 168 registers at entry,
#: no spills, no wgmma serialised.
_PTXAS = {"spill_bytes": 0, "registers": "<=168", "wgmma_serialized": 0}
PTXAS_EXPECT = {"warp_specialized_3xtf32_stream_k_fast": _PTXAS, "warp_specialized_3xtf32_stream_k_partial_fast": _PTXAS}
