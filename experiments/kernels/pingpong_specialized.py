"""Step 17 made persistent and ping-pong, with the ping-pong order as a switch (``ORDERED``): the build step 19
(gemm_steps/steps/pingpong.py) was promoted from — its ordered form is step 19's kernel — kept for the unordered
form. Each consumer warpgroup owns whole tiles, the two take a block's tiles in turn, and one stores its tile while
the other multiplies (issue: Hopper's own GEMM design, "persistent + ping-pong"; CUTLASS's sm90
``KernelTmaWarpSpecializedPingpong`` schedule).

Measured on an H100 (experiments/pingpong_bench.py, experiments/results/experiment-pingpong-nvidia-h100.json): the
ordered build well below step 17 (lesson 19 reads the ratios and says why); the unordered build's launch failed
(a consumer ran two laps of the ring ahead, where a parity wait cannot tell phases apart: the bench's docstring).
The prediction below was written before those runs; its sentence "without the order the ring already nearly imposes
it" was wrong.

Changed from ``gemm_steps/steps/warp_specialized.py`` (step 17; same producer warpgroup, ``setmaxnreg`` hand-off,
TMA ring of full/empty mbarriers, TF32 ``wgmma`` on Cᵀ with B's fragments in registers and A's swizzled tile in
shared memory), by way of experiments/kernels/persistent_specialized.py (the persistent grid):

* **A tile per consumer.** In step 17 both consumers share every 256×128 tile (each 256 rows × 64 columns, one
  m64n256k8 a k-step). Here a tile is 128×128 and belongs to one consumer: two m64n128k8 a k-step (C's columns
  0–63 and 64–127, 64 accumulators each, 128 in all, as in step 17), B's fragments for both 64-column halves (2 sets
  × 2 halves × 4 k-steps × 4 = 64 registers, against step 17's 32).
* **Persistent, tiles in turn.** One block per SM (or one per tile, if fewer) walks tiles b, b + gridDim.x, … in
  step 16's grouped order; the block's tile 2j goes to consumer 0 and tile 2j + 1 to consumer 1. The producer fills
  the one ring in the block's tile order, every k-tile of tile 0, then of tile 1, …, so k-tile u of the block's tile
  i is the ring's k-tile g = i·k_tiles + u: stage g % STAGES, parity g // STAGES % 2 (one counter over all tiles,
  as in persistent_specialized). A stage is read by one consumer only: its empty barrier counts that consumer's 4
  warps (step 17: 8).
* **Ping-pong order** (``ORDERED``, the build's switch). Before its main loop a consumer waits at named barrier
  ``ORDER_BARRIER + itself`` (``bar.sync``, 256 threads) until the other consumer has issued the last products of
  the block's previous tile (``bar.arrive``, after the loop, before its final wait) — CUTLASS's math warpgroup order
  barrier, main loops only (the store needs no order here: it goes from registers straight to global memory). Main
  loops run one after the other and each store overlaps the other consumer's main loop. Without the order the
  ring already nearly imposes it: consumer 1's first k-tile is copied only once consumer 0 has released the stage
  of its (k_tiles − STAGES)-th, so the two overlap for the last few k-tiles of a tile at most.
* **The ring**: a stage is one k-tile of one tile, A 128×32 + B 32×136 floats (33,792 bytes): 6 stages fit the
  H100/H200's 227 KB a block (step 17: 4 stages of 256×32 + 32×136).

Why it should be faster: step 17 pays per 256×128 tile, outside its k-loop, a block start (barrier init, tensor
maps, the first copy's latency: in step 17's H200 timeline, experiments/results/experiment-timeline-nvidia-h200.json,
the consumers' first k-tile lands ≈ 3,500 cycles after the block's first event) and a store of 128 values a thread
(1,024 warp stores, 128 KB of C: ≈ 1,000–2,000 cycles at 64–128 bytes a cycle; not measured), against a k-loop of
k_tiles × ≈ 1,330 cycles (the same timeline). persistent_specialized hid the start (the next tile's copies are
issued during this tile's last k-tiles); here the store and the turn from one tile's last k-tile to the next one's
first (the final wait and the first fragment loads, ≈ one k-tile) overlap the other consumer's main loop too.

Prediction, written before any run of this kernel (`experiments/pingpong_bench.py`; if the 128×128 k-loop keeps
step 17's rate per multiply-add, ≈ 665 cycles a k-tile): the store and the turn, ≈ 1,500–2,500 cycles per
256×128-equivalent tile, come off a tile of 128 k-tiles at 4096³ (≈ 170,000 cycles), 256 at 8192³ and 64 at
6144×6144×2048: pingpong ≈ persistent_specialized + 1 to 1.5 %, + 0.5 % and + 2 to 3 %. Against step 17, with
persistent_specialized's measured −2.8 / −0.7 / +0.4 % (experiments/persistent_specialized_bench.py): about −1.5 %,
0 and +2.5 % — ping-pong alone does not reach step 17 at 4096³ unless what cost the persistent build its 2.8 % goes
too. The ordered and unordered builds within 0.5 % of each other (the ring already orders the main loops, above).
What would make it miss downwards: the smaller tile moves more bytes per multiply-add — from L2 into shared memory
66 KB per 2^20 multiply-adds against step 17's 49 (+35 %; step 17's L2 was 70 % busy at 4096³ in
experiments/results/ncu-steps-17-18-nvidia-h100.txt, so ≈ 95 % at its speed), through the shared-memory pipe, by
count, 768 wavefronts against 640 (+20 %: the wgmma's reads of A and the fragment loads; step 17 measured 641 a
k-tile there, 55 % busy); only one warpgroup issues wgmma at a time, so its own fragment loads must hide behind
one k-tile of products in flight (``wait_group 1``), where step 17's two consumers cover each other's gaps; and
the ring holds 6 k-tiles of ≈ 665 cycles, ≈ 4,000 cycles of products against step 17's 4 × 1,330 ≈ 5,300, while a
copy takes ≈ 2,600–3,000 cycles from issue to landing (step 17's timeline, where the consumers already wait
≈ 240–310 cycles a k-tile for data), so the consumers may wait for data more often.

Fast kernel only: full tiles, K a multiple of 32, N of 4, 16-byte-aligned matrices; the rest runs on step 15's
edge kernel (as step 17). Compute capability 9.0 only; runs on the simulator (``setmaxnreg`` is a no-op there, the
named barriers and mbarriers have twins). A ``bar.sync`` has no time limit on a GPU (an mbarrier wait does): a
missing order arrival would hang the launch, so tests/test_pingpong.py checks the arrivals on the simulator, where
the twin times out. ptxas (nvJitLink, LTO, sm_90a): 168 registers at entry, no spills, no wgmma serialised.
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import tma_pipeline, warp_specialized, warpgroup_tf32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, named_barrier_arrive, named_barrier_sync,
                                             tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

from .persistent_specialized import PersistentTmaTiles, grouped_tile


def pingpong_specialized_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                                BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                                A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                                PRODUCER_REGISTERS, CONSUMER_REGISTERS, ORDERED, ORDER_BARRIER):
    """Tiles b, b + gridDim.x, … of C = A·B (grouped order), the block's tiles taken in turn by its CONSUMERS (2)
    warpgroups, each a whole BLOCK_M×BLOCK_N tile as Cᵀ by TF32 ``wgmma``; one warpgroup produces."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    tile_rows, tile_cols = uint32(full_row_blocks), uint32(full_col_blocks)
    tile_count = tile_rows * tile_cols
    tiles_per_group = uint32(GROUP_M) * tile_cols
    first, stride = uint32(cuda.blockIdx.x), uint32(cuda.gridDim.x)  # the block's tiles: first, first + stride, …
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per warp of the consumer that read it
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            g = uint32(0)  # k-tiles this block has produced, over all its tiles, in the block's tile order
            tile = first
            while tile < tile_count:
                tile_row, tile_col = grouped_tile(tile, tile_rows, tiles_per_group, GROUP_M)
                for t in range(k_tiles):
                    stage = g % STAGES
                    if g >= STAGES:  # the stage's (g // STAGES)-th fill: wait until the consumer's warps released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((g // STAGES - 1) % 2))
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                    copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, tile_row * BLOCK_M, t * BLOCK_K, barriers, stage)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, tile_col * BLOCK_N,
                              barriers, stage)
                    g += 1
                tile += stride
    else:  # consumer `warpgroup`: the block's tiles warpgroup, warpgroup + 2, …; waits, multiplies, releases, stores
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warp * 16 + lane // 4  # in the tile's left half; + 64: the right
        b_frag = registers(2, 2, K_STEPS, 4)  # [k-tile parity][half][k-step][element]: u loads set u % 2
        turn = warpgroup  # the block's tile number (0, 1, 2, …) this consumer takes next
        tile = first + warpgroup * stride
        while tile < tile_count:
            tile_row, tile_col = grouped_tile(tile, tile_rows, tiles_per_group, GROUP_M)
            g0 = turn * k_tiles  # the ring's k-tiles before this tile's (the producer's counter)
            left = zero_accumulators(ACCUMULATORS)  # C's columns 0–63 of the tile (rows of Cᵀ) …
            right = zero_accumulators(ACCUMULATORS)  # … and 64–127
            if ORDERED:
                if turn > 0:  # wait until the other consumer has issued the block's previous tile
                    named_barrier_sync(ORDER_BARRIER + warpgroup, 256)
            for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
                for odd in unroll(2):
                    u = pair + odd
                    if u < k_tiles:
                        g = g0 + u
                        stage = g % STAGES
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        mbarrier_wait(barriers, stage, uint32(g // STAGES % 2))  # its bytes have landed
                        for h in unroll(2):
                            for s in unroll(K_STEPS):
                                for q in unroll(4):
                                    x = tiles[stage_b + fragment_at + (h * 64 + (s * 8 + q // 2 * 4) * B_STRIDE
                                                                       + q % 2 * 8)]
                                    b_frag[odd][h][s][q] = operand_bits(to_tf32(x))
                        warpgroup_fence()
                        for s in unroll(K_STEPS):
                            a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                            left = wgmma_tf32(tiles, b_frag[odd][0][s][0], b_frag[odd][0][s][1], b_frag[odd][0][s][2],
                                              b_frag[odd][0][s][3], a_tile, left, 1)
                            right = wgmma_tf32(tiles, b_frag[odd][1][s][0], b_frag[odd][1][s][1],
                                               b_frag[odd][1][s][2], b_frag[odd][1][s][3], a_tile, right, 1)
                        warpgroup_commit()
                        left = warpgroup_wait_but_one(left)  # k-tile u − 1's wgmma are done: its stage is free
                        right = warpgroup_wait_but_one(right)
                        if u > 0 and lane == 0:
                            mbarrier_arrive(barriers, STAGES + (g - 1) % STAGES)
            if ORDERED:
                if tile + stride < tile_count:  # the block has a next tile, the other consumer's: its turn
                    named_barrier_arrive(ORDER_BARRIER + (1 - warpgroup), 256)
            left = warpgroup_wait_all(left)
            right = warpgroup_wait_all(right)
            if lane == 0:  # the tile's last k-tile is done too: release its stage
                mbarrier_arrive(barriers, STAGES + (g0 + k_tiles - 1) % STAGES)

            for v in unroll(ACCUMULATORS):  # the store: overlaps the other consumer's main loop
                row = tile_row * BLOCK_M + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = tile_col * BLOCK_N + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                c[row * n + col] = left[v]
                c[row * n + col + 64] = right[v]
            turn += 2
            tile += 2 * stride


#: The H100's and H200's shared memory a block may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin).
SHARED_BYTES_PER_BLOCK = 232_448
#: Hardware barrier 0 is cuda.syncthreads()'s; the order barriers are 1 (consumer 0 waits) and 2 (consumer 1).
ORDER_BARRIER = 1


def layout(config: TileConfig, stages: int | None = None, ordered: bool = True, group_m: int = tma_pipeline.Config.GROUP_M,
           producer_registers: int = warp_specialized.Config.PRODUCER_REGISTERS,
           consumer_registers: int = warp_specialized.Config.CONSUMER_REGISTERS) -> dict:
    """Step 17's stage shapes for a 128-column tile, a consumer's warps per empty barrier, as many stages as fit a
    block's shared memory (or ``stages``), and the ping-pong switch."""
    if config.BLOCK_N != 128 or config.THREADS != 256 or config.BLOCK_M > 128:
        raise ValueError("a consumer owns a whole tile of two 64-column halves: BLOCK_N = 128, 256 threads (two "
                         "consumer warpgroups) and BLOCK_M <= 128 (BLOCK_M accumulators a thread)")
    constants = warp_specialized.Config.of(config, GROUP_M=group_m, PRODUCER_REGISTERS=producer_registers,
                                           CONSUMER_REGISTERS=consumer_registers).check().constants()
    stage_bytes = (constants["A_STAGE_FLOATS"] + constants["B_STAGE_FLOATS"]) * 4
    fitting = (SHARED_BYTES_PER_BLOCK - constants["EXTRA_SHARED_FLOATS"] * 4) // (stage_bytes + 16)  # + 2 barriers
    stages = fitting if stages is None else stages
    if not 2 <= stages <= fitting:
        raise ValueError(f"{stages} stages: 2 to {fitting} fit a block's shared memory")
    constants.update(STAGES=stages, BARRIERS=2 * stages, WARPS=4, ORDERED=bool(ordered), ORDER_BARRIER=ORDER_BARRIER)
    return constants


#: On an H100/H200: 128×128 tiles (wgmma N = 128 rows of C, two 64-column halves), two consumers and a producer.
CONFIG = TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=1)
#: On the simulator: 32×128 tiles (wgmma N = 32), the same two halves and roles.
SIMULATOR_CONFIG = TileConfig(BLOCK_M=32, BLOCK_N=128, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: TileConfig = CONFIG, stages: int | None = None, ordered: bool = True,
          name: str | None = None) -> TmaTiles:
    name = name or ("pingpong_specialized" if ordered else "pingpong_unordered")
    return PersistentTmaTiles(name, pingpong_specialized_kernel, config, layout(config, stages, ordered),
                              edge=warpgroup_tf32.build(config), requires_compute_capability=(9, 0))


def ptx_kernels() -> dict:
    """The GPU build's fast kernel, ordered (tests/test_pingpong.py compiles it to PTX and through ptxas)."""
    built = build(CONFIG)
    return {"pingpong_specialized_fast": (built.kernel("fast"), built.signature("fast"))}


def ptx_kernels_unordered() -> dict:
    """The same without the named-barrier order (for ptxas's view of it; not in the tests)."""
    built = build(CONFIG, ordered=False)
    return {"pingpong_unordered_fast": (built.kernel("fast"), built.signature("fast"))}
