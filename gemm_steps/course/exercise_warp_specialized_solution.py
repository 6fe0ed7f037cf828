"""The solution of exercise ``warp_specialized`` (``exercises/warp_specialized.py``, lesson 17): a block of three
warpgroups — one producer that only issues the copies and gives up registers, two consumers that only multiply.

The parts marked "given" are the stub's, unchanged; the rest is what the learner writes.
"""

from numba import cuda, float32, uint64

from ..toolkit.kernel_tools import kernel
from ..toolkit.mbarrier_ops import copy_bulk, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait
from ..toolkit.warpgroup_ops import (fence_proxy_async, matrix_descriptor, operand_bits, registers_lower_to,
                                     registers_raise_to, shared_address, warpgroup_commit, warpgroup_fence,
                                     warpgroup_wait_all, wgmma_tf32, zero_accumulators)

CONSUMERS = 2  # consumer warpgroups: 0 and 1; warpgroup CONSUMERS (threads 256–383) produces
THREADS = 128 * (CONSUMERS + 1)
M, N, K = 64 * CONSUMERS, 16, 32  # C (128×16) = A (128×32) · B (32×16); consumer w computes rows 64w … 64w + 63
BLOCK_K = 8  # one k-tile: one wgmma.m64n16k8
K_TILES = K // BLOCK_K
STAGES = 2  # the ring: stage t % STAGES holds k-tile t
STAGE_FLOATS = N * BLOCK_K  # one k-tile of B, in the wgmma exercise's core-matrix layout
STAGE_BYTES = STAGE_FLOATS * 4
BARRIERS, TILE_FLOATS = 2 * STAGES, STAGES * STAGE_FLOATS  # the shared arrays' sizes
FULL, EMPTY = 0, STAGES  # barriers[FULL + s]: stage s holds its k-tile; barriers[EMPTY + s]: stage s may be refilled
ACCUMULATORS = N // 2
# 384 threads start with 168 registers each (65,536 / 384, in steps of 8): the block's pool is 384 × 168 = 64,512.
PRODUCER_REGISTERS = 40  # setmaxnreg.dec: the producer only issues copies
CONSUMER_REGISTERS = 232  # setmaxnreg.inc: 128 × 40 + 256 × 232 = 64,512 — the whole pool, no more


@cuda.jit(device=True)
def produce(tiles, barriers, b_tiles, t):
    """Given: k-tile t of B into stage t % STAGES by the copy engine — its bytes announced on full[stage] (one
    arrival), then completed there by the copy."""
    stage = t % STAGES
    mbarrier_arrive_expect_tx(barriers, FULL + stage, STAGE_BYTES)
    copy_bulk(tiles, stage * STAGE_FLOATS, b_tiles, t * STAGE_FLOATS, STAGE_BYTES, barriers, FULL + stage)


@cuda.jit(device=True)
def fresh_accumulators():
    """Given: zeros written in registers here (see the wgmma exercise)."""
    return warpgroup_wait_all(zero_accumulators(ACCUMULATORS))


@cuda.jit(device=True)
def multiply(tiles, a, t, acc, consumer, warp, lane):
    """Given: acc += this consumer's 64 rows of A's k-tile t times B's k-tile t (in stage t % STAGES): one wgmma,
    fenced, committed and waited for. Returns acc."""
    row, col = consumer * 64 + warp * 16 + lane // 4, t * BLOCK_K + lane % 4
    a0, a1 = operand_bits(a[row, col]), operand_bits(a[row + 8, col])
    a2, a3 = operand_bits(a[row, col + 4]), operand_bits(a[row + 8, col + 4])
    descriptor = matrix_descriptor(shared_address(tiles, t % STAGES * STAGE_FLOATS), 256, 128)
    warpgroup_fence()
    acc = wgmma_tf32(tiles, a0, a1, a2, a3, descriptor, acc, 1)
    warpgroup_commit()
    return warpgroup_wait_all(acc)


@cuda.jit(device=True)
def store(c, acc, consumer, warp, lane):
    """Given: this consumer thread's accumulators into its 64 rows of C."""
    for v in range(ACCUMULATORS):
        c[consumer * 64 + warp * 16 + lane // 4 + 8 * (v % 4 // 2), 8 * (v // 4) + 2 * (lane % 4) + v % 2] = acc[v]


@kernel(launch_bounds=(THREADS, 1))  # 384 threads, 1 block an SM: 168 registers at entry (no bounds on the
def warp_specialized_kernel(a, b_tiles, c):  # simulator)
    barriers = cuda.shared.array(BARRIERS, uint64)
    tiles = cuda.shared.array(TILE_FLOATS, float32)
    tid = cuda.threadIdx.x
    warpgroup, warp, lane = tid // 128, tid % 128 // 32, tid % 32
    # Given: the ring's barriers — full: the producer's one arrival and the stage's bytes; empty: one arrival per
    # consumer warp — made visible to every thread and to the copy engine.
    if tid == 0:
        for s in range(STAGES):
            mbarrier_init(barriers, FULL + s, 1)
            mbarrier_init(barriers, EMPTY + s, CONSUMERS * 4)
    fence_proxy_async()
    cuda.syncthreads()

    if warpgroup == CONSUMERS:  # the producer: gives registers back; one thread walks the k-tiles
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(K_TILES):
                if t >= STAGES:  # the stage's (t // STAGES)-th refill: wait until every consumer warp released it
                    mbarrier_wait(barriers, EMPTY + t % STAGES, (t // STAGES - 1) % 2)
                produce(tiles, barriers, b_tiles, t)
    else:  # a consumer: takes the registers; waits for data, multiplies, releases the stage
        registers_raise_to(CONSUMER_REGISTERS)
        acc = fresh_accumulators()
        for t in range(K_TILES):
            mbarrier_wait(barriers, FULL + t % STAGES, (t // STAGES) % 2)  # k-tile t's bytes have landed
            acc = multiply(tiles, a, t, acc, warpgroup, warp, lane)
            if lane == 0:
                mbarrier_arrive(barriers, EMPTY + t % STAGES)  # its wgmma is done: the stage may be refilled
        store(c, acc, warpgroup, warp, lane)
