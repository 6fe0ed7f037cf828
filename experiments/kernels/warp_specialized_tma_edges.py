"""Step 17 over every tile of C in one launch: the copy engine's out-of-bounds zeros instead of step 15's edge kernel
(issue 37, Deliver 1; measured by experiments/tma_edges.py).

Step 17 (gemm_steps/steps/warp_specialized.py) runs its fast kernel only on the full tiles of C, and only where K is
a multiple of BLOCK_K = 32; every ragged border (and, where K is not a multiple of 32, the whole product) runs on step
15's edge kernel (``warpgroup_tf32``: scalar guarded loads, no producer, no ring), several times slower a tile. Yet
the copy engine already handles the border on the way in: a box that reaches past the matrix is filled with zeros
there (the maps are made with ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``: zeros, not NaN). So a partial tile and a
partial last k-tile need no code in the main loop — rows ≥ M or columns ≥ K of A's box and rows ≥ K or columns ≥ N
of B's box arrive as zeros, and a zero of A meets a zero of B (k ≥ K) or lands in a row or column of C that is not
stored. Only the store must stay inside C.

Changed from ``gemm_steps/steps/warp_specialized.py`` (copied; nothing else):

* **What the launch covers**: the grid is every tile of C, partial ones included — ⌈M / BLOCK_M⌉ tile-rows ×
  ⌈N / BLOCK_N⌉ tile-columns, block b taking tile b in step 17's grouped order (the same code, on a larger grid) —
  and the k-loop runs ⌈K / BLOCK_K⌉ k-tiles (``k_tiles``). The producer's copies are step 17's: the same boxes at
  the same coordinates (a box always starts inside the matrix: its first row, column and k are < M, N, K), and
  the full barrier waits for the same STAGE_BYTES, the two whole boxes, zeros included (below).
* **The store**: an accumulator is stored only where its row < M and its column < N.
* **The launch** (:class:`RaggedTmaTiles`): one launch of this kernel, no edge kernel, whenever the copy engine can
  read A and B — a row pitch that is a multiple of 16 bytes (K % 4 == 0 for A, N % 4 == 0 for B) and 16-byte-aligned
  base addresses (C is stored with scalar stores: its alignment does not matter). Other shapes keep step 17's path
  for them: its fast kernel cannot take them either (it needs K % 32, N % 4 and all three aligned), so they run
  wholly on step 15's edge kernel, exactly as step 17 runs them.

The last kernel arguments are the tile counts of the whole grid (step 17: of the full tiles); neither kernel reads
them (the grid's dimensions say it). B's box is B_STRIDE = BLOCK_N + 8 columns wide, so at the last tile-column even
a full tile's box reads 8 columns past N: zeros, as in step 17 (whose last full tile-column did the same).

Why it might be faster: a K that is not a multiple of 32 sends step 17's whole product to the edge kernel (every
ragged shape of experiments/tma_edges.py has one: K = 1532, 4100, 2000, 1000), and where K is a multiple of 32 the
border tiles (at 3001 × 3000: 35 of 12 × 24 tiles) run on it in a second launch after the full tiles; here all of
them run at step 17's pace in one launch. Why it might not gain as much: a border tile does a full tile's work on
partly empty boxes, and every tile pays two compares an accumulator in the store (at 4096³, all tiles full: expected
to cost nothing measurable).

Prediction: predictions/tma-edges-before-run.md (written before the run).

Compute capability 9.0 only; runs on the simulator (its copy engine's twin fills zeros outside the matrix and
completes the whole box's bytes, as this kernel expects).
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized, warpgroup_tf32
from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN, ceil_div, device_pointer, quiet_small_grids
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                             mbarrier_wait, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tiles import flat_operands
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)


def warp_specialized_tma_edges_kernel(a, b, c, m, n, k, tile_rows_all, tile_cols_all, a_map, b_map, *,
                                      BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                      BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M,
                                      CONSUMERS, PRODUCER_REGISTERS, CONSUMER_REGISTERS):
    """One BLOCK_M×BLOCK_N tile of C = A·B — full or partial — as Cᵀ by TF32 ``wgmma``: CONSUMERS warpgroups compute,
    one produces; the copy engine's zeros stand for whatever of a box lies outside A or B."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    # Block b takes tile b in grouped order: column by column within groups of GROUP_M tile-rows. The grid is every
    # tile of C, the partial ones included.
    tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
    tile = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = across * BLOCK_N  # …then on to the next column
    # Every k-tile, the last one partial where K % BLOCK_K ≠ 0: its columns ≥ K of A's box and rows ≥ K of B's
    # arrive as zeros, so they add nothing.
    k_tiles = (k + uint32(BLOCK_K - 1)) // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(k_tiles):
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                # The whole boxes' bytes, also where a box reaches past the matrix: the copy engine counts the box's
                # zero-filled part as transferred bytes too (CUTLASS's Hopper mainloops do the same: one constant
                # TmaTransactionBytes, the shared-memory boxes' size, for every k-tile of every tile, the residue
                # ones included). Counting only the bytes inside the matrix would not match what the copies complete:
                # the phase would end before the last bytes landed, and the rest would count against the next one.
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, t * BLOCK_K, barriers, stage)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
    else:  # a consumer warpgroup: takes the registers; only waits for data, multiplies and releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        acc = zero_accumulators(ACCUMULATORS)
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
            for half in unroll(2):
                u = pair + half
                if u < k_tiles:
                    stage = u % STAGES
                    stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                    mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
                    for s in unroll(K_STEPS):
                        for q in unroll(4):
                            x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                            b_frag[half][s][q] = operand_bits(to_tf32(x))
                    warpgroup_fence()
                    for s in unroll(K_STEPS):
                        a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                        acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                         b_frag[half][s][3], a_tile, acc, 1)
                    warpgroup_commit()
                    acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                    if u > 0 and lane == 0:
                        mbarrier_arrive(barriers, STAGES + (u - 1) % STAGES)
        acc = warpgroup_wait_all(acc)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            if row < m and col < n:  # a partial tile: only what lies inside C
                c[row * n + col] = acc[v]


