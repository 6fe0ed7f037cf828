"""Step 18 — 3xTF32 on the warp-specialized design: the producer warpgroup also splits A.

Changed from step 17 (same ring of copies, same roles, same ``setmaxnreg`` hand-off, same tiles order): the
arithmetic is step 14's 3xTF32 — float32 accuracy from three TF32 products per k-step — and the producer warpgroup,
idle in step 17 but for one thread, now does the part of it that needs shared memory.

* **Who splits A.** ``wgmma`` reads A's tile from shared memory, so A's big and small TF32 parts must be *in* shared
  memory: in step 14 every thread split the stage and the whole block met at ``bar.sync`` before the tensor core
  could read it. Here the producer warpgroup does it, between the copy engine and the consumers, in one loop: in
  pass t its 128 threads split k-tile t − SPLIT_BEHIND — wait for the stage's bytes (its *full* barrier), write A's
  big parts over the stage and its small parts (×2^11) beside it in 16-byte vectors, ``fence.proxy.async`` (the
  tensor core reads through the async proxy), arrive on the stage's **ready** barrier — and then its first thread
  copies k-tile t once its stage is empty, as in step 17. The consumers wait for *ready*, not *full*: a ring stage
  has three barriers, full → ready → empty. Splitting 2 k-tiles behind the copies beat splitting 3 behind, and
  beat giving the copies a warp of their own with three split warps (experiments/specialized_3xtf32_bench.py times
  each build; lesson 18 shows the numbers).
* **Fewer registers for the same accuracy.** Step 14 kept three accumulator sets (the running sum, a fresh sum per
  k-tile of big·big products, a long-lived sum of the small products: 192 registers; it spilled). Here all three
  products of a k-tile go to one fresh accumulator — the two small products first, so the tensor core's truncating
  adds happen while the sum is still small — at one common scale: the small parts carry 2^11 (``split_tf32_scaled``
  keeps them in TF32's normal range) and so does B's big part (``BIG_SCALE``; multiplying by a power of two is
  exact; the big·small products use B's big part as it is, so a consumer keeps it both ways). After each k-tile the
  fresh sum joins ``total`` with rounded float32 adds, as in step 14; ``total`` is 2^11·C and the store multiplies
  by 2^-11 (``UNSCALE``). Two sets of 64 accumulators and 48 fragment registers fit the 232 a consumer gets. A sum
  whose scaled value overflows (|C| ≳ 2^117) leaves an inf, like an inf or NaN in A or B; the block then recomputes
  its tile as cuBLAS SGEMM does (step 14's specials rule; docs/fp32_contract.md). **A cliff inside the contract:**
  the same happens where B holds an element of 2^117 or more (2^11 · its big part overflows) even if every sum is
  far from float32's range. The answer is still SGEMM's sequential sum (right, tested on a GPU in
  tests/test_fp32_contract.py), but that tile then runs one float32 FMA per k per thread: orders of magnitude
  slower.
* **Split-K where tiles are few.** 768×768×16384 has 36 tiles of 128×128 for 132 SMs: one block a tile leaves
  most SMs idle for the whole long k-loop. There the launch gets a third grid dimension: slice z of K (``slices``:
  as many slices as fill the SMs once, each at least MIN_SLICE_K_TILES k-tiles, where K has MIN_SPLIT_K_TILES or more
  and the k-tiles saved outweigh the reduction's launch and traffic, ``split_pays``) writes its part of every tile's
  sum to a workspace (``partials``), and ``add_slices_kernel`` adds the slices in order into C — recomputing, as
  SGEMM does, any sum that comes out inf or NaN. Where the tiles fill the SMs nothing changes: one slice, C written
  directly.
* **Tile**: 128×128 (step 17: 256×128). Each k-tile is three times the tensor-core work of a TF32 one, so half the
  tile still keeps the copies ahead; a 256-row tile would need 2 × 128 accumulators a consumer.

Why faster than step 14: no thread of the block both copies and multiplies, no block-wide barrier in the k-loop, no
spills, and the copy engine brings A and B. Expect: lesson 18 states the prediction from step 17's speed and the tensor
core's three products a k-step before the run. Measured (results/bench-nvidia-h200-2026-11-30.json): 115.9 TFLOPS at
4096³ and 110.4 at 8192³, 2.26× and 2.16× cuBLAS SGEMM, at a sampled error of 2.4e-07 and 3.2e-07 against SGEMM's
1.2e-06 and 1.7e-06.

Shapes: the fast kernel runs whole products of full tiles (M and N multiples of 128, K of 32, 16-byte-aligned
matrices). A shape with partial tiles or a partial last k-tile runs on the same kernel built with PARTIAL_TILES, as
step 17's does: one launch over every tile (and its slices of K), the copy engine zero-filling what of a box lies
outside A or B, the stores keeping to C. Where the copy engine cannot read B as it is because N is not a multiple of
4, products of few rows run on the B_ROWS_MOD_4 build, step 17's: B read through four maps, one a residue of its rows
mod 4 (``reads_b_by_rows``); otherwise, and where A is unreadable (K not a multiple of 4, a matrix not 16-byte
aligned), that matrix is first copied into rows the copy engine can read. (Until 2026-11-30 this step had step 17's
THREAD_COPIES build, the producer's threads copying A and B with ``cp.async``; no product had taken it since the
copy got faster, experiments/thread_copies.py, and it made way for B_ROWS_MOD_4 within the kernel's 160 lines.)
Compute capability 9.0 only; runs on the simulator.
"""

