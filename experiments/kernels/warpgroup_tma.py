"""Step 15 fed the Hopper way: the copy engine (TMA) fills a ring of shared-memory stages, mbarriers say when a stage
is full and when it is empty again, and the main loop has no block-wide barrier. A candidate step (issue: Hopper's
own GEMM design), measured by experiments/warpgroup_tma_bench.py.

Changed from step 15 (``gemm_steps/steps/warpgroup_tf32.py``): only how the tiles arrive.

* Step 15: every thread issues its share of 16-byte ``cp.async`` copies for k-tile t, waits for its own copies of
  k-tile t − 2, and the whole block meets at ``bar.sync`` before anyone reads them — once per k-tile, so the two
  warpgroups march in step, and each one's pause between k-tiles (wait for the last ``wgmma``, load fragments) is
  the other's pause too.
* Here one thread asks the copy engine for the whole k-tile in two ``copy_tile``: A's 256 × 32 box (its tensor map
  writes the 128-byte swizzle layout ``wgmma`` reads) and B's 32 × 136 box — 8 columns wider than the tile, so each
  row lands padded exactly as step 15 pads it (the fragment loads stay conflict-free; past B's last column the copy
  engine writes zeros). It arrives on the stage's **full** barrier with the stage's byte count; the phase completes
  when every byte has landed. A consumer waits on that barrier alone. When a warp's ``wgmma`` on a stage have
  retired, its lane 0 arrives on the stage's **empty** barrier; the producer waits for all 8 arrivals before it
  refills the stage. All warps still compute; thread 0 also produces (warp specialization is the next step).

How it got here, each build in the same run as step 15 (H100, TFLOPS at 4096³ / 8192³, files in experiments/results):

1. B as 32 rows of 512 bytes, one ``copy_bulk`` per lane of warp 0: 127 / 132 against 297 / 267
   (``experiment-warpgroup-tma-bulk-rows``). 33 copy-engine operations per k-tile, where a k-tile of ``wgmma``
   takes ≈ 1,100 clocks: the copy engine's per-operation cost, not bandwidth, set the pace.
2. B as one padded box: 238.6 / 233.9 against 300.0 / 271.8 (``experiment-warpgroup-tma``), still 20 % / 14 %
   slower. ptxas said why, on a CPU (nvJitLink's ``-v``): "wgmma.mma_async instructions are serialized due to
   program dependence on compiler-inserted WG.DP in divergent path" (C7518). The divergent path was the barrier
   wait, a Python ``while`` loop that became ordinary branches, which ptxas must assume differ between lanes.
3. The wait as one block of PTX with ``bra.uni`` branches (``mbarrier_ops.mbarrier_wait``): 316.3 / 289.7 against
   305.2 / 274.5 (``experiment-warpgroup-tma-uniform-wait``), and 314.6 / 283.7 against 299.5 / 268.5 in the next
   run (``experiment-warpgroup-overlap``): 1.04–1.06× step 15, the +5–10 % the bench predicted for warpgroups no
   longer held in step by a barrier.

Ring: STAGES = 4, k-tile t in stage t % STAGES; the r-th fill of a stage completes phase r of its full barrier
(waiters use parity r % 2), the r-th release phase r of its empty barrier. Loads run LOAD_AHEAD = 2 k-tiles ahead:
k-tile t's stage last held k-tile t − 4, released once every warp is past k-tile t − 3, which warp 0 — producing
k-tile t before computing k-tile t − 2 — never waits on itself for (LOAD_AHEAD = 3 would deadlock).

Fast kernel only: full tiles, K a multiple of 32, N of 4, 16-byte-aligned matrices. The edge kernel is step 15's
(``TmaTiles(edge=…)``, ``gemm_steps/toolkit/tma_tiles.py``). Compute capability 9.0 only; runs on the simulator
(the twins copy at once).
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warpgroup_tf32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx,
                                             mbarrier_init, mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              shared_address, swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, zero_accumulators)

ARITHMETIC = "tf32"
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def warpgroup_tma_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                         BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, LOAD_AHEAD, WARPS,
                         BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``, its k-tiles brought by the copy engine."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
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
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    for t in range(k_tiles + LOAD_AHEAD):
        if tid == 0 and t < k_tiles:  # thread 0 produces: k-tile t into stage t % STAGES
            stage = t % STAGES
            if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every warp released the last one
                mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
            mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
            copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, stage)
            copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
        if t >= LOAD_AHEAD:  # every warp computes k-tile u
            u = t - LOAD_AHEAD
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
    """Step 15's stages (same shapes, same padding), the ring's barriers and the bytes one stage waits for."""
    constants = warpgroup_tf32.Config.of(config).check().constants()
    constants["BARRIERS"] = 2 * constants["STAGES"]  # a full and an empty barrier per stage
    constants["WARPS"] = config.THREADS // 32
    constants["STAGE_BYTES"] = (config.BLOCK_M + constants["B_STRIDE"]) * config.BLOCK_K * 4  # both boxes, whole
    return constants


CONFIG = warpgroup_tf32.SEARCH_SPACE[0]
SIMULATOR_CONFIG = warpgroup_tf32.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG) -> TmaTiles:
    return TmaTiles("warpgroup_tma", warpgroup_tma_kernel, config, layout(config),
                    edge=warpgroup_tf32.build(config), requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY)


def ptx_kernels() -> dict:
    """The fast kernel at the GPU's tiles, ``{label: (dispatcher, signature)}`` (a ``kernels:`` job of
    tests/ptx_jobs.py)."""
    built = build(CONFIG)
    return {"warpgroup_tma_fast": (built.kernel("fast"), built.signature("fast"))}


__all__ = ["build", "CONFIG", "SIMULATOR_CONFIG", "ptx_kernels"]
