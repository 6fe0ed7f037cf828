"""Step 17's kernel with three switches, each one change to the instructions of its consumers' k-loop (issue 36,
Deliver 5: "explain the difference from the kernel (instructions per FLOP)"; the reference, results/reference-
nvidia-h200-2026-11-28.json, ran 1.66× fewer warp instructions than step 17 for the same HGMMAs and LDSs).

All three off, this is step 17 as it was at b8f1457 (``gemm_steps/steps/warp_specialized.py``); all three on, it is
the step as shipped after them. Read with ptxas 13.0 and cuobjdump 13.5 on a CPU (sm_90a; not the GPU's own
nvJitLink), the SASS of the consumers' loop (one pass: two k-tiles, the mbarrier timeout path left out) has 320
instructions with all off — 96 of them round the 32 B-fragment elements, 136 are uniform-datapath integer work:

* ``RING_32``: the k-loop ran over Python ints, so ``u % STAGES`` and ``u // STAGES % 2`` were Numba's signed 64-bit
  operations with Python's floor semantics, about 20 uniform instructions each, every k-tile. In 32-bit unsigned
  arithmetic (STAGES a power of two) they are an AND and a shift: 277 instructions (81 uniform).
* ``STAGE_DESCRIPTOR``: the A tile's 64-bit shared-memory descriptor was built from its address for each of the
  four k-steps (mask, shift, or, two moves); built once per stage, a k-step adds its 32 bytes (2 in the descriptor's
  16-byte units, one ``UIADD3.64``): 246 (49 uniform).
* ``ROUNDING_2``: ``cvt.rna.tf32.f32`` became three SASS instructions an element (a NaN test, the add, the AND that
  clears the 13 bits the tensor core drops). ``rounded_operand_bits`` adds half a TF32 unit unless x is NaN and
  leaves the low bits: two instructions, and the tensor core reads the same TF32 value: 215.

Step 17's own kernel has 326 instructions in that loop at b8f1457 and 216 as shipped: the switches' branches move
ptxas's choices a little. Timed by experiments/loop_instructions.py, built as step 17 is (:func:`build`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized, warpgroup_tf32
from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tma_tiles import SplitKTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, rounded_operand_bits,
                                              shared_address, swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)


def loop_instructions_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, partials, *,
                           BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                           A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                           PRODUCER_REGISTERS, CONSUMER_REGISTERS, PARTIAL_TILES, RING_32, STAGE_DESCRIPTOR,
                           ROUNDING_2):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``: CONSUMERS warpgroups compute, one produces.
    PARTIAL_TILES: the build whose grid covers every tile, partial ones too; ``partials``: split-K's workspace.
    RING_32, STAGE_DESCRIPTOR, ROUNDING_2: the three changes (the module's docstring); all False: step 17 at b8f1457."""
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
        if RING_32:  # CHANGE 1: the ring's k-tile number, stage and phase in 32-bit unsigned arithmetic
            first, step = uint32(0), uint32(2)
        else:  # before: Python ints, so Numba's signed 64-bit % and // (floor semantics) every k-tile
            first, step = 0, 2
        for pair in range(first, k_tiles, step):  # two k-tiles a pass: the register set is known when compiling
            for half in unroll(2):
                if RING_32:
                    u = uint32(pair + half)
                    stage = u % uint32(STAGES)
                    phase = u // uint32(STAGES) % uint32(2)
                else:
                    u = pair + half
                    stage = u % STAGES
                    phase = u // STAGES % 2
                if u < k_tiles:
                    stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                    mbarrier_wait(barriers, stage, uint32(phase))  # its bytes have landed
                    for s in unroll(K_STEPS):
                        for q in unroll(4):
                            x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                            if ROUNDING_2:  # CHANGE 3: half a TF32 unit added unless NaN, the rest dropped later
                                b_frag[half][s][q] = rounded_operand_bits(x)
                            else:  # before: cvt.rna.tf32.f32 (three SASS instructions here), then the bits
                                b_frag[half][s][q] = operand_bits(to_tf32(x))
                    warpgroup_fence()
                    if STAGE_DESCRIPTOR:  # CHANGE 2: the stage's descriptor once, a k-step's 32 bytes added to it
                        a_stage = swizzled_descriptor(uint32(base + stage * uint32(A_STAGE_FLOATS * 4)))
                    for s in unroll(K_STEPS):
                        if STAGE_DESCRIPTOR:
                            a_tile = a_stage + uint64(s * 2)
                        else:  # before: the whole descriptor built again for every k-step
                            a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                        acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                         b_frag[half][s][3], a_tile, acc, 1)
                    warpgroup_commit()
                    acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                    if u > 0 and lane == 0:
                        if RING_32:
                            mbarrier_arrive(barriers, uint32(STAGES) + (u - uint32(1)) % uint32(STAGES))
                        else:
                            mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
        acc = warpgroup_wait_all(acc)

        out = c if slices == 1 else partials  # one slice: C; else this slice's part of the sum (add_slices_kernel)
        at = z * m * n  # where the slice's part starts (0 for C)
        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            if not PARTIAL_TILES or (row < m and col < n):  # a partial tile: only what lies inside C
                out[at + row * n + col] = acc[v]


@dataclass(frozen=True)
class Config(warp_specialized.Config):
    """Step 17's configuration and the three switches (all off: step 17 at b8f1457)."""

    RING_32: bool = False
    STAGE_DESCRIPTOR: bool = False
    ROUNDING_2: bool = False


#: The builds the experiment times, each one change more than the one before it.
SWITCHES = {"before": {}, "ring_32": {"RING_32": True},
            "stage_descriptor": {"RING_32": True, "STAGE_DESCRIPTOR": True},
            "rounding_2": {"RING_32": True, "STAGE_DESCRIPTOR": True, "ROUNDING_2": True}}


def build(config, **switches):
    """Built as step 17 is (``warp_specialized.build``): a full-tile and a partial build, both splitting K by step
    17's policy, step 15's edge kernel; ``switches``: RING_32, STAGE_DESCRIPTOR, ROUNDING_2."""
    config = Config.of(config, **switches)
    edge = warpgroup_tf32.build(config)
    name = "loop_instructions_" + ("_".join(key.lower() for key, on in sorted(switches.items()) if on) or "before")
    common = dict(edge=edge, requires_compute_capability=warp_specialized.REQUIRES_COMPUTE_CAPABILITY,
                  slices=warp_specialized.slices, reduce=warp_specialized.add_slices_kernel)
    partial = SplitKTmaTiles(name + "_partial", loop_instructions_kernel, replace(config, PARTIAL_TILES=True),
                             **common)
    return SplitKTmaTiles(name, loop_instructions_kernel, replace(config, PARTIAL_TILES=False), partial=partial,
                          **common)
