"""The compiled code of a step, read on a CPU: PTX instruction mix per FMA, registers, blocks per SM.

* :func:`compile_kernels` — compile steps' kernels to PTX (NVVM) and ask ``ptxas`` for their registers, in a fresh
  Python in GPU mode (:func:`gemm_steps.harness.gpu_mode.call`), since a notebook may be on the simulator; the
  answer is kept on disk, step by step, so the same kernel of the same code compiles once (``remembered_per_item``).
* :func:`k_loop_mix` — PTX instructions per FMA, by kind, over one trip of a kernel's k-loop.
* :func:`blocks_per_sm` — NVIDIA's occupancy rules: how many blocks fit on an SM, and what limits them.
* :func:`compiled_table` — all of it, one row per kernel.

These are estimates of the instruction stream (PTX, which ``ptxas`` still rewrites) and calculations, not
measurements; the lessons say so where they use them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable

from gemm_steps.harness.step import get_step
from gemm_steps.harness import gpu_mode
from gemm_steps.harness.ptx import (DEFAULT_CC, compile_kernel_ptx, compile_options, compiled_kernel, ptx_stats,
                                    ptxas_info, remembered_in_gpu_mode, remembered_per_item)

from . import profiles
from .display import MarkdownTable, StepLike, as_step

#: Per-SM limits of compute capability 9.0 (Hopper), from NVIDIA's CUDA C++ Programming Guide (not measured here).
SM90_LIMITS = {"registers": 65536, "threads": 2048, "blocks": 32, "shared_bytes": 233472,
               "shared_reserved_per_block": 1024, "register_unit_per_warp": 256}


# -- compiling --------------------------------------------------------------------------------------------------------
def compile_kernels(steps: Iterable[StepLike], variant: str = "fast", lowering_comparison: bool = False,
                    counter_examples: Iterable[StepLike] = (), timeout: float = 600) -> dict[str, dict]:
    """Compile kernels to PTX — and with ``ptxas`` (through nvJitLink) to machine code — on the CPU, no GPU needed.

    For each step, its kernel labelled ``<name>_<variant>`` (or its only kernel); for each step in
    ``counter_examples``, every kernel of its module's ``COUNTER_EXAMPLES`` (versions kept to show what not to do).
    Returns ``{label: {"step", "ptx", "stats" (:func:`gemm_steps.harness.ptx.ptx_stats`), "seconds" (PTX
    generation), "registers", "spill_bytes", "ptxas" (version), "shared_bytes"}}``; registers are ``None`` where
    nvJitLink is missing. With ``lowering_comparison``, each kernel is also compiled without the lowering workaround
    of :mod:`gemm_steps.toolkit.numba_patches` (``"seconds_without_workaround"``, ``"same_ptx_without_workaround"``).
    Without it, a step compiled before from the same code with the same compilers is answered from the disk, and only
    the others compile (:func:`gemm_steps.harness.ptx.remembered_per_item`; ``"seconds"`` are then that first
    compile's).
    """
    names = [as_step(s).name for s in steps]
    counter = [as_step(s).name for s in counter_examples]
    if lowering_comparison:  # it times compiles: never an answer from before, in a fresh child
        return gpu_mode.call("gemm_steps.course.compiled:compile_here", names, variant, True, counter, timeout=timeout,
                             fresh=True)
    if counter:
        return remembered_in_gpu_mode("gemm_steps.course.compiled:compile_here", names, variant, False, counter,
                                      timeout=timeout)
    return remembered_per_item("gemm_steps.course.compiled:compile_here", names, variant, False, [],
                               item_of=lambda entry: entry["step"], timeout=timeout)


_SHARED_DECLARATION = r"^\s*(?:\.visible\s+|\.extern\s+)?\.shared\s+(?:\.align\s+\d+\s+)?\.b8\s+\w+\[(\d+)\]"


def compiled_entry(step: str, ptx: str, **more) -> dict:
    """One kernel's entry of :func:`compile_kernels`' answer, from its PTX: its instruction counts, the static shared
    memory it declares, and what ``ptxas`` (nvJitLink) reports; ``more``: further fields, in order after ``ptx``."""
    shared = sum(int(n) for n in re.findall(_SHARED_DECLARATION, ptx, re.MULTILINE))
    return {"step": step, "ptx": ptx, "stats": ptx_stats(ptx), **more, "shared_bytes": shared, "registers": None,
            "spill_bytes": None, "ptxas": None, **ptxas_info(ptx, DEFAULT_CC)}


def compile_here(names: list[str], variant: str, comparison: bool, counter_examples: list[str]) -> dict:
    """:func:`compile_kernels` in this process, which must be in GPU mode (the GPU-mode worker's, through
    ``gpu_mode.call``)."""
    from numba.cuda import lowering

    from gemm_steps.toolkit import numba_patches

    original = lowering.Lower._find_singly_assigned_variable
    if numba_patches._APPLIED:  # already patched in this process: the original is gone
        comparison = False
    chosen = []
    for name in names:
        kernels = get_step(name).kernels()
        label = next((key for key in (f"{name}_{variant}", name) if key in kernels), next(iter(kernels)))
        chosen.append((name, label, *kernels[label]))
    for name in counter_examples:
        chosen += [(name, label, *entry) for label, entry in get_step(name).module.COUNTER_EXAMPLES.items()]
    if comparison:  # absorb one-time costs (NVVM start-up, libdevice) before timing anything
        compile_kernel_ptx(*get_step("register_1d").kernels()["register_1d"])
    out = {}
    for name, label, dispatcher, signature in chosen:
        numba_patches.apply()
        if comparison:  # timed here and now
            start = time.perf_counter()
            ptx = compile_kernel_ptx(dispatcher, signature)
            seconds = time.perf_counter() - start
        else:  # once on this machine: read back if any process compiled this kernel before (seconds: that compile's)
            kept = compiled_kernel(dispatcher, signature)
            ptx, seconds = kept["ptx"], kept["seconds"]
        entry = compiled_entry(name, ptx, seconds=seconds)
        if comparison:
            patched = lowering.Lower._find_singly_assigned_variable
            lowering.Lower._find_singly_assigned_variable = original
            try:
                start = time.perf_counter()
                unpatched_ptx = _compile_unpatched(dispatcher, signature, DEFAULT_CC)
                entry["seconds_without_workaround"] = time.perf_counter() - start
                entry["same_ptx_without_workaround"] = _same_code(unpatched_ptx, ptx)
            finally:
                lowering.Lower._find_singly_assigned_variable = patched
        out[label] = entry
    return out


def _same_code(ptx: str, other: str) -> bool:
    """Whether two compilations of one kernel are the same code: equal but for the numbers Numba appends to
    names each time it compiles a function again (``…B2v1…``, ``_cudapy_smem_3``)."""

    def normalized(text):
        return re.sub(r"_cudapy_smem_\d+", "_cudapy_smem", re.sub(r"B\d+v\d+", "", text))

    return normalized(ptx) == normalized(other)


def _compile_unpatched(dispatcher, signature: str, cc: tuple[int, int]) -> str:
    """:func:`gemm_steps.harness.ptx.compile_kernel_ptx` without re-applying the lowering workaround."""
    from numba import cuda

    ptx, _ = cuda.compile(dispatcher.py_func, signature, device=False, abi="numba", cc=cc, output="ptx",
                          **compile_options(dispatcher))
    return ptx


# -- the k-loop's instruction mix -------------------------------------------------------------------------------------
_PTX_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_:]+)*)[\s;]")
_PTX_LABEL = re.compile(r"^\s*(\$L\w+):")
_PTX_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$L\w+)\s*;")

#: How :func:`k_loop_mix` groups PTX opcodes, in the order tables show them.
MIX_CLASSES = ["fma", "shared loads", "shared stores", "global loads/stores", "64-bit integer", "32-bit integer",
               "branch/barrier", "other"]


def _mix_class(opcode: str) -> str:
    suffix = opcode.rsplit(".", 1)[-1]
    if opcode.startswith("fma.rn") and suffix == "f32":
        return "fma"
    if opcode.startswith("ld.shared"):
        return "shared loads"
    if opcode.startswith("st.shared"):
        return "shared stores"
    if opcode.startswith(("ld.global", "st.global")):
        return "global loads/stores"
    if opcode.startswith(("bra", "bar", "barrier", "ret")):
        return "branch/barrier"
    if opcode.startswith(("ld.", "st.", "cvta", "mov", "cvt")):
        return "other"
    if suffix in ("s64", "u64", "b64"):
        return "64-bit integer"
    if suffix in ("s32", "u32", "b32"):
        return "32-bit integer"
    return "other"


def k_loop_mix(ptx: str, fmas_per_k_tile: int) -> dict[str, float] | None:
    """PTX instructions per FMA, by kind (:data:`MIX_CLASSES`), over one trip of a kernel's k-loop.

    The k-loop is the innermost loop holding both the FMAs and a barrier (one trip = one k-tile). A loop nested
    in it that holds FMAs (a k-step loop the compiler did not unroll) is counted as many times as it must run for
    the tile's ``fmas_per_k_tile`` FMAs per thread. Each instruction is counted once per trip, whichever branch
    it is on, so this is a static estimate of the instruction stream — of PTX, which ``ptxas`` still rewrites into
    the machine code (SASS) the GPU runs. ``None`` if no such loop is found.
    """
    ops: list[str] = []
    labels: dict[str, int] = {}
    branches: list[tuple[int, str]] = []
    for line in re.sub(r"//[^\n]*", "", ptx).splitlines():
        label = _PTX_LABEL.match(line)
        if label:
            labels[label.group(1)] = len(ops)
            continue
        found = _PTX_INSTRUCTION.match(line)
        if not found or line.lstrip().startswith("."):
            continue
        branch = _PTX_BRANCH.search(line)
        if branch:
            branches.append((len(ops), branch.group(1)))
        ops.append(found.group(1))
    loops = [(labels[target], at + 1) for at, target in branches if target in labels and labels[target] <= at]

    def fmas(loop):
        return sum(_mix_class(op) == "fma" for op in ops[loop[0]:loop[1]])

    def has_barrier(loop):
        return any(op.startswith(("bar", "barrier")) for op in ops[loop[0]:loop[1]])

    k_loops = [loop for loop in loops if fmas(loop) and has_barrier(loop)]
    if not k_loops:
        return None
    k_loop = min(k_loops, key=lambda loop: loop[1] - loop[0])
    inner = [loop for loop in loops if loop != k_loop and k_loop[0] <= loop[0] and loop[1] <= k_loop[1] and fmas(loop)]
    if len(inner) > 1:
        return None  # several FMA loops in one k-tile: their trip counts cannot be told apart
    counts = dict.fromkeys(MIX_CLASSES, 0.0)
    inside = set()
    for loop in inner:
        trips = (fmas_per_k_tile - (fmas(k_loop) - fmas(loop))) / fmas(loop)
        for op in ops[loop[0]:loop[1]]:
            counts[_mix_class(op)] += trips
        inside.update(range(*loop))
    for i in range(*k_loop):
        if i not in inside:
            counts[_mix_class(ops[i])] += 1
    total_fmas = counts["fma"]
    return {kind: n / total_fmas for kind, n in counts.items()} if total_fmas else None


# -- occupancy -------------------------------------------------------------------------------------------------------
def fmas_per_k_tile(step: StepLike) -> int:
    """FMAs one thread does per k-tile: BLOCK_K × THREAD_M × THREAD_N (1×1 results per thread if not given)."""
    config = as_step(step).config
    return int(config.get("BLOCK_K", 1) * config.get("THREAD_M", 1) * config.get("THREAD_N", 1))


def threads_per_block(step: StepLike) -> int:
    """Threads per block of a step, from its tile constants."""
    config = as_step(step).config
    if "THREADS" in config:
        return int(config["THREADS"])
    return int(config.get("BLOCK_M", 1) * config.get("BLOCK_N", 1)
               // (config.get("THREAD_M", 1) * config.get("THREAD_N", 1)))


def blocks_per_sm(registers: int | None, threads: int, shared_bytes: int, limits: dict = SM90_LIMITS) -> dict:
    """How many blocks fit on one SM, and which resource decides (NVIDIA's occupancy rules; a calculation).

    Registers are allocated per warp in units of 256 (so a thread's count is rounded up to a multiple of 8).
    """
    warps = -(-threads // 32)
    limit = {"threads": limits["threads"] // threads, "blocks": limits["blocks"],
             "shared memory": limits["shared_bytes"] // (shared_bytes + limits["shared_reserved_per_block"])}
    if registers:
        unit = limits["register_unit_per_warp"]
        per_warp = -(-registers * 32 // unit) * unit
        limit["registers"] = (limits["registers"] // per_warp) // warps
    blocks = min(limit.values())
    return {"blocks": blocks, "warps": blocks * warps, "limited_by": min(limit, key=limit.get)}


def compiled_table(compiled: dict[str, dict]) -> MarkdownTable:
    """One row per compiled kernel: its k-loop's instruction mix per FMA, registers and blocks per SM."""
    lines = ["| kernel | PTX instructions per FMA in the k-loop | shared loads per FMA (of them 128-bit) "
             "| 64-bit integer per FMA | FP32 peak if issue-bound | registers | blocks (warps) per SM |",
             "|:--|--:|--:|--:|--:|--:|--:|"]
    for label, entry in compiled.items():
        step = get_step(entry["step"])
        mix = k_loop_mix(entry["ptx"], fmas_per_k_tile(step))
        stats = entry["stats"]
        shared = stats["ld.shared.f32"] + stats["ld.shared.v4.f32"]
        vector = f"{stats['ld.shared.v4.f32'] / shared:.0%}" if shared else "—"
        occupancy = blocks_per_sm(entry["registers"], threads_per_block(step), entry["shared_bytes"])
        regs = "—" if entry["registers"] is None else str(entry["registers"])
        resident = "—" if entry["registers"] is None else f"{occupancy['blocks']} ({occupancy['warps']})"
        if mix is None:
            lines.append(f"| {label} | — | — | — | — | {regs} | {resident} |")
            continue
        total = sum(mix.values())
        lines.append(f"| {label} | {total:.2f} | {mix['shared loads']:.3f} ({vector}) | {mix['64-bit integer']:.2f} "
                     f"| {1 / total:.0%} | {regs} | {resident} |")
    ptxas = next((e["ptxas"] for e in compiled.values() if e.get("ptxas")), None)
    note = (f"Registers: ptxas in {ptxas}, for sm_90; blocks per SM: NVIDIA's occupancy rules for compute "
            "capability 9.0 (a calculation, not a measurement)." if ptxas else
            "No register counts: nvJitLink (the `nvidia-nvjitlink` wheel) is not installed here.")
    return MarkdownTable("\n".join(lines) + "\n\n" + note)


# -- registers from the ptxas on this machine, beside nvJitLink's (lessons 7, 9, 10) ---------------------------------
LOCAL_PTXAS = "/usr/local/bin/ptxas"


def local_ptxas(ptx: str, cc: tuple[int, int] = (9, 0)) -> dict:
    """Registers from the ``ptxas`` binary on this machine (``{}`` if there is none): ``{"registers", "version",
    "ptx_version"}``. NVVM from newer wheels writes a newer PTX ``.version`` line than an older ``ptxas`` accepts;
    then the same PTX is assembled with the version line lowered to the newest that ``ptxas`` names
    (``"ptx_version"`` says which), as the driver's JIT of that CUDA version would have to."""
    binary = shutil.which("ptxas") or (LOCAL_PTXAS if Path(LOCAL_PTXAS).exists() else None)
    if binary is None:
        return {}
    version = re.search(r"V(\d+\.\d+\.\d+)", subprocess.run([binary, "--version"], capture_output=True,
                                                          text=True).stdout)
    out = {"registers": None, "version": f"ptxas {version.group(1)}" if version else "ptxas", "ptx_version": None}
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        for _ in range(2):
            source.write_text(ptx)
            done = subprocess.run([binary, f"-arch=sm_{cc[0]}{cc[1]}", "-v", str(source), "-o",
                                   str(Path(folder) / "kernel.o")], capture_output=True, text=True)
            log = done.stdout + done.stderr
            newest = re.search(r"Unsupported \.version [\d.]+; current version is '([\d.]+)'", log)
            if not newest:
                break
            out["ptx_version"] = newest.group(1)
            ptx = re.sub(r"^\.version [\d.]+", f".version {newest.group(1)}", ptx, count=1, flags=re.MULTILINE)
    found = re.search(r"Used (\d+) registers", log)
    out["registers"] = int(found.group(1)) if found else None
    return out


def compile_with_registers(steps) -> dict:
    """:func:`compile_kernels` for the fast kernels of ``steps``, each entry also with ``"local_ptxas"`` (registers
    from the ``ptxas`` binary on this machine, :func:`local_ptxas`; ``{}`` where there is none)."""
    compiled = compile_kernels(steps, "fast")
    for entry in compiled.values():
        entry["local_ptxas"] = local_ptxas(entry["ptx"])
    return compiled


def register_table(compiled: dict) -> MarkdownTable:
    """Registers per thread of each compiled kernel, from each compiler that produced a count: the driver's JIT on
    the GPU host (the shipped Nsight Compute report; none for a kernel built without the hint), ``ptxas`` in
    nvJitLink and ``ptxas`` here (``.version`` lowered where NVVM here writes a newer one than it reads); and the
    blocks per SM that each count allows (NVIDIA's occupancy rules: a calculation)."""
    jit = next((e["ptxas"] for e in compiled.values() if e.get("ptxas")), "nvJitLink")
    local = next((e["local_ptxas"]["version"] for e in compiled.values() if e.get("local_ptxas")), None)
    lines = [f"| kernel | Nsight Compute (driver JIT, GPU host) | ptxas in {jit} | {local or 'ptxas here'} "
             "| blocks (warps) per SM at that count |", "|:--|--:|--:|--:|:--|"]
    for label, entry in compiled.items():
        profile = None if entry.get("no_hint") else profiles.load(entry["step"])
        counts = [profile.value("Registers Per Thread") if profile else None, entry.get("registers"),
                  (entry.get("local_ptxas") or {}).get("registers")]
        allowed = sorted({f"{int(c)}: {o['blocks']} ({o['warps']})" for c in counts if c
                          for o in [blocks_per_sm(int(c), threads_per_block(get_step(entry["step"])),
                                                  entry["shared_bytes"])]})
        name = f"{label} (built without the hint)" if entry.get("no_hint") else label
        lines.append(f"| {name} | " + " | ".join("—" if c is None else f"{c:.0f}" for c in counts)
                     + f" | {'; '.join(allowed)} |")
    return MarkdownTable("\n".join(lines))
