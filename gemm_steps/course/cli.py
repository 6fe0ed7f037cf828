"""The ``gemm-steps`` command: ``info``, ``verify``, ``bench``, ``plot``, ``tune``, ``diff``, ``explain``, ``exercise``,
``readme-table``.

``gemm-steps bench`` is the course's main job. On a GPU it benchmarks every step against cuBLAS, saves the
results JSON and its plots in ``results/`` and prints a summary. Without a GPU it says so, plots the shipped GPU
results instead, naming the file they came from (the newest course benchmark in ``results/``, by the rules of
:mod:`gemm_steps.harness.results_files`), and then checks every step on Numba's CUDA simulator (correctness only:
simulator timings mean nothing; minutes). ``gemm-steps diff 8 9`` shows what changed in the kernel from one step to
another.

Exit status: 0 all good, 1 a check failed (a wrong or failed kernel) or the GPU that ``NUMBA_ENABLE_CUDASIM=0`` asks
for is not there (said in a sentence), 2 a usage error (bad argument, missing file), reported as argparse reports one
— the command's usage line, then the error on one line — never with a traceback; 141 when the reader of the output
went away (``gemm-steps info | head -2``), quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SIZES = (512, 1024, 2048, 4096, 8192)
TABLE_START, TABLE_END = "<!-- steps-table:start -->", "<!-- steps-table:end -->"
RESULTS_START, RESULTS_END = "<!-- results:start -->", "<!-- results:end -->"
#: What ``explain`` says each of matmul's precisions lets it run (gemm_steps.harness.dispatch.PRECISIONS).
PRECISION_MEANS = {
    "ieee": "the FP32 units only (steps {fp32}): every product and sum an IEEE float32 operation",
    "tf32x3": "every kernel that keeps the FP32 contract (docs/fp32_contract.md): the FP32 steps and the 3xTF32 "
              "steps {3xtf32} — within 2× of the sequential float32 sum's error, with its inf/NaN pattern",
    "tf32": "any kernel, the TF32 steps {tf32} included (inputs rounded to TF32: ~3e-4 relative error)",
}


def precision_means(precision: str) -> str:
    """What ``precision`` lets ``matmul`` run, with the step numbers of each arithmetic read from the steps."""
    from gemm_steps.harness.step import all_steps

    numbers = {}
    for step in all_steps():
        numbers.setdefault(step.arithmetic, []).append(str(step.number))
    return PRECISION_MEANS[precision].format(**{arithmetic: ", ".join(found) for arithmetic, found in numbers.items()})


class UserError(Exception):
    """A mistake in how the command was called: reported in one line, exit status 2."""


def say(message: str = "") -> None:
    """Progress and notes go to stderr, so stdout holds only the tables."""
    print(message, file=sys.stderr, flush=True)


# -- arguments --------------------------------------------------------------------------------------------------
def shape(text: str) -> tuple[int, int, int]:
    """``MxNxK`` (or ``M×N×K``) → (M, N, K), all positive."""
    parts = re.split(r"[x×X]", text.strip())
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape: it has {len(parts)} part(s); write M×N×K, "
                                         "three sizes, as e.g. 1024x512x256")
    for name, part in zip("MNK", parts):
        if not part.strip().isdigit():
            raise argparse.ArgumentTypeError(f"{text!r} is not a shape: {name} = {part!r} is not a whole number")
        if int(part) == 0:
            raise argparse.ArgumentTypeError(
                f"{text!r}: {name} = 0 makes an empty product (or, for K, a matrix of zeros), with nothing to time or "
                "check here; matmul itself accepts it and follows NumPy")
    return int(parts[0]), int(parts[1]), int(parts[2])


def size(text: str) -> int:
    if not text.strip().isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; give a positive integer N for an N×N×N product")
    return int(text)


def dimension(text: str) -> int:
    """One side of a product (M, N or K): a positive whole number."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; give a positive whole number")
    if int(text) == 0:
        raise argparse.ArgumentTypeError("0 makes an empty product (or, for K, a matrix of zeros), with no kernel to "
                                         "choose; give a positive whole number")
    return int(text)


def count(text: str) -> int:
    if not text.strip().isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of runs; give a positive whole number")
    return int(text)


def lines(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of lines; give 0 or a positive whole number")
    return int(text)


def chosen_steps(names: list[str] | None):
    """The steps named (by name or number) on the command line; all of them by default."""
    import gemm_steps

    if not names:
        return gemm_steps.steps()
    try:
        found = [gemm_steps.get_step(int(n) if n.isdigit() else n) for n in names]
    except KeyError as exc:
        raise UserError(exc.args[0]) from None
    return sorted(set(found), key=lambda s: s.number)  # each once, in course order


def results_dir() -> Path:
    """Where benchmarks are written and read: the checkout's ``results/``, else ``./results``
    (:data:`gemm_steps.harness.results_files.RESULTS_DIR`)."""
    from gemm_steps.harness import results_files

    return Path(results_files.RESULTS_DIR)


def plots_module():
    """:mod:`gemm_steps.course.plots` with Matplotlib's Agg backend: the command only writes PNGs, never a window."""
    import matplotlib

    matplotlib.use("Agg")
    from . import plots

    return plots


def load_results(path: str | Path) -> dict:
    from gemm_steps.harness import bench

    try:
        return bench.load(path)
    except FileNotFoundError:
        raise UserError(f"no such results file: {path}") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a folder; give one results file, e.g. results/bench-<gpu>-<date>.json") from None
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a text file; give a results file written by `gemm-steps bench` "
                        "(JSON)") from None
    except ValueError as exc:  # not JSON (json.JSONDecodeError is a ValueError), or JSON of another kind
        if isinstance(exc, json.JSONDecodeError):
            raise UserError(f"{path} is not a results file: it is not JSON (the first problem is on line {exc.lineno}); give a "
                            "file written by `gemm-steps bench`") from None
        raise UserError(f"{path} is JSON but not a results file of `gemm-steps bench` (no schema-1 records)") from None
    except OSError as exc:  # unreadable
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def newest_shipped_results() -> tuple[Path, dict] | None:
    """The newest GPU benchmark of the course's steps in ``results/``, or None
    (:func:`gemm_steps.harness.results_files.newest_benchmark`)."""
    from gemm_steps.harness import results_files

    return results_files.newest_benchmark()


