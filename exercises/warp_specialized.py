"""Exercise `warp_specialized` (lesson 17): split a block into a producer warpgroup and consumer warpgroups, and
hand the producer's registers to the consumers with setmaxnreg.

Grade it:  gemm-steps exercise check warp_specialized

The grader launches one block of three warpgroups (384 threads):
    warp_specialized_kernel[1, 384](a, b_tiles, c)
a is 128×32 (M×K), c is 128×16, float32; b_tiles is B (32×16) as the copy engine would lay it out — k-tile after
k-tile (8 values of k each), each in the wgmma exercise's core-matrix layout — so one copy_bulk moves a k-tile.
C = A·B takes 4 k-tiles through a ring of STAGES = 2 stages of shared memory, each with two mbarriers:
    full[s]  = barriers[FULL + s]: completes when the producer has arrived (expect_tx) and the copy's bytes landed;
    empty[s] = barriers[EMPTY + s]: completes when all 8 consumer warps have released the stage (lane 0 of each).
The k-th time a stage fills, its waiters use parity k % 2 (lesson 16): a consumer waits for k-tile t on full[t % STAGES]
with parity (t // STAGES) % 2; the producer, before refilling stage t % STAGES with k-tile t ≥ STAGES, waits on
empty[t % STAGES] with parity (t // STAGES − 1) % 2.

Given: the barriers' set-up, produce (one k-tile's expect_tx and copy), multiply (one consumer warpgroup's wgmma on
a k-tile, fenced and waited for), fresh_accumulators and store. You write
1. PRODUCER_REGISTERS and CONSUMER_REGISTERS: what each role keeps after the hand-off. 384 threads start with
   168 registers each; setmaxnreg.inc draws from the block's pool — threads × registers at entry — and waits for
   ever if the counts ask for more than it holds (lesson 17; gemm_steps/toolkit/warpgroup_ops.py,
   check_register_handoff).
2. The kernel's roles, one branch each: warpgroup CONSUMERS (threads 256–383) is the producer — it lowers its
   registers (registers_lower_to) and one thread walks the k-tiles: wait until the stage is empty, produce; the
   others (consumer w = warpgroup 0 or 1, rows 64w … 64w + 63 of C) raise theirs (registers_raise_to), then per
   k-tile wait until the stage is full, multiply, release the stage; then store.

What the grader checks: the register counts against the block's pool (the file's constants first, then what each
warpgroup asked setmaxnreg for); that it compiles for a GPU (compute capability 9.0); on the simulator, with its
twins watched, that the producer issues no wgmma and stores nothing, that each wait is on the barrier and parity its
role needs — a wait that can never complete is named after a few seconds (the mbarrier twins' deadlock detector), not
a hang; then the numbers.

Hints
* Lesson 17, "The idea"; step 17's kernel (python -c "import gemm_steps;
  print(gemm_steps.get_step('warp_specialized').source())"), its `if warpgroup == CONSUMERS:` and its `else:`.
* setmaxnreg takes 24 to 256 registers a thread, in steps of 8; the producer's count is at most 168, the consumers'
  at least 168.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32, uint64

from gemm_steps.toolkit.kernel_tools import kernel
from gemm_steps.toolkit.mbarrier_ops import (copy_bulk, mbarrier_arrive, mbarrier_arrive_expect_tx,  # noqa: F401
                                             mbarrier_init, mbarrier_wait)
from gemm_steps.toolkit.warpgroup_ops import (fence_proxy_async, matrix_descriptor, operand_bits,  # noqa: F401
                                              registers_lower_to, registers_raise_to, shared_address,
                                              warpgroup_commit, warpgroup_fence, warpgroup_wait_all, wgmma_tf32,
                                              zero_accumulators)

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
PRODUCER_REGISTERS = 0  # your value: registers a producer thread keeps (setmaxnreg.dec)
CONSUMER_REGISTERS = 0  # your value: registers a consumer thread takes (setmaxnreg.inc)


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

    # Your code here: the producer's branch and the consumers'.
    pass
