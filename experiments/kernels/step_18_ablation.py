"""Step 18's kernel with parts of its work switched off, to time what each part costs: an ablation, not a GEMM — a
build with a part off computes a wrong C (the benchmark records its error), and only its time means anything.
A copy of ``gemm_steps/steps/warp_specialized_3xtf32.py``'s kernel as at e32083b; ``diff`` the two to see the three
switches (``ABLATION`` marks each):

* ``SPLIT_A`` False — the producer splits nothing: it waits for a stage's bytes and arrives on *ready* at once (no
  shared loads and stores of A's parts, no split arithmetic; the consumers read whatever the buffers hold);
* ``SPLIT_B`` False — the consumers give B's values as they are to all three products (no split arithmetic; still
  the 16 shared loads);
* ``FOLD`` False — the consumers do not add the fresh sum into ``total`` after each k-tile (no 64 ``FADD``).

All on, it is step 18's kernel (tests/test_step_18_ablation.py: the same bits on the simulator). Timed by
experiments/step_18_ablation.py.
"""

import math
from dataclasses import dataclass

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.steps import warpgroup_mma
from gemm_steps.steps.warp_specialized_3xtf32 import BIG_SCALE, UNSCALE
from gemm_steps.toolkit.intrinsics import divide_u32, load_float4, store_float4, wait_for_previous_grid
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import split_tf32_scaled
from gemm_steps.toolkit.tma_tiles import SplitKTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, add_accumulators, fence_proxy_async, first_aligned,
                                              operand_bits, registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, zero_accumulators)