class RaggedTmaTiles(TmaTiles):
    """A TMA build whose fast kernel covers every tile of C, partial ones included, in one launch — wherever the copy
    engine can read A and B (:meth:`fast_path_applies`); elsewhere step 17's path (all on the edge kernel)."""

    schedule = "one block per tile, partial tiles included"

    def fast_path_applies(self, a, b, c) -> bool:
        """The copy engine's rules for A's and B's tensor maps: row pitches a multiple of 16 bytes (K % 4, N % 4),
        16-byte-aligned bases; and a non-empty product (``gemm_steps`` never launches an empty one). Nothing about
        M, N or K against the tile, nor about C."""
        m, k = a.shape
        n = b.shape[1]
        return (m > 0 and n > 0 and k > 0 and k % 4 == 0 and n % 4 == 0
                and device_pointer(a) % 16 == 0 and device_pointer(b) % 16 == 0)

    def launch_through_numba(self, a, b, c, stream=0) -> None:
        if not self.fast_path_applies(a, b, c):
            # Step 17's path, with a fast-path test that fails here as step 17's own does (K % 32 implies K % 4,
            # its alignment of A, B and C that of A and B): every tile on the edge kernel, as step 17 runs them.
            super().launch_through_numba(a, b, c, stream)
            return
        cfg = self.config
        (m, n, k), flat = flat_operands(a, b, c)
        rows, cols = ceil_div(m, cfg.BLOCK_M), ceil_div(n, cfg.BLOCK_N)
        sizes = (np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(rows), np.uint32(cols))
        with quiet_small_grids():  # a small product is a small grid on purpose
            self.launch_full_tiles(flat, sizes, rows, cols, stream, (a, b))


CONFIG = warp_specialized.SEARCH_SPACE[0]
SIMULATOR_CONFIG = warp_specialized.SIMULATOR_CONFIG


def build(config: TileConfig = CONFIG, name: str = "warp_specialized_tma_edges") -> RaggedTmaTiles:
    """The build for a configuration's tiles (step 17's Config: its constants, stages, registers and grouped
    order), with step 15's edge kernel for the shapes the copy engine cannot read."""
    config = warp_specialized.Config.of(config)
    return RaggedTmaTiles(name, warp_specialized_tma_edges_kernel, config, edge=warpgroup_tf32.build(config),
                          requires_compute_capability=warp_specialized.REQUIRES_COMPUTE_CAPABILITY)


def ptx_kernels() -> dict:
    """The GPU build's fast kernel (tests/test_tma_edges.py compiles it to PTX and through ptxas)."""
    built = build(CONFIG)
    return {"warp_specialized_tma_edges_fast": (built.kernel("fast"), built.signature("fast"))}
