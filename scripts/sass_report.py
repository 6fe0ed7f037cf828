"""SASS of steps' kernels on the GPU at hand: registers, local memory, and the instruction mix of the hottest loop.

Usage (on a GPU machine with nvdisasm): python scripts/sass_report.py OUTDIR [step ...]
Writes OUTDIR/<kernel>.sass and OUTDIR/sass-report.json, and prints a summary line per kernel.
The hottest loop is the backward branch whose body holds the most FFMAs (the unrolled k-loop of a tiled step).
"""
import json
import re
import sys
from collections import Counter
from pathlib import Path

import gemm_steps

_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_LABEL = re.compile(r"^\s*(\.L_\w+):")
_BRANCH = re.compile(r"\bBRA\b.*?`?\(?(\.L_\w+)\)?")


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


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    chosen = sys.argv[2:]
    steps = [gemm_steps.get_step(int(s) if s.isdigit() else s) for s in chosen] if chosen else gemm_steps.steps()
    report = {}
    for step in steps:
        kernels = dict(step.kernels())
        kernels.update(getattr(step.module, "COUNTER_EXAMPLES", {}))
        for label, (dispatcher, signature) in kernels.items():
            compiled = dispatcher.compile(signature)
            sass = compiled.inspect_sass()
            (out / f"{label}.sass").write_text(sass)
            mix, size = loop_mix(sass)
            size -= mix.get("FFMA.reuse", 0)  # not an instruction of its own
            entry = {"registers": compiled.regs_per_thread, "local_bytes": compiled.local_mem_per_thread,
                     "shared_bytes": compiled.shared_mem_per_block,
                     "instructions": len(_INSTR.findall(sass)), "hot_loop_instructions": size, "hot_loop_mix": mix}
            report[label] = entry
            top = ", ".join(f"{k} {v}" for k, v in list(mix.items())[:8])
            print(f"{label:28s} regs {entry['registers']:3d} local {entry['local_bytes']:4d} B  loop {size:5d}: {top}",
                  flush=True)
    (out / "sass-report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
