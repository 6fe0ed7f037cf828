"""Step 16 — the copy engine feeds the tensor cores: TMA, an mbarrier ring, and a wgmma always in flight.

Changed from step 15 (same ``wgmma``, same 256×128 tiles, same TF32 arithmetic): how the tiles arrive and when the
tensor cores wait.

* **TMA instead of every thread copying.** In step 15 all 256 threads issue 16-byte ``cp.async`` copies for each
  k-tile, wait for their own copies and meet the whole block at ``bar.sync`` before anyone reads the tile — once per
  k-tile, so the two warpgroups march in step and each one's pause is the other's too. Here thread 0 asks the copy
  engine (the Tensor Memory Accelerator) for a whole k-tile in two instructions (``copy_tile``: A's 256 × 32 box,
  written in the 128-byte swizzle layout ``wgmma`` reads, and B's 32 × 136 box, rows padded as step 15 pads them).
  The copy engine reads the matrices through *tensor maps* made on the host (``toolkit/tma_tiles.py``).
* **An mbarrier ring instead of bar.sync.** STAGES = 4 shared-memory stages, k-tile t in stage t % STAGES. Each stage
  has two *mbarriers* — counters in shared memory that threads and the copy engine arrive on, and that complete a
  *phase* when the expected arrivals (and bytes) are in: **full[s]** completes when the copy engine has written all
  of the stage's bytes; **empty[s]** when all 8 warps have finished reading it. A waiter names the phase it waits
  for by its parity: the r-th fill of stage s completes phase r of full[s], so k-tile u waits on parity
  (u // STAGES) % 2. Thread 0 loads LOAD_AHEAD = 2 k-tiles ahead and waits on empty[s] before refilling a stage. No
  block-wide barrier is left in the main loop.
* **A k-tile of wgmma always in flight.** Steps 14–15 start every k-tile with ``warpgroup_wait_all``: the last
  ``wgmma`` must finish before the fragment registers they read can be loaded again, so the tensor cores idle while
  the warpgroup loads, rounds and fences the next 16 fragment values. Here the fragments alternate between two
  register sets: k-tile u loads set u % 2 while k-tile u − 1's ``wgmma`` (reading the other set) still run, issues
  its own, and then waits with ``warpgroup_wait_but_one`` (``wgmma.wait_group 1``) — for all groups but the newest.
  With one set of registers that wait would be illegal: the next loads would overwrite registers an in-flight
  ``wgmma`` reads, which the PTX ISA forbids. A register tile takes compile-time indices only, so the loop takes
  two turns a pass (``for half in unroll(2)``), and LOAD_AHEAD is even so that turn t's parity is k-tile u's.
* **Tiles in grouped order** (step 10's idea): block b of the grid computes tile b counted column by column within
  groups of GROUP_M = 8 tile-rows, so the 132 blocks resident at once share rows of A and columns of B in L2. The
  division by the group's height is a 32-bit one (``divide_u32``): Numba's ``//`` on integers is 64-bit, a call in
  SASS, and any call makes ptxas serialise every ``wgmma`` in the kernel (warning C7509).

Why faster: the tensor cores no longer wait for the block's slowest warp at a barrier, nor for their own fragment loads;
at 8192³ the grouped order halves the bytes read from DRAM (Nsight Compute: 4.69 → 2.40 GB).
Expect: lesson 16 writes the prediction down from a model before the run. Measured
(results/bench-nvidia-h200-2026-11-30.json): 325.2 TFLOPS at 4096³ and 326.9 at 8192³: 1.08× and 1.12× step 15, 81 %
and 79 % of cuBLAS TF32.

Fast kernel only: full tiles, K a multiple of 32, N of 4, 16-byte-aligned matrices. The tiles the fast kernel
skips run on step 15's edge kernel. Compute capability 9.0 only; runs on the simulator, where the copy engine and
the mbarriers are Python twins (``toolkit/mbarrier_ops.py``) and a missed arrival raises instead of hanging.
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32, uint64

from ..toolkit.intrinsics import divide_u32
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait, tensor_map_acquire)
from ..toolkit.tensor_core_ops import to_tf32
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_tiles import TmaTiles
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits, shared_address,
                                     swizzled_descriptor, warpgroup_commit, warpgroup_fence, warpgroup_wait_all,
                                     warpgroup_wait_but_one, wgmma_tf32, zero_accumulators)
from . import warpgroup_tf32

TITLE = "TMA and mbarriers: the copy engine feeds wgmma"
SUMMARY = ("The copy engine fills a ring of stages guarded by full/empty mbarriers; two fragment register sets keep "
           "a k-tile of wgmma in flight; grouped tile order.")
ARITHMETIC = "tf32"  # step 15's: A truncated by the tensor core, B's fragments rounded to TF32
#: wgmma and the copy engine's tensor copies: compute capability 9.0 only (H100, H200).
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def tma_pipeline_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                        BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, LOAD_AHEAD, WARPS,
                        BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``, its k-tiles brought by the copy engine."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
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
    # Four k-tiles in the ring (step 15's): LOAD_AHEAD = 2 copied ahead while one is computed and one is released;
    # a stage is 50,176 bytes (STAGE_BYTES) at these tiles, four take 200,704 of a block's 232,448.
    STAGES: int = 4
    # Tile-rows per group in the tile order (1 = row-major). On an H200 at 8192³: 1 → 281.7, 4 → 290.7, 8 → 294.0,
    # 16 → 291.7 TFLOPS (experiments/results/experiment-warpgroup-order-nvidia-h200.json).
    GROUP_M: int = 8

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
    def LOAD_AHEAD(self) -> int:  # k-tiles in flight ahead of the one computed
        return self.STAGES - 2

    @property
    def K_STEPS(self) -> int:  # wgmma k-steps (k = 8) per k-tile
        return self.BLOCK_K // 8

    @property
    def ACCUMULATORS(self) -> int:  # results of C a consumer thread holds: Cᵀ is BLOCK_N × BLOCK_M, 64 rows a warpgroup
        return self.BLOCK_M // 2

    @property
    def B_STRIDE(self) -> int:  # floats per row of a stage of B (the copy's box is that wide): rows 8 banks apart
        return self.BLOCK_N + 8

    @property
    def A_STAGE_FLOATS(self) -> int:  # a stage of A: BLOCK_M rows of BLOCK_K = 32 floats, one 128-byte swizzled row each
        return self.BLOCK_M * self.BLOCK_K

    @property
    def B_STAGE_FLOATS(self) -> int:
        return self.BLOCK_K * self.B_STRIDE

    @property
    def STAGE_BYTES(self) -> int:  # what one stage's copies bring (both boxes, whole): its full barrier waits for it
        return (self.BLOCK_M + self.B_STRIDE) * self.BLOCK_K * 4

    @property
    def BARRIERS(self) -> int:
        return 2 * self.STAGES  # a full and an empty barrier per stage

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

    @property
    def WARPS(self) -> int:  # warps of the block (the consumers' named barrier counts them)
        return self.THREADS // 32

    def problems(self) -> list[str]:
        warpgroups = self.BLOCK_N // 64
        if (warpgroups * 64 != self.BLOCK_N or self.THREADS != 128 * warpgroups or self.BLOCK_M % 8
                or not 8 <= self.BLOCK_M <= 256 or self.BLOCK_K != 32):
            return ["needs BLOCK_N = 64 per warpgroup of 128 threads, BLOCK_M a multiple of 8 up to 256 and "
                    "BLOCK_K = 32"]
        if self.LOAD_AHEAD % 2:
            return ["the register set of k-tile t − LOAD_AHEAD is t's parity only if LOAD_AHEAD is even"]
        return []


#: Step 15's tile: 256 rows (wgmma N = 256) × 2 consumer warpgroups.
SEARCH_SPACE = [Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one warpgroup on a 32×64 tile, as steps 14 and 15.
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, group_m: int | None = None) -> TmaTiles:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    config = Config.of(config, **({} if group_m is None else {"GROUP_M": group_m}))
    return TmaTiles("tma_pipeline", tma_pipeline_kernel, config, edge=warpgroup_tf32.build(config),
                    requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY)


TUNING = Tuning(build, "tma_pipeline", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show for one pass of the loop (two k-tiles; tests/test_ptx.py): the copy
#: engine's two tensor copies and one expect-tx per k-tile, one wgmma per k-step, per k-tile a wait for all groups
#: but the newest (and one for all after the loop), a TF32 rounding per fragment element, the one block-wide
#: barrier before the loop, no cp.async, no FP32 FMAs, no local memory, no wgmma operand written after its fence.
_GPU = default_config(SEARCH_SPACE)
PTX_EXPECT = {"tma_pipeline_fast": {
    "cp.async.bulk.tensor": 2 * 2, "mbarrier.arrive.expect_tx": 2, "wgmma.mma_async.tf32": 2 * _GPU.BLOCK_K // 8,
    "wgmma.wait_group": 2 + 1, "cvt.rna.tf32.f32": 2 * 4 * _GPU.BLOCK_K // 8, "bar.sync": 1,
    "cp.async.cg.shared.global": 0, "fma.rn.f32": 0, "local": 0, "wgmma.written_after_fence": 0}}
#: … and ptxas (nvJitLink 13.5, sm_90a; the driver's on a GPU) keeps it in registers (186 in the fast kernel, no
#: spills) and serialises no wgmma (no C7509/C7512/C7518 warning).
PTXAS_EXPECT = {"tma_pipeline_fast": {"spill_bytes": 0, "registers": "<=255", "wgmma_serialized": 0}}
