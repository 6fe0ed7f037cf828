"""Step 17 on step 11's schedule: the warp-specialized TF32 kernel, persistent and stream-K (issue 37, Deliver 3:
wave quantization on the tensor cores).

Changed from step 17 (``diff gemm_steps/steps/warp_specialized.py experiments/kernels/warp_specialized_stream_k.py``):
the schedule, nothing of a k-tile's work. The producer warpgroup, the ring of full/empty mbarriers, the register
hand-off, the B fragments rounded to TF32 and the ``wgmma`` per k-step are step 17's, line for line; around them:

* the grid is one block per SM (132 on an H100 or H200), not one block per tile (step 19's persistent grid);
* each block takes its **work units** one after another: first its data-parallel tiles (block, block + G, … below
  dp_tiles, whole k-loops), then its equal share [sk_begin, sk_end) of the k-tiles of the sk_tiles after them, cut
  where a tile ends and walked backwards (step 11's walk: the piece another block waits for is computed first);
  ``work_unit`` says which tile and which k-tiles a unit is, and the producer and the consumers walk the same units;
* the ring runs on from one unit into the next (one counter ``g`` of k-tiles for the block's whole walk), so the
  producer fills the next unit's first stages while the consumers finish this one;
* a unit that stops before its tile's last k-tile leaves its partial sums in the block's workspace slot, and the
  unit that computes the tile's last k-tile adds the slots of the blocks before it that share the tile, nearest
  first (step 11's fixed order: the same C bit for bit on every run of one grid). The hand-over is per consumer
  **thread**: each writes its 128 partial sums, fences and raises its own flag; the thread of the finishing block
  that holds the same elements waits for that flag, fences, reads them and lowers it. No barrier between threads is
  needed, and a consumer warpgroup never waits for the other.

The split is step 11's (``steps.stream_k.stream_k_split``): where one block per tile keeps ≥ 90 % of the SMs busy,
:func:`build` runs step 17 itself (``fallback``); otherwise whole waves stay data-parallel and the last part-empty
wave plus one full wave are shared out by k-tiles. Deadlock-free for the reason step 11 is: a block waits only for
lower-numbered blocks, whose partial sums never wait, and the grid is sized to the blocks the GPU holds at once.

Why faster: step 17 runs ceil(T / 132) waves of its T tiles; 150 tiles (1152×3840×2048) take two waves for 1.14
waves of work. Here every SM computes ≈ T · k-tiles / 132 k-tiles, plus the fixup.
Expect: predictions/warp-specialized-stream-k-before-run.md (written before the first GPU run).
Shapes: as step 17 — the full-tile build where the tiles are whole and the copy engine can read A and B, else the
PARTIAL_TILES build (the copy engine zero-fills past A and B, the stores keep to C), after a readable copy where a row
pitch is not a multiple of 16 bytes. Measured by experiments/tensor_core_stream_k.py.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized, warpgroup_tf32
from gemm_steps.steps.pingpong import grouped_tile, ring_place
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.toolkit.intrinsics import divide_u32, load4_bypassing_l1, store4, wait_for_previous_grid
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, registers_lower_to,
                                              registers_raise_to, rounded_operand_bits, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)
from gemm_steps.toolkit.workspaces import Workspaces

ARITHMETIC = "tf32"  # step 17's


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
                        while cuda.atomic.add(flags, flag, 0) == 0:
                            pass  # spin: that block never waits on us
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


class StreamKTmaTiles(TmaTiles):
    """A TMA build whose fast kernel runs step 11's schedule on a persistent grid: ``split(tiles, blocks)`` gives
    (data-parallel, stream-K) tiles; where it gives no stream-K tiles and there is a ``fallback`` build (step 17's),
    that runs instead. The partial sums' workspace (a tile a block) and the flags (one a consumer thread) are kept per
    stream; every launch leaves the flags at 0."""

    schedule = "stream-K"
    signature_fast = TmaTiles.signature_fast[:-1] + ", float32[::1], int32[::1], uint32, uint32)"

    def __init__(self, *args, split=stream_k_split, fallback: TmaTiles | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.split = split
        self.fallback = fallback
        self._stream_k = Workspaces()

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        tiles = full_rows * full_cols
        blocks = self.resident_blocks("fast")
        data_parallel, stream_k = self.split(tiles, blocks)
        if stream_k == 0 and self.fallback is not None:
            self.fallback.launch_full_tiles(flat, sizes, full_rows, full_cols, stream, matrices, launches)
            return
        if stream_k == 0:  # all data-parallel: no more blocks than tiles
            blocks = min(blocks, tiles)
        threads = self.config.THREADS
        workspace, flags = self._stream_k.get(blocks, stream, lambda: (
            cuda.device_array(blocks * self.config.BLOCK_M * self.config.BLOCK_N, dtype=np.float32, stream=stream),
            cuda.to_device(np.zeros(blocks * threads, dtype=np.int32), stream=stream)))
        self.configured("fast", blocks, stream, launches)(*flat, *sizes, *self.tensor_maps(*matrices), workspace,
                                                          flags, np.uint32(data_parallel), np.uint32(stream_k))


CONFIG = warp_specialized.SEARCH_SPACE[0]
SIMULATOR_CONFIG = warp_specialized.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG, split=stream_k_split, fallback: bool = True) -> StreamKTmaTiles:
    """Step 17's kernel on step 11's schedule, for step 17's tiles (or another configuration's): the full-tile build
    with the PARTIAL_TILES build beside it, both falling back to step 17 (as built by ``warp_specialized.build``)
    where ``split`` leaves nothing to stream-K — unless ``fallback`` is False (the persistent loop runs then)."""
    config = warp_specialized.Config.of(config)
    step17 = warp_specialized.build(config) if fallback else None
    common = dict(edge=warpgroup_tf32.build(config), requires_compute_capability=(9, 0), split=split)
    partial = StreamKTmaTiles("warp_specialized_stream_k_partial", warp_specialized_stream_k_kernel,
                              replace(config, PARTIAL_TILES=True),
                              fallback=step17.partial if step17 is not None else None, **common)
    return StreamKTmaTiles("warp_specialized_stream_k", warp_specialized_stream_k_kernel,
                           replace(config, PARTIAL_TILES=False), partial=partial, fallback=step17, **common)


def all_stream_k(tiles: int, blocks: int) -> tuple[int, int]:
    """Every tile shared out by k-tiles (no data-parallel part): a split for tests and experiments."""
    return 0, tiles


def no_stream_k(tiles: int, blocks: int) -> tuple[int, int]:
    """Every tile data-parallel: the persistent tile loop alone."""
    return tiles, 0


def ptx_kernels() -> dict:
    built = build(CONFIG, fallback=False)
    return {"warp_specialized_stream_k_fast": (built.kernel("fast"), built.signature("fast"))}
