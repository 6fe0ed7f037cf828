"""Step 14 — 3xTF32 on Hopper's warpgroup MMA: one tensor-core instruction for 128 threads, float32 accuracy.

Changed from step 13: the tensor-core instruction. Step 13's ``mma.sync`` is one warp's 16×8×8 product with every
operand in registers; it stopped a little above cuBLAS SGEMM, latency-bound at 8 warps per SM (lesson 12's profile).
Hopper's ``wgmma`` is one instruction of a **warpgroup** (4 warps, 128 threads): a 64×8 tile times an 8×N tile
(here N = 128: 65,536 multiply-adds, 64 ``mma.sync``'s worth), *asynchronous* — issued, then waited for — with one
operand read by the tensor core straight from shared memory (:mod:`gemm_steps.toolkit.warpgroup_ops`).

TF32 ``wgmma`` reads shared memory only **K-major** (each column's k values contiguous). A (M×K, row-major) is; B
is not. So the kernel computes the transposed tile, Cᵀ = Bᵀ·Aᵀ: ``wgmma``'s first operand is Bᵀ, from registers
(each thread loads its four elements per k-step from B's tile, staged as it is — exactly the ``mma.sync`` A
fragment of step 12), and its second is Aᵀ, whose columns are A's rows: K-major already, staged by 16-byte
``cp.async`` and described to the tensor core by a 64-bit descriptor. No transposition anywhere
(experiments/wgmma_gemm.py transposed B and ran below step 12).

A's tile is stored in the **128-byte swizzle** layout: each row's 32 k values are one 128-byte line in shared
memory, its eight 16-byte chunks permuted (chunk c of row r at slot c XOR r % 8; the tensor core undoes it). So a
warp's copies cover 4 whole rows in global memory *and* 4 whole lines in shared memory, and the L2 serves them as
whole-line requests. In the no-swizzle layout (8-row × 16-byte "core matrices") the copies' shared destinations
could not follow their global sources, the L2 received about one request per 16-byte copy, and the same kernel
ran markedly slower (experiments/wgmma_swapped.py, ``SWIZZLE``; lesson 14's deep dive has the numbers).

3xTF32 as in step 13, three products per k-step, small ones first, and step 13's split (``split_tf32_scaled``: big
rounded to nearest TF32, small·2^11, so small parts stay in TF32's normal range): Bᵀ's fragments are split in
registers; A's k-tile is split once, in place — its big parts written over the stage, its small parts into a second
shared buffer. (Before issue 25 A's big part was the stage itself, truncated by the tensor core as it read it, and
A's small part a − (a truncated): no add and no store of big, but each a read only to 2^-21·|a| instead of
2^-23·|a|.) The sum of the small products is multiplied by 2^-11 (``SMALL_UNSCALE``) once, at the store; an inf
or NaN in A or B (or a sum past float32's range) leaves a non-finite value in the tile, and the block then computes
its tile again as cuBLAS SGEMM does, one float32 FMA per k in order, for exactly SGEMM's inf/NaN pattern (step 13
says why; docs/fp32_contract.md). Two rules the kernel keeps:

* the tensor core **truncates** the sums it accumulates (lesson 13), so the running sum stays out of it: each
  k-tile's big·big products go to a fresh accumulator (``accumulate`` = 0 on the first), added to ``total`` with
  rounded float32 adds; the small products (~2^-11 of the sum, once unscaled) stay in a long-lived accumulator,
  whose truncation costs ~2^-11 as much. Keeping everything in one accumulator over all of K gave errors growing like K
  (experiments/wgmma_swapped.py; lesson 14);
* a ``wgmma`` may read its register operand until a wait retires it, and the PTX ISA forbids writing those
  registers before then (a build that loaded the next k-tile's fragments into them gave wrong results, the same
  experiment; two sets of fragment registers would keep that overlap legally). So each k-tile first
  waits for the previous one's ``wgmma`` (``warpgroup_wait_all``), then loads its fragments. Its copies were
  issued two k-tiles ahead, and the previous k-tile's products run while the next k-tile's copies are issued and
  A's small parts are written.

Why faster: three ``wgmma`` per k-step keep the tensor cores busier than step 13's mma.sync chain did, for far fewer
instructions, and whole-line copies keep the L2 from becoming the limit.
Expect: the experiment's swizzled 3xTF32 build's ratio to cuBLAS SGEMM (lesson 14; that build was launched through
Numba's dispatcher, so it is a floor). Measured (results/bench-nvidia-h200-2026-11-30.json): 74.8 TFLOPS at 4096³
and 75.9 at 8192³, 1.46× and 1.49× cuBLAS SGEMM, at a sampled error of 2.4e-07 and 3.1e-07 against SGEMM's 1.2e-06
and 1.7e-06. Runs on compute capability 9.0 only (H100/H200: ``wgmma`` needs ``sm_90a``), and on the simulator.
"""

