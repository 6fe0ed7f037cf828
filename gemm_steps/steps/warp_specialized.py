"""Step 17 — warp specialization: a producer warpgroup feeds two consumer warpgroups, and hands them its registers.

Changed from step 16 (same ring of full/empty mbarriers, same ``wgmma``, tiles, grouped order and arithmetic): who
issues the copies, and how the registers are shared.

* **A warpgroup that only produces.** In step 16 thread 0 — a lane of consumer warpgroup 0 — waits for an empty
  stage and issues each k-tile's two copies. ``wgmma`` is an instruction of the whole warpgroup, so warpgroup 0's
  other 127 threads wait for it: step 16's timeline from the GPU (lesson 16) shows ≈ 700 cycles a k-tile of producer
  work on warpgroup 0's path, warpgroup 0 two k-tiles behind warpgroup 1, and warpgroup 1 waiting ≈ 770 cycles a
  k-tile for data that warpgroup 0's pace had not yet asked for. Here a third warpgroup (threads 256–383) produces:
  its first thread walks the k-tiles — wait until the stage is empty, announce its bytes, start the two copies —
  up to STAGES k-tiles ahead of the slowest consumer. The consumers only wait for data, load fragments, multiply
  and release stages. Each role is one branch of a single ``if``/``else``.
* **Registers handed over with ``setmaxnreg``.** The SM has 65,536 registers; 3 warpgroups launched together get
  65,536 / 384 ≈ 168 a thread — too few for a consumer's 128 accumulators and two fragment sets (186 in step 16):
  ptxas would spill and serialise the ``wgmma`` (C7512; a ninth producer *warp* instead of a warpgroup fared the
  same, experiments/kernels/warpgroup_specialized.py. Two explanations fit that: each of the SM's four
  sub-partitions has its own 16,384 registers and one of them holds three of the nine warps (16,384 / 96 → 168), or
  registers come in whole warpgroups; no measurement here tells them apart). So the producer lowers its registers
  to PRODUCER_REGISTERS (``setmaxnreg.dec``) and the consumers raise theirs to CONSUMER_REGISTERS
  (``setmaxnreg.inc``), both drawn from the block's pool (below). ptxas honours ``setmaxnreg`` only in a whole program: numba-cuda links
  kernels with nvJitLink's LTO where it is installed (the course's set-up), which is one; relocatable PTX is not
  (C7504), which is why ``harness.ptx.kernel_ptxas_info`` builds kernels the LTO way.

Why faster: no consumer thread does the producer's work, and the loads run up to 4 k-tiles ahead instead of 2.
(Since then the consumers' loop computes the ring's stage and phase in 32-bit arithmetic, builds A's descriptor once
a stage and rounds B to TF32 in two instructions: fewer instructions, the same speed and the same C bit for bit,
measured by experiments/loop_instructions.py; the benchmark below ran the loop with them.)
Expect: lesson 17 writes the prediction down from step 16's timeline before the run. Measured
(results/bench-nvidia-h200-2026-11-30.json): 364.3 TFLOPS at 4096³ and 369.6 at 8192³: 1.12× and 1.13× step 16, 90 %
and 89 % of cuBLAS TF32.

Shapes: the fast kernel runs whole products of full tiles (M a multiple of 256, N of 128, K of 32, 16-byte-aligned
matrices). A shape with partial tiles or a partial last k-tile runs on the same kernel built with PARTIAL_TILES: one
launch over every tile and every k-tile, the copy engine zero-filling what of a box lies outside A or B, the store
keeping to C (experiments/tma_edges.py measured it against the old way, the border on step 15's edge kernel). Where
the copy engine cannot read A or B as they are — K or N not a multiple of 4 (a row pitch not a multiple of 16
bytes), or a matrix not 16-byte aligned — one of two ways (``copies_by_threads``): where few FLOPs share each byte
that needs a copy, the THREAD_COPIES build, whose producer threads copy every stage themselves with 4-byte
``cp.async`` (zeros outside A and B) into the layouts the copy engine writes; elsewhere that matrix is first copied
into rows it can read, each widened to a multiple of 4 floats with zeros (``TmaTiles.readable_copy``; C is never
copied), and the partial build runs (experiments/thread_copies.py timed both). Where K is a multiple of 4 but not
of 32, A is readable but its rows sit off the 128-byte L2 lines, and each row of an A box spans two: on large
products with N ≥ 2048 A is first copied into rows of a multiple of 32 floats (``tma_tiles.aligned_a_pays``,
experiments/aligned_rows.py). Where the tiles do not fill the SMs
and K is long, both builds split K as step 18 does (``slices``): slice z of the grid's third dimension sums its
share of the k-tiles into a workspace and ``add_slices_kernel`` adds the slices in order into C. Compute capability
9.0 only; runs on the simulator (``setmaxnreg`` is a no-op there).
"""

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from ..toolkit.intrinsics import divide_u32, wait_for_previous_grid
from ..toolkit.kernel_tools import SHARED_ALIGN, kernel
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx,
                                    mbarrier_init, mbarrier_wait, tensor_map_acquire)