# -- tables -----------------------------------------------------------------------------------------------------
def steps_table_markdown() -> str:
    """The README's step table, exactly as it stands between the ``steps-table`` markers (kept in sync by a test)."""
    import gemm_steps

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| # | Step | Title | What changes |", "|--:|:-----|:------|:-------------|"]
    lines += [f"| {s.number} | `{s.name}` | {cell(s.title)} | {cell(s.summary)} |" for s in gemm_steps.steps()]
    return "\n".join(lines)


def results_markdown() -> str:
    """The README's results section: the newest shipped benchmark as a Markdown table, and its plots.

    Every number comes from the file (kept in sync with it by a test); the environment line says where it ran.
    """
    from gemm_steps.harness.environment import short_label

    shipped = newest_shipped_results()
    if shipped is None:
        return "_No GPU benchmark is shipped in `results/` yet._"
    path, results = shipped
    records = [r for r in results["records"] if "error" not in r]
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in records}, key=lambda s: s[0] * s[1] * s[2])
    at = {(r["step"], r["M"], r["N"], r["K"]): r for r in records}
    header = "| step | " + " | ".join(_size_label(*s) for s in sizes) + " |"
    lines = [f"Measured on {short_label(results['environment'])} — `results/{path.name}` "
             "(TFLOPS, and in brackets % of cuBLAS SGEMM in the same run):", "", header,
             "|:--|" + "--:|" * len(sizes)]
    arithmetic = {r["step"]: r.get("arithmetic") for r in records}
    for number, name in sorted({(r["number"], r["step"]) for r in records}):
        cells = []
        for size in sizes:
            r = at.get((name, *size))
            if r is None:
                cells.append("")
            elif name == "cublas":
                cells.append(f"**{r['tflops']:.1f}**")
            else:
                cells.append(f"{r['tflops']:.1f} ({r['pct_of_cublas']:.0f} %)" + (" !" if suspect(r) else ""))
        lines.append(f"| {_row_label(number, name, arithmetic[name], code=True)} | " + " | ".join(cells) + " |")
    for suffix in ("tflops", "steps", "curves"):
        png = path.with_name(f"{path.stem}-{suffix}.png")
        if png.exists():
            lines += ["", f"![{suffix}](results/{png.name})"]
    return "\n".join(lines)


def _replace_between(readme: Path, start: str, end: str, body: str) -> bool:
    text = readme.read_text()
    if start not in text or end not in text:
        raise UserError(f"{readme} has no {start} … {end} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{start}\n{body}\n{end}{tail}"
    if new != text:
        readme.write_text(new)
    return new != text


def write_readme_table(readme: Path) -> bool:
    """Replace the step table and the results section between their markers; True if the file changed."""
    changed = _replace_between(readme, TABLE_START, TABLE_END, steps_table_markdown())
    return _replace_between(readme, RESULTS_START, RESULTS_END, results_markdown()) or changed


def _size_label(m: int, n: int, k: int) -> str:
    return str(m) if m == n == k else f"{m}×{n}×{k}"


def suspect(record: dict) -> str | None:
    """Why a benchmark record cannot be trusted as a correct result, or None: failed, unwritten, inaccurate."""
    from gemm_steps.harness.verify import tolerance_of

    if "error" in record:
        return "failed: " + record["error"].splitlines()[0]
    if record.get("unwritten"):
        return f"{record['unwritten']} elements unwritten"
    error = record.get("sampled_rel_error_fp64")
    limit = tolerance_of(record.get("arithmetic", "fp32"), record["K"])  # TF32 records: the TF32 tolerance
    if error is not None and not error <= limit:
        return f"error vs float64 {error:.1e} > tolerance {limit:.1e}"
    return None


def _row_label(number: int, name: str, arithmetic: str | None, code: bool = False) -> str:
    """How a table names a record: the baselines by what they are, a step by number and name, with its arithmetic
    when it is not the FP32 units (``12 tensor_cores [TF32]``)."""
    from gemm_steps.harness.bench import ARITHMETIC_MARK, BASELINES

    if name in BASELINES:
        return BASELINES[name]
    return (f"{number} `{name}`" if code else f"{number} {name}") + ARITHMETIC_MARK.get(arithmetic or "fp32", "")


def summary_table(results: dict) -> str:
    """Step × size: TFLOPS and % of cuBLAS. A ``!`` marks a record that failed or gave a wrong result (listed)."""
    from gemm_steps.harness.environment import short_label

    records = results["records"]
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in records}, key=lambda s: s[0] * s[1] * s[2])
    rows = sorted({(r["number"], r["step"]) for r in records})
    at = {(r["step"], r["M"], r["N"], r["K"]): r for r in records}
    table = [["step", *(_size_label(*s) for s in sizes)]]
    arithmetic = {r["step"]: r.get("arithmetic") for r in records}
    for number, name in rows:
        line = [_row_label(number, name, arithmetic[name])]
        for s in sizes:
            r = at.get((name, *s))
            if r is None:
                line.append("")
            elif "error" in r:
                line.append("failed !")
            else:
                pct = r.get("pct_of_cublas")  # absent where cuBLAS itself failed at this size
                cell = f"{r['tflops']:.2f}" + (f" ({pct:.0f}%)" if name != "cublas" and pct is not None else "")
                line.append(cell + (" !" if suspect(r) else ""))
        table.append(line)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    out = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
           for row in table]
    out.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"! {r['step']} at {_size_label(r['M'], r['N'], r['K'])}: {suspect(r)}" for r in records if suspect(r)]
    title = f"TFLOPS (% of cuBLAS, same run) — {short_label(results['environment'])}"
    return "\n".join([title, *out, *notes]) + "\n"


