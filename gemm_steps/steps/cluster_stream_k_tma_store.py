"""Step 23 — step 21 as cuBLAS's TF32 kernel runs: persistent clusters of two sharing A, C stored by the copy engine.

Changed from step 21 (the same producer warpgroup, ring, ``setmaxnreg`` hand-off, TF32 ``wgmma``, stream-K schedule
and fixup; ``gemm-steps diff 21 23``): three things that cuBLAS's TF32 kernel does and step 21 does not
(results/reference-*.json: grid 132, **cluster 2** with ``UTMALDG.MULTICAST``, 256 ``UTMASTG`` — a **TMA-store
epilogue**, A and B read rounded to TF32 with no rounding instruction). Each was measured alone first, as an experiment of its own (lesson 23).

* **Clusters of CLUSTER = 2, A multicast** (step 20's sharing on step 21's persistent grid). The two blocks of a
  cluster always compute two neighbouring tiles of one tile-row, a *pair*; block r loads rows r · A_HALF_ROWS … of the
  A tile they share and the copy engine multicasts them into both blocks' stages, so L2 sends each A tile once per
  pair. Step 21's schedule runs as it is with a cluster in the place of a block and a pair in the place of a tile:
  ``work_unit(cluster, clusters, …)`` gives both blocks the same units (their rings must stay in step: block r's copy
  lands in its peer's stage s, and the peer must be waiting for that k-tile there). An empty barrier counts CLUSTER ×
  CONSUMERS arrivals (warp r of each consumer warpgroup arrives on block r's). In the fixup, block r hands its partial
  sums to block r of the cluster that finishes the pair — the same tile, thread and elements.
* **The TMA store.** A finishing unit's results leave through the copy engine: each consumer warpgroup walks its
  C_CHUNKS chunks of C_CHUNK_ROWS rows × 64 columns; every thread writes its sums of the chunk into one of the
  warpgroup's C_BUFFERS buffers after the stages (the stages are already filling with the next unit's k-tiles), in the
  128-byte swizzle (conflict-free), fences (``fence_proxy_async``: its writes → visible to the copy engine) and the
  warpgroup meets at its named barrier; then one thread issues the chunk's ``store_tile`` (``cp.async.bulk.tensor``
  global ← shared). Before that barrier it waits until the store of chunk j − 2 has read its buffer
  (``store_wait_read(1)``): the buffer the next chunk writes. The copy engine clips each box to C.
* **A and B rounded by the copy engine** (cuBLAS reads both rounded, and nothing in its loop rounds:
  experiments/tf32_operand_rounding.py). The tensor maps of A
  and B have the element type ``TFLOAT32``: the copy engine rounds every float it loads to TF32, to nearest with ties
  to even, so the wgmma reads A rounded (steps 15–21: truncated) and B's fragments need no rounding instruction
  (``TF32_COPIES``, ``ROUND_B``). The error is cuBLAS TF32's; the products it hands on (step 17's split-K, step 21
  where C is not writable, step 15's edge kernel) read A truncated as before.
* **Start and end together** (step 20's): the barriers initialised and fenced for the cluster and a cluster barrier
  before any copy; at the end each warpgroup waits for its stores and the cluster meets again (a block's shared memory
  must outlive its peer's last arrivals and copies into it).

Why faster: L2 sends A once per pair instead of once per tile, a tile's results leave as 32 bulk copies instead of
32,768 scalar stores while the producer fills the next unit's stages, and the copy engine rounds what the consumers
rounded with 8 instructions an ``HGMMA``. Expect (each written before its run):
predictions/cluster-stream-k-before-run.md, predictions/cluster-stream-k-tma-store-before-run.md and
predictions/tf32-copies-before-run.md. Measured: lesson 23 reads experiments/results/experiment-cluster-stream-k-*.json,
experiment-tf32-copies-nvidia-h200.json and the benchmarks in results/.

Shapes: as step 21 — the full-tile build where the tiles are whole (the tile-columns in whole pairs: a last odd one
runs on step 15's edge kernel) and the copy engine can read A and B, else the PARTIAL_TILES build (its grid covers
every tile, its last pair perhaps half past C: the copy engine reads zeros there and the store writes nothing); step
17's split-K where step 21 hands a product to it (``runs_step_17``); and step 21 itself where the copy engine cannot
write C (N not a multiple of 4, C not 16-byte aligned: ``ClusterStreamKTmaTiles.c_writable``). Compute capability 9.0
only; runs on the simulator (a grid of 2 clusters).

ptxas (sm_90a, on a CPU): 168 registers at entry, the consumers spill nothing; the producer warpgroup, at 40 registers
after the hand-off, spills 112 bytes (step 21's producer fits: the cluster's rank and A's half are two more live
values) — local loads by the one thread that issues copies, STAGES k-tiles ahead of the consumers.
"""

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from ..toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init,
                                   mbarrier_arrive_cluster)
