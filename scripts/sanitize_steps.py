"""Launch steps once each at small, awkward shapes — the program ``scripts/sanitize.sh`` runs under compute-sanitizer.

    python scripts/sanitize_steps.py [--steps NAME|NUMBER ...] [--shapes 133x71x45 ...]
    python scripts/sanitize_steps.py --summarize DIR      # summary.md from the tool logs sanitize.sh wrote in DIR

Each launch gets device inputs and a NaN-poisoned device output, is synchronised, and is checked against float64
NumPy (so a kernel that is "clean" under a sanitizer but wrong still fails). Default shapes: 133×71×45 and
257×129×77 (ragged everywhere: edge kernels only), 257×260×48 (K a multiple of every BLOCK_K, N of 4: steps 6–9's
128-bit fast kernels run on the full tiles and their edge kernels on the rest; steps 10–11's guarded variant loops
over every tile) and 256×512×48 (2×2 full tiles of 128×256: steps 10–11's fast variant, with stream-K's fixup).
Exit status 0 only if every launch ran and was right.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

DEFAULT_SHAPES = ["133x71x45", "257x129x77", "257x260x48", "256x512x48"]
TOOLS = ["memcheck", "racecheck", "initcheck", "synccheck"]
BLOCK = re.compile(r"^===== step (?P<step>\S+) · tool (?P<tool>\S+) · exit (?P<rc>-?\d+) =====$", re.M)
ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?")
#: racecheck ends with its own line instead: "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)";
#: both errors and warnings count as failures here.
RACECHECK = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)")


def run(step_names: list[str] | None, shapes: list[str]) -> int:
    import gemm_steps  # first: it chooses GPU or simulator before Numba is imported
    import numpy as np
    from gemm_steps.harness.verify import relative_error, tolerance_for
    from numba import cuda

    print(gemm_steps.backend(), flush=True)
    chosen = gemm_steps.steps() if not step_names else [
        gemm_steps.get_step(int(s) if s.isdigit() else s) for s in step_names]
    rng = np.random.default_rng(0)
    failures = 0
    for step in chosen:
        for text in shapes:
            m, n, k = (int(x) for x in text.lower().split("x"))
            a = rng.standard_normal((m, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            out = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
            start = time.perf_counter()
            try:
                step(cuda.to_device(a), cuda.to_device(b), out=out)
                cuda.synchronize()
                c = out.copy_to_host()
            except Exception as exc:  # reported, and the exit status says so
                print(f"FAIL {step.number} {step.name} {m}x{n}x{k}: {type(exc).__name__}: {exc}", flush=True)
                failures += 1
                continue
            nan = int(np.isnan(c).sum())
            err = relative_error(c, a, b)
            limit = tolerance_for(step, k)  # the TF32 step has its own (harness.verify.tf32_tolerance)
            ok = nan == 0 and err <= limit
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {step.number} {step.name} {m}x{n}x{k}: rel. error {err:.2e} "
                  f"(tolerance {limit:.2e}), unwritten {nan}, {time.perf_counter() - start:.1f} s", flush=True)
    return 1 if failures else 0


def summarize(directory: Path, environment: Path | None = None) -> int:
    """Write DIR/summary.md: pass/fail per step per tool, from the last block for each in DIR/<tool>.log."""
    results: dict[str, dict[str, str]] = {}
    order: list[str] = []
    tools_seen = []
    for tool in TOOLS:
        log = directory / f"{tool}.log"
        if not log.exists():
            continue
        tools_seen.append(tool)
        text = log.read_text(errors="replace")
        blocks = list(BLOCK.finditer(text))
        for i, block in enumerate(blocks):
            body = text[block.end(): blocks[i + 1].start() if i + 1 < len(blocks) else len(text)]
            step, rc = block.group("step"), int(block.group("rc"))
            counts = [int(x) for x in ERRORS.findall(body)] + [
                int(e) + int(w) for e, w in RACECHECK.findall(body)]
            program_failed = bool(re.search(r"^FAIL ", body, re.M))
            if not counts:
                verdict = f"FAIL (no ERROR/RACECHECK SUMMARY; exit {rc})"
            elif max(counts) or rc != 0 or program_failed:  # any summary line with errors fails the run
                why = [f"{max(counts)} errors"] + (["wrong result"] if program_failed else []) + (
                    [f"exit {rc}"] if rc else [])
                verdict = "FAIL (" + ", ".join(why) + ")"
            else:
                verdict = "pass (0 errors)"
            if step not in order:
                order.append(step)
            results.setdefault(step, {})[tool] = verdict
    lines = ["# compute-sanitizer report", ""]
    if environment is not None and environment.exists():
        lines += ["```", environment.read_text().strip(), "```", ""]
    lines += ["| step | " + " | ".join(tools_seen) + " |", "|---|" + "---|" * len(tools_seen)]
    for step in order:
        lines.append(f"| {step} | " + " | ".join(results[step].get(t, "not run") for t in tools_seen) + " |")
    failed = sum(v.startswith("FAIL") for row in results.values() for v in row.values())
    lines += ["", f"{failed} failing step × tool runs" if failed else "All runs clean: 0 errors, every result right."]
    (directory / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed or not results else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", nargs="*", help="step names or numbers (default: all)")
    parser.add_argument("--shapes", nargs="*", default=DEFAULT_SHAPES, help="MxNxK shapes (default: %(default)s)")
    parser.add_argument("--summarize", metavar="DIR", help="write DIR/summary.md from the logs sanitize.sh wrote")
    parser.add_argument("--environment", metavar="FILE", help="with --summarize: text to put at the top")
    args = parser.parse_args()
    if args.summarize:
        return summarize(Path(args.summarize), Path(args.environment) if args.environment else None)
    return run(args.steps, args.shapes)


if __name__ == "__main__":
    sys.exit(main())