# -- commands ---------------------------------------------------------------------------------------------------
def cmd_info(args) -> int:
    import gemm_steps
    from gemm_steps.harness.environment import environment

    env = environment()
    print(f"backend        {gemm_steps.backend()}")
    if env["simulator"]:
        print("GPU            none: kernels run on Numba's CUDA simulator — results are real, timings are not.")
        print("               `gemm-steps verify` checks every step here; timings come from results/ "
              "(gemm-steps plot).")
    else:
        peak = env.get("fp32_peak_tflops_estimate")
        print(f"GPU            {env['gpu']} (compute capability {env['compute_capability']}, {env['sm_count']} SMs)")
        print(f"SM clock       {env['sm_clock_max_mhz']:.0f} MHz max"
              + (f", {env['smi_clocks_sm']} MHz now (nvidia-smi)" if env.get("smi_clocks_sm") else ""))
        print(f"memory clock   {env['mem_clock_max_mhz']:.0f} MHz max; L2 {env['l2_bytes'] / 2**20:.0f} MiB")
        print(f"driver         {env.get('smi_driver_version', '?')} (CUDA {env['driver_cuda_version']})")
        print("FP32 peak      " + (f"≈ {peak:.1f} TFLOPS (SMs × FP32 lanes × 2 × max clock; an estimate)"
                                   if peak else "unknown for this architecture"))
        print(f"cuBLAS         {env.get('cublas_version') or 'not available (install .[cu13] or .[cu12])'}"
              + ("  — NVIDIA_TF32_OVERRIDE forces TF32!" if env.get("tf32_override") else ""))
    versions = ", ".join(f"{k.replace('_', '-')} {env[k]}" for k in ("python", "numba_cuda", "numba", "numpy",
                                                                    "nvmath_python") if env.get(k))
    print(f"versions       {versions}")
    print(f"steps          {len(gemm_steps.steps())}: " + ", ".join(s.name for s in gemm_steps.steps()))
    return 0


def run_verify(step_names, shapes) -> int:
    """Verify and print the table; 0 if every check passed, else 1."""
    from gemm_steps.harness import verify as v

    steps = chosen_steps(step_names)
    shapes = shapes or v.DEFAULT_SHAPES
    total = len(steps) * len(shapes)
    done = [0]

    def progress(row: dict) -> None:
        done[0] += 1
        say(f"[{done[0]:3d}/{total}] {row['number']} {row['step']} {row['M']}×{row['N']}×{row['K']}: "
            f"{'skipped' if row['passed'] is None else 'ok' if row['passed'] else 'FAIL'} ({row['seconds']:.1f} s)")

    rows = v.verify(steps, shapes, progress=progress)
    print(v.format_table(rows))
    return 0 if all(r["passed"] is not False for r in rows) else 1  # a skipped step (None) is not a failure


def cmd_verify(args) -> int:
    import gemm_steps

    chosen_steps(args.steps)  # a bad step name fails now, before anything is printed
    say(f"backend: {gemm_steps.backend()}")
    return run_verify(args.steps, args.shapes)


def cmd_bench(args) -> int:
    import gemm_steps

    if gemm_steps.SIMULATOR:
        return bench_without_gpu(args)
    from gemm_steps.harness import bench

    plots = plots_module()
    steps = chosen_steps(args.steps)
    sizes = [(n, n, n) for n in (args.sizes or [])] + list(args.shapes or [])
    if args.suite == "shapes":
        from gemm_steps.harness.dispatch import variants
        from gemm_steps.harness.shape_suite import suite_shapes

        sizes += [s for s in suite_shapes() if s not in sizes]
        steps += variants()  # what matmul may choose besides the steps: steps 11 and 17 on other tiles, padded products
    sizes = sizes or [(n, n, n) for n in DEFAULT_SIZES]
    say(f"backend: {gemm_steps.backend()}")
    say(f"benchmarking {len(steps)} steps + cuBLAS at {len(sizes)} sizes "
        f"({', '.join(_size_label(*s) for s in sizes)})")
    start = time.perf_counter()

    def progress(message: str) -> None:
        elapsed = int(time.perf_counter() - start)
        say(f"{elapsed // 60:3d}:{elapsed % 60:02d} {message}")

    results = bench.run_benchmark(steps, sizes, repeats=args.repeats, progress=progress)
    stem = plots.default_stem(results, args.suite)  # a suite's run is not the course benchmark: its own name
    if args.suite:  # and marked as such
        results["suite"] = args.suite
    out = Path(args.out) if args.out else _unused(results_dir() / f"{stem}.json")
    if args.record and args.suite == "shapes":
        from gemm_steps.harness import dispatch

        say(f"dispatch table: {_show(dispatch.record(results))}")
    bench.save(results, out)
    say(f"results: {_show(out)}")
    plots_dir = Path(args.plots_dir) if args.plots_dir else out.parent
    if args.suite:  # its own picture: % of cuBLAS by shape class (the size plots are for the course benchmark)
        plots_dir.mkdir(parents=True, exist_ok=True)
        path = plots_dir / f"{out.stem}-shapes.png"
        plots.plot_shape_classes(results, path=path)
        say(f"plot:    {_show(path)}")
    else:
        write_plots(plots, results, plots_dir, out.stem)
    print(summary_table(results))
    return 1 if any(suspect(r) for r in results["records"]) else 0


