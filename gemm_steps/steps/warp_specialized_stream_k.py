"""Step 21 — stream-K on the tensor cores: step 17's k-tile on a persistent grid, the last wave shared out by k-tiles.

Changed from step 17 (same producer warpgroup, ring of full/empty mbarriers, ``setmaxnreg`` hand-off, TF32 ``wgmma``
per k-step, tiles and grouped order): the schedule — step 11's, brought to the tensor cores.

* **Waves.** Step 17 launches a block a tile, and an H100 or H200 holds one such block an SM: T tiles run in
  ceil(T / 132) waves, and where the last wave is part-empty the SMs idle — 150 tiles (1152×3840×2048) take two
  waves for 1.14 waves of work. Here the grid is one block an SM, and each block takes **work units** one after
  another (``work_unit``): first its data-parallel tiles (block, block + G, … below dp_tiles: whole k-loops), then
  its equal share [sk_begin, sk_end) of the k-tiles of the sk_tiles after them, cut where a tile ends and walked
  backwards (step 11's walk: the piece another block waits for is computed first). The producer and the consumers
  walk the same units.
* **One ring for the whole walk.** The ring's counter ``g`` counts the block's k-tiles over all its units, so the
  producer fills the next unit's first stages while the consumers finish this one (step 19's persistent ring).
* **The fixup, thread by thread.** A unit that stops before its tile's last k-tile leaves its partial sums in the
  block's workspace slot; the unit that computes the tile's last k-tile adds the slots of the lower-numbered blocks
  that share the tile, nearest first (step 11's fixed order: the same C bit for bit on every run of one grid). The
  hand-over is per consumer **thread**: each writes its 128 partial sums, fences (``threadfence``: its writes are
  visible GPU-wide before its flag) and raises its own flag; the thread of the finishing block that holds the same
  elements of C waits for that flag (its warp's 32 lanes polling together, ``wait_for_flag``: a loop with one exit
  for the warp keeps the wgmma descriptors in uniform registers), fences, reads them (``ld.global.cg``: from L2, never
  a stale L1 line) and lowers it. No barrier between threads is needed: a consumer warpgroup never waits for the other.
* **When.** ``stream_k.stream_k_split`` decides, as in step 11: where one block a tile keeps ≥ 90 % of the SMs busy,
  nothing is split and every tile is data-parallel — the persistent tile loop, which still saves each tile's start
  and lets its store overlap the next tile's first copies; otherwise whole waves stay data-parallel and the last
  part-empty wave plus one are shared out by k-tiles. Where step 17 splits K (few tiles, long K:
  ``warp_specialized.slices``) step 17 runs: its split-K was faster there (``runs_step_17``). Ragged shapes as step
  17's: the partial-tile build, A or B copied where the copy engine cannot read them, and A copied onto 128-byte rows
  where K is off them and the copy pays (``tma_tiles.aligned_a_pays``).

Deadlock-free for the reason step 11 is: a block waits only for lower-numbered blocks, whose partial sums never wait,
and the grid is sized to the blocks the GPU holds at once (it assumes no other work holds the SMs).

Why faster: every SM computes ≈ T · k-tiles / 132 k-tiles instead of ceil(T / 132) tiles' worth, plus the fixup;
where tiles fill whole waves, a tile's start and end are hidden behind the ring.
Expect: predictions/warp-specialized-stream-k-before-run.md and predictions/persistent-loop-before-run.md (each
written before its run). Measured: lesson 21 reads experiments/results/experiment-tensor-core-stream-k-*.json.

Shapes: as step 17 — the full-tile build where the tiles are whole and the copy engine can read A and B, else the
PARTIAL_TILES build (the copy engine zero-fills past A and B, the stores keep to C), after a readable copy where a row
pitch is not a multiple of 16 bytes; compute capability 9.0 only; runs on the simulator (a grid of 3 blocks).
"""

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from ..toolkit.intrinsics import divide_u32, load4_bypassing_l1, store4, wait_for_flag, wait_for_previous_grid
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait, tensor_map_acquire)
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_tiles import StreamKTmaTiles, aligned_a_pays
from ..toolkit.tuned import Tuning, built, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, check_register_handoff, fence_proxy_async, first_aligned,
                                     registers_at_entry, registers_lower_to, registers_raise_to, rounded_operand_bits,
                                     shared_address, swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                     warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32, zero_accumulators)
from . import warp_specialized, warpgroup_tf32
from .pingpong import grouped_tile, ring_place
from .stream_k import stream_k_split

TITLE = "Stream-K on the tensor cores: the last wave shared out by k-tiles"
SUMMARY = ("Step 17's k-tile on a persistent grid of one block an SM: whole waves of tiles data-parallel, the last "
           "part-empty wave split by k-tiles over every SM and fixed up through a workspace (step 11's schedule).")
