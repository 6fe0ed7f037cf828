"""How much does rounding to TF32 cost in the tensor-core steps, and can it be cheaper? (issue: tensor cores)

Nsight Compute counts about 6 instructions per HMMA in steps 12 and 13 (docs/tensor_cores.md), and every fragment
element used to pass through ``to_tf32`` (PTX ``cvt.rna.tf32.f32``) on its way from shared memory to the mma. This
run:

1. dumps the SASS that one ``cvt.rna.tf32.f32`` becomes on this GPU (how many instructions);
2. checks what the tensor core does with the 13 low mantissa bits it is handed: one warp's mma on raw float32
   operands against the same mma on operands with those bits cleared — equal bits mean the hardware ignores them;
3. times variants of steps 12 and 13 against each other and cuBLAS SGEMM / TF32, same run, 4096³ and 8192³, and
   counts each fast kernel's SASS instructions. Each is ``build(config, overrides=…)`` of the shipped kernel
   source, the shipped rounding too, so all launch alike:

   * step 12: ``cvt.rna`` (shipped, ``to_tf32``); the same rounding with the inf/NaN test written three other
     ways — ``testp + add`` (inline PTX), ``ne/ne`` and ``exponent`` (LLVM IR); ``add-and-clear`` (no test:
     unsafe, the GPU's NaN 0x7FFFFFFF becomes −0); ``raw`` (no rounding: the tensor core truncates);
   * step 13: ``split_tf32`` (shipped: add-and-clear for big, small = x − big truncated by the tensor core),
     ``cvt.rna`` (the previous split, both parts by ``to_tf32``), ``small rounded`` (the shipped split with small
     rounded by ``to_tf32``), ``mask`` (both parts truncated, the cheapest);
4. the accuracy of every variant against float64 over K = 64 … 16384 (M = N = 512), on standard-normal inputs and
   on inputs with a wide exponent range (each entry times 2^u, u uniform in −20…20), beside cuBLAS SGEMM and TF32
   (left out with ``--timing-only``).

An earlier version of this script wrote experiment-tf32-conversion-first-nvidia-h100.json (add-and-clear, clear-only and raw
roundings of both steps against cvt.rna, before split_tf32 existed).

Usage, on a GPU from the repository root: python -m experiments.tf32_conversion OUT.json [--timing-only]
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
from llvmlite import ir
from numba import cuda, types
from numba.cuda.extending import intrinsic

from experiments.tensor_cores import whole_product_errors
from gemm_steps.harness.bench import run_benchmark, save
from gemm_steps.harness.cublas import launch_cublas_tf32
from gemm_steps.steps import tensor_cores, three_tf32
from gemm_steps.toolkit.tensor_core_ops import mma_tf32, split_tf32, to_tf32

_F32, _I32 = ir.FloatType(), ir.IntType(32)
_LOW_BITS = (1 << 13) - 1


def _bit_rounding(add: int, name: str):
    """An intrinsic: float32 → (bits + add) with the 13 low bits cleared, as float32."""

    @intrinsic
    def rounding(typingctx, x):
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            bits = builder.bitcast(context.cast(builder, args[0], sig.args[0], types.float32), _I32)
            if add:
                bits = builder.add(bits, ir.Constant(_I32, add))
            bits = builder.and_(bits, ir.Constant(_I32, ~_LOW_BITS & 0xFFFFFFFF))
            return builder.bitcast(bits, _F32)

        return types.float32(x), codegen

    rounding.__name__ = name
    return rounding


truncate_by_mask = _bit_rounding(0, "truncate_by_mask")  # toward zero
round_by_bits = _bit_rounding(1 << 12, "round_by_bits")  # ties away from zero, but NaN 0x7FFFFFFF → -0 (unsafe)


def _finite_add(test: str):
    """An intrinsic: the bits of x plus half a TF32 unit if x is finite (the low 13 bits left for the tensor core to
    drop), with the finiteness test written as ``"testp"``: inline PTX ``testp.finite.f32`` and a predicated add;
    ``"ne"``: x ≠ +inf and x ≠ −inf in LLVM IR (both false for NaN); ``"exponent"``: the exponent bits are not
    all ones."""

    @intrinsic
    def rounding(typingctx, x):
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[0], sig.args[0], types.float32)
            bits = builder.bitcast(value, _I32)
            if test == "testp":
                asm = ("{ .reg .pred finite; testp.finite.f32 finite, $1; mov.b32 $0, $1; "
                       "@finite add.s32 $0, $0, 4096; }")
                return builder.bitcast(builder.call(ir.InlineAsm(ir.FunctionType(_I32, [_F32]), asm, "=r,f"),
                                                    [value]), _F32)
            if test == "ne":
                finite = builder.and_(builder.fcmp_ordered("!=", value, ir.Constant(_F32, float("inf"))),
                                      builder.fcmp_ordered("!=", value, ir.Constant(_F32, float("-inf"))))
            else:
                exponent = builder.and_(bits, ir.Constant(_I32, 0x7F800000))
                finite = builder.icmp_unsigned("!=", exponent, ir.Constant(_I32, 0x7F800000))
            return builder.bitcast(builder.select(finite, builder.add(bits, ir.Constant(_I32, 1 << 12)), bits), _F32)

        return types.float32(x), codegen

    return rounding


finite_add_testp = _finite_add("testp")
finite_add_ne = _finite_add("ne")
finite_add_exponent = _finite_add("exponent")


@cuda.jit(device=True)
def keep_raw(x):
    return x


@cuda.jit(device=True)
def split_with_cvt(x):
    """The previous split: both parts rounded by cvt.rna."""
    big = to_tf32(x)
    return big, to_tf32(x - big)


@cuda.jit(device=True)
def split_small_rounded(x):
    big, small = split_tf32(x)
    return big, to_tf32(small)


@cuda.jit(device=True)
def split_by_mask(x):
    big = truncate_by_mask(x)
    return big, truncate_by_mask(x - big)


@cuda.jit
def _convert(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = to_tf32(x[i])


@cuda.jit
def _one_warp_mma(a, b, d):
    lane = cuda.threadIdx.x
    group, pair = lane // 4, lane % 4
    zero = np.float32(0.0)
    d0, d1, d2, d3 = mma_tf32(a[group, pair], a[group + 8, pair], a[group, pair + 4], a[group + 8, pair + 4],
                              b[pair, group], b[pair + 4, group], zero, zero, zero, zero)
    d[group, 2 * pair] = d0
    d[group, 2 * pair + 1] = d1
    d[group + 8, 2 * pair] = d2
    d[group + 8, 2 * pair + 1] = d3


def conversion_sass() -> dict:
    compiled = _convert.compile((types.float32[::1], types.float32[::1]))
    sass = compiled.inspect_sass()
    body = [line.strip() for line in sass.splitlines() if "/*" in line and ";" in line]
    print("\n".join(body), flush=True)
    return {"sass": body}


def low_bits_check() -> dict:
    rng = np.random.default_rng(1)
    same, trials = 0, 50
    worst_raw_vs_rna = 0.0
    for _ in range(trials):
        a = rng.standard_normal((16, 8)).astype(np.float32)
        b = rng.standard_normal((8, 8)).astype(np.float32)
        cleared = [(x.view(np.uint32) & np.uint32(~_LOW_BITS & 0xFFFFFFFF)).view(np.float32) for x in (a, b)]
        results = []
        for a_in, b_in in ((a, b), cleared):
            d = cuda.device_array((16, 8), np.float32)
            _one_warp_mma[1, 32](cuda.to_device(a_in), cuda.to_device(b_in), d)
            results.append(d.copy_to_host())
        same += int(np.array_equal(results[0].view(np.uint32), results[1].view(np.uint32)))
        exact = a.astype(np.float64) @ b.astype(np.float64)
        worst_raw_vs_rna = max(worst_raw_vs_rna, float(np.abs(results[0] - exact).max() / np.abs(exact).max()))
    out = {"mma_raw_equals_cleared_low_bits": f"{same} of {trials} tiles bit-identical",
           "mma_raw_max_rel_error": worst_raw_vs_rna}
    print(json.dumps(out), flush=True)
    return out


VARIANTS = [("step 12 cvt.rna (shipped)", tensor_cores, {"to_tf32": to_tf32}),
            ("step 12 testp + add (inline PTX)", tensor_cores, {"to_tf32": finite_add_testp}),
            ("step 12 finite test ne/ne (IR)", tensor_cores, {"to_tf32": finite_add_ne}),
            ("step 12 finite test exponent (IR)", tensor_cores, {"to_tf32": finite_add_exponent}),
            ("step 12 add-and-clear (unsafe)", tensor_cores, {"to_tf32": round_by_bits}),
            ("step 12 raw", tensor_cores, {"to_tf32": keep_raw}),
            ("step 13 split_tf32 (shipped)", three_tf32, {"split_tf32": split_tf32}),
            ("step 13 cvt.rna (previous)", three_tf32, {"split_tf32": split_with_cvt}),
            ("step 13 small rounded", three_tf32, {"split_tf32": split_small_rounded}),
            ("step 13 mask", three_tf32, {"split_tf32": split_by_mask})]


def accuracy_sweep(launches: dict) -> list:
    from gemm_steps.harness.cublas import launch_cublas

    launches = {"cublas": launch_cublas, "cublas_tf32": launch_cublas_tf32, **launches}
    rng = np.random.default_rng(11)
    rows = []
    for inputs in ("standard normal", "wide exponent (x 2^u, u in -20..20)"):
        for k in (64, 256, 1024, 4096, 16384):
            a = rng.standard_normal((512, k), dtype=np.float32)
            b = rng.standard_normal((k, 512), dtype=np.float32)
            if inputs.startswith("wide"):
                a = (a * np.exp2(rng.uniform(-20, 20, a.shape))).astype(np.float32)
                b = (b * np.exp2(rng.uniform(-20, 20, b.shape))).astype(np.float32)
            row = {"inputs": inputs, "K": k, **whole_product_errors(launches, a, b)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _sass_counts(compiled) -> dict:
    """Instructions of the fast kernel's SASS, and how many of each kind a rounding can become."""
    try:
        lines = [line for line in compiled.inspect_sass().splitlines() if "/*" in line and ";" in line]
    except Exception as exc:  # nvdisasm missing: say so
        return {"unavailable": str(exc)}
    mnemonics = []
    for line in lines:
        words = line.split("*/", 1)[1].split()
        words = words[1:] if words and words[0].startswith("@") else words  # a predicate guard
        mnemonics.append(words[0].split(".")[0] if words else "")
    counts = {"instructions": len(mnemonics)}
    for op in ("HMMA", "LDS", "FSETP", "ISETP", "IADD3", "LOP3", "SEL", "MOV", "FADD", "NOP"):
        counts[op] = mnemonics.count(op)
    return counts


