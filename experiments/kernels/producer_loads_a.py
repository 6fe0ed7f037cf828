"""Step 18's kernel with its producer warpgroup loading A from global memory into registers, instead of the copy
engine writing A's tile into shared memory for the producer to read back: an experiment (issue 36: 3xTF32 ≥ 2.5×
cuBLAS SGEMM), timed by experiments/producer_loads_a.py.

A copy of ``gemm_steps/steps/warp_specialized_3xtf32.py``'s kernel as at e32083b, full tiles and one slice of K only
(no PARTIAL_TILES or B_ROWS_MOD_4 build; ``build`` takes no split-K). ``diff`` the two to see the change (``CHANGED``
marks each place):

* **Who brings A.** In step 18 the copy engine writes A's k-tile into the stage (16 KB), the producer's 128 threads
  read it back (16 KB of shared loads) and write its big and small parts (32 KB of shared stores): 64 KB of shared
  memory traffic a k-tile for A before the tensor core reads it. Here each producer thread loads its eight 16-byte
  vectors of A's k-tile from global memory (``ld.global.v4``) one k-tile ahead, into registers, and writes only the
  two parts (32 KB) where the copy engine's 128-byte swizzle would have put them (``swizzled_offset``). The copy
  engine brings B alone.
* **One barrier fewer.** With A written by threads, the stage's *full* barrier counts the copy of B (its bytes and
  its one arrival) and the 128 producer threads' arrivals after their stores and ``fence.proxy.async``: the
  consumers wait for *full* and nothing else (no *ready* barrier), and every producer thread waits for the stage's
  *empty* before it writes.
* **Registers.** A k-tile's vectors ahead (32 registers) beside the ones being split (32) do not fit the producer's
  40: the hand-off gives the producer PRODUCER_REGISTERS and the consumers CONSUMER_REGISTERS below, still filling
  the block's pool of 384 × 168.

The same bits as step 18 (tests/test_producer_loads_a.py, on the simulator): the same split, the same products in
the same order. Two switches (``ABLATION`` marks them; both on by default) take parts of the producer's work away
for ``producer_loads_a.py --ablation``: SPLIT_ARITHMETIC (the split's arithmetic) and FENCE (the proxy fence); and
for ``--stores``, STORES (the shared stores of the parts).
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
                                              swizzled_descriptor, swizzled_offset, warpgroup_commit,
                                              warpgroup_fence, warpgroup_wait_all, wgmma_tf32, zero_accumulators)


def producer_loads_a_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, partials, *,
                            BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                            A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, SMALL_BASE, B_STAGE_BYTES, GROUP_M, CONSUMERS,
                            PRODUCER_THREADS, SPLIT_VECTORS, PRODUCER_REGISTERS, CONSUMER_REGISTERS, B_LANE_PITCH,
                            B_QUAD_PITCH, ROWS_PER_PASS, SPLIT_ARITHMETIC, FENCE, STORES):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by 3xTF32 ``wgmma``: CONSUMERS warpgroups compute, one produces
    (its threads load A and write its parts; its first thread has the copy engine bring B)."""
    barriers = cuda.shared.array(2 * STAGES, uint64)  # CHANGED: full[s] at s, empty[s] at STAGES + s (no ready)
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
    k_tiles = k // BLOCK_K  # CHANGED: whole k-tiles, one slice
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1 + PRODUCER_THREADS)  # CHANGED full: B's copy (and bytes), A's writers
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier before the end
    wait_for_previous_grid()  # launched early after a readable copy (PDL): its A and B are written now
    special = 0  # did this thread store an inf or NaN?

    if warpgroup == CONSUMERS:  # the producer warpgroup: all 128 load and split A, one thread copies B
        registers_lower_to(PRODUCER_REGISTERS)
        p = tid - CONSUMERS * 128
        # CHANGED: vector e of a k-tile is chunk p % 8 (4 floats along k) of the tile's row e·ROWS_PER_PASS + p // 8:
        # a warp reads four rows' 128 contiguous bytes each, and writes 512 bytes of the stage, conflict-free.
        row_in_tile = p // 8
        a_at = (block_row + row_in_tile) * k + (p % 8) * 4
        ahead = registers(SPLIT_VECTORS, 4)  # k-tile t's vectors, loaded during k-tile t − 1
        sink = float32(0.0)  # ABLATION (STORES False): what the parts add up to
        if not STORES:  # ABLATION: zeros in every stage's A buffers, once — stale shared memory may hold NaN, which
            for i in range(p, STAGES * A_STAGE_FLOATS // 4, PRODUCER_THREADS):  # would send every tile down the
                store_float4(tiles, i * 4, 0.0, 0.0, 0.0, 0.0)  # specials' slow path (one FMA a k)
                store_float4(tiles, SMALL_BASE + i * 4, 0.0, 0.0, 0.0, 0.0)
            fence_proxy_async()
        for e in unroll(SPLIT_VECTORS):
            ahead[e][0], ahead[e][1], ahead[e][2], ahead[e][3] = load_float4(a, a_at + e * ROWS_PER_PASS * k)
        for t in range(k_tiles):
            stage = t % STAGES
            if t >= STAGES:  # the stage's (t // STAGES)-th fill: every consumer warp released it (every thread waits)
                mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
            if p == 0:  # the copy engine brings B's k-tile
                mbarrier_arrive_expect_tx(barriers, stage, B_STAGE_BYTES)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
            now = registers(SPLIT_VECTORS, 4)
            for e in unroll(SPLIT_VECTORS):
                for q in unroll(4):
                    now[e][q] = ahead[e][q]
            next_at = a_at + min(t + 1, k_tiles - 1) * BLOCK_K  # the last k-tile loads itself again: never past A
            for e in unroll(SPLIT_VECTORS):
                ahead[e][0], ahead[e][1], ahead[e][2], ahead[e][3] = load_float4(a, next_at + e * ROWS_PER_PASS * k)
            for e in unroll(SPLIT_VECTORS):
                at = stage * A_STAGE_FLOATS + swizzled_offset(e * ROWS_PER_PASS + row_in_tile, p % 8)
                big, small = registers(4), registers(4)
                for q in unroll(4):
                    if SPLIT_ARITHMETIC:
                        big[q], small[q] = split_tf32_scaled(now[e][q])  # big rounded to TF32, small·2^11
                    else:  # ABLATION: A's values as they are, in both buffers (a wrong C: times only)
                        big[q], small[q] = now[e][q], now[e][q]
                if STORES:
                    store_float4(tiles, at, big[0], big[1], big[2], big[3])
                    store_float4(tiles, SMALL_BASE + at, small[0], small[1], small[2], small[3])
                else:  # ABLATION: no shared stores; the parts go into a sum that keeps their loads alive
                    for q in unroll(4):
                        sink += big[q] + small[q]
            if FENCE:  # ABLATION: False leaves the fence out (the tensor core may read stale parts: times only)
                fence_proxy_async()  # these writes → visible to the tensor core's reads
            mbarrier_arrive(barriers, stage)
        if not STORES and k == 0:  # ABLATION: never true (k_tiles ≥ 1 here), but the compiler cannot know
            c[0] = sink
    else:  # a consumer warpgroup: waits for full stages, multiplies, releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_LANE_PITCH + warpgroup * 64 + warp * 16 + lane // 4  # B's k-row lane % 4
        total = zero_accumulators(ACCUMULATORS)  # 2^11 × the running sum of C: rounded float32 adds only
        fresh = zero_accumulators(ACCUMULATORS)  # 2^11 × one k-tile's products (the tensor core's sum)
        b_big, b_small, b_big_scaled = registers(K_STEPS, 4), registers(K_STEPS, 4), registers(K_STEPS, 4)
        for u in range(k_tiles):
            stage = u % STAGES
            stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
            mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # CHANGED: A written and split, B landed
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
                mbarrier_arrive(barriers, STAGES + stage)  # the stage is empty (an arrival a warp)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            value = total[v] * UNSCALE
            c[row * n + col] = value
            if not math.isfinite(value):
                special = 1

    # Specials (step 14's rule, as step 18): an inf or NaN left in the tile → the consumers compute it again as
    # cuBLAS SGEMM does, one float32 FMA per k in order.
    if cuda.syncthreads_or(special) and warpgroup < CONSUMERS:
        for slot in range(ACCUMULATORS):  # this thread's results, numbered as the store above
            row = block_row + lane % 4 * 2 + (slot // 4 * 8 + slot % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (slot % 4 // 2 * 8)
            value = float32(0.0)
            for kk in range(k):
                value = cuda.fma(a[row * k + kk], b[kk * n + col], value)
            c[row * n + col] = value


@dataclass(frozen=True)
class Config(step18.Config):
    """Step 18's configuration with the producer's registers raised for A's vectors a k-tile ahead (the block's pool
    is still 384 × 168 = 64,512: 128 × 88 + 256 × 208)."""

    PRODUCER_REGISTERS: int = 88
    CONSUMER_REGISTERS: int = 208
    # Two switches for an ablation of the variant (experiments/producer_loads_a.py --ablation; a wrong C, times only):
    SPLIT_ARITHMETIC: bool = True  # False: the producer stores A's values as they are (no split arithmetic)
    FENCE: bool = True  # False: no fence.proxy.async before the producer's arrival
    STORES: bool = True  # False: no shared stores of the parts (they are summed instead, so their loads stay)

    @property
    def B_STAGE_BYTES(self) -> int:  # what the copy engine brings a stage: B's box alone
        return self.B_STRIDE * self.BLOCK_K * 4

    @property
    def ROWS_PER_PASS(self) -> int:  # rows of A's tile the producer's threads cover with one vector each
        return self.PRODUCER_THREADS // (self.BLOCK_K // 4)

    def problems(self) -> list[str]:
        if self.PARTIAL_TILES or self.B_ROWS_MOD_4:
            return ["whole tiles only: no PARTIAL_TILES or B_ROWS_MOD_4 build"]
        if self.BLOCK_M % self.ROWS_PER_PASS:
            return [f"BLOCK_M must be a multiple of {self.ROWS_PER_PASS} (rows a pass of the producer covers)"]
        return super().problems()


def build(config: Config, name: str = "producer_loads_a") -> SplitKTmaTiles:
    """The kernel built for whole tiles, one slice of K, step 14's kernel for the edges (as step 18's build)."""
    return SplitKTmaTiles(name, producer_loads_a_kernel, config, edge=warpgroup_mma.build(config),
                          requires_compute_capability=step18.REQUIRES_COMPUTE_CAPABILITY, slices=lambda *_: 1,
                          reduce=step18.add_slices_kernel)