import math

from dataclasses import dataclass, replace

from numba import cuda, float32, uint32, uint64

from ..toolkit.intrinsics import divide_u32, load_float4, store_float4, wait_for_previous_grid
from ..toolkit.kernel_tools import SHARED_ALIGN, ceil_div, kernel
from ..toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
                                    mbarrier_wait, tensor_map_acquire)
from ..toolkit.tensor_core_ops import split_tf32_scaled
from ..toolkit.tile_config import StepConfig, TileConfig
from ..toolkit.tma_tiles import SplitKTmaTiles
from ..toolkit.tuned import Tuning, default_config
from ..toolkit.unroll import registers, unroll
from ..toolkit.warpgroup_ops import (SWIZZLE_ALIGN, add_accumulators, fence_proxy_async, first_aligned,
                                     operand_bits, registers_lower_to, registers_raise_to, shared_address,
                                     swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                     warpgroup_wait_all, wgmma_tf32, zero_accumulators)
from ..toolkit.warpgroup_ops import check_register_handoff, registers_at_entry
from . import warpgroup_mma

TITLE = "3xTF32 on the warp-specialized design: the producer splits A"
SUMMARY = ("Step 17's producer and consumers with step 14's float32-accurate arithmetic: the producer warpgroup "
           "splits A's tile in shared memory, the consumers run three TF32 products per k-step into one fresh sum.")
ARITHMETIC = "3xtf32"  # float32 accuracy: verify uses the float32 tolerance
#: wgmma, the copy engine's tensor copies and setmaxnreg: compute capability 9.0 only (H100, H200).
REQUIRES_COMPUTE_CAPABILITY = (9, 0)
#: B's big part is scaled like the small parts (2^11, exact), so all three products share one accumulator …
BIG_SCALE = float32(2.0 ** 11)
#: … and the store takes the scale off, once.
UNSCALE = float32(2.0 ** -11)


