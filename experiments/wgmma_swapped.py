"""A TF32 ``wgmma`` GEMM with no transposition: compute Cᵀ = Bᵀ·Aᵀ, Bᵀ from registers (issue: tensor cores,
stretch item; follows experiments/wgmma_gemm.py). Its 3xTF32 build (FLUSH "big") became step 14,
``gemm_steps/steps/warpgroup_mma.py``, written again in the course's style with edge tiles and a simulator twin.

TF32 ``wgmma`` reads its shared-memory operands only K-major (8-row × 16-byte "core matrices", k contiguous).
A (M×K, row-major) already is; B (K×N, row-major) is not, and wgmma_gemm.py transposed it on the way in with one
4-byte ``cp.async`` per element — about 26 instructions per element copied, ~1,000 instructions per warp and k-tile,
and its Nsight Compute profile shows the SM issuing an instruction only every 2.1 cycles per scheduler: the kernel
is bound by instruction issue, not by the tensor cores.

``wgmma``'s first operand may also come from **registers**, where the layout is ours to choose. So this kernel
swaps the operands: it computes the transposed tile, Cᵀ (BLOCK_N × BLOCK_M) = Bᵀ · Aᵀ, with

* ``wgmma``'s A = Bᵀ, from registers: B's k-tile lands in shared memory as it is (rows of k, 16-byte ``cp.async``,
  each row padded by 8 floats so that a warp's fragment reads hit 32 different banks), and every thread reads its
  four elements per k-step with ordinary loads, exactly the ``mma.m16n8k8`` A fragment (warp w of a warpgroup holds
  rows 16w…16w+15 of the 64); rounded to TF32 on the way (``cvt.rna``);
* ``wgmma``'s B = Aᵀ, from shared memory: Aᵀ's columns are A's rows, k-contiguous — K-major as they are, staged in
  core-matrix order by 16-byte ``cp.async`` as in wgmma_gemm.py (the tensor core truncates these to TF32);
* each warpgroup owns 64 columns of C and all BLOCK_M rows: ``wgmma.m64n<BLOCK_M>k8``, BLOCK_M // 2 accumulators
  per thread, stored transposed at the end;
* the pipeline of wgmma_gemm.py's pipelined build: STAGES stages, copies LOAD_AHEAD = STAGES − 2 k-tiles ahead,
  each k-tile's four ``wgmma`` left in flight across the next k-tile's barrier (``wait_group 1``).

Prediction, written before the first run: per warp and k-tile ~12 copies and 16 fragment loads instead of ~40
copies at ~26 instructions each — about 5× fewer instructions, so if issue is the limit (2.1 cycles per issue
measured) the kernel should run near the tensor pipe's rate instead: ≥ 180 TFLOPS at 4096³–8192³ (wgmma_gemm.py's
pipelined build: 96 / 114), and the diagnostic "B given transposed + pipelined" build of wgmma_gemm.py (cheap
copies, no swap) should land near it.

Measured (H100, cuBLAS SGEMM and TF32 and steps 12–13 in the same run; experiments/results/experiment-wgmma-swapped-*.json,
ncu-wgmma-swapped-*.txt, experiment-wgmma-3xtf32-accuracy-nvidia-h100.json):

* **The prediction missed.** The loop is ~250 instructions per k-tile (SASS, ptxas locally), but the TF32 builds
  run 102–110 / 120–123 TFLOPS at 4096³ / 8192³ (256×128, serial), below step 12's 142–145 / 150; and "B given
  transposed + pipelined" ran *slower* than the 4-byte transposing copies (76 / 87 against 101 / 116). Instruction
  issue was not the limit. Nsight Compute on the 256×128 serial build at 8192³: L2 busy 92 % (DRAM 28 %, L2 hit
  rate 73 %), 1.19 G L2 requests carrying 1.40 G sectors — about one 32-byte sector per request, where a warp's
  16-byte ``cp.async`` should make 128-byte ones; step 12, with the same 42.7 FLOP per byte of tile, ran at 39 %
  L2. Copying A by whole rows (``A_ROWS``) changed nothing (−2 to 0 %). Taking the tiles in step 10's grouped order
  (``GROUP_M`` = 8; ``experiment-wgmma-swapped-grouped-nvidia-h100.json``, ``ncu-wgmma-swapped-grouped-nvidia-h100.txt``) halved
  the DRAM traffic (28 → 12 % of its bandwidth, L2 hit rate 73 → 91 %) but left L2 94 % busy and the speed within
  noise (+1–2 % TF32, −1 % 3xTF32): the prediction (+10–30 %) missed, DRAM was not the limit. What fills the L2 is
  the number of requests: at 8192³ (``ncu-steps-12-14-l2-nvidia-h100.txt``) step 12 makes 524 M L2 requests for
  1.10 G sectors (2.1 sectors each) and runs with L2 44 % busy; this TF32 build 1.19 G requests for 1.40 G sectors
  (1.2 each) in about the same time. By source (``ncu-l2-requests-by-source-nvidia-h100.txt``) they are the
  copies' reads: 1.08 G read requests for 1.24 G sectors — 1.5× the tiles' 0.81 G sectors, about one sector per
  request — against step 12's 0.41 G for 0.94 G (1.16× the same tiles' bytes, 2.3 per request), with the same
  ``LDGSTS.E.BYPASS.128`` in both; copying A by whole rows gives the same counts. Why the same 16-byte copies
  become smaller requests here is not settled. What this kernel lacks against cuBLAS is the Hopper memory path
  — TMA bulk tensor copies (whole tiles per request, multicast over a cluster) and mbarriers instead of block
  barriers — the next experiment, not a tweak of this one.
* **ptxas does not protect ``wgmma``'s register operand.** With ``wait_group 1`` (the next k-tile's fragments loaded
  while this k-tile's ``wgmma`` run) the 256×128 build is wrong (0.30 relative error at 512×512×256): SASS shows
  the next ``LDS`` writing the registers an in-flight ``HGMMA`` reads. The 128×128 build came out right the same
  way only because its shorter ``wgmma`` finished first. ``SERIAL`` (``wait_group 0`` before the fragments) is
  right on both, and no slower: the 128×128 build ran 91–95 / 101–105 TFLOPS serial (three runs) against 86 / 103
  pipelined (the first run; not the same run).
* **3xTF32 on ``wgmma`` beats cuBLAS SGEMM by 1.30–1.38× at SGEMM's accuracy or better** (128×128, FLUSH "big",
  two runs: 66.3–67.9 / 70.6–71.4 TFLOPS at 4096³ / 8192³, 1.30–1.33× / 1.37–1.38×; error 3.4e-7 / 3.8e-7
  against cuBLAS SGEMM's 1.1e-6 / 1.6e-6 on standard-normal inputs; on wide-exponent inputs at 4096³ 3.0e-7
  against SGEMM's 4.9e-7). Step 13 (``mma.sync``) in the same runs: 1.17–1.20×. Without the flush the error
  grows with K (1.5e-5 / 2.9e-5 / 5.8e-5 at K = 2048 / 4096 / 8192: the truncating accumulator); FLUSH "all" is
  as accurate and 2–6 % slower. At M = N = 512 its error is within 1.05× of SGEMM's on standard-normal inputs
  for K ≥ 1024 (1.6× at K = 64), and 1.8–3.0× SGEMM's on wide-exponent ones (step 13: 1.6–2.7×).
  The three products cost the tensor cores more, but this kernel was never tensor-bound: 3xTF32 runs at 59 % of
  the 256×128 TF32 build's speed, not 33 %.

Full tiles only; GPU only (no simulator twin): an experiment, not a step. Usage on an H100/H200::

    python -m experiments.wgmma_swapped OUT.json                        # every build, checked, then timed
    python -m experiments.wgmma_swapped OUT.json --only "flush big" …   # a repeat of some builds
    python -m experiments.wgmma_swapped --accuracy OUT.json             # 3xTF32 error sweep (lesson 13's)
    python -m experiments.wgmma_swapped --profile "BUILD NAME"          # two launches at 8192³, for ncu
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np

from experiments.wgmma_gemm import full_tile_shape, intrinsics, opt_in_shared, sass_counts

BLOCK_K = 32
LBO, SBO = 128, BLOCK_K * 8 * 4  # bytes between core matrices adjacent in K, and in N (A's rows)


def build(BLOCK_M: int = 256, BLOCK_N: int = 128, STAGES: int = 4, ROUND_B: bool = True, SERIAL: bool = False,
          THREE: bool = False, FLUSH: str = "none", A_ROWS: bool = False, GROUP_M: int = 0, SWIZZLE: bool = False):
    """The kernel and its launch: a BLOCK_M × BLOCK_N tile of C per block, one warpgroup per 64 columns.

    ``SERIAL``: wait for the previous k-tile's ``wgmma`` (``wait_group 0``) before this k-tile's fragments are
    loaded, instead of after this k-tile's are issued (``wait_group 1``). ``wgmma`` may read its register operand
    until the wait that retires it; ptxas gives the next k-tile's fragments the same registers (SASS: the ``LDS``
    of k-tile t + 1 write R152… while k-tile t's ``HGMMA`` may still run), so only the serial order is safe.

    ``THREE``: 3xTF32. Bᵀ's fragments are split in registers (big = TF32-rounded, small = the rest); A's stage is
    split once per k-tile into a second shared-memory buffer of small parts (a − a truncated to TF32; the tensor
    core truncates the stage itself to give the big part), and each k-step runs three ``wgmma``: small·big,
    big·small, big·big. Always serial (``wait_group 0`` before the fragments).

    ``FLUSH`` (3xTF32): the tensor core truncates each sum it accumulates (lesson 13), so a running sum kept in
    the ``wgmma`` accumulator over all of K drifts (error growing like K). "none": it does; "all": each k-tile's
    three products go to a fresh accumulator, added to the running sum with rounded float32 adds; "big": only the
    big·big products do, while the small products, ~2^-11 of the sum, stay in a second, long-lived accumulator
    (its truncation costs ~2^-11 as much).

    ``A_ROWS``: a warp's 16-byte copies of A cover 4 whole 128-byte rows (8 chunks each) instead of the same
    chunk of 8 rows (8 threads filling one core matrix): half as many L2 requests per copy instruction, at the
    price of shared-memory bank conflicts on the stores (a row's 8 chunks lie 128 B apart, in 8 core matrices).
    The Nsight Compute profile of the 256×128 serial build shows L2 busy 91.5 % of the time at 8192³.

    ``GROUP_M``: blocks take their tiles in groups of GROUP_M tile rows (step 10's grouped order) instead of row by
    row, so the blocks running at once share A's rows and B's columns in L2. Prediction, written before the run: if
    the TF32 build is held back by L2 and DRAM traffic (92 % L2, 28 % DRAM, 73 % L2 hit rate at 8192³), GROUP_M = 8
    lifts it 10–30 % at 8192³ and less at 4096³ (inputs 128 MB against a 50 MB L2), and 3xTF32 (three products
    per byte) 0–5 %.

    ``SWIZZLE``: A staged in ``wgmma``'s 128-byte swizzle mode instead of no-swizzle core matrices: each row's 32
    k values (128 bytes) contiguous, its eight 16-byte chunks permuted by XOR with row % 8, 8-row groups 1,024 bytes
    apart (SBO), a k-step 32 bytes further along the row. A warp's 16-byte copies then cover whole rows in global
    *and* in shared memory. Prediction, written before the run: if the L2's ~one-sector requests come from copies
    whose shared-memory destinations do not follow their global sources (no-swizzle: 8 rows' chunks side by side;
    A by rows: a row's chunks 128 bytes apart), L2 requests drop toward step 12's 2.3 sectors each and the TF32
    build gains 10–40 %; if not, nothing moves."""
    assert FLUSH in ("none", "all", "big") and (FLUSH == "none" or THREE)
    assert not (SWIZZLE and A_ROWS)
    K_STEP_BYTES = 32 if SWIZZLE else 2 * LBO  # from one k-step's slice of A to the next, for the descriptor
    SERIAL = SERIAL or THREE
    ROUND_B = ROUND_B and not THREE  # 3xTF32 splits the raw fragments
    GROUPS = BLOCK_N // 64
    THREADS = 128 * GROUPS
    LOAD_AHEAD = STAGES - 2  # the stage a wgmma may still read is never the one being refilled
    B_STRIDE = BLOCK_N + 8  # floats per row of a B stage; ≡ 8 (mod 32): fragment reads conflict-free
    A_STAGE, B_STAGE = BLOCK_M * BLOCK_K, BLOCK_K * B_STRIDE  # floats per pipeline stage
    SMALL_BASE = STAGES * (A_STAGE + B_STAGE)  # THREE: two buffers of A's small parts, alternating by k-tile
    SHARED_BYTES = (SMALL_BASE + (2 * A_STAGE if THREE else 0)) * 4
    ops = intrinsics(BLOCK_M)  # wgmma's N is the tile's rows
    from numba import cuda, float32, uint32, uint64

    from gemm_steps.toolkit.intrinsics import copy_async, load_float4, store_float4
    from gemm_steps.toolkit.tensor_core_ops import copy_async_commit, copy_async_wait, split_tf32, to_tf32

    wgmma_fence, wgmma_commit, fence_proxy_async = ops.wgmma_fence, ops.wgmma_commit, ops.fence_proxy_async
    zero_accumulators, shared_address, mma = ops.zero_accumulators, ops.shared_address, ops.mma_register_a
    wait_all, wait_one, store_accumulators = ops.wait_all, ops.wait_one, ops.store_accumulators
    add_accumulators = ops.add_accumulators

    @cuda.jit(device=True, inline=True)
    def chunk_of(chunk):
        """(row, 16-byte chunk along k) of a K-major copy: 8 consecutive threads fill one 128-byte core matrix
        (or, A_ROWS, one 128-byte row of A)."""
        if A_ROWS:
            return chunk // (BLOCK_K // 4), chunk % (BLOCK_K // 4)
        row_in_group, rest = chunk % 8, chunk // 8
        return rest // (BLOCK_K // 4) * 8 + row_in_group, rest % (BLOCK_K // 4)

    @cuda.jit(device=True, inline=True)
    def fragment(tiles, at):
        """This thread's four elements of a 16×8 slice of Bᵀ (the mma.m16n8k8 A layout), from B's stage."""
        if ROUND_B:
            return (to_tf32(tiles[at]), to_tf32(tiles[at + 8]), to_tf32(tiles[at + 4 * B_STRIDE]),
                    to_tf32(tiles[at + 4 * B_STRIDE + 8]))
        return tiles[at], tiles[at + 8], tiles[at + 4 * B_STRIDE], tiles[at + 4 * B_STRIDE + 8]

    @cuda.jit(device=True, inline=True)
    def small_part(x):
        """x minus x truncated to TF32 (what the tensor core reads of x): exact in float32."""
        return x - cuda.libdevice.int_as_float(cuda.libdevice.float_as_int(x) & -8192)

    @cuda.jit(device=True, inline=True)
    def split_fragment(f):
        """((big, small) of each of a fragment's four elements): big rounded to TF32, small = x − big."""
        p0, p1, p2, p3 = split_tf32(f[0]), split_tf32(f[1]), split_tf32(f[2]), split_tf32(f[3])
        return (p0[0], p1[0], p2[0], p3[0]), (p0[1], p1[1], p2[1], p3[1])

    @cuda.jit(device=True, inline=True)
    def descriptor(address, offsets):
        return (uint64(address & uint32(0x3FFFF)) >> uint64(4)) | offsets

    @cuda.jit(device=True, inline=True)
    def three_products(big, small, big_address, small_address, offsets, acc, small_acc, first):
        """One k-step of 3xTF32: Bᵀ_small·Aᵀ_big + Bᵀ_big·Aᵀ_small + Bᵀ_big·Aᵀ_big, small products first — into
        ``acc`` alone, or the two small ones into ``small_acc`` (FLUSH "big"). ``first``: ``acc`` starts afresh."""
        fresh = uint32(0) if first and FLUSH != "none" else uint32(1)
        if FLUSH == "big":
            small_acc = mma(small[0], small[1], small[2], small[3], descriptor(big_address, offsets), small_acc, 1)
            small_acc = mma(big[0], big[1], big[2], big[3], descriptor(small_address, offsets), small_acc, 1)
            acc = mma(big[0], big[1], big[2], big[3], descriptor(big_address, offsets), acc, fresh)
        else:
            acc = mma(small[0], small[1], small[2], small[3], descriptor(big_address, offsets), acc, fresh)
            acc = mma(big[0], big[1], big[2], big[3], descriptor(small_address, offsets), acc, 1)
            acc = mma(big[0], big[1], big[2], big[3], descriptor(big_address, offsets), acc, 1)
        return acc, small_acc

    @cuda.jit(launch_bounds=(THREADS, 1))
    def wgmma_swapped_kernel(a, b, c, m, n, k):
        """One BLOCK_M × BLOCK_N tile of C = A·B as Cᵀ = Bᵀ·Aᵀ; flat row-major float32, full tiles only."""
        tiles = cuda.shared.array(0, float32)  # STAGES stages of A (core-matrix order), then STAGES of B (as is)
        tid = uint32(cuda.threadIdx.x)
        m, n, k = uint32(m), uint32(n), uint32(k)
        if GROUP_M:  # tile (row, col) of this block in grouped order
            tile_rows, tile_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x)
            block = uint32(cuda.blockIdx.y) * tile_cols + uint32(cuda.blockIdx.x)
            first_row = block // (GROUP_M * tile_cols) * GROUP_M
            rows_here = min(tile_rows - first_row, uint32(GROUP_M))
            within = block % (GROUP_M * tile_cols)
            block_row = (first_row + within % rows_here) * BLOCK_M
            block_col = (within // rows_here) * BLOCK_N
        else:
            block_row = uint32(cuda.blockIdx.y) * BLOCK_M
            block_col = uint32(cuda.blockIdx.x) * BLOCK_N
        group, warp, lane = tid // 128, tid % 128 // 32, tid % 32
        base = shared_address(tiles, 0)
        b_base = uint32(STAGES * A_STAGE)
        if SWIZZLE:  # layout type 1 (128-byte swizzle) in bits 62–63; SBO 1,024 bytes; LBO unused (set to 1)
            offsets = (uint64(1) << uint64(16)) | (uint64(1024 >> 4) << uint64(32)) | (uint64(1) << uint64(62))
        else:
            offsets = (uint64(LBO >> 4) << uint64(16)) | (uint64(SBO >> 4) << uint64(32))
        fragment_at = (lane % 4) * B_STRIDE + group * 64 + warp * 16 + lane // 4  # k = lane % 4, column
        acc = zero_accumulators()
        total = zero_accumulators()  # FLUSH: the running sum, in rounded float32 adds
        small_acc = zero_accumulators()  # FLUSH "big": the small products
        k_tiles = k // BLOCK_K
        for t in range(k_tiles + LOAD_AHEAD):
            if LOAD_AHEAD == 2:
                copy_async_wait(1)  # LOAD_AHEAD - 1: all but this thread's newest copy group have landed
            else:
                copy_async_wait(0)
            fence_proxy_async()  # landed copies made visible to the async proxy (wgmma's reads of A)
            cuda.syncthreads()
            if t < k_tiles:
                stage = uint32(t % STAGES)
                k0 = uint32(t) * BLOCK_K
                for q in range(A_STAGE // 4 // THREADS):  # A: 16-byte chunks, K-major core matrices
                    if SWIZZLE:  # a warp: 4 whole rows; chunk kc of row r at 16-byte slot kc XOR r % 8 of the row
                        chunk = tid + uint32(q * THREADS)
                        row, kc = chunk // 8, chunk % 8
                        copy_async(tiles, stage * A_STAGE + row * 32 + (kc ^ (row % 8)) * 4,
                                   a, (block_row + row) * k + k0 + kc * 4, 4)
                    else:
                        row, kc = chunk_of(tid + uint32(q * THREADS))
                        copy_async(tiles, stage * A_STAGE + row // 8 * (BLOCK_K * 8) + kc * 32 + row % 8 * 4,
                                   a, (block_row + row) * k + k0 + kc * 4, 4)
                for q in range(BLOCK_K * BLOCK_N // 4 // THREADS):  # B: rows as they are, 16-byte chunks
                    chunk = tid + uint32(q * THREADS)
                    kk, col = chunk // (BLOCK_N // 4), chunk % (BLOCK_N // 4) * 4
                    copy_async(tiles, b_base + stage * B_STAGE + kk * B_STRIDE + col,
                               b, (k0 + kk) * n + block_col + col, 4)
            copy_async_commit()
            if t >= LOAD_AHEAD:
                stage = uint32((t - LOAD_AHEAD) % STAGES)
                a_address = base + stage * (A_STAGE * 4)
                at = b_base + stage * B_STAGE + fragment_at
                small_at = uint32(SMALL_BASE + (t - LOAD_AHEAD) % 2 * A_STAGE)
                if THREE:  # A's small parts, in the same core-matrix order, for this k-tile's wgmma to read
                    for q in range(A_STAGE // 4 // THREADS):
                        i = (tid + uint32(q * THREADS)) * 4
                        x0, x1, x2, x3 = load_float4(tiles, stage * A_STAGE + i)
                        store_float4(tiles, small_at + i, small_part(x0), small_part(x1), small_part(x2),
                                     small_part(x3))
                    fence_proxy_async()  # generic-proxy stores → visible to wgmma's async-proxy reads
                    cuda.syncthreads()
                if SERIAL:
                    acc = wait_all(acc)  # the previous k-tile's wgmma are done reading their fragment registers
                if FLUSH != "none":
                    small_acc = wait_all(small_acc)
                    total = add_accumulators(total, acc)  # the previous k-tile's products (zeros at first)
                f0 = fragment(tiles, at)  # the four k-steps' fragments, loaded before the fence
                f1 = fragment(tiles, at + 8 * B_STRIDE)
                f2 = fragment(tiles, at + 16 * B_STRIDE)
                f3 = fragment(tiles, at + 24 * B_STRIDE)
                if THREE:
                    small_address = base + small_at * 4
                    b0, s0 = split_fragment(f0)
                    b1, s1 = split_fragment(f1)
                    b2, s2 = split_fragment(f2)
                    b3, s3 = split_fragment(f3)
                    wgmma_fence()  # registers written above → visible to the wgmma that read them
                    acc, small_acc = three_products(b0, s0, a_address, small_address, offsets, acc, small_acc, True)
                    acc, small_acc = three_products(b1, s1, a_address + K_STEP_BYTES, small_address + K_STEP_BYTES, offsets,
                                                    acc, small_acc, False)
                    acc, small_acc = three_products(b2, s2, a_address + 2 * K_STEP_BYTES, small_address + 2 * K_STEP_BYTES, offsets,
                                                    acc, small_acc, False)
                    acc, small_acc = three_products(b3, s3, a_address + 3 * K_STEP_BYTES, small_address + 3 * K_STEP_BYTES, offsets,
                                                    acc, small_acc, False)
                else:
                    wgmma_fence()  # registers written above → visible to the wgmma that read them
                    acc = mma(f0[0], f0[1], f0[2], f0[3], descriptor(a_address, offsets), acc, 1)
                    acc = mma(f1[0], f1[1], f1[2], f1[3], descriptor(a_address + K_STEP_BYTES, offsets), acc, 1)
                    acc = mma(f2[0], f2[1], f2[2], f2[3], descriptor(a_address + 2 * K_STEP_BYTES, offsets), acc, 1)
                    acc = mma(f3[0], f3[1], f3[2], f3[3], descriptor(a_address + 3 * K_STEP_BYTES, offsets), acc, 1)
                wgmma_commit()
                if not SERIAL:
                    acc = wait_one(acc)  # the previous k-tile's wgmma are done; this one's may still run
        acc = wait_all(acc)
        if FLUSH != "none":
            small_acc = wait_all(small_acc)
            acc = add_accumulators(add_accumulators(total, acc), small_acc)
        # the accumulator is Cᵀ's 64 × BLOCK_M part of this warpgroup: its rows are C's columns
        store_accumulators(c, acc, block_col + group * 64 + warp * 16 + lane // 4, block_row + lane % 4 * 2,
                           uint32(1), n)

    assert BLOCK_K == 32, "the k-tile is written out as four k-steps of 8"
    assert STAGES in (3, 4), "copy_async_wait takes a literal: LOAD_AHEAD - 1 is written for 3 or 4 stages"
    opted_in = set()

    def launch(a, b, c, stream=0):
        m, n, k = full_tile_shape(a, b, BLOCK_M, BLOCK_N, BLOCK_K)
        opt_in_shared(wgmma_swapped_kernel, SHARED_BYTES, opted_in)
        wgmma_swapped_kernel[(n // BLOCK_N, m // BLOCK_M), THREADS, stream, SHARED_BYTES](
            a.reshape(m * k), b.reshape(k * n), c.reshape(m * n), m, n, k)

    return wgmma_swapped_kernel, launch


BUILDS = {  # name: build() arguments
    "wgmma swapped 256x128": dict(BLOCK_M=256, BLOCK_N=128),
    "wgmma swapped 256x128, serial": dict(BLOCK_M=256, BLOCK_N=128, SERIAL=True),
    "wgmma swapped 128x128, serial": dict(BLOCK_M=128, BLOCK_N=128, SERIAL=True),
    "wgmma swapped 256x128, serial, 3 stages": dict(BLOCK_M=256, BLOCK_N=128, SERIAL=True, STAGES=3),
    "wgmma swapped 3xTF32 128x128": dict(BLOCK_M=128, BLOCK_N=128, THREE=True),
    "wgmma swapped 3xTF32 256x128, 3 stages": dict(BLOCK_M=256, BLOCK_N=128, THREE=True, STAGES=3),
    "wgmma swapped 3xTF32 128x128, flush all": dict(BLOCK_M=128, BLOCK_N=128, THREE=True, FLUSH="all"),
    "wgmma swapped 3xTF32 128x128, flush big": dict(BLOCK_M=128, BLOCK_N=128, THREE=True, FLUSH="big"),
    "wgmma swapped 256x128, serial, A by rows": dict(BLOCK_M=256, BLOCK_N=128, SERIAL=True, A_ROWS=True),
    "wgmma swapped 256x128, serial, grouped 8": dict(BLOCK_M=256, BLOCK_N=128, SERIAL=True, GROUP_M=8),
    "wgmma swapped 256x128, serial, swizzled": dict(BLOCK_M=256, BLOCK_N=128, SERIAL=True, SWIZZLE=True),
    "wgmma swapped 3xTF32 128x128, flush big, swizzled": dict(BLOCK_M=128, BLOCK_N=128, THREE=True, FLUSH="big",
                                                               SWIZZLE=True),
    "wgmma swapped 3xTF32 128x128, flush big, grouped 8": dict(BLOCK_M=128, BLOCK_N=128, THREE=True, FLUSH="big",
                                                                GROUP_M=8),
    "wgmma swapped 3xTF32 128x128, flush big, A by rows": dict(BLOCK_M=128, BLOCK_N=128, THREE=True, FLUSH="big",
                                                               A_ROWS=True),
}


def check(launch, a, b, round_b: bool = True) -> dict:
    """Error of one launch against float64 on A truncated and B rounded (``round_b``) or truncated to TF32 (what
    the kernel feeds the tensor cores), and against the exact float64 product."""
    from numba import cuda

    from gemm_steps.toolkit.tensor_core_ops import round_to_tf32, truncate_to_tf32

    c = cuda.to_device(np.full((a.shape[0], b.shape[1]), np.nan, np.float32))
    launch(cuda.to_device(a), cuda.to_device(b), c)
    got = c.copy_to_host()
    fed = truncate_to_tf32(a).astype(np.float64) @ (round_to_tf32 if round_b else truncate_to_tf32)(b).astype(np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return {"shape": [a.shape[0], b.shape[1], a.shape[1]], "unwritten": int(np.isnan(got).sum()),
            "max_rel_error_vs_fed_inputs": float(np.nanmax(np.abs(got - fed)) / np.abs(fed).max()),
            "rel_error_vs_float64": float(np.linalg.norm(got - exact) / np.linalg.norm(exact))}


def profile(name: str, size: int = 8192) -> None:
    """Two launches of one build at ``size``³, for Nsight Compute (``--profile NAME``)."""
    from numba import cuda

    _, launch = build(**BUILDS[name])
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), dtype=np.float32)
    for _ in range(2):
        launch(a, b, c)
    cuda.synchronize()


def accuracy(path: str) -> None:
    """``--accuracy OUT.json``: the 3xTF32 builds' error against float64 beside cuBLAS SGEMM's and step 13's, as
    lesson 13 measures it — whole-product error at M = N = 512, K = 64 … 16384, on standard-normal inputs and on
    inputs scaled by 2^u (u uniform in −20 … 20), and the sampled error at 4096³ on the wide inputs."""
    from gemm_steps.harness.bench import save
    from gemm_steps.harness.cublas import launch_cublas
    from gemm_steps.steps import three_tf32

    from experiments.tensor_core_speed import accuracy_sweep, wide_error

    launches = {"cublas": launch_cublas, "three_tf32 (step 13)": three_tf32.TUNING.kernels().launch}
    launches.update({name: build(**arguments)[1] for name, arguments in BUILDS.items()
                     if arguments.get("FLUSH", "none") != "none"})
    save({"experiment": "wgmma 3xTF32 accuracy", "sweep": accuracy_sweep(launches),
          "wide_exponent_4096": wide_error(launches)}, path)


def main() -> None:
    if sys.argv[1] == "--profile":
        profile(sys.argv[2])
        return
    if sys.argv[1] == "--accuracy":
        accuracy(sys.argv[2])
        return
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    from experiments import wgmma_gemm

    only = sys.argv[sys.argv.index("--only") + 1:] if "--only" in sys.argv else None  # a repeat of some builds
    builds = {name: build(**arguments) for name, arguments in BUILDS.items()
              if only is None or any(part in name for part in only)}
    if only is None:
        builds["wgmma_tf32 128x256 (wgmma_gemm.py), pipelined"] = wgmma_gemm.build(128, 256, PIPELINED=True)
        builds["wgmma_tf32 128x256 (wgmma_gemm.py), pipelined, B given transposed"] = wgmma_gemm.build(
            128, 256, B_TRANSPOSED=True, PIPELINED=True)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((512, 256), dtype=np.float32)
    b = rng.standard_normal((256, 512), dtype=np.float32)
    checks, sass, arithmetic = {}, {}, {}
    for name, (kernel, launch) in builds.items():
        arguments = BUILDS.get(name, {"ROUND_B": False})  # wgmma_gemm.py's builds truncate B
        checks[name] = check(launch, a, b, round_b=arguments.get("ROUND_B", True))
        sass[name] = sass_counts(kernel)
        arithmetic[name] = "3xtf32" if arguments.get("THREE") else "tf32"
        print(name, json.dumps(checks[name]), json.dumps(sass[name]), flush=True)
    right = {name: (checks[name]["rel_error_vs_float64"] < 1e-5 if arithmetic[name] == "3xtf32"
                    else checks[name]["max_rel_error_vs_fed_inputs"] < 1e-5) for name in builds}
    entries = [gemm_steps.get_step("tensor_cores"), gemm_steps.get_step("three_tf32")] + [
        SimpleNamespace(name=name, number=12, launch=launch, arithmetic=arithmetic[name])
        for name, (_, launch) in builds.items() if right[name]]
    sizes = [(s, s, s) for s in (2048, 4096, 8192)]
    results = run_benchmark(entries, sizes, repeats=20, include_cublas_tf32=True,
                            progress=lambda message: print(message, flush=True))
    results.update(experiment="wgmma TF32 GEMM, operands swapped (Bᵀ from registers)", checks=checks, sass=sass,
                   builds={name: arguments for name, arguments in BUILDS.items()}, block_k=BLOCK_K)
    save(results, sys.argv[1])
    for r in results["records"]:
        print(f"{r['M']:5d} {r['step']:58s} {r.get('tflops', 0):7.1f} TFLOPS {r.get('pct_of_cublas') or 0:6.1f} % "
              f"error {r.get('sampled_rel_error_fp64', float('nan')):.1e}", flush=True)


if __name__ == "__main__":
    main()
