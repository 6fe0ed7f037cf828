#!/usr/bin/env python
"""Does ``matmul`` generalize? Time it on the held-out set of issue 37 against both cuBLAS, in one run (GPU).

    python scripts/held_out.py [--out results/FILE.json | --out DIR/] [--quick]
    GEMM_STEPS_SOURCE_COMMIT=$(git rev-parse HEAD) python scripts/held_out.py …   # on a copy of the tree elsewhere

For every shape of ``gemm_steps.harness.held_out.shapes()`` (24 shapes drawn at random with a fixed seed, committed
before any measurement, plus two hand-named shapes per class: ragged, wave boundary, K-heavy, skinny, small), in one
process and one ``run_benchmark`` per shape (CUDA events, warm-up, median of at least 20 launches, L2 flushed and C
poisoned with NaN before each, every output checked against cuBLAS and a float64 sample; docs/measurement.md):

* the kernel ``matmul(precision="tf32")`` chooses (``dispatch.choose``: the step or variant, launched directly on
  device arrays, so the call's Python overhead is not in the time), against cuBLAS TF32;
* the kernel the default ``matmul`` (``precision="tf32x3"``, the FP32 contract) chooses, against cuBLAS SGEMM;
* cuBLAS SGEMM and cuBLAS TF32 themselves (same inputs, same stream).

Where both precisions choose the same kernel it is timed once. The document records, per shape, which kernel each
precision chose and ``dispatch``'s reason, and the targets of issue 37 met or not (``held_out.summarize``); it goes to
``results/held-out-<gpu>-<date>.json`` (``results_files.held_out_name``; ``-2``… for a second run the same day), or
into the folder ``--out`` names when it ends with ``/``, and is rewritten after every shape (a run cut short keeps
what it measured). ``--quick``: 8 drawn shapes and one per class, 5 launches each (a smoke test: ``…-quick.json``).

Time on an H100 (expected, not yet measured): the timing itself about 2 minutes (34 shapes, four entries each, at
most 0.25 s of launches an entry beyond the 20 required; the largest product, 10028×2252×11224, takes about 10 ms at
cuBLAS SGEMM speed); on a cold kernel cache each kernel ``matmul`` chooses compiles on its first launch (seconds to
tens of seconds each, a handful of kernels), so 3–5 minutes in all. ``--quick`` about a third of that.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
#: Timing per entry: at least REPEATS launches, and more up to MAX_SECONDS of them (run_benchmark's rule).
REPEATS, MAX_SECONDS = 20, 0.25
QUICK_DRAWN, QUICK_REPEATS = 8, 5
#: The record names of matmul's two choices in the run (beside run_benchmark's "cublas" and "cublas_tf32").
ENTRY = {"tf32": "matmul_tf32", "tf32x3": "matmul_tf32x3"}


def refuse_without_gpu() -> None:
    from gemm_steps.toolkit.backend import SIMULATOR

    if SIMULATOR:
        sys.exit("scripts/held_out.py times kernels against cuBLAS on a CUDA GPU; this machine has none (Numba's "
                 "CUDA simulator is active), so nothing was run. The choices alone: gemm-steps explain M N K "
                 "--precision tf32")


def chosen_set(quick: bool, seed: int | None = None) -> list:
    from gemm_steps.harness import held_out

    shapes = held_out.shapes(held_out.SEED if seed is None else seed)
    if not quick:
        return shapes
    drawn = [s for s in shapes if s.kind == "drawn"][:QUICK_DRAWN]
    first_of_each = {s.kind: s for s in reversed(shapes) if s.kind != "drawn"}
    return drawn + list(reversed(first_of_each.values()))


def entry_for(choice, name: str):
    """What run_benchmark times for one of matmul's choices: the candidate's own launch, under ``name``."""
    from gemm_steps.harness import dispatch

    chosen = dispatch.candidate(choice.step_name)
    return SimpleNamespace(name=name, number=chosen.number, launch=chosen.launch, config={},
                           arithmetic=chosen.arithmetic)


def choice_record(choice) -> dict:
    from gemm_steps.harness import dispatch

    chosen = dispatch.candidate(choice.step_name)
    return {"step": choice.step_name, "number": chosen.number, "arithmetic": chosen.arithmetic,
            "reason": choice.reason, "nearest": list(choice.nearest) if choice.nearest else None,
            "table_gpu": choice.gpu}


def measure(shape, repeats: int) -> tuple[dict, dict]:
    """One shape: (its row for held_out.summarize, the run_benchmark document)."""
    from gemm_steps.harness import dispatch
    from gemm_steps.harness.bench import run_benchmark
    from gemm_steps.harness.held_out import BASELINE
    from gemm_steps.harness.verify import tolerance_of

    choices = {precision: dispatch.choose(*shape.shape, precision) for precision in BASELINE}
    entries, timed_as = [], {}
    for precision, choice in choices.items():
        same = next((p for p, c in choices.items() if p in timed_as and c.step_name == choice.step_name), None)
        if same is not None:  # the same kernel for both precisions: timed once
            timed_as[precision] = timed_as[same]
            continue
        timed_as[precision] = ENTRY[precision]
        entries.append(entry_for(choice, ENTRY[precision]))
    run = run_benchmark(entries, [shape.shape], repeats=repeats, max_seconds=MAX_SECONDS, include_cublas=True,
                        include_cublas_tf32=True, progress=lambda message: None)
    by_name = {r["step"]: r for r in run["records"]}
    row = {"M": shape.m, "N": shape.n, "K": shape.k, "kind": shape.kind}
    for precision, choice in choices.items():
        record, baseline = by_name.get(timed_as[precision], {}), by_name.get(BASELINE[precision], {})
        limit = tolerance_of(record.get("arithmetic", "fp32"), shape.k)
        wrong = bool(record.get("unwritten")) or not record.get("sampled_rel_error_fp64", float("inf")) <= limit
        row[precision] = {**choice_record(choice), "timed_as": timed_as[precision], "ms": record.get("median_ms"),
                          "baseline": BASELINE[precision], "baseline_ms": baseline.get("median_ms"),
                          "wrong": wrong, "error": record.get("error")}
    for record in run["records"]:
        record["held_out_kind"] = shape.kind
    return row, run


def line(index: int, total: int, row: dict, seconds: float) -> str:
    """One progress line: the shape, each precision's choice and its speed over its baseline."""
    from gemm_steps.harness.held_out import ratio

    parts = []
    for precision, against in (("tf32", "cuBLAS TF32"), ("tf32x3", "cuBLAS SGEMM")):
        timed = row[precision]
        speed = f"{ratio(row, precision):5.2f}× {against}" if timed["ms"] else f"FAILED {timed.get('error')}"
        parts.append(f"{precision}: {timed['step']} {speed}{'  WRONG' if timed['wrong'] else ''}")
    shape = f"{row['M']}×{row['N']}×{row['K']}"
    return f"[{index:2d}/{total}] {row['kind']:13s} {shape:19s} " + " | ".join(parts) + f"  ({seconds:.1f} s)"


