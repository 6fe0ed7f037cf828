"""Lesson 7's helpers (unrolling at compile time, autotuning), shared with its deep dive
(``lessons/deep_dives/07_compile_time.py``).

* **The picture** — :func:`mix_figure`: the k-loop's PTX instructions per FMA of two kernels, stacked by kind
  (what the unrolling removes).
* **The prediction and the verdict** — :func:`prediction` (the issue model from the compiled code),
  :func:`verdict` (the measurement against it).
* **The tuning sweep** — :func:`sweep_figure` (every configuration against cuBLAS, with the noise band),
  :func:`sweep_findings` (what the sweep says about ``BLOCK_K`` and about the occupancy hint, computed from its
  records; the rule's choice and the shipped ``tuned.json``).
* **Registers, by compiler** — :func:`compile_with_registers` (in a GPU-mode child: steps 6 and 7 as
  :func:`gemm_steps.course.compiled.compile_kernels` gives them, step 7 also without its occupancy hint, each
  through the ``ptxas`` inside nvJitLink and the ``ptxas`` on this machine's PATH), :func:`register_table` (those
  against Nsight Compute's count on the GPU host).
* **Compile time** (the deep dive) — :func:`profile_compile` (in a GPU-mode child: Numba's passes timed one by one,
  NVVM and ``ptxas`` apart, with and without the four patches of :mod:`gemm_steps.toolkit.numba_patches`),
  :func:`compile_profile_table`, :func:`first_call_table` (the shipped first-call runs).

Every interpreting sentence is computed here from the compiled code or the shipped files, so the prose cannot
drift from the numbers.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from dataclasses import asdict, replace
from pathlib import Path

from gemm_steps.harness.step import get_step
from gemm_steps.harness.ptx import in_gpu_mode

from . import profiles
from .compiled import MIX_CLASSES, blocks_per_sm, fmas_per_k_tile, k_loop_mix, local_ptxas, threads_per_block
from .display import MarkdownTable, as_step
from .sweeps import config_label, same_config, sweep_records
from .timings import fp32_peak_tflops, headline_size, record, shown_path, size_label


# -- the picture ---------------------------------------------------------------------------------------------------
def mix_figure(compiled: dict):
    """The k-loop of each compiled kernel as one bar: PTX instructions per FMA, stacked by kind."""
    from matplotlib.figure import Figure

    labels, mixes = [], []
    for label, entry in compiled.items():
        mix = k_loop_mix(entry["ptx"], fmas_per_k_tile(get_step(entry["step"])))
        if mix is not None:
            labels.append(label)
            mixes.append(mix)
    fig = Figure(figsize=(8, 0.7 * len(labels) + 1.6), layout="constrained")
    ax = fig.subplots()
    left = [0.0] * len(labels)
    for kind in MIX_CLASSES:
        widths = [mix.get(kind, 0.0) for mix in mixes]
        if any(widths):
            ax.barh(labels, widths, left=left, label=kind)
            left = [a + b for a, b in zip(left, widths)]
    for y, total in enumerate(left):
        ax.annotate(f"{total:.2f}", (total, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=9)
    ax.invert_yaxis()
    ax.set(xlabel="PTX instructions per FMA in the k-loop (1.00 = nothing but FMAs)",
           title="What the k-loop issues per FMA, from the compiled PTX")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    return fig


# -- the prediction and the verdict --------------------------------------------------------------------------------
def _per_fma(compiled: dict) -> dict[str, float]:
    return {e["step"]: sum(k_loop_mix(e["ptx"], fmas_per_k_tile(get_step(e["step"]))).values())
            for e in compiled.values()}


def prediction(results: dict, compiled: dict, before, after) -> dict:
    """The issue model: instructions per FMA in the k-loop → an issue ceiling; step ``before``'s share of its own
    ceiling carried over to ``after``. Returns the numbers and ``"text"``."""
    before, after = as_step(before), as_step(after)
    per_fma = _per_fma(compiled)
    peak = fp32_peak_tflops(results)
    issue = {name: peak / x for name, x in per_fma.items()}
    size = headline_size(results, [before.name, after.name])
    first = record(results, before.name, size)
    share = first["tflops"] / issue[before.name]
    ratio = issue[after.name] / issue[before.name]
    config = after.config
    text = (
        f"Instructions per FMA fall from {per_fma[before.name]:.2f} to **{per_fma[after.name]:.2f}**, so the issue "
        f"ceiling (the FP32 peak divided by instructions per FMA) rises from {issue[before.name]:.1f} to "
        f"**{issue[after.name]:.1f} TFLOPS**. Step 6 ran at {share:.0%} of its issue ceiling at {size_label(size)}; "
        f"if step 7 keeps that share, expect **{share * issue[after.name]:.1f} TFLOPS, {ratio:.2f}× step 6**.\n\n"
        f"Two other things changed with the tiles step 7 is built with: `BLOCK_K = {config['BLOCK_K']}` (step 6: "
        f"{before.config['BLOCK_K']}) and an occupancy hint, `MIN_BLOCKS_PER_SM = "
        f"{config.get('MIN_BLOCKS_PER_SM', 0)}`. The model counts neither; the tuning sweep below measures each.")
    return {"per_fma": per_fma, "issue": issue, "size": size, "before": first, "share": share, "ratio": ratio,
            "names": (before.name, after.name), "text": text}


def verdict(results: dict, predicted: dict) -> str:
    """The measurement against the issue model's prediction."""
    before, after = predicted["names"]
    size, issue, share = predicted["size"], predicted["issue"], predicted["share"]
    now = record(results, after, size)
    speedup = predicted["before"]["median_ms"] / now["median_ms"]
    ratio = predicted["ratio"]
    reached = now["tflops"] / issue[after]
    text = (f"At {size_label(size)} step 7 runs at **{now['tflops']:.2f} TFLOPS, {now['pct_of_cublas']:.1f} % of "
            f"cuBLAS: {speedup:.2f}× step 6**, against {ratio:.2f}× predicted by the issue model. It reaches "
            f"{reached:.0%} of its issue ceiling, where step 6 reached {share:.0%}. ")
    if speedup >= 0.95 * ratio:
        text += "The issue model predicted well: the instructions around the FMAs were what held step 6 back."
    elif speedup >= 0.85 * ratio:
        text += (f"A gain of {speedup - 1:.0%} where {ratio - 1:.0%} was predicted: most of it, not all. The "
                 "instructions around the FMAs were most of what held step 6 back, but step 7 reaches a smaller "
                 "share of its own ceiling, so issue slots are no longer the only thing it waits for.")
    else:
        text += (f"A gain of {speedup - 1:.0%} where {ratio - 1:.0%} was predicted. Removing instructions helped, "
                 "but less than their number suggests: step 7 reaches a smaller share of its own ceiling, so issue "
                 "slots are no longer the only thing it waits for. The next lesson finds what else it waits for.")
    if "config" not in now:
        text += ("\n\n(This results file does not record which tile configuration each step ran with; the tables "
                 "here describe the configuration this notebook compiled, the first of the search space.)")
    return text


