"""Lesson 21's helpers: step 21 (stream-K on the tensor cores) against step 17, from the files the runs wrote — the
picture of the waves, the model's schedule per shape, the speed against the prediction, the shape suite, and where
the fixup's time goes. Numbers and small dataclasses only: the words are the lesson's."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from . import predictions
from .predictions import Prediction, Verdict, range_text, where
from . import timings
from .timings import load_run, tflops_by_shape

#: experiments/tensor_core_stream_k.py: step 17, step 21 (stream-K where waves are part-empty), step 21's kernel as a
#: persistent loop alone, both cuBLAS — the first run (its prediction), the second (the same shapes again), the third
#: (whole waves only: the persistent loop's prediction), the fourth (one shape class with and without the copies).
RUNS = (results_files.EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200,
        results_files.EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200_2,
        results_files.EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200_3,
        results_files.EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200_4)
#: experiments/stream_k_timeline.py: step 21's kernel with %clock64 records, at three split shapes and 4096³.
TIMELINE = results_files.EXPERIMENT_STREAM_K_TIMELINE_NVIDIA_H200
#: The shape suite that first timed step 21 (and that the dispatch table was recorded from).
SUITE = results_files.SHAPES_NVIDIA_H200_2026_11_29_5
#: The records of the runs, with their labels.
KERNELS = {"warp_specialized": "step 17", "warp_specialized_stream_k": "step 21",
           "warp_specialized_persistent": "step 21's kernel, persistent loop alone", "cublas_tf32": "cuBLAS TF32"}
SMS = 132  # an H100's or H200's SMs: one block of step 17's tile fits an SM
#: What a timeline record's code means (experiments/kernels/warp_specialized_stream_k_timeline.py).
PHASES = {1: "a unit's k-loop (per k-tile)", 2: "hand a partial tile over (store, fence, flag)",
          3: "wait for a partial tile's flag", 4: "read and add a partial tile", 5: "store C"}


def runs() -> list[dict]:
    """The shipped runs of :data:`RUNS`, in order (missing ones left out)."""
    return timings.load_runs(RUNS)


def caption(run: dict) -> str:
    """Where a table's numbers come from: GPU, date, file."""
    return timings.caption(run)


def suite() -> dict | None:
    return load_run(SUITE)


def timeline() -> dict | None:
    return load_run(TIMELINE)


# -- the schedule: waves against shares ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Schedule:
    shape: tuple[int, int, int]
    tiles: int  # tiles of 256 × 128
    k_tiles: int  # k-tiles of 32 a tile
    waves: float  # tiles / SMs
    step17_k_tiles: int  # k-tiles on the busiest SM, one block a tile: ceil(waves) × k_tiles
    split: tuple[int, int]  # (data-parallel, stream-K) tiles, step 11's rule
    step21_k_tiles: float  # k-tiles on the busiest SM: whole waves, then an equal share of the rest
    blocks: int  # step 21's grid: an SM each, fewer where a small product's shares would be short

    @property
    def model_speedup(self) -> float:
        return self.step17_k_tiles / self.step21_k_tiles


def schedule(m: int, n: int, k: int, sms: int = SMS) -> Schedule:
    """The model of lesson 21's prediction at M×N×K: step 17's waves against step 21's shares, in k-tiles."""
    from gemm_steps.steps.stream_k import stream_k_split
    from gemm_steps.steps.warp_specialized_stream_k import MIN_SHARE_K_TILES
    from gemm_steps.toolkit.tma_tiles import stream_k_grid

    tiles, k_tiles = math.ceil(m / 256) * math.ceil(n / 128), math.ceil(k / 32)
    blocks, dp, sk = stream_k_grid(tiles, k_tiles, sms, stream_k_split, MIN_SHARE_K_TILES)  # as step 21 launches
    return Schedule((m, n, k), tiles, k_tiles, tiles / sms, math.ceil(tiles / sms) * k_tiles, (dp, sk),
                    dp // sms * k_tiles + sk * k_tiles / blocks if sk else math.ceil(tiles / blocks) * k_tiles,
                    blocks)


