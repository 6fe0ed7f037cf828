"""Can a Numba kernel drive Hopper's warpgroup MMA (``wgmma``)? A probe of one instruction (issue: tensor cores,
stretch item).

Steps 12–13 use ``mma.sync`` (a warp, 16×8×8, operands in registers). cuBLAS TF32 reaches ~380 TFLOPS on an H100
with ``wgmma.mma_async``: a *warpgroup* (4 warps, 128 threads) multiplies a 64×N×8 TF32 tile whose operands it reads
straight from shared memory, described by 64-bit *matrix descriptors*; TF32 needs both operands K-major (A as
[row][k], B as [col][k]). It needs ``sm_90a``: numba-cuda 0.30 compiles for ``sm_90a`` on a device of compute
capability 9.0 (docs/tensor_cores.md), so the PTX should build.

This probe runs ONE ``wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32`` on a 64×8 A and an 8×8 B in shared memory,
in the no-swizzle layout (8×16-byte "core matrices"), for each of four (layout, descriptor) combinations: the
core matrices adjacent in K either 128 B apart (and those adjacent in M/N 256 B apart) or the other way round, and
the descriptor's two offsets (LBO, SBO) given either way. The PTX ISA says LBO is the distance between core
matrices adjacent in K and SBO between those adjacent in M/N; the combination that matches NumPy (float64 sums of
the inputs as the tensor core reads them: raw float32 with the 13 low bits dropped) checks that reading. Each lane's four results are stored by the documented accumulator layout
(warp w of the group holds rows 16w … 16w + 15, lane (group, pair) rows group / group + 8, columns 2·pair, 2·pair + 1),
so a wrong layout shows as a wrong product, not as a crash.

Not a course step and no simulator twin: a GPU-only experiment. Usage on an H100/H200:
    python -m experiments.wgmma_probe OUT.json
"""

from __future__ import annotations

import json
import sys

import numpy as np


