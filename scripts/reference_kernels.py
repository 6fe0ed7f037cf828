#!/usr/bin/env python
"""The reference, dissected: what cuBLAS runs for the course's products, read off the GPU (issue 36).

    python scripts/reference_kernels.py [--sizes 4096 8192] [--steps 15 16 17 18 19] [--out FILE] [--raw DIR]

For cuBLAS TF32 (``cublasGemmEx`` with ``COMPUTE_32F_FAST_TF32``: the Hopper steps' reference), cuBLAS SGEMM (the
SIMT steps' reference) and the course's Hopper steps, row-major C = A·B at each size on device arrays:

* **the launch** (Nsight Compute's LaunchStats section, one launch after a warm-up): the kernel's name, grid, block,
  cluster, registers per thread, shared memory;
* **the code**: every SASS opcode of that kernel, counted (ncu's source page), and the forms of its tensor-core
  instruction (``HGMMA.64x256x8…``: whether an operand comes from registers, ``R…``, or from shared memory through a
  descriptor, ``gdesc``);
* **the work per FLOP** (the same launch): warp instructions executed, DRAM bytes, L2 bytes, cycles — what the lesson
  explains a clock and power difference from;
* **under load**: the SM clock and board power (NVML, sampled every 20 ms) while the kernel runs back to back for
  :data:`LOAD_SECONDS`, every kernel in the same process, one after another.

The JSON goes to ``results/reference-<gpu>-<date>.json`` (the lessons read it: lesson 17's "what cuBLAS runs"). Runs on
a GPU with Nsight Compute (``ncu``) on the PATH, as root or with the profiling counters allowed.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "scripts" / "profile_steps.py"
#: How long each kernel runs back to back for the clock and power readings, and the part at the start left out
#: (the clock settles in the first few hundred milliseconds).
LOAD_SECONDS, SETTLE_SECONDS = 3.0, 1.0
#: The counters read on the profiled launch (ncu names; sums over the GPU).
COUNTERS = {"instructions": "smsp__inst_executed.sum", "dram_bytes": "dram__bytes.sum",
            "l2_bytes": "lts__t_bytes.sum", "cycles": "sm__cycles_elapsed.max",
            "duration_ns": "gpu__time_duration.sum"}
#: The opcodes the lesson names (prefixes of a SASS opcode): tensor-core products, the copy engine's loads and
#: stores, barriers, the register hand-off.
NAMED = ("HGMMA", "UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "SYNCS", "UCGABAR", "BAR", "USETMAXREG", "LDS", "STS",
         "LDSM", "STSM", "LDG", "STG", "FFMA", "WARPGROUP")


def ncu(args: list[str], raw: Path | None, tag: str) -> str:
    """Run Nsight Compute on the profile driver; its standard output (kept under ``raw`` when given)."""
    done = subprocess.run(["ncu", *args], capture_output=True, text=True, timeout=900)
    if raw is not None:
        (raw / f"{tag}.txt").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"ncu {' '.join(args[:6])} … failed ({done.returncode}): {done.stderr[-1500:]}")
    return done.stdout


def _csv_rows(text: str) -> list[dict]:
    """The CSV table in ncu's output (lines before its header, ==PROF== and the program's own, dropped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"') or line.startswith('"Address"')), None)
    if start is None:
        return []
    return list(csv.DictReader(io.StringIO("\n".join(line for line in lines[start:] if line.startswith('"')))))


#: ncu's units (details page) → the factor to its base unit (bytes, nanoseconds, counts).
UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12, "ns": 1, "nsecond": 1, "us": 1e3,
         "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}


def _number(text: str, unit: str = ""):
    """A metric's value in its base unit (ncu prints 348.98 Mbyte, 3.24 ms, 585,905 cycle); text stays text."""
    text = text.replace(",", "").strip()
    try:
        value = float(text) * UNITS.get(unit.strip(), 1)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value


