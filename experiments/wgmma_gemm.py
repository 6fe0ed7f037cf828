"""A first TF32 GEMM on Hopper's warpgroup MMA (``wgmma``), from Numba: how far past ``mma.sync`` does it go?
(issue: tensor cores, stretch item; experiments/wgmma_probe.py showed one ``wgmma`` runs.)

Step 12 issues ``mma.sync`` (one warp, 16×8×8, operands in registers) and stops near 147 TFLOPS on an H100: its
profile puts ``mma.sync``'s tensor-pipe rate at ~6 clocks per 16×8×8 product. cuBLAS TF32 runs ``wgmma`` at ~380.
This kernel is the smallest ``wgmma`` GEMM that can say whether Numba gets there too:

* a block is one **warpgroup** (4 warps, 128 threads) and computes a 64×128 tile of C (BLOCK_M × BLOCK_N) with
  ``wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32``: 65,536 multiply-adds per instruction, its 64×128
  accumulator spread over the 128 threads (64 float registers each, kept as one 64-tuple);
* both operands are read by the tensor cores straight from shared memory, described by 64-bit matrix descriptors
  (no swizzle, K-major: 8-row × 16-byte "core matrices", 128 B apart along K (LBO) and BLOCK_K·32 B apart along M or
  N (SBO) — the reading the probe confirmed);
* A's 16-byte chunks are already K-major and go through 16-byte ``cp.async``; B is K×N row-major in memory and must
  land as [col][k], so it is transposed on the way in, one 4-byte ``cp.async`` per element;
* a STAGES-deep ``cp.async`` pipeline as in step 12; after each k-tile's copies land: ``fence.proxy.async`` (the
  copies were made by the generic proxy, ``wgmma`` reads through the async proxy), a barrier, ``wgmma.fence``, four
  ``wgmma`` (BLOCK_K = 32 in k-steps of 8), ``commit_group`` and ``wait_group 0`` — the accumulators pass through
  the wait, so nothing reads them before the asynchronous mma has written them;
* no rounding: the tensor cores read the top 19 bits of each operand (TF32 by truncation), so the error is the
  "raw" variant's of experiments/tf32_conversion.py (~8e-4), within ``verify.tf32_tolerance`` (~2e-3) but above
  cuBLAS TF32's ~3e-4.

Full tiles only; GPU only (no simulator twin): an experiment, not a step. Two tiles are built — 64×128 (one
warpgroup, m64n128k8, 64 accumulators per thread) and 128×256 (two warpgroups, m64n256k8, 128 accumulators) — and a
diagnostic 128×256 build that reads B already transposed, and a pipelined 128×256 build. Usage on an H100/H200:
``python -m experiments.wgmma_gemm OUT.json``.

Measured (H100, same run as step 12 and cuBLAS, ``experiments/results/experiment-wgmma-gemm-nvidia-h100.json``): right to
float32 rounding (2.9e-7 against float64 on the truncated inputs), but slower than step 12 — 128×256 at 85 / 99
TFLOPS at 4096³ / 8192³, pipelined 96 / 114, against step 12's 144 / 150 and cuBLAS TF32's 322 / 386. Not the
transposing 4-byte copies (B given transposed: 83 / 89), not the copies' shared-memory bank conflicts (remapped: no
change, an earlier run). Keeping each k-tile's ``wgmma`` in flight across the next barrier (pipelined) gained
13–16 %; every k-tile still meets at a barrier before its ``wgmma`` can issue, and with one 192 KB block per SM
nothing fills those gaps. CUTLASS's Hopper kernels feed the ``wgmma`` warpgroups from producer warps (TMA and
mbarriers) instead; that is the next experiment.
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np

BLOCK_K = 32
LBO, SBO = 128, BLOCK_K * 8 * 4  # bytes between core matrices adjacent in K, and in M (or N)
#: (BLOCK_M, BLOCK_N): one warpgroup per 64 rows, each running wgmma m64n<BLOCK_N>k8 on its 64 × BLOCK_N part.
TILES = [(64, 128), (128, 256)]


def full_tile_shape(a, b, block_m: int, block_n: int, block_k: int) -> tuple[int, int, int]:
    """(m, n, k) of C = A·B; a ValueError unless each is a whole number of tiles (the experiments have no edges)."""
    m, k = a.shape
    n = b.shape[1]
    if m % block_m or n % block_n or k % block_k:
        raise ValueError(f"the wgmma experiment takes full tiles only: M % {block_m}, N % {block_n}, "
                         f"K % {block_k} must be 0 (got {m}×{n}×{k})")
    return m, n, k


def opt_in_shared(kernel, shared_bytes: int, opted_in: set) -> None:
    """Let ``kernel`` launch with ``shared_bytes`` of dynamic shared memory: over 48 KB it must opt in, once per
    context (``opted_in`` remembers which)."""
    from numba import cuda, types
    from numba.cuda.cudadrv.driver import binding, driver

    key = id(cuda.current_context())
    if key not in opted_in:
        signature = (types.float32[::1], types.float32[::1], types.float32[::1], types.int64, types.int64,
                     types.int64)  # a, b, c flat; m, n, k
        function = kernel.compile(signature)._codelibrary.get_cufunc()
        attribute = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attribute, shared_bytes, function.handle, function.device.id)
        opted_in.add(key)


def intrinsics(WGMMA_N: int) -> SimpleNamespace:
    """The inline-PTX pieces of a ``wgmma`` kernel whose warpgroups each hold a 64 × ``WGMMA_N`` accumulator
    (``WGMMA_N // 2`` floats per thread, one tuple): fences, commit/wait, descriptors' shared address, the
    shared-memory-operand ``wgmma`` (``mma``), the register-A one (``mma_register_a``) and the accumulator store."""
    ACCUMULATORS = 64 * WGMMA_N // 128
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    f32, i32, i64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)
    tuple_type = types.UniTuple(types.float32, ACCUMULATORS)

    # The pieces that do not depend on N are the toolkit's (gemm_steps/toolkit/warpgroup_ops.py, where steps 14–15
    # take them from); the N-specific ones (the wgmma forms, the waits, the accumulator store) stay here.
    from gemm_steps.toolkit.warpgroup_ops import add_accumulators, fence_proxy_async, shared_address
    from gemm_steps.toolkit.warpgroup_ops import warpgroup_commit as wgmma_commit
    from gemm_steps.toolkit.warpgroup_ops import warpgroup_fence as wgmma_fence

    @intrinsic
    def zero_accumulators(typingctx):
        def codegen(context, builder, sig, args):
            return context.make_tuple(builder, sig.return_type, [ir.Constant(f32, 0.0)] * ACCUMULATORS)

        return tuple_type(), codegen

    def accumulator_asm(text, extra_types, extra_constraints):
        """Inline asm whose 64 accumulators go in and come out in the same registers (tied operands)."""
        result = ir.LiteralStructType([f32] * ACCUMULATORS)
        outputs = ",".join(["=f"] * ACCUMULATORS)
        tied = ",".join(str(i) for i in range(ACCUMULATORS))
        constraints = ",".join(filter(None, [outputs, extra_constraints, tied, "~{memory}"]))
        return result, ir.InlineAsm(ir.FunctionType(result, extra_types + [f32] * ACCUMULATORS), text, constraints,
                                    side_effect=True)

    registers = ", ".join(f"${i}" for i in range(ACCUMULATORS))

    @intrinsic
    def wgmma_m64nNk8(typingctx, desc_a, desc_b, acc):
        """``wgmma.mma_async.sync.aligned.m64n<WGMMA_N>k8.f32.tf32.tf32``: acc += A·B, A and B from shared memory."""
        def codegen(context, builder, sig, args):
            n = ACCUMULATORS
            text = ("{ .reg .pred p; setp.ne.b32 p, $" + str(n + 2) + ", 0; "
                    f"wgmma.mma_async.sync.aligned.m64n{WGMMA_N}k8.f32.tf32.tf32 {{{registers}}}, ${n}, ${n + 1}, p, 1, 1; }}")
            result, call = accumulator_asm(text, [i64, i64, i32], "l,l,r")
            values = [builder.extract_value(args[2], i) for i in range(n)]
            out = builder.call(call, [args[0], args[1], ir.Constant(i32, 1), *values])
            return context.make_tuple(builder, sig.return_type, [builder.extract_value(out, i) for i in range(n)])

        return tuple_type(types.uint64, types.uint64, tuple_type), codegen

    def wgmma_wait(pending):
        @intrinsic
        def wait(typingctx, acc):
            """``wgmma.wait_group.sync.aligned pending``, the accumulators passed through it."""
            def codegen(context, builder, sig, args):
                result, call = accumulator_asm(f"wgmma.wait_group.sync.aligned {pending};", [], "")
                values = [builder.extract_value(args[0], i) for i in range(ACCUMULATORS)]
                out = builder.call(call, values)
                return context.make_tuple(builder, sig.return_type,
                                          [builder.extract_value(out, i) for i in range(ACCUMULATORS)])

            return tuple_type(tuple_type), codegen

        return wait

    wgmma_wait_all, wgmma_wait_one = wgmma_wait(0), wgmma_wait(1)

    @intrinsic
    def store_accumulators(typingctx, c, acc, row, col, row_stride, col_stride):
        """The warpgroup's accumulator layout: this thread's value 4j + r is row ``row`` (+ 8 for r ≥ 2), column
        ``col`` + 8j (+ 1 for odd r) of its 64 × WGMMA_N part, ``row``/``col`` being its warp's and lane's offsets;
        stored at ``c[row · row_stride + col · col_stride]`` (strides (N, 1): as is; (1, N): transposed)."""
        def codegen(context, builder, sig, args):
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            row, col, row_stride, col_stride = (builder.zext(v, i64) if v.type.width < 64 else v for v in args[2:6])
            for i in range(ACCUMULATORS):
                j, r = divmod(i, 4)
                index = builder.add(builder.mul(builder.add(row, ir.Constant(i64, 8 * (r // 2))), row_stride),
                                    builder.mul(builder.add(col, ir.Constant(i64, 8 * j + r % 2)), col_stride))
                builder.store(builder.extract_value(args[1], i), builder.gep(data, [index], inbounds=True))
            return context.get_dummy_value()

        return types.void(c, acc, row, col, row_stride, col_stride), codegen

    @intrinsic
    def wgmma_m64nNk8_register_a(typingctx, a0, a1, a2, a3, desc_b, acc, accumulate):
        """``wgmma.mma_async.sync.aligned.m64n<WGMMA_N>k8.f32.tf32.tf32`` with A from registers: acc += A·B, A's
        64×8 slice spread over the warpgroup as four 16×8 ``mma.m16n8k8`` A fragments (warp w: rows 16w…16w+15;
        lane (g, t): a0 = [g][t], a1 = [g+8][t], a2 = [g][t+4], a3 = [g+8][t+4]), B from shared memory.
        ``accumulate`` 0: acc = A·B (the old values are ignored: ``scale-d`` false)."""
        def codegen(context, builder, sig, args):
            n = ACCUMULATORS
            text = ("{ .reg .pred p; setp.ne.b32 p, $" + str(n + 5) + ", 0; "
                    f"wgmma.mma_async.sync.aligned.m64n{WGMMA_N}k8.f32.tf32.tf32 {{{registers}}}, "
                    f"{{${n}, ${n + 1}, ${n + 2}, ${n + 3}}}, ${n + 4}, p, 1, 1; }}")
            result, call = accumulator_asm(text, [i32] * 4 + [i64, i32], "r,r,r,r,l,r")
            bits = [builder.bitcast(context.cast(builder, v, t, types.float32), i32)
                    for v, t in zip(args[:4], sig.args[:4])]
            values = [builder.extract_value(args[5], i) for i in range(n)]
            accumulate = context.cast(builder, args[6], sig.args[6], types.int32)
            out = builder.call(call, [*bits, args[4], accumulate, *values])
            return context.make_tuple(builder, sig.return_type, [builder.extract_value(out, i) for i in range(n)])

        if not isinstance(accumulate, types.Integer):
            return None
        return tuple_type(types.float32, types.float32, types.float32, types.float32, types.uint64,
                          tuple_type, accumulate), codegen

    return SimpleNamespace(add_accumulators=add_accumulators, wgmma_fence=wgmma_fence, wgmma_commit=wgmma_commit, fence_proxy_async=fence_proxy_async,
                           zero_accumulators=zero_accumulators, shared_address=shared_address,
                           mma=wgmma_m64nNk8, mma_register_a=wgmma_m64nNk8_register_a,
                           wait_all=wgmma_wait_all, wait_one=wgmma_wait_one, store_accumulators=store_accumulators,
                           ACCUMULATORS=ACCUMULATORS)


def build(BLOCK_M: int = 64, BLOCK_N: int = 128, B_TRANSPOSED: bool = False, PIPELINED: bool = False):
    """The kernel and its launch for one tile (imported on a GPU only: the intrinsics are inline PTX).

    ``B_TRANSPOSED``: a diagnostic — the kernel reads Bᵀ (N×K, row-major) with 16-byte copies instead of transposing
    B with 4-byte ones; its launch transposes B once per B it is given, outside any timed launch after the first.
    ``PIPELINED``: each k-tile's ``wgmma`` stay in flight while the next k-tile's are issued (``wait_group 1``), with
    4 stages and copies two k-tiles ahead, so the stage a ``wgmma`` may still be reading is never the one refilled."""
    STAGES = 4 if PIPELINED else 3
    LOAD_AHEAD = STAGES - 2 if PIPELINED else STAGES - 1  # how many k-tiles the copies run ahead of the mma
    THREADS = 128 * (BLOCK_M // 64)  # one warpgroup per 64 rows
    A_STAGE, B_STAGE = BLOCK_M * BLOCK_K, BLOCK_N * BLOCK_K  # floats per pipeline stage
    SHARED_BYTES = STAGES * (A_STAGE + B_STAGE) * 4
    ops = intrinsics(BLOCK_N)
    (wgmma_fence, wgmma_commit, fence_proxy_async, zero_accumulators, shared_address, wgmma_m64nNk8,
     wgmma_wait_all, wgmma_wait_one, store_accumulators) = (
        ops.wgmma_fence, ops.wgmma_commit, ops.fence_proxy_async, ops.zero_accumulators, ops.shared_address, ops.mma,
        ops.wait_all, ops.wait_one, ops.store_accumulators)
    from numba import cuda, float32, uint32, uint64

    from gemm_steps.toolkit.intrinsics import copy_async
    from gemm_steps.toolkit.tensor_core_ops import copy_async_commit, copy_async_wait

    @cuda.jit(device=True, inline=True)
    def chunk_of(chunk):
        """(row, 16-byte chunk along k) of a K-major copy: 8 consecutive threads take the 8 rows of one core matrix,
        so their 16-byte stores fill 128 contiguous bytes (all 32 banks) instead of landing 128 B apart."""
        row_in_group, rest = chunk % 8, chunk // 8
        return rest // (BLOCK_K // 4) * 8 + row_in_group, rest % (BLOCK_K // 4)

    @cuda.jit(launch_bounds=(THREADS, 1))
    def wgmma_tf32_kernel(a, b, c, m, n, k):
        """One BLOCK_M × BLOCK_N tile of C = A·B, 64 rows per warpgroup; flat row-major float32, full tiles only."""
        tiles = cuda.shared.array(0, float32)  # STAGES stages of A, then STAGES of B, each in core-matrix order
        tid = uint32(cuda.threadIdx.x)
        m, n, k = uint32(m), uint32(n), uint32(k)
        block_row = uint32(cuda.blockIdx.y) * BLOCK_M
        block_col = uint32(cuda.blockIdx.x) * BLOCK_N
        group = tid // 128  # this thread's warpgroup: rows 64·group … of the tile
        base = shared_address(tiles, 0)
        b_base = uint32(STAGES * A_STAGE)
        offsets = (uint64(LBO >> 4) << uint64(16)) | (uint64(SBO >> 4) << uint64(32))
        acc = zero_accumulators()
        k_tiles = k // BLOCK_K
        for t in range(k_tiles + LOAD_AHEAD):
            copy_async_wait(1)  # LOAD_AHEAD - 1: all but the newest copy group of this thread have landed
            fence_proxy_async()  # this thread's landed copies, made visible to the async proxy (wgmma)
            cuda.syncthreads()
            if t < k_tiles:
                stage = uint32(t % STAGES)
                k0 = uint32(t) * BLOCK_K
                for q in range(A_STAGE // 4 // THREADS):  # A: 16-byte chunks, already K-major
                    chunk = tid + uint32(q * THREADS)
                    row, kc = chunk_of(chunk)
                    copy_async(tiles, stage * A_STAGE + row // 8 * (BLOCK_K * 8) + kc * 32 + row % 8 * 4,
                               a, (block_row + row) * k + k0 + kc * 4, 4)
                if B_TRANSPOSED:  # b is Bᵀ (N×K): 16-byte chunks, already K-major, like A
                    for q in range(B_STAGE // 4 // THREADS):
                        chunk = tid + uint32(q * THREADS)
                        col, kc = chunk_of(chunk)
                        copy_async(tiles, b_base + stage * B_STAGE + col // 8 * (BLOCK_K * 8) + kc * 32 + col % 8 * 4,
                                   b, (block_col + col) * k + k0 + kc * 4, 4)
                else:
                    for q in range(B_STAGE // THREADS):  # B: one float each, transposed to [col][k]
                        e = tid + uint32(q * THREADS)
                        # a warp: 8 columns × 4 k of one core matrix, so its 32 stores hit 32 banks
                        rest = e // 32
                        kk = rest % (BLOCK_K // 4) * 4 + e % 4
                        col = rest // (BLOCK_K // 4) * 8 + e // 4 % 8
                        copy_async(tiles, b_base + stage * B_STAGE + col // 8 * (BLOCK_K * 8) + kk // 4 * 32
                                   + col % 8 * 4 + kk % 4, b, (k0 + kk) * n + block_col + col, 1)
            copy_async_commit()
            if t >= LOAD_AHEAD:
                stage = uint32((t - LOAD_AHEAD) % STAGES)
                a_address = base + stage * (A_STAGE * 4) + group * (8 * SBO)  # its 64 rows: 8 core-matrix rows
                b_address = base + (b_base + stage * B_STAGE) * 4
                wgmma_fence()
                for step in range(BLOCK_K // 8):  # k-steps of 8: two core matrices along K each
                    desc_a = (uint64((a_address + step * 2 * LBO) & uint32(0x3FFFF)) >> uint64(4)) | offsets
                    desc_b = (uint64((b_address + step * 2 * LBO) & uint32(0x3FFFF)) >> uint64(4)) | offsets
                    acc = wgmma_m64nNk8(desc_a, desc_b, acc)
                wgmma_commit()
                if PIPELINED:
                    acc = wgmma_wait_one(acc)  # the previous k-tile's wgmma are done; this one's may still run
                else:
                    acc = wgmma_wait_all(acc)
        acc = wgmma_wait_all(acc)
        warp, lane = tid % 128 // 32, tid % 32
        store_accumulators(c, acc, block_row + group * 64 + warp * 16 + lane // 4, block_col + lane % 4 * 2, n,
                           uint32(1))

    opted_in = set()
    transposed = {}  # B_TRANSPOSED: device pointer of B → its transpose (made once, on the first launch)

    def launch(a, b, c, stream=0):
        m, n, k = full_tile_shape(a, b, BLOCK_M, BLOCK_N, BLOCK_K)
        opt_in_shared(wgmma_tf32_kernel, SHARED_BYTES, opted_in)
        if B_TRANSPOSED:
            key = b.device_ctypes_pointer.value
            if key not in transposed:
                transposed.clear()
                transposed[key] = cuda.to_device(np.ascontiguousarray(b.copy_to_host().T))
            b = transposed[key]
        wgmma_tf32_kernel[(n // BLOCK_N, m // BLOCK_M), THREADS, stream, SHARED_BYTES](
            a.reshape(m * k), b.reshape(k * n), c.reshape(m * n), m, n, k)

    return wgmma_tf32_kernel, launch


def sass_counts(kernel, ops=("HGMMA", "LDGSTS", "LDS", "BAR")) -> dict:
    """How many SASS instructions of the compiled kernel start with each of ``ops``, and its registers (needs
    nvdisasm; without it, why not)."""
    try:
        compiled = next(iter(kernel.overloads.values()))
        text = compiled.inspect_sass()
        mnemonics = [line.split("*/", 1)[1].split()[0] for line in text.splitlines() if "*/" in line and ";" in line]
        found = {op: sum(m.startswith(op) for m in mnemonics) for op in ops}
        found["registers"] = compiled.regs_per_thread
        return found
    except Exception as exc:  # nvdisasm missing: say so
        return {"unavailable": str(exc)}


def profile(size: int = 4096) -> None:
    """Two launches of the pipelined 128×256 build at ``size``³, for Nsight Compute:
    ncu --kernel-name regex:wgmma_tf32_kernel --launch-skip 1 --launch-count 1 --section SpeedOfLight \
        --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
        --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum \
        python -m experiments.wgmma_gemm --profile"""
    from numba import cuda

    _, launch = build(128, 256, PIPELINED=True)
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), dtype=np.float32)
    for _ in range(2):
        launch(a, b, c)
    cuda.synchronize()


def main() -> None:
    if sys.argv[1] == "--profile":
        profile()
        return
    import gemm_steps
    from numba import cuda

    from gemm_steps.harness.bench import run_benchmark, save
    from gemm_steps.toolkit.tensor_core_ops import round_to_tf32, truncate_to_tf32

    builds = {f"wgmma_tf32 {m}x{n}": build(m, n) for m, n in TILES}
    builds["wgmma_tf32 128x256, B given transposed"] = build(128, 256, B_TRANSPOSED=True)
    builds["wgmma_tf32 128x256, pipelined"] = build(128, 256, PIPELINED=True)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 64), dtype=np.float32)
    b = rng.standard_normal((64, 512), dtype=np.float32)
    truncated = [truncate_to_tf32(x).astype(np.float64) for x in (a, b)]
    reference = truncated[0] @ truncated[1]
    checks, sass = {}, {}
    for name, (kernel, launch) in builds.items():
        c = cuda.to_device(np.full((256, 512), np.nan, np.float32))
        launch(cuda.to_device(a), cuda.to_device(b), c)
        got = c.copy_to_host()
        checks[name] = {"shape": [256, 512, 64], "unwritten": int(np.isnan(got).sum()),
                        "max_rel_error_vs_truncated_inputs":
                            float(np.nanmax(np.abs(got - reference)) / np.abs(reference).max()),
                        "rel_error_vs_rounded_inputs": float(np.linalg.norm(
                            got - round_to_tf32(a).astype(np.float64) @ round_to_tf32(b).astype(np.float64))
                            / np.linalg.norm(reference))}
        print(name, json.dumps(checks[name]), flush=True)
        sass[name] = sass_counts(kernel, ("HGMMA", "LDGSTS", "BAR"))
    entries = [gemm_steps.get_step("tensor_cores")] + [
        SimpleNamespace(name=name, number=12, launch=launch, arithmetic="tf32")
        for name, (_, launch) in builds.items()]  # judged by the TF32 tolerance, like step 12 (verify.arithmetic_of)
    sizes = [(s, s, s) for s in (2048, 4096, 8192)]
    results = run_benchmark(entries, sizes, repeats=20, include_cublas_tf32=True,
                            progress=lambda message: print(message, flush=True))
    results.update(experiment="wgmma TF32 GEMM (first version)", checks=checks, sass=sass,
                   tiles=TILES, block_k=BLOCK_K)
    save(results, sys.argv[1])
    for r in results["records"]:
        print(f"{r['M']:5d} {r['step']:26s} {r.get('tflops', 0):7.1f} TFLOPS {r.get('pct_of_cublas') or 0:6.1f} % "
              f"error {r.get('sampled_rel_error_fp64', float('nan')):.1e}", flush=True)
    print(json.dumps(sass), flush=True)


if __name__ == "__main__":
    main()