def build():
    from llvmlite import ir
    from numba import cuda, float32, types, uint32, uint64
    from numba.cuda.extending import intrinsic

    _F32, _I32, _I64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)

    def _void_asm(text):
        @intrinsic
        def emit(typingctx):
            def codegen(context, builder, sig, args):
                builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}", side_effect=True), [])
                return context.get_dummy_value()

            return types.void(), codegen

        return emit

    wgmma_fence = _void_asm("wgmma.fence.sync.aligned;")
    wgmma_commit = _void_asm("wgmma.commit_group.sync.aligned;")
    fence_proxy_async = _void_asm("fence.proxy.async.shared::cta;")

    @intrinsic
    def shared_address(typingctx, array, index):
        """The 32-bit shared-window address of ``array[index]`` (``cvta.to.shared``)."""
        def codegen(context, builder, sig, args):
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            index = builder.sext(args[1], _I64) if args[1].type.width < 64 else args[1]
            pointer = builder.gep(data, [index], inbounds=True)
            generic = builder.ptrtoint(builder.addrspacecast(pointer, pointer.type.pointee.as_pointer(0))
                                       if pointer.type.addrspace else pointer, _I64)
            convert = ir.InlineAsm(ir.FunctionType(_I64, [_I64]), "cvta.to.shared.u64 $0, $1;", "=l,l")
            return builder.trunc(builder.call(convert, [generic]), _I32)

        return types.uint32(array, index), codegen

    @intrinsic
    def wgmma_m64n8k8(typingctx, desc_a, desc_b, d0, d1, d2, d3):
        """``wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32``: D = A·B + D (the scale-d predicate true),
        operands from shared memory through the two descriptors; this lane's four accumulators in and out."""
        def codegen(context, builder, sig, args):
            result = ir.LiteralStructType([_F32] * 4)
            asm = ("{ .reg .pred p; setp.ne.b32 p, $6, 0; "
                   "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {$0, $1, $2, $3}, $4, $5, p, 1, 1; }")
            call = ir.InlineAsm(ir.FunctionType(result, [_I64, _I64, _I32] + [_F32] * 4), asm,
                                "=f,=f,=f,=f,l,l,r,0,1,2,3,~{memory}", side_effect=True)
            out = builder.call(call, [args[0], args[1], ir.Constant(_I32, 1), *args[2:]])
            return context.make_tuple(builder, sig.return_type, [builder.extract_value(out, i) for i in range(4)])

        return types.UniTuple(types.float32, 4)(desc_a, desc_b, d0, d1, d2, d3), codegen

    @intrinsic
    def wgmma_wait_all(typingctx, d0, d1, d2, d3):
        """``wgmma.wait_group.sync.aligned 0``, with the accumulators passed through it, so nothing reads them
        before the asynchronous mma has written them."""
        def codegen(context, builder, sig, args):
            result = ir.LiteralStructType([_F32] * 4)
            call = ir.InlineAsm(ir.FunctionType(result, [_F32] * 4), "wgmma.wait_group.sync.aligned 0;",
                                "=f,=f,=f,=f,0,1,2,3,~{memory}", side_effect=True)
            out = builder.call(call, list(args))
            return context.make_tuple(builder, sig.return_type, [builder.extract_value(out, i) for i in range(4)])

        return types.UniTuple(types.float32, 4)(d0, d1, d2, d3), codegen

    @cuda.jit
    def probe(a, b, d, k_apart, mn_apart, lbo, sbo):
        """a: 64×8 (M×K), b: 8×8 (K×N), d: 64×8; core matrices adjacent in K k_apart floats apart, in M/N
        mn_apart floats apart; the descriptors carry (lbo, sbo) bytes."""
        sa = cuda.shared.array(1024, float32)
        sb = cuda.shared.array(512, float32)
        t = cuda.threadIdx.x
        for e in range(t, 512, 128):
            r, c = e // 8, e % 8
            sa[r // 8 * mn_apart + c // 4 * k_apart + r % 8 * 4 + c % 4] = a[r, c]
        for e in range(t, 64, 128):
            n, kk = e // 8, e % 8
            sb[n // 8 * mn_apart + kk // 4 * k_apart + n % 8 * 4 + kk % 4] = b[kk, n]  # B K-major: [col][k]
        cuda.syncthreads()
        fence_proxy_async()  # the generic-proxy stores above, visible to the async proxy wgmma reads with
        # A shared-memory matrix descriptor: start address, LBO and SBO, each in 16-byte units; no swizzle (bits 62-63).
        offsets = (uint64(lbo >> 4) << uint64(16)) | (uint64(sbo >> 4) << uint64(32))
        desc_a = (uint64(shared_address(sa, 0) & uint32(0x3FFFF)) >> uint64(4)) | offsets
        desc_b = (uint64(shared_address(sb, 0) & uint32(0x3FFFF)) >> uint64(4)) | offsets
        wgmma_fence()
        d0, d1, d2, d3 = wgmma_m64n8k8(desc_a, desc_b, float32(0), float32(0), float32(0), float32(0))
        wgmma_commit()
        d0, d1, d2, d3 = wgmma_wait_all(d0, d1, d2, d3)
        warp, lane = t // 32, t % 32
        row, col = warp * 16 + lane // 4, lane % 4 * 2
        d[row, col], d[row, col + 1], d[row + 8, col], d[row + 8, col + 1] = d0, d1, d2, d3

    return probe


COMBINATIONS = [(k_apart, mn_apart, order) for k_apart, mn_apart in ((32, 64), (256, 32))
                for order in ("LBO = K-adjacent, SBO = M/N-adjacent", "LBO = M/N-adjacent, SBO = K-adjacent")]
"""(floats between core matrices adjacent in K, in M/N; how the descriptor names them): K-adjacent 128 B and
M-adjacent 256 B apart, or 1 KiB and 128 B, each with the descriptor's offsets given both ways."""


def run_one(index: int) -> dict:
    """One combination, in this process (a wrong descriptor can fault and poison the context)."""
    from numba import cuda

    from gemm_steps.toolkit.tensor_core_ops import round_to_tf32, truncate_to_tf32

    probe = build()
    k_apart, mn_apart, order = COMBINATIONS[index]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 8), dtype=np.float32)
    b = rng.standard_normal((8, 8), dtype=np.float32)
    expected = round_to_tf32(a).astype(np.float64) @ round_to_tf32(b).astype(np.float64)
    lbo, sbo = (4 * k_apart, 4 * mn_apart) if order.startswith("LBO = K") else (4 * mn_apart, 4 * k_apart)
    row = {"k_adjacent_bytes": 4 * k_apart, "mn_adjacent_bytes": 4 * mn_apart, "descriptor": order,
           "lbo": lbo, "sbo": sbo}
    d = cuda.to_device(np.full((64, 8), np.nan, np.float32))
    probe[1, 128](cuda.to_device(a), cuda.to_device(b), d, k_apart, mn_apart, lbo, sbo)
    got = d.copy_to_host()
    row["unwritten"] = int(np.isnan(got).sum())
    row["max_rel_error"] = float(np.nanmax(np.abs(got - expected)) / np.abs(expected).max())
    # The tensor core reads the top 19 bits of what it is given (no rounding here: the probe passes raw float32).
    truncated = truncate_to_tf32(a).astype(np.float64) @ truncate_to_tf32(b).astype(np.float64)
    row["max_rel_error_vs_truncated_inputs"] = float(np.nanmax(np.abs(got - truncated)) / np.abs(truncated).max())
    if index == 0:
        ptx = next(iter(probe.inspect_asm().values()), "")
        try:
            sass = next(iter(probe.inspect_sass().values()), "")
        except Exception as exc:  # nvdisasm missing: say so
            sass = f"unavailable: {exc}"
        row["ptx_target"] = next((line for line in ptx.splitlines() if line.startswith(".target")), None)
        row["ptx_wgmma"] = [line.strip() for line in ptx.splitlines() if "wgmma.mma_async" in line]
        row["sass_gmma"] = [line.strip() for line in sass.splitlines() if "GMMA" in line][:4]
    return row


def main() -> None:
    import subprocess

    if sys.argv[1] == "--one":
        print(json.dumps(run_one(int(sys.argv[2]))), flush=True)
        return
    from gemm_steps.harness.environment import environment

    rows = []
    for index in range(len(COMBINATIONS)):
        done = subprocess.run([sys.executable, "-m", "experiments.wgmma_probe", "--one", str(index)],
                              capture_output=True, text=True, timeout=300)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        row = json.loads(lines[-1]) if done.returncode == 0 and lines else {
            "combination": COMBINATIONS[index], "error": done.stderr.strip().splitlines()[-1][:400]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(sys.argv[1], "w") as handle:
        json.dump({"experiment": "wgmma probe", "environment": environment(), "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