def profile(target: str, size: int, work: Path, raw: Path | None) -> dict:
    """One launch of ``target`` at size³ (after one warm-up launch) into an Nsight Compute report: its LaunchStats,
    :data:`COUNTERS` and SASS (:func:`launch_and_counters`, :func:`sass_opcodes`)."""
    report = work / f"{target}-{size}"
    ncu(["-f", "-o", str(report), "--section", "LaunchStats", "--section", "SourceCounters",
         "--metrics", ",".join(COUNTERS.values()), "--kernel-name", f"regex:{kernel_regex(target)}",
         "--launch-skip", "1", "--launch-count", "1", sys.executable, str(PROFILE), target, "--size", str(size),
         "--warmup", "1"], raw, f"profile-{target}-{size}")
    found = launch_and_counters(ncu(["-i", f"{report}.ncu-rep", "--csv", "--page", "details"], raw,
                                    f"details-{target}-{size}"), target)
    found["sass"] = sass_opcodes(ncu(["-i", f"{report}.ncu-rep", "--csv", "--page", "source", "--print-source", "sass"],
                                     raw, f"sass-{target}-{size}"), target)
    return found


def launch_and_counters(details: str, target: str) -> dict:
    """The kernel's name, its LaunchStats and :data:`COUNTERS`, from ncu's details page (CSV)."""
    rows = _csv_rows(details)
    if not rows:
        raise RuntimeError(f"no launch of {target} was profiled (kernel filter {kernel_regex(target)!r})")
    by_name = {row["Metric Name"]: _number(row["Metric Value"], row.get("Metric Unit", "")) for row in rows}
    counters = {key: by_name.get(metric) for key, metric in COUNTERS.items()}
    launch = {f"{row['Metric Name']} [{row['Metric Unit']}]" if row.get("Metric Unit") else row["Metric Name"]:
              _number(row["Metric Value"]) for row in rows if row.get("Section Name") == "Launch Statistics"}
    return {"kernel": rows[0]["Kernel Name"], "launch": launch, "counters": counters}


def sass_opcodes(source: str, target: str) -> dict:
    """Every SASS opcode of the profiled kernel, counted, and the distinct forms of its HGMMA instructions."""
    rows = _csv_rows(source)
    source_key = next((k for k in (rows[0] if rows else {}) if k.lower() == "source"), None)
    if source_key is None:
        raise RuntimeError(f"no SASS in ncu's source page for {target}")
    executed_key = next((k for k in rows[0] if k == "Instructions Executed"), None)
    opcodes, executed, hgmma = Counter(), Counter(), Counter()
    for row in rows:
        text = row[source_key].strip()
        text = re.sub(r"^@!?U?P\w+\s+", "", text)  # a predicate
        if not text:
            continue
        opcode = text.split()[0].rstrip(";")
        opcodes[opcode] += 1
        if executed_key is not None:
            executed[opcode] += int(_number(row[executed_key]) or 0)  # warp-level, over the whole launch
        if opcode.startswith("HGMMA"):
            operands = [o.strip() for o in text[len(opcode):].rstrip(";").split(",")]
            # HGMMA d, a, b(, …): a is a register (R…) or a shared-memory descriptor (gdesc[…])
            source_a = "registers" if len(operands) > 1 and operands[1].startswith("R") else "shared memory"
            hgmma[f"{opcode} (A from {source_a})"] += 1

    def family(counts: Counter) -> dict:
        return {name: sum(n for op, n in counts.items() if re.match(rf"{name}(?:[._]|$)", op)) for name in NAMED}

    return {"instructions": sum(opcodes.values()), "named": family(opcodes), "executed": family(executed),
            "multicast_loads": sum(n for op, n in opcodes.items() if "MULTICAST" in op), "hgmma": dict(hgmma),
            "opcodes": dict(sorted(opcodes.items(), key=lambda item: -item[1])),
            "executed_by_opcode": dict(sorted(executed.items(), key=lambda item: -item[1]))}


def per_flop(counters: dict, size: int) -> dict:
    """Warp instructions, DRAM bytes and L2 bytes per FLOP of a size³ product."""
    flop = 2.0 * size ** 3
    return {key: counters[name] / flop if counters.get(name) else None
            for key, name in (("warp_instructions", "instructions"), ("dram_bytes", "dram_bytes"),
                              ("l2_bytes", "l2_bytes"))}