def write_plots(plots, results: dict, out_dir: Path, stem: str) -> None:
    """The plots, or a note saying why there are none (the results are saved either way)."""
    try:
        paths = plots.plot_results(results, out_dir, stem=stem)
    except ValueError as exc:  # nothing succeeded, or no cuBLAS record to compare with
        say(f"no plots: {exc}")
        return
    for path in paths:
        say(f"plot:    {_show(path)}")


def _show(path: Path) -> str:
    """A path as the user would type it: relative to the current directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _unused(path: Path) -> Path:
    """``path``, or ``path`` with -2, -3, … added, so a second run the same day never overwrites the first."""
    candidate, i = path, 1
    while candidate.exists():
        i += 1
        candidate = path.with_name(f"{path.stem}-{i}{path.suffix}")
    return candidate


def bench_without_gpu(args) -> int:
    """Plot the shipped GPU results first (seconds), then check the steps on the simulator (minutes)."""
    plots = plots_module()
    steps = chosen_steps(args.steps)  # a bad step name fails now, before anything runs

    say("No CUDA GPU found: benchmarks need one, so this run")
    say("  1. plots the shipped GPU results from results/, then")
    if args.steps:
        which = "step" + ("s " if len(steps) > 1 else " ") + ", ".join(f"{s.number} {s.name}" for s in steps)
        say(f"  2. checks {which} on Numba's CUDA simulator at small shapes (correctness, not speed).")
    else:
        say("  2. checks every step on Numba's CUDA simulator at small shapes (correctness, not speed; this takes "
            "minutes: --steps checks fewer).")
    if args.sizes or args.shapes or args.suite:
        say("  (--sizes/--shapes/--suite are benchmark sizes, far too large for the simulator: verifying at small "
            "shapes)")
    if args.out or args.record:
        say(f"  ({' and '.join(o for o, given in (('--out', args.out), ('--record', args.record)) if given)} "
            "given, but there is no benchmark without a GPU: nothing is written"
            + (f" to {args.out}" if args.out else "") + ".)")
    say("")
    shipped = newest_shipped_results()
    if shipped is None:
        say(f"No shipped results in {_show(results_dir())}/ yet, so nothing to plot: "
            "`gemm-steps bench` on a GPU makes some.")
    else:
        path, results = shipped
        plots_dir = Path(args.plots_dir) if args.plots_dir else Path("plots")
        say(f"Plotting the shipped results {_show(path)} (measured on {results['environment'].get('gpu')}):")
        write_plots(plots, results, plots_dir, path.stem)
        print(f"Shipped GPU results, from {_show(path)} (not measured here):")
        print(summary_table(results))
        say("")
    return run_verify(args.steps, None)


def cmd_plot(args) -> int:
    plots = plots_module()

    results = load_results(args.results)
    out_dir = Path(args.out_dir) if args.out_dir else Path(args.results).parent
    try:
        paths = plots.plot_results(results, out_dir, stem=Path(args.results).stem)
    except ValueError as exc:  # e.g. no successful records, no cuBLAS to compare with
        raise UserError(f"cannot plot {args.results}: {exc}") from None
    except OSError as exc:  # the folder cannot be made or written
        raise UserError(f"cannot write the plots to {out_dir}: {exc.strerror or exc}") from None
    for path in paths:
        print(path)
    return 0


def cmd_tune(args) -> int:
    import gemm_steps
    from gemm_steps.harness import tuning

    step = chosen_steps([args.step])[0]
    if gemm_steps.SIMULATOR:
        raise UserError("autotuning needs a real CUDA GPU (timings on the simulator mean nothing)")
    try:
        results = tuning.tune(step.name, size=args.size, repeats=args.repeats, progress=say, out_dir=results_dir())
    except ValueError as exc:  # the step has nothing to tune
        raise UserError(str(exc)) from None
    except RuntimeError as exc:  # no configuration ran correctly: a failure, not a usage error
        print(f"gemm-steps tune: {exc}", file=sys.stderr)
        return 1
    best = results["best"]
    print(f"best {step.name} configuration at {args.size}: {best['config']}")
    print(f"  {best['median_ms']:.3f} ms, {best['tflops']:.2f} TFLOPS"
          + (f", {best['pct_of_cublas']:.1f} % of cuBLAS" if "pct_of_cublas" in best else ""))
    print(f"  recorded in {results['table']} (every timing: {_show(results_dir())}/)")
    return 0


def cmd_diff(args) -> int:
    """A unified diff of two steps' kernels as written (``Step.kernel_source()``)."""
    from .display import kernel_diff

    before, after = chosen_steps([args.before])[0], chosen_steps([args.after])[0]
    diff = kernel_diff(before, after, context=args.context)
    print(diff or f"steps {before.number} and {after.number} have the same kernel")
    return 0


