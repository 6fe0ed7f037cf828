"""Step 21 on clusters of two with cuBLAS's epilogue: C leaves through shared memory and the copy engine (TMA stores).

The one change from ``experiments/kernels/cluster_stream_k.py`` (step 21 on clusters of two; ``diff`` the two files) is
where a finishing unit's results go. There each consumer thread writes its 128 sums straight to C: 128 scalar
``st.global`` a thread, each warp's store 32 four-byte pieces in 4 rows. cuBLAS's TF32 kernel stores C with the copy
engine (results/reference-*.json: 256 ``UTMASTG.4D`` in its SASS), and experiments/kernels/cluster_multicast_tma_store.py
tried that on step 20, one tile a block: no gain, nothing ran under the store. Here the kernel is persistent: while a
unit's results drain, the producer is already filling the next unit's stages.

* **Where.** The stages fill 200,704 of the 232,448 bytes a block may have; C's tile (131,072 bytes) does not fit
  beside them, and the stages are not free (the producer fills them with the next unit's k-tiles). So each consumer
  warpgroup has its own C_BUFFERS = 3 small buffers after the stages, each one *chunk* of its part of C: C_CHUNK_ROWS =
  16 rows × 64 columns, as two boxes of 16 rows × 32 columns (128 bytes a row) in the 128-byte swizzle (conflict-free
  stores: experiments/kernels/cluster_multicast_tma_store.py's layout) — 4,096 bytes a buffer, 24,576 for both
  warpgroups.
* **How.** A finishing unit's epilogue walks its BLOCK_M / 16 = 16 chunks: every thread writes its 8 sums of the chunk
  into the chunk's buffer, fences (``fence_proxy_async``: generic-proxy writes → visible to the copy engine), and the
  warpgroup meets at its named barrier; then its first thread issues the chunk's two ``store_tile`` and commits them as
  one bulk group. Before it arrives at that barrier, the first thread waits until at most one earlier chunk's store
  is still reading shared memory (``store_wait_read(1)``): after the barrier, the buffer the *next* chunk writes (the
  one of chunk j − 2) is free. At the start of an epilogue the first thread waits for every earlier store's reads
  (``store_wait_read(0)``: the last unit's, long done) and the warpgroup meets once more; at the end of the kernel it
  waits for its stores to complete (``store_wait(0)``) before the block's last cluster barrier.
* C's tensor map is a third map argument (``TmaStoreTiles``'s), acquired by the thread that uses it.

Why it might be faster: lesson 20's table found the variant 3 % slower than cuBLAS TF32 per clock at 4096³, where both
run at the top clock; a tile's results then leave as 16 × 2 bulk copies instead of 32,768 scalar stores. Why it might
not: 17 named barriers and up to 16 waits for the copy engine a tile, where the scalar stores are issued and forgotten.
Prediction: predictions/cluster-stream-k-tma-store-before-run.md (written before the run). Timed by
experiments/cluster_stream_k.py (``--tma-store``). Measured (experiment-cluster-stream-k-tma-store-nvidia-h200.json,
-2.json; two H200 runs): over the plain variant 1.003–1.012 at all four shapes; lesson 20 reads them.

Fast kernel only, as experiments/kernels/cluster_stream_k.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import warp_specialized_stream_k, warpgroup_tf32
from gemm_steps.steps.pingpong import grouped_tile, ring_place
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.steps.warp_specialized_stream_k import MIN_SHARE_K_TILES, work_unit
from gemm_steps.toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init,
                                            mbarrier_arrive_cluster)
from gemm_steps.toolkit.intrinsics import load4_bypassing_l1, store4, wait_for_flag
from gemm_steps.toolkit.kept import Kept
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN, device_pointer
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
                                             named_barrier_sync, tensor_map_2d, tensor_map_acquire)
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_store_ops import store_commit, store_tile, store_wait, store_wait_read
from gemm_steps.toolkit.tma_tiles import TmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, registers_lower_to,
                                              registers_raise_to, rounded_operand_bits, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

from experiments.kernels import cluster_stream_k

ARITHMETIC = "tf32"  # step 21's


def cluster_stream_k_tma_store_kernel(a, b, c, m, n, k, tile_rows, tile_cols, a_map, b_map, workspace, flags,
                                      dp_pairs, sk_pairs, c_map, *,
                                      BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                      BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                                      PRODUCER_REGISTERS, CONSUMER_REGISTERS, THREADS, CLUSTER, A_HALF_ROWS,
                                      CLUSTER_MASK, C_BOX_COLS, C_BOX_FLOATS, C_CHUNK_ROWS, C_CHUNK_FLOATS, C_CHUNKS,
                                      C_BUFFERS, C_STAGING, EPILOGUE_BARRIER):
    """experiments/kernels/cluster_stream_k.py's kernel; a finishing unit's consumer warpgroups store C through
    shared memory and the copy engine, chunk by chunk."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rank = cluster_rank()  # this block's place in its cluster: the pair's tile it computes
    rows, pair_cols = uint32(tile_rows), uint32(tile_cols) // CLUSTER
    pairs_per_group = uint32(GROUP_M) * pair_cols
    k_tiles = uint32(k // BLOCK_K)
    # This cluster's work (step 21's, with a cluster for a block and a pair for a tile): its data-parallel pairs,
    # then its share [sk_begin, sk_end) of the stream-K pairs' k-tiles, walked down from sk_end.
    clusters, cluster = uint32(cuda.gridDim.x) // CLUSTER, uint32(cuda.blockIdx.x) // CLUSTER
    me = uint32(cuda.blockIdx.x)  # = cluster · CLUSTER + rank: this block's workspace slot and flags
    dp_pairs = uint32(dp_pairs)
    sk_iterations = uint64(sk_pairs) * k_tiles  # 64-bit: cluster · sk_iterations may pass 2³²
    sk_begin = uint32(cluster * sk_iterations // clusters)
    sk_end = uint32((cluster + uint32(1)) * sk_iterations // clusters)
    dp_count = uint32((dp_pairs + clusters - uint32(1) - cluster) // clusters)
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: this block's producer arrives once; both blocks' bytes land
            mbarrier_init(barriers, STAGES + s, CLUSTER * CONSUMERS)  # empty: each consumer warpgroup of the cluster
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
        fence_mbarrier_init()  # the initialised barriers → visible to the peer block's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them

    if warpgroup == CONSUMERS:  # the producer: gives up registers; one thread issues the copies, unit after unit
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            g = uint32(0)  # k-tiles this block has produced, over all its units: the ring runs on across them
            dp_done, iteration = uint32(0), sk_end
            while dp_done < dp_count or iteration > sk_begin:
                pair, k_first, k_count, dp_done, iteration = work_unit(cluster, clusters, dp_done, dp_count,
                                                                       iteration, sk_begin, k_tiles, dp_pairs)
                tile_row, pair_col = grouped_tile(pair, rows, pairs_per_group, GROUP_M)
                for t in range(k_count):
                    stage, lap = ring_place(g, uint32(STAGES))
                    if g >= STAGES:  # refill: wait until every consumer warpgroup of *both* blocks released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((lap - uint32(1)) % uint32(2)))
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)  # all of A (two halves) and B land here
                    k_at = (k_first + t) * BLOCK_K
                    copy_tile_multicast(tiles, stage * A_STAGE_FLOATS + rank * A_HALF_ROWS * BLOCK_K, a_map,
                                        tile_row * BLOCK_M + rank * A_HALF_ROWS, k_at, barriers, stage, CLUSTER_MASK)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at,
                              (pair_col * CLUSTER + rank) * BLOCK_N, barriers, stage)
                    g += uint32(1)
    else:  # a consumer warpgroup: waits for data, multiplies, releases stages; stores C or hands partial sums over
        registers_raise_to(CONSUMER_REGISTERS)
        if tid % 128 == 0:  # the thread that will issue this warpgroup's stores of C
            tensor_map_acquire(c_map)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        total = registers(ACCUMULATORS)  # a finishing unit's sums with the other blocks' added
        stages = uint32(STAGES)
        g0 = uint32(0)  # the block's k-tiles before this unit's (the ring's counter, as the producer's)
        dp_done, iteration = uint32(0), sk_end
        while dp_done < dp_count or iteration > sk_begin:
            pair, k_first, k_count, dp_done, iteration = work_unit(cluster, clusters, dp_done, dp_count, iteration,
                                                                   sk_begin, k_tiles, dp_pairs)
            tile_row, pair_col = grouped_tile(pair, rows, pairs_per_group, GROUP_M)
            block_row, block_col = tile_row * BLOCK_M, (pair_col * CLUSTER + rank) * BLOCK_N
            acc = zero_accumulators(ACCUMULATORS)
            for two in range(uint32(0), k_count, uint32(2)):  # two k-tiles a pass: the register set known
                for half in unroll(2):
                    u = uint32(two + half)
                    if u < k_count:
                        stage, lap = ring_place(g0 + u, stages)
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        mbarrier_wait(barriers, stage, lap % uint32(2))  # both halves of A and B have landed
                        for s in unroll(K_STEPS):
                            for q in unroll(4):
                                x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                                b_frag[half][s][q] = rounded_operand_bits(x)  # rounded to TF32: 2 instructions
                        warpgroup_fence()
                        a_stage = swizzled_descriptor(uint32(base + stage * uint32(A_STAGE_FLOATS * 4)))
                        for s in unroll(K_STEPS):  # k-step s reads 32 bytes further along A's rows
                            acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                             b_frag[half][s][3], a_stage + uint64(s * 2), acc, 1)
                        warpgroup_commit()
                        acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                        if u > 0 and lane == 0 and warp < CLUSTER:  # warp r of the warpgroup tells block r
                            mbarrier_arrive_cluster(barriers, stages + ring_place(g0 + u - uint32(1), stages)[0],
                                                    warp)
            acc = warpgroup_wait_all(acc)
            if lane == 0 and warp < CLUSTER:  # the unit's last k-tile is done too: release its stage on both blocks
                mbarrier_arrive_cluster(barriers, stages + ring_place(g0 + k_count - uint32(1), stages)[0], warp)
            g0 += k_count

            if k_first + k_count < k_tiles:
                # We stop before the tile's last k-tile: leave our partial sums in our slot and raise our flag for
                # the same thread of block r of the cluster that finishes the pair (a higher-numbered cluster).
                slot = me * uint32(BLOCK_M * BLOCK_N) + tid
                for v in unroll(0, ACCUMULATORS, 4):
                    store4(workspace, slot + v * THREADS, THREADS, acc[v], acc[v + 1], acc[v + 2], acc[v + 3])
                cuda.threadfence()  # the partial sums are visible GPU-wide before the flag is
                cuda.atomic.exch(flags, me * uint32(THREADS) + tid, 1)
                continue
            for v in unroll(ACCUMULATORS):
                total[v] = acc[v]
            # We compute the pair's last k-tile: add the partial sums of block r of the lower-numbered clusters that
            # computed its earlier k-tiles, nearest first (a fixed order: the same bits on every run).
            if k_first > 0:
                pair_begin = uint64(pair - dp_pairs) * k_tiles  # the pair's first iteration in the stream-K range
                other = cluster  # count down through the clusters before us whose share ends inside this pair
                while other > 0 and other * sk_iterations // clusters > pair_begin:
                    other -= uint32(1)
                    if other * sk_iterations // clusters < (other + uint32(1)) * sk_iterations // clusters:
                        peer = other * uint32(CLUSTER) + rank  # block r of that cluster: the same tile
                        flag = peer * uint32(THREADS) + tid  # the same thread of it: the same elements
                        wait_for_flag(flags, flag)  # that block never waits on us; the warp polls together
                        cuda.threadfence()  # pairs with the writer's fence across the flag: the sums are visible
                        flags[flag] = 0  # reset for the next launch (each flag is raised once per launch)
                        slot = peer * uint32(BLOCK_M * BLOCK_N) + tid
                        for v in unroll(0, ACCUMULATORS, 4):
                            w0, w1, w2, w3 = load4_bypassing_l1(workspace, slot + v * THREADS, THREADS)
                            total[v] += w0
                            total[v + 1] += w1
                            total[v + 2] += w2
                            total[v + 3] += w3
            # The epilogue: C_CHUNKS chunks of C_CHUNK_ROWS rows × this warpgroup's 64 columns, each written into
            # buffer j % C_BUFFERS of this warpgroup's and stored by the copy engine (the module's docstring).
            leader = tid % 128 == 0  # the thread that issues this warpgroup's stores
            if leader:
                store_wait_read(0)  # every earlier store has read its buffer (the last unit's: long done)
            named_barrier_sync(EPILOGUE_BARRIER + warpgroup, 128)
            for j in unroll(C_CHUNKS):
                buffer = C_STAGING + (warpgroup * C_BUFFERS + j % C_BUFFERS) * C_CHUNK_FLOATS
                for i in unroll(C_CHUNK_FLOATS // 128):  # this thread's sums of chunk j: v = 8j … 8j + 7
                    row = lane % 4 * 2 + (i // 4 * 8 + i % 2)  # in the chunk
                    col = warp * 16 + lane // 4 + (i % 4 // 2 * 8)  # in this warpgroup's 64 columns
                    x = col % C_BOX_COLS  # in its box: 16-byte chunk x // 4 of row `row` sits at (x // 4) ^ (row % 8)
                    tiles[buffer + col // C_BOX_COLS * C_BOX_FLOATS + row * C_BOX_COLS
                          + ((x // 4) ^ (row % 8)) * 4 + x % 4] = total[j * (C_CHUNK_FLOATS // 128) + i]
                fence_proxy_async()  # this thread's shared stores → visible to the copy engine (the async proxy)
                if leader:
                    store_wait_read(1)  # chunk j − 2's store has read its buffer: the one chunk j + 1 writes
                named_barrier_sync(EPILOGUE_BARRIER + warpgroup, 128)  # chunk j written; chunk j + 1's buffer free
                if leader:
                    for box in unroll(64 // C_BOX_COLS):
                        store_tile(c_map, block_row + j * C_CHUNK_ROWS, block_col + warpgroup * 64 + box * C_BOX_COLS,
                                   tiles, buffer + box * C_BOX_FLOATS)
                    store_commit()
        if tid % 128 == 0:
            store_wait(0)  # this warpgroup's stores are complete (and have read the block's shared memory)
    cluster_sync()  # the peer's last arrivals and copies into this block are in: its shared memory may go


@dataclass(frozen=True)
class Config(cluster_stream_k.Config):
    """experiments/kernels/cluster_stream_k.py's constants, and the epilogue's: C's boxes, chunks and buffers."""

    C_CHUNK_ROWS: int = 16  # rows of C a chunk of the epilogue holds (two sums a thread of each 8 rows)
    C_BUFFERS: int = 3  # chunk buffers a consumer warpgroup rotates through: 3 × 4,096 bytes

    @property
    def C_BOX_COLS(self) -> int:  # columns of C a store box holds: 128 bytes, the 128-byte swizzle's row
        return 32

    @property
    def C_BOX_FLOATS(self) -> int:
        return self.C_CHUNK_ROWS * self.C_BOX_COLS

    @property
    def C_CHUNK_FLOATS(self) -> int:  # a chunk: C_CHUNK_ROWS rows × a warpgroup's 64 columns, as 64 / 32 boxes
        return self.C_CHUNK_ROWS * 64

    @property
    def C_CHUNKS(self) -> int:  # chunks a warpgroup stores a tile
        return self.BLOCK_M // self.C_CHUNK_ROWS

    @property
    def C_STAGING(self) -> int:  # where the buffers start: after the stages (1,024-byte aligned: 4 × 50,176 bytes)
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS)

    @property
    def EPILOGUE_BARRIER(self) -> int:  # named barrier EPILOGUE_BARRIER + w: warpgroup w's 128 threads
        return 1

    @property
    def SHARED_BYTES(self) -> int:
        return super().SHARED_BYTES + self.CONSUMERS * self.C_BUFFERS * self.C_CHUNK_FLOATS * 4

    def problems(self) -> list[str]:
        found = super().problems()
        if found:
            return found
        if self.C_CHUNK_ROWS % 8 or self.BLOCK_M % self.C_CHUNK_ROWS or self.C_CHUNK_FLOATS % 128:
            return [f"C_CHUNK_ROWS = {self.C_CHUNK_ROWS}: a multiple of 8 (the swizzle repeats every 8 rows) that "
                    f"divides BLOCK_M = {self.BLOCK_M}"]
        if self.C_STAGING * 4 % 1024:
            return ["the chunk buffers must start 1,024-byte aligned (the 128-byte swizzle)"]
        if self.C_BUFFERS < 3:
            return ["C_BUFFERS ≥ 3: the wait before chunk j's barrier frees the buffer of chunk j − 2"]
        return []


#: The variant's GPU tiles (step 21's) and its simulator tiles.
CONFIG = Config.of(cluster_stream_k.CONFIG)
SIMULATOR_CONFIG = Config.of(cluster_stream_k.SIMULATOR_CONFIG)


class TmaStoreClusterStreamKTiles(cluster_stream_k.ClusterStreamKTmaTiles):
    """experiments/kernels/cluster_stream_k.py's launch, the fast kernel taking a third tensor map: C's, boxes of
    ``C_CHUNK_ROWS`` × ``C_BOX_COLS`` in the 128-byte swizzle, read by the copy engine's stores. The map holds C's
    address, so a recorded launch plan is keyed by C's address too."""

    signature_fast = cluster_stream_k.ClusterStreamKTmaTiles.signature_fast[:-1] + ", uint64[::1])"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.c_maps = Kept(TmaTiles.MAPS_KEPT)

    def plan_key(self, a, b, pointers, stream) -> tuple:
        return (*super().plan_key(a, b, pointers, stream), pointers[2])  # the plan holds C's tensor map too

    def more_arguments(self, flat, sizes) -> tuple:
        """C's tensor map (a device array), made on first use for this buffer and shape. ``flat[2]``: C, flat."""
        m, n = int(sizes[0]), int(sizes[1])
        return (self.c_maps.made((device_pointer(flat[2]), m, n), lambda: tensor_map_2d(
            flat[2].reshape(m, n), self.constants["C_CHUNK_ROWS"], self.constants["C_BOX_COLS"], swizzle_128=True)),)


def build(config: Config | TileConfig | None = None, split=stream_k_split,
          min_share: int = MIN_SHARE_K_TILES) -> TmaStoreClusterStreamKTiles:
    """The variant for a configuration's tiles (default: step 21's GPU tiles); ``split`` and ``min_share`` as step
    21's ``build``."""
    config = replace(Config.of(CONFIG if config is None else config), PARTIAL_TILES=False)
    return TmaStoreClusterStreamKTiles("cluster_stream_k_tma_store", cluster_stream_k_tma_store_kernel, config,
                                       edge=warpgroup_tf32.build(config),
                                       requires_compute_capability=warp_specialized_stream_k.REQUIRES_COMPUTE_CAPABILITY,
                                       split=split, min_share=min_share)


def ptx_kernels() -> dict:
    """The fast kernel at step 21's GPU tiles, ``{label: (dispatcher, signature)}``."""
    built = build(CONFIG)
    return {"cluster_stream_k_tma_store_fast": (built.kernel("fast"), built.signature("fast"))}
