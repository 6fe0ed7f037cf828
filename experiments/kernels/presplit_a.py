"""Step 18 with A split once, before the product, instead of by the producer warpgroup in every block (PRESPLIT):
an experiment of experiments/presplit_a.py (issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM).

experiments/step_18_ablation.py found the producer's split of A the most expensive part of step 18's work (taking
it away, with a wrong C, ran 1.17× at 4096³). Every block of a tile-row splits the same A, N / 128 times over. Here a
first kernel, :func:`split_a_kernel`, splits A once into a 2M × K matrix — rows 0 … M − 1 A's big parts (rounded to
TF32), rows M … 2M − 1 its small parts·2^11, :func:`~gemm_steps.toolkit.tensor_core_ops.split_tf32_scaled`'s, as
step 18's producer computes them — and the product's kernel, :func:`presplit_a_kernel`, is step 18's (as at
e32083b) with its producer reduced to step 17's: one thread copies each k-tile's A big parts, A small parts (one map,
over the split A, rows M + block_row for the small ones) and B, the consumers wait for the stage's *full* barrier
instead of its *ready* one. The consumers are step 18's. The same values reach the tensor core, so the same bits
(tests/test_presplit_a.py). ``diff`` this kernel against step 18's to see the change (``PRESPLIT`` marks it). Costs:
2·M·K floats of workspace and one more pass over A (read M·K, write 2·M·K), and a k-tile's copies bring 49 KB instead
of 33.
"""

import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, uint32, uint64

import gemm_steps

from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.steps import warpgroup_mma
from gemm_steps.steps.warp_specialized_3xtf32 import BIG_SCALE, UNSCALE
from gemm_steps.toolkit.intrinsics import (divide_u32, let_next_grid_start, load_float4, store_float4,
                                           wait_for_previous_grid)
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN, ceil_div, kernel
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import split_tf32_scaled
from gemm_steps.toolkit.tiles import flat_operands
from gemm_steps.toolkit.tma_tiles import SplitKTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, add_accumulators, fence_proxy_async, first_aligned,
                                              operand_bits, registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, zero_accumulators)
from gemm_steps.toolkit.workspaces import Workspaces


@kernel
def split_a_kernel(a, b, c, m, n, k, unused, also_unused, split):
    """``split`` (2·M·K floats) = A's big parts (rows 0 … M − 1) and small parts·2^11 (rows M … 2M − 1): a thread four
    consecutive floats (one 128-bit load, two 128-bit stores; K is a multiple of 4 and A 16-byte aligned where the
    fast kernel runs), striding by the grid's size (the simulator's one block). As readable copies do
    (``toolkit/tma_tiles.copy_rows_kernel``), it lets the product's kernel start early; that kernel reads ``split``
    only after its ``wait_for_previous_grid``."""
    let_next_grid_start()
    total = uint32(m * k >> 2)
    half = uint32(m * k)
    i = uint32(cuda.grid(1))
    stride = uint32(cuda.gridsize(1))
    while i < total:
        x = load_float4(a, i << 2)
        big0, small0 = split_tf32_scaled(x[0])
        big1, small1 = split_tf32_scaled(x[1])
        big2, small2 = split_tf32_scaled(x[2])
        big3, small3 = split_tf32_scaled(x[3])
        store_float4(split, i << 2, big0, big1, big2, big3)
        store_float4(split, half + (i << 2), small0, small1, small2, small3)
        i = uint32(i + stride)
    wait_for_previous_grid()


def presplit_a_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, partials, *, BLOCK_M, BLOCK_N,
                      BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS, A_STAGE_FLOATS,
                      B_STAGE_FLOATS, B_BASE, SMALL_BASE, STAGE_BYTES, GROUP_M, CONSUMERS, PRODUCER_THREADS,
                      SPLIT_BEHIND, SPLIT_VECTORS, PRODUCER_REGISTERS, CONSUMER_REGISTERS, PARTIAL_TILES,
                      B_ROWS_MOD_4, B_LANE_PITCH, B_QUAD_PITCH, THREADS):
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

    if warpgroup == CONSUMERS:  # the producer warpgroup: one thread copies A's two parts and B (PRESPLIT)
        registers_lower_to(PRODUCER_REGISTERS)
        if tid - CONSUMERS * 128 == 0:
            for t in range(k_tiles):  # copy k-tile t once its stage is empty
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, 2 * STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                k_at = (k_first + t) * BLOCK_K
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, k_at, barriers, stage)  # A's big parts
                copy_tile(tiles, SMALL_BASE + stage * A_STAGE_FLOATS, a_map, m + block_row, k_at, barriers,
                          stage)  # PRESPLIT: A's small parts·2^11, rows M … 2M − 1 of the split A
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
            mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # PRESPLIT: full (A split before)
            for s in unroll(K_STEPS):  # Bᵀ's fragments of the k-tile: big, small·2^11, and big·2^11 for big·big
                for q in unroll(4):
                    x = tiles[stage_b + fragment_at + ((s * 2 + q // 2) * B_QUAD_PITCH + q % 2 * 8)]
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
            total = add_accumulators(total, fresh)
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
    """Step 18's configuration; a stage's copies now bring A's small parts too."""

    @property
    def STAGE_BYTES(self) -> int:  # A's big and small parts and B
        return (2 * self.BLOCK_M + self.B_STRIDE) * self.BLOCK_K * 4


class PresplitTmaTiles(SplitKTmaTiles):
    """Step 18's launch with :func:`split_a_kernel` first: the fast kernel's A map is made of the split A."""

    SPLIT_THREADS = 256

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._split = Workspaces()

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        split = self.split_a(flat, sizes, stream, launches)
        m, k = matrices[0].shape
        super().launch_full_tiles(flat, sizes, full_rows, full_cols, stream, (split.reshape(2 * m, k), matrices[1]),
                                  launches)

    def split_a(self, flat, sizes, stream, launches: list | None = None):
        """Launch (or record) :func:`split_a_kernel` into this shape's workspace; return the workspace."""
        m, k = int(sizes[0]), int(sizes[2])
        split = self._split.get(("split A", m, k), stream,
                                lambda: cuda.device_array(2 * m * k, dtype=np.float32, stream=stream))
        # on the simulator one block strides over A (each simulated thread is a Python thread)
        blocks = 1 if gemm_steps.SIMULATOR else ceil_div(m * k // 4, self.SPLIT_THREADS)
        self.launch_or_record(split_a_kernel, self.rows_signature, blocks, self.SPLIT_THREADS, stream,
                              (*flat, *sizes[:3], np.uint32(0), np.uint32(0), split), launches)
        return split

    def launch_split_only(self, a, b, c, stream=0) -> None:
        """The first kernel alone, as the benchmark calls a launch (C is left as it was): to time it."""
        (m, n, k), flat = flat_operands(a, b, c)
        self.split_a(flat, (np.uint32(m), np.uint32(n), np.uint32(k)), stream)


def build(config: step18.Config, name: str = "presplit_a", slices=step18.slices) -> PresplitTmaTiles:
    """The kernel built for whole tiles (no partial-tile or B-by-rows build), step 18's split-K policy (or
    ``slices``) and edge kernel."""
    return PresplitTmaTiles(name, presplit_a_kernel, Config.of(config), edge=warpgroup_mma.build(config),
                            requires_compute_capability=step18.REQUIRES_COMPUTE_CAPABILITY, slices=slices,
                            reduce=step18.add_slices_kernel)
