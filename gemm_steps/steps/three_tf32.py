"""Step 13 — 3xTF32: float32 accuracy from the TF32 tensor cores, with three products instead of one.

Changed from step 12: each operand is split into two TF32 numbers, ``big = tf32(x)`` and ``small = x - big``
(exact in float32; the tensor core reads its top 11 bits and truncates the rest), so ``x ≈ big + small`` to about
23 bits instead of 11 (lesson 13 measures it: at most 2^-23 of x is lost on standard-normal floats).
The product is

    a·b = big_a·big_b + big_a·small_b + small_a·big_b + small_a·small_b,

and the last term is below float32's rounding error (about 2^-22 of the product), so three tensor-core products
recover float32's accuracy. The two small ones are summed by one mma chain, the large one by another, and both
join the running sum in the FP32 units (the hardware's own sums in an mma are truncated: lesson 13).
The loads, the pipeline (with its copy addresses worked out once) and the tiling are step 12's; the inner loop
splits each fragment element with ``split_tf32_scaled`` (4 instructions: big is the bits plus half a TF32 unit with
the low 13 bits cleared, small = (x − big)·2^11, whose low bits the tensor core drops) and does 3 ``mma_tf32`` per
piece instead of 1. Splitting with two ``cvt.rna.tf32.f32`` instead took 7 instructions and ran slower at the same
accuracy (experiments/tf32_conversion.py; lesson 12's deep dive reads its results).

Keeping float32's contract (docs/fp32_contract.md; issue 25), three things more than the plain split:

* ``small`` is at most 2^-11 of ``x``, so for |x| below about 2^-115 it would fall under float32's smallest normal
  number and the tensor core would read it to a fixed 2^-136 instead of to 11 bits (a whole matrix scaled by
  2^-120 lost most of the split's accuracy, issue 25). ``split_tf32_scaled`` hands the tensor core ``small·2^11``
  instead (exact, never larger than |x|), so the two small products are summed apart from the large one and
  multiplied by 2^-11 (``SMALL_UNSCALE``) as they join it: one FMA per result, the two mma chains independent;
* ``big`` is rounded to nearest for A and B alike, so x is read to within 2^-23·|x|;
* an inf or NaN in A or B comes out of the split as NaN (``inf − inf``), and so does a sum past float32's range;
  finite inputs never do. So after the k-loop a block whose tile holds a non-finite value computes the tile again
  as cuBLAS SGEMM does — one float32 FMA per k, in order — and gets exactly SGEMM's inf/NaN pattern. A tile
  without specials pays one check per result; one with them, K FMAs per result from global memory.
Why faster than cuBLAS SGEMM: three tensor-core products still cost less than one product on the FP32 units.
Expect: a third of step 12's speed if its time were all product work (lesson 13), above cuBLAS SGEMM, at
float32-level accuracy. Measured (results/bench-nvidia-h200-2026-11-30.json): 51.5 TFLOPS at 4096³ and 52.2 at
8192³, 1.01× and 1.02× cuBLAS SGEMM, at a sampled error of 4.1e-07 and 5.5e-07 against SGEMM's 1.2e-06 and 1.7e-06.
(Below SGEMM's there because each k-step's products are summed before one rounded add, where SGEMM
rounds after every product; on lesson 13's 512×512×K sweep the step's error is above SGEMM's at large K.)
"""

import math

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import copy_async, store_if_inside
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.tensor_core_ops import (copy_async_commit, copy_async_or_zero, copy_async_wait, mma_tf32,
                                       split_tf32_scaled)
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from . import tensor_cores

TITLE = "3xTF32: float32 accuracy from three tensor-core products"
SUMMARY = "Split each operand into big + small TF32 parts; small·big + big·small + big·big on the tensor cores."
ARITHMETIC = "3xtf32"  # float32 accuracy: verify uses the float32 tolerance
#: mma.sync on TF32 operands and cp.async exist from Ampere (compute capability 8.0) on; verify and bench
#: skip the step on older GPUs, saying so.
MIN_COMPUTE_CAPABILITY = (8, 0)
#: The small products come scaled by 2^11 (``split_tf32_scaled``); this undoes it as they join the sum.
SMALL_UNSCALE = float32(2.0 ** -11)


