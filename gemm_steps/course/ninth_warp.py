"""Deep dive 17's third kernel: the build before step 17, whose producer was a ninth *warp* instead of a warpgroup.

Deep dive 17 (``lessons/deep_dives/17_setmaxnreg_and_lto.py``) compiles it beside steps 16 and 17 and reads what
ptxas says of each (:func:`gemm_steps.course.lesson_17.ptxas_reports`, ``"gemm_steps.course.ninth_warp:ptx_kernels"``):
it has no ``setmaxnreg``, so its 288 threads are capped as if they were 384 (registers allotted a warpgroup at a
time, or a register file in four parts, one per scheduler, where the part with three warps sets the cap: for one
block the two models give the same cap, lesson 17), and its ``wgmma`` are serialised for want of registers,
assembled either way. That is why step 17's producer became a warpgroup that can give its registers back. It
lives in the package so that the deep dive runs from an installed course;
``experiments/kernels/warpgroup_specialized.py`` (its history and its H100 timings, measured by
experiments/warpgroup_tma_bench.py) re-exports it.

Changed from step 16's first build (step 15 fed by TMA through full/empty mbarriers, thread 0 also the producer):
who produces. A ninth warp (threads 256–287, outside both consumer warpgroups) is the producer. Its thread 256 walks
the k-tiles: wait until the stage is empty, announce its bytes on the stage's full barrier, start the two copies. The
consumers only wait for their own data, and the producer fills all STAGES = 4 stages before it first waits.

Fast kernel only (full tiles); the edge kernel is step 15's. Compute capability 9.0 only; runs on the simulator.
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from ..steps import warpgroup_tf32
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait, tensor_map_acquire)
from ..toolkit.tensor_core_ops import to_tf32
from ..toolkit.tile_config import TileConfig
from ..toolkit.tma_tiles import TmaTiles
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits, shared_address,
                                     swizzled_descriptor, warpgroup_commit, warpgroup_fence, warpgroup_wait_all,
                                     wgmma_tf32, zero_accumulators)

ARITHMETIC = "tf32"
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def warpgroup_specialized_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                                 BLOCK_M, BLOCK_N, BLOCK_K, THREADS, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                 BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``: THREADS consumer threads, one producer warp."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per consumer warp
    fence_proxy_async()
    cuda.syncthreads()  # the only block-wide barrier

    if tid >= THREADS:  # the producer warp: one thread issues every copy
        if tid == THREADS:
            tensor_map_acquire(a_map)
            tensor_map_acquire(b_map)
            for t in range(k_tiles):
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: every consumer warp released the last one
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
        return

    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    base = shared_address(tiles, 0)
    fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
    acc = zero_accumulators(ACCUMULATORS)
    b_frag = registers(K_STEPS, 4)
    for u in range(k_tiles):  # the consumers: k-tile u
        stage = u % STAGES
        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
        mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
        acc = warpgroup_wait_all(acc)  # k-tile u − 1's wgmma are done: its stage and fragment registers are free
        if u > 0 and lane == 0:
            mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
        for s in unroll(K_STEPS):
            for q in unroll(4):
                x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                b_frag[s][q] = operand_bits(to_tf32(x))
        warpgroup_fence()
        for s in unroll(K_STEPS):
            acc = wgmma_tf32(tiles, b_frag[s][0], b_frag[s][1], b_frag[s][2], b_frag[s][3],
                             swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32)), acc, 1)
        warpgroup_commit()
    acc = warpgroup_wait_all(acc)

    for v in unroll(ACCUMULATORS):
        row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
        col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        c[row * n + col] = acc[v]


def layout(config: TileConfig) -> dict:
    """Step 15's stages (same shapes, same padding), a full and an empty barrier per stage, the bytes one stage waits
    for, and one producer warp beside the tile's threads."""
    constants = warpgroup_tf32.Config.of(config).check().constants()
    constants["BARRIERS"] = 2 * constants["STAGES"]  # full[s] and empty[s]
    constants["WARPS"] = config.THREADS // 32  # the consumer warps: the empty barrier's arrivals
    constants["STAGE_BYTES"] = (config.BLOCK_M + constants["B_STRIDE"]) * config.BLOCK_K * 4  # both boxes, whole
    constants["PRODUCER_THREADS"] = 32
    return constants


#: Step 15's tiles on a GPU (256×128, two consumer warpgroups) and on the simulator.
CONFIG = warpgroup_tf32.SEARCH_SPACE[0]
SIMULATOR_CONFIG = warpgroup_tf32.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG) -> TmaTiles:
    return TmaTiles("warpgroup_specialized", warpgroup_specialized_kernel, config, layout(config),
                    edge=warpgroup_tf32.build(config), requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY)


def ptx_kernels() -> dict:
    """The fast kernel at the GPU's tiles, ``{label: (dispatcher, signature)}``: what deep dive 17 hands to
    :func:`gemm_steps.course.lesson_17.ptxas_reports` (and a ``kernels:`` job of tests/ptx_jobs.py)."""
    built = build(CONFIG)
    return {"warpgroup_specialized_fast": (built.kernel("fast"), built.signature("fast"))}


__all__ = ["build", "CONFIG", "SIMULATOR_CONFIG", "layout", "ptx_kernels", "warpgroup_specialized_kernel"]
