"""Step 20 with cuBLAS's epilogue: C leaves through shared memory and the copy engine (TMA stores), not as scalar stores.

The one change from step 20 (``gemm_steps/steps/cluster_multicast.py``; ``diff`` the two files) is the end of a
consumer warpgroup. Step 20 writes its 128 accumulators a thread straight to C (``c[row * n + col] = acc[v]``): 128
scalar ``st.global`` per thread, each warp's store touching 8 rows × 8 columns. cuBLAS's TF32 kernel on Hopper stores
C with the copy engine instead (results/reference-nvidia-h200-2026-11-28.json: 256 ``UTMASTG.4D`` in its SASS): the
threads write their results into shared memory, and one thread asks the copy engine to write whole boxes of C. Here
(toolkit/tma_store_ops.py):

1. after its last ``warpgroup_wait_all``, each consumer warpgroup meets the other at a named barrier (why: the
   comment in the kernel), then writes its 256 × 64 part of C into the stage memory, which no one reads any more —
   as two boxes of 256 rows × 32 columns (128 bytes a row) in the 128-byte swizzle layout, so that a warp's 32
   scalar stores hit 32 different banks (conflict-free; the plain 64-column layout would be 4-way conflicted);
2. ``fence_proxy_async()`` (the threads' generic-proxy writes → visible to the copy engine's async-proxy reads) and a
   named barrier over the warpgroup's 128 threads;
3. its first thread issues ``store_tile`` of both boxes through C's tensor map (made on the host like A's and B's,
   a third map argument: :class:`TmaStoreTiles`), commits them as one bulk group and waits until the copy engine
   has *read* the boxes (``store_wait_read(0)``) before the block's last ``cluster_sync``: shared memory must outlive
   the store's reads. (The writes to global memory complete before the grid does, as in CUTLASS's epilogue.)

Why it might be faster: the store of C becomes 4 bulk copies a block instead of 32,768 scalar stores, each warp's
store instruction 32 scattered 4-byte pieces of 8 rows; the copy engine writes whole 128-byte lines. Why it might not:
C is 1/K of the traffic (the main loop dominates at 4096³), and the epilogue adds 128 shared stores a thread, two
named barriers and the copy's latency at the end of every tile (step 20 has one tile a block, no overlap with the
next tile's main loop).
Prediction: predictions/tma-store-before-run.md (written before the run). Timed by experiments/tma_store_epilogue.py.

Fast kernel only, as step 20: full tiles in whole clusters; the rest runs on step 20's edge kernel (step 15's).
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import cluster_multicast, warpgroup_tf32
from gemm_steps.toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init,
                                            mbarrier_arrive_cluster)
from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kept import Kept
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN, device_pointer
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
                                             named_barrier_sync, tensor_map_2d, tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_store_ops import store_commit, store_tile, store_wait_read
from gemm_steps.toolkit.tma_tiles import ClusterTmaTiles, TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

ARITHMETIC = "tf32"  # step 20's


def cluster_multicast_tma_store_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, c_map, *,
                                       BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                       BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M,
                                       CONSUMERS, PRODUCER_REGISTERS, CONSUMER_REGISTERS, CLUSTER, A_HALF_ROWS,
                                       CLUSTER_MASK, C_BOX_COLS, C_BOXES, C_BOX_FLOATS, C_STAGING_FLOATS,
                                       EPILOGUE_MEET, EPILOGUE_WRITTEN):
    """Step 20's kernel; each consumer warpgroup stores its part of C through shared memory and the copy engine."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rank = cluster_rank()  # this block's place in its cluster: blockIdx.x % CLUSTER
    # Cluster j takes pair j of tiles in grouped order (step 16's, over pairs); block r of it the pair's r-th column.
    tile_rows, pair_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x) // CLUSTER
    cluster_index = uint32(cuda.blockIdx.y) * pair_cols + uint32(cuda.blockIdx.x) // CLUSTER
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = cluster_index - first_row * pair_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = (across * CLUSTER + rank) * BLOCK_N  # …then on to the next pair of columns
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: this block's producer arrives once; both blocks' bytes land
            mbarrier_init(barriers, STAGES + s, CLUSTER * WARPS)  # empty: every consumer warp of the cluster
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
        fence_mbarrier_init()  # the initialised barriers → visible to the peer block's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(k_tiles):
                stage = t % STAGES
                if t >= STAGES:  # refill: wait until every consumer warp of *both* blocks released the stage
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)  # all of A (two halves) and B land here
                copy_tile_multicast(tiles, stage * A_STAGE_FLOATS + rank * A_HALF_ROWS * BLOCK_K, a_map,
                                    block_row + rank * A_HALF_ROWS, t * BLOCK_K, barriers, stage, CLUSTER_MASK)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
    else:  # a consumer warpgroup: takes the registers; only waits for data, multiplies and releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        if tid % 128 == 0:  # the thread that will issue this warpgroup's stores of C
            tensor_map_acquire(c_map)
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
                    mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # both halves of A and B have landed
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
                        for r in unroll(CLUSTER):  # … here and in the peer, whose producer multicasts into it too
                            mbarrier_arrive_cluster(barriers, STAGES + (u - 1) % STAGES, r)
        acc = warpgroup_wait_all(acc)

        # The epilogue: C through shared memory and the copy engine. Where to stage it, and when:
        # * no copy will write this block's stages any more: this warpgroup waited on every k-tile's full barrier,
        #   whose phase completes only when all its bytes have landed — this block's B, both halves of A (the
        #   peer's multicast included) — and there is no k-tile after the last;
        # * but the other consumer warpgroup may still be in its last k-tiles: reading B fragments from a stage
        #   with ld.shared, its wgmma reading A from a stage. The producer's last refill waited only for the
        #   release of k-tile k_tiles − 1 − STAGES, so the other warpgroup may be as far back as k-tile
        #   k_tiles − STAGES and still read *every* stage: no part of the stage memory is free for sure. So the
        #   consumer warpgroups first meet at a named barrier (EPILOGUE_MEET, all CONSUMERS × 128 threads; the
        #   producer warpgroup takes no part): past it every wgmma of the block has completed (each warpgroup's
        #   wait_all) and every fragment load is done, and the whole stage memory is free. (The wgmma read A through
        #   the async proxy; their completion, seen by wait_all and passed on by the barrier, orders those reads
        #   before the generic writes below, as the ring relies on wait_but_one before a stage is refilled.) The
        #   two warpgroups wait on the same full barriers, so they should reach the meeting close together: it is
        #   expected to cost little (unmeasured). Nothing reads the stages after it: the peer block never reads
        #   this block's shared memory, it only writes (the multicasts, all landed) and arrives on the barriers,
        #   which live in their own static array, outside the stages. The producer warpgroup reads none of it.
        # * Layout: warpgroup w's 64 columns × BLOCK_M rows at w · C_STAGING_FLOATS, as C_BOXES = 2 boxes of
        #   BLOCK_M rows × C_BOX_COLS = 32 columns (128 bytes a row), each 1,024-byte aligned (BLOCK_M is a multiple
        #   of 8), in the 128-byte swizzle: the 16-byte chunk j of row r sits at chunk j ^ (r % 8). For one
        #   accumulator v a warp writes rows r0 + 2·(lane % 4) (4 rows, r % 8 ∈ {0, 2, 4, 6} + v % 2) and columns
        #   x0 + lane // 4 (8 columns, two chunks 2i, 2i + 1): the 8 swizzled chunks differ and each spans 4 banks,
        #   so the 32 stores hit 32 banks — conflict-free. (A dense 64-column layout: 4 lanes a bank, 4-way.)
        named_barrier_sync(EPILOGUE_MEET, CONSUMERS * 128)
        staging = warpgroup * C_STAGING_FLOATS
        for v in unroll(ACCUMULATORS):
            row = lane % 4 * 2 + (v // 4 * 8 + v % 2)  # in the tile
            col = warp * 16 + lane // 4 + (v % 4 // 2 * 8)  # in this warpgroup's 64 columns
            x = col % C_BOX_COLS  # in its box
            tiles[staging + col // C_BOX_COLS * C_BOX_FLOATS + row * C_BOX_COLS
                  + ((x // 4) ^ (row % 8)) * 4 + x % 4] = acc[v]
        fence_proxy_async()  # this thread's shared stores → visible to the copy engine (the async proxy)
        named_barrier_sync(EPILOGUE_WRITTEN + warpgroup, 128)  # … and all 128 of the warpgroup's are written
        if tid % 128 == 0:
            for j in unroll(C_BOXES):
                store_tile(c_map, block_row, block_col + warpgroup * 64 + j * C_BOX_COLS, tiles,
                           staging + j * C_BOX_FLOATS)
            store_commit()
            store_wait_read(0)  # the copy engine has read the boxes: the block's shared memory may go
    cluster_sync()  # the peer's last arrivals on this block's barriers are in: its shared memory may go


@dataclass(frozen=True)
class Config(cluster_multicast.Config):
    """Step 20's constants, and the epilogue's: C's boxes, where they are staged, the named barriers."""

    @property
    def C_BOX_COLS(self) -> int:  # columns of C a store box holds: 128 bytes, the 128-byte swizzle's row
        return 32

    @property
    def C_BOXES(self) -> int:  # boxes a consumer warpgroup stores: its 64 columns
        return 64 // self.C_BOX_COLS

    @property
    def C_BOX_ROWS(self) -> int:  # every row of the tile in one box (a box side may be 256 elements)
        return self.BLOCK_M

    @property
    def C_BOX_FLOATS(self) -> int:
        return self.C_BOX_ROWS * self.C_BOX_COLS

    @property
    def C_STAGING_FLOATS(self) -> int:  # one consumer warpgroup's part of C in shared memory
        return self.C_BOXES * self.C_BOX_FLOATS

    @property
    def EPILOGUE_MEET(self) -> int:  # named barrier: the consumer warpgroups meet before the staging writes
        return 1

    @property
    def EPILOGUE_WRITTEN(self) -> int:  # named barriers EPILOGUE_WRITTEN + w: warpgroup w's threads have written
        return 2

    def problems(self) -> list[str]:
        found = super().problems()
        if found:
            return found
        if self.CONSUMERS * self.C_STAGING_FLOATS > self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS):
            return [f"C's tile ({self.BLOCK_M} × {self.BLOCK_N} floats) does not fit in the stage memory"]
        if self.EPILOGUE_WRITTEN + self.CONSUMERS > 16:
            return ["more consumer warpgroups than free named barriers"]
        return []


#: Step 20's tiles (the GPU's) and its simulator tiles, with this file's constants.
SEARCH_SPACE = [Config.of(config) for config in cluster_multicast.SEARCH_SPACE]
CONFIG = SEARCH_SPACE[0]
SIMULATOR_CONFIG = Config.of(cluster_multicast.SIMULATOR_CONFIG)


class TmaStoreTiles(ClusterTmaTiles):
    """Step 20's launch (:class:`ClusterTmaTiles`), the fast kernel taking a third tensor map: C's, boxes of
    ``C_BOX_ROWS`` × ``C_BOX_COLS`` in the 128-byte swizzle, read by the copy engine's stores. The map holds C's
    address, so a recorded launch plan is keyed by C's address too."""

    signature_fast = TmaTiles.signature_fast[:-1] + ", uint64[::1])"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.c_maps = Kept(self.MAPS_KEPT)

    def plan_key(self, a, b, pointers, stream) -> tuple:
        return (*super().plan_key(a, b, pointers, stream), pointers[2])  # the plan holds C's tensor map too

    def c_map(self, c, m: int, n: int):
        """C's tensor map (a device array), made on first use for this buffer and shape. ``c``: C, flat."""
        return self.c_maps.made((device_pointer(c), m, n), lambda: tensor_map_2d(
            c.reshape(m, n), self.constants["C_BOX_ROWS"], self.constants["C_BOX_COLS"], swizzle_128=True))

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        m, n = int(sizes[0]), int(sizes[1])
        self.configured("fast", (full_cols, full_rows), stream, launches)(
            *flat, *sizes, *self.tensor_maps(*matrices), self.c_map(flat[2], m, n))


def build(config: Config | TileConfig | None = None, cluster: int | None = None) -> TmaStoreTiles:
    """The variant built for a configuration's tiles (default: step 20's GPU tiles)."""
    config = Config.of(CONFIG if config is None else config, **({} if cluster is None else {"CLUSTER": cluster}))
    return TmaStoreTiles("cluster_multicast_tma_store", cluster_multicast_tma_store_kernel, config,
                         edge=warpgroup_tf32.build(config),
                         requires_compute_capability=cluster_multicast.REQUIRES_COMPUTE_CAPABILITY)


def ptx_kernels() -> dict:
    """The fast kernel at step 20's GPU tiles, ``{label: (dispatcher, signature)}`` (a ``kernels:`` job of
    tests/ptx_jobs.py, compiled on a CPU in the GPU-mode worker)."""
    built = build(CONFIG)
    return {"cluster_multicast_tma_store_fast": (built.kernel("fast"), built.signature("fast"))}