def _judged_note(choice, name: str, here: tuple[int, int, int]) -> str:
    """Whether a step's number at the nearest measured shape counted: not where the step would take another kernel
    path here (a tensor-core step's edge kernel, a padded copy) — then it was judged at another shape, or not at all."""
    from ..harness.dispatch import PADDED_VARIANTS, _padded_dominated

    if choice.judged is None:
        return ""
    copies_beside_step = name in PADDED_VARIANTS and _padded_dominated(name, set(choice.pct_of_cublas), here)
    if name not in choice.judged:
        if copies_beside_step:
            return (f" (not counted: here it would copy A, B or C into whole tiles, and {PADDED_VARIANTS[name]}'s "
                    f"partial-tile build runs the same tiles without those copies, judged at no measured shape near "
                    f"where both were timed)")
        return " (not counted: here it takes another kernel path, measured at no shape near)"
    shape, pct = choice.judged[name]
    if name in choice.modelled:
        return (f" (not counted: here it copies A or B into readable rows, measured doing so at no shape near; "
                f"modelled from {_size_label(*shape)}, where it read them as they are, with the copy: {pct:.0f} %)")
    if shape == choice.nearest:
        return ""
    if copies_beside_step:
        return (f" (not counted: judged at {_size_label(*shape)} beside {PADDED_VARIANTS[name]}, whose copies it would "
                f"make here as it made them there: {pct:.0f} %)")
    return f" (not counted: here it takes another kernel path, the one it took at {_size_label(*shape)}: {pct:.0f} %)"


def cmd_explain(args) -> int:
    """What ``matmul`` would run for an M×N×K product, and why: the dispatch rule, the measured shape it rests on (and
    the file it was measured in), the chosen step's tiles and waves on this GPU, and, without a GPU, whether the
    simulator would run it."""
    import gemm_steps
    from gemm_steps.harness import dispatch
    from gemm_steps.harness.api import MAX_ELEMENTS
    from gemm_steps.toolkit.kernel_tools import ceil_div
    from gemm_steps.toolkit.tuned import current_gpu_name

    m, n, k = args.m, args.n, args.k
    gpu = current_gpu_name()
    try:
        choice = dispatch.choose(m, n, k, args.precision)
    except RuntimeError as exc:  # a dispatch table that cannot be read (yours, or $GEMM_STEPS_DISPATCH)
        raise UserError(str(exc)) from None
    step = dispatch.candidate(choice.step_name)
    too_big = [name for name, elements in (("A", m * k), ("B", k * n), ("C", m * n)) if elements > MAX_ELEMENTS]
    here = _on_the_simulator(step, m, n, k) if gemm_steps.SIMULATOR and not too_big else None
    if step.name in dispatch.TILE_VARIANTS:
        tiles = dispatch.TILE_VARIANTS[step.name]
        what = f"{step.name} (step {step.number}'s kernel with {tiles.BLOCK_M}×{tiles.BLOCK_N} tiles)"
    elif step.name in dispatch.PADDED_VARIANTS:
        what = f"{step.name} (step {step.number}'s fast kernel on copies padded to whole tiles)"
    else:
        what = f"step {step.number} {step.name}"
    print(f"matmul at {_size_label(m, n, k)} on {gpu or 'the simulator'}, precision={args.precision!r}: {what}")
    print(f"  why: {choice.reason}")
    print(f"  may choose: {precision_means(args.precision)}")
    if choice.pct_of_cublas:
        measured = ", ".join(f"{name} {pct:.0f} %{_judged_note(choice, name, (m, n, k))}"
                             for name, pct in choice.pct_of_cublas.items())
        print(f"  measured at {_size_label(*choice.nearest)} ({choice.gpu}), % of cuBLAS: {measured}")
        print(f"  source: {_dispatch_source(gpu, choice.gpu)}")
    if too_big:
        print(f"  refused: matmul takes matrices of at most {MAX_ELEMENTS:,} elements (32-bit indices); "
              f"{', '.join(too_big)} would have more")
    elif here:
        print(f"  here: {here}")
    if step.tiled is None:
        return 0
    if gpu is None:  # the choice above was measured on a GPU; the simulator here runs its own, smaller tiles
        config = gpu_config(step)
        sms, counted = measured_sm_count(choice.gpu)
        print(f"  on the {choice.gpu or 'GPU'} it was measured on ({counted}; no GPU here):")
        for line in _tile_lines(step, config, sms, m, n, k):
            print(f"    {line}")
        if step.tiled.config != config:
            local = step.tiled.config
            tiles_m, tiles_n = ceil_div(m, local.BLOCK_M), ceil_div(n, local.BLOCK_N)
            print(f"  here, on the simulator: the step's smaller simulator tiles, {local.BLOCK_M}×{local.BLOCK_N} → "
                  f"{tiles_m}×{tiles_n} = {tiles_m * tiles_n} tiles, run one block at a time (no SMs, no waves)")
        else:
            print("  here, on the simulator: the same tiles, run one block at a time (no SMs, no waves)")
    else:
        for line in _tile_lines(step, step.tiled.config, _sm_count(), m, n, k):
            print(f"  {line}")
    return 0


def gpu_config(step):
    """The tiles a step runs with on a GPU with no tuning table (its first ``SEARCH_SPACE`` entry; a tile variant's
    own), whatever machine this is: what the dispatch table's numbers were measured with."""
    from gemm_steps.harness import dispatch
    from gemm_steps.toolkit.tuned import default_config

    if step.name in dispatch.TILE_VARIANTS:
        return dispatch.TILE_VARIANTS[step.name]
    space = getattr(step.module, "SEARCH_SPACE", None)
    return default_config(space) if space else step.tiled.config


def measured_sm_count(gpu_name: str | None) -> tuple[int, str]:
    """(SMs, how we know) of a GPU that is not here: from the environment of a shipped results file measured on it,
    else an H100's 132 (said so)."""
    from gemm_steps.harness import results_files

    for folder in results_files.folders():
        for path in sorted(Path(folder).glob("*.json"), reverse=True):
            try:
                env = json.loads(path.read_text()).get("environment", {})
            except (OSError, ValueError, AttributeError):
                continue
            if gpu_name and env.get("gpu") == gpu_name and env.get("sm_count"):
                return int(env["sm_count"]), f"{env['sm_count']} SMs, from {results_files.display_path(path)}"
    return 132, "132 SMs as an H100 has: no results file says how many it has"