def schedule_table(shapes) -> MarkdownTable:
    rows = [{"M×N×K": "×".join(map(str, s.shape)), "tiles": s.tiles, "k-tiles a tile": s.k_tiles,
             "waves": s.waves, "busiest SM, step 17 (k-tiles)": s.step17_k_tiles,
             "(data-parallel, split) tiles": f"{s.split}", "busiest SM, step 21 (k-tiles)": s.step21_k_tiles,
             "model: step 17 / step 21": s.model_speedup} for s in (schedule(*shape) for shape in shapes)]
    return table(rows, {"waves": "{:.2f}", "busiest SM, step 21 (k-tiles)": "{:.1f}",
                        "model: step 17 / step 21": "{:.2f}×"})


def waves_figure(tiles: int = 150, k_tiles: int = 64, sms: int = SMS, steps: tuple[str, str] = ("step 17", "step 21")):
    """Each SM's work over time (in k-tiles) for ``tiles`` tiles: one block a tile in waves (left, the idle SMs of the
    last wave marked), stream-K's equal shares walked backwards, cut where tiles end (right); a colour a tile.
    ``steps``: the two kernels' names (lesson 22 draws step 18 and step 22)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    colours = [f"C{t % 10}" for t in range(tiles)]
    for t in range(tiles):  # one block a tile: tile t on SM t % sms, in wave t // sms
        left.broken_barh([(t // sms * k_tiles, k_tiles)], (t % sms, 0.9), color=colours[t])
    total = tiles * k_tiles
    for b in range(sms):
        begin, end = b * total // sms, (b + 1) * total // sms
        at, x = 0, end
        while x > begin:  # the walk of step 21's work_unit: backwards, a piece a tile
            start = max(begin, (x - 1) // k_tiles * k_tiles)
            tile = (x - 1) // k_tiles
            right.broken_barh([(at, x - start)], (b, 0.9), color=colours[tile])
            at, x = at + x - start, start
    idle = sms - tiles % sms if tiles % sms else 0
    if idle:
        last = tiles // sms * k_tiles
        left.text(last + k_tiles / 2, (tiles % sms + sms) / 2, f"{idle} SMs idle", ha="center", va="center")
    for ax, title in ((left, f"{steps[0]}: {math.ceil(tiles / sms)} waves"),
                      (right, f"{steps[1]}: an equal share of k-tiles an SM")):
        ax.set(xlabel="time (k-tiles)", title=title, xlim=(0, math.ceil(tiles / sms) * k_tiles))
    left.set_ylabel(f"SM (of {sms})")
    fig.suptitle(f"{tiles} tiles of {k_tiles} k-tiles on {sms} SMs (a colour a tile)")
    return fig


# -- the speed, against the prediction -------------------------------------------------------------------------------
def verdicts(run: dict, prediction: Prediction) -> list[Verdict]:
    """The compared record over its baseline at each predicted shape, against the predicted range, and over cuBLAS
    TF32 in the same run."""
    return predictions.verdicts(run, prediction, "cublas_tf32")


def verdict_table(found: list[Verdict], what: str) -> MarkdownTable:
    return predictions.verdict_table(found, what, "step 17", "cuBLAS TF32")


def repeat_table(first: dict, second: dict) -> MarkdownTable:
    """Step 21 over step 17 in two runs of the same shapes: how far a ratio moves between processes."""
    a, b = tflops_by_shape(first), tflops_by_shape(second)
    rows = []
    for shape in a:
        if shape in b and "warp_specialized_stream_k" in a[shape] and "warp_specialized_stream_k" in b[shape]:
            rows.append({"M×N×K": shape.replace("x", "×"),
                         "run 1": a[shape]["warp_specialized_stream_k"] / a[shape]["warp_specialized"],
                         "run 2": b[shape]["warp_specialized_stream_k"] / b[shape]["warp_specialized"]})
    return table(rows, {"run 1": "{:.3f}", "run 2": "{:.3f}"})


def speed_figure(run: dict):
    """TFLOPS of step 17, step 21 and cuBLAS TF32 at each shape of a run."""
    from matplotlib.figure import Figure

    by_shape = tflops_by_shape(run)
    names = ("warp_specialized", "warp_specialized_stream_k", "cublas_tf32")
    fig = Figure(figsize=(12, 3.8), layout="constrained")
    ax = fig.subplots()
    for i, name in enumerate(names):
        ax.bar([j + 0.27 * (i - 1) for j in range(len(by_shape))], [t.get(name, 0) for t in by_shape.values()], 0.27,
               label=KERNELS[name])
    ax.set_xticks(range(len(by_shape)), [s.replace("x", "×") for s in by_shape], fontsize=8)
    ax.set(ylabel="TFLOPS")
    ax.legend()
    return fig


# -- the shape suite ----------------------------------------------------------------------------------------------------
def suite_rows(run: dict) -> list[dict]:
    """Per suite shape: step 21 over step 17 (time ratio, > 1 faster) and both over cuBLAS TF32, with step 21's
    schedule there (split-K products go to step 17)."""
    from gemm_steps.steps.warp_specialized_stream_k import runs_step_17

    out = []
    for shape, t in tflops_by_shape(run).items():
        if "warp_specialized_stream_k" not in t or "warp_specialized" not in t:
            continue
        m, n, k = map(int, shape.split("x"))
        s = schedule(m, n, k)
        if runs_step_17(s.tiles, s.k_tiles, SMS):
            how = "step 17 (split-K)"
        elif s.split[1] == 0:
            how = "persistent"
        elif s.split[0] == 0 and s.blocks == s.tiles:
            how = f"{s.blocks} blocks, a tile each"
        else:
            how = f"{s.split[1]} tiles split over {s.blocks} blocks"
        out.append({"M×N×K": shape.replace("x", "×"), "step 21 runs": how,
                    "step 21 / step 17": t["warp_specialized_stream_k"] / t["warp_specialized"],
                    "step 21 / cuBLAS TF32": t["warp_specialized_stream_k"] / t["cublas_tf32"],
                    "copies": "A" * (k % 4 != 0) + "B" * (n % 4 != 0) or "none"})
    return out


def copies_table(run: dict) -> MarkdownTable:
    """Step 21 over step 17 at each shape of a run, with what the launch copies first (A where K is not a multiple of
    4, B where N is not)."""
    rows = []
    for shape, t in tflops_by_shape(run).items():
        m, n, k = map(int, shape.split("x"))
        rows.append({"M×N×K": shape.replace("x", "×"), "copied": " and ".join(
                         name for name, copied in (("A", k % 4), ("B", n % 4)) if copied) or "nothing",
                     "step 21 / step 17": t["warp_specialized_stream_k"] / t["warp_specialized"]})
    return table(rows, {"step 21 / step 17": "{:.3f}"})


def suite_table(rows: list[dict]) -> MarkdownTable:
    return table(rows, {"step 21 / step 17": "{:.3f}", "step 21 / cuBLAS TF32": "{:.2f}"})


# -- the timeline ---------------------------------------------------------------------------------------------------------
def phase_cycles(run: dict, shape: str) -> dict[str, float]:
    """Median SM cycles of each phase (:data:`PHASES`) over every block of the timeline at ``shape``; a k-loop per
    k-tile."""
    found: dict[int, list[float]] = {}
    for block in run[shape]["blocks"]:
        before = 0
        for code, k_count, at in block["events"]:
            spent = at - before
            found.setdefault(code, []).append(spent / k_count if code == 1 and k_count else spent)
            before = at
    return {PHASES[code]: statistics.median(v) for code, v in sorted(found.items())}


def phase_table(run: dict) -> MarkdownTable:
    shapes = [s for s in run if s != "path" and isinstance(run[s], dict) and "blocks" in run[s]]
    cycles = {s: phase_cycles(run, s) for s in shapes}
    return table([{"phase (median SM cycles)": phase, **{s.replace("x", "×"): cycles[s].get(phase) for s in shapes}}
                  for phase in PHASES.values()], {s.replace("x", "×"): "{:,.0f}" for s in shapes})


def ends_spread(run: dict, shape: str) -> tuple[float, float, float]:
    """(first, median, last) block's end after the first block's start, µs (%globaltimer)."""
    blocks = run[shape]["blocks"]
    start = min(b["start_ns"] for b in blocks)
    ends = sorted((b["end_ns"] - start) / 1e3 for b in blocks)
    return ends[0], statistics.median(ends), ends[-1]


# -- ragged K: A's rows off the 128-byte lines ------------------------------------------------------------------------------
#: The run that took the tf32 minimum of held-out seed 20261216 apart, its whole-tile control, and the run that copied A
#: onto 128-byte rows first (experiments/aligned_rows.py).
STRIDES, STRIDES_CONTROL = results_files.EXPERIMENT_TF32_MINIMUM_SHAPE_NVIDIA_H200_2, "3072x16128x14464"
ALIGNED = results_files.EXPERIMENT_ALIGNED_ROWS_NVIDIA_H200


def strides_run() -> dict | None:
    return load_run(STRIDES)


def aligned_run() -> dict | None:
    return load_run(ALIGNED)


def row_pitch(floats: int) -> str:
    """A row pitch in bytes and where it falls against the 128-byte L2 line: ``"57,840 B (+112)"``."""
    pitch = 4 * floats
    return f"{pitch:,} B" + (f" (+{pitch % 128})" if pitch % 128 else " (on lines)")


def _against(value: float, low_high) -> str:
    """A measured ratio against its predicted range: ``"1.19 – 1.30: inside"``; an empty string without a range."""
    if not low_high:
        return ""
    return f"{range_text(*low_high)}: {where(value, *low_high)}"


def strides_table(run: dict, prediction: Prediction) -> MarkdownTable:
    """Step 21 and cuBLAS TF32 at each shape of the strides run, over themselves at the whole-tile control, with A's
    row pitch (K floats) and B's (N floats) against the 128-byte line, and step 21's predicted range."""
    by = tflops_by_shape(run)
    control = by[STRIDES_CONTROL]
    rows = []
    for shape, t in by.items():
        m, n, k = map(int, shape.split("x"))
        if (m, n, k) == (8192, 8192, 8192):
            continue
        over = t["warp_specialized_stream_k"] / control["warp_specialized_stream_k"]
        rows.append({"M×N×K": shape.replace("x", "×"), "A's rows": row_pitch(k), "B's rows": row_pitch(n),
                     "step 21 / its control": over,
                     "predicted": _against(over, prediction.predicted["ratio"].get(shape)),
                     "cuBLAS TF32 / its control": t["cublas_tf32"] / control["cublas_tf32"]})
    return table(rows, {"step 21 / its control": "{:.3f}", "cuBLAS TF32 / its control": "{:.3f}"})


def aligned_table(run: dict, prediction: Prediction) -> MarkdownTable:
    """Each step's build that copies A onto 128-byte rows over the step as shipped, at each shape of the run; step
    21's and step 22's against their predicted ranges (TF32 steps ``ratio``, 3xTF32 steps ``ratio_3xtf32``)."""
    rows = []
    for shape, row in run["summary"].items():
        gains = row["aligned_over_shipped"]
        rows.append({"M×N×K": shape.replace("x", "×"), "step 17": gains["warp_specialized"],
                     "step 21": gains["warp_specialized_stream_k"],
                     "step 21 predicted": _against(gains["warp_specialized_stream_k"],
                                                   prediction.predicted["ratio"].get(shape)),
                     "step 18": gains["warp_specialized_3xtf32"], "step 22": gains["warp_specialized_3xtf32_stream_k"],
                     "step 22 predicted": _against(gains["warp_specialized_3xtf32_stream_k"],
                                                   prediction.predicted["ratio_3xtf32"].get(shape))})
    return table(rows, {f"step {n}": "{:.3f}" for n in (17, 21, 18, 22)})
