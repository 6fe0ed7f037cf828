"""Where a kernel's compile time goes: Numba's passes timed one by one (grouped), NVVM and ``ptxas`` apart, with and
without the patches of :mod:`gemm_steps.toolkit.numba_patches` (lesson 7's deep dive, ``07_compile_time``).

:func:`profile_compile` runs :func:`profile_compile_here` in a GPU-mode child (NVVM compiles on the CPU, no GPU
needed); :func:`compile_profile_table` shows its result.
"""

from __future__ import annotations

import time

from gemm_steps.harness import gpu_mode
from gemm_steps.harness.ptx import compile_options
from gemm_steps.harness.step import get_step

from .display import MarkdownTable, as_step

# -- the passes, grouped ----------------------------------------------------------------------------------------
#: How :func:`profile_compile` groups Numba's passes (by the passes' own names; the rest are "other Numba passes").
PASS_GROUPS = {"reconstruct_ssa": "SSA reconstruction", "nopython_type_inference": "type inference",
               "strip_phis": "stripping phi nodes", "cuda_native_lowering": "lowering to LLVM IR",
               "native_lowering": "lowering to LLVM IR", "cuda_backend": "lowering to LLVM IR"}
_FRONT = ("extract_bytecode", "translate_bytecode", "cuda_translate_bytecode", "fixup_args", "ir_processing",
          "with_lifting", "inline_closure_likes", "rewrite_semantic_constants", "dead_branch_prune",
          "generic_rewrites", "make_function_op_code_to_jit_function", "inline_inlinables", "find_literally",
          "literal_unroll", "LiteralPropagation", "PropagateLiterals", "simplify_cfg", "canonicalize_loop_exit",
          "canonicalize_loop_entry", "iter_loop_canonicalisation", "transform_literal_unroll_const_list_to_tuple",
          "mixed_container_unroller", "dead_code_elimination")
GROUP_ORDER = ["bytecode → Numba IR and rewrites", "SSA reconstruction", "type inference", "stripping phi nodes",
               "lowering to LLVM IR", "other Numba passes", "NVVM: LLVM IR → PTX"]


def _group(name: str) -> str:
    return PASS_GROUPS.get(name) or ("bytecode → Numba IR and rewrites" if name in _FRONT else "other Numba passes")


def _timed_compile(dispatcher, signature: str) -> tuple[str, dict, float]:
    """Compile one kernel to PTX with each Numba pass and NVVM timed: (ptx, seconds per group, total seconds)."""
    from numba import cuda
    from numba.cuda.core import compiler_machinery
    from numba.cuda.cudadrv import nvvm

    spent: dict[str, float] = {}
    inside: list = []  # the passes running now, outermost first (a pass may run a pipeline of its own)
    original_run, original_nvvm = compiler_machinery.PassManager._runPass, nvvm.compile_ir

    def run_pass(self, index, pss, state):
        group = _group(pss.name())
        inside.append(group)
        start = time.perf_counter()
        try:
            return original_run(self, index, pss, state)
        finally:
            inside.pop()
            if not inside:  # time only the outermost pass: a nested one is part of it
                spent[group] = spent.get(group, 0.0) + time.perf_counter() - start

    def compile_ir(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original_nvvm(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            spent["NVVM: LLVM IR → PTX"] = spent.get("NVVM: LLVM IR → PTX", 0.0) + seconds
            if inside:  # NVVM ran inside a pass: count it once, as NVVM
                spent[inside[0]] = spent.get(inside[0], 0.0) - seconds

    compiler_machinery.PassManager._runPass, nvvm.compile_ir = run_pass, compile_ir
    try:
        start = time.perf_counter()
        ptx, _ = cuda.compile(dispatcher.py_func, signature, device=False, abi="numba", cc=(9, 0), output="ptx",
                              **compile_options(dispatcher))
        total = time.perf_counter() - start
    finally:
        compiler_machinery.PassManager._runPass, nvvm.compile_ir = original_run, original_nvvm
    return ptx, spent, total


def profile_compile_here(step: str, variant: str = "fast") -> dict:
    """In a GPU-mode process: one kernel compiled to PTX with the patches and without, each pass timed;
    ``ptxas`` (nvJitLink) timed on the result; whether the two PTX are the same code."""
    from gemm_steps.harness.ptx import compile_kernel_ptx, ptxas_info
    from gemm_steps.toolkit import numba_patches

    from .compiled import _same_code

    compile_kernel_ptx(*get_step("register_1d").kernels()["register_1d"])  # NVVM start-up, libdevice: not timed
    dispatcher, signature = get_step(step).kernels()[f"{step}_{variant}"]
    out = {"step": step, "kernel": f"{step}_{variant}", "lines": len(get_step(step).generated_source().splitlines())}
    ptx = {}
    for patched in (True, False):
        numba_patches.apply() if patched else numba_patches.remove()
        ptx[patched], spent, total = _timed_compile(dispatcher, signature)
        out["with" if patched else "without"] = {"groups": spent, "total_s": total}
    numba_patches.apply()
    start = time.perf_counter()
    info = ptxas_info(ptx[True])
    out["ptxas_s"], out["ptxas"] = time.perf_counter() - start, info.get("ptxas")
    out["same_ptx"] = _same_code(ptx[True], ptx[False])
    out["statements"] = sum(1 for line in ptx[True].splitlines() if line.strip().endswith(";"))
    return out


def profile_compile(step, variant: str = "fast") -> dict:
    """:func:`profile_compile_here` from any process (a fresh GPU-mode child compiles, so nothing compiled before
    helps; no GPU needed)."""
    return gpu_mode.call("gemm_steps.course.compile_profile:profile_compile_here", as_step(step).name, variant,
                         timeout=1200, fresh=True)


def compile_profile_table(profile: dict) -> MarkdownTable:
    """Seconds per group of passes, with the patches and without, each group's share of the patched compile, the
    totals, ``ptxas``; and whether the two PTX are the same code."""
    with_, without = profile["with"], profile["without"]
    lines = ["| where the time goes | with the patches | share | without them |", "|:--|--:|--:|--:|"]
    for group in GROUP_ORDER:
        a, b = with_["groups"].get(group), without["groups"].get(group)
        if a is not None or b is not None:
            lines.append(f"| {group} | {a or 0:.2f} s | {(a or 0) / with_['total_s']:.0%} | {b or 0:.2f} s |")
    lines.append(f"| **compile to PTX, in all** | **{with_['total_s']:.2f} s** | | **{without['total_s']:.2f} s** |")
    if profile.get("ptxas"):
        lines.append(f"| then `ptxas` ({profile['ptxas']}), PTX → machine code | {profile['ptxas_s']:.2f} s | | |")
    lines.append(f"| the same PTX with and without the patches | {'yes' if profile['same_ptx'] else '**no**'} | | |")
    return MarkdownTable("\n".join(lines))
