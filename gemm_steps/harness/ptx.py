"""The compiled code of every kernel: PTX from NVVM, and counts of the instructions the lessons talk about.

Numba compiles a kernel to PTX with NVVM, which ships as a wheel (``nvidia-nvvm``, pulled in by
``numba-cuda[cu13]``) — so this works on a machine with **no GPU**, as long as Numba runs in GPU mode
(``NUMBA_ENABLE_CUDASIM=0``). That is how the tests check, on a CPU-only CI machine, claims such as "step 6 loads
A and B with 128-bit instructions" or "no kernel spills to local memory".

In a process in GPU mode::

    from gemm_steps.harness.ptx import compile_kernel_ptx, ptx_stats
    dispatcher, signature = gemm_steps.get_step("vectorized").kernels()["vectorized_fast"]
    ptx_stats(compile_kernel_ptx(dispatcher, signature))["ld.global.v4.f32"]     # 128-bit global loads

From a process on the simulator (a notebook, the tests), :func:`gemm_steps.harness.gpu_mode.call` runs a function in
the GPU-mode worker (a child Python in GPU mode, kept for the next call) and returns its result — the one way this
package compiles from the simulator::

    from gemm_steps.harness.ptx import report_in_subprocess
    report_in_subprocess(["vectorized"])["vectorized"]["vectorized_fast"]["ld.global.v4.f32"]

From the command line (compiles in the GPU-mode worker when gemm-steps would pick the simulator)::

    python -m gemm_steps.harness.ptx                 # a JSON report: {step: {kernel label: stats}}
    python -m gemm_steps.harness.ptx --steps 6 7     # some steps only (names or numbers)
    python -m gemm_steps.harness.ptx --dump DIR      # also write each kernel's PTX to DIR/<label>.ptx

What :func:`ptx_stats` counts (each an instruction count over the whole kernel, unrolled code counted as written):

=======================  =========================================================================================
key                      what it counts
=======================  =========================================================================================
``ld.global.v4.f32``     128-bit global loads (any cache modifiers, e.g. ``ld.global.nc.v4.f32``) → ``LDG.E.128``
``ld.global.f32``        scalar 32-bit global loads of floats
``st.global.v4.f32``     128-bit global stores → ``STG.E.128``
``st.global.f32``        scalar global stores of floats
``ld.shared.v4.f32``     128-bit shared-memory loads → ``LDS.128``
``ld.shared.f32``        scalar shared-memory loads of floats
``st.shared.v4.f32``     128-bit shared-memory stores
``st.shared.f32``        scalar shared-memory stores of floats
``fma.rn.f32``           single-precision fused multiply-adds (the useful work)
``bar.sync``             block barriers (``cuda.syncthreads()``; PTX also spells it ``barrier.sync``)
``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``  tensor-core products of 16×8×8 TF32 tiles → ``HMMA``
``cvt.rna.tf32.f32``     float32 → TF32 roundings
``ldmatrix.sync.aligned.m8n8.x4.shared.b16``  a warp's load of four 8×8 (16-bit) matrices from shared memory → ``LDSM``
``sub.f32``              single-precision subtractions (3xTF32's ``small = x − big``)
``cp.async.cg…`` / ``cp.async.ca.shared.global``  asynchronous 16-byte / 4-byte global → shared copies → ``LDGSTS``
``cp.async.wait_group`` / ``cp.async.commit_group``  the copy pipeline's waits and group boundaries
``wgmma.mma_async.tf32``  warpgroup products of a 64×8 by 8×N TF32 tile, any N (``wgmma.mma_async…m64nNk8…``) → ``HGMMA``
``wgmma.fence`` / ``wgmma.commit_group`` / ``wgmma.wait_group``  the ``wgmma`` ordering fence, group ends and waits
``wgmma.written_after_fence``  operand registers of a ``wgmma`` (its A fragments, its accumulators) written between the
                         ``wgmma.fence`` before it and it, which the PTX ISA forbids (:func:`wgmma_fence_violations`);
                         a ``wgmma`` with no fence since the last ``commit_group`` counts too
``ld.local``/``st.local``  loads/stores to thread-local memory (spills or local arrays the compiler kept in memory)
``local_decls``          ``.local`` variable declarations (a local array kept in memory)
``local``                ``ld.local + st.local + local_decls``: 0 means everything lives in registers
``instructions``         all instructions
``opcodes``              every opcode with its count, for anything not listed here
=======================  =========================================================================================

Local memory here means what the *PTX* asks for: PTX is the level Numba controls and the level where a local array
that failed to become registers appears. ``ptxas`` can still spill registers when it allocates them;
:func:`ptxas_info` asks the ``ptxas`` inside the nvJitLink wheel (no GPU needed) for the registers and spill bytes,
and says which version answered. A step states those with ``PTXAS_EXPECT`` (tests/test_ptx.py checks them on the
CPU, tests/test_gpu.py on the driver's own compile).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

from ..toolkit.backend import keep_text, kept_text, user_cache
from . import gpu_mode
from ..toolkit.tuned import user_table

#: Compute capability the reports compile for (Hopper: H100/H200, where the course's results were measured).
DEFAULT_CC = (9, 0)

# One PTX instruction per line: optional predicate guard, then the opcode with its dotted modifiers.
_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_:]+)*)[\s;]", re.MULTILINE)
_LOCAL_DECL = re.compile(r"^\s*\.local\b", re.MULTILINE)


class PTXUnavailable(RuntimeError):
    """Numba cannot compile to PTX here (simulator mode, or NVVM missing)."""


def _opcodes(ptx: str) -> Counter:
    text = re.sub(r"//[^\n]*", "", ptx)  # comments
    return Counter(match.group(1) for match in _INSTRUCTION.finditer(text))


def _count(opcodes: Counter, pattern: str) -> int:
    regex = re.compile(pattern)
    return sum(n for op, n in opcodes.items() if regex.fullmatch(op))


_WGMMA = re.compile(r"^\s*(?:@!?%\w+\s+)?wgmma\.mma_async\S*\s+\{([^}]*)\}\s*,\s*(?:\{([^}]*)\})?")
_NO_DESTINATION = re.compile(r"(?:st|bar|barrier|cp|fence|membar|bra|ret|wgmma|red|prefetch|trap|exit)\b")
_REGISTER = re.compile(r"%\w+")


def wgmma_fence_violations(ptx: str) -> list[tuple[int, str]]:
    """``(line, register)`` for each operand register of a ``wgmma.mma_async`` — its accumulators, and its A
    fragments when A comes from registers — that an instruction writes between the ``wgmma.fence`` before it and
    it. The PTX ISA requires the fence to come *after* every write to those registers (other ``wgmma`` accumulating
    into the same registers excepted). A ``wgmma`` with no fence since the last ``wgmma.commit_group`` is reported
    as ``(line, "no wgmma.fence")``. Reads the kernel as straight-line text, as the unrolled k-loop body is."""
    violations: list[tuple[int, str]] = []
    fenced, written = False, {}
    for number, line in enumerate(ptx.splitlines(), 1):
        code = line.split("//", 1)[0].strip()
        if not code or code in "{}" or code.startswith(".") or code.endswith(":"):
            continue
        body = re.sub(r"^@!?%\w+\s+", "", code)
        if body.startswith("wgmma.fence"):
            fenced, written = True, {}
            continue
        if body.startswith("wgmma.commit_group"):
            fenced = False
            continue
        wgmma = _WGMMA.match(code)
        if wgmma:
            if not fenced:
                violations.append((number, "no wgmma.fence"))
            operands = _REGISTER.findall(wgmma.group(1)) + _REGISTER.findall(wgmma.group(2) or "")
            violations += [(written[r], r) for r in operands if r in written and (written[r], r) not in violations]
            continue
        if fenced and not _NO_DESTINATION.match(body):
            parts = body.split(None, 1)
            if len(parts) == 2:
                destination = parts[1].split("}", 1)[0] if parts[1].startswith("{") else parts[1].split(",", 1)[0]
                for register in _REGISTER.findall(destination):
                    written[register] = number
    return violations


def ptx_stats(ptx: str) -> dict[str, Any]:
    """Counts of the instructions the course cares about in one kernel's PTX (see the module docstring)."""
    ops = _opcodes(ptx)
    # Cache/eviction modifiers such as .nc, .ca, .L1::no_allocate — but not a vector width (.v2/.v4/.v8).
    mods = r"(?:\.(?!v[248]\b)[A-Za-z0-9_:]+)*"
    stats: dict[str, Any] = {
        "ld.global.v4.f32": _count(ops, rf"ld\.global{mods}\.v4\.f32"),
        "ld.global.f32": _count(ops, rf"ld\.global{mods}\.f32"),
        "st.global.v4.f32": _count(ops, rf"st\.global{mods}\.v4\.f32"),
        "st.global.f32": _count(ops, rf"st\.global{mods}\.f32"),
        "ld.shared.v4.f32": _count(ops, rf"ld\.shared{mods}\.v4\.f32"),
        "ld.shared.f32": _count(ops, rf"ld\.shared{mods}\.f32"),
        "st.shared.v4.f32": _count(ops, rf"st\.shared{mods}\.v4\.f32"),
        "st.shared.f32": _count(ops, rf"st\.shared{mods}\.f32"),
        "fma.rn.f32": _count(ops, r"fma\.rn(?:\.ftz)?(?:\.sat)?\.f32"),
        "bar.sync": _count(ops, r"(?:bar|barrier)(?:\.cta)?\.sync(?:\.aligned)?"),
        # Tensor cores (steps 12 onward): the warp-level mma, the TF32 rounding, the asynchronous-copy pipeline.
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": ops["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"],
        "cvt.rna.tf32.f32": ops["cvt.rna.tf32.f32"],
        "setp.num.f32": ops["setp.num.f32"],  # rounded_operand_bits: the TF32 rounding in two instructions (step 17)
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16": ops["ldmatrix.sync.aligned.m8n8.x4.shared.b16"],
        "sub.f32": _count(ops, r"sub(?:\.rn)?(?:\.ftz)?\.f32"),
        "mul.f32": _count(ops, r"mul(?:\.rn)?(?:\.ftz)?\.f32"),
        "cp.async.cg.shared.global": ops["cp.async.cg.shared.global"],
        "cp.async.ca.shared.global": ops["cp.async.ca.shared.global"],
        # Hopper's warpgroup mma (step 14): the TF32 products of any N, and the fence / commit / wait around them.
        "wgmma.mma_async.tf32": _count(ops, r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k8\.f32\.tf32\.tf32"),
        "wgmma.fence": ops["wgmma.fence.sync.aligned"],
        "wgmma.commit_group": ops["wgmma.commit_group.sync.aligned"],
        "wgmma.wait_group": ops["wgmma.wait_group.sync.aligned"],
        "wgmma.written_after_fence": len(wgmma_fence_violations(ptx)),
        "cp.async.wait_group": ops["cp.async.wait_group"],
        # The copy engine (step 16): tensor copies of a box, and the mbarrier arrivals that announce their bytes.
        "cp.async.bulk.tensor": _count(ops, r"cp\.async\.bulk\.tensor\.[A-Za-z0-9_:.]+"),
        "mbarrier.arrive.expect_tx": _count(ops, r"mbarrier\.arrive\.expect_tx(?:\.[A-Za-z0-9_:]+)*"),
        # … and the register hand-off between warpgroups (step 17).
        "setmaxnreg": _count(ops, r"setmaxnreg(?:\.[A-Za-z0-9_]+)*"),
        "fence.proxy.tensormap.acquire.sys": ops["fence.proxy.tensormap::generic.acquire.sys"],
        "fence.proxy.tensormap.acquire.gpu": ops["fence.proxy.tensormap::generic.acquire.gpu"],
        "cp.async.commit_group": ops["cp.async.commit_group"],
        # Clusters (step 20): the copies multicast to the cluster, remote arrivals, the cluster barrier and rank.
        "cp.async.bulk.tensor.multicast": _count(ops, r"cp\.async\.bulk\.tensor\.[A-Za-z0-9_:.]*multicast::cluster"),
        # … and the copy engine's stores (step 23): a box of shared memory to global memory, and the waits for them.
        "cp.async.bulk.tensor.store": _count(ops, r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta[A-Za-z0-9_:.]*"),
        "cp.async.bulk.wait_group.read": ops["cp.async.bulk.wait_group.read"],
        "mapa.shared::cluster": _count(ops, r"mapa\.shared::cluster\.u(?:32|64)"),
        "mbarrier.arrive.remote": _count(ops, r"mbarrier\.arrive(?:\.release)?(?:\.cluster)?\.shared::cluster\.b64"),
        "fence.mbarrier_init": ops["fence.mbarrier_init.release.cluster"],
        "barrier.cluster.arrive": _count(ops, r"barrier\.cluster\.arrive(?:\.[a-z]+)*"),
        "barrier.cluster.wait": _count(ops, r"barrier\.cluster\.wait(?:\.[a-z]+)*"),
        "%cluster_ctarank": ptx.count("%cluster_ctarank"),
        "ld.local": _count(ops, r"ld\.local(?:\.[A-Za-z0-9_:]+)*"),
        "st.local": _count(ops, r"st\.local(?:\.[A-Za-z0-9_:]+)*"),
        "local_decls": len(_LOCAL_DECL.findall(ptx)),
    }
    stats["local"] = stats["ld.local"] + stats["st.local"] + stats["local_decls"]
    stats["instructions"] = sum(ops.values())
    stats["opcodes"] = dict(sorted(ops.items()))
    return stats


def _require_gpu_mode() -> None:
    from ..toolkit.backend import SIMULATOR

    if SIMULATOR:
        raise PTXUnavailable(
            "gemm-steps is running on Numba's CUDA simulator, which does not compile kernels. Compile in a process "
            "started with NUMBA_ENABLE_CUDASIM=0 (no GPU needed: NVVM compiles on the CPU), e.g. "
            "`NUMBA_ENABLE_CUDASIM=0 python -m gemm_steps.harness.ptx`, or call gemm_steps.harness.gpu_mode.call() "
            "or report_in_subprocess()."
        )


def nvvm_version() -> tuple[int, ...] | None:
    """NVVM's version, or None when libNVVM cannot be loaded (then nothing compiles). Needs GPU mode."""
    try:
        from numba.cuda.cudadrv import nvvm

        return tuple(nvvm.NVVM().get_version())
    except Exception:  # NvvmSupportError, or the library failing to load: either way, unavailable
        return None


#: The compile options of a ``cuda.jit`` dispatcher that ``cuda.compile`` takes too (:func:`compile_options`).
COMPILE_OPTIONS = ("launch_bounds", "fastmath", "debug", "lineinfo", "opt")


def compile_options(dispatcher: Any) -> dict:
    """The dispatcher's own compile options, for ``cuda.compile``: what the GPU would build it with."""
    options = getattr(dispatcher, "targetoptions", {}) or {}
    return {key: options[key] for key in COMPILE_OPTIONS if key in options}


def lowered_kernel(dispatcher: Any, signature: str, cc: tuple[int, int] = DEFAULT_CC) -> Any:
    """Numba's lowering of one kernel (a ``cuda.jit`` dispatcher) for one signature: typing and LLVM IR, the slow half
    of a compile (a Hopper step's fast kernel: ~2-4 s, then NVVM ~0.2-0.9 s per output on a CI core). NVVM makes of
    it PTX (``.get_asm_str(cc=cc)``) or LTO-IR (``.get_ltoir(cc=cc)``), each as ``cuda.compile`` would with
    ``output="ptx"`` or ``"ltoir"`` — so a kernel whose PTX and ptxas report are both wanted is lowered once.

    Uses the dispatcher's own Python function and its compile options (``launch_bounds``, ``fastmath``, …), so the
    code is what the GPU would run, and the step's compile-time patches (:mod:`gemm_steps.toolkit.numba_patches`).
    Calls numba-cuda 0.30's ``_compile_pyfunc_with_fixup``, the function ``cuda.compile`` itself calls (the version is
    pinned; ``tests/test_numba_patches.py`` compares the two). Needs GPU mode, not a GPU."""
    _require_gpu_mode()
    from numba.cuda import compiler

    from ..toolkit import numba_patches as _numba_patches

    _numba_patches.apply()  # the same lowering the steps compile with (see that module: output is identical)
    library, _ = compiler._compile_pyfunc_with_fixup(dispatcher.py_func, signature, device=False, abi="numba", cc=cc,
                                                     **compile_options(dispatcher))
    return library


def compile_kernel_ptx(dispatcher: Any, signature: str, cc: tuple[int, int] = DEFAULT_CC) -> str:
    """PTX of one kernel (a ``cuda.jit`` dispatcher) for one signature, compiled by NVVM for ``cc``
    (:func:`lowered_kernel`). Needs GPU mode, not a GPU."""
    return lowered_kernel(dispatcher, signature, cc).get_asm_str(cc=cc)


def _chosen_steps(selection: Iterable[str] | None):
    from .step import all_steps, get_step

    if not selection:
        return all_steps()
    return [get_step(s) for s in selection]


def report(steps: Iterable[str] | None = None, cc: tuple[int, int] = DEFAULT_CC,
           dump_dir: str | Path | None = None) -> dict:
    """``{step name: {kernel label: stats}}`` for every kernel of every step (in this process; GPU mode).

    A kernel that fails to compile gets ``{"error": "..."}`` instead of stats, so one bad kernel does not hide
    the others.
    """
    _require_gpu_mode()
    cc = tuple(cc)  # a list, when it came as JSON (report_in_subprocess)
    if nvvm_version() is None:
        raise PTXUnavailable("NVVM unavailable: libNVVM cannot be loaded, so no kernel can be compiled to PTX. "
                             "Install it with the CUDA wheels: pip install 'numba-cuda[cu13]'")
    result: dict[str, dict] = {}
    for step in _chosen_steps(steps):
        kernels = {}
        for label, (dispatcher, signature) in step.kernels().items():
            try:
                ptx = compile_kernel_ptx(dispatcher, signature, cc)
            except Exception as exc:  # reported per kernel, never swallowed: the tests fail on it
                kernels[label] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            kernels[label] = ptx_stats(ptx)
            if dump_dir is not None:
                Path(dump_dir).mkdir(parents=True, exist_ok=True)
                (Path(dump_dir) / f"{label}.ptx").write_text(ptx)
        result[step.name] = kernels
    return result


def _arch(cc: tuple[int, int]) -> str:
    """nvJitLink's target for a compute capability: ``sm_90a`` for 9.0 (``wgmma``, ``setmaxnreg`` exist only there)."""
    return f"sm_{cc[0]}{cc[1]}" + ("a" if tuple(cc) == (9, 0) else "")


def _assemble(kind: str, data: bytes, cc: tuple[int, int], lto: bool) -> dict:
    """nvJitLink's verbose report on one input (``"PTX"`` text or ``"LTOIR"``), parsed; ``{}`` where it fails."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError:
        return {}
    options = [f"-arch={_arch(cc)}", "-verbose"] + (["-lto"] if lto else [])
    handle = nvjitlink.create(len(options), options)
    try:
        nvjitlink.add_data(handle, getattr(nvjitlink.InputType, kind), data, len(data), f"kernel.{kind.lower()}")
        nvjitlink.complete(handle)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
        version = ".".join(str(v) for v in nvjitlink.version())
    except Exception:  # an nvJitLink too old for this input, say: no register count, the rest still holds
        return {}
    finally:
        nvjitlink.destroy(handle)
    text = log.decode(errors="replace").replace("\x00", "")
    registers = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores", text)
    return {"registers": int(registers.group(1)) if registers else None,
            "spill_bytes": int(spills.group(1)) if spills else None,
            # ptxas's own performance warnings, e.g. C7512 / C7518: "wgmma.mma_async instructions are serialized …"
            "wgmma_serialized": len(re.findall(r"wgmma\.mma_async instructions are serialized", text)),
            "warnings": sorted(set(re.findall(r"\((C\d{4})\) Potential Performance Loss", text))),
            "ptxas": f"nvJitLink {version}" + (" (LTO)" if lto else "")}


def ptxas_info(ptx: str, cc: tuple[int, int] = DEFAULT_CC) -> dict:
    """Registers and spill bytes that ``ptxas`` (inside the nvJitLink wheel) reports for one kernel's PTX, how many
    times it says it serialised ``wgmma`` (C7512: too few registers; C7518: a divergent path), its performance
    warnings' codes, and its version: ``{"registers", "spill_bytes", "wgmma_serialized", "warnings", "ptxas"}``;
    ``{}`` where nvJitLink is missing or fails. No GPU needed.

    PTX is assembled as one compilation unit of a program to be linked (relocatable), so ptxas ignores
    ``setmaxnreg`` (C7504): for what a kernel compiles to on a GPU, use :func:`kernel_ptxas_info`. For compute
    capability 9.0 it assembles for ``sm_90a``, whatever target the PTX names."""
    ptx = re.sub(r"^\.target\s+sm_\w+", f".target {_arch(cc)}", ptx, count=1, flags=re.MULTILINE)
    return _assemble("PTX", ptx.encode(), cc, lto=False)


def kernel_ptxas_info(dispatcher: Any, signature: str, cc: tuple[int, int] = DEFAULT_CC) -> dict:
    """:func:`ptxas_info` for a kernel compiled the way numba-cuda compiles it on a GPU where nvJitLink is
    installed (its default, and the course's): NVVM emits LTO-IR and nvJitLink links it with ``-lto`` into one
    whole program, so ptxas honours ``setmaxnreg`` (as relocatable PTX it would not: C7504). Needs GPU mode, not a
    GPU."""
    return _lto_ptxas_info(lowered_kernel(dispatcher, signature, cc), cc)


def _lto_ptxas_info(library: Any, cc: tuple[int, int]) -> dict:
    return _assemble("LTOIR", bytes(library.get_ltoir(cc=cc)), cc, lto=True)


# -- compiling from a process on the simulator: in the GPU-mode worker, its answers kept ------------------------------
def remembered_in_gpu_mode(function: str, *args: Any, timeout: float = 1800,
                           also_hash: Iterable[Path] = ()) -> Any:
    """:func:`gemm_steps.harness.gpu_mode.call`, its answer kept on disk: the same question asked of the same code
    and the same compilers gets the answer it got before, read back without asking a compiler (as Numba's
    ``cache=True`` does for a kernel). The key (:func:`compile_key`) covers the function and its arguments, every
    source file of gemm_steps and of the folders in ``also_hash``, and what compiles: Python, the Numba and CUDA
    packages, ``ptxas`` on the ``PATH``, the ``NUMBA_*`` settings and the user's tuning table (:func:`_compilers`).
    Edit a kernel, tune a step or upgrade numba-cuda, and it compiles again. Answers live in ``compiled/`` of
    :func:`gemm_steps.toolkit.backend.user_cache`; delete the folder to forget them. For asking what the compiler
    made — never for timing a compile."""
    key = compile_key(function, args, also_hash)
    answer = _recall(key)
    if answer is None:
        answer = gpu_mode.call(function, *args, timeout=timeout)
        _keep(key, answer)
    return answer


def remembered_per_item(function: str, items: list, *args: Any, item_of: Callable[[dict], Any],
                        timeout: float = 1800) -> dict:
    """``function(items, *args)`` in GPU mode — an answer ``{label: entry}`` in which ``item_of(entry)`` says which
    item an entry belongs to — remembered item by item (as :func:`remembered_in_gpu_mode` remembers a whole answer):
    a question that shares items with an earlier one compiles only the new items, in one child. The answer keeps the
    order of ``items``."""
    items = list(dict.fromkeys(items))
    fingerprint = _fingerprint(())
    keys = {item: compile_key(function, [item, *args], fingerprint=fingerprint) for item in items}
    answers = {item: _recall(key) for item, key in keys.items()}
    missing = [item for item in items if answers[item] is None]
    if missing:
        fresh = gpu_mode.call(function, missing, *args, timeout=timeout)
        for item in missing:
            answers[item] = {label: entry for label, entry in fresh.items() if item_of(entry) == item}
            _keep(keys[item], answers[item])
    return {label: entry for item in items for label, entry in answers[item].items()}


def _recall(key: str, folder: str = "compiled") -> Any:
    text = kept_text(folder, f"{key}.json")
    try:
        return None if text is None else json.loads(text)
    except ValueError:  # a broken file: compiled again, not believed
        return None


#: How many answers :func:`remembered_in_gpu_mode` keeps (about 0.1 MB each); past it the oldest go.
KEPT_ANSWERS = 200


def _keep(key: str, answer: Any, folder: str = "compiled") -> None:
    keep_text(folder, f"{key}.json", json.dumps(answer), KEPT_ANSWERS)  # with a compiled kernel, its lock goes too


# -- one kernel compiled once per machine: every process asks the disk first -------------------------------------------
def compiled_kernel(dispatcher: Any, signature: str, cc: tuple[int, int] = DEFAULT_CC, lto: bool = False) -> dict:
    """One kernel's PTX, compiled at most once for the same code and compilers on this machine: ``{"ptx": …,
    "seconds": …}`` (``seconds``: the lowering and PTX of the compile that made it), and with ``lto`` also
    ``"lto_ptxas"`` (:func:`kernel_ptxas_info`; a kernel wanted both ways is lowered once). Needs GPU mode.

    Kept on disk (``kernels/`` of :func:`gemm_steps.toolkit.backend.user_cache`) under :func:`kernel_key`, and
    compiled under a lock on that key: a lesson's GPU-mode worker that wants a kernel which the test run's PTX checks
    (or another lesson) are compiling waits for it and reads it, instead of compiling it a second time (on a 2-core
    CI machine a step's fast kernel takes 5-30 s to lower). A kernel with no key (built outside the package, e.g.
    in ``experiments/`` or by a learner's exercise) compiles every time. Never for timing a compile."""
    key = kernel_key(dispatcher, signature, cc)
    if key is None:
        return _compile_kernel(dispatcher, signature, cc, lto, {})
    with _locked(key):
        entry = _recall(key, "kernels") or {}
        if "ptx" not in entry or (lto and "lto_ptxas" not in entry):
            entry = _compile_kernel(dispatcher, signature, cc, lto, entry)
            _keep(key, entry, "kernels")
    return entry


def _compile_kernel(dispatcher: Any, signature: str, cc: tuple[int, int], lto: bool, entry: dict) -> dict:
    start = time.perf_counter()
    library = lowered_kernel(dispatcher, signature, cc)
    if "ptx" not in entry:
        entry = {**entry, "ptx": library.get_asm_str(cc=cc), "seconds": time.perf_counter() - start}
    if lto and "lto_ptxas" not in entry:
        entry = {**entry, "lto_ptxas": _lto_ptxas_info(library, cc)}
    return entry


class _locked:
    """An exclusive lock on ``kernels/<key>.lock`` while one process compiles that kernel (``fcntl.flock``: released
    when the process ends, however it ends); no lock where there is no ``fcntl`` or the folder is unwritable."""

    def __init__(self, key: str):
        self.path, self.file = user_cache() / "kernels" / f"{key}.lock", None

    def __enter__(self):
        try:
            import fcntl

            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = open(self.path, "a")
            fcntl.flock(self.file, fcntl.LOCK_EX)
        except (ImportError, OSError):
            self.file = None
        return self

    def __exit__(self, *exc):
        if self.file is not None:
            self.file.close()  # releases the lock


#: The module prefix of the kernels :func:`kernel_key` names: the package's, whose every source file is in the key.
_KEYED_MODULES = "gemm_steps."


def kernel_key(dispatcher: Any, signature: str, cc: tuple[int, int] = DEFAULT_CC) -> str | None:
    """What a kernel's PTX depends on, hashed: :func:`kernel_identity` with every global's value named as any process
    would name it (:func:`_portable_text`), and :func:`_fingerprint` (every source file of the package, the
    compilers, the tuning table). None for a kernel defined outside the package, whose helpers the key cannot see."""
    function = dispatcher.py_func
    if not str(function.__globals__.get("__name__", "")).startswith(_KEYED_MODULES):
        return None
    text = json.dumps([kernel_identity(dispatcher, signature, cc, _portable_text), _kernel_fingerprint()],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def kernel_identity(dispatcher: Any, signature: str, cc: tuple[int, int] = DEFAULT_CC,
                    value_text: Callable[[Any], str] = repr) -> list:
    """What a kernel's PTX depends on besides the package and the compilers, as a JSON-able list: its code (the file
    it was defined from — a generated kernel's file name carries the hash of its source and constants — its name and
    first line), every global name it can read with ``value_text`` of its value (a build's overrides), the signature,
    the dispatcher's compile options and the compute capability. With ``repr`` (the default) it tells kernels apart
    within one process (a function's ``repr`` holds its address); :func:`kernel_key` uses names that hold across
    processes."""
    function = dispatcher.py_func
    names = sorted((name, value_text(value)) for name, value in function.__globals__.items()
                   if not name.startswith("__") and name != function.__name__)
    code = function.__code__
    return [code.co_filename, code.co_firstlineno, function.__name__, signature,
            repr(sorted(compile_options(dispatcher).items())), list(cc), names]


def _portable_text(value: Any) -> str:
    """A global's value as every process names it: a function or class (or a dispatcher, by its Python function) by
    its module and qualified name, anything else by its ``repr`` without the addresses some reprs show."""
    named = getattr(value, "py_func", value)
    if callable(named) and hasattr(named, "__module__") and hasattr(named, "__qualname__"):
        return f"{named.__module__}.{named.__qualname__}"
    return _ADDRESS.sub("", repr(value))


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_FINGERPRINT: dict = {}


def _kernel_fingerprint() -> dict:
    """:func:`_fingerprint` of the package, its source digest and installed packages computed once a process (they
    do not change while it runs), the settings and the tuning table each time."""
    if not _FINGERPRINT:
        _FINGERPRINT.update(_fingerprint(()))
    return {**_FINGERPRINT, "compilers": {**_FINGERPRINT["compilers"], **_settings()}}


def compile_key(function: str, args, also_hash: Iterable[Path] = (), fingerprint: dict | None = None) -> str:
    """The key of :func:`remembered_in_gpu_mode`'s answers: a SHA-256 of ``function``, ``args`` (as JSON) and
    :func:`_fingerprint` (``fingerprint``: that, computed once for many keys)."""
    text = json.dumps([function, args, fingerprint or _fingerprint(also_hash)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _fingerprint(also_hash: Iterable[Path]) -> dict:
    """What an answer depends on besides the question: the contents of every ``.py`` and ``.json`` file of the
    package and of ``also_hash``, and :func:`_compilers`."""
    return {"source": _source_digest(also_hash), "compilers": _compilers()}


def _source_digest(also_hash: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for root in (Path(__file__).resolve().parents[1], *map(Path, also_hash)):
        for path in sorted(p for pattern in ("*.py", "*.json") for p in root.rglob(pattern)):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _compilers() -> dict:
    """What the compiled code depends on besides the source: Python, the installed Numba/llvmlite/CUDA packages,
    the ``ptxas`` on the ``PATH`` (the course also asks it for registers), the ``NUMBA_*`` settings (but the
    simulator switch, which the compiling child sets itself), ``CUDA_HOME``/``CUDA_PATH`` (where Numba may find a
    CUDA toolkit's NVVM instead of the wheels'), the mbarrier wait limit compiled into the kernels
    (``GEMM_STEPS_MBARRIER_TIMEOUT_S``) and the user's tuning table (on a GPU a step is built with the tiles
    it records: :mod:`gemm_steps.toolkit.tuned`)."""
    from importlib import metadata

    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()
                      if (d.metadata["Name"] or "").lower().startswith(("numba", "llvmlite", "cuda-", "nvidia-")))
    ptxas = shutil.which("ptxas")
    stat = os.stat(ptxas) if ptxas else None
    return {"python": sys.version, "packages": packages,
            "ptxas": [ptxas, stat and stat.st_size, stat and stat.st_mtime_ns], **_settings()}


def _settings() -> dict:
    """The part of :func:`_compilers` a running process can change: the settings and the tuning table."""
    settings = sorted((k, v) for k, v in os.environ.items()
                      if (k.startswith("NUMBA_") and k != "NUMBA_ENABLE_CUDASIM")
                      or k in ("CUDA_HOME", "CUDA_PATH", "GEMM_STEPS_MBARRIER_TIMEOUT_S"))
    tuned = user_table()  # on a GPU, a step is built with the tiles this table records for it
    return {"settings": settings, "tuned": tuned.read_text() if tuned.is_file() else None}


def report_in_subprocess(steps: Iterable[str] | None = None, cc: tuple[int, int] = DEFAULT_CC,
                         timeout: float = 1800) -> dict:
    """:func:`report`, computed in the GPU-mode worker (works from a simulator process)."""
    return gpu_mode.call("gemm_steps.harness.ptx:report", [str(s) for s in steps] if steps else None, list(cc),
                       timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemm_steps.harness.ptx",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", nargs="*", help="step names or numbers (default: all)")
    parser.add_argument("--cc", default=f"{DEFAULT_CC[0]}.{DEFAULT_CC[1]}", help="compute capability, e.g. 9.0")
    parser.add_argument("--dump", metavar="DIR", help="also write each kernel's PTX to DIR/<label>.ptx")
    parser.add_argument("--no-opcodes", action="store_true", help="leave the full opcode counts out")
    args = parser.parse_args(argv)
    cc = tuple(int(x) for x in args.cc.split("."))

    from ..toolkit.backend import SIMULATOR

    dump = str(Path(args.dump).resolve()) if args.dump else None
    try:
        if SIMULATOR:  # in the GPU-mode worker: Numba's mode is fixed once it is imported
            data = gpu_mode.call("gemm_steps.harness.ptx:report", args.steps, list(cc), dump)
        else:
            data = report(args.steps, cc, dump)
    except (PTXUnavailable, gpu_mode.GPUModeError) as exc:
        print(exc, file=sys.stderr)
        return 3
    if args.no_opcodes:
        for kernels in data.values():
            for stats in kernels.values():
                stats.pop("opcodes", None)
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0 if all("error" not in s for k in data.values() for s in k.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