def main() -> None:
    path = sys.argv[1]
    found = {"sass_of_cvt_rna_tf32": conversion_sass(), "low_bits": low_bits_check()}
    entries, registers, launches = [], {}, {}
    for label, module, overrides in VARIANTS:
        tiled = module.build(module.TUNING.kernels().config, overrides)
        compiled = tiled.kernels["fast"].compile(tiled.signature("fast"))
        registers[label] = {"registers": compiled.regs_per_thread, "sass": _sass_counts(compiled)}
        print(f"{label:36s} {registers[label]}", flush=True)
        entries.append(SimpleNamespace(name=label, number=12 if module is tensor_cores else 13, module=module,
                                       launch=tiled.launch, config=asdict(tiled.config)))
        launches[label] = tiled.launch
    results = run_benchmark(entries, [(4096,) * 3, (8192,) * 3], repeats=20, include_cublas_tf32=True,
                            progress=lambda message: print(message, flush=True))
    if "--timing-only" not in sys.argv:
        found["accuracy"] = accuracy_sweep(launches)
    results.update(experiment="TF32 conversion variants", registers=registers, **found)
    save(results, path)
    for r in results["records"]:
        print(f"{r['M']:5d} {r['step']:32s} {r.get('tflops', 0):7.1f} TFLOPS {r.get('pct_of_cublas') or 0:6.1f} % "
              f"error {r.get('sampled_rel_error_fp64', float('nan')):.2e}", flush=True)


if __name__ == "__main__":
    main()