ARITHMETIC = "tf32"  # step 17's
#: The step this one changes (step 11's idea, on step 17's kernel; `gemm-steps diff 17 21`).
BUILDS_ON = "warp_specialized"
#: wgmma, the copy engine's tensor copies and setmaxnreg: compute capability 9.0 only (H100, H200).
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


@cuda.jit(device=True, inline=True)
def work_unit(block, blocks, dp_done, dp_count, iteration, sk_begin, k_tiles, dp_tiles):
    """The block's next unit of work: (tile, first k-tile, k-tiles, data-parallel tiles done, stream-K iteration).
    Its data-parallel tiles first (block, block + blocks, …: whole k-loops), then the last run of k-tiles left in its
    stream-K share below ``iteration``, all within one tile (the share walked backwards)."""
    if dp_done < dp_count:
        return uint32(block + dp_done * blocks), uint32(0), k_tiles, uint32(dp_done + 1), iteration
    in_tiles = divide_u32(iteration - uint32(1), k_tiles)  # the stream-K tile that holds iteration − 1 …
    tile_start = in_tiles * k_tiles  # … and its first iteration
    first = max(sk_begin, tile_start)
    return uint32(dp_tiles + in_tiles), uint32(first - tile_start), uint32(iteration - first), dp_done, first


def warp_specialized_stream_k_kernel(a, b, c, m, n, k, tile_rows, tile_cols, a_map, b_map, workspace, flags,
                                     dp_tiles, sk_tiles, *,
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
            for v in unroll(ACCUMULATORS):
                row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                if not PARTIAL_TILES or (row < m and col < n):  # a partial tile: only what lies inside C
                    c[row * n + col] = total[v]


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 256  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 32  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 16  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    # Four k-tiles in flight: the producer runs up to STAGES k-tiles ahead of the slowest consumer, as far as the
    # ring's empty barriers let it. Four is the most that fit at these tiles: a stage is (BLOCK_M + B_STRIDE) ·
    # BLOCK_K · 4 = 50,176 bytes (STAGE_BYTES), four take 200,704, five would pass a block's 232,448.
    STAGES: int = 4
    GROUP_M: int = 8  # tile-rows per group in the tile order (1 = row-major)
    PRODUCER_THREADS: int = 128  # one producer warpgroup beside the consumers: it only issues the copies
    # Registers a thread keeps in each role after the hand-off (setmaxnreg: 24–256, multiples of 8). Three warpgroups
    # start with 65,536 / 384 → 168 each: the block's pool is 384 × 168 = 64,512, and 128 × 40 + 256 × 232 = 64,512
    # fills it exactly (setmaxnreg.inc draws from that pool, not from the SM's 65,536: asking for more hangs).
    PRODUCER_REGISTERS: int = 40
    CONSUMER_REGISTERS: int = 232
    # The build for shapes with partial tiles or a partial last k-tile (step 17's): its tiles cover every tile and its
    # units every k-tile, the copy engine filling with zeros whatever of a box lies outside A or B, and its store keeps
    # to C. build() makes it beside the full-tile build (False).
    PARTIAL_TILES: bool = False
    # How A and B become TF32 (step 23's way, 2026-11-30): the tensor maps' element type is TFLOAT32, so the copy engine
    # rounds A and B to nearest (ties to even) as it loads them, as cuBLAS TF32 reads them. With float32 maps the tensor
    # core truncates A's tile (read from shared memory): 1.6x cuBLAS's error (experiments/tf32_operand_rounding.py).
    # Measured alone on an H200: experiments/tf32_copies.py --steps 17 21. B's fragments are still rounded by their two
    # instructions (a no-op on a value already TF32); the THREAD_COPIES build and step 15's edge kernel load float32.
    TF32_COPIES: bool = True

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
        return 2 * self.STAGES  # a full and an empty barrier per stage

    @property
    def EXTRA_SHARED_FLOATS(self) -> int:  # first_aligned's slack (the swizzled stages start 1,024-byte aligned)
        return SWIZZLE_ALIGN // 4

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
        return []


def runs_step_17(tiles: int, k_tiles: int, sms: int) -> bool:
    """Whether step 17 runs a product this step would split by k-tiles: where step 17 splits K (``slices``: fewer
    tiles than SMs and a long K). Measured on an H200 (experiments/tensor_core_stream_k.py): at 1024×1024×8192 (32
    tiles of 256 k-tiles) step 17's split-K was faster — its slices sum in a second kernel, here the finishing
    block reads four partial tiles one after another at the end."""
    return warp_specialized.slices(tiles, k_tiles, sms) > 1


#: The step whose build runs the products ``FALLBACK_RULE`` names (``harness.dispatch`` judges this step only where it
#: ran the same kernel; ``scripts/profile_steps.py`` looks for either step's kernels).
FALLBACK_STEP, FALLBACK_RULE = "warp_specialized", runs_step_17


#: The fewest k-tiles a block's share of the stream-K k-tiles has: where a small product leaves no whole wave, fewer
#: blocks (but a block a tile); where whole waves run beside the split and a tile has fewer k-tiles than this, no
#: split at all (the persistent loop). Handing a partial tile over costs about as much as 9 k-tiles — on an H200
#: (experiments/stream_k_timeline.py, this kernel with records) a block stored its 128 KB of partial sums and fenced in
#: ≈ 4 µs, the finishing block waited and read them in ≈ 2–5 µs, a k-tile took ≈ 0.6–0.75 µs — so a share of 16
#: k-tiles keeps that cost under half its work. A value from that model, not from a sweep.
MIN_SHARE_K_TILES = 16

#: Step 17's tile: 256 rows (wgmma N = 256) × 2 consumer warpgroups, and a producer warpgroup.
SEARCH_SPACE = [Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one consumer warpgroup on a 32×64 tile, as steps 14–17 (a grid of 3 blocks).
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, split=stream_k_split, fallback_when=runs_step_17,
          fallback: bool = True, min_share: int = MIN_SHARE_K_TILES) -> StreamKTmaTiles:
    """The step built for a configuration (or another configuration's tiles): the full-tile build with the
    PARTIAL_TILES build beside it, each leaving to step 17's build for the same tiles (``toolkit.tuned.built``: the
    one step 17 runs, compiled once) the launches ``fallback_when`` names. ``fallback=False``: this kernel runs every
    launch (with ``no_stream_k``: the persistent tile loop alone; with ``all_stream_k``: every tile split);
    ``min_share``: the fewest k-tiles a block's share has where every tile is split."""
    config = Config.of(config)
    step17 = built(warp_specialized.build, warp_specialized.Config.of(config)) if fallback else None
    common = dict(edge=warpgroup_tf32.build(config), requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY,
                  split=split, fallback_when=fallback_when, min_share=min_share)
    partial = StreamKTmaTiles("warp_specialized_stream_k_partial", warp_specialized_stream_k_kernel,
                              replace(config, PARTIAL_TILES=True), fallback=step17 and step17.partial, **common)
    return StreamKTmaTiles("warp_specialized_stream_k", warp_specialized_stream_k_kernel,
                           replace(config, PARTIAL_TILES=False), partial=partial, fallback=step17,
                           aligned_a_when=aligned_a_pays, **common)


def all_stream_k(tiles: int, blocks: int) -> tuple[int, int]:
    """Every tile shared out by k-tiles (no data-parallel part): a split for tests and experiments."""
    return 0, tiles


def no_stream_k(tiles: int, blocks: int) -> tuple[int, int]:
    """Every tile data-parallel: the persistent tile loop alone."""
    return tiles, 0


TUNING = Tuning(build, "warp_specialized", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show (tests/test_ptx.py): step 17's k-loop (a wgmma per k-step, the waits, a TF32
#: rounding per fragment element in two instructions, one setmaxnreg each way, the maps acquired at system scope, the
#: one block-wide barrier) and the fixup's: one ``ld.global.cg`` per accumulator, the flags' atomics; no local memory.
_GPU = default_config(SEARCH_SPACE)
PTX_EXPECT = {"warp_specialized_stream_k_fast": {
    "cp.async.bulk.tensor": ">=2", "mbarrier.arrive.expect_tx": ">=1", "wgmma.mma_async.tf32": 2 * _GPU.BLOCK_K // 8,
    "wgmma.wait_group": 2 + 1, "cvt.rna.tf32.f32": 0, "setp.num.f32": 2 * 4 * _GPU.BLOCK_K // 8, "setmaxnreg": 2,
    "bar.sync": 1, "fence.proxy.tensormap.acquire.sys": 2, "ld.global.f32": _GPU.BLOCK_M // 2,
    "cp.async.cg.shared.global": 0, "fma.rn.f32": 0, "local": 0, "wgmma.written_after_fence": 0}}
#: … and ptxas, building it as numba-cuda does on a GPU (nvJitLink with LTO, sm_90a), honours the hand-off: at most
#: 168 registers at entry, no spills, no wgmma serialised.
PTXAS_EXPECT = {"warp_specialized_stream_k_fast": {"spill_bytes": 0, "registers": "<=168", "wgmma_serialized": 0}}
