"""The solution of the cluster-multicast exercise (``exercises/cluster_multicast.py``, lesson 20). Read it after you
have tried.

Step 20 shares A's tile between the two blocks of a cluster; this one keeps only the sharing, on the mbarrier_ring
exercise's ring: the two blocks compute two row-blocks of C, which need the same B, so each block's producer loads
half of every k-tile of B and multicasts it into both blocks. Each full barrier waits for both halves, each empty
barrier for the consumers of both blocks, and the blocks meet at a cluster barrier before the first copy and before
they exit.
"""

from numba import cuda, float32, uint64

from ..toolkit.backend import SIMULATOR
from ..toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init,
                                   mbarrier_arrive_cluster)
from ..toolkit.mbarrier_ops import mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, tensor_map_acquire
from ..toolkit.warpgroup_ops import fence_proxy_async

CLUSTER = 2  # blocks per cluster: rank r = blockIdx.x % 2
CLUSTER_MASK = 0b11  # a multicast into both blocks of the cluster (bit r: rank r)
STAGES = 2  # k-tile t goes to stage t % STAGES
BLOCK_K = 8  # rows of B in a k-tile
HALF_K = BLOCK_K // CLUSTER  # rows of B in a half: half r of k-tile t is rows t·BLOCK_K + r·HALF_K …, loaded by rank r
BLOCK_M = 8  # rows of C a block computes
MAX_N = 32  # C's columns at most, and the width of the tensor map's box: one consumer lane per column
HALF_FLOATS = HALF_K * MAX_N  # one box: half a k-tile
STAGE_FLOATS = BLOCK_K * MAX_N  # a stage: half 0, then half 1
RING_FLOATS = STAGES * STAGE_FLOATS  # (a shared array's shape: one constant)
CONSUMERS = 64  # threads 32 … 95: two warps, BLOCK_M // 2 rows each; thread 0 (warp 0) is the producer
ROWS_PER_WARP = BLOCK_M // 2
TILE_ALIGN = None if SIMULATOR else 128  # a tensor copy writes to a 128-byte-aligned address (the simulator takes none)


@cuda.jit
def cluster_multicast_kernel(a, b_map, c):
    m, k_total = a.shape
    n = c.shape[1]
    stages = cuda.shared.array(RING_FLOATS, float32, alignment=TILE_ALIGN)
    full = cuda.shared.array(STAGES, uint64)  # full[s]: this block's producer arrived and both halves landed here
    empty = cuda.shared.array(STAGES, uint64)  # empty[s]: the consumers of both blocks have read the stage
    tid = cuda.threadIdx.x
    rank = cluster_rank()
    k_tiles = (k_total + BLOCK_K - 1) // BLOCK_K
    if tid == 0:
        for s in range(STAGES):
            mbarrier_init(full, s, 1)  # one arrival: this block's producer; the bytes: its half and the peer's
            mbarrier_init(empty, s, CLUSTER * CONSUMERS)  # every consumer thread of the cluster
        fence_mbarrier_init()  # the initialised barriers → visible to the peer's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them
    if tid == 0:  # the producer
        tensor_map_acquire(b_map)
        for t in range(k_tiles):
            s = t % STAGES
            if t >= STAGES:  # refill: wait until the consumers of both blocks released the fill before
                mbarrier_wait(empty, s, (t // STAGES - 1) % 2)
            mbarrier_arrive_expect_tx(full, s, CLUSTER * HALF_FLOATS * 4)  # both halves land here, whole boxes
            copy_tile_multicast(stages, s * STAGE_FLOATS + rank * HALF_FLOATS, b_map, t * BLOCK_K + rank * HALF_K, 0,
                                full, s, CLUSTER_MASK)  # my half, into both blocks
    elif tid >= 32:  # a consumer: column `col` of BLOCK_M // 2 rows of C
        consumer = tid - 32
        col = consumer % 32
        first_row = cuda.blockIdx.x * BLOCK_M + consumer // 32 * ROWS_PER_WARP
        acc = cuda.local.array(ROWS_PER_WARP, float32)
        for i in range(ROWS_PER_WARP):
            acc[i] = float32(0.0)
        for t in range(k_tiles):
            s = t % STAGES
            mbarrier_wait(full, s, t // STAGES % 2)  # the (t // STAGES)-th fill of stage s: both halves are here
            rows = min(BLOCK_K, k_total - t * BLOCK_K)  # the last k-tile may be shorter (the box's rest is zeros)
            if col < n:
                for kk in range(rows):
                    x = stages[s * STAGE_FLOATS + kk * MAX_N + col]
                    for i in range(ROWS_PER_WARP):
                        if first_row + i < m:
                            acc[i] += a[first_row + i, t * BLOCK_K + kk] * x
            for r in range(CLUSTER):  # read: block r's producer may refill it (its multicast writes here too)
                mbarrier_arrive_cluster(empty, s, r)
        for i in range(ROWS_PER_WARP):
            if first_row + i < m and col < n:
                c[first_row + i, col] = acc[i]
    cluster_sync()  # the peer's last arrivals on this block's barriers are in: this block may end