import math

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import copy_async, store_if_inside
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.tensor_core_ops import copy_async_commit, copy_async_or_zero, copy_async_wait, split_tf32_scaled
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, add_accumulators, fence_proxy_async, first_aligned, operand_bits,
                                     shared_address, swizzled_descriptor, swizzled_offset, warpgroup_commit,
                                     warpgroup_fence, warpgroup_wait_all, wgmma_tf32, zero_accumulators)

TITLE = "3xTF32 on Hopper's warpgroup MMA (wgmma)"
SUMMARY = "Cᵀ = Bᵀ·Aᵀ with 128-thread wgmma: Bᵀ from registers, Aᵀ from shared memory, three products per k-step."
ARITHMETIC = "3xtf32"  # float32 accuracy: verify uses the float32 tolerance
#: wgmma exists on compute capability 9.0 only (sm_90a: H100, H200); verify and bench skip the step elsewhere, saying so.
REQUIRES_COMPUTE_CAPABILITY = (9, 0)
#: The small products come scaled by 2^11 (``split_tf32_scaled``); this undoes it, once, at the store.
SMALL_UNSCALE = float32(2.0 ** -11)


def warpgroup_mma_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                         BLOCK_M, BLOCK_N, BLOCK_K, THREADS, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW,
                         B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, LOAD_AHEAD, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE,
                         SMALL_BASE, EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B, computed as Cᵀ by 3xTF32 ``wgmma``; a, b, c flat row-major float32."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    # STAGES stages of A (128-byte swizzled rows: row r's 16-byte chunk c at slot c XOR r % 8), then STAGES stages
    # of B ([k][col], rows padded to B_STRIDE) from B_BASE, then two buffers of A's small parts (swizzled like A).
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    # The swizzled tiles must start at 1,024-byte-aligned addresses; the array is only 16-byte aligned (and
    # static shared memory before it would move it): start at its first aligned float (layout's slack).
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128  # columns 64·warpgroup … of the tile: rows of its Cᵀ
    warp = tid % 128 // 32  # rows 16·warp … of the warpgroup's 64
    lane = tid % 32
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    base = shared_address(tiles, 0)
    # This thread's element of Bᵀ's fragment: column warpgroup·64 + warp·16 + lane // 4 (+ 8), k = lane % 4 (+ 4).
    fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
    total = zero_accumulators(ACCUMULATORS)  # the running sum of C: rounded float32 adds only
    small_sum = zero_accumulators(ACCUMULATORS)  # the small products ×2^11 (tensor core accumulates)
    big = zero_accumulators(ACCUMULATORS)  # one k-tile's big·big products (tensor core, afresh every k-tile)
    b_big, b_small = registers(K_STEPS, 4), registers(K_STEPS, 4)
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K

    # Iteration t: wait for k-tile t - LOAD_AHEAD to land, start copying k-tile t into stage t % STAGES, then compute
    # k-tile t - LOAD_AHEAD. Its wgmma run on while iteration t + 1 issues its copies and splits A.
    for t in range(k_tiles + LOAD_AHEAD):
        copy_async_wait(LOAD_AHEAD - 1)  # of this thread's groups, all but the newest LOAD_AHEAD - 1 have landed
        fence_proxy_async()  # … visible to the tensor core's reads …
        cuda.syncthreads()  # … and so have every other thread's
        if t < k_tiles:
            k0 = uint32(t * BLOCK_K)
            stage_a = uint32(t % STAGES * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + t % STAGES * B_STAGE_FLOATS)
            for load in unroll(A_LOADS):  # 16-byte chunks: a warp copies 4 whole rows, in global and shared memory
                chunk = tid + load * THREADS
                row = chunk // A_VECTORS_PER_ROW
                kc = chunk % A_VECTORS_PER_ROW  # which 4 of the k-tile's k
                to = stage_a + swizzled_offset(row, kc)
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, to + q, a, block_row + row, k0 + kc * 4 + q, m, k)
                else:
                    copy_async(tiles, to, a, (block_row + row) * k + k0 + kc * 4, 4)
            for load in unroll(B_LOADS):  # B's rows as they are
                chunk = tid + load * THREADS
                kk = chunk // B_VECTORS_PER_ROW
                col = chunk % B_VECTORS_PER_ROW * 4
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_b + kk * B_STRIDE + col + q, b, k0 + kk, block_col + col + q,
                                           k, n)
                else:
                    copy_async(tiles, stage_b + kk * B_STRIDE + col, b, (k0 + kk) * n + block_col + col, 4)
        copy_async_commit()  # one group per iteration (empty near the end), so the wait counts k-tiles
        if t >= LOAD_AHEAD:
            stage_a = uint32((t - LOAD_AHEAD) % STAGES * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + (t - LOAD_AHEAD) % STAGES * B_STAGE_FLOATS)
            small_a = uint32(SMALL_BASE + (t - LOAD_AHEAD) % 2 * A_STAGE_FLOATS)
            for e in unroll(A_LOADS * 4):  # A's split, in place: big over the stage, small·2^11 beside it
                at = tid + e * THREADS  # one float at a time (fewer live registers than 4), consecutive per warp
                x_big, x_small = split_tf32_scaled(tiles[stage_a + at])
                tiles[stage_a + at] = x_big
                tiles[small_a + at] = x_small
            fence_proxy_async()
            cuda.syncthreads()
            big = warpgroup_wait_all(big)  # the previous k-tile's products are in, its fragments free …
            total = add_accumulators(total, big)  # … and its big·big products join the sum, rounded
            for s in unroll(K_STEPS):  # Bᵀ's fragments of the k-tile, split into big + small
                for q in unroll(4):  # a0 … a3: columns +0 / +8, k +0 / +4
                    x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                    x_big, x_small = split_tf32_scaled(x)
                    b_big[s][q] = operand_bits(x_big)  # into the wgmma's integer registers, before the fence
                    b_small[s][q] = operand_bits(x_small)
            warpgroup_fence()  # the fragment registers written above → visible to the wgmma; none written after
            for s in unroll(K_STEPS):  # k-step s: the next 8 k of every row, 32 bytes further along it
                a_big = swizzled_descriptor(base + (stage_a * 4 + s * 32))
                a_small = swizzled_descriptor(base + (small_a * 4 + s * 32))
                small_sum = wgmma_tf32(tiles, b_small[s][0], b_small[s][1], b_small[s][2], b_small[s][3], a_big,
                                       small_sum, 1)
                small_sum = wgmma_tf32(tiles, b_big[s][0], b_big[s][1], b_big[s][2], b_big[s][3], a_small,
                                       small_sum, 1)
                big = wgmma_tf32(tiles, b_big[s][0], b_big[s][1], b_big[s][2], b_big[s][3], a_big, big,
                                 0 if s == 0 else 1)
            warpgroup_commit()
    big = warpgroup_wait_all(big)
    small_sum = warpgroup_wait_all(small_sum)
    total = add_accumulators(total, big)

    # Value 4j + r of this thread is Cᵀ[16·warp + lane // 4 + 8·(r // 2)][8j + 2·(lane % 4) + r % 2] of its
    # warpgroup's 64 × BLOCK_M part: C's row block_row + 8j + …, column block_col + 64·warpgroup + ….
    special = 0  # did this thread store an inf or NaN?
    for v in unroll(ACCUMULATORS):
        row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
        col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        value = total[v] + small_sum[v] * SMALL_UNSCALE  # the small products, scaled back
        if EDGE:
            store_if_inside(c, row, col, m, n, value)
        else:
            c[row * n + col] = value
        if not math.isfinite(value):
            special = 1

    # Specials: an inf or NaN in A or B (the split's inf − inf) or a sum past float32's range leaves an inf or NaN in
    # the tile; finite inputs whose sums fit never do. Then the block computes its tile again as cuBLAS SGEMM does,
    # one float32 FMA per k in order, which gives exactly SGEMM's inf/NaN pattern (docs/fp32_contract.md).
    if cuda.syncthreads_or(special):
        for slot in range(ACCUMULATORS):  # this thread's results, numbered as the store above
            row = block_row + lane % 4 * 2 + (slot // 4 * 8 + slot % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (slot % 4 // 2 * 8)
            if row < m and col < n:
                value = float32(0.0)
                for kk in range(k):
                    value = cuda.fma(a[row * k + kk], b[kk * n + col], value)
                c[row * n + col] = value


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 32  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    STAGES: int = 4  # four k-tiles in shared memory: two copied ahead (cp.async) while one is computed and one drains

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
    def LOAD_AHEAD(self) -> int:  # k-tiles copied ahead of the one computed
        return self.STAGES - 2

    @property
    def K_STEPS(self) -> int:  # wgmma k-steps (k = 8) per k-tile
        return self.BLOCK_K // 8

    @property
    def ACCUMULATORS(self) -> int:  # results of C a thread holds: Cᵀ is BLOCK_N × BLOCK_M, 64 rows a warpgroup
        return self.BLOCK_M // 2

    @property
    def B_STRIDE(self) -> int:  # floats per row of a stage of B: rows 8 banks apart
        return self.BLOCK_N + 8

    @property
    def A_STAGE_FLOATS(self) -> int:  # a stage of A: BLOCK_M rows of BLOCK_K = 32 floats, one 128-byte swizzled row each
        return self.BLOCK_M * self.BLOCK_K

    @property
    def B_STAGE_FLOATS(self) -> int:
        return self.BLOCK_K * self.B_STRIDE

    @property
    def EXTRA_SHARED_FLOATS(self) -> int:  # two buffers of A's small parts, + first_aligned's slack
        return 2 * self.A_STAGE_FLOATS + SWIZZLE_ALIGN // 4

    @property
    def SMALL_BASE(self) -> int:  # A's small parts after the stages: B's stages are 128·(BLOCK_N + 8) bytes, so every
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS)  # tile of A starts 1,024-byte aligned

    @property
    def SHARED_BYTES(self) -> int:
        return (self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS) + self.EXTRA_SHARED_FLOATS) * 4

    @property
    def DYNAMIC_SHARED(self) -> bool:  # the stages always live in one dynamic array, whatever its size
        return True

    @property
    def B_BASE(self) -> int:  # where B's stages start in it
        return self.STAGES * self.A_STAGE_FLOATS

    def problems(self) -> list[str]:
        warpgroups = self.BLOCK_N // 64
        if (warpgroups * 64 != self.BLOCK_N or self.THREADS != 128 * warpgroups or self.BLOCK_M % 8
                or not 8 <= self.BLOCK_M <= 256 or self.BLOCK_K != 32):
            return [("warpgroup tiling needs BLOCK_N = 64 per warpgroup, 128 threads per warpgroup "
                     "(BLOCK_M·BLOCK_N / (THREAD_M·THREAD_N)), BLOCK_M a multiple of 8 up to 256 (wgmma's N) "
                     "and BLOCK_K = 32 (a 128-byte swizzled row of A)")]
        return []


