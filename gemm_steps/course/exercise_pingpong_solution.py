"""The solution of exercise ``pingpong`` (``exercises/pingpong.py``, lesson 19): two consumer warps take the block's
tiles in turn, and two named barriers order their main loops — each consumer waits at its own barrier before a main
loop, and arrives at the other's after its last products, before its store.

The parts marked "given" are the stub's, unchanged; the rest is what the learner writes.
"""

from numba import cuda, float32, uint64

from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import (copy_bulk, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait, named_barrier_arrive, named_barrier_sync)
from ..toolkit.warpgroup_ops import fence_proxy_async

CONSUMERS = 2  # consumer warps 0 and 1 (threads 0–63); warp CONSUMERS (threads 64–95) produces
CONSUMER_THREADS = 32  # one warp a consumer (step 19: a warpgroup of 128 threads)
THREADS = CONSUMER_THREADS * (CONSUMERS + 1)
BLOCK_M = 8  # rows of C in a tile: tile x is rows BLOCK_M·x … of C, all its N columns (lane = column)
BLOCK_K = 8  # rows of B in a k-tile
MAX_N = 32  # C's columns at most: one consumer lane per column
STAGES = 2  # the ring: the block's k-tile g goes to stage g % STAGES
STAGE_FLOATS = BLOCK_K * MAX_N
RING_FLOATS = STAGES * STAGE_FLOATS  # (a shared array's shape: one constant)
BARRIERS = 2 * STAGES
FULL, EMPTY = 0, STAGES  # barriers[FULL + s]: stage s holds its k-tile; barriers[EMPTY + s]: stage s was read
ORDER_BARRIER = 1  # hardware barrier 0 is cuda.syncthreads()'s; consumer w waits at ORDER_BARRIER + w
ORDER_THREADS = 2 * CONSUMER_THREADS  # a phase of an order barrier: the warp that waits and the warp that arrives


@cuda.jit(device=True)
def block_turns(m):
    """Given: how many tiles this block takes. The block's tiles are its turns 0, 1, 2, …: turn i is tile
    blockIdx.x + i·gridDim.x of C."""
    tiles = (m + BLOCK_M - 1) // BLOCK_M
    return max(0, (tiles - cuda.blockIdx.x + cuda.gridDim.x - 1) // cuda.gridDim.x)


@cuda.jit(device=True)
def first_row(turn):
    """Given: the first row of C of the block's turn ``turn``."""
    return (cuda.blockIdx.x + turn * cuda.gridDim.x) * BLOCK_M


@cuda.jit(device=True)
def produce(stages, barriers, b, k_total, n, turns):
    """Given: the producer thread's loop. The ring's k-tile g is k-tile g % k_tiles of turn g // k_tiles (the block's
    turns' k-tiles, one turn after the other); it goes into stage g % STAGES once the stage's previous fill was
    released (empty), its bytes announced on full[stage]."""
    k_tiles = (k_total + BLOCK_K - 1) // BLOCK_K
    for g in range(turns * k_tiles):
        s, t = g % STAGES, g % k_tiles
        if g >= STAGES:  # the stage's (g // STAGES)-th fill: wait until its reader released the one before
            mbarrier_wait(barriers, EMPTY + s, (g // STAGES - 1) % 2)
        rows = min(BLOCK_K, k_total - t * BLOCK_K)  # the last k-tile may be shorter
        mbarrier_arrive_expect_tx(barriers, FULL + s, rows * n * 4)
        copy_bulk(stages, s * STAGE_FLOATS, b, t * BLOCK_K * n, rows * n * 4, barriers, FULL + s)


@cuda.jit(device=True)
def main_loop(acc, a, stages, barriers, n, turn, lane):
    """Given: a consumer's main loop for the block's turn ``turn``. acc[i] becomes row first_row(turn) + i of C at
    column ``lane``: for each of the turn's k-tiles — the ring's k-tiles turn·k_tiles … — wait until its stage is full,
    multiply it by A (read from global memory), release the stage (every thread of the warp arrives on empty)."""
    m, k_total = a.shape
    k_tiles = (k_total + BLOCK_K - 1) // BLOCK_K
    row = first_row(turn)
    for i in range(BLOCK_M):
        acc[i] = float32(0.0)
    for t in range(k_tiles):
        g = turn * k_tiles + t
        s = g % STAGES
        mbarrier_wait(barriers, FULL + s, g // STAGES % 2)  # the stage's (g // STAGES)-th fill has landed
        rows = min(BLOCK_K, k_total - t * BLOCK_K)
        if lane < n:
            for kk in range(rows):
                x = stages[s * STAGE_FLOATS + kk * n + lane]
                for i in range(BLOCK_M):
                    if row + i < m:
                        acc[i] += a[row + i, t * BLOCK_K + kk] * x
        mbarrier_arrive(barriers, EMPTY + s)  # read: the producer may refill it


@cuda.jit(device=True)
def store(c, acc, turn, lane):
    """Given: the epilogue — acc into rows first_row(turn) … of C, column ``lane``."""
    m, n = c.shape
    row = first_row(turn)
    for i in range(BLOCK_M):
        if row + i < m and lane < n:
            c[row + i, lane] = acc[i]


@cuda.jit
def pingpong_kernel(a, b, c):
    stages = cuda.shared.array(RING_FLOATS, float32, alignment=SHARED_ALIGN)
    barriers = cuda.shared.array(BARRIERS, uint64)
    k_total, n = a.shape[1], c.shape[1]
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    turns = block_turns(c.shape[0])
    # Given: the ring's barriers — full: the producer's one arrival and the stage's bytes; empty: one arrival per
    # thread of the consumer that read the stage — made visible to every thread and to the copy engine.
    if tid == 0:
        for s in range(STAGES):
            mbarrier_init(barriers, FULL + s, 1)
            mbarrier_init(barriers, EMPTY + s, CONSUMER_THREADS)
    fence_proxy_async()
    cuda.syncthreads()

    if warp == CONSUMERS:  # Given: the producer warp; one thread copies the k-tiles of the block's turns, in order
        if lane == 0:
            produce(stages, barriers, b, k_total, n, turns)
    else:  # consumer `warp`: the block's turns warp, warp + 2, …
        consumer = warp
        acc = cuda.local.array(BLOCK_M, float32)
        for turn in range(consumer, turns, 2):
            if turn > 0:  # wait until the other consumer has issued the last products of the block's turn − 1
                named_barrier_sync(ORDER_BARRIER + consumer, ORDER_THREADS)
            main_loop(acc, a, stages, barriers, n, turn, lane)
            if turn + 1 < turns:  # the block has a next tile, the other consumer's: its main loop may start
                named_barrier_arrive(ORDER_BARRIER + 1 - consumer, ORDER_THREADS)
            store(c, acc, turn, lane)  # the epilogue, under the other consumer's main loop
