"""Step 15 — TF32 on Hopper's warpgroup MMA: step 14's kernel with one product, up to twice step 12.

Changed from step 14: the arithmetic, back to step 12's TF32. Step 12 multiplies TF32 with ``mma.sync`` and stops
near the course's TF32 target, latency-bound at 8 warps per SM (lesson 12's profile). This step runs TF32 on step 14's
``wgmma`` kernel: the same staging — A in the 128-byte swizzle layout, B's rows as they are, copies two k-tiles
ahead in a 4-stage ``cp.async`` pipeline, Cᵀ = Bᵀ·Aᵀ with Bᵀ's fragments loaded from registers after a wait — but

* one ``wgmma`` per k-step, A read as TF32 by the tensor core (it truncates) and Bᵀ's fragments rounded to TF32
  (``to_tf32``), like step 12's operands;
* one accumulator over the whole of K: TF32's own input error (about 2^-11 per input) dwarfs what the tensor core's sum
  adds, so there is nothing to flush (step 14 needs that for float32 accuracy); with the registers that frees,
* 256×128 tiles: wgmma's N = 256 rows of A, 128 accumulators per thread, two warpgroups;
* no small parts: no second shared buffer, one barrier per k-tile.

Edge tiles as in step 14 (``EDGE``: 4-byte zero-filling copies, stores only inside C). Its accuracy is TF32's: verify's
TF32 tolerance, and ``matmul`` never picks it. Runs on compute capability 9.0 only, and on the simulator.
Why faster: a ``wgmma`` does 64·256·8 multiply-adds per instruction, so far fewer instructions feed the tensor cores
than step 12's ``mma.sync`` chain; the swizzled whole-line copies keep the L2 from becoming the limit (the no-swizzle
layout held the same kernel below step 12: experiments/wgmma_swapped.py).
Expect: the experiment's swizzled TF32 build's ratio to step 12 (lesson 15), at an error above cuBLAS TF32's, as it
rounds A where the tensor core here truncates it. Measured (results/bench-nvidia-h200-2026-11-30.json): 301.6 TFLOPS
at 4096³ and 293.0 at 8192³: 2.11× and 1.94× step 12, 75 % and 71 % of cuBLAS TF32.
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import copy_async, store_if_inside
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.tensor_core_ops import copy_async_commit, copy_async_or_zero, copy_async_wait, to_tf32
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits, shared_address,
                                     swizzled_descriptor, swizzled_offset, warpgroup_commit, warpgroup_fence,
                                     warpgroup_wait_all, wgmma_tf32, zero_accumulators)

TITLE = "TF32 on Hopper's warpgroup MMA (wgmma)"
SUMMARY = "Step 14's wgmma kernel with one TF32 product per k-step and 256×128 tiles: twice step 12's speed."
ARITHMETIC = "tf32"  # inputs rounded (B) or truncated (A) to TF32: verify uses harness.verify.tf32_tolerance
#: wgmma exists on compute capability 9.0 only (sm_90a: H100, H200); verify and bench skip the step elsewhere.
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def warpgroup_tf32_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                          BLOCK_M, BLOCK_N, BLOCK_K, THREADS, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW,
                          B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, LOAD_AHEAD, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE,
                          EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B, computed as Cᵀ by TF32 ``wgmma``; a, b, c flat row-major float32."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    # STAGES stages of A (128-byte swizzled rows), then STAGES stages of B ([k][col], rows padded to B_STRIDE).
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    # The swizzled tiles must start at 1,024-byte-aligned addresses; the array is only 16-byte aligned (and
    # static shared memory before it would move it): start at its first aligned float (layout's slack).
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    base = shared_address(tiles, 0)
    fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
    acc = zero_accumulators(ACCUMULATORS)
    b_frag = registers(K_STEPS, 4)
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K

    for t in range(k_tiles + LOAD_AHEAD):
        copy_async_wait(LOAD_AHEAD - 1)
        fence_proxy_async()
        cuda.syncthreads()
        if t < k_tiles:
            k0 = uint32(t * BLOCK_K)
            stage_a = uint32(t % STAGES * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + t % STAGES * B_STAGE_FLOATS)
            for load in unroll(A_LOADS):
                chunk = tid + load * THREADS
                row = chunk // A_VECTORS_PER_ROW
                kc = chunk % A_VECTORS_PER_ROW
                to = stage_a + swizzled_offset(row, kc)
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, to + q, a, block_row + row, k0 + kc * 4 + q, m, k)
                else:
                    copy_async(tiles, to, a, (block_row + row) * k + k0 + kc * 4, 4)
            for load in unroll(B_LOADS):
                chunk = tid + load * THREADS
                kk = chunk // B_VECTORS_PER_ROW
                col = chunk % B_VECTORS_PER_ROW * 4
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_b + kk * B_STRIDE + col + q, b, k0 + kk, block_col + col + q,
                                           k, n)
                else:
                    copy_async(tiles, stage_b + kk * B_STRIDE + col, b, (k0 + kk) * n + block_col + col, 4)
        copy_async_commit()
        if t >= LOAD_AHEAD:
            stage_a = uint32((t - LOAD_AHEAD) % STAGES * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + (t - LOAD_AHEAD) % STAGES * B_STAGE_FLOATS)
            acc = warpgroup_wait_all(acc)  # the previous k-tile's wgmma are done: its fragment registers are free
            for s in unroll(K_STEPS):
                for q in unroll(4):
                    x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                    b_frag[s][q] = operand_bits(to_tf32(x))  # into the wgmma's registers, before the fence
            warpgroup_fence()
            for s in unroll(K_STEPS):
                acc = wgmma_tf32(tiles, b_frag[s][0], b_frag[s][1], b_frag[s][2], b_frag[s][3],
                                 swizzled_descriptor(base + (stage_a * 4 + s * 32)), acc, 1)
            warpgroup_commit()
    acc = warpgroup_wait_all(acc)

    for v in unroll(ACCUMULATORS):
        row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
        col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        if EDGE:
            store_if_inside(c, row, col, m, n, acc[v])
        else:
            c[row * n + col] = acc[v]


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 256  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 32  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 16  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    # Four k-tiles in shared memory (step 14's): LOAD_AHEAD = 2 copied ahead (cp.async) while one is computed and
    # one drains.
    STAGES: int = 4

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
    def EXTRA_SHARED_FLOATS(self) -> int:  # first_aligned's slack (the swizzled stages start 1,024-byte aligned)
        return SWIZZLE_ALIGN // 4

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
            return [("needs BLOCK_N = 64 per warpgroup of 128 threads, BLOCK_M a multiple of 8 up to 256 and "
                     "BLOCK_K = 32")]
        return []


#: The fastest TF32 tile of experiments/wgmma_swapped.py on an H100: 256 rows (wgmma N = 256) × 2 warpgroups.
SEARCH_SPACE = [Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one warpgroup on a 32×64 tile, as step 14.
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, overrides: dict | None = None) -> TiledKernels:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    return TiledKernels("warpgroup_tf32", warpgroup_tf32_kernel, Config.of(config), overrides=overrides,
                        requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY)


TUNING = Tuning(build, "warpgroup_tf32", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show for one k-tile (tests/test_ptx.py): one wgmma per k-step, the 16-byte
#: copies, one barrier, one copy wait, a TF32 rounding per fragment element, no FP32 FMAs, no local memory in the
#: PTX, no wgmma operand written after its fence.
_GPU = default_config(SEARCH_SPACE)
PTX_EXPECT = {"warpgroup_tf32_fast": {
    "wgmma.mma_async.tf32": _GPU.BLOCK_K // 8, "wgmma.fence": 1, "wgmma.commit_group": 1,
    "cvt.rna.tf32.f32": 4 * _GPU.BLOCK_K // 8,
    "cp.async.cg.shared.global": (_GPU.BLOCK_M + _GPU.BLOCK_N) * _GPU.BLOCK_K // 4 // _GPU.THREADS,
    "cp.async.wait_group": 1, "bar.sync": 1, "fma.rn.f32": 0, "local": 0, "wgmma.written_after_fence": 0}}
#: … and ptxas (nvJitLink 13.5, sm_90a; the driver's on a GPU) keeps everything in registers: 234 in the fast
#: kernel, no spills in either, and no wgmma serialised (no C7512/C7518 warning) (tests/test_ptx.py, tests/test_gpu.py).
PTXAS_EXPECT = {"warpgroup_tf32_fast": {"spill_bytes": 0, "registers": "<=255", "wgmma_serialized": 0},
                "warpgroup_tf32_edge": {"spill_bytes": 0}}