def _tile_lines(step, config, sms: int, m: int, n: int, k: int) -> list[str]:
    """The tiles, waves and kernels of ``step`` built with ``config`` on a GPU of ``sms`` SMs — or, where the step
    leaves this product to another step's build (its ``FALLBACK_RULE``: steps 21 and 22), that step's, said so."""
    from gemm_steps.harness.step import get_step
    from gemm_steps.steps.stream_k import stream_k_split
    from gemm_steps.toolkit.kernel_tools import ceil_div
    from gemm_steps.toolkit.padded_tiles import copies, padded_shape
    from gemm_steps.toolkit.persistent_tiles import PersistentTiles

    rule = getattr(step.module, "FALLBACK_RULE", None)
    if rule is not None and rule(ceil_div(m, config.BLOCK_M) * ceil_div(n, config.BLOCK_N), ceil_div(k, config.BLOCK_K),
                                 sms):
        other = get_step(step.module.FALLBACK_STEP)
        return ([f"step {other.number}'s build runs this product, not step {step.number}'s own loop "
                 f"({rule.__name__}: step {other.number} would split K here, or its k-tiles are long and its waves "
                 "whole enough)"] + _tile_lines(other, type(other.tiled.config).of(config), sms, m, n, k))
    tiles_m, tiles_n = ceil_div(m, config.BLOCK_M), ceil_div(n, config.BLOCK_N)
    tiles, full = tiles_m * tiles_n, (m // config.BLOCK_M) * (n // config.BLOCK_N)
    fast_path = k % config.BLOCK_K == 0 and n % 4 == 0  # and 16-byte aligned arrays, as fresh ones are
    per_sm = max(1, config.MIN_BLOCKS_PER_SM)
    blocks = sms * per_sm
    waves = ceil_div(tiles, blocks)
    lines = [f"tiles: {config.BLOCK_M}×{config.BLOCK_N} → {tiles_m}×{tiles_n} = {tiles} ({full} full); {sms} SMs × "
             f"{per_sm} block{'s' if per_sm > 1 else ''} per SM (the launch-bounds hint) = {blocks} at once → "
             f"{waves} wave{'s' if waves > 1 else ''} of tiles, the last "
             f"{100 * (tiles - (waves - 1) * blocks) / blocks:.0f} % full"]
    if step.pads:
        padded = padded_shape(config, m, n, k)
        copied = [name for name, copy in zip("ABC", copies(config, m, n, k)) if copy]
        lines.append(f"kernel: the fast kernel on all {ceil_div(padded[0], config.BLOCK_M) * tiles_n} tiles of "
                     f"{_size_label(*padded)}" + (f", {' and '.join(copied)} copied into zero-padded buffers"
                                                  if copied else ", nothing copied: the product is whole tiles already"))
    elif isinstance(step.tiled, PersistentTiles):
        whole = full == tiles and fast_path
        lines.append(f"kernel: the {'fast' if whole else 'guarded'} variant, over all {tiles} tiles"
                     + ("" if whole else " (partial tiles, or K not a multiple of BLOCK_K, or N of 4)"))
        if step.tiled.schedule == "stream-K":
            data_parallel, streamed = stream_k_split(tiles, blocks)
            lines.append(f"stream-K split: {data_parallel} tiles data-parallel, {streamed} shared out by k-iterations "
                         f"({ceil_div(k, config.BLOCK_K)} per tile)"
                         + (" — all data-parallel: step 10's kernel runs" if not streamed else ""))
    elif getattr(step.tiled, "partial", None) is not None and not (full == tiles and fast_path):
        copied = [name for name, copy in (("A", k % 4), ("B", n % 4)) if copy]  # (fresh arrays: 16-byte aligned)
        if copied and step.tiled.uses_thread_copies(m, n, k, k % 4 != 0, n % 4 != 0):
            lines.append(f"kernel: the fast kernel's THREAD_COPIES build over all {tiles} tiles: its producer's "
                         f"threads copy every stage with 4-byte cp.async, zeros outside A and B ({' and '.join(copied)}"
                         f" unreadable by the copy engine: K or N not a multiple of 4; few FLOPs a byte a copy would "
                         f"move); the store keeps to C")
        elif "B" in copied and step.tiled.b_by_rows_at(m, n, k):
            copied.remove("B")
            lines.append(f"kernel: the fast kernel's B_ROWS_MOD_4 build over all {tiles} tiles: B (N not a multiple "
                         f"of 4) read through four tensor maps, one a residue of its rows mod 4 (pitch 16·N bytes), "
                         f"zeros outside A and B, the store kept to C"
                         + (", after A is copied into rows the copy engine can read (K not a multiple of 4)"
                            if copied else ""))
        else:
            lines.append(f"kernel: the fast kernel's partial-tile build over all {tiles} tiles (the copy engine "
                         f"zero-fills what of a box lies outside A or B; the store keeps to C)"
                         + (f", after {' and '.join(copied)} {'is' if len(copied) == 1 else 'are'} copied into rows "
                            f"the copy engine can read (K or N not a multiple of 4)" if copied else ""))
    else:
        covered = full if fast_path else 0
        lines.append(f"kernels: the fast kernel on {covered} full tiles, the guarded edge kernel on {tiles - covered}")
    policy = getattr(step.tiled, "slices", None)  # split-K (steps 17, 18: SplitKTmaTiles)
    if callable(policy):
        from gemm_steps.toolkit.tma_tiles import launched_slices

        partial = getattr(step.tiled, "partial", None) is not None  # walks every k-tile, the last one partial
        k_tiles = ceil_div(k, config.BLOCK_K) if partial else k // config.BLOCK_K
        slices = launched_slices(policy, tiles, k_tiles, sms)
        asked = getattr(step.module, "split_asked", None)
        asked = asked(tiles, k_tiles, sms) if asked is not None else slices
        if slices > 1:
            per = ceil_div(k_tiles, slices)
            lines.append(f"split-K: K in {slices} slices of up to {per} k-tiles → {tiles * slices} blocks, each "
                         "summing its slice into a workspace; then a second kernel adds the slices into C")
        elif asked > 1:
            lines.append(f"split-K: none — {asked} slices would fill the SMs, but the k-tiles a block would save are "
                         "worth less than the second kernel's launch and the slices' partial sums (split_pays)")
        else:
            lines.append("split-K: none (two slices of every tile would not fit the SMs at once, or K is too short to "
                         "split)")
    return lines


def _on_the_simulator(step, m: int, n: int, k: int) -> str:
    """Whether the simulator would run this product (the guard of :func:`gemm_steps.harness.simulator.check`)."""
    from gemm_steps.harness import simulator

    try:
        limit = simulator.limit_seconds()
    except ValueError as exc:  # a GEMM_STEPS_SIMULATOR_LIMIT that is not a number
        raise UserError(str(exc)) from None
    estimate = simulator.estimated_seconds(step.config, m, n, k, simulator.products_of(step))
    if limit is not None and estimate > limit:
        side = simulator.largest_square(step.config, limit, simulator.products_of(step))
        return (f"no GPU, and the simulator would refuse this product: about {simulator._duration(estimate)} "
                f"estimated, over the {simulator._duration(limit)} limit (products up to about {side}×{side}×{side} "
                "fit; GEMM_STEPS_SIMULATOR_LIMIT sets the limit in seconds, 0 for none)")
    return (f"no GPU: the simulator would run it, in about {simulator._duration(estimate)} "
            f"(limit {'none' if limit is None else simulator._duration(limit)})")


def _dispatch_source(gpu: str | None, measured_on: str | None) -> str:
    """Which file the dispatch table's numbers come from: the table, the results file it was recorded from (matched
    by GPU and date), and — since the README's table is another run — that run's file."""
    from gemm_steps.harness import dispatch, results_files

    table = dispatch.table_file(gpu)
    entry = dispatch.table(gpu) or {}
    text = f"the dispatch table {results_files.display_path(table)}" if table else "the dispatch table"
    recorded = None
    for folder in results_files.folders():
        for path in sorted(Path(folder).glob("*.json")):
            try:
                env = json.loads(path.read_text()).get("environment", {})
            except (OSError, ValueError, AttributeError):
                continue
            if entry.get("date") and (env.get("gpu"), env.get("date")) == (measured_on, entry.get("date")):
                recorded = path
                break
        if recorded:
            break
    if recorded:
        text += f", recorded from {results_files.display_path(recorded)}"
    else:
        date = str(entry.get("date") or "")[:10] or "an unrecorded date"
        text += f" (measured {date}; its results file is not here)"
    shipped = newest_shipped_results()
    if shipped and shipped[0] != recorded:
        text += f" — another run than the README's table ({results_files.display_path(shipped[0])})"
    return text


def _sm_count() -> int:
    from numba import cuda

    return cuda.get_current_device().MULTIPROCESSOR_COUNT


def cmd_readme_table(args) -> int:
    if args.write is None:
        print(steps_table_markdown() + "\n\n" + results_markdown())
        return 0
    readme = Path(args.write)
    if not readme.is_file():
        raise UserError(f"{readme} is a folder; give the README file" if readme.is_dir() else f"no such file: {readme}")
    print(f"{readme}: {'updated' if write_readme_table(readme) else 'already up to date'}")
    return 0


def cmd_exercise(args) -> int:
    from . import exercises

    if args.action == "list":
        print(exercises.listing())
        return 0
    if args.name is None:
        raise UserError("which exercise? gemm-steps exercise check NAME (gemm-steps exercise list names them)")
    try:
        exercises.get(args.name)
    except KeyError as exc:
        raise UserError(exc.args[0]) from None
    if args.file is not None:
        path = Path(args.file)
        if path.is_dir():
            raise UserError(f"{path} is a folder; give your Python file, e.g. --file exercises/{args.name}.py")
        if not path.is_file():
            raise UserError(f"no such file: {path}")
        if path.suffix != ".py":
            raise UserError(f"{path} is not a Python file (.py); give the file that defines your kernel")
    report = exercises.check(args.name, args.file, say=say)
    print(report.text())
    return 0 if report.passed else 1


# -- entry point ------------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gemm-steps", description="SGEMM in Python with Numba CUDA, one step at a time.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    steps_help = "steps by name or number (default: all)"

    sub.add_parser("info", help="the backend, GPU, clocks, driver, FP32 peak and versions").set_defaults(run=cmd_info)

    v = sub.add_parser("verify", help="check every step against float64 NumPy (works on the simulator)")
    v.add_argument("--steps", nargs="+", metavar="STEP", help=steps_help)
    v.add_argument("--shapes", nargs="+", type=shape, metavar="MxNxK", help="shapes (default: small, ragged ones)")
    v.set_defaults(run=cmd_verify)

    b = sub.add_parser("bench", help="benchmark every step against cuBLAS (no GPU: verify + plot shipped results)")
    b.add_argument("--steps", nargs="+", metavar="STEP", help=steps_help)
    b.add_argument("--sizes", nargs="+", type=size, metavar="N",
                   help=f"square sizes N (default: {' '.join(map(str, DEFAULT_SIZES))})")
    b.add_argument("--shapes", nargs="+", type=shape, metavar="MxNxK", help="other shapes, after --sizes")
    b.add_argument("--suite", choices=["shapes"],
                   help="shapes: the shape suite (square, ragged, wave-boundary, K-heavy, skinny and small shapes; "
                        "gemm_steps/harness/shape_suite.py), plotted by class in <stem>-shapes.png")
    b.add_argument("--record", action="store_true",
                   help="with --suite shapes: also record the run as your dispatch table (~/.cache/gemm-steps/"
                        "dispatch.json), so matmul picks steps by what was measured on this GPU")
    b.add_argument("--repeats", type=count, default=20, metavar="N", help="timed runs per entry, at least (default 20)")
    b.add_argument("--out", metavar="PATH", help="results JSON (default: results/bench-<gpu>-<date>.json)")
    b.add_argument("--plots-dir", metavar="DIR",
                   help="where the PNGs go (default: next to the JSON; without a GPU: ./plots)")
    b.set_defaults(run=cmd_bench)

    pl = sub.add_parser("plot", help="plot a results JSON (TFLOPS vs size, %% of its own cuBLAS per step)")
    pl.add_argument("results", metavar="RESULTS.json")
    pl.add_argument("--out-dir", metavar="DIR", help="where the PNGs go (default: next to the JSON)")
    pl.set_defaults(run=cmd_plot)

    t = sub.add_parser("tune", help="autotune a step's tile sizes on this GPU (~/.cache/gemm-steps/tuned.json)")
    t.add_argument("step", metavar="STEP")
    t.add_argument("--size", type=size, default=4096, metavar="N", help="tune at N×N×N (default 4096)")
    t.add_argument("--repeats", type=count, default=20, metavar="N", help="timed runs per configuration (default 20)")
    t.set_defaults(run=cmd_tune)

    d = sub.add_parser("diff", help="what changed in the kernel from one step to another (a unified diff)")
    d.add_argument("before", metavar="A", help="a step, by name or number")
    d.add_argument("after", metavar="B", help="another step, by name or number")
    d.add_argument("--context", type=lines, default=1, metavar="N", help="lines of context around changes (default 1)")
    d.set_defaults(run=cmd_diff)

    x = sub.add_parser("explain", help="which step matmul runs for an M×N×K product, and why")
    # Three arguments, not one with nargs=3: a tuple metavar on a positional breaks argparse's usage and help on
    # some Python versions (3.11 among them)
    for side in "MNK":
        x.add_argument(side.lower(), type=dimension, metavar=side, help=f"{side} of the M×K @ K×N product")
    x.add_argument("--precision", choices=list(PRECISION_MEANS), default="tf32x3",
                   help="matmul's precision (default tf32x3: any kernel that keeps the FP32 contract)")
    x.set_defaults(run=cmd_explain)

    e = sub.add_parser("exercise", help="write a step's kernel yourself: list the exercises, or grade one")
    e.add_argument("action", choices=["list", "check"])
    e.add_argument("name", nargs="?", metavar="NAME", help="the exercise to grade (check)")
    e.add_argument("--file", metavar="PATH", help="grade this file instead of exercises/NAME.py")
    e.set_defaults(run=cmd_exercise)

    r = sub.add_parser("readme-table", help="print the README's step table and results section (Markdown)")
    r.add_argument("--write", nargs="?", const="README.md", metavar="README",
                   help="rewrite both between their markers in README (default: README.md in the current directory)")
    r.set_defaults(run=cmd_readme_table)
    for command in sub.choices.values():  # a usage error found while running is reported with this command's usage
        command.set_defaults(command_parser=command)
    return p


#: The exit status when the reader of stdout went away (``gemm-steps info | head -2``): 128 + SIGPIPE, what a shell
#: reports for a Unix tool that stopped on a closed pipe.
BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    args, extra = parser().parse_known_args(argv)
    if extra:  # argparse would report them with the top-level usage; the command's own is the useful one
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        status = args.run(args)
        sys.stdout.flush()  # here, not at exit: a reader that went away is then caught below
        return status
    except UserError as exc:  # as argparse reports a bad argument, without exiting (main returns the status)
        command = args.command_parser
        print(command.format_usage() + f"{command.prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gemm-steps: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader stopped reading (`gemm-steps explain … | head -1`): the rest is not wanted. Point stdout at
        # /dev/null so that Python's own flush at exit does not fail again on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
    except Exception as exc:
        reason = no_gpu_reason(exc)
        if reason is None:
            raise
        print(f"gemm-steps: {reason}", file=sys.stderr)
        return 1


def no_gpu_reason(exc: BaseException) -> str | None:
    """One paragraph for Numba's error when the GPU the backend chose cannot be used (no driver, no device); None for
    any other error. Only ``NUMBA_ENABLE_CUDASIM=0`` gets there on a machine without a GPU: without it gemm_steps
    picks the simulator (:mod:`gemm_steps.toolkit.backend`)."""
    if "numba.cuda" not in sys.modules:
        return None
    from numba.cuda.cudadrv.error import CudaDriverError, CudaSupportError

    if not isinstance(exc, (CudaSupportError, CudaDriverError)):
        return None
    numba_says = " ".join(str(exc).replace(":", " ").split())
    forced = os.environ.get("NUMBA_ENABLE_CUDASIM") == "0"
    return ("no usable CUDA GPU or driver was found"
            + (", and NUMBA_ENABLE_CUDASIM=0 forces the GPU backend. Unset NUMBA_ENABLE_CUDASIM (gemm_steps then "
               "chooses Numba's CUDA simulator on a machine without a GPU) or set it to 1." if forced else ".")
            + f"\n(Numba: {numba_says})")
