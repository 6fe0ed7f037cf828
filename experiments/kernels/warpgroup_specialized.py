"""Warp specialization: a producer warp that only asks the copy engine for tiles, two consumer warpgroups that only
run ``wgmma``. A candidate step (issue: Hopper's own GEMM design), measured by experiments/warpgroup_tma_bench.py.

Changed from experiments/kernels/warpgroup_tma.py (step 15 fed by TMA through full/empty mbarriers): who produces.

* There, thread 0 — a lane of warp 0, which belongs to consumer warpgroup 0 — issued each k-tile's two copies, and
  first waited on the stage's *empty* barrier for every warp to release it. ``wgmma`` is an instruction of the whole
  warpgroup, so warpgroup 0 could not start its next products while thread 0 waited for warpgroup 1, and loads ran
  only LOAD_AHEAD = 2 k-tiles ahead (3 would have thread 0 wait for its own warp): 238.6 / 233.9 TFLOPS at 4096³ /
  8192³ against step 15's 300.0 / 271.8 in the same run (experiments/results/experiment-warpgroup-tma-nvidia-h100.json).
* Here a ninth warp (threads 256–287, outside both warpgroups) is the producer. Its thread 256 walks the k-tiles:
  wait until the stage is empty, announce its bytes on the stage's full barrier, start the two copies. No consumer
  ever waits for anything but its own data, and the producer fills all STAGES = 4 stages before it first waits, so
  a stage is refilled as soon as every warp has released it: loads run up to 3 k-tiles ahead.

The consumers' loop is the TMA build's, without the producer's part. Fast kernel only (full tiles); the edge kernel
is step 15's. Compute capability 9.0 only; runs on the simulator.

Measured (H100, same runs as step 15): 308.0 / 275.7 TFLOPS at 4096³ / 8192³ against 304.9 / 271.7, then 304.1 /
277.9 against 299.5 / 268.5 with the uniform wait — 1.01–1.04× step 15, below the TMA build (1.05×) that it was
meant to beat. ptxas says why (nvJitLink 13.5, ``-v``): a ninth warp costs registers like a fourth warpgroup. With
launch bounds of 288 threads it caps every thread at 166 registers, as for 384; the consumers need ~170, so it
spills 16 bytes and "wgmma.mma_async instructions are serialized due to insufficient register resources" (C7512).
A cap of 224 instead of launch bounds compiled without spills but did not launch (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
``experiment-warpgroup-tma-uniform-wait``): the hardware, too, counts whole warpgroups. CUTLASS's answer is
``setmaxnreg`` — the producer warpgroup gives its registers to the consumers — and ptxas ignores it in the way Numba's
PTX is assembled ("to maintain compatibility across compilation units", C7504), so warp specialization waits for a way
to assemble the PTX as one whole program.
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              shared_address, swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, zero_accumulators)

from . import warpgroup_tma


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
    """The TMA build's stages and barriers, and one producer warp beside the tile's threads."""
    return {**warpgroup_tma.layout(config), "PRODUCER_THREADS": 32}


CONFIG = warpgroup_tma.CONFIG
SIMULATOR_CONFIG = warpgroup_tma.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG) -> TmaTiles:
    from gemm_steps.steps import warpgroup_tf32

    return TmaTiles("warpgroup_specialized", warpgroup_specialized_kernel, config, layout(config),
                                  edge=warpgroup_tf32.build(config),
                                  requires_compute_capability=warpgroup_tma.REQUIRES_COMPUTE_CAPABILITY)


def ptx_kernels() -> dict:
    """The fast kernel at the GPU's tiles (a ``kernels:`` job of tests/ptx_jobs.py)."""
    built = build(CONFIG)
    return {"warpgroup_specialized_fast": (built.kernel("fast"), built.signature("fast"))}


__all__ = ["build", "CONFIG", "SIMULATOR_CONFIG", "ptx_kernels"]
