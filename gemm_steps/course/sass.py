"""SASS, the machine code the GPU runs, read on a CPU: a kernel's PTX assembled by the ``ptxas`` binary here and
disassembled by ``nvdisasm``, and the instruction mix of its hottest loop.

* :func:`loop_mix` — the opcodes of the loop with the most FFMAs in a SASS listing (``scripts/sass_report.py`` uses it
  on a GPU host's own SASS; :func:`k_loop_counts` on the CPU's).
* :func:`k_loop_counts` — in a GPU-mode process: registers and the k-tile loop's instructions of built kernels.
  ``experiments/k_loop_sass.py`` runs it over step 9 and its experiments' variants and writes the results file lesson
  9's deep dive reads; :func:`step_k_loop` runs it over a shipped step (the test recomputes the file's row so).
* :func:`nvdisasm_binary` — ``nvdisasm`` on the PATH or from the ``nvidia-cuda-nvdisasm`` wheel.
"""

from __future__ import annotations

import re
from collections import Counter

_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_LABEL = re.compile(r"^\s*(\.L_\w+):")
_BRANCH = re.compile(r"\bBRA\b.*?`?\(?(\.L_\w+)\)?")


def instruction_count(sass: str) -> int:
    """Instructions in a SASS listing."""
    return len(_INSTR.findall(sass))


def loop_mix(sass: str) -> tuple[dict, int]:
    """Opcode counts inside the loop with the most FFMAs, and that loop's instruction count. The key
    ``FFMA.reuse`` counts FFMAs that read an operand from the register reuse cache (a ``.reuse`` flag)."""
    lines = sass.splitlines()
    labels, best = {}, (Counter(), 0)
    for number, line in enumerate(lines):
        if (m := _LABEL.match(line)):
            labels[m.group(1)] = number
        elif " BRA " in line and (m := _BRANCH.search(line)) and m.group(1) in labels:
            body = lines[labels[m.group(1)]:number + 1]
            ops = Counter(x.group(1) for x in map(_INSTR.search, body) if x)
            ops["FFMA.reuse"] = sum(1 for text in body if " FFMA " in text and ".reuse" in text)
            if ops["FFMA"] > best[0]["FFMA"]:
                best = (ops, sum(ops.values()))
    return dict(best[0].most_common()), best[1]


def nvdisasm_binary() -> str | None:
    """``nvdisasm`` on the PATH, or the one in the ``nvidia-cuda-nvdisasm`` wheel, or ``None``."""
    import importlib.util
    import shutil
    from pathlib import Path

    found = shutil.which("nvdisasm")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for candidate in sorted(Path(folder).glob("cu*/bin/nvdisasm")):
            return str(candidate)
    return None


def tool_version(binary: str) -> str:
    """``"nvdisasm 13.2.86"`` from a CUDA tool's ``--version``."""
    import subprocess

    text = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"V(\d+\.\d+\.\d+)", text)
    return f"{binary.rsplit('/', 1)[-1]} {found.group(1)}" if found else binary


def k_loop_counts(kernels: dict, cc: tuple[int, int] = (9, 0)) -> dict | None:
    """In a GPU-mode process: for each ``{label: TiledKernels}``, its fast kernel compiled to PTX (NVVM), assembled for
    ``sm_<cc>`` by the ``ptxas`` binary here and disassembled by ``nvdisasm``: ``{"tools": {"ptxas", "nvdisasm"},
    "kernels": {label: {"registers", "instructions", "ffma", "reuse"}}}``, where the last three count the k-tile loop
    (:func:`loop_mix`; an FFMA with a ``.reuse`` operand is one instruction). ``None`` where this machine lacks
    ``ptxas`` or ``nvdisasm``."""
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    from gemm_steps.harness.ptx import compile_kernel_ptx

    from .compiled import LOCAL_PTXAS, local_ptxas

    disassembler = nvdisasm_binary()
    if disassembler is None:
        return None
    out = {"tools": {"nvdisasm": tool_version(disassembler)}, "kernels": {}}
    with tempfile.TemporaryDirectory() as folder:
        for label, tiled in kernels.items():
            ptx = compile_kernel_ptx(tiled.kernels["fast"], tiled.signature("fast"))
            info = local_ptxas(ptx, cc)
            if not info.get("registers"):
                return None
            out["tools"]["ptxas"] = info["version"]
            if info.get("ptx_version"):  # the PTX version line lowered to what this ptxas reads (compiled.local_ptxas)
                ptx = re.sub(r"^\.version [\d.]+", f".version {info['ptx_version']}", ptx, count=1, flags=re.MULTILINE)
            source, cubin = Path(folder) / "kernel.ptx", Path(folder) / "kernel.cubin"
            source.write_text(ptx)
            subprocess.run([shutil.which("ptxas") or LOCAL_PTXAS, f"-arch=sm_{cc[0]}{cc[1]}", str(source), "-o",
                            str(cubin)], check=True, capture_output=True)
            sass = subprocess.run([disassembler, str(cubin)], check=True, capture_output=True, text=True).stdout
            mix, size = loop_mix(sass)
            out["kernels"][label] = {"registers": info["registers"], "instructions": size - mix.get("FFMA.reuse", 0),
                                     "ffma": mix.get("FFMA", 0), "reuse": mix.get("FFMA.reuse", 0)}
    return out


def step_k_loop(name: str) -> dict | None:
    """In a GPU-mode process: :func:`k_loop_counts` of a shipped tiled step, as built (run it from any process with
    ``gpu_mode.call("gemm_steps.course.sass:step_k_loop", name)``)."""
    from gemm_steps.harness.step import get_step

    step = get_step(name)
    return k_loop_counts({name: step.module.build(step.tiled.config)})
