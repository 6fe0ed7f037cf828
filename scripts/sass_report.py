"""SASS of steps' kernels on the GPU at hand: registers, local memory, and the instruction mix of the hottest loop.

Usage (on a GPU machine with nvdisasm): python scripts/sass_report.py OUTDIR [step ...]
Writes OUTDIR/<kernel>.sass and OUTDIR/sass-report.json, and prints a summary line per kernel.
The hottest loop is the backward branch whose body holds the most FFMAs (the unrolled k-loop of a tiled step):
``loop_mix`` of :mod:`gemm_steps.course.sass`.
"""
import json
import sys
from pathlib import Path

import gemm_steps
from gemm_steps.course.sass import instruction_count, loop_mix


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
                     "instructions": instruction_count(sass), "hot_loop_instructions": size, "hot_loop_mix": mix}
            report[label] = entry
            top = ", ".join(f"{k} {v}" for k, v in list(mix.items())[:8])
            print(f"{label:28s} regs {entry['registers']:3d} local {entry['local_bytes']:4d} B  loop {size:5d}: {top}",
                  flush=True)
    (out / "sass-report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