from ..toolkit.intrinsics import load4_bypassing_l1, store4, wait_for_flag
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
                                    named_barrier_sync, tensor_map_acquire)
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_store_ops import store_commit, store_tile, store_wait, store_wait_read
from ..toolkit.tma_tiles import ClusterStreamKTmaTiles, aligned_a_pays
from ..toolkit.tuned import Tuning, built, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, check_register_handoff, fence_proxy_async, first_aligned,
                                     operand_bits, registers_at_entry, registers_lower_to, registers_raise_to,
                                     rounded_operand_bits, shared_address, swizzled_descriptor, warpgroup_commit,
                                     warpgroup_fence, warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                     zero_accumulators)
from . import warp_specialized, warp_specialized_stream_k, warpgroup_tf32
from .pingpong import grouped_tile, ring_place
from .stream_k import stream_k_split
from .warp_specialized_stream_k import MIN_SHARE_K_TILES, runs_step_17, work_unit

TITLE = "Persistent clusters and the TMA store: step 21 as cuBLAS runs it"
SUMMARY = ("Step 21 on clusters of two that share A's tile through TMA multicast, its results stored by the copy "
           "engine from shared memory: what cuBLAS's TF32 kernel does.")
ARITHMETIC = "tf32"  # step 21's
#: The step this one changes (`gemm-steps diff 21 23`).
BUILDS_ON = "warp_specialized_stream_k"
#: wgmma, the copy engine's tensor copies and stores, clusters and setmaxnreg: compute capability 9.0 only.
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def cluster_stream_k_tma_store_kernel(a, b, c, m, n, k, tile_rows, tile_cols, a_map, b_map, workspace, flags,
                                      dp_pairs, sk_pairs, c_map, *,
                                      BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                      BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                                      PRODUCER_REGISTERS, CONSUMER_REGISTERS, PARTIAL_TILES, THREADS, CLUSTER,
                                      A_HALF_ROWS, CLUSTER_MASK, C_BOX_COLS, C_BOX_FLOATS, C_CHUNK_ROWS, C_CHUNK_FLOATS,
                                      C_CHUNKS, C_BUFFERS, C_STAGING, EPILOGUE_BARRIER, ROUND_B):
    """Step 21's kernel on clusters of CLUSTER blocks: the units are pairs of tiles side by side in one tile-row,
    block r of a cluster computes tile r of each pair, A's tile of a pair is loaded half by each block and multicast
    to both, and a finishing unit's consumer warpgroups store C through shared memory and the copy engine, chunk by
    chunk. PARTIAL_TILES: the build whose tiles and k-tiles cover every shape (the copy engine zero-fills past A and
    B, and clips its stores to C)."""
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
    if PARTIAL_TILES:  # every k-tile, the last one partial: A's columns and B's rows past K arrive as zeros
        k_tiles = (k + uint32(BLOCK_K - 1)) // BLOCK_K
    else:
        k_tiles = k // BLOCK_K
    k_tiles = uint32(k_tiles)
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
                                # rounded to TF32 (2 instructions), unless the copy engine rounded it already
                                b_frag[half][s][q] = rounded_operand_bits(x) if ROUND_B else operand_bits(x)
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
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 256  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 32  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 16  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    # Four k-tiles in flight, as step 21: a stage is (BLOCK_M + B_STRIDE) · BLOCK_K · 4 = 50,176 bytes (STAGE_BYTES);
    # four take 200,704, the epilogue's buffers 24,576 more: 225,280 of a block's 232,448 (five stages would not fit).
    STAGES: int = 4
    GROUP_M: int = 8  # tile-rows per group in the tile order (1 = row-major)
    PRODUCER_THREADS: int = 128  # one producer warpgroup beside the consumers: it only issues the copies
    # Registers a thread keeps in each role after the hand-off (setmaxnreg: 24–256, multiples of 8). Three warpgroups
    # start with 65,536 / 384 → 168 each: the block's pool is 384 × 168 = 64,512, and 128 × 40 + 256 × 232 = 64,512
    # fills it exactly (setmaxnreg.inc draws from that pool, not from the SM's 65,536: asking for more hangs).
    PRODUCER_REGISTERS: int = 40
    CONSUMER_REGISTERS: int = 232
    # The build for shapes with partial tiles or a partial last k-tile: its tiles cover every tile and its units every
    # k-tile. build() makes it beside the full-tile build (False).
    PARTIAL_TILES: bool = False
    CLUSTER: int = 2  # blocks per cluster. Two, as cuBLAS's TF32 kernel (results/reference-*.json: cluster 2 × 1 × 1)
    C_CHUNK_ROWS: int = 16  # rows of C a chunk of the epilogue holds (two sums a thread of each 8 rows)
    C_BUFFERS: int = 3  # chunk buffers a consumer warpgroup rotates through: 3 × 4,096 bytes
    # How A and B become TF32. TF32_COPIES: the tensor maps' element type is TFLOAT32, so the copy engine rounds A and
    # B to nearest (ties to even) as it loads them (cuBLAS TF32 reads both so rounded); B's fragments then go to the wgmma as
    # loaded (ROUND_B = False: no instruction). Steps 15–21 load float32: the tensor core truncates A's tile (read from
    # shared memory) and two instructions round each element of B's fragments (ROUND_B), 1.6x cuBLAS's error.
    # Measured each alone (experiments/tf32_copies.py, H200): the maps 1.015–1.031x, then B's instructions 1.001–1.008x.
    TF32_COPIES: bool = True
    ROUND_B: bool = False

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
    def K_STEPS(self) -> int:  # wgmma k-steps (k = 8) per k-tile
        return self.BLOCK_K // 8

    @property
    def ACCUMULATORS(self) -> int:  # results of C a consumer thread holds: Cᵀ is BLOCK_N × BLOCK_M, 64 rows a warpgroup
        return self.BLOCK_M // 2

    @property
    def B_STRIDE(self) -> int:  # floats per row of a stage of B (the copy's box is that wide): rows 8 banks apart
        return self.BLOCK_N + 8

    @property
    def A_STAGE_FLOATS(self) -> int:  # a stage of A: BLOCK_M rows of BLOCK_K = 32 floats (a 128-byte swizzled row each)
        return self.BLOCK_M * self.BLOCK_K

    @property
    def B_STAGE_FLOATS(self) -> int:
        return self.BLOCK_K * self.B_STRIDE

    @property
    def STAGE_BYTES(self) -> int:  # what one stage's copies bring (both halves of A, and B): its full barrier waits
        return (self.BLOCK_M + self.B_STRIDE) * self.BLOCK_K * 4

    @property
    def BARRIERS(self) -> int:
        return 2 * self.STAGES  # a full and an empty barrier per stage

    @property
    def B_BASE(self) -> int:  # where B's stages start in the dynamic array
        return self.STAGES * self.A_STAGE_FLOATS

    @property
    def WARPS(self) -> int:  # warps of the consumers
        return self.THREADS // 32

    @property
    def CONSUMERS(self) -> int:  # consumer warpgroups
        return self.THREADS // 128

    @property
    def A_HALF_ROWS(self) -> int:  # rows of the shared A tile each block of the cluster loads and multicasts …
        return self.BLOCK_M // self.CLUSTER

    @property
    def A_BOX_ROWS(self) -> int:  # … so A's tensor map copies boxes of that many rows
        return self.A_HALF_ROWS

    @property
    def CLUSTER_MASK(self) -> int:  # the multicast reaches every block of the cluster
        return (1 << self.CLUSTER) - 1

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
    def C_STAGING(self) -> int:  # where the chunk buffers start: after the stages (1,024-byte aligned: 4 × 50,176)
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS)

    @property
    def EPILOGUE_BARRIER(self) -> int:  # named barrier EPILOGUE_BARRIER + w: warpgroup w's 128 threads (0: syncthreads)
        return 1

    @property
    def EXTRA_SHARED_FLOATS(self) -> int:  # first_aligned's slack (the swizzled stages start 1,024-byte aligned)
        return SWIZZLE_ALIGN // 4

    @property
    def SHARED_BYTES(self) -> int:  # the stages, then each consumer warpgroup's chunk buffers
        return (self.C_STAGING + self.CONSUMERS * self.C_BUFFERS * self.C_CHUNK_FLOATS + self.EXTRA_SHARED_FLOATS) * 4

    @property
    def DYNAMIC_SHARED(self) -> bool:  # the stages always live in one dynamic array, whatever its size
        return True

    def problems(self) -> list[str]:
        warpgroups = self.BLOCK_N // 64
        if (warpgroups * 64 != self.BLOCK_N or self.THREADS != 128 * warpgroups or self.BLOCK_M % 8
                or not 8 <= self.BLOCK_M <= 256 or self.BLOCK_K != 32):
            return ["needs BLOCK_N = 64 per warpgroup of 128 threads, BLOCK_M a multiple of 8 up to 256 and "
                    "BLOCK_K = 32"]
        if self.A_HALF_ROWS * self.CLUSTER != self.BLOCK_M or self.A_HALF_ROWS % 8:
            return [f"BLOCK_M = {self.BLOCK_M} split over a cluster of {self.CLUSTER}: each block's rows must be a "
                    "multiple of 8 (the 128-byte swizzle repeats every 8 rows, 1,024 bytes)"]
        if self.C_CHUNK_ROWS % 8 or self.BLOCK_M % self.C_CHUNK_ROWS:
            return [f"C_CHUNK_ROWS = {self.C_CHUNK_ROWS}: a multiple of 8 (the swizzle repeats every 8 rows) that "
                    f"divides BLOCK_M = {self.BLOCK_M}"]
        if self.C_STAGING * 4 % 1024:
            return ["the chunk buffers must start 1,024-byte aligned (the 128-byte swizzle)"]
        if self.C_BUFFERS < 3:
            return ["C_BUFFERS ≥ 3: the wait before chunk j's barrier frees the buffer of chunk j − 2"]
        if not (self.ROUND_B or self.TF32_COPIES):
            return ["ROUND_B = False passes B's fragments as loaded: only TF32_COPIES = True loads them rounded (else "
                    "the tensor core truncates them)"]
        threads = self.THREADS + self.PRODUCER_THREADS
        try:
            check_register_handoff(threads, [(self.PRODUCER_THREADS, self.PRODUCER_REGISTERS),
                                             (self.THREADS, self.CONSUMER_REGISTERS)],
                                   registers_at_entry(threads, max(1, self.MIN_BLOCKS_PER_SM)))
        except ValueError as error:
            return [str(error)]
        return []


