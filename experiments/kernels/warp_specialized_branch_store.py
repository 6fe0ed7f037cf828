"""Step 17 with split-K's store as it was first written: a branch between two stores.

The one change from step 17 (``gemm_steps/steps/warp_specialized.py``; ``diff`` the two kernels) is the end of a
consumer warpgroup: where step 17 picks the array its results go to once (``out = c if slices == 1 else partials``)
and stores each accumulator once, this kernel branches on ``slices == 1`` at every accumulator between a store to C
and a store to the workspace — the first version of step 17's split-K (4cb6c67). ptxas gives it 256 ``st.global.f32``
where step 17 has 128 generic ``st.f32``. On an H200 it ran 350.7 TFLOPS at 4096³ where step 17 before split-K ran
370.8 (same run; devrun A/B of 2026-11-28, repeated in experiments/split_k_tf32.py). Timed by
experiments/split_k_tf32.py; built with step 17's configuration, policy and reduction (:func:`build`).
"""

from __future__ import annotations

from dataclasses import replace

from numba import cuda, float32, uint32, uint64

from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tma_tiles import SplitKTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)
from gemm_steps.steps import warp_specialized, warpgroup_tf32


def warp_specialized_branch_store_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map,
                                         partials, *, BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS,
                                         STAGES, WARPS, BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES,
                                         GROUP_M, CONSUMERS, PRODUCER_REGISTERS, CONSUMER_REGISTERS, PARTIAL_TILES):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``: CONSUMERS warpgroups compute, one produces.
    PARTIAL_TILES: the build whose grid covers every tile, partial ones too; ``partials``: split-K's workspace (see
    the module's docstring)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    # Block b takes tile b in grouped order: column by column within groups of GROUP_M tile-rows.
    tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
    tile = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = across * BLOCK_N  # …then on to the next column
    if PARTIAL_TILES:  # every k-tile, the last one partial: A's columns and B's rows past K arrive as zeros
        all_k_tiles = (k + uint32(BLOCK_K - 1)) // BLOCK_K
    else:
        all_k_tiles = k // BLOCK_K
    # Split-K: slice z of the launch's gridDim.z takes k-tiles k_first … k_first + k_tiles − 1 (one slice: all).
    slices, z = uint32(cuda.gridDim.z), uint32(cuda.blockIdx.z)
    per_slice = divide_u32(all_k_tiles + slices - 1, slices)
    k_first = z * per_slice
    k_tiles = min(per_slice, all_k_tiles - k_first)  # the launch makes no empty slice (SplitKTmaTiles.slice_count)
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
            for t in range(k_tiles):
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                k_at = (k_first + t) * BLOCK_K
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, k_at, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, block_col, barriers, stage)
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
                    mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
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
                        mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
        acc = warpgroup_wait_all(acc)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            if not PARTIAL_TILES or (row < m and col < n):  # a partial tile: only what lies inside C
                if slices == 1:  # THE CHANGE: a branch between two stores, where step 17 picks the array once
                    c[row * n + col] = acc[v]
                else:
                    partials[z * m * n + row * n + col] = acc[v]


def build(config):
    """The variant built as step 17 is (``warp_specialized.build``): a full-tile and a partial build, both splitting K
    by step 17's policy, step 15's edge kernel."""
    config = warp_specialized.Config.of(config)
    edge = warpgroup_tf32.build(config)
    common = dict(edge=edge, requires_compute_capability=warp_specialized.REQUIRES_COMPUTE_CAPABILITY,
                  slices=warp_specialized.slices, reduce=warp_specialized.add_slices_kernel)
    partial = SplitKTmaTiles("warp_specialized_branch_store_partial", warp_specialized_branch_store_kernel,
                             replace(config, PARTIAL_TILES=True), **common)
    return SplitKTmaTiles("warp_specialized_branch_store", warp_specialized_branch_store_kernel,
                          replace(config, PARTIAL_TILES=False), partial=partial, **common)
