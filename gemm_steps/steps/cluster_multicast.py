"""Step 20 — a cluster of two blocks shares A's tile: each loads half and the copy engine multicasts it to both.

Changed from step 17 (same producer warpgroup, ring of full/empty mbarriers, ``wgmma``, register hand-off, tile and
arithmetic): the blocks are launched in **clusters of CLUSTER = 2** side by side in one tile-row, and A's k-tiles,
which both need, are read from L2 once per cluster instead of once per block.

* **Who loads what.** The two blocks of a cluster compute the tiles (row, 2j) and (row, 2j + 1): the same BLOCK_M
  rows of A, different columns of B. For each k-tile, block r (its rank in the cluster, ``cluster_rank()``) loads
  rows r·A_HALF_ROWS … of A's tile and *multicasts* them (``copy_tile_multicast``, mask 0b11): the copy engine
  writes them into both blocks' shared memory at the same offset and completes their bytes on both blocks' full
  barrier. Each block loads its own B tile as before. So a block's full barrier still waits for STAGE_BYTES — half
  of A from itself, half from its peer, all of B from itself — and L2 sends (A_STAGE + 2·B_STAGE) bytes per cluster
  and k-tile instead of 2·(A_STAGE + B_STAGE): 33 KB a block instead of 49 KB with step 17's tile.
* **Who frees a stage.** Block r's multicast writes into its peer's stage too, so a producer may refill stage s only
  when the consumers of *both* blocks are done with it: an empty barrier counts CLUSTER × CONSUMERS arrivals, one from
  each consumer warpgroup of the cluster — warp r of a warpgroup arrives on block r's barrier
  (``mbarrier_arrive_cluster``: ``mapa`` to that block's barrier, a remote arrival where r is the peer). One warp can
  speak for its warpgroup: the four issue ``wgmma`` together (``.sync.aligned``), after each has read its fragments of
  the stage, and the tensor core's reads of A are the warpgroup's one operation, so when one warp's
  ``wgmma.wait_group`` has seen them complete, nothing of the warpgroup reads the stage any more. (Step 20 first had
  every consumer warp arrive on every block's barrier; experiments/cluster_arrivals.py timed both ways in two runs,
  and this one was the faster at every shape: deep dive 17.)
* **Start and end together.** The peer may multicast into this block and arrive on its barriers as soon as it runs:
  the barriers are initialised, fenced for the cluster (``fence_mbarrier_init``), and then the two blocks meet at a
  cluster barrier (``cluster_sync``) before any copy. At the end each block waits at a second ``cluster_sync`` until
  its peer has made its last arrival: a block's shared memory must outlive every access from the cluster.

Why faster: the same tiles and the same wgmma, fewer bytes from L2 per FLOP: results/reference-*.json measured step 17
reading more L2 bytes per FLOP than cuBLAS's TF32 kernel, which multicasts (cluster of 2), on both GPUs.
Expect: predictions/20.json, written before the first GPU run. Measured (results/bench-nvidia-h200-2026-11-30.json):
380.1 TFLOPS at 4096³ and 378.6 at 8192³: 1.04× and 1.02× step 17, 94 % and 92 % of cuBLAS TF32. (That run's step
20 had step 17's older consumer loop; since then its loop is step 17's as it is — the ring in 32-bit arithmetic, A's
descriptor once a stage, B rounded in two instructions — so the cluster is the one change from step 17:
predictions/step-20-lean-loop-before-run.md.)

Fast kernel only: full tiles in whole clusters (a last odd tile-column, and every ragged edge, runs on step 15's edge
kernel), K a multiple of 32, N of 4, 16-byte-aligned matrices. Compute capability 9.0 only; runs on the simulator,
the two blocks of a cluster at the same time with their own shared memory (``toolkit/cluster_ops.py``).
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32, uint64

from ..toolkit.cluster_ops import cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init, \
    mbarrier_arrive_cluster
from ..toolkit.intrinsics import divide_u32
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import copy_tile, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, \
    tensor_map_acquire
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_tiles import ClusterTmaTiles
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, registers_lower_to,
                                     registers_raise_to, rounded_operand_bits, shared_address, swizzled_descriptor,
                                     warpgroup_commit,
                                     warpgroup_fence, warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                     zero_accumulators)
from ..toolkit.warpgroup_ops import check_register_handoff, registers_at_entry
from . import warpgroup_tf32

TITLE = "Clusters and TMA multicast: two blocks share A's tile"
SUMMARY = ("Two blocks of a cluster compute neighbouring tiles of one tile-row; each loads half of the A tile they "
           "share and the copy engine multicasts it to both, so A crosses L2 once per cluster.")
ARITHMETIC = "tf32"  # step 17's
#: The step this one changes (not step 19, the step before it: ping-pong is a side road; `gemm-steps diff 17 20`).
BUILDS_ON = "warp_specialized"
#: wgmma, clusters and TMA multicast: compute capability 9.0 only (H100, H200).
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def cluster_multicast_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                             BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                             A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                             PRODUCER_REGISTERS, CONSUMER_REGISTERS, CLUSTER, A_HALF_ROWS, CLUSTER_MASK):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``; CLUSTER blocks side by side share A's tile."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rank = cluster_rank()  # this block's place in its cluster: blockIdx.x % CLUSTER
    # Cluster j takes pair j of tiles in grouped order (step 16's, over pairs); block r of it the pair's r-th column.
    tile_rows, pair_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x) // CLUSTER
    cluster_index = uint32(cuda.blockIdx.y) * pair_cols + uint32(cuda.blockIdx.x) // CLUSTER
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = cluster_index - first_row * pair_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = (across * CLUSTER + rank) * BLOCK_N  # …then on to the next pair of columns
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: this block's producer arrives once; both blocks' bytes land
            mbarrier_init(barriers, STAGES + s, CLUSTER * CONSUMERS)  # empty: each consumer warpgroup of the cluster
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
        fence_mbarrier_init()  # the initialised barriers → visible to the peer block's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(k_tiles):
                stage = t % STAGES
                if t >= STAGES:  # refill: wait until every consumer warpgroup of *both* blocks released it
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)  # all of A (two halves) and B land here
                copy_tile_multicast(tiles, stage * A_STAGE_FLOATS + rank * A_HALF_ROWS * BLOCK_K, a_map,
                                    block_row + rank * A_HALF_ROWS, t * BLOCK_K, barriers, stage, CLUSTER_MASK)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
    else:  # a consumer warpgroup: takes the registers; only waits for data, multiplies and releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        acc = zero_accumulators(ACCUMULATORS)
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        # Step 17's loop as it is now: the ring's arithmetic in 32-bit unsigned integers, A's descriptor once a stage,
        # B rounded to TF32 in two instructions (experiments/loop_instructions.py measured the three on step 17).
        stages = uint32(STAGES)
        for pair in range(uint32(0), k_tiles, uint32(2)):  # two k-tiles a pass: the register set known when compiling
            for half in unroll(2):
                u = uint32(pair + half)
                if u < k_tiles:
                    stage = u % stages
                    stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                    mbarrier_wait(barriers, stage, u // stages % uint32(2))  # both halves of A and B have landed
                    for s in unroll(K_STEPS):
                        for q in unroll(4):
                            x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                            b_frag[half][s][q] = rounded_operand_bits(x)  # rounded to TF32: 2 instructions
                    warpgroup_fence()
                    a_stage = swizzled_descriptor(uint32(base + stage * uint32(A_STAGE_FLOATS * 4)))
                    for s in unroll(K_STEPS):  # k-step s reads 32 bytes further along A's rows: 2 descriptor units
                        acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                         b_frag[half][s][3], a_stage + uint64(s * 2), acc, 1)
                    warpgroup_commit()
                    acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                    if u > 0 and lane == 0 and warp < CLUSTER:  # warp r of the warpgroup tells block r: here and
                        mbarrier_arrive_cluster(barriers, stages + (u - uint32(1)) % stages, warp)  # the peer
        acc = warpgroup_wait_all(acc)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            c[row * n + col] = acc[v]
    cluster_sync()  # the peer's last arrivals on this block's barriers are in: its shared memory may go


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
    STAGES: int = 4  # four k-tiles in flight, the most that fit at these tiles (step 17's: 4 × 50,176 bytes)
    GROUP_M: int = 8  # tile-rows per group in the tile order (1 = row-major)
    PRODUCER_THREADS: int = 128  # one producer warpgroup beside the consumers: it only issues the copies
    # Registers a thread keeps in each role after the hand-off (setmaxnreg: 24–256, multiples of 8). Three warpgroups
    # start with 65,536 / 384 → 168 each: the block's pool is 384 × 168 = 64,512, and 128 × 40 + 256 × 232 = 64,512
    # fills it exactly (setmaxnreg.inc draws from that pool, not from the SM's 65,536: asking for more hangs).
    PRODUCER_REGISTERS: int = 40
    CONSUMER_REGISTERS: int = 232
    CLUSTER: int = 2  # blocks per cluster. Two, as cuBLAS's TF32 kernel (results/reference-*.json: cluster 2 × 1 × 1)

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
    def A_STAGE_FLOATS(self) -> int:  # a stage of A: BLOCK_M rows of BLOCK_K = 32 floats, one 128-byte swizzled row each
        return self.BLOCK_M * self.BLOCK_K

    @property
    def B_STAGE_FLOATS(self) -> int:
        return self.BLOCK_K * self.B_STRIDE

    @property
    def STAGE_BYTES(self) -> int:  # what one stage's copies bring (both boxes, whole): its full barrier waits for it
        return (self.BLOCK_M + self.B_STRIDE) * self.BLOCK_K * 4

    @property
    def BARRIERS(self) -> int:
        return 2 * self.STAGES  # a full and an empty barrier per stage

    @property
    def EXTRA_SHARED_FLOATS(self) -> int:  # first_aligned's slack (the swizzled stages start 1,024-byte aligned)
        return SWIZZLE_ALIGN // 4

    @property
    def SHARED_BYTES(self) -> int:
        return (self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS) + self.EXTRA_SHARED_FLOATS) * 4

    @property
    def DYNAMIC_SHARED(self) -> bool:  # the stages always live in one dynamic array, whatever its size
        return True

    @property
    def B_BASE(self) -> int:  # where B's stages start in it
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

    def problems(self) -> list[str]:
        warpgroups = self.BLOCK_N // 64
        if (warpgroups * 64 != self.BLOCK_N or self.THREADS != 128 * warpgroups or self.BLOCK_M % 8
                or not 8 <= self.BLOCK_M <= 256 or self.BLOCK_K != 32):
            return ["needs BLOCK_N = 64 per warpgroup of 128 threads, BLOCK_M a multiple of 8 up to 256 and "
                    "BLOCK_K = 32"]
        threads = self.THREADS + self.PRODUCER_THREADS
        try:
            check_register_handoff(threads, [(self.PRODUCER_THREADS, self.PRODUCER_REGISTERS),
                                             (self.THREADS, self.CONSUMER_REGISTERS)],
                                   registers_at_entry(threads, max(1, self.MIN_BLOCKS_PER_SM)))
        except ValueError as error:
            return [str(error)]
        if self.A_HALF_ROWS * self.CLUSTER != self.BLOCK_M or self.A_HALF_ROWS % 8:
            return [f"BLOCK_M = {self.BLOCK_M} split over a cluster of {self.CLUSTER}: each block's rows must be a "
                    "multiple of 8 (the 128-byte swizzle repeats every 8 rows, 1,024 bytes)"]
        return []


#: Step 17's tile: 256 rows × 2 consumer warpgroups and a producer, a block of a cluster of two.
SEARCH_SPACE = [Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one consumer warpgroup on a 32×64 tile, as steps 14–17.
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, cluster: int | None = None) -> ClusterTmaTiles:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    config = Config.of(config, **({} if cluster is None else {"CLUSTER": cluster}))
    return ClusterTmaTiles("cluster_multicast", cluster_multicast_kernel, config, edge=warpgroup_tf32.build(config),
                           requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY)


TUNING = Tuning(build, "cluster_multicast", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show (tests/test_ptx.py): step 17's (a wgmma per k-step, the waits, a TF32
#: rounding per fragment element, one setmaxnreg each way, the maps acquired at system scope), and the cluster's:
#: A's copies multicast, B's not; one cluster arrival per pass of the loop's k-tile (from warps 0 … CLUSTER − 1 of a
#: warpgroup, to block ``warp``); the barriers' init fenced for
#: the cluster; two cluster barriers; no block-wide bar.sync left.
_GPU = default_config(SEARCH_SPACE)
PTX_EXPECT = {"cluster_multicast_fast": {
    "cp.async.bulk.tensor.multicast": ">=1", "cp.async.bulk.tensor": ">=2", "mbarrier.arrive.expect_tx": ">=1",
    "mbarrier.arrive.remote": 2, "mapa.shared::cluster": 2,
    "fence.mbarrier_init": 1, "barrier.cluster.arrive": 2, "barrier.cluster.wait": 2,
    "%cluster_ctarank": 1, "wgmma.mma_async.tf32": 2 * _GPU.BLOCK_K // 8, "wgmma.wait_group": 2 + 1,
    "cvt.rna.tf32.f32": 0, "setp.num.f32": 2 * 4 * _GPU.BLOCK_K // 8, "setmaxnreg": 2, "bar.sync": 0,
    "fence.proxy.tensormap.acquire.sys": 2, "cp.async.cg.shared.global": 0, "fma.rn.f32": 0, "local": 0,
    "wgmma.written_after_fence": 0}}
#: … and ptxas, building it as numba-cuda does on a GPU (nvJitLink with LTO, sm_90a), honours the hand-off as in
#: step 17: at most 168 registers at entry, no spills, no wgmma serialised.
PTXAS_EXPECT = {"cluster_multicast_fast": {"spill_bytes": 0, "registers": "<=168", "wgmma_serialized": 0}}