#: The tiles of experiments/wgmma_swapped.py's fastest 3xTF32 build (128 rows: wgmma's N, 64 accumulators per sum).
SEARCH_SPACE = [Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]

#: On Numba's simulator: one warpgroup on a 32×64 tile (every wgmma is a meeting of 128 Python threads).
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, overrides: dict | None = None) -> TiledKernels:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    return TiledKernels("warpgroup_mma", warpgroup_mma_kernel, Config.of(config), overrides=overrides,
                        requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY)


TUNING = Tuning(build, "warpgroup_mma", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show for one k-tile (tests/test_ptx.py): 3 wgmma per k-step, the 16-byte copies,
#: two barriers, one copy wait, FP32 FMAs only at the store (one per result: total + small sum·2^-11) and in the
#: specials' SGEMM loop (which LLVM unrolls a few times), a sub.f32 and a mul.f32 per split element (16 of A's, 16
#: of B's per thread), no local memory *in the PTX*, and no wgmma operand written after its fence (every kernel is
#: checked for that).
_GPU = default_config(SEARCH_SPACE)
PTX_EXPECT = {"warpgroup_mma_fast": {
    "wgmma.mma_async.tf32": 3 * _GPU.BLOCK_K // 8, "wgmma.fence": 1, "wgmma.commit_group": 1, "wgmma.wait_group": 3,
    "cp.async.cg.shared.global": (_GPU.BLOCK_M + _GPU.BLOCK_N) * _GPU.BLOCK_K // 4 // _GPU.THREADS,
    "cp.async.wait_group": 1, "bar.sync": 2, "fma.rn.f32": f">={_GPU.BLOCK_M // 2 + 1}",
    "sub.f32": (_GPU.BLOCK_M + _GPU.BLOCK_N) * _GPU.BLOCK_K // _GPU.THREADS,
    "mul.f32": (_GPU.BLOCK_M + _GPU.BLOCK_N) * _GPU.BLOCK_K // _GPU.THREADS, "local": 0,
    "wgmma.written_after_fence": 0}}
#: What ptxas makes of it (tests/test_ptx.py, nvJitLink's ptxas for sm_90a; tests/test_gpu.py, the driver's): three
#: sets of 64 accumulators and 32 fragment registers leave no room in 255 registers, so ptxas **spills** — 36 bytes
#: in the fast kernel with nvJitLink 13.5 (28 before issue 25's split; 24 before the fragments moved before the
#: fence; 68 with A's split four floats at a time instead of one, as relocatable PTX), 60 in the edge kernel (72
#: before) — but it does not serialise the wgmma for want of registers (no C7512 warning: ``wgmma_serialized``).
PTXAS_EXPECT = {"warpgroup_mma_fast": {"registers": 255, "spill_bytes": "<=40", "wgmma_serialized": 0},
                "warpgroup_mma_edge": {"registers": 255, "spill_bytes": "<=96"}}
