"""Step 12 — TF32 tensor cores: a warp multiplies 16×8×8 tiles in one instruction.

Changed from step 11: the arithmetic. The kernel goes back to step 9's form — one block per 128×256 tile of C,
warp tiles inside it; the persistent loop and the stream-K split of steps 10–11 are left out here, to keep the new
part in view — and its inner loop no longer issues THREAD_M × THREAD_N FFMAs per k. A warp hands a 16×8 piece of A and an 8×8 piece of B to the tensor core with
``mma_tf32`` (PTX ``mma.sync.m16n8k8``, SASS ``HMMA``), which adds their product into a 16×8 piece of C:
16·8·8 = 1,024 multiply-adds (2,048 FLOPs) in one instruction. Each lane passes fixed elements of each piece
(``group = lane // 4`` picks rows of A and C and a column of B, ``pair = lane % 4`` picks k), so a warp tile of WARP_TILE_M × WARP_TILE_N is
(WARP_TILE_M / 16) × (WARP_TILE_N / 8) ``mma`` tiles, and a thread still owns THREAD_M × THREAD_N results of C —
8 × 16 for the shipped 64×64 warp tile (4 × 8 mma tiles).

Operands are rounded to TF32 (10 mantissa bits instead of 23) with ``to_tf32`` as they are read from shared
memory: products are exact, but each input keeps only about 3 decimal digits, so the result's relative error is
about 3e-4 instead of float32's 1e-6. This step has its own tolerance in ``verify`` and ``matmul`` never picks it.
(In this kernel ptxas makes each ``cvt.rna.tf32.f32`` two SASS instructions, an inf/NaN test and an add of half a
TF32 unit: it drops the clearing of the 13 low bits, which the tensor core ignores. Nothing safe is cheaper:
experiments/tf32_conversion.py.)

Also new: copies from global to shared memory go through ``cp.async`` (no registers on the way) in a STAGES-deep
pipeline — tile t + STAGES - 1 is in flight while tile t is computed — with one barrier per k-tile. Shared tiles are
padded (A rows of BLOCK_K + 4 floats, B rows of BLOCK_N + 8) so that a warp's 32 fragment reads fall in 32 different
banks. A's four fragment values of a piece come from one ``load_matrix_x4`` (PTX ``ldmatrix``: each lane names one
16-byte row of the piece, and the warp gets back exactly a0 … a3 per lane) instead of four scalar loads; B's stay scalar
(its fragments run down a column of the [k][col] tile, which ``ldmatrix`` cannot read for 32-bit values). Each thread
works out where its copies come from and go once, before the k-loop, in 32-bit arithmetic, and moves them on by one
k-tile per copy; stages are counted with two small counters. (Recomputed every k-tile from the tile number — 64-bit
index arithmetic and a division by STAGES, as Numba compiles ``t % STAGES`` and ``uint32`` products — they were a
quarter of the instructions a warp issued per k-tile, and this step ran slower: experiments/tensor_core_speed.py and its
results.)
Why faster: an SM's tensor cores do 8× more multiply-adds per cycle than its FP32 units.
Expect: several times step 9 at 4096³, at TF32 accuracy; lesson 12 predicts it from step 11's share of its roof and an
instruction budget. Measured (results/bench-nvidia-h200-2026-11-30.json): 142.6 TFLOPS at 4096³ and 150.9 at 8192³.
Lesson 12 reads its Nsight Compute profile: the kernel is latency-bound, and ``mma.sync`` occupies the tensor pipe
longer per HMMA than the dense TF32 rate allows.
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import copy_async, store_if_inside
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.tensor_core_ops import (copy_async_commit, copy_async_or_zero, copy_async_wait, load_matrix_x4,
                                       mma_tf32, to_tf32)
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll

TITLE = "TF32 tensor cores: mma.sync on 16×8×8 tiles"
SUMMARY = "Each warp multiplies 16×8 by 8×8 tiles with one tensor-core instruction; operands rounded to TF32."
ARITHMETIC = "tf32"  # inputs rounded to TF32: verify uses harness.verify.tf32_tolerance
#: mma.sync on TF32 operands and cp.async exist from Ampere (compute capability 8.0) on; verify and bench
#: skip the step on older GPUs, saying so.
MIN_COMPUTE_CAPABILITY = (8, 0)


def tensor_core_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                       BLOCK_M, BLOCK_N, BLOCK_K, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N, MMA_TILES_M,
                       MMA_TILES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_STRIDE, B_STRIDE,
                       STAGES, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B on the tensor cores; a, b, c are flat row-major float32 arrays."""
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
    # Where this lane's fragment reads start in a stage (the pieces add compile-time offsets). A goes through
    # ldmatrix, where each lane names one 16-byte row: lanes 0–7 rows 0–7 of a piece at k 0–3 (they come back as a0),
    # lanes 8–15 rows 8–15 (a1), lanes 16–23 rows 0–7 at k 4–7 (a2), lanes 24–31 rows 8–15 at k 4–7 (a3).
    a_read = (warp_row + lane % 16) * A_STRIDE + lane // 16 * 4
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
    a_frag = registers(MMA_TILES_M, 4)
    b_frag = registers(MMA_TILES_N, 2)

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
                for i in unroll(MMA_TILES_M):  # a0 … a3 of piece i (rows group, group + 8; k pair, pair + 4) …
                    x0, x1, x2, x3 = load_matrix_x4(tiles, a_base + (i * 16 * A_STRIDE + kk))  # … in one ldmatrix
                    a_frag[i][0], a_frag[i][1] = to_tf32(x0), to_tf32(x1)
                    a_frag[i][2], a_frag[i][3] = to_tf32(x2), to_tf32(x3)
                for j in unroll(MMA_TILES_N):  # column group of piece j; k = pair, pair + 4
                    b_frag[j][0] = to_tf32(tiles[b_base + (kk * B_STRIDE + j * 8)])
                    b_frag[j][1] = to_tf32(tiles[b_base + ((kk + 4) * B_STRIDE + j * 8)])
                for i in unroll(MMA_TILES_M):
                    for j in unroll(MMA_TILES_N):
                        acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3] = mma_tf32(
                            a_frag[i][0], a_frag[i][1], a_frag[i][2], a_frag[i][3], b_frag[j][0], b_frag[j][1],
                            acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])
            compute_stage = uint32(compute_stage + 1)
            if compute_stage == STAGES:
                compute_stage = uint32(0)

    # Lane (group, pair) holds C[group][2·pair], C[group][2·pair + 1], C[group + 8][…] of every piece.
    for i in unroll(MMA_TILES_M):
        for j in unroll(MMA_TILES_N):
            for r in unroll(4):
                row = block_row + warp_row + group + (i * 16 + r // 2 * 8)
                col = block_col + warp_col + pair * 2 + (j * 8 + r % 2)
                if EDGE:
                    store_if_inside(c, row, col, m, n, acc[i][j][r])
                else:
                    c[row * n + col] = acc[i][j][r]


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
    STAGES: int = 3  # k-tiles in the cp.async pipeline: tile t + 2 is in flight while tile t is computed
    MMA_PRODUCTS: int = 1  # mma.sync products per piece and k-step (step 13: 3)

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


#: First: the fastest on an H100 for both steps 12 and 13 (experiments/results/experiment-tensor-cores-nvidia-h100.json).
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
    return TiledKernels("tensor_cores", tensor_core_kernel, Config.of(config), overrides=overrides,
                        min_compute_capability=MIN_COMPUTE_CAPABILITY)


TUNING = Tuning(build, "tensor_cores", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use


def ptx_claims(name: str, config: TileConfig, products_per_piece: int, rounding: dict, a_by_ldmatrix: bool) -> dict:
    """What the fast kernel's PTX must show for one unrolled k-tile (checked by tests/test_ptx.py): the mma pieces
    times the products per piece, the rounding of every fragment element (``rounding``: PTX instruction → how many
    per element), 16-byte cp.async copies, one barrier and one wait per k-tile, no FP32 FMAs, no local memory.
    ``config``: the tiles a GPU build uses (the PTX is compiled for them, also on a machine without a GPU).
    ``a_by_ldmatrix``: A's fragments come in one ``ldmatrix`` per piece instead of four scalar shared loads."""
    shape = Config.of(config).check().constants()
    pieces = shape["MMA_TILES_M"] * shape["MMA_TILES_N"] * config.BLOCK_K // 8
    fragments = (4 * shape["MMA_TILES_M"] + 2 * shape["MMA_TILES_N"]) * config.BLOCK_K // 8
    a_matrices = shape["MMA_TILES_M"] * config.BLOCK_K // 8 if a_by_ldmatrix else 0  # one per piece and k-step
    copies = (config.BLOCK_M + config.BLOCK_N) * config.BLOCK_K // 4 // config.THREADS
    return {f"{name}_fast": {"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": pieces * products_per_piece,
                             "cvt.rna.tf32.f32": 0,
                             **{instruction: fragments * count for instruction, count in rounding.items()},
                             "ld.shared.f32": fragments - 4 * a_matrices,
                             "ldmatrix.sync.aligned.m8n8.x4.shared.b16": a_matrices,
                             "cp.async.cg.shared.global": copies, "cp.async.wait_group": 1,
                             "bar.sync": 1, "fma.rn.f32": 0, "local": 0}}


PTX_EXPECT = ptx_claims("tensor_cores", default_config(SEARCH_SPACE), products_per_piece=1,
                        rounding={"cvt.rna.tf32.f32": 1}, a_by_ldmatrix=True)