from ..toolkit.tensor_core_ops import copy_async_at_or_zero, copy_async_commit, copy_async_wait
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_tiles import SplitKTmaTiles, aligned_a_pays, flops_per_copied_byte
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, check_register_handoff, fence_proxy_async, first_aligned,
                                     registers_at_entry, registers_lower_to, registers_raise_to, rounded_operand_bits,
                                     shared_address, swizzled_descriptor, swizzled_offset, warpgroup_commit,
                                     warpgroup_fence, warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                     zero_accumulators)
from . import warpgroup_tf32

TITLE = "Warp specialization: a producer warpgroup and setmaxnreg"
SUMMARY = ("A third warpgroup only issues the copy engine's copies and gives its registers to the two consumer "
           "warpgroups (setmaxnreg), which only multiply.")
ARITHMETIC = "tf32"  # step 15's: A truncated by the tensor core, B's fragments rounded to TF32
#: wgmma, the copy engine's tensor copies and setmaxnreg: compute capability 9.0 only (H100, H200).
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def warp_specialized_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, partials, *,
                           BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS, BARRIERS,
                           A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                           PRODUCER_REGISTERS, CONSUMER_REGISTERS, PARTIAL_TILES, THREAD_COPIES, PRODUCER_THREADS,
                           THREADS, B_ROWS_MOD_4, B_LANE_PITCH, B_QUAD_PITCH):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by TF32 ``wgmma``: CONSUMERS warpgroups compute, one produces.
    PARTIAL_TILES: the build whose grid covers every tile, partial ones too; THREAD_COPIES: the build whose producer
    threads copy the stages themselves (A or B unreadable by the copy engine); B_ROWS_MOD_4: the build that reads B
    through four maps, one a residue of its rows mod 4 (N not a multiple of 4); ``partials``: split-K's workspace (see
    the module's docstring)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    # Block b takes tile b in grouped order: column by column within groups of GROUP_M tile-rows.
    tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
    tile = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = across * BLOCK_N  # …then on to the next column
    if PARTIAL_TILES:  # every k-tile, the last one partial: A's columns and B's rows past K arrive as zeros
        all_k_tiles = (k + uint32(BLOCK_K - 1)) // BLOCK_K
    else:
        all_k_tiles = k // BLOCK_K
    # Split-K: slice z of the launch's gridDim.z takes k-tiles k_first … k_first + k_tiles − 1 (one slice: all).
    slices, z = uint32(cuda.gridDim.z), uint32(cuda.blockIdx.z)
    per_slice = divide_u32(all_k_tiles + slices - 1, slices)
    k_first = z * per_slice
    k_tiles = min(per_slice, all_k_tiles - k_first)  # the launch makes no empty slice (SplitKTmaTiles.slice_count)
    if tid == 0:
        for s in unroll(STAGES):
            if THREAD_COPIES:
                mbarrier_init(barriers, s, PRODUCER_THREADS)  # full: every producer thread, once its copies landed
            else:
                mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            # empty: one arrival a consumer warp; with THREAD_COPIES, whose producer threads' writes racecheck sees,
            # one a consumer thread, each releasing its own reads of B's fragments (docs/sanitizer-report.md)
            mbarrier_init(barriers, STAGES + s, THREADS if THREAD_COPIES else WARPS)
        if not THREAD_COPIES:
            tensor_map_acquire(a_map)
            for r in unroll(4 if B_ROWS_MOD_4 else 1):
                tensor_map_acquire(b_map[r * 16:])
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier
    wait_for_previous_grid()  # launched early after a readable copy (PDL): its A and B are written now

    if warpgroup == CONSUMERS and not THREAD_COPIES:  # the producer: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(k_tiles):
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                k_at = (k_first + t) * BLOCK_K
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, k_at, barriers, stage)
                if B_ROWS_MOD_4:  # B's rows k ≡ r (mod 4) through map r, into block r of the stage: rows k // 4
                    for r in unroll(4):  # (map r starts (r · N) % 4 floats before its row: its boxes land so far on)
                        copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS + r * B_LANE_PITCH, b_map[r * 16:],
                                  k_at // 4, block_col, barriers, stage)
                else:
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, block_col, barriers, stage)
    elif warpgroup == CONSUMERS:  # THREAD_COPIES (A or B unreadable by the copy engine): the producer's threads copy
        registers_lower_to(PRODUCER_REGISTERS)
        p = tid - uint32(CONSUMERS * 128)  # 0 … 127: warp p // 32 copies A's rows p // 32, + 4, …; B's likewise
        a_row = uint32(block_row + p // 32)  # the first of A's rows this thread copies (it steps on by 4)
        b_col = uint32(block_col + p % BLOCK_N)  # the column of B it copies (rows p // BLOCK_N, + 128 // BLOCK_N…)
        for t in range(k_tiles + 1):  # issue k-tile t's copies (96 of 4 bytes a thread), announce k-tile t − 1's
            if t < k_tiles:
                stage = uint32(t % STAGES)
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                k_at = uint32((k_first + t) * BLOCK_K)
                # A: a warp a row, its 32 lanes 32 floats along k (128 bytes), into the copy engine's layout (16-byte
                # chunks swizzled by row % 8); the index and the test step on, a row at a time
                index = uint32(a_row * k + k_at + lane)
                inside_k = k_at + lane < k
                to = stage * A_STAGE_FLOATS + lane % 4
                for i in range(uint32(BLOCK_M // 4)):
                    row = i * uint32(4) + p // 32
                    copy_async_at_or_zero(tiles, to + swizzled_offset(row, lane // 4), a, index,
                                          inside_k and a_row + i * uint32(4) < m)
                    index += uint32(4) * k
                # B: a warp 32 consecutive columns of a row (rows padded to B_STRIDE floats)
                index = uint32((k_at + p // BLOCK_N) * n + b_col)
                to = B_BASE + stage * B_STAGE_FLOATS + p // BLOCK_N * B_STRIDE + p % BLOCK_N
                for i in range(uint32(BLOCK_K * BLOCK_N // 128)):
                    copy_async_at_or_zero(tiles, to, b, index,
                                          b_col < n and k_at + p // BLOCK_N + i * uint32(128 // BLOCK_N) < k)
                    index += uint32(128 // BLOCK_N) * n
                    to += uint32(128 // BLOCK_N * B_STRIDE)
                copy_async_commit()
            if t > 0:  # k-tile t − 1's copies have landed (all groups but the newest; after the last, all)
                if t < k_tiles:
                    copy_async_wait(1)
                else:
                    copy_async_wait(0)
                fence_proxy_async()  # this thread's copies (generic proxy) → visible to wgmma (async proxy)
                mbarrier_arrive(barriers, (t - 1) % STAGES)
    else:  # a consumer warpgroup: takes the registers; only waits for data, multiplies and releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_LANE_PITCH + warpgroup * 64 + warp * 16 + lane // 4  # B's k-row lane % 4 …
        if B_ROWS_MOD_4:  # … whose block begins (r · N) % 4 floats early: a box starts on 16 bytes or not at all
            fragment_at += (lane % 4) * n % 4
        acc = zero_accumulators(ACCUMULATORS)
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        # The ring's arithmetic in 32-bit unsigned integers: over Python ints Numba computes u % STAGES and
        # u // STAGES in signed 64 bits with Python's floor rules, ~20 instructions each every k-tile
        # (experiments/loop_instructions.py measured this loop's three savings one by one).
        stages = uint32(STAGES)
        for pair in range(uint32(0), k_tiles, uint32(2)):  # two k-tiles a pass: the register set known when compiling
            for half in unroll(2):
                u = uint32(pair + half)
                if u < k_tiles:
                    stage = u % stages
                    stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                    mbarrier_wait(barriers, stage, u // stages % uint32(2))  # its bytes have landed
                    for s in unroll(K_STEPS):
                        for q in unroll(4):
                            x = tiles[stage_b + fragment_at + ((s * 2 + q // 2) * B_QUAD_PITCH + q % 2 * 8)]
                            b_frag[half][s][q] = rounded_operand_bits(x)  # rounded to TF32: 2 instructions
                    warpgroup_fence()
                    a_stage = swizzled_descriptor(uint32(base + stage * uint32(A_STAGE_FLOATS * 4)))
                    for s in unroll(K_STEPS):  # k-step s reads 32 bytes further along A's rows: 2 descriptor units
                        acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                         b_frag[half][s][3], a_stage + uint64(s * 2), acc, 1)
                    warpgroup_commit()
                    acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                    if u > 0 and (THREAD_COPIES or lane == 0):  # the producer's threads write the stage next:
                        mbarrier_arrive(barriers, stages + (u - uint32(1)) % stages)  # every lane releases its reads
        acc = warpgroup_wait_all(acc)

        out = c if slices == 1 else partials  # one slice: C; else this slice's part of the sum (add_slices_kernel)
        at = z * m * n  # where the slice's part starts (0 for C)
        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            if not PARTIAL_TILES or (row < m and col < n):  # a partial tile: only what lies inside C
                out[at + row * n + col] = acc[v]


@kernel
def add_slices_kernel(a, b, c, m, n, k, rows, cols, partials):
    """Split-K's second kernel: C = the slices' partial sums added in slice order, over C's first rows × cols
    elements (what the tiles cover). One thread an element; consecutive threads, consecutive columns."""
    wait_for_previous_grid()  # launched early (PDL): the slices of the kernel before are written now
    i = cuda.grid(1)
    if i < rows * cols:
        row, col = i // cols, i % cols
        total = float32(0.0)
        for s in range(len(partials) // (m * n)):
            total += partials[s * m * n + row * n + col]
        c[row * n + col] = total


#: Split-K (:class:`~gemm_steps.toolkit.tma_tiles.SplitKTmaTiles`, step 18's way, here on TF32 tiles): a slice pays
#: its pipeline's fill, and the split its workspace's traffic (slices · M · N floats written, read back and added) and
#: a second launch; a TF32 k-tile is a third of a 3xTF32 one's work, so step 17 needs longer K than step 18 to win.
#: Measured on an H200 (experiments/split_k_tf32.py, both runs): 32 k-tiles lost split in 2, 4 or 5 slices (1024³:
#: 0.89×, 0.95×; 640³'s 20: 0.97×), 64 k-tiles won in 4 slices of 16 (1024×1024×2048: 1.33×), 128 and more won
#: 1.34–5.4×. So only a product of at least this many k-tiles is split (33–63 were not measured) …
MIN_SPLIT_K_TILES = 64
#: … into slices of at least this many k-tiles, as many as fill the SMs once. (Until 2026-11-29 at most 8 slices, step
#: 18's limit then: without it, on an H200 (experiments/split_k_slices.py), 0.51–0.76× the capped time on seven
#: products of 1–4 tiles and K of 8,192–16,384; slices of ≥ 4 k-tiles instead of 16 won only on the THREAD_COPIES
#: build and lost elsewhere, not taken.)
MIN_SLICE_K_TILES = 16


def slices(tiles: int, k_tiles: int, sms: int) -> int:
    """How many slices of K a launch takes: one where the tiles fill the SMs (one block an SM) or K is short; else as
    many as fill them once, each at least MIN_SLICE_K_TILES long — 900×640×14336 is 4 × 5 = 20 tiles of 448 k-tiles
    on 132 SMs: 6 slices, 120 blocks; 128×128×16384 is one tile of 512 k-tiles: 32 slices of 16."""
    if tiles >= sms or k_tiles < MIN_SPLIT_K_TILES:
        return 1
    return max(1, min(sms // max(tiles, 1), k_tiles // MIN_SLICE_K_TILES))


#: Where the copy engine cannot read A or B there are two ways: copy the matrix into rows it can read, then run the
#: partial build at step 17's pace; or the THREAD_COPIES build, which reads A and B as they are but whose producer
#: threads, 4 bytes a ``cp.async``, feed the tensor cores at ~103 TFLOPS (0.28× step 17 at 4096³, forced). The copy
#: costs a read and a write of the copied matrix, the threads' pace costs time per FLOP. Measured on an H200
#: (experiments/thread_copies.py): against the readable copy of 2026-11-28 (~1.0 TB/s: a 64-bit division per float,
#: runs 3–7) the threads won 2.54× and 1.77× at 56 and 49 FLOPs per copied byte (12941×112×7341, 103×1933×12403), so
#: they took every product below 100 FLOPs a copied byte. Against the copy shipped since (four floats a thread,
#: 2.3–3.1 TB/s; run 8) the copy wins at both (the threads 0.94× and 0.84× its speed) and at 36 (1016×77×2605:
#: 0.61×). Both ways are bound by bytes at such shapes — at 12941×112×7341 (A: 380 MB) the copy path's 0.315 ms moves
#: the matrix three times (read, write, read again: ~3.6 TB/s), the threads' 0.335 ms once (~1.1 TB/s) — so fewer
#: FLOPs a byte does not turn the result, as the threshold assumed. No product takes the threads now; the build stays for a GPU where they win (none yet):
THREAD_COPIES_BELOW = 0


#: Where N is not a multiple of 4, the B_ROWS_MOD_4 build reads B (its rows by their residue mod 4) instead of a
#: readable copy of it, in products of at most this many rows. Measured on an H200 (experiments/b_rows_mod_4.py, one
#: run, on 256 × 128 and 128 × 128 tiles): 1.60–2.02× the copy path at M = 64–200 (B of 84–200 MB, where the copy is
#: most of the time; 128 × 128 tiles at 1.18–1.77× cuBLAS TF32 there), 1.03–1.19× at M = 1000, 0.89–1.02× at M =
#: 3001 and 4096 (the copy a small share, and the four lanes that differ in k % 4 read one bank in this layout).
B_BY_ROWS_MAX_M = 1024


def reads_b_by_rows(m: int, n: int, k: int) -> bool:
    """Whether M×N×K, whose B the copy engine cannot read as one map (N not a multiple of 4), reads it by its rows
    mod 4 (the B_ROWS_MOD_4 build) rather than copying it first: M at most ``B_BY_ROWS_MAX_M``."""
    return m <= B_BY_ROWS_MAX_M


def copies_by_threads(m: int, n: int, k: int, copy_a: bool, copy_b: bool) -> bool:
    """Whether M×N×K, whose A (``copy_a``) or B the copy engine cannot read, runs on the THREAD_COPIES build: fewer
    than THREAD_COPIES_BELOW FLOPs per byte of the matrices the other way would copy."""
    return flops_per_copied_byte(m, n, k, copy_a, copy_b) < THREAD_COPIES_BELOW


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
    # Four k-tiles in flight: the producer runs up to STAGES k-tiles ahead of the slowest consumer, as far as the
    # ring's empty barriers let it. Four is the most that fit at these tiles: a stage is (BLOCK_M + B_STRIDE) ·
    # BLOCK_K · 4 = 50,176 bytes (STAGE_BYTES), four take 200,704, five would pass a block's 232,448.
    STAGES: int = 4
    GROUP_M: int = 8  # tile-rows per group in the tile order (1 = row-major)
    PRODUCER_THREADS: int = 128  # one producer warpgroup beside the consumers: it only issues the copies
    # Registers a thread keeps in each role after the hand-off (setmaxnreg: 24–256, multiples of 8). Three warpgroups
    # start with 65,536 / 384 → 168 each: the block's pool is 384 × 168 = 64,512, and 128 × 40 + 256 × 232 = 64,512
    # fills it exactly (setmaxnreg.inc draws from that pool, not from the SM's 65,536: asking for more hangs).
    PRODUCER_REGISTERS: int = 40
    CONSUMER_REGISTERS: int = 232
    # The build for shapes with partial tiles or a partial last k-tile: its grid covers every tile and its k-loop
    # every k-tile, the copy engine filling with zeros whatever of a box lies outside A or B, and its store keeps to
    # C. build() makes it beside the full-tile build (False), which is the one the benchmark's squares run.
    PARTIAL_TILES: bool = False
    # The build for A or B whose rows the copy engine cannot read (K or N not a multiple of 4, or a matrix not 16-byte
    # aligned), a PARTIAL_TILES build too: the producer warpgroup's 128 threads copy each stage themselves, 4 bytes a
    # cp.async, zeros outside, into the layouts the copy engine writes; each announces its share on the full barrier.
    THREAD_COPIES: bool = False
    # The build for B whose rows the copy engine cannot read because N is not a multiple of 4 (a PARTIAL_TILES build
    # too): B's rows k ≡ r (mod 4) lie 16·N bytes apart — a pitch the copy engine can read — so four tensor maps, one
    # a residue r, each starting (r·N) % 4 floats early to sit on 16 bytes, bring a k-tile as four boxes of BLOCK_K / 4
    # rows, block r of the stage holding k-rows r, r + 4, …: no copy of B first. A box must start on 16 bytes of its
    # row (an H200 stopped a copy at an 8-byte column with an illegal-instruction error): map r starts at the 16
    # bytes at or before row r, (r·N) % 4 floats early, its boxes are taken at block_col, and lane reads add that.
    B_ROWS_MOD_4: bool = False
    # How A and B become TF32 (step 23's way, 2026-11-30): the tensor maps' element type is TFLOAT32, so the copy engine
    # rounds A and B to nearest (ties to even) as it loads them, as cuBLAS TF32 reads them. With float32 maps the tensor
    # core truncates A's tile (read from shared memory): 1.6x cuBLAS's error (experiments/tf32_operand_rounding.py).
    # Measured alone on an H200: experiments/tf32_copies.py --steps 17 21. B's fragments are still rounded by their two
    # instructions (a no-op on a value already TF32); the THREAD_COPIES build and step 15's edge kernel load float32.
    TF32_COPIES: bool = True

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
    def B_LANE_PITCH(self) -> int:  # floats from k-row r to k-row r + 1 of a stage of B, r < 4 (lanes differ in k % 4) …
        return self.BLOCK_K // 4 * self.B_STRIDE if self.B_ROWS_MOD_4 else self.B_STRIDE

    @property
    def B_QUAD_PITCH(self) -> int:  # … and from k-row r to k-row r + 4 (B_ROWS_MOD_4: the next row of block r)
        return self.B_STRIDE if self.B_ROWS_MOD_4 else 4 * self.B_STRIDE

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

    def problems(self) -> list[str]:
        warpgroups = self.BLOCK_N // 64
        if (warpgroups * 64 != self.BLOCK_N or self.THREADS != 128 * warpgroups or self.BLOCK_M % 8
                or not 8 <= self.BLOCK_M <= 256 or self.BLOCK_K != 32):
            return ["needs BLOCK_N = 64 per warpgroup of 128 threads, BLOCK_M a multiple of 8 up to 256 and "
                    "BLOCK_K = 32"]
        if self.B_ROWS_MOD_4 and (self.THREAD_COPIES or not self.PARTIAL_TILES):
            return ["B_ROWS_MOD_4 is a PARTIAL_TILES build whose copy engine reads B (not THREAD_COPIES)"]
        if self.THREAD_COPIES and (128 % self.BLOCK_N or self.PRODUCER_THREADS != 128):
            return ["THREAD_COPIES needs 128 producer threads and BLOCK_N dividing 128 (whole rows of B a pass)"]
        threads = self.THREADS + self.PRODUCER_THREADS
        try:
            check_register_handoff(threads, [(self.PRODUCER_THREADS, self.PRODUCER_REGISTERS),
                                             (self.THREADS, self.CONSUMER_REGISTERS)],
                                   registers_at_entry(threads, max(1, self.MIN_BLOCKS_PER_SM)))
        except ValueError as error:
            return [str(error)]
        return []


def _fields(**values) -> dict:
    return {name: value for name, value in values.items() if value is not None}


#: Step 15's tile: 256 rows (wgmma N = 256) × 2 consumer warpgroups, and a producer warpgroup.
SEARCH_SPACE = [Config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one consumer warpgroup on a 32×64 tile, as steps 14–16.
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: Config | TileConfig, group_m: int | None = None, producer_registers: int | None = None,
          consumer_registers: int | None = None, slices=slices, b_rows_when=reads_b_by_rows) -> SplitKTmaTiles:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`): the full-tile
    build, with the PARTIAL_TILES build beside it (``.partial``), both splitting K by ``slices`` where the tiles do
    not fill the SMs, and step 15's kernel for the edges. ``b_rows_when(m, n, k)``: where the B_ROWS_MOD_4 build
    (``.b_rows``) reads a B whose pitch the copy engine cannot read, instead of a copy of it (None: nowhere)."""
    config = Config.of(config, **_fields(GROUP_M=group_m, PRODUCER_REGISTERS=producer_registers,
                                         CONSUMER_REGISTERS=consumer_registers))
    edge = warpgroup_tf32.build(config)
    common = dict(edge=edge, requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY, slices=slices,
                  reduce=add_slices_kernel)
    partial = SplitKTmaTiles("warp_specialized_partial", warp_specialized_kernel, replace(config, PARTIAL_TILES=True),
                             **common)
    thread_copies = SplitKTmaTiles("warp_specialized_thread_copies", warp_specialized_kernel,
                                   replace(config, PARTIAL_TILES=True, THREAD_COPIES=True), **common)
    b_rows = SplitKTmaTiles("warp_specialized_b_rows", warp_specialized_kernel,
                            replace(config, PARTIAL_TILES=True, B_ROWS_MOD_4=True), **common)
    return SplitKTmaTiles("warp_specialized", warp_specialized_kernel, replace(config, PARTIAL_TILES=False),
                          partial=partial, thread_copies=thread_copies, thread_copies_when=copies_by_threads,
                          aligned_a_when=aligned_a_pays, b_rows=b_rows, b_rows_when=b_rows_when, **common)


TUNING = Tuning(build, "warp_specialized", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # built on first use

#: What the fast kernel's PTX must show (tests/test_ptx.py): per pass of the consumers' loop (two k-tiles) one wgmma
#: per k-step and a wait for all groups but the newest per k-tile (and one for all after the loop), a TF32 rounding
#: per fragment element in two instructions (``setp.num`` and the add: no ``cvt.rna``); the producer's tensor copies
#: (two per expect-tx; NVVM unrolls its loop, 5 times with NVVM 13.5); one setmaxnreg each way; the one block-wide
#: barrier before the roles part; the two tensor maps acquired at system scope (the host wrote them); no cp.async, no
#: FP32 FMAs, no local memory, no wgmma operand written after its fence.
_GPU = default_config(SEARCH_SPACE)
PTX_EXPECT = {"warp_specialized_fast": {
    "cp.async.bulk.tensor": ">=2", "mbarrier.arrive.expect_tx": ">=1", "wgmma.mma_async.tf32": 2 * _GPU.BLOCK_K // 8,
    "wgmma.wait_group": 2 + 1, "cvt.rna.tf32.f32": 0, "setp.num.f32": 2 * 4 * _GPU.BLOCK_K // 8, "setmaxnreg": 2,
    "bar.sync": 1,
    "fence.proxy.tensormap.acquire.sys": 2, "fence.proxy.tensormap.acquire.gpu": 0,
    "cp.async.cg.shared.global": 0, "fma.rn.f32": 0, "local": 0, "wgmma.written_after_fence": 0},
    # … and its THREAD_COPIES build: the same loop; 4-byte cp.async instead of tensor copies, a group a k-tile and
    # two waits (all but the newest group in the loop, all after it), no tensor map
    "warp_specialized_thread_copies_fast": {
        "cp.async.bulk.tensor": 0, "mbarrier.arrive.expect_tx": 0, "cp.async.ca.shared.global": ">=2",
        "cp.async.commit_group": ">=1", "cp.async.wait_group": 2, "wgmma.mma_async.tf32": 2 * _GPU.BLOCK_K // 8,
        "wgmma.wait_group": 2 + 1, "setmaxnreg": 2, "bar.sync": 1, "fence.proxy.tensormap.acquire.sys": 0,
        "local": 0, "wgmma.written_after_fence": 0}}
#: … and ptxas, building it as numba-cuda does on a GPU (nvJitLink with LTO, sm_90a), honours the hand-off: 168
#: registers at entry (the cap for 384 threads), no spills, no wgmma serialised, no C7504.
PTXAS_EXPECT = {"warp_specialized_fast": {"spill_bytes": 0, "registers": "<=168", "wgmma_serialized": 0},
                "warp_specialized_thread_copies_fast": {"spill_bytes": 0, "registers": "<=168",
                                                        "wgmma_serialized": 0}}