#: The step whose build runs the products ``FALLBACK_RULE`` names (step 21's rule: where step 17 splits K).
FALLBACK_STEP, FALLBACK_RULE = "warp_specialized", runs_step_17

#: Step 21's tile: 256 rows (wgmma N = 256) × 2 consumer warpgroups, and a producer warpgroup; a cluster of two.
SEARCH_SPACE = [Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one consumer warpgroup on a 32×64 tile, as steps 14–21 (a grid of 2 clusters of 2 blocks).
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, split=stream_k_split, fallback: bool = True,
          min_share: int = MIN_SHARE_K_TILES) -> ClusterStreamKTmaTiles:
    """The step built for a configuration (or another configuration's tiles): the full-tile build with the
    PARTIAL_TILES build beside it, each leaving to step 17's build for the same tiles the launches step 21 leaves to
    it (``runs_step_17``), and a product whose C the copy engine cannot write to step 21's build (``toolkit.tuned.
    built``: the one step 21 runs, compiled once). ``fallback=False``: this kernel runs every launch it can (with
    step 21's ``no_stream_k`` or ``all_stream_k`` as ``split``: the persistent loop alone, every pair split)."""
    config = Config.of(config)
    step17 = built(warp_specialized.build, warp_specialized.Config.of(config)) if fallback else None
    step21 = built(warp_specialized_stream_k.build, warp_specialized_stream_k.Config.of(config))
    common = dict(edge=warpgroup_tf32.build(config), requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY,
                  split=split, fallback_when=runs_step_17, min_share=min_share, scalar_stores=step21)
    partial = ClusterStreamKTmaTiles("cluster_stream_k_tma_store_partial", cluster_stream_k_tma_store_kernel,
                                     replace(config, PARTIAL_TILES=True), fallback=step17 and step17.partial, **common)
    return ClusterStreamKTmaTiles("cluster_stream_k_tma_store", cluster_stream_k_tma_store_kernel,
                                  replace(config, PARTIAL_TILES=False), partial=partial, fallback=step17,
                                  aligned_a_when=aligned_a_pays, **common)