def three_tf32_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                      BLOCK_M, BLOCK_N, BLOCK_K, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N, MMA_TILES_M, MMA_TILES_N,
                      A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_STRIDE, B_STRIDE, STAGES,
                      A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B, 3xTF32 on the tensor cores; a, b, c are flat row-major float32 arrays."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    # STAGES stages of A ([row][k], rows padded to A_STRIDE) from 0, then STAGES stages of B ([k][col], rows padded
    # to B_STRIDE) from B_BASE: one dynamic shared array, sized at launch.
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warp = tid // 32
    lane = tid % 32
    group = lane // 4  # rows group and group + 8 of an A or C piece, column group of a B piece
    pair = lane % 4  # k = pair and pair + 4 of an A or B piece, columns 2·pair and 2·pair + 1 of a C piece
    warp_row = warp // WARPS_N * WARP_TILE_M
    warp_col = warp % WARPS_N * WARP_TILE_N
    # Where this lane's fragment reads start in a stage (the pieces add compile-time offsets).
    a_read = (warp_row + group) * A_STRIDE + pair
    b_read = pair * B_STRIDE + warp_col + group
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    # This thread's 16-byte copies, worked out once: where in A and B they start (a_from, b_from, moved on by one
    # k-tile after each copy) and where they land in a stage (a_to, b_to). In 32-bit arithmetic (uint32(…): Numba
    # would compute in 64 bits), so each copy costs an add or two per k-tile, not a recomputation.
    a_row, a_k, a_from, a_to = registers(A_LOADS), registers(A_LOADS), registers(A_LOADS), registers(A_LOADS)
    b_k, b_col, b_from, b_to = registers(B_LOADS), registers(B_LOADS), registers(B_LOADS), registers(B_LOADS)
    for load in unroll(A_LOADS):
        a_row[load] = (tid + load * THREADS) // A_VECTORS_PER_ROW
        a_k[load] = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
        a_from[load] = uint32((block_row + a_row[load]) * k + a_k[load])
        a_to[load] = uint32(a_row[load] * A_STRIDE + a_k[load])
    for load in unroll(B_LOADS):
        b_k[load] = (tid + load * THREADS) // B_VECTORS_PER_ROW
        b_col[load] = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
        b_from[load] = uint32(b_k[load] * n + block_col + b_col[load])
        b_to[load] = uint32(b_k[load] * B_STRIDE + b_col[load])
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K
    b_step = uint32(BLOCK_K * n)  # from one k-tile of B to the next
    acc = registers(MMA_TILES_M, MMA_TILES_N, 4)  # 4 results of C per mma piece, per lane
    for i in unroll(MMA_TILES_M):
        for j in unroll(MMA_TILES_N):
            for r in unroll(4):
                acc[i][j][r] = float32(0.0)
    a_big, a_small = registers(MMA_TILES_M, 4), registers(MMA_TILES_M, 4)
    b_big, b_small = registers(MMA_TILES_N, 2), registers(MMA_TILES_N, 2)

    k0 = uint32(0)  # the first k of the k-tile being copied
    load_stage = uint32(0)  # the stage k-tile t is copied into (t % STAGES) …
    compute_stage = uint32(0)  # … and the one k-tile t - (STAGES - 1) is computed from

    # Iteration t: wait for k-tile t - (STAGES - 1) to land, start copying k-tile t into stage t % STAGES, then
    # compute k-tile t - (STAGES - 1). The barrier also tells every thread that the stage about to be overwritten
    # (computed in the previous iteration) is free.
    for t in range(k_tiles + STAGES - 1):
        copy_async_wait(STAGES - 2)  # of this thread's groups, all but the newest STAGES - 2 have landed
        cuda.syncthreads()  # … and so have every other thread's
        if t < k_tiles:
            stage_a = uint32(load_stage * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + load_stage * B_STAGE_FLOATS)
            for load in unroll(A_LOADS):
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_a + a_to[load] + q,
                                           a, block_row + a_row[load], k0 + a_k[load] + q, m, k)
                else:
                    copy_async(tiles, uint32(stage_a + a_to[load]), a, a_from[load], 4)
                    a_from[load] = uint32(a_from[load] + BLOCK_K)
            for load in unroll(B_LOADS):
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_b + b_to[load] + q,
                                           b, k0 + b_k[load], block_col + b_col[load] + q, k, n)
                else:
                    copy_async(tiles, uint32(stage_b + b_to[load]), b, b_from[load], 4)
                    b_from[load] = uint32(b_from[load] + b_step)
            k0 = uint32(k0 + BLOCK_K)
            load_stage = uint32(load_stage + 1)
            if load_stage == STAGES:
                load_stage = uint32(0)
        copy_async_commit()  # one group per iteration (empty near the end), so wait_group counts k-tiles
        if t >= STAGES - 1:
            a_base = uint32(compute_stage * A_STAGE_FLOATS + a_read)
            b_base = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_read)
            for kk in unroll(0, BLOCK_K, 8):  # the k-tile in steps of the mma's k = 8
                for i in unroll(MMA_TILES_M):  # rows group, group + 8 of piece i; k = pair, pair + 4
                    for r in unroll(4):
                        x = tiles[a_base + ((i * 16 + r % 2 * 8) * A_STRIDE + kk + r // 2 * 4)]
                        a_big[i][r], a_small[i][r] = split_tf32_scaled(x)  # big + small·2^-11 = x exactly
                for j in unroll(MMA_TILES_N):  # column group of piece j; k = pair, pair + 4
                    for r in unroll(2):
                        x = tiles[b_base + ((kk + r * 4) * B_STRIDE + j * 8)]
                        b_big[j][r], b_small[j][r] = split_tf32_scaled(x)
                for i in unroll(MMA_TILES_M):
                    for j in unroll(MMA_TILES_N):
                        # The two small products of this k-step (scaled by 2^11), summed by the tensor core from zero …
                        s0, s1, s2, s3 = mma_tf32(a_small[i][0], a_small[i][1], a_small[i][2], a_small[i][3],
                                                  b_big[j][0], b_big[j][1], float32(0.0), float32(0.0),
                                                  float32(0.0), float32(0.0))
                        s0, s1, s2, s3 = mma_tf32(a_big[i][0], a_big[i][1], a_big[i][2], a_big[i][3],
                                                  b_small[j][0], b_small[j][1], s0, s1, s2, s3)
                        # … the large one on its own, from zero (the two chains run side by side) …
                        d0, d1, d2, d3 = mma_tf32(a_big[i][0], a_big[i][1], a_big[i][2], a_big[i][3],
                                                  b_big[j][0], b_big[j][1], float32(0.0), float32(0.0),
                                                  float32(0.0), float32(0.0))
                        # … then both added to the running sum by the FP32 units, which round to nearest.
                        acc[i][j][0] += d0 + s0 * SMALL_UNSCALE
                        acc[i][j][1] += d1 + s1 * SMALL_UNSCALE
                        acc[i][j][2] += d2 + s2 * SMALL_UNSCALE
                        acc[i][j][3] += d3 + s3 * SMALL_UNSCALE
            compute_stage = uint32(compute_stage + 1)
            if compute_stage == STAGES:
                compute_stage = uint32(0)

    # Lane (group, pair) holds C[group][2·pair], C[group][2·pair + 1], C[group + 8][…] of every piece.
    special = 0  # did this lane store an inf or NaN?
    for i in unroll(MMA_TILES_M):
        for j in unroll(MMA_TILES_N):
            for r in unroll(4):
                row = block_row + warp_row + group + (i * 16 + r // 2 * 8)
                col = block_col + warp_col + pair * 2 + (j * 8 + r % 2)
                if EDGE:
                    store_if_inside(c, row, col, m, n, acc[i][j][r])
                else:
                    c[row * n + col] = acc[i][j][r]
                if not math.isfinite(acc[i][j][r]):
                    special = 1

    # Specials: an inf or NaN in A or B (the split's inf − inf) or a sum past float32's range leaves an inf or NaN in
    # the tile; finite inputs whose sums fit never do. Then the block computes its tile again as cuBLAS SGEMM does,
    # one float32 FMA per k in order, which gives exactly SGEMM's inf/NaN pattern (docs/fp32_contract.md).
    if cuda.syncthreads_or(special):
        for slot in range(MMA_TILES_M * MMA_TILES_N * 4):  # this lane's results, numbered as the store above
            piece_m, piece_n, q = slot // (MMA_TILES_N * 4), slot // 4 % MMA_TILES_N, slot % 4
            row = block_row + warp_row + group + (piece_m * 16 + q // 2 * 8)
            col = block_col + warp_col + pair * 2 + (piece_n * 8 + q % 2)
            if row < m and col < n:
                total = float32(0.0)
                for kk in range(k):
                    total = cuda.fma(a[row * k + kk], b[kk * n + col], total)
                c[row * n + col] = total


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 256  # columns of C per thread block
    BLOCK_K: int = 32  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 16  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    STAGES: int = 3  # k-tiles in the cp.async pipeline: tile t + 2 is in flight while tile t is computed (step 12's)
    MMA_PRODUCTS: int = 3  # three mma.sync products per piece and k-step: small·big, big·small, big·big

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
    def WARP_TILE_M(self) -> int:  # a warp's tile: a lane holds 2 rows × 2 columns of each 16×8 piece
        return 8 * self.THREAD_M

    @property
    def WARP_TILE_N(self) -> int:
        return 4 * self.THREAD_N

    @property
    def WARPS_N(self) -> int:  # warps along a row of the block tile
        return self.BLOCK_N // self.WARP_TILE_N

    @property
    def MMA_TILES_M(self) -> int:  # 16×8 mma pieces of C per warp tile, down …
        return self.WARP_TILE_M // 16

    @property
    def MMA_TILES_N(self) -> int:  # … and across
        return self.WARP_TILE_N // 8

    # Padding, so that a warp's 32 fragment reads hit 32 different banks: rows `group` of A start 4 banks apart
    # (A_STRIDE ≡ 4 mod 32), rows `pair` of B start 8 banks apart (B_STRIDE ≡ 8 mod 32).
    @property
    def A_STRIDE(self) -> int:  # floats per row of a stage of A ([row][k])
        return self.BLOCK_K + 4

    @property
    def B_STRIDE(self) -> int:  # floats per row of a stage of B ([k][col])
        return self.BLOCK_N + 8

    @property
    def A_STAGE_FLOATS(self) -> int:
        return self.BLOCK_M * self.A_STRIDE

    @property
    def B_STAGE_FLOATS(self) -> int:
        return self.BLOCK_K * self.B_STRIDE

    @property
    def SHARED_BYTES(self) -> int:
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS) * 4

    @property
    def DYNAMIC_SHARED(self) -> bool:  # the stages always live in one dynamic array, whatever its size
        return True

    @property
    def B_BASE(self) -> int:  # where B's stages start in it
        return self.STAGES * self.A_STAGE_FLOATS

    def problems(self) -> list[str]:
        warps_m = self.BLOCK_M // self.WARP_TILE_M
        if (warps_m * self.WARP_TILE_M != self.BLOCK_M or self.WARPS_N * self.WARP_TILE_N != self.BLOCK_N
                or self.THREAD_M % 2 or self.THREAD_N % 2 or self.BLOCK_K % 8):
            return [f"tensor-core tiling needs BLOCK_M, BLOCK_N to split into {self.WARP_TILE_M}×{self.WARP_TILE_N} "
                    "warp tiles, even THREAD_M and THREAD_N, and BLOCK_K a multiple of 8"]
        return []


#: Step 12's candidates, tuned apart from step 12's. First: the fastest on an H100 for both steps 12 and 13
#: (experiments/results/experiment-tensor-cores-nvidia-h100.json).
SEARCH_SPACE = [
    Config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=1),
    Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1),
]


#: On Numba's simulator (no GPU): the same kernel on smaller tiles, 4 warps of 32×16 (the shipped 128×256 tiles take
#: about a minute per product there, where every mma is a meeting of 32 Python threads).
SIMULATOR_CONFIG = Config(BLOCK_M=64, BLOCK_N=32, BLOCK_K=16, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, overrides: dict | None = None) -> TiledKernels:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    return TiledKernels("three_tf32", three_tf32_kernel, Config.of(config), overrides=overrides,
                        min_compute_capability=MIN_COMPUTE_CAPABILITY)


TUNING = Tuning(build, "three_tf32", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

# Per piece: 3 products; per fragment element: one split (an add and an and for big, a sub.f32 and a mul.f32 for
# small·2^11); per piece and k-step, one FMA per result (d + s·2^-11), and one in the specials' SGEMM loop.
PTX_EXPECT = tensor_cores.ptx_claims("three_tf32", default_config(SEARCH_SPACE), products_per_piece=3,
                                     rounding={"sub.f32": 1, "mul.f32": 1}, a_by_ldmatrix=False)
_PIECES = PTX_EXPECT["three_tf32_fast"]["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"] // 3
PTX_EXPECT["three_tf32_fast"]["fma.rn.f32"] = f">={4 * _PIECES + 1}"  # LLVM unrolls the SGEMM loop a few times
