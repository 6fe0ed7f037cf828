"""Exercise `cluster_multicast` (step 20's idea): two blocks of a cluster need the same k-tiles of B; each loads half
of every k-tile and the copy engine multicasts it into both.

Grade it:  gemm-steps exercise check cluster_multicast

The grader launches your kernel in clusters of CLUSTER = 2 blocks (gemm_steps/toolkit/cluster_ops.py):
    b_map = tensor_map_2d(b, HALF_K, MAX_N)      # B (K×N, on the device): boxes of HALF_K rows × MAX_N columns
    launch_cluster(cluster_multicast_kernel, "void(float32[:, ::1], uint64[::1], float32[:, ::1])",
                   2 · ⌈M / (2 · BLOCK_M)⌉, THREADS, 0, 0, (2, 1, 1), (a, b_map, c))
a is M×K, c is M×N (float32), N ≤ 32 and a multiple of 4. Block x computes rows BLOCK_M·x … of C; blocks 2j and
2j + 1 are a cluster, ranks 0 and 1 (cluster_rank()). Both need every k-tile of B (BLOCK_K rows, all of N): rank r
loads **half r** of k-tile t — rows t·BLOCK_K + r·HALF_K … + HALF_K − 1, one box of the tensor map — and multicasts it
into stage t % STAGES of both blocks, at stages[s · STAGE_FLOATS + r · HALF_FLOATS …]. A box always moves HALF_K ×
MAX_N floats: the copy engine writes zeros for what lies past K or N, and counts those bytes too.

* thread 0 initialises full[s] (count 1) and empty[s] (count CLUSTER · CONSUMERS: the consumers of *both* blocks)
  for every stage, then fence_mbarrier_init(); then every thread fence_proxy_async() and cluster_sync() — before any
  block copies into or arrives on the other;
* thread 0 is the **producer**: tensor_map_acquire(b_map) once; then for each k-tile t, before refilling a stage
  (t ≥ STAGES) it waits on empty[s] for the release of the fill before; then mbarrier_arrive_expect_tx(full, s,
  bytes) — one arrival, and every byte that will land in *this* block: its own half and the peer's — and
  copy_tile_multicast(stages, offset, b_map, row, 0, full, s, mask) with mask 0b11 (bit r: rank r);
* threads 32 … 95 are the **consumers** (CONSUMERS = 64; warp 1 computes rows 0–3 of the block's C, warp 2 rows 4–7,
  lane = column): for each k-tile, wait on full[s], multiply the stage's rows by A (read from global memory), then
  release the stage on both blocks' empty[s]: mbarrier_arrive_cluster(empty, s, r) for r = 0 and 1 — the peer's
  producer writes into this block's stage too;
* every thread ends with cluster_sync(): no block exits while its peer may still arrive on its barriers.

The grader checks, each thread in its own program order: who loaded which half into which stage (with a drawing of the
cluster), the mask, every expect_tx, the empty barriers' count and the refills (a stage refilled while a block's
consumers still read it), the parities (as in mbarrier_ring), the start and the end (fence_mbarrier_init, the first
and the last cluster_sync); a missing arrival ends in the deadlock detector's message (a short wait limit here), not a
hang. Then the numbers, on two shapes: one of two clusters, one where block 1 has no row of C.

Hints
* Lesson 20, "Who loads what, who arrives where", and step 20's kernel (python -c "import gemm_steps;
  print(gemm_steps.get_step('cluster_multicast').source())"): its producer's copy_tile_multicast of A's half, its
  consumers' mbarrier_arrive_cluster, its two cluster_sync() calls.
* The mbarrier_ring exercise is this ring in one block; the functions and their rules are in
  gemm_steps/toolkit/mbarrier_ops.py and gemm_steps/toolkit/cluster_ops.py.
* A block with no row of C, and a consumer lane past the last column, still waits and arrives: the barriers count them.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32, uint64  # noqa: F401

from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast,  # noqa: F401
                                            fence_mbarrier_init, mbarrier_arrive_cluster)
from gemm_steps.toolkit.mbarrier_ops import (mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,  # noqa: F401
                                             tensor_map_acquire)
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async  # noqa: F401

CLUSTER = 2  # blocks per cluster: rank r = blockIdx.x % 2
CLUSTER_MASK = 0b11  # a multicast into both blocks of the cluster (bit r: rank r)
STAGES = 2  # k-tile t goes to stage t % STAGES
BLOCK_K = 8  # rows of B in a k-tile
HALF_K = BLOCK_K // CLUSTER  # rows of B in a half: half r of k-tile t is rows t·BLOCK_K + r·HALF_K …, loaded by rank r
BLOCK_M = 8  # rows of C a block computes
MAX_N = 32  # C's columns at most, and the width of the tensor map's box: one consumer lane per column
HALF_FLOATS = HALF_K * MAX_N  # one box: half a k-tile
STAGE_FLOATS = BLOCK_K * MAX_N  # a stage: half 0, then half 1 (row kk of the k-tile at kk · MAX_N)
RING_FLOATS = STAGES * STAGE_FLOATS  # (a shared array's shape: one constant)
CONSUMERS = 64  # threads 32 … 95; thread 0 is the producer
ROWS_PER_WARP = BLOCK_M // 2
THREADS = 32 + CONSUMERS
TILE_ALIGN = None if SIMULATOR else 128  # a tensor copy writes to a 128-byte-aligned address (the simulator takes none)


@cuda.jit
def cluster_multicast_kernel(a, b_map, c):
    m, k_total = a.shape
    n = c.shape[1]
    # Your code here: the stages and the two barrier arrays, each cuda.shared.array on its own line —
    #     stages = cuda.shared.array(RING_FLOATS, float32, alignment=TILE_ALIGN)
    #     full = cuda.shared.array(STAGES, uint64)
    #     empty = cuda.shared.array(STAGES, uint64)
    # then the initialisation and the first cluster_sync(), the producer, the consumers, and the last cluster_sync().
    pass
