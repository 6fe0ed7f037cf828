"""Lesson 25's helpers: the course's roofline with every step placed on it (the tensor-core steps, 12–19, under a
second roof: the tensor cores' TF32 peak, 8× the FP32 units' per clock at the run's maximum SM clock).

Each step's block tiling fixes how often it must fetch A and B from DRAM: a block computing a BLOCK_M × BLOCK_N
tile of C reads BLOCK_M + BLOCK_N floats per k for BLOCK_M·BLOCK_N multiply-adds, so with no help from the caches
its intensity is 2·BM·BN / (4·(BM + BN)) = BM·BN / (2·(BM + BN)) FLOP per byte. Steps 1–2 tile nothing (two loads
per multiply-add: 0.25 FLOP/byte). That is the x of each step; its y is its measured TFLOPS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from gemm_steps.harness import results_files

from .. import steps as course_steps
from .display import MarkdownTable, table
from .gpu_model import tf32_peak_tflops
from .timings import common_sizes, datasheet_bandwidth_tbs, fp32_peak_tflops, record, size_label


def steps_in(results: dict) -> list[str]:
    """The names of the course's steps that have a successful record in ``results`` (a benchmark measured before a
    step existed lacks it: the lesson then quotes the sizes the others share)."""
    present = {r["step"] for r in results["records"] if "error" not in r}
    return [s.name for s in course_steps() if s.name in present]


def tiling_intensity(step, config: dict | None = None) -> float:
    """FLOP per DRAM byte that the step's block tile guarantees with no cache (see the module docstring).
    ``config``: the tiles that ran (a benchmark record's ``config``); by default the step's own, which on the
    simulator may be a smaller simulator configuration (steps 12–15)."""
    config = (config if config is not None else step.config) or {}
    if "BLOCK_M" not in config:
        return 2 / 8  # one multiply-add (2 FLOP) per two 4-byte loads
    bm, bn = config["BLOCK_M"], config["BLOCK_N"]
    return bm * bn / (2 * (bm + bn))


def tensor_core_step(step) -> bool:
    """Whether a step computes on the tensor cores (its module says ``ARITHMETIC`` other than fp32)."""
    return getattr(step.module, "ARITHMETIC", "fp32") != "fp32"


def roofline_figure(results: dict, size):
    """The FP32 roofline of the results' GPU with every step at its tiling intensity and measured TFLOPS; steps that
    compute on the tensor cores (``ARITHMETIC`` not fp32) as squares under a second roof, the TF32 peak."""
    from matplotlib.figure import Figure

    from ..harness.environment import short_label
    from .plots import step_colour

    peak, bandwidth = fp32_peak_tflops(results), datasheet_bandwidth_tbs(results)
    intensity = np.logspace(-1.2, 2.5, 300)
    fig = Figure(figsize=(9, 5), layout="constrained")
    ax = fig.subplots()
    ax.loglog(intensity, np.minimum(peak, bandwidth * intensity), "k-", label="roofline: min(peak, bandwidth × I)")
    tf32_peak = tf32_peak_tflops(results)
    tensor = [s.number for s in course_steps() if tensor_core_step(s)]
    ax.loglog(intensity, np.minimum(tf32_peak, bandwidth * intensity), "k-.", lw=1,
              label=f"TF32 tensor-core roof: 8× FP32 at the run's max SM clock "
                    f"({results['environment'].get('sm_clock_max_mhz', 0):.0f} MHz), {tf32_peak:.0f} TFLOPS "
                    f"(steps {min(tensor)}–{max(tensor)})")
    for step in course_steps():
        measured = record(results, step.name, size)
        if measured is None:
            continue
        x = tiling_intensity(step, measured.get("config"))
        tensor = tensor_core_step(step)
        ax.plot(x, measured["tflops"], "s" if tensor else "o", ms=8, color=step_colour(step.number),
                label=f"{step.number} {step.name}" + (f" [{measured.get('arithmetic', '').upper().replace('X', 'x')}]"
                                                      if tensor else ""))
        # Steps with the same tile share an x: their numbers go left and right by turns, so none hides another.
        ax.annotate(str(step.number), (x, measured["tflops"]), fontsize=8, xytext=(7 if step.number % 2 else -13, -3),
                    textcoords="offset points")
    cublas = record(results, "cublas", size)
    ax.axhline(cublas["tflops"], color="tab:red", ls="--", lw=1, label=f"cuBLAS at {size_label(size)}")
    ax.set(xlabel="FLOP per DRAM byte that the block tile guarantees (no cache)", ylabel="TFLOPS",
           title=f"Every step on the roofline, at {size_label(size)}\n{short_label(results['environment'])}")
    ax.title.set_fontsize(9)
    ax.legend(loc="lower right", fontsize=7, ncols=2)
    return fig


# -- choosing a kernel by shape: the shape suite before and after, and the call overhead ----------------------------
SUITE_BEFORE = results_files.EXPERIMENT_SHAPES_BEFORE_GUARDED_LOOPS_NVIDIA_H100


def shape_suites() -> tuple[tuple, tuple] | None:
    """((path, document) before, (path, document) after): the shape suite before steps 10–11 covered partial tiles
    themselves (``experiments/results/``) and the newest run on the same GPU (``results/``; a GPU's name in the file
    name, as ``shapes-<gpu>-<date>.json``), so the two bars of a shape differ by the kernels only; None if either is
    missing."""
    import json

    before_path = results_files.find(SUITE_BEFORE)
    if before_path is None:
        return None
    before = json.loads(before_path.read_text())
    after = results_files.newest_matching(results_files.shape_suite_runs(before["environment"]["gpu"]))
    if after is None:
        return None
    return (before_path, before), after


def suite_figure(before: dict, after: dict, step: str = "stream_k"):
    """% of cuBLAS (each run against its own cuBLAS) of one step on every suite shape, before and after, grouped
    by shape class."""
    import matplotlib.pyplot as plt

    from gemm_steps.harness.shape_suite import SHAPE_CLASSES

    def pct(doc):
        return {(r["M"], r["N"], r["K"]): r.get("pct_of_cublas") for r in doc["records"]
                if r["step"] == step and "error" not in r}

    was, now = pct(before), pct(after)
    shapes = [(name, s) for name, members in SHAPE_CLASSES.items() for s in members if s in was and s in now]
    x = np.arange(len(shapes))
    fig, ax = plt.subplots(figsize=(11, 4), layout="constrained")
    ax.bar(x - 0.2, [was[s] for _, s in shapes], 0.4, color="0.7", label="before (edge tiles on step 9's kernel)")
    ax.bar(x + 0.2, [now[s] for _, s in shapes], 0.4, color="#000080", label="after (guarded variant, stream-K)")
    ax.axhline(100, color="k", linestyle="--", linewidth=1)
    ax.set_xticks(x, [size_label(s) for _, s in shapes], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel(f"step 11 ({step}), % of cuBLAS")
    for i in range(1, len(shapes)):
        if shapes[i][0] != shapes[i - 1][0]:
            ax.axvline(i - 0.5, color="0.6", linewidth=0.8)
    for name in dict.fromkeys(n for n, _ in shapes):
        where = [i for i, (n, _) in enumerate(shapes) if n == name]
        ax.text(sum(where) / len(where), 0.98, name, transform=ax.get_xaxis_transform(), ha="center", va="top",
                fontsize=9, fontweight="bold")
    ax.set_ylim(0, max(max(was.values()), max(now.values()), 110) * 1.15)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("The shapes people use: step 11 before and after it covered partial tiles itself "
                 f"({after['environment'].get('gpu')})", fontsize=10)
    plt.close(fig)
    return fig


def suite_speedups(before: dict, after: dict, step: str = "stream_k") -> MarkdownTable:
    """Per suite shape measured in both runs: how much faster ``step`` and cuBLAS ran in the second (before's time ÷
    after's): which bars of :func:`suite_figure` moved because the kernel changed, and which because cuBLAS's time
    did."""
    from gemm_steps.harness.shape_suite import SHAPE_CLASSES

    def faster(name, shape):  # before's time ÷ after's, or None where either run lacks it
        was, now = record(before, name, shape), record(after, name, shape)
        return was and now and was["median_ms"] / now["median_ms"]

    rows = [{"class": name, "shape": size_label(s), "step 11 faster by": faster(step, s),
             "cuBLAS faster by": faster("cublas", s)}
            for name, members in SHAPE_CLASSES.items() for s in members]
    rows = [row for row in rows if row["step 11 faster by"] and row["cuBLAS faster by"]]
    return table(rows, {"step 11 faster by": "{:.2f}×", "cuBLAS faster by": "{:.2f}×"})


@dataclass(frozen=True)
class CallOverhead:
    """One ``matmul`` call's host time before and after launch plans (:func:`call_overhead`)."""
    shape: list  # the suite's smallest shape, [M, N, K]
    before: dict  # the before-run's row at that shape (as the file has it: µs a call of each kind)
    after: dict  # the after-run's


def call_overhead() -> CallOverhead | None:
    """Host µs per call at the suite's smallest shape, before and after launch plans (experiments/results/
    experiment-call-overhead-*.json), or None if the files are missing."""
    import json

    paths = [results_files.find(name) for name in (results_files.EXPERIMENT_CALL_OVERHEAD_BEFORE_NVIDIA_H100,
                                                   results_files.EXPERIMENT_CALL_OVERHEAD_NVIDIA_H100)]
    if None in paths:
        return None
    before, after = (json.loads(p.read_text())["rows"][0] for p in paths)
    return CallOverhead(before["shape"], before, after)


def call_overhead_table(overhead: CallOverhead) -> MarkdownTable:
    """:func:`call_overhead` as a table: one ``matmul`` call's host time before and after launch plans, against an
    empty kernel launched through Numba and (where measured) through ``cuda.core``."""
    rows = []
    for run, r in (("before", overhead.before), ("after", overhead.after)):
        direct = r.get("direct_empty_kernel_us")
        rows.append({"launch plans": run, "matmul, µs a call": r["matmul_us"],
                     "empty Numba launch, µs": r["empty_kernel_us"],
                     "matmul ÷ empty Numba launch": r["matmul_us"] / r["empty_kernel_us"],
                     "empty cuda.core launch, µs": direct,
                     "matmul ÷ empty cuda.core launch": direct and r["matmul_us"] / direct})
    return table(rows, {"matmul, µs a call": "{:.0f}", "empty Numba launch, µs": "{:.0f}",
                        "matmul ÷ empty Numba launch": "{:.1f}×", "empty cuda.core launch, µs": "{:.0f}",
                        "matmul ÷ empty cuda.core launch": "{:.1f}×"})


def held_out() -> dict | None:
    """The run of ``experiments/matmul_held_out.py`` (matmul on shapes outside its table), or None."""

    found = results_files.newest_matching(results_files.EXPERIMENT_MATMUL_HELD_OUT_ANY)
    return found[1] if found else None


#: The held-out table's column: ``matmul``'s choice took more than 3 % longer than step 11 alone.
SLOWER = "slower than step 11 alone (> 3 %)"


def held_out_rows(results: dict) -> list[dict]:
    """Per held-out shape: what ``matmul`` chose, its % of cuBLAS next to step 11's, and whether ``matmul`` was
    more than 3 % slower than step 11 alone (:data:`SLOWER`); shapes where either is missing are left out."""
    rows = []
    for shape in dict.fromkeys((r["M"], r["N"], r["K"]) for r in results["records"]):
        chosen, step11 = record(results, "matmul", shape), record(results, "stream_k", shape)
        if chosen and step11 and "pct_of_cublas" in chosen and "pct_of_cublas" in step11:
            rows.append({"shape": size_label(shape), "`matmul` ran": f"`{chosen.get('chose', '?')}`",
                         "`matmul`, % of cuBLAS": chosen["pct_of_cublas"], "step 11, % of cuBLAS":
                         step11["pct_of_cublas"], SLOWER: chosen["median_ms"] > step11["median_ms"] * 1.03})
    return rows


def held_out_table(rows: list[dict]) -> MarkdownTable:
    """:func:`held_out_rows` as a Markdown table."""
    return table(rows, {"`matmul`, % of cuBLAS": "{:.0f} %", "step 11, % of cuBLAS": "{:.0f} %"})


@dataclass(frozen=True)
class SmallShape:
    """Why the smallest benchmarked square is hard for step 11 (:func:`small_shape`)."""
    size: str  # the square, as the lesson prints it
    tile: str  # step 11's block tile, BLOCK_M×BLOCK_N
    tiles: int  # tiles of C
    sms: int | None  # the run's SMs
    k_iterations: int  # BLOCK_K-deep slices of a tile, all tiles together
    k_iterations_per_sm: float  # … per SM
    step11_pct: float  # step 11's % of cuBLAS there
    best: tuple  # the fastest FP32 step there: (number, name, % of cuBLAS)


def small_shape(results: dict) -> SmallShape:
    """Why the smallest benchmarked square is hard for step 11, computed: its size, step 11's tile, how many tiles
    and k-iterations (one ``BLOCK_K``-deep slice of one tile) that makes, per SM, step 11's % of cuBLAS there, and
    the FP32 step that was fastest at that size (number, name, % of cuBLAS)."""
    import gemm_steps

    small = min(common_sizes(results, ["stream_k"]), key=lambda s: s[0] * s[1] * s[2])
    config = gemm_steps.get_step("stream_k").tiled.config
    tiles = -(-small[0] // config.BLOCK_M) * -(-small[1] // config.BLOCK_N)
    iterations = tiles * -(-small[2] // config.BLOCK_K)
    sms = results["environment"].get("sm_count")
    steps = [s for s in gemm_steps.steps() if record(results, s.name, small) and not tensor_core_step(s)]
    best = max(steps, key=lambda s: record(results, s.name, small)["tflops"])
    return SmallShape(size_label(small), f"{config.BLOCK_M}×{config.BLOCK_N}", tiles, sms, iterations,
                      iterations / sms, record(results, "stream_k", small)["pct_of_cublas"],
                      (best.number, best.name, record(results, best.name, small)["pct_of_cublas"]))


def target_rows(results: dict) -> list[dict]:
    """Steps 12–15 against the course's targets, from one benchmark: steps 12 (TF32) and 13 (3xTF32 on
    ``mma.sync``) at the largest size where both and both cuBLAS modes ran; step 14 (3xTF32 on ``wgmma``) by lesson
    14's rule (≥ the target × cuBLAS SGEMM at the two largest sizes, at an error no larger than SGEMM's) and step 15
    (TF32 on ``wgmma``) by lesson 15's (≥ the TF32 target at the two largest squares); a step the file lacks gets
    one row with ``met`` None."""
    from .targets import TARGET_3XTF32_VS_SGEMM, TARGET_TF32_TFLOPS, target_check, tf32_target_check

    rows = []

    def row(step, size, measured, target, met, error=None, sgemm_error=None):
        rows.append({"step": step, "size": size_label(size) if size else "—", "measured": measured,
                     "target": target, "error": error, "SGEMM's error": sgemm_error, "met": met})

    tf32_target, x3_target = f"{TARGET_TF32_TFLOPS:.0f} TFLOPS", f"{TARGET_3XTF32_VS_SGEMM}× SGEMM"
    common = common_sizes(results, ["tensor_cores", "three_tf32", "cublas_tf32"])
    if common:
        big = common[-1]
        t12, t13, sgemm = (record(results, n, big) for n in ("tensor_cores", "three_tf32", "cublas"))
        row("12 TF32, `mma.sync`", big, f"{t12['tflops']:.1f} TFLOPS", tf32_target, t12["tflops"] >= TARGET_TF32_TFLOPS)
        ratio = t13["pct_of_cublas"] / 100
        row("13 3xTF32, `mma.sync`", big, f"{ratio:.2f}× SGEMM", x3_target, ratio >= TARGET_3XTF32_VS_SGEMM,
            t13["sampled_rel_error_fp64"], sgemm["sampled_rel_error_fp64"])
    check = target_check(results, "warpgroup_mma")
    for size, (ratio, error, sgemm_error) in (check or {"sizes": {}})["sizes"].items():
        row("14 3xTF32, `wgmma`", size, f"{ratio:.2f}× SGEMM", x3_target,
            ratio >= TARGET_3XTF32_VS_SGEMM and error <= sgemm_error, error, sgemm_error)
    if check is None:
        row("14 3xTF32, `wgmma`", None, "not in this file", x3_target, None)
    check = tf32_target_check(results)
    for size, tflops in (check or {"sizes": {}})["sizes"].items():
        row("15 TF32, `wgmma`", size, f"{tflops:.1f} TFLOPS", tf32_target, tflops >= TARGET_TF32_TFLOPS)
    if check is None:
        row("15 TF32, `wgmma`", None, "not in this file", tf32_target, None)
    return rows


def target_table(rows: list[dict]) -> MarkdownTable:
    """:func:`target_rows` as a Markdown table (errors: sampled relative error against float64)."""
    return table(rows, {"error": "{:.1e}", "SGEMM's error": "{:.1e}"})


def held_out_set() -> dict | None:
    """The newest run of ``scripts/held_out.py`` on a set nobody had seen before it ran (``results/held-out-*.json``
    whose ``held_out.seen`` is not true; quick runs left out), or None."""
    found = results_files.newest_matching(results_files.HELD_OUT, lambda data: not data.get("quick") and not data.get(
        "held_out", {}).get("seen") and bool(data.get("shapes")))
    return found[1] if found else None


#: How the held-out table names each precision's baseline (a benchmark record's name).
BASELINE_NAMES = {"cublas_tf32": "cuBLAS TF32", "cublas": "cuBLAS SGEMM"}


def held_out_set_table(run: dict) -> MarkdownTable:
    """Per precision of ``matmul`` and size of product: how many held-out shapes, ``matmul``'s median and slowest
    speed over its baseline (cuBLAS of the same arithmetic, same run), and issue 37's targets, met or not."""
    from gemm_steps.harness import held_out

    summary = held_out.summarize(run["shapes"])
    rows = []
    for precision, baseline in held_out.BASELINE.items():
        for size in ("large", "small"):
            group = summary.group(precision, size)
            if group is None:
                continue
            targets = [f"{v.target.statistic} ≥ {v.target.threshold:g}×: {'met' if v.met else 'not met'}"
                       for v in summary.verdicts if v.target.precision == precision and v.target.size == size]
            rows.append({"precision": f"`{precision}`", "over": BASELINE_NAMES[baseline], "M·N·K": "≥ 2³⁰" if size == "large" else
                         "< 2³⁰", "shapes": group.count, "median": group.median, "slowest": group.minimum,
                         "at": size_label(group.slowest) if group.slowest else "", "issue 37's targets":
                         "; ".join(targets)})
    return table(rows, {"median": "{:.2f}×", "slowest": "{:.2f}×"})


# -- split-K on the tensor cores -----------------------------------------------------------------------------------------

def split_k_runs() -> tuple[dict, dict] | None:
    """experiments/split_k_tf32.py's two H200 runs (the first split-K kernel; then step 17 as shipped beside step 17
    before split-K), or None where either is missing."""
    runs = [results_files.find(name) for name in (results_files.EXPERIMENT_SPLIT_K_TF32_NVIDIA_H200,
                                                  results_files.EXPERIMENT_SPLIT_K_TF32_NVIDIA_H200_2)]
    return None if None in runs else tuple(json.loads(path.read_text()) for path in runs)


def split_k_rows(first: dict, second: dict, prediction) -> list[dict]:
    """Per shape of the first run: step 17's tiles and the slices each run split K into (its policy then and now),
    the prediction's range for split over one slice, the first run's ratio, and the second run's step 17 as shipped
    over step 17 before split-K and over cuBLAS TF32 (same run): its split build where the shipped policy splits,
    its one-slice build where it does not (the second run split 1024³ in two, which lost; the policy changed after)."""
    from gemm_steps.steps import warp_specialized
    from gemm_steps.toolkit.tma_tiles import launched_slices
    from gemm_steps.toolkit.tuned import default_config

    config = default_config(warp_specialized.SEARCH_SPACE)

    def tflops(run, step, shape):
        found = record(run, step, shape)
        return found["tflops"] if found else None

    def first_policy(tiles, k_tiles, sms):  # the first run's: slices of >= 4 k-tiles from 8 k-tiles on
        return 1 if tiles >= sms or k_tiles < 8 else max(1, min(sms // tiles, k_tiles // 4, 8))

    rows = []
    for key, low_high in prediction.predicted["ratio_by_shape"].items():
        shape = tuple(int(x) for x in key.split("x"))
        m, n, k = shape
        tiles = -(-m // config.BLOCK_M) * -(-n // config.BLOCK_N)
        k_tiles = -(-k // config.BLOCK_K)
        low, high = low_high
        first_ratio = (tflops(first, "warp_specialized", shape) or 0) / (tflops(first, "warp_specialized@one_slice",
                                                                                 shape) or float("inf"))
        slices = launched_slices(warp_specialized.slices, tiles, k_tiles, 132)
        # the second run's policy split 1024³ in two; shipped, it runs on one slice: that build's record
        shipped = tflops(second, "warp_specialized" if slices > 1 else "warp_specialized@one_slice", shape)
        rows.append({"M×N×K": size_label(shape), "tiles": tiles, "k-tiles": k_tiles,
                     "slices (first run)": launched_slices(first_policy, tiles, k_tiles, 132),
                     "predicted split ÷ one slice": f"{low:g} – {high:g}" if high else f"≥ {low:g}",
                     "first run": first_ratio, "held": low <= first_ratio <= (high or float("inf")),
                     "slices (shipped)": slices,
                     "shipped ÷ before split-K": shipped / tflops(second, "warp_specialized@before_split_k", shape),
                     "shipped ÷ cuBLAS TF32": shipped / tflops(second, "cublas_tf32", shape)})
    return rows


def split_k_table(rows: list[dict]) -> MarkdownTable:
    """:func:`split_k_rows` as a Markdown table."""
    return table(rows, {"first run": "{:.2f}×", "shipped ÷ before split-K": "{:.2f}×", "shipped ÷ cuBLAS TF32":
                        "{:.2f}×"})


def split_k_figure(rows: list[dict], sms: int = 132):
    """Blocks at work per shape: step 17's tiles (one block each, all of K) and tiles × slices as shipped, against
    the GPU's SMs — the picture of what split-K fills."""
    import matplotlib.pyplot as plt

    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(10, 3.6), layout="constrained")
    ax.bar(x - 0.2, [r["tiles"] for r in rows], 0.4, color="0.7", label="one block a tile, each walking all of K")
    ax.bar(x + 0.2, [r["tiles"] * r["slices (shipped)"] for r in rows], 0.4, color="#000080",
           label="tiles × slices of K (step 17 as shipped)")
    ax.axhline(sms, color="k", linestyle="--", linewidth=1)
    ax.text(-0.5, sms * 1.05, f"{sms} SMs: one block each", ha="left", va="bottom", fontsize=9)
    ax.set_yscale("log")
    ax.set_xticks(x, [r["M×N×K"] for r in rows], rotation=40, ha="right", fontsize=8)
    ax.set_ylabel("blocks launched")
    ax.set_ylim(top=sms * 12)
    ax.legend(loc="upper center", fontsize=8, ncols=2)
    return fig


# -- deep dive 25: where a small product's time goes ------------------------------------------------------------------
#: The small-product experiments of 2026-11-30 (H200), each with its prediction committed before its run.
FLOOR_RUN = results_files.EXPERIMENT_SMALL_PRODUCT_FLOOR_NVIDIA_H200
COPY_RUN = results_files.EXPERIMENT_COPY_EARLY_START_NVIDIA_H200
SPLIT_RUN = results_files.EXPERIMENT_SPLIT_PAYS_NVIDIA_H200
NOT_ADOPTED_RUNS = {"A read by its rows mod 4": results_files.EXPERIMENT_A_ROWS_MOD_4_NVIDIA_H200_2,
                    "B read by its rows at M > 200": results_files.EXPERIMENT_B_ROWS_MOD_4_STEP_18_SMALL_NVIDIA_H200,
                    "a suspend hint in every mbarrier wait": results_files.EXPERIMENT_SUSPEND_HINT_NVIDIA_H200}
#: How the deep dive names the records of those runs.
KERNEL_LABELS = {"warp_specialized_3xtf32": "step 18", "warp_specialized_3xtf32_stream_k": "step 22",
                 "warp_specialized_3xtf32@64x128": "step 18 on 64 × 128", "warp_specialized": "step 17 (TF32)",
                 "cublas": "cuBLAS SGEMM", "cublas_tf32": "cuBLAS TF32"}


def floor_table(run: dict) -> MarkdownTable:
    """Each kernel's time at whole tiles as a line in K (the run's summary): what it costs besides its k-loop
    (intercept) and per 1,024 of K, and its time at each K."""
    lines, us = run["summary"]["lines"], run["summary"]["us"]
    shapes = list(us)
    rows = [{"kernel": KERNEL_LABELS.get(name, name), "besides the k-loop (µs)": line["intercept_us"],
             "µs per 1,024 of K": line["us_per_1024_k"],
             **{f"K = {shape.split('x')[2]} (µs)": us[shape].get(name) for shape in shapes}}
            for name, line in lines.items()]
    return table(rows, {key: "{:.1f}" for key in rows[0] if key != "kernel"})


def floor_figure(run: dict, shown=("warp_specialized_3xtf32", "warp_specialized_3xtf32_stream_k", "cublas")):
    """Time over K at 3968×384 (whole tiles, nothing copied): the measured points and each kernel's fitted line."""
    from matplotlib.figure import Figure

    us, lines = run["summary"]["us"], run["summary"]["lines"]
    ks = [int(shape.split("x")[2]) for shape in us]
    fig = Figure(figsize=(7.5, 3.8), layout="constrained")
    ax = fig.subplots()
    for name in shown:
        points = ax.plot(ks, [us[shape][name] for shape in us], "o", label=KERNEL_LABELS[name])[0]
        line = lines[name]
        ax.plot([0, max(ks)], [line["intercept_us"], line["intercept_us"] + line["us_per_1024_k"] * max(ks) / 1024],
                "-", color=points.get_color(), linewidth=1)
    ax.set(xlabel="K (3968 × 384 × K: 93 tiles of 128 × 128, one wave)", ylabel="µs (median, L2 flushed)", xlim=(0, None),
           ylim=(0, None))
    ax.legend(fontsize=8)
    return fig


def copy_table(run: dict) -> MarkdownTable:
    """Step 18 with the readable copy that lets the next kernel start early, against the copy before: per product
    what is copied, both times, their ratio and each over cuBLAS SGEMM (speed)."""
    rows = [{"M×N×K": shape.replace("x", "×"), "copied": row["copied"],
             "copy before (µs)": row["us"]["warp_specialized_3xtf32@ordinary_copy"],
             "early start (µs)": row["us"]["warp_specialized_3xtf32"], "time ratio": row["shipped_time_over_ordinary"],
             "over cuBLAS SGEMM": f"{row['ordinary_over_cublas']:.2f} → {row['shipped_over_cublas']:.2f}"}
            for shape, row in run["summary"].items()]
    return table(rows, {"copy before (µs)": "{:.1f}", "early start (µs)": "{:.1f}", "time ratio": "{:.3f}"})


def split_table(run: dict) -> MarkdownTable:
    """Step 18 splitting K only where it pays, against the policy before: per product its tiles, k-tiles, slices
    before and after, both times and their ratio, and the 64 × 128 variant over cuBLAS SGEMM beside."""
    from gemm_steps.harness.dispatch import TABLE_SMS
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.kernel_tools import ceil_div
    from gemm_steps.toolkit.tuned import default_config

    tile, rows = default_config(step18.SEARCH_SPACE), []  # the tiles the run's step 18 ran, on the table's SMs
    for shape, row in run["summary"].items():
        m, n, k = (int(x) for x in shape.split("x"))
        tiles, k_tiles = ceil_div(m, tile.BLOCK_M) * ceil_div(n, tile.BLOCK_N), ceil_div(k, tile.BLOCK_K)
        us = row["us"]
        rows.append({"M×N×K": shape.replace("x", "×"), "tiles": tiles, "k-tiles": k_tiles,
                     "slices": f"{step18.split_asked(tiles, k_tiles, TABLE_SMS)} → "
                               f"{step18.slices(tiles, k_tiles, TABLE_SMS)}",
                     "before (µs)": us["warp_specialized_3xtf32@split_before"],
                     "after (µs)": us["warp_specialized_3xtf32"], "time ratio": row["new_time_over_old"],
                     "64 × 128 over cuBLAS SGEMM": row["over_cublas"]["warp_specialized_3xtf32@64x128"]})
    return table(rows, {"before (µs)": "{:.1f}", "after (µs)": "{:.1f}", "time ratio": "{:.3f}",
                        "64 × 128 over cuBLAS SGEMM": "{:.2f}×"})


def not_adopted_table(runs: dict) -> MarkdownTable:
    """The three changes measured and not kept: each one's time over what it would replace (ranges, per run)."""
    def spread(values):
        values = [v for v in values if v]
        return f"{min(values):.2f}–{max(values):.2f}×" if values else "—"

    rows = []
    a_rows, b_rows, hint = (runs.get(key) for key in NOT_ADOPTED_RUNS)
    if a_rows:
        small = [r["rows_time_over_copy"] for s, r in a_rows["summary"].items() if np.prod([int(x) for x in s.split("x")]) < 2**30]
        large = [r["rows_time_over_copy"] for s, r in a_rows["summary"].items() if np.prod([int(x) for x in s.split("x")]) >= 2**30]
        rows.append({"change": "A read by its rows mod 4 (step 18, 128 × 128)", "time over the path it would replace":
                     f"{spread(small)} (small), {spread(large)} (large)"})
    if b_rows:
        rows.append({"change": "B read by its rows at M > 200 (step 18, 128 × 128)", "time over the path it would replace":
                     spread([1 / r["rows_over_copy"]["128x128"] for r in b_rows["summary"].values()])})
    if hint:
        rows.append({"change": "a suspend hint in every mbarrier wait (steps 18 and 23, 4096³ and 8192³)",
                     "time over the path it would replace": spread([1 / x["hint_speed_over_none"] for row in
                                                                    hint["summary"].values() for x in row.values()])})
    return table(rows)