def step_18_ablation_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, partials, *,
                              BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                              BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, SMALL_BASE, STAGE_BYTES,
                              GROUP_M, CONSUMERS, PRODUCER_THREADS, SPLIT_BEHIND, SPLIT_VECTORS, PRODUCER_REGISTERS,
                              CONSUMER_REGISTERS, PARTIAL_TILES, B_ROWS_MOD_4, B_LANE_PITCH, B_QUAD_PITCH, THREADS,
                              SPLIT_A, SPLIT_B, FOLD):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by 3xTF32 ``wgmma``: CONSUMERS warpgroups compute, one produces.
    PARTIAL_TILES: the build whose grid covers every tile, partial ones too; B_ROWS_MOD_4: the build that reads B by
    its rows mod 4 (see the module's docstring)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, ready[s] at STAGES + s, empty[s] at 2·STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    m, n, k = uint32(m), uint32(n), uint32(k)
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
    if PARTIAL_TILES:  # every k-tile, the last one partial: A's columns and B's rows past K arrive as zeros
        all_k_tiles = (k + uint32(BLOCK_K - 1)) // BLOCK_K
    else:
        all_k_tiles = k // BLOCK_K
    # Split-K: slice z of the launch's gridDim.z takes k-tiles k_first … k_first + k_tiles − 1 (one slice: all).
    slices, z = uint32(cuda.gridDim.z), uint32(cuda.blockIdx.z)
    per_slice = divide_u32(all_k_tiles + slices - 1, slices)
    k_first = z * per_slice
    k_tiles = min(per_slice, all_k_tiles - k_first)  # the launch makes no empty slice
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, PRODUCER_THREADS)  # ready: every producer thread split its share
            mbarrier_init(barriers, 2 * STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        for r in unroll(4 if B_ROWS_MOD_4 else 1):  # B_ROWS_MOD_4: four maps of B, 16 words apart
            tensor_map_acquire(b_map[r * 16:])
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier before the end
    wait_for_previous_grid()  # launched early after a readable copy (PDL): its A and B are written now
    special = 0  # did this thread store an inf or NaN?

    if warpgroup == CONSUMERS:  # the producer warpgroup: one thread copies, all 128 split A
        registers_lower_to(PRODUCER_REGISTERS)
        p = tid - CONSUMERS * 128
        for t in range(k_tiles + SPLIT_BEHIND):
            u = t - SPLIT_BEHIND  # split k-tile u, SPLIT_BEHIND behind the copies …
            if u >= 0:
                stage = u % STAGES
                mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
                for e in unroll(SPLIT_VECTORS if SPLIT_A else 0):  # ABLATION: SPLIT_A False splits nothing
                    at = stage * A_STAGE_FLOATS + (e * PRODUCER_THREADS + p) * 4
                    x = load_float4(tiles, at)
                    big, small = registers(4), registers(4)
                    for q in unroll(4):
                        big[q], small[q] = split_tf32_scaled(x[q])  # big rounded to TF32, small·2^11
                    store_float4(tiles, at, big[0], big[1], big[2], big[3])  # over the stage (the swizzle moves
                    store_float4(tiles, SMALL_BASE + at, small[0], small[1], small[2], small[3])  # 16-byte chunks)
                fence_proxy_async()  # these writes → visible to the tensor core's reads
                mbarrier_arrive(barriers, STAGES + stage)
            if p == 0 and t < k_tiles:  # … then copy k-tile t once its stage is empty
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, 2 * STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                k_at = (k_first + t) * BLOCK_K
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, k_at, barriers, stage)
                if B_ROWS_MOD_4:  # B's rows k ≡ r (mod 4) through map r, into block r of the stage: rows k // 4
                    for r in unroll(4):  # (map r starts (r · N) % 4 floats before its row: its boxes land so far on)
                        copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS + r * B_LANE_PITCH, b_map[r * 16:],
                                  k_at // 4, block_col, barriers, stage)
                else:
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, block_col, barriers, stage)
    else:  # a consumer warpgroup: waits for split stages, multiplies, releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_LANE_PITCH + warpgroup * 64 + warp * 16 + lane // 4  # B's k-row lane % 4 …
        if B_ROWS_MOD_4:  # … whose block begins (r · N) % 4 floats early: a box starts on 16 bytes or not at all
            fragment_at += (lane % 4) * n % 4
        total = zero_accumulators(ACCUMULATORS)  # 2^11 × the running sum of C: rounded float32 adds only
        fresh = zero_accumulators(ACCUMULATORS)  # 2^11 × one k-tile's products (the tensor core's sum)
        b_big, b_small, b_big_scaled = registers(K_STEPS, 4), registers(K_STEPS, 4), registers(K_STEPS, 4)
        for u in range(k_tiles):
            stage = u % STAGES
            stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
            mbarrier_wait(barriers, STAGES + stage, uint32(u // STAGES % 2))  # A split, B landed
            for s in unroll(K_STEPS):  # Bᵀ's fragments of the k-tile: big, small·2^11, and big·2^11 for big·big
                for q in unroll(4):
                    x = tiles[stage_b + fragment_at + ((s * 2 + q // 2) * B_QUAD_PITCH + q % 2 * 8)]
                    if SPLIT_B:
                        x_big, x_small = split_tf32_scaled(x)
                        b_big[s][q] = operand_bits(x_big)
                        b_small[s][q] = operand_bits(x_small)
                        b_big_scaled[s][q] = operand_bits(x_big * BIG_SCALE)
                    else:  # ABLATION: B as it is, for all three products (no split: a wrong C)
                        b_big[s][q] = b_small[s][q] = b_big_scaled[s][q] = operand_bits(x)
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
            if FOLD:
                total = add_accumulators(total, fresh)
            else:  # ABLATION: no add into the total (the last k-tile's products are stored: a wrong C)
                total = fresh
            if lane == 0:
                mbarrier_arrive(barriers, 2 * STAGES + stage)  # the stage is empty (an arrival a warp)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            if not PARTIAL_TILES or (row < m and col < n):  # a partial tile keeps to C (outside it 0·inf is NaN)
                value = total[v] * UNSCALE
                if slices == 1:
                    c[row * n + col] = value
                else:  # this slice's part of the sum, for add_slices_kernel
                    partials[z * m * n + row * n + col] = value
                if not math.isfinite(value):
                    special = 1

    # Specials (step 14's rule): an inf or NaN in A or B, or a sum past float32's range (here: past 2^-11 of it),
    # leaves an inf or NaN in the tile; then the consumers compute the tile again as cuBLAS SGEMM does, one float32
    # FMA per k in order, which gives exactly SGEMM's inf/NaN pattern (docs/fp32_contract.md).
    if cuda.syncthreads_or(special) and warpgroup < CONSUMERS:
        for slot in range(ACCUMULATORS):  # this thread's results, numbered as the store above
            row = block_row + lane % 4 * 2 + (slot // 4 * 8 + slot % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (slot % 4 // 2 * 8)
            if PARTIAL_TILES and (row >= m or col >= n):
                continue
            value = float32(0.0)
            for kk in range(k_first * BLOCK_K, min((k_first + k_tiles) * BLOCK_K, k)):  # this slice's k
                value = cuda.fma(a[row * k + kk], b[kk * n + col], value)
            if slices == 1:
                c[row * n + col] = value
            else:
                partials[z * m * n + row * n + col] = value


@dataclass(frozen=True)
class Config(step18.Config):
    """Step 18's configuration with the three switches (all on: step 18)."""

    SPLIT_A: bool = True
    SPLIT_B: bool = True
    FOLD: bool = True


def build(config: Config, name: str = "step_18_ablation") -> SplitKTmaTiles:
    """The kernel built for whole tiles (no partial-tile or B-by-rows build), one slice of K, step 14's edge kernel."""
    return SplitKTmaTiles(name, step_18_ablation_kernel, config, edge=warpgroup_mma.build(config),
                          requires_compute_capability=step18.REQUIRES_COMPUTE_CAPABILITY, slices=lambda *_: 1,
                          reduce=step18.add_slices_kernel)