def summary_lines(summary) -> list[str]:
    """The summary of a run (``held_out.Summary``) as text: ratios by size and kind, then each target."""
    against = {"tf32": "cuBLAS TF32", "tf32x3": "cuBLAS SGEMM"}
    sizes = {"large": "M·N·K ≥ 2^30", "small": "M·N·K < 2^30"}
    lines = []
    for precision in against:
        lines.append(f'matmul(precision="{precision}") over {against[precision]} (same run):')
        lines.append(f"  {'shapes':22s} {'count':>5s} {'median':>7s} {'min':>6s}  slowest")
        for group in (g for g in summary.groups if g.precision == precision):
            slowest = "×".join(map(str, group.slowest)) if group.slowest else "-"
            failed = f"  ({group.failed} failed or wrong)" if group.failed else ""
            lines.append(f"  {sizes.get(group.name, group.name):22s} {group.count:5d} {group.median:7.2f} "
                         f"{group.minimum:6.2f}  {slowest}{failed}")
        chosen = ", ".join(f"{name} ×{count}" for name, count in summary.chosen[precision].items())
        lines.append(f"  chosen: {chosen}")
    lines.append("targets (issue 37):")
    for verdict in summary.verdicts:
        target = verdict.target
        value = "-" if verdict.value is None else f"{verdict.value:.2f}"
        lines.append(f"  {'met    ' if verdict.met else 'NOT MET'}  {target.precision:6s} {sizes[target.size]}: "
                     f"{target.statistic} ≥ {target.threshold:.2f}× {against[target.precision]}: {value}")
    return lines


