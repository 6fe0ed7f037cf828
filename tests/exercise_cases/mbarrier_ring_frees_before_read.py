"""Planted (mbarrier_ring): each consumer releases the stage as soon as its data has landed, before reading it."""

import gemm_steps  # noqa: F401
from numba import cuda, float32, uint64

from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_bulk, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait)
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async

STAGES = 3  # k-tile t goes to stage t % STAGES
BLOCK_K = 8  # rows of B in a k-tile
BLOCK_M = 8  # rows of C a block computes
MAX_N = 32  # C's columns at most: one consumer lane per column
STAGE_FLOATS = BLOCK_K * MAX_N
RING_FLOATS = STAGES * STAGE_FLOATS  # (a shared array's shape: one constant)
CONSUMERS = 64  # threads 32 … 95: two warps, BLOCK_M // 2 rows each; thread 0 (warp 0) is the producer
ROWS_PER_WARP = BLOCK_M // 2


@cuda.jit
def mbarrier_ring_kernel(a, b, c):
    m, k_total = a.shape
    n = c.shape[1]
    stages = cuda.shared.array(RING_FLOATS, float32, alignment=SHARED_ALIGN)
    full = cuda.shared.array(STAGES, uint64)  # full[s]: the producer's arrival and the stage's bytes have landed
    empty = cuda.shared.array(STAGES, uint64)  # empty[s]: every consumer thread has read the stage
    tid = cuda.threadIdx.x
    k_tiles = (k_total + BLOCK_K - 1) // BLOCK_K
    if tid == 0:
        for s in range(STAGES):
            mbarrier_init(full, s, 1)
            mbarrier_init(empty, s, CONSUMERS)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread
    if tid == 0:  # the producer
        for t in range(k_tiles):
            s = t % STAGES
            if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until the consumers released the one before
                mbarrier_wait(empty, s, (t // STAGES - 1) % 2)
            rows = min(BLOCK_K, k_total - t * BLOCK_K)  # the last k-tile may be shorter
            mbarrier_arrive_expect_tx(full, s, rows * n * 4)  # one arrival, and the bytes to wait for
            copy_bulk(stages, s * STAGE_FLOATS, b, t * BLOCK_K * n, rows * n * 4, full, s)
    elif tid >= 32:  # a consumer: column `col` of BLOCK_M // 2 rows of C
        consumer = tid - 32
        col = consumer % 32
        first_row = cuda.blockIdx.x * BLOCK_M + consumer // 32 * ROWS_PER_WARP
        acc = cuda.local.array(ROWS_PER_WARP, float32)
        for i in range(ROWS_PER_WARP):
            acc[i] = float32(0.0)
        for t in range(k_tiles):
            s = t % STAGES
            mbarrier_wait(full, s, t // STAGES % 2)  # the (t // STAGES)-th fill of stage s has landed
            mbarrier_arrive(empty, s)  # (wrong: released before it is read)
            rows = min(BLOCK_K, k_total - t * BLOCK_K)
            if col < n:
                for kk in range(rows):
                    x = stages[s * STAGE_FLOATS + kk * n + col]
                    for i in range(ROWS_PER_WARP):
                        if first_row + i < m:
                            acc[i] += a[first_row + i, t * BLOCK_K + kk] * x
        for i in range(ROWS_PER_WARP):
            if first_row + i < m and col < n:
                c[first_row + i, col] = acc[i]
