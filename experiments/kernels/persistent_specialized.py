"""Step 17 made persistent: one block per SM walks tiles b, b + gridDim.x, … in grouped order, and the ring of
stages runs on from one tile into the next, so the producer fills the next tile's first stages while the consumers
finish this tile and store it (issue: Hopper's own GEMM design, "persistent + ping-pong": this is the persistent
half; the consumers still share every tile).

Changed from ``gemm_steps/steps/warp_specialized.py``: the tile loop around both roles, one counter of k-tiles over
all of a block's tiles for the ring's stages and phases (stage g % STAGES, parity g // STAGES % 2), and the release
of each tile's last stage after its final wait. Measured by experiments/persistent_specialized_bench.py.
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized, warpgroup_tf32
from gemm_steps.steps.pingpong import grouped_tile  # step 19 took it from here
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import PersistentTmaTiles, TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)


def persistent_specialized_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                           BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                           A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                           PRODUCER_REGISTERS, CONSUMER_REGISTERS):
    """Tiles b, b + gridDim.x, … of C = A·B (grouped order): CONSUMERS warpgroups compute, one produces."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    tile_rows, tile_cols = uint32(full_row_blocks), uint32(full_col_blocks)
    tiles_per_group = uint32(GROUP_M) * tile_cols
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            g = uint32(0)  # k-tiles this block has produced, over all its tiles: the ring runs on across tiles
            for tile in range(uint32(cuda.blockIdx.x), tile_rows * tile_cols, uint32(cuda.gridDim.x)):
                tile_row, tile_col = grouped_tile(uint32(tile), tile_rows, tiles_per_group, GROUP_M)
                for t in range(k_tiles):
                    stage = g % STAGES
                    if g >= STAGES:  # the stage's (g // STAGES)-th fill: wait until every consumer warp released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((g // STAGES - 1) % 2))
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                    copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, tile_row * BLOCK_M, t * BLOCK_K, barriers, stage)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, tile_col * BLOCK_N,
                              barriers, stage)
                    g += 1
    else:  # a consumer warpgroup: takes the registers; only waits for data, multiplies and releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        g0 = uint32(0)  # the block's k-tiles before this tile's (the ring's counter, as the producer's)
        for tile in range(uint32(cuda.blockIdx.x), tile_rows * tile_cols, uint32(cuda.gridDim.x)):
            tile_row, tile_col = grouped_tile(uint32(tile), tile_rows, tiles_per_group, GROUP_M)
            block_row, block_col = tile_row * BLOCK_M, tile_col * BLOCK_N
            acc = zero_accumulators(ACCUMULATORS)
            for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
                for half in unroll(2):
                    u = pair + half
                    if u < k_tiles:
                        g = g0 + u
                        stage = g % STAGES
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        mbarrier_wait(barriers, stage, uint32(g // STAGES % 2))  # its bytes have landed
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
                        acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                        if u > 0 and lane == 0:
                            mbarrier_arrive(barriers, STAGES + (g - 1) % STAGES)
            acc = warpgroup_wait_all(acc)
            if lane == 0:  # the tile's last k-tile is done too: release its stage (the producer fills the next)
                mbarrier_arrive(barriers, STAGES + (g0 + k_tiles - 1) % STAGES)
            g0 += k_tiles

            for v in unroll(ACCUMULATORS):
                row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                c[row * n + col] = acc[v]


CONFIG = warp_specialized.SEARCH_SPACE[0]
SIMULATOR_CONFIG = warp_specialized.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG) -> TmaTiles:
    return PersistentTmaTiles("persistent_specialized", persistent_specialized_kernel, config,
                              warp_specialized.Config.of(config).check().constants(), edge=warpgroup_tf32.build(config),
                              requires_compute_capability=(9, 0))


def ptx_kernels() -> dict:
    built = build(CONFIG)
    return {"persistent_specialized_fast": (built.kernel("fast"), built.signature("fast"))}
