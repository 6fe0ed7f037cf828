"""The TMA build with the tensor cores never drained: each warpgroup keeps one k-tile of ``wgmma`` in flight while
it loads the next k-tile's fragments into a second set of registers. A candidate step (issue: Hopper's own GEMM
design), measured by experiments/warpgroup_tma_bench.py.

Changed from experiments/kernels/warpgroup_tma.py: the consumers' part of the loop.

* There (as in steps 14–15), each k-tile starts with ``warpgroup_wait_all``: the previous k-tile's ``wgmma`` must
  finish before the fragment registers they read can be loaded again, so every k-tile the warpgroup's products run
  dry while it loads 16 values from shared memory, rounds them and fences.
* Here the fragments alternate between two register sets, ``b_frag[0]`` and ``b_frag[1]``: k-tile u loads set
  u % 2 while k-tile u − 1's ``wgmma`` (reading the other set) still run, issues its products, and only then waits —
  with ``warpgroup_wait_but_one``, for all groups but the newest: k-tile u − 1's are done, so its stage is released
  and its register set is free for k-tile u + 1. The set must be known when the kernel is compiled (a register tile
  takes compile-time indices only), so the loop takes two turns a pass, ``for half in unroll(2)``; with LOAD_AHEAD
  = 2 (even), k-tile u = t − 2 has the parity of turn t.

This is the register hazard steps 14–15 avoid by waiting (lesson 14): with ``wait_group 1`` and *one* set of
registers the next loads would overwrite registers an in-flight ``wgmma`` reads, which the PTX ISA forbids; two sets
make the overlap legal, for 16 more registers a thread (186, no spills, nvJitLink 13.5). Fast kernel only (full
tiles); the edge kernel is step 15's.

Measured (H100, experiments/results/experiment-warpgroup-overlap-nvidia-h100.json, one run with step 15, the other
builds and both cuBLAS): 323.4 / 294.8 TFLOPS at 4096³ / 8192³ against step 15's 299.5 / 268.5 (1.08× / 1.10×) and
the TMA build's 314.6 / 283.7; 86 % / 77 % of cuBLAS TF32's 377.3 / 382.9. Same relative error as step 15
(4.9e-4 / 4.8e-4).
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tiles import TileConfig
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              shared_address, swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

from . import warpgroup_tma


def warpgroup_overlap_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                             BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, LOAD_AHEAD, WARPS,
                             BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``, one k-tile of products always in flight."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    # Block b of the grid takes tile b in step 10's grouped order: column by column within groups of GROUP_M
    # tile-rows, so the blocks resident together share rows of A and columns of B in L2 (GROUP_M = 1: row-major).
    tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
    tile = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row (tile // tiles_per_group)
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = across * BLOCK_N  # …then on to the next column
    base = shared_address(tiles, 0)
    fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
    acc = zero_accumulators(ACCUMULATORS)
    b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    for pair in range(0, k_tiles + LOAD_AHEAD, 2):  # two turns a pass: the register set is known when compiling
        for half in unroll(2):
            t = pair + half
            if tid == 0 and t < k_tiles:  # thread 0 produces: k-tile t into stage t % STAGES
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every warp released the last one
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
            if t >= LOAD_AHEAD and t < k_tiles + LOAD_AHEAD:  # every warp computes k-tile u, with set u % 2 = half
                u = t - LOAD_AHEAD
                stage = u % STAGES
                stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
                for s in unroll(K_STEPS):  # k-tile u − 1's wgmma may still run: they read the other set
                    for q in unroll(4):
                        x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                        b_frag[half][s][q] = operand_bits(to_tf32(x))
                warpgroup_fence()
                for s in unroll(K_STEPS):
                    a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                    acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                     b_frag[half][s][3], a_tile, acc, 1)
                warpgroup_commit()
                acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage and registers are free
                if u > 0 and lane == 0:
                    mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
    acc = warpgroup_wait_all(acc)

    for v in unroll(ACCUMULATORS):
        row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
        col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        c[row * n + col] = acc[v]


def layout(config: TileConfig, group_m: int = 1) -> dict:
    """The TMA build's stages and barriers (LOAD_AHEAD even: the turn's parity is the k-tile's); tile-rows per group
    of the tile order."""
    constants = {**warpgroup_tma.layout(config), "GROUP_M": group_m}
    if constants["LOAD_AHEAD"] % 2:
        raise ValueError("the register set of k-tile t − LOAD_AHEAD is t's parity only if LOAD_AHEAD is even")
    return constants


CONFIG = warpgroup_tma.CONFIG
SIMULATOR_CONFIG = warpgroup_tma.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG, group_m: int = 1) -> warpgroup_tma.TmaTiles:
    from gemm_steps.steps import warpgroup_tf32

    return warpgroup_tma.TmaTiles("warpgroup_overlap", warpgroup_overlap_kernel, config, layout(config, group_m),
                                  edge=warpgroup_tf32.build(config),
                                  requires_compute_capability=warpgroup_tma.REQUIRES_COMPUTE_CAPABILITY)


def ptx_kernels() -> dict:
    """The fast kernel at the GPU's tiles (a ``kernels:`` job of tests/ptx_jobs.py)."""
    built = build(CONFIG)
    return {"warpgroup_overlap_fast": (built.kernel("fast"), built.signature("fast"))}


__all__ = ["build", "CONFIG", "SIMULATOR_CONFIG", "ptx_kernels"]