def warp_specialized_3xtf32_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, partials, *,
                                   BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                   BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, SMALL_BASE, STAGE_BYTES,
                                   GROUP_M, CONSUMERS, PRODUCER_THREADS, SPLIT_BEHIND, SPLIT_VECTORS, PRODUCER_REGISTERS,
                                   CONSUMER_REGISTERS, PARTIAL_TILES, B_ROWS_MOD_4, B_LANE_PITCH, B_QUAD_PITCH, THREADS):
    """One BLOCK_M×BLOCK_N tile of C = A·B as Cᵀ by 3xTF32 ``wgmma``: CONSUMERS warpgroups compute, one produces.
    PARTIAL_TILES: the build whose grid covers every tile, partial ones too; B_ROWS_MOD_4: the build that reads B by
    its rows mod 4 (see the module's docstring)."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, ready[s] at STAGES + s, empty[s] at 2·STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    # Block b takes tile b in grouped order: column by column within groups of GROUP_M tile-rows (step 16).
    tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
    tile = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))
    in_group = tile - first_row * tile_cols
    across = divide_u32(in_group, rows_in_group)
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M
    block_col = across * BLOCK_N
    if PARTIAL_TILES:  # every k-tile, the last one partial: A's columns and B's rows past K arrive as zeros
        all_k_tiles = (k + uint32(BLOCK_K - 1)) // BLOCK_K
    else:
        all_k_tiles = k // BLOCK_K
    # Split-K: slice z of the launch's gridDim.z takes k-tiles k_first … k_first + k_tiles − 1 (one slice: all).
    slices, z = uint32(cuda.gridDim.z), uint32(cuda.blockIdx.z)
    per_slice = divide_u32(all_k_tiles + slices - 1, slices)
    k_first = z * per_slice
    k_tiles = min(per_slice, all_k_tiles - k_first)  # the launch makes no empty slice
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: the producer's one arrival, and the stage's bytes
            mbarrier_init(barriers, STAGES + s, PRODUCER_THREADS)  # ready: every producer thread split its share
            mbarrier_init(barriers, 2 * STAGES + s, WARPS)  # empty: one arrival per consumer warp
        tensor_map_acquire(a_map)
        for r in unroll(4 if B_ROWS_MOD_4 else 1):  # B_ROWS_MOD_4: four maps of B, 16 words apart
            tensor_map_acquire(b_map[r * 16:])
    fence_proxy_async()  # the initialised barriers → visible to the copy engine
    cuda.syncthreads()  # … and to every thread: the last block-wide barrier before the end
    wait_for_previous_grid()  # launched early after a readable copy (PDL): its A and B are written now
    special = 0  # did this thread store an inf or NaN?

    if warpgroup == CONSUMERS:  # the producer warpgroup: one thread copies, all 128 split A
        registers_lower_to(PRODUCER_REGISTERS)
        p = tid - CONSUMERS * 128
        for t in range(k_tiles + SPLIT_BEHIND):
            u = t - SPLIT_BEHIND  # split k-tile u, SPLIT_BEHIND behind the copies …
            if u >= 0:
                stage = u % STAGES
                mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # its bytes have landed
                for e in unroll(SPLIT_VECTORS):  # 16-byte vectors, a warp's 512 consecutive bytes at a time
                    at = stage * A_STAGE_FLOATS + (e * PRODUCER_THREADS + p) * 4
                    x = load_float4(tiles, at)
                    big, small = registers(4), registers(4)
                    for q in unroll(4):
                        big[q], small[q] = split_tf32_scaled(x[q])  # big rounded to TF32, small·2^11
                    store_float4(tiles, at, big[0], big[1], big[2], big[3])  # over the stage (the swizzle moves
                    store_float4(tiles, SMALL_BASE + at, small[0], small[1], small[2], small[3])  # 16-byte chunks)
                fence_proxy_async()  # these writes → visible to the tensor core's reads
                mbarrier_arrive(barriers, STAGES + stage)
            if p == 0 and t < k_tiles:  # … then copy k-tile t once its stage is empty
                stage = t % STAGES
                if t >= STAGES:  # the stage's (t // STAGES)-th fill: wait until every consumer warp released it
                    mbarrier_wait(barriers, 2 * STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)
                k_at = (k_first + t) * BLOCK_K
                copy_tile(tiles, stage * A_STAGE_FLOATS, a_map, block_row, k_at, barriers, stage)
                if B_ROWS_MOD_4:  # B's rows k ≡ r (mod 4) through map r, into block r of the stage: rows k // 4
                    for r in unroll(4):  # (map r starts (r · N) % 4 floats before its row: its boxes land so far on)
                        copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS + r * B_LANE_PITCH, b_map[r * 16:],
                                  k_at // 4, block_col, barriers, stage)
                else:
                    copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, block_col, barriers, stage)
    else:  # a consumer warpgroup: waits for split stages, multiplies, releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_LANE_PITCH + warpgroup * 64 + warp * 16 + lane // 4  # B's k-row lane % 4 …
        if B_ROWS_MOD_4:  # … whose block begins (r · N) % 4 floats early: a box starts on 16 bytes or not at all
            fragment_at += (lane % 4) * n % 4
        total = zero_accumulators(ACCUMULATORS)  # 2^11 × the running sum of C: rounded float32 adds only
        fresh = zero_accumulators(ACCUMULATORS)  # 2^11 × one k-tile's products (the tensor core's sum)
        b_big, b_small, b_big_scaled = registers(K_STEPS, 4), registers(K_STEPS, 4), registers(K_STEPS, 4)
        for u in range(k_tiles):
            stage = u % STAGES
            stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
            mbarrier_wait(barriers, STAGES + stage, uint32(u // STAGES % 2))  # A split, B landed
            for s in unroll(K_STEPS):  # Bᵀ's fragments of the k-tile: big, small·2^11, and big·2^11 for big·big
                for q in unroll(4):
                    x = tiles[stage_b + fragment_at + ((s * 2 + q // 2) * B_QUAD_PITCH + q % 2 * 8)]
                    x_big, x_small = split_tf32_scaled(x)
                    b_big[s][q] = operand_bits(x_big)
                    b_small[s][q] = operand_bits(x_small)
                    b_big_scaled[s][q] = operand_bits(x_big * BIG_SCALE)
            warpgroup_fence()
            for s in unroll(K_STEPS):  # the small products first: the sum is still small when they are added
                a_big = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                a_small = swizzled_descriptor(base + ((SMALL_BASE + stage * A_STAGE_FLOATS) * 4 + s * 32))
                fresh = wgmma_tf32(tiles, b_small[s][0], b_small[s][1], b_small[s][2], b_small[s][3], a_big,
                                   fresh, 0 if s == 0 else 1)
                fresh = wgmma_tf32(tiles, b_big[s][0], b_big[s][1], b_big[s][2], b_big[s][3], a_small, fresh, 1)
            for s in unroll(K_STEPS):  # then big·big
                a_big = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                fresh = wgmma_tf32(tiles, b_big_scaled[s][0], b_big_scaled[s][1], b_big_scaled[s][2],
                                   b_big_scaled[s][3], a_big, fresh, 1)
            warpgroup_commit()
            fresh = warpgroup_wait_all(fresh)  # the k-tile's products are in: its fragments and stage are free
            total = add_accumulators(total, fresh)
            if lane == 0:
                mbarrier_arrive(barriers, 2 * STAGES + stage)  # the stage is empty (an arrival a warp)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            if not PARTIAL_TILES or (row < m and col < n):  # a partial tile keeps to C (outside it 0·inf is NaN)
                value = total[v] * UNSCALE
                if slices == 1:
                    c[row * n + col] = value
                else:  # this slice's part of the sum, for add_slices_kernel
                    partials[z * m * n + row * n + col] = value
                if not math.isfinite(value):
                    special = 1

    # Specials (step 14's rule): an inf or NaN in A or B, or a sum past float32's range (here: past 2^-11 of it),
    # leaves an inf or NaN in the tile; then the consumers compute the tile again as cuBLAS SGEMM does, one float32
    # FMA per k in order, which gives exactly SGEMM's inf/NaN pattern (docs/fp32_contract.md).
    if cuda.syncthreads_or(special) and warpgroup < CONSUMERS:
        for slot in range(ACCUMULATORS):  # this thread's results, numbered as the store above
            row = block_row + lane % 4 * 2 + (slot // 4 * 8 + slot % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (slot % 4 // 2 * 8)
            if PARTIAL_TILES and (row >= m or col >= n):
                continue
            value = float32(0.0)
            for kk in range(k_first * BLOCK_K, min((k_first + k_tiles) * BLOCK_K, k)):  # this slice's k
                value = cuda.fma(a[row * k + kk], b[kk * n + col], value)
            if slices == 1:
                c[row * n + col] = value
            else:
                partials[z * m * n + row * n + col] = value


@kernel
def add_slices_kernel(a, b, c, m, n, k, rows, cols, partials):
    """Split-K's second kernel: C = the slices' partial sums added in slice order, over C's first rows × cols
    elements (the full tiles); a sum that is inf or NaN is computed again as cuBLAS SGEMM does, one float32 FMA per k
    in order over all of K (the specials rule, for the whole sum)."""
    wait_for_previous_grid()  # launched early (PDL): the slices of the kernel before are written now
    i = cuda.grid(1)
    if i < rows * cols:
        row, col = i // cols, i % cols
        total = float32(0.0)
        for s in range(len(partials) // (m * n)):
            total += partials[s * m * n + row * n + col]
        if not math.isfinite(total):
            total = float32(0.0)
            for kk in range(k):
                total = cuda.fma(a[row * k + kk], b[kk * n + col], total)
        c[row * n + col] = total


#: Split-K (:class:`~gemm_steps.toolkit.tma_tiles.SplitKTmaTiles`): only a product of at least this many k-tiles is
#: split (below it the reduction's launch and traffic cost more than the k-tiles a slice saves) …
MIN_SPLIT_K_TILES = 8
#: … into slices of at least this many k-tiles, as many as fill the SMs once. (Until 2026-11-29 at most 8 slices: a
#: product of one or two tiles ran on 8–16 of 132 SMs. Without the cap, on an H200 (experiments/split_k_slices.py):
#: 0.35–0.55× the capped time on seven products of 1–6 tiles and K of 8,192–16,384, 0.86–1.71× cuBLAS SGEMM there.)
MIN_SLICE_K_TILES = 2
#: What a split saves and costs, in µs, for :func:`slices`' model (H200): a k-tile of one block on its SM (step 18's
#: time grew 36.2 µs per 1,024 of K at one wave of tiles: experiment-small-product-floor-nvidia-h200.json) …
K_TILE_US = 1.1
#: … the reduction's launch, and one slice of one 128 × 128 tile written to the workspace and read back (2 × 64 KB at
#: ~2.5 TB/s).
SPLIT_LAUNCH_US, TILE_SLICE_US = 2.0, 0.052


def split_pays(tiles: int, k_tiles: int, slices_: int) -> bool:
    """Whether K split into ``slices_`` saves more time than it costs: the k-tiles a block no longer walks against
    the reduction's launch and the slices' partial sums written and read. On an H200, before the launches were
    programmatic (experiment-small-products-nvidia-h200.json), the split took 1.13–1.14× one slice's time at
    2400×250×283/284 (38 tiles of 9 k-tiles in 3 slices: saves 6.6 µs, costs 7.9), 0.89–0.92× at 700×500×400/401
    (24 tiles of 13 k-tiles in 5: saves 11, costs 8.2), 0.97× at 3300×150×456/457 (52 tiles of 15 in 2: 7.7 against
    7.4) and 0.41–0.44× at 1600×64×1371/1372 (13 tiles of 43 in 10)."""
    saved = (k_tiles - ceil_div(k_tiles, slices_)) * K_TILE_US
    return saved > SPLIT_LAUNCH_US + slices_ * tiles * TILE_SLICE_US


def split_asked(tiles: int, k_tiles: int, sms: int) -> int:
    """The slices a split would take: one where the full tiles fill the SMs (one block an SM) or K is short; else as
    many as fill them once, each at least MIN_SLICE_K_TILES long — 768×768×16384 is 36 tiles on 132 SMs: 3 slices,
    108 blocks; 512³ is 16 tiles of 16 k-tiles: 8 slices of 2; 128×128×16384 is one tile of 512 k-tiles: 132 asked,
    128 slices of 4 launched. Measured on small products (experiments/small_split_k.py): slices of 2 k-tiles beat
    the first policy's 8 at 256³–640³ and tie above. (Step 22 hands step 18 the products where this is more than
    one: ``warp_specialized_3xtf32_stream_k.runs_step_18``.)"""
    if tiles >= sms or k_tiles < MIN_SPLIT_K_TILES:
        return 1
    return max(1, min(sms // max(tiles, 1), k_tiles // MIN_SLICE_K_TILES))


def slices(tiles: int, k_tiles: int, sms: int) -> int:
    """How many slices of K a launch takes: :func:`split_asked`'s, where that split pays (:func:`split_pays`), else
    one — 2400×256×288 (38 tiles of 9 k-tiles: 3 asked) one. On an H200 (experiments/split_pays.py, eight small
    products of 35–64 tiles and 9–13 k-tiles that the model no longer splits, none held out): 0.86–0.96× the time of
    the policy before, which split them in 2–3 (experiment-split-pays-nvidia-h200.json)."""
    asked = split_asked(tiles, k_tiles, sms)
    return asked if asked > 1 and split_pays(tiles, k_tiles, asked) else 1


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
    STAGES: int = 4  # four k-tiles in flight (step 17's)
    GROUP_M: int = 8  # tile-rows per group in the tile order (1 = row-major)
    PRODUCER_THREADS: int = 128  # one producer warpgroup beside the consumers: it only issues the copies
    # Registers a thread keeps in each role after the hand-off (setmaxnreg: 24–256, multiples of 8). Three warpgroups
    # start with 65,536 / 384 → 168 each: the block's pool is 384 × 168 = 64,512, and 128 × 40 + 256 × 232 = 64,512
    # fills it exactly (setmaxnreg.inc draws from that pool, not from the SM's 65,536: asking for more hangs).
    PRODUCER_REGISTERS: int = 40
    CONSUMER_REGISTERS: int = 232
    # The build for shapes with partial tiles or a partial last k-tile (step 17's): its grid covers every tile and
    # its k-loop every k-tile, the copy engine filling with zeros whatever of a box lies outside A or B, and its
    # stores keep to C. build() makes it beside the full-tile build (False), which the benchmark's squares run.
    PARTIAL_TILES: bool = False
    # The build for B whose rows the copy engine cannot read because N is not a multiple of 4 (a PARTIAL_TILES build
    # too), step 17's: B's rows k ≡ r (mod 4) lie 16·N bytes apart — a pitch the copy engine can read — so four tensor
    # maps, one a residue r, each starting (r·N) % 4 floats early to sit on 16 bytes (a box must start on 16 bytes of
    # its row), bring a k-tile as four boxes of BLOCK_K / 4 rows, block r of the stage holding k-rows r, r + 4, …;
    # the consumers' fragment reads step by the two pitches below and add (r·N) % 4. No copy of B first.
    B_ROWS_MOD_4: bool = False

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
        return 3 * self.STAGES  # full[s], ready[s] (A's small parts split) and empty[s]

    @property
    def EXTRA_SHARED_FLOATS(self) -> int:  # a buffer of A's small parts per stage + first_aligned's slack
        return self.STAGES * self.A_STAGE_FLOATS + SWIZZLE_ALIGN // 4

    @property
    def SMALL_BASE(self) -> int:  # where the small parts' buffers start: after the stages, 1,024-byte aligned
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS)

    @property
    def SPLIT_BEHIND(self) -> int:  # k-tiles the producer's split of A runs behind its copies
        return self.STAGES - 2

    @property
    def SPLIT_VECTORS(self) -> int:  # 16-byte vectors a producer thread splits per k-tile
        return self.A_STAGE_FLOATS // 4 // self.PRODUCER_THREADS

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
        if self.B_ROWS_MOD_4 and not self.PARTIAL_TILES:
            return ["B_ROWS_MOD_4 is a PARTIAL_TILES build (its maps' boxes reach past B's last columns and rows)"]
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
        # Every buffer of A's small parts starts 1,024-byte aligned (the swizzle's period), like A's stages.
        if (self.SMALL_BASE * 4) % SWIZZLE_ALIGN or (self.A_STAGE_FLOATS * 4) % SWIZZLE_ALIGN:
            return ["A's small parts must start 1,024-byte aligned for the 128-byte swizzle"]
        if self.A_STAGE_FLOATS % (4 * self.PRODUCER_THREADS):
            return ["the producer's threads split A's stage in 16-byte vectors, evenly: BLOCK_M·BLOCK_K must be a "
                    "multiple of 512"]
        return []


#: Step 14's tile (128×128, two consumer warpgroups of 64 columns): three products a k-step make each k-tile three
#: times a TF32 one's work, so the copies of a 128-row tile keep up; 256 rows would need 256 accumulators a thread.
SEARCH_SPACE = [Config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=1)]
#: On the simulator: one consumer warpgroup on a 32×64 tile, as steps 14–17.
SIMULATOR_CONFIG = Config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


#: Where N is not a multiple of 4, the B_ROWS_MOD_4 build reads B (its rows by their residue mod 4) instead of a
#: readable copy of it, in products of at most this many rows. Measured on an H200 (experiments/b_rows_mod_4.py
#: --step 18, one run, on 128 × 128 and 64 × 128 tiles): 1.12–1.61× the copy path at M = 64–200 (B of 5.7–200 MB),
#: 0.99× and 0.95× at M = 1000, 0.89–0.96× at 3001 and 4096 — the largest M measured where both tiles gained is 200
#: (the rule written before the run; nothing was measured between 200 and 1000).
B_BY_ROWS_MAX_M = 200


def reads_b_by_rows(m: int, n: int, k: int) -> bool:
    """Whether M×N×K, whose B the copy engine cannot read as one map (N not a multiple of 4), reads it by its rows
    mod 4 (the B_ROWS_MOD_4 build) rather than copying it first: M at most ``B_BY_ROWS_MAX_M``."""
    return m <= B_BY_ROWS_MAX_M


def build(config: Config | TileConfig, slices=slices, b_rows_when=reads_b_by_rows) -> SplitKTmaTiles:
    """The step built for a configuration (or for another configuration's tiles: :meth:`Config.of`): the full-tile
    build, with the PARTIAL_TILES and B_ROWS_MOD_4 builds beside it (``.partial``, ``.b_rows``) and step 14's kernel
    for the edges. ``b_rows_when(m, n, k)``: where the B_ROWS_MOD_4 build reads a B whose pitch the copy engine cannot
    read, instead of a copy of it (None: nowhere)."""
    config = Config.of(config)
    common = dict(edge=warpgroup_mma.build(config), requires_compute_capability=REQUIRES_COMPUTE_CAPABILITY,
                  slices=slices, reduce=add_slices_kernel)
    partial = SplitKTmaTiles("warp_specialized_3xtf32_partial", warp_specialized_3xtf32_kernel,
                             replace(config, PARTIAL_TILES=True), **common)
    b_rows = SplitKTmaTiles("warp_specialized_3xtf32_b_rows", warp_specialized_3xtf32_kernel,
                            replace(config, PARTIAL_TILES=True, B_ROWS_MOD_4=True), **common)
    return SplitKTmaTiles("warp_specialized_3xtf32", warp_specialized_3xtf32_kernel,
                          replace(config, PARTIAL_TILES=False), partial=partial, b_rows=b_rows,
                          b_rows_when=b_rows_when, **common)


TUNING = Tuning(build, "warp_specialized_3xtf32", SEARCH_SPACE, simulator=SIMULATOR_CONFIG)  # on first use

#: What the fast kernel's PTX must show (tests/test_ptx.py): per k-tile three wgmma per k-step, one commit and one
#: wait for all, a split (sub.f32 + mul.f32) per fragment element and per A element the
#: producer splits; the producer's tensor copies; one setmaxnreg each way; the block-wide barrier before the roles
#: part and the specials' vote (bar.red) at the end; no cp.async, no local memory, no wgmma operand written after
#: its fence.
_GPU = default_config(SEARCH_SPACE)
#: The partial-tile build (PARTIAL_TILES) has the same main loop: the same counts.
_PTX = {"cp.async.bulk.tensor": ">=2", "mbarrier.arrive.expect_tx": ">=1", "wgmma.mma_async.tf32": 3 * _GPU.BLOCK_K // 8,
        "wgmma.wait_group": 1, "setmaxnreg": 2, "bar.sync": 1, "cp.async.cg.shared.global": 0, "local": 0,
        "wgmma.written_after_fence": 0}
PTX_EXPECT = {"warp_specialized_3xtf32_fast": _PTX, "warp_specialized_3xtf32_partial_fast": _PTX,
              # the B_ROWS_MOD_4 build: the same main loop; five tensor copies a k-tile (A's, and B's four blocks)
              "warp_specialized_3xtf32_b_rows_fast": {**_PTX, "cp.async.bulk.tensor": ">=5"}}
#: … and ptxas, building it as numba-cuda does on a GPU (nvJitLink with LTO, sm_90a): no spills, no wgmma serialised.
_PTXAS = {"spill_bytes": 0, "registers": "<=168", "wgmma_serialized": 0}
PTXAS_EXPECT = {"warp_specialized_3xtf32_fast": _PTXAS, "warp_specialized_3xtf32_partial_fast": _PTXAS,
                "warp_specialized_3xtf32_b_rows_fast": _PTXAS}