def output_path(out: str | None, gpu: str, quick: bool) -> Path:
    from gemm_steps.harness import results_files

    if out is not None and not out.endswith("/") and not Path(out).is_dir():
        return Path(out)
    folder = results_files.RESULTS_DIR if out is None else Path(out)
    run = 1
    while (folder / results_files.held_out_name(gpu, time.strftime("%Y-%m-%d"), run, quick)).exists():
        run += 1  # a second run the same day never overwrites the first
    return folder / results_files.held_out_name(gpu, time.strftime("%Y-%m-%d"), run, quick)


#: Set to the commit whose tree runs (a device run copies the working tree onto a checkout whose ``.git`` may be an
#: older commit's: ``git_commit()`` then says ``<that commit>+modified``), it is recorded as the run's ``commit``,
#: and what git says beside it as ``git_here``.
SOURCE_COMMIT = "GEMM_STEPS_SOURCE_COMMIT"


def commit() -> str | None:
    """The commit whose tree runs: :data:`SOURCE_COMMIT` where it is set, else :func:`git_commit`'s."""
    return os.environ.get(SOURCE_COMMIT) or git_commit()


def git_commit() -> str | None:
    """The checkout's commit, with ``+modified`` where tracked files differ from it: the tree that ran is then not
    that commit's (a device run copies the working tree onto the checkout it started from: results/README.md names
    the tree where this says so)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    name = head.stdout.strip()
    return (name + ("+modified" if status.stdout.strip() else "")) if name else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="the JSON file to write, or a folder (ending in /) for the usual name")
    parser.add_argument("--quick", action="store_true", help="a few shapes and launches: a smoke test")
    parser.add_argument("--seed", type=int, help="draw with this seed instead of held_out.SEED: a set already "
                        "measured (held_out.SEEN_SEEDS) is no longer held out; for a before/after comparison only")
    args = parser.parse_args(argv)
    refuse_without_gpu()

    from numba import cuda

    from gemm_steps.harness import dispatch, held_out, results_files
    from gemm_steps.harness.bench import save

    device = cuda.get_current_device()
    gpu = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    path = output_path(args.out, gpu, args.quick)
    seed = held_out.SEED if args.seed is None else args.seed
    shapes = chosen_set(args.quick, seed)
    repeats = QUICK_REPEATS if args.quick else REPEATS
    table = dispatch.table(gpu)
    document = {
        "schema": 1, "suite": "held-out", "quick": args.quick, "commit": commit(),
        **({"git_here": git_commit()} if os.environ.get(SOURCE_COMMIT) else {}),
        "held_out": {"seed": seed, "seen": seed in held_out.SEEN_SEEDS, "drawn": held_out.DRAWN, "side_range": [held_out.SIDE_MIN,
                     held_out.SIDE_MAX], "min_product": held_out.MIN_PRODUCT, "max_bytes": held_out.MAX_BYTES,
                     "class_shapes": held_out.CLASS_SHAPES},
        "dispatch_table": {"file": results_files.display_path(dispatch.table_file(gpu)) if table else None,
                           "gpu": (table or {}).get("gpu"), "date": (table or {}).get("date")},
        "timed": "each precision's chosen kernel launched directly on device arrays (no Python call overhead)",
        "records": [], "shapes": [],
    }
    print(f"held-out set: {len(shapes)} shapes on {gpu}, dispatch table of {document['dispatch_table']['gpu']}; "
          f"writing {results_files.display_path(path)}", flush=True)
    start = time.perf_counter()
    for index, shape in enumerate(shapes, 1):
        began = time.perf_counter()
        row, run = measure(shape, repeats)
        document["environment"], document["method"] = run["environment"], run["method"]
        document["records"] += run["records"]
        document["shapes"].append(row)
        save(document, path)
        print(line(index, len(shapes), row, time.perf_counter() - began), flush=True)
    summary = held_out.summarize(document["shapes"])
    document["summary"] = {"verdicts": [{"precision": v.target.precision, "size": v.target.size,
                                         "statistic": v.target.statistic, "threshold": v.target.threshold,
                                         "value": v.value, "met": v.met} for v in summary.verdicts],
                           "groups": [vars(group) for group in summary.groups], "chosen": summary.chosen,
                           "wall_s": time.perf_counter() - start}
    save(document, path)
    print("\n".join(summary_lines(summary)))
    print(f"{len(shapes)} shapes in {time.perf_counter() - start:.0f} s; wrote {results_files.display_path(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