TUNING = Tuning(build, "warp_specialized", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show (tests/test_ptx.py): step 21's k-loop (a wgmma per k-step, the waits, one
#: setmaxnreg each way) without its TF32 rounding (no setp.num: the copy engine rounds A and B) with step 20's cluster
#: (A's copies multicast, B's not; remote arrivals from warps 0 … CLUSTER − 1; the barriers' init fenced for the
#: cluster; two cluster barriers) — and the epilogue: C leaves in 2 boxes a chunk through the copy engine (no scalar
#: store of C: the st.global left are the fixup's partial sums, one an accumulator), one named barrier a chunk and one
#: before them, a read-wait a chunk and one before them; the three maps (A, B, C) acquired at system scope; no local
#: memory in the PTX.
_GPU = default_config(SEARCH_SPACE)
PTX_EXPECT = {"cluster_stream_k_tma_store_fast": {
    "cp.async.bulk.tensor.multicast": ">=1", "cp.async.bulk.tensor.store": 2 * _GPU.BLOCK_M // 16,
    "cp.async.bulk.wait_group.read": _GPU.BLOCK_M // 16 + 1, "mbarrier.arrive.expect_tx": ">=1",
    "mbarrier.arrive.remote": ">=2", "fence.mbarrier_init": 1, "barrier.cluster.arrive": 2,
    "barrier.cluster.wait": 2, "%cluster_ctarank": 1, "wgmma.mma_async.tf32": 2 * _GPU.BLOCK_K // 8,
    "wgmma.wait_group": 2 + 1, "cvt.rna.tf32.f32": 0, "setp.num.f32": 0, "setmaxnreg": 2,
    "bar.sync": _GPU.BLOCK_M // 16 + 1, "fence.proxy.tensormap.acquire.sys": 3, "ld.global.f32": _GPU.BLOCK_M // 2,
    "st.global.f32": _GPU.BLOCK_M // 2, "cp.async.cg.shared.global": 0, "fma.rn.f32": 0, "local": 0,
    "wgmma.written_after_fence": 0}}
#: … and ptxas, building it as numba-cuda does on a GPU (nvJitLink with LTO, sm_90a): at most 168 registers at entry,
#: no wgmma serialised; the producer's 112 bytes of spills (the module's docstring), and no more.
PTXAS_EXPECT = {"cluster_stream_k_tma_store_fast": {"spill_bytes": "<=112", "registers": "<=168",
                                                    "wgmma_serialized": 0}}
