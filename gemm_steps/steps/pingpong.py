"""Step 19 — persistent ping-pong: each consumer warpgroup owns whole tiles, and one stores while the other multiplies.

Changed from step 18: back to step 17's TF32 arithmetic (step 18's 3xTF32 and its split A stay with step 18), so
this step is step 17's design with one idea added, and is measured against step 17. Same producer warpgroup and
``setmaxnreg`` hand-off, same ring of full/empty mbarriers fed by the copy engine, same TF32 ``wgmma`` on Cᵀ with B's
fragments in registers and A's swizzled tile in shared memory; what changes:

* **Persistent.** One block per SM (or per tile, if fewer) walks tiles b, b + gridDim.x, … in step 16's grouped
  order, and the ring runs on from one tile into the next: one counter g of the block's k-tiles over all its tiles
  (stage g % STAGES, parity g // STAGES % 2), so the producer copies the next tile's first k-tiles while this
  tile's last ones are multiplied.
* **A tile per consumer.** In step 17 both consumers share every 256×128 tile. Here a tile is 128×128 and belongs to
  one consumer: two m64n128k8 a k-step (C's columns 0–63 and 64–127, 64 accumulators each), B's fragments for both
  halves. The block's tiles 0, 2, 4, … go to consumer 0 and 1, 3, 5, … to consumer 1; a stage is read by one
  consumer, so its empty barrier counts that consumer's 4 warps. A stage (one k-tile of one tile) is 33 KB: 6 fit,
  and 4 are kept in flight, which ran faster (``Config.STAGES``).
* **Ping-pong.** Before its main loop a consumer waits at a *named barrier* (``bar.sync ORDER_BARRIER + itself,
  256``) until the other consumer has issued the last products of the block's previous tile (``bar.arrive``): the
  main loops take turns, and each consumer's store of C overlaps the other's main loop (CUTLASS's
  ``KernelTmaWarpSpecializedPingpong``). The order also keeps the ring's parity bits right: a parity wait tells the
  phase in progress only from the one before it, so no consumer may run two laps of the ring ahead of the copies —
  built without the order, consumer 1 started the block's second tile at once and the launch failed on an H100
  (experiments/pingpong_bench.py).

Why it should be faster: step 17 pays per tile, outside its k-loop, a block's start and a store of C; here the
persistent ring hides the start and the other consumer's main loop hides the store. Expect: lesson 19 states the
prediction (made before the run, from step 17's timeline) and the measurement against it — ping-pong ran slower than
step 17 (experiments/results/experiment-pingpong-nvidia-h100.json). A controlled run says why
(experiments/pingpong_fair.py): with step 17's work per consumer, the schedule alone still loses, because a consumer
that owns its tile loads its own A k-tile (more L2 bytes per FLOP); this step's narrower tile loads fewer bytes and
twice the B fragments per FLOP instead. Measured
(results/bench-nvidia-h200-2026-11-30.json): 262.1 TFLOPS at 4096³ and 271.2 at 8192³: 0.72× and 0.73× step 17, 65 %
and 66 % of cuBLAS TF32.

Fast kernel only: full tiles, K a multiple of 32, N of 4, 16-byte-aligned matrices; the rest runs on step 15's edge
kernel (as step 17). Compute capability 9.0 only; runs on the simulator (``setmaxnreg`` is a no-op there; the named
barriers and mbarriers have twins that time out instead of hanging — on a GPU a ``bar.sync`` that never gets its
arrivals hangs the launch, an mbarrier wait traps after 2 s).
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32, uint64

from ..toolkit.intrinsics import divide_u32
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait, named_barrier_arrive, named_barrier_sync, tensor_map_acquire)
from ..toolkit.tensor_core_ops import to_tf32
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_tiles import PersistentTmaTiles
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                     registers_lower_to, registers_raise_to, shared_address, swizzled_descriptor,
                                     warpgroup_commit, warpgroup_fence, warpgroup_wait_all, warpgroup_wait_but_one,
                                     wgmma_tf32, zero_accumulators)
from ..toolkit.warpgroup_ops import check_register_handoff, registers_at_entry
from . import warpgroup_tf32

TITLE = "Persistent ping-pong: consumers on alternate tiles"
SUMMARY = ("A persistent grid whose two consumer warpgroups each own whole tiles and take turns in the main loop "
           "(named barriers), so one stores C while the other multiplies.")
ARITHMETIC = "tf32"  # step 17's
#: wgmma, the copy engine's tensor copies and setmaxnreg: compute capability 9.0 only (H100, H200).
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


@cuda.jit(device=True, inline=True)
def grouped_tile(tile, tile_rows, tiles_per_group, group_m):
    """(tile-row, tile-column) of tile number ``tile`` in grouped order: column by column within groups of
    ``group_m`` tile-rows (32-bit divisions only: a 64-bit one would serialise every wgmma)."""
    group = divide_u32(tile, tiles_per_group)
    first_row = group * uint32(group_m)
    rows_in_group = uint32(min(tile_rows - first_row, uint32(group_m)))
    in_group = tile - group * tiles_per_group
    across = divide_u32(in_group, rows_in_group)
    return first_row + (in_group - across * rows_in_group), across


@cuda.jit(device=True, inline=True)
def ring_place(g, stages):
    """(stage, lap) of the ring's k-tile number ``g``: ``g % stages`` and ``g // stages`` from one 32-bit division.
    Written ``g % STAGES``, Numba computes in 64 bits, and with a stage count that is not a power of two (6, the
    most that fit) every use becomes a 64-bit multiply-high sequence inside the k-loop: the 6-stage build ran 0.85×
    the 4-stage build so, 0.93× / 0.88× with this function (4096³ / 8192³; experiments/results/
    experiment-pingpong-fair-nvidia-h200.json, then -2.json)."""
    lap = divide_u32(g, stages)
    return uint32(g - lap * stages), lap


def pingpong_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                    BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS, A_STAGE_FLOATS,
                    B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS, PRODUCER_REGISTERS, CONSUMER_REGISTERS,
                    ORDER_BARRIER):
    """Tiles b, b + gridDim.x, … of C = A·B (grouped order), the block's tiles taken in turn by its CONSUMERS (2)
    warpgroups, each a whole BLOCK_M×BLOCK_N tile as Cᵀ by TF32 ``wgmma``; one warpgroup produces."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    tile_rows, tile_cols = uint32(full_row_blocks), uint32(full_col_blocks)
    tile_count = tile_rows * tile_cols
    tiles_per_group = uint32(GROUP_M) * tile_cols
    first, stride = uint32(cuda.blockIdx.x), uint32(cuda.gridDim.x)  # the block's tiles: first, first + stride, …
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, WARPS)  # empty: one arrival per warp of the consumer that read it
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            g = uint32(0)  # k-tiles this block has produced, over all its tiles, in the block's tile order
            tile = first
            while tile < tile_count:
                tile_row, tile_col = grouped_tile(tile, tile_rows, tiles_per_group, GROUP_M)
                for t in range(k_tiles):
                    stage, lap = ring_place(g, STAGES)
                    if g >= STAGES:  # the stage's lap-th fill: wait until the consumer's warps released it
                        mbarrier_wait(barriers, STAGES + stage, uint32((lap - 1) % 2))
                    mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                    copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, tile_row * BLOCK_M, t * BLOCK_K, barriers, stage)
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, tile_col * BLOCK_N,
                              barriers, stage)
                    g += 1
                tile += stride
    else:  # consumer `warpgroup`: the block's tiles warpgroup, warpgroup + 2, …; waits, multiplies, releases, stores
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warp * 16 + lane // 4  # in the tile's left half; + 64: the right
        b_frag = registers(2, 2, K_STEPS, 4)  # [k-tile parity][half][k-step][element]: u loads set u % 2
        turn = warpgroup  # the block's tile number (0, 1, 2, …) this consumer takes next
        tile = first + warpgroup * stride
        while tile < tile_count:
            tile_row, tile_col = grouped_tile(tile, tile_rows, tiles_per_group, GROUP_M)
            g0 = turn * k_tiles  # the ring's k-tiles before this tile's (the producer's counter)
            left = zero_accumulators(ACCUMULATORS)  # C's columns 0–63 of the tile (rows of Cᵀ) …
            right = zero_accumulators(ACCUMULATORS)  # … and 64–127
            if turn > 0:  # ping-pong: wait until the other consumer has issued the block's previous tile's products
                named_barrier_sync(ORDER_BARRIER + warpgroup, 256)
            for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
                for odd in unroll(2):
                    u = pair + odd
                    if u < k_tiles:
                        g = g0 + u
                        stage, lap = ring_place(g, STAGES)
                        stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                        mbarrier_wait(barriers, stage, uint32(lap % 2))  # its bytes have landed
                        for h in unroll(2):
                            for s in unroll(K_STEPS):
                                for q in unroll(4):
                                    x = tiles[stage_b + fragment_at + (h * 64 + (s * 8 + q // 2 * 4) * B_STRIDE
                                                                       + q % 2 * 8)]
                                    b_frag[odd][h][s][q] = operand_bits(to_tf32(x))
                        warpgroup_fence()
                        for s in unroll(K_STEPS):
                            a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                            left = wgmma_tf32(tiles, b_frag[odd][0][s][0], b_frag[odd][0][s][1], b_frag[odd][0][s][2],
                                              b_frag[odd][0][s][3], a_tile, left, 1)
                            right = wgmma_tf32(tiles, b_frag[odd][1][s][0], b_frag[odd][1][s][1],
                                               b_frag[odd][1][s][2], b_frag[odd][1][s][3], a_tile, right, 1)
                        warpgroup_commit()
                        left = warpgroup_wait_but_one(left)  # k-tile u − 1's wgmma are done: its stage is free
                        right = warpgroup_wait_but_one(right)
                        if u > 0 and lane == 0:
                            mbarrier_arrive(barriers, STAGES + ring_place(g - 1, STAGES)[0])
            if tile + stride < tile_count:  # the block has a next tile, the other consumer's: its turn
                named_barrier_arrive(ORDER_BARRIER + (1 - warpgroup), 256)
            left = warpgroup_wait_all(left)
            right = warpgroup_wait_all(right)
            if lane == 0:  # the tile's last k-tile is done too: release its stage
                mbarrier_arrive(barriers, STAGES + ring_place(g0 + k_tiles - 1, STAGES)[0])

            for v in unroll(ACCUMULATORS):  # the store: overlaps the other consumer's main loop
                row = tile_row * BLOCK_M + lane % 4 * 2 + (v // 4 * 8 + v % 2)
                col = tile_col * BLOCK_N + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
                c[row * n + col] = left[v]
                c[row * n + col + 64] = right[v]
            turn += 2
            tile += 2 * stride


#: The shared memory a block of an H100 or H200 may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin).
SHARED_BYTES_PER_BLOCK = 232_448


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 32  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 1  # launch_bounds occupancy hint (0 = none)
    # k-tiles in flight. 6 fit the GPU tile (fitting_stages), but 4 ran faster: 1.07× / 1.13× the 6-stage build at
    # 4096³ / 8192³ in one run (experiment-pingpong-fair-nvidia-h200-2.json). None: as many as fit.
    STAGES: int | None = 4
    GROUP_M: int = 8  # tile-rows per group in the tile order (1 = row-major)
    PRODUCER_THREADS: int = 128  # one producer warpgroup beside the consumers: it only issues the copies
    # Registers a thread keeps in each role after the hand-off (setmaxnreg: 24–256, multiples of 8). Three warpgroups
    # start with 65,536 / 384 → 168 each: the block's pool is 384 × 168 = 64,512, and 128 × 40 + 256 × 232 = 64,512
    # fills it exactly (setmaxnreg.inc draws from that pool, not from the SM's 65,536: asking for more hangs).
    PRODUCER_REGISTERS: int = 40
    CONSUMER_REGISTERS: int = 232
    ORDER_BARRIER: int = 1  # hardware barrier 0 is cuda.syncthreads()'s; the order barriers are 1 (consumer 0 waits on it) and 2

    def __post_init__(self):
        if self.STAGES is None:
            object.__setattr__(self, "STAGES", self.fitting_stages())

    def fitting_stages(self) -> int:
        """How many stages fit a block's shared memory, each with its two barriers (16 bytes)."""
        stage_bytes = (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS) * 4
        return (SHARED_BYTES_PER_BLOCK - self.EXTRA_SHARED_FLOATS * 4) // (stage_bytes + 16)
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
    def WARPS(self) -> int:  # one consumer's warps: each empty barrier counts the warps of the consumer on its tile
        return 4

    @property
    def CONSUMERS(self) -> int:  # consumer warpgroups
        return self.THREADS // 128

    def problems(self) -> list[str]:
        if self.BLOCK_N != 128 or self.THREADS != 256 or self.BLOCK_M > 128:
            return ["a consumer owns a whole tile of two 64-column halves: BLOCK_N = 128, 256 threads (two consumer "
                    "warpgroups) and BLOCK_M <= 128 (BLOCK_M accumulators a thread)"]
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
        fitting = self.fitting_stages()
        if not 2 <= self.STAGES <= fitting:
            return [f"{self.STAGES} stages: 2 to {fitting} fit a block's shared memory"]
        return []


def _fields(**values) -> dict:
    return {name: value for name, value in values.items() if value is not None}


#: On an H100/H200: 128×128 tiles (wgmma N = 128 rows of C, two 64-column halves), two consumers and a producer.
SEARCH_SPACE = [Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: 32×128 tiles (wgmma N = 32), the same two halves and roles.
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=128, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, stages: int | None = None) -> PersistentTmaTiles:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`)."""
    config = Config.of(config, **_fields(STAGES=stages))
    return PersistentTmaTiles("pingpong", pingpong_kernel, config, edge=warpgroup_tf32.build(config),
                              requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY)


TUNING = Tuning(build, "pingpong", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show (tests/test_ptx.py): per pass of a consumer's loop (two k-tiles) two wgmma
#: per k-step (one per 64-column half), per k-tile a wait for all groups but the newest for each half's accumulators
#: (and one for all after the tile), a TF32 rounding per fragment element; one setmaxnreg each way; two bar.sync —
#: cuda.syncthreads() before the roles part and the order's named barrier (its bar.arrive: tests/test_pingpong.py);
#: no cp.async, no FP32 FMAs, no local memory, no wgmma operand written after its fence.
_GPU = default_config(SEARCH_SPACE)
_K_STEPS = _GPU.BLOCK_K // 8
PTX_EXPECT = {"pingpong_fast": {
    "cp.async.bulk.tensor": ">=2", "mbarrier.arrive.expect_tx": ">=1", "wgmma.mma_async.tf32": 2 * 2 * _K_STEPS,
    "wgmma.wait_group": 2 * 2 + 2, "cvt.rna.tf32.f32": 2 * 2 * _K_STEPS * 4, "setmaxnreg": 2, "bar.sync": 2,
    "cp.async.cg.shared.global": 0, "fma.rn.f32": 0, "local": 0, "wgmma.written_after_fence": 0}}
#: … and ptxas (nvJitLink with LTO, sm_90a): no spills, no wgmma serialised.
PTXAS_EXPECT = {"pingpong_fast": {"spill_bytes": 0, "registers": "<=168", "wgmma_serialized": 0}}
