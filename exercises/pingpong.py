"""Exercise `pingpong` (lesson 19): two consumers take the block's tiles in turn, and two named barriers order their
main loops, so that one consumer's store of C runs while the other multiplies.

Grade it:  gemm-steps exercise check pingpong

The grader launches a persistent grid of G blocks (G = 2, then 1) of three warps:
    pingpong_kernel[G, THREADS](a, b, c)
a is M×K, b is K×N **flattened** (row k of B is b[k·N : (k + 1)·N]), c is M×N (float32), N ≤ 32 and a multiple of 4;
M and K need not be multiples of the tiles. A tile of C is BLOCK_M = 8 rows, all N columns. Block x takes tiles
x, x + G, x + 2G, … of C: the block's tiles 0, 1, 2, …, numbered by `turn` in the kernel (turn i is tile x + i·G of C;
block_turns says how many the block has; the grader's messages say "the block's tile i"). Warp 2 is the producer
(given): one thread copies the k-tiles of B for the block's turns, one turn after the other, through a ring of
STAGES = 2 stages, as in the mbarrier_ring exercise: the ring's k-tile g is k-tile g % k_tiles of turn g // k_tiles.
Warps 0 and 1 are the consumers (step 19's consumer warpgroups, scaled down to a warp each); lane = column of C. For
one turn, main_loop (given) waits for, multiplies and releases that turn's k-tiles, and store (given) writes the
result to C.

You write the consumers' part — step 19's ping-pong:
1. The turns: consumer w takes the block's turns w, w + 2, w + 4, … (turn i to consumer i % 2).
2. The wait: before its main loop for turn i > 0, consumer w waits at its own named barrier until the other
   consumer has issued the last products of turn i − 1: named_barrier_sync(ORDER_BARRIER + w, ORDER_THREADS).
   Turn 0 has no turn before it: consumer 0 starts it without waiting.
3. The hand-over: after its main loop for turn i, if the block has a turn i + 1, consumer w arrives at the other
   consumer's barrier: named_barrier_arrive(ORDER_BARRIER + 1 − w, ORDER_THREADS). bar.arrive does not wait.
4. The epilogue: store, after the hand-over — so that it runs while the other consumer's main loop does.
A phase of an order barrier counts ORDER_THREADS = 64 threads: the 32 of the warp that waits and the 32 of the warp
that arrives (every thread of a warp executes bar.sync and bar.arrive).

What the grader checks, on the simulator, with the named-barrier and mbarrier twins watched: that each of the block's
turns is taken by one consumer; that the main loops take turns — none starts before the one of the turn before it
has ended; that a wait which can never complete is named (who waits at which barrier, for whose arrive) instead of a
hang; that each consumer arrives before its store; with a timeline of the two consumers. Then the numbers, against a
float64 reference, C filled with NaN first. On a GPU it only compiles the kernel (compute capability 9.0): a bar.sync
that never gets its arrivals hangs a GPU, so the checks run on the simulator.

Hints
* Lesson 19, "The idea" and "The kernel"; step 19's consumer branch (python -c "import gemm_steps;
  print(gemm_steps.get_step('pingpong').source())"): its `turn`, its `if turn > 0:` and `if tile + stride <
  tile_count:`.
* Without the order, consumer 1 would begin turn 1 at once and wait on stages that still hold turn 0's k-tiles: a
  parity tells a fill only from the one just before it, so such a wait can end on the wrong fill (lesson 19, "The
  ring, over tiles").
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32, uint64

from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_bulk, mbarrier_arrive, mbarrier_arrive_expect_tx,  # noqa: F401
                                             mbarrier_init, mbarrier_wait, named_barrier_arrive, named_barrier_sync)
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async

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
    else:  # a consumer warp
        consumer = warp
        acc = cuda.local.array(BLOCK_M, float32)  # main_loop fills it, store writes it to C
        # Your code here: this consumer's turns, each one's wait, main loop, hand-over and store.
        pass