def reparse(document: dict, raw: Path) -> dict:
    """``document``'s kernels parsed again from the ncu outputs a run kept (``--raw``): for a parser fixed after the
    run (the first H200 run read ncu's 348.98 Mbyte as 348.98 bytes). Nothing is measured again."""
    for target, sizes in document["kernels"].items():
        for size, entry in sizes.items():
            details = (raw / f"details-{target}-{size}.txt").read_text()
            entry.update(launch_and_counters(details, target))
            entry["sass"] = sass_opcodes((raw / f"sass-{target}-{size}.txt").read_text(), target)
            entry["per_flop"] = per_flop(entry["counters"], int(size))
    document.setdefault("method", {})["reparsed"] = time.strftime("%Y-%m-%d")
    return document


def kernel_regex(target: str) -> str:
    done = subprocess.run([sys.executable, str(PROFILE), "--kernel-regex", target], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def under_load(targets: list[str], size: int) -> dict:
    """SM clock (MHz) and board power (W) while each target runs back to back for :data:`LOAD_SECONDS`, in this
    process, one target after another (the same GPU, minutes apart at most): median over the samples after
    :data:`SETTLE_SECONDS` (:func:`gemm_steps.harness.gpu_clock.load_record`), and each target's TFLOPS over that
    loop (rough: launches back to back, no L2 flush)."""
    from gemm_steps.harness.gpu_clock import load_records

    sys.path.insert(0, str(PROFILE.parent))
    from profile_steps import call_of

    return load_records(lambda a, b, c: {target: call_of(target, a, b, c) for target in targets}, size,
                        LOAD_SECONDS, SETTLE_SECONDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--steps", nargs="*", default=["warpgroup_tf32", "tma_pipeline", "warp_specialized",
                                                       "warp_specialized_3xtf32", "pingpong"])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--raw", type=Path, default=None, help="keep ncu's outputs here")
    parser.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)  # the child below
    parser.add_argument("--reparse", type=Path, nargs=2, metavar=("JSON", "RAW"),
                        help="parse a kept run's ncu outputs (RAW) again into JSON, measuring nothing")
    args = parser.parse_args(argv)
    if args.reparse:
        path, raw = args.reparse
        path.write_text(json.dumps(reparse(json.loads(path.read_text()), raw), indent=1) + "\n")
        print(path)
        return 0
    import gemm_steps

    if gemm_steps.SIMULATOR:
        print("reference_kernels needs a GPU and Nsight Compute", file=sys.stderr)
        return 2
    if args.load_only:  # a child: the clock and power readings, printed as JSON
        print(json.dumps({size: under_load(["cublas_tf32", "cublas", *args.steps], size) for size in args.sizes}))
        return 0
    from gemm_steps.harness.environment import environment

    import tempfile

    if args.raw is not None:
        args.raw.mkdir(parents=True, exist_ok=True)
    env = environment()
    kernels = {}
    work = Path(tempfile.mkdtemp(prefix="reference-kernels-"))
    for size in args.sizes:
        for target in ["cublas_tf32", "cublas", *args.steps]:
            print(f"reference_kernels: {target} at {size}³ — launch, counters, SASS …", file=sys.stderr, flush=True)
            entry = profile(target, size, work, args.raw)
            entry["per_flop"] = per_flop(entry["counters"], size)
            kernels.setdefault(target, {})[str(size)] = entry
    print("reference_kernels: clock and power under load …", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, __file__, "--load-only", "--sizes", *map(str, args.sizes), "--steps",
                           *args.steps], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"the load run failed: {done.stderr[-2000:]}")
    load = json.loads(done.stdout.strip().splitlines()[-1])
    document = {"schema": 1, "environment": env, "method": {
        "launch": "ncu --section LaunchStats, one launch after a warm-up (scripts/profile_steps.py drives it)",
        "sass": "ncu --page source --print-source sass of the same launch; opcodes counted per instruction",
        "counters": COUNTERS, "load": f"back-to-back launches for {LOAD_SECONDS} s a kernel, NVML every 20 ms, "
                                      f"median after {SETTLE_SECONDS} s"},
        "kernels": kernels, "under_load": load}
    from gemm_steps.harness.environment import file_slug

    out = args.out or REPO / "results" / f"reference-{file_slug(env.get('gpu', 'gpu'))}-{time.strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