# -- the tuning sweep ------------------------------------------------------------------------------------------------
def sweep_figure(sweep: dict):
    """Every configuration of a sweep as % of cuBLAS (same run), the chosen one in green, the noise band dotted."""
    from matplotlib.figure import Figure

    from gemm_steps.harness import tuning
    from gemm_steps.harness.environment import short_label

    records = sweep_records(sweep)
    best, fastest = tuning.choose_best(records), min(records, key=lambda r: r["median_ms"])
    ordered = sorted(records, key=lambda r: r["median_ms"])
    fig = Figure(figsize=(8, 0.45 * len(ordered) + 1.5), layout="constrained")
    ax = fig.subplots()
    ax.barh([config_label(r["config"]) for r in ordered], [r["pct_of_cublas"] for r in ordered],
            color=["tab:green" if r is best else "tab:blue" for r in ordered])
    ax.axvline(100 * fastest["cublas_median_ms"] / (fastest["median_ms"] * (1 + tuning.NOISE)), color="k", ls=":",
               label=f"{tuning.NOISE:.0%} slower than the fastest: the noise band")
    ax.invert_yaxis()
    shape = size_label(tuple(best[d] for d in "MNK"))
    ax.set(xlabel="% of cuBLAS (same run)", title=f"Autotuning step 7 at {shape}\n{short_label(sweep['environment'])}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def _find(records: list[dict], **fields) -> dict | None:
    """The record whose configuration has these fields (others as in the 128×128, 8×8 tile; absent hint = 0)."""
    return next((r for r in records if all(r["config"].get(key, 0) == value for key, value in fields.items())), None)


def _versus(slower: dict, faster: dict) -> float:
    return slower["median_ms"] / faster["median_ms"] - 1


def sweep_findings(sweep: dict, step) -> str:
    """What the sweep says, from its records: ``BLOCK_K`` 8 against 16 and the occupancy hint, each with everything
    else equal; the rule's choice; what ``gemm_steps/toolkit/tuned.json`` records; what this notebook built."""
    from gemm_steps.harness import tuning
    from gemm_steps.toolkit.tuned import SHIPPED_TABLE

    step = as_step(step)
    records = sweep_records(sweep)
    best, fastest = tuning.choose_best(records), min(records, key=lambda r: r["median_ms"])
    base = {key: step.config[key] for key in ("BLOCK_M", "BLOCK_N", "THREAD_M", "THREAD_N")}
    hint = step.config.get("MIN_BLOCKS_PER_SM", 0)
    k8, k16 = _find(records, **base, BLOCK_K=8, MIN_BLOCKS_PER_SM=0), _find(records, **base, BLOCK_K=16,
                                                                           MIN_BLOCKS_PER_SM=0)
    k16_hint = _find(records, **base, BLOCK_K=16, MIN_BLOCKS_PER_SM=hint) if hint else None
    k8_hint = _find(records, **base, BLOCK_K=8, MIN_BLOCKS_PER_SM=hint) if hint else None
    lines = []
    if k8 and k16:
        gap = abs(k8["median_ms"] / k16["median_ms"] - 1)
        quicker = "8" if k8["median_ms"] < k16["median_ms"] else "16"
        lines.append(
            f"* **`BLOCK_K` 8 against 16**, no hint, same tiles otherwise: {k8['median_ms']:.3f} ms against "
            f"{k16['median_ms']:.3f} ms. `BLOCK_K = {quicker}` is quicker by {gap:.1%}: "
            + (f"within the {tuning.NOISE:.0%} noise band, a tie. Halving the barriers per FMA bought nothing "
               "measurable." if gap <= tuning.NOISE else "more than the noise band."))
    if k16 and k16_hint:
        lines.append(
            f"* **The occupancy hint** (`MIN_BLOCKS_PER_SM = {hint}`), `BLOCK_K = 16` both: {k16['median_ms']:.3f} ms "
            f"→ {k16_hint['median_ms']:.3f} ms, **{_versus(k16, k16_hint):.1%} faster**, "
            + ("beyond the noise band. This is where the tuned configuration's lead comes from."
               if _versus(k16, k16_hint) > tuning.NOISE else "within the noise band."))
    if k16_hint and not k8_hint:
        lines.append(f"* The sweep has no `BLOCK_K = 8` run *with* the hint, so it cannot say whether "
                     f"{config_label({**base, 'BLOCK_K': 8, 'MIN_BLOCKS_PER_SM': hint})} would tie with the winner.")
    within = [r for r in records if r["median_ms"] <= fastest["median_ms"] * (1 + tuning.NOISE)]
    lines.append(f"* Fastest: {config_label(fastest['config'])}, {fastest['median_ms']:.3f} ms; within "
                 f"{tuning.NOISE:.0%} of it: {len(within)} configuration{'s' if len(within) > 1 else ''}, so the rule "
                 f"picks **{config_label(best['config'])}**. Best to worst: "
                 f"{max(r['median_ms'] for r in records) / fastest['median_ms'] - 1:.0%} apart.")
    gpu = sweep["environment"]["gpu"]
    tuned = json.loads(SHIPPED_TABLE.read_text()).get(gpu, {}).get(step.name)
    if tuned is None:
        lines.append(f"* `gemm_steps/toolkit/tuned.json` records nothing for step 7 on the {gpu}.")
    else:
        agrees = same_config(tuned["config"], best["config"])
        lines.append(f"* `gemm_steps/toolkit/tuned.json` records {config_label(tuned['config'])} for the {gpu} "
                     f"(from `{tuned['file']}`): "
                     + ("the same." if agrees else "not the rule's pick (a newer sweep?)."))
    first = asdict(step.module.SEARCH_SPACE[0])
    lines.append(f"* This notebook's kernels are the first entry of the search space, {config_label(first)}.")
    return "\n".join(lines)


# -- registers, by compiler ------------------------------------------------------------------------------------------
def compile_here(before: str, after: str) -> dict:
    """In a GPU-mode process: :func:`gemm_steps.course.compiled.compile_here` for the fast kernels of ``before``
    and ``after``, plus ``after``'s fast kernel built without its occupancy hint (``<after>_fast_no_hint``); each
    entry also gets ``"local_ptxas"`` (registers from the ``ptxas`` on this machine)."""
    from gemm_steps.harness.ptx import compile_kernel_ptx, ptx_stats, ptxas_info
    from gemm_steps.toolkit.tiles import TileConfig

    from .compiled import compile_here as compile_steps

    out = compile_steps([before, after], "fast", False, [])
    module = importlib.import_module(f"gemm_steps.steps.{after}")
    fields = {key: value for key, value in get_step(after).config.items() if key in TileConfig.__dataclass_fields__}
    config = replace(TileConfig(**fields), MIN_BLOCKS_PER_SM=0)
    dispatcher, signature = module.build(config).ptx_kernels()[f"{after}_fast"]
    ptx = compile_kernel_ptx(dispatcher, signature)
    shared = out[f"{after}_fast"]["shared_bytes"]
    out[f"{after}_fast_no_hint"] = {"step": after, "ptx": ptx, "stats": ptx_stats(ptx), "shared_bytes": shared,
                                    "registers": None, "spill_bytes": None, "ptxas": None, **ptxas_info(ptx),
                                    "no_hint": True}
    for entry in out.values():
        entry["local_ptxas"] = local_ptxas(entry["ptx"])
    return out


def compile_with_registers(before, after) -> dict:
    """:func:`compile_here` from any process (a GPU-mode child compiles; no GPU needed)."""
    return in_gpu_mode("gemm_steps.course.lesson_07:compile_here", as_step(before).name, as_step(after).name,
                       timeout=900)


def register_table(compiled: dict, results: dict | None) -> MarkdownTable:
    """Registers per thread of each compiled kernel, from each compiler that produced a count: the driver's JIT on
    the GPU host (the shipped Nsight Compute report), ``ptxas`` in nvJitLink and ``ptxas`` here; and the blocks per
    SM that each count allows (NVIDIA's occupancy rules: a calculation)."""
    jit = next((e["ptxas"] for e in compiled.values() if e.get("ptxas")), "nvJitLink")
    local = next((e["local_ptxas"]["version"] for e in compiled.values() if e.get("local_ptxas")), None)
    lines = [f"| kernel | Nsight Compute (driver JIT, GPU host) | ptxas in {jit} | {local or 'ptxas here'} "
             "| blocks (warps) per SM at that count |", "|:--|--:|--:|--:|:--|"]
    for label, entry in compiled.items():
        step = get_step(entry["step"])
        profile = None if entry.get("no_hint") else profiles.load(entry["step"])
        counts = [profile.value("Registers Per Thread") if profile else None, entry.get("registers"),
                  (entry.get("local_ptxas") or {}).get("registers")]
        allowed = sorted({f"{int(c)}: {o['blocks']} ({o['warps']})" for c in counts if c
                          for o in [blocks_per_sm(int(c), threads_per_block(step), entry["shared_bytes"])]})
        name = f"{label} (built without the hint)" if entry.get("no_hint") else label
        lines.append(f"| {name} | " + " | ".join("—" if c is None else f"{c:.0f}" for c in counts)
                     + f" | {'; '.join(allowed)} |")
    env = (results or {}).get("environment", {})
    driver = (f"driver {env['smi_driver_version']} (CUDA {env['driver_cuda_version']}) on the {env['gpu']}, as the "
              "benchmark file records it" if env.get("smi_driver_version") else "the GPU host's driver")
    note = (f"\n\nNsight Compute's count is what ran: the PTX compiled by the driver's JIT when the kernel was loaded "
            f"({driver}); reports in `{shown_path(profiles.load(entry['step']).path.parent)}/`. The other two compile "
            "the same PTX on this machine, for sm_90"
            + (f" (for {local}, with the PTX's `.version` line lowered to {lowered}, the newest it accepts: NVVM "
               "here writes a newer one)" if (lowered := next((e["local_ptxas"].get("ptx_version") for e in
                                                              compiled.values() if e.get("local_ptxas")), None))
               else "")
            + ". No report was made of a kernel without the hint (—).")
    return MarkdownTable("\n".join(lines) + note)


def registers_text(compiled: dict, after) -> str:
    """What the occupancy hint does to registers and blocks per SM, by each compiler here."""
    name = as_step(after).name
    hinted, plain = compiled[f"{name}_fast"], compiled[f"{name}_fast_no_hint"]
    step = get_step(name)
    threads, wanted = threads_per_block(step), step.config.get("MIN_BLOCKS_PER_SM", 0)
    cap = 65536 // (threads * wanted) if wanted else None
    counts = []
    for compiler, key in ((hinted.get("ptxas"), "registers"), (None, "local")):
        a = hinted.get(key) if key == "registers" else (hinted.get("local_ptxas") or {}).get("registers")
        b = plain.get(key) if key == "registers" else (plain.get("local_ptxas") or {}).get("registers")
        label = compiler or (hinted.get("local_ptxas") or {}).get("version")
        if a and b:
            blocks = (blocks_per_sm(a, threads, hinted["shared_bytes"])["blocks"],
                      blocks_per_sm(b, threads, plain["shared_bytes"])["blocks"])
            counts.append((label, a, b, blocks))
    if not counts or not cap:
        return "No register counts here to compare."
    same = all(blocks[0] == blocks[1] for *_, blocks in counts)
    text = (f"The hint is `launch_bounds=({threads}, {wanted})`: {wanted} blocks of {threads} threads must fit on an "
            f"SM, so `ptxas` may use at most 65,536 / ({threads} × {wanted}) = {cap} registers per thread. "
            + " ".join(f"{label}: {a} registers with the hint, {b} without." for label, a, b, _ in counts) + " ")
    if same:
        blocks = counts[0][3][0]
        text += (f"Either way every count is at most {cap}, so {blocks} blocks fit on an SM with the hint or without "
                 "it: by these compilers the hint does not change occupancy. What it does change is the code: "
                 "`ptxas` is told the block size and the register budget, and compiles the same k-loop differently "
                 "(the counts differ). The sweep measured that its code runs faster; the sweep's file does not record "
                 "the register count the H200's driver chose, so *why* it runs faster is not established here.")
    else:
        text += "The hint changes how many blocks fit on an SM (last column of the table)."
    return text


# -- compile time (deep dive) ----------------------------------------------------------------------------------------
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

    options = getattr(dispatcher, "targetoptions", {}) or {}
    kwargs = {key: options[key] for key in ("launch_bounds", "fastmath") if key in options}
    compiler_machinery.PassManager._runPass, nvvm.compile_ir = run_pass, compile_ir
    try:
        start = time.perf_counter()
        ptx, _ = cuda.compile(dispatcher.py_func, signature, device=False, abi="numba", cc=(9, 0), output="ptx",
                              **kwargs)
        total = time.perf_counter() - start
    finally:
        compiler_machinery.PassManager._runPass, nvvm.compile_ir = original_run, original_nvvm
    return ptx, spent, total


def profile_compile_here(step: str, variant: str = "fast") -> dict:
    """In a GPU-mode process: one kernel compiled to PTX with the four patches and without, each pass timed;
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
    """:func:`profile_compile_here` from any process (a GPU-mode child compiles; no GPU needed)."""
    return in_gpu_mode("gemm_steps.course.lesson_07:profile_compile_here", as_step(step).name, variant, timeout=1200)


def compile_profile_table(profile: dict) -> MarkdownTable:
    """Seconds per group of passes, with the patches and without, and each group's share of the patched compile."""
    with_, without = profile["with"], profile["without"]
    lines = ["| where the time goes | with the four patches | share | without them |", "|:--|--:|--:|--:|"]
    for group in GROUP_ORDER:
        a, b = with_["groups"].get(group), without["groups"].get(group)
        if a is None and b is None:
            continue
        lines.append(f"| {group} | {a or 0:.2f} s | {(a or 0) / with_['total_s']:.0%} | {b or 0:.2f} s |")
    lines.append(f"| **compile to PTX, in all** | **{with_['total_s']:.2f} s** | | **{without['total_s']:.2f} s** |")
    if profile.get("ptxas"):
        lines.append(f"| then `ptxas` ({profile['ptxas']}), PTX → machine code | {profile['ptxas_s']:.2f} s | | |")
    return MarkdownTable("\n".join(lines))


def compile_profile_text(profile: dict) -> str:
    """The profile in words: the speed-up, the biggest group now, and whether the PTX is the same."""
    import os
    import platform

    with_, without = profile["with"], profile["without"]
    groups = with_["groups"]
    top = max(groups, key=groups.get)
    saved = {g: without["groups"].get(g, 0) - groups.get(g, 0) for g in without["groups"]}
    most = max(saved, key=saved.get)
    return (f"`{profile['kernel']}` on this machine ({platform.machine()}, {os.cpu_count()} CPUs): "
            f"**{with_['total_s']:.1f} s to PTX with the patches, {without['total_s']:.1f} s without** "
            f"({without['total_s'] / with_['total_s']:.1f}×); the PTX is "
            + ("the same code either way. " if profile["same_ptx"] else "**different**: a patch has a bug. ")
            + f"The patches save most in {most} ({saved[most]:.1f} s). With them, the largest part is {top} "
            f"({groups[top] / with_['total_s']:.0%}), and NVVM takes "
            f"{groups.get('NVVM: LLVM IR → PTX', 0) / with_['total_s']:.0%}.")


def first_call_table(runs: list[dict], steps: list[str]) -> MarkdownTable:
    """The shipped first-call runs (``experiments/first_call.py``): per step and size, a fresh process's first call
    with empty caches and with Numba's on-disk cache."""
    lines = ["| what | size | first call, empty caches | first call, on-disk cache |", "|:--|--:|--:|--:|"]
    by = {(r["what"], r["n"], r["cache"]): r for r in runs}
    for what, n in dict.fromkeys((r["what"], r["n"]) for r in runs if r["what"] in steps):
        cold, warm = by.get((what, n, "cold")), by.get((what, n, "warm"))
        lines.append(f"| {what} | {n}³ | {cold['first_s']:.1f} s | {warm['first_s']:.1f} s |" if cold and warm
                     else f"| {what} | {n}³ | — | — |")
    return MarkdownTable("\n".join(lines))


FIRST_CALL_FILE = "first-call-nvidia-h100.json"
_READY = re.compile(r"compiling the (\w+) (\w+) kernel.*?ready in ([\d.]+) s", re.S)


def load_first_calls(name: str = FIRST_CALL_FILE) -> tuple[Path, list[dict]] | None:
    """The shipped first-call run (``experiments/first_call.py``; a list of records), or None (said)."""
    from .timings import shipped_file

    path = shipped_file(name)
    return None if path is None else (path, json.loads(path.read_text()))


def first_call_summary(step: str, name: str = FIRST_CALL_FILE) -> str:
    """One step's first call in a fresh process, with empty caches and with Numba's on-disk cache, from the shipped
    first-call run; which kernel it compiled, and how long that took (from the run's own log lines)."""
    found = load_first_calls(name)
    if found is None:
        return ""
    path, runs = found
    by = {r["cache"]: r for r in runs if r["what"] == step}
    if "cold" not in by:
        return f"`{shown_path(path)}` has no run of {step}."
    cold, warm = by["cold"], by.get("warm")
    ready = _READY.search(cold.get("stderr", ""))
    kernel = f" It compiled one kernel, the {ready.group(2)} kernel, in {float(ready.group(3)):.1f} s." if ready else ""
    return (f"From `{shown_path(path)}` (`python -m experiments.first_call`, on the GPU host the file is named for): "
            f"step {get_step(step).number}'s first call at {cold['n']}³ in a fresh process takes **{cold['first_s']:.1f} s with empty "
            f"caches**" + (f" and {warm['first_s']:.1f} s when Numba's on-disk cache has the kernel" if warm else "")
            + f"; the second call, {cold['second_s'] * 1e3:.0f} ms.{kernel}")


def shipped_compile_times(name: str = "compile-times-h200.json") -> str:
    """The older per-step first-call table (``scripts/compile_times.py``), measured before three of the four patches
    existed: every step in a fresh process, at 256³ (fast kernel) and 257³ (edge kernel too), then with the cache."""
    from .timings import shipped_file

    path = shipped_file(name)
    if path is None:
        return ""
    data = json.loads(path.read_text())
    env = data["environment"]
    lines = ["| step | first call, empty caches | edge kernel, first 257³ call | first call, on-disk cache |",
             "|:--|--:|--:|--:|"]
    lines += [f"| {step} | {r['cold_s']:.2f} s | {r['cold_edge_s']:.2f} s | {r['warm_s']:.2f} s |"
              for step, r in data["compile_times"].items()]
    return (f"From `{shown_path(path)}`, measured on the host of an {env['gpu']} on {env['date'][:10]} with numba-cuda "
            f"{env['numba_cuda']}, **before these patches** (only the first, the lowering one, existed then):\n\n"
            + "\n".join(lines))
