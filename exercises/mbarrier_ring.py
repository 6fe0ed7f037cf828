"""Exercise `mbarrier_ring` (step 16's idea): a ring of shared-memory stages with full/empty mbarriers and phase
bits, filled by the copy engine for one producer thread, read by consumer warps.

Grade it:  gemm-steps exercise check mbarrier_ring

The grader launches your kernel as
    mbarrier_ring_kernel[ceil(M / BLOCK_M), THREADS](a, b, c)
a is M×K, b is K×N **flattened** (a 1-D array of K·N floats: row k of B is b[k·N : (k + 1)·N]), c is M×N (float32),
N ≤ 32 and a multiple of 4. Block x computes rows BLOCK_M·x … of C. K is cut into k-tiles of BLOCK_K rows of B (the
last one shorter when K is not a multiple of BLOCK_K); k-tile t goes to stage t % STAGES of the ring, stages[s ·
STAGE_FLOATS …] (a k-tile of rows × N floats is contiguous in b: one copy).

* thread 0 initialises full[s] (count 1) and empty[s] (count CONSUMERS) for every stage; then fence_proxy_async() and
  cuda.syncthreads() — the last block-wide barrier;
* thread 0 is the **producer**: for each k-tile t, before refilling a stage (t ≥ STAGES) it waits on empty[s] for the
  consumers' release of the fill before; then mbarrier_arrive_expect_tx(full, s, bytes) — one arrival, and the bytes
  the copy will bring — and copy_bulk(stages, s · STAGE_FLOATS, b, first float of the k-tile, bytes, full, s);
* threads 32 … 95 are the **consumers** (CONSUMERS = 64; warp 1 computes rows 0–3 of the block's C, warp 2 rows 4–7,
  lane = column): for each k-tile, wait on full[s], multiply the stage's rows by A (read from global memory), then
  arrive on empty[s] — each consumer thread once per k-tile.

Phases: the r-th fill of stage s completes phase r of full[s]; a waiter names the phase by its parity (r % 2). The
grader checks each thread's waits against that, a read of a stage after its release, every expect_tx against its
copy, and stops a missing arrival with the deadlock detector's message (a short wait limit here), all with a drawing
of the ring at that moment.

Hints
* Lesson 16, "The ring" (its figure draws the parities), and step 16's kernel (python -c "import gemm_steps;
  print(gemm_steps.get_step('tma_pipeline').source())"): the producer's and the consumers' branches of its loop.
* The toolkit's mbarrier functions and their rules are in gemm_steps/toolkit/mbarrier_ops.py (a bulk copy moves a
  multiple of 16 bytes).
* A consumer lane past the last column of C still waits and arrives: the barrier counts CONSUMERS arrivals.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32, uint64  # noqa: F401

from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN  # noqa: F401  (alignment= for the stages)
from gemm_steps.toolkit.mbarrier_ops import (copy_bulk, mbarrier_arrive, mbarrier_arrive_expect_tx,  # noqa: F401
                                             mbarrier_init, mbarrier_wait)
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async  # noqa: F401

STAGES = 3  # k-tile t goes to stage t % STAGES
BLOCK_K = 8  # rows of B in a k-tile
BLOCK_M = 8  # rows of C a block computes
MAX_N = 32  # C's columns at most: one consumer lane per column
STAGE_FLOATS = BLOCK_K * MAX_N
RING_FLOATS = STAGES * STAGE_FLOATS  # (a shared array's shape: one constant)
CONSUMERS = 64  # threads 32 … 95; thread 0 is the producer
ROWS_PER_WARP = BLOCK_M // 2
THREADS = 32 + CONSUMERS


@cuda.jit
def mbarrier_ring_kernel(a, b, c):
    m, k_total = a.shape
    n = c.shape[1]
    # Your code here: the stages and the two barrier arrays, each cuda.shared.array on its own line —
    #     stages = cuda.shared.array(RING_FLOATS, float32, alignment=SHARED_ALIGN)
    #     full = cuda.shared.array(STAGES, uint64)
    #     empty = cuda.shared.array(STAGES, uint64)
    # then the initialisation, the producer and the consumers.
    pass
