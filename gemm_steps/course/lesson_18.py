"""Lesson 18's helpers (step 18, ``warp_specialized_3xtf32``: 3xTF32 on step 17's warp-specialized design): the ring
with three barriers a stage and its picture, the model the prediction comes from (the tensor core's work and the
shared-memory bytes of a 3xTF32 k-tile), the speed table and verdict from the course benchmark, split-K before and
after from the shape suite, the builds from experiments/specialized_3xtf32_bench.py, the FP32-contract verdict from
the accuracy run, and step 18's timeline from the GPU (experiments/timeline.py). Numbers, tables and figures only:
the words are the lesson's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .gpu_model import TF32_FLOP_PER_CLOCK, ring_constants, ring_states
from .targets import TARGET_FINAL_3XTF32_VS_SGEMM, TARGET_HOPPER_3XTF32_VS_SGEMM
from .timelines import events
from .timings import caption, common_sizes, load_run, record, tflops_table

#: The course benchmark with all 18 steps and both cuBLAS in one H200 run (step 18 as shipped: with split-K).
BENCH_RUN = results_files.BENCH_NVIDIA_H200_2026_11_26_3
#: The shape suite on the same H200 before split-K and after it (every step, both cuBLAS, each run).
SHAPES_BEFORE, SHAPES_AFTER = results_files.SHAPES_NVIDIA_H200_2026_11_26_2, results_files.SHAPES_NVIDIA_H200_2026_11_26_3
#: Step 18's timeline (experiments/timeline.py --only warp_specialized_3xtf32: its kernel before split-K, with
#: %clock64 writes; one launch at 4096³ on an H200).
TIMELINE_RUN = results_files.EXPERIMENT_TIMELINE_WARP_SPECIALIZED_3XTF32_NVIDIA_H200
STEP = "warp_specialized_3xtf32"
#: Step 18 and the builds it was chosen from, beside steps 14 and 17 and both cuBLAS (one H200 run).
BUILDS_RUN = results_files.EXPERIMENT_SPECIALIZED_3XTF32_NVIDIA_H200
BIG = ((4096, 4096, 4096), (8192, 8192, 8192))
#: The rows of the speed table: (record, label).
ROWS = [("cublas", "cuBLAS SGEMM (FP32 units)"), ("cublas_tf32", "cuBLAS TF32"),
        ("warpgroup_mma", "step 14, 3xTF32 wgmma, cp.async + bar.sync"),
        ("warp_specialized", "step 17, TF32, producer warpgroup"),
        ("warp_specialized_3xtf32", "step 18, 3xTF32, producer warpgroup splits A")]
#: The builds of the experiment, in its order: (record, what differs from the step).
BUILDS = [("scalar_split", "first build: split one float at a time, rolled loop, 3 behind"),
          ("split_3_behind", "16-byte vectors, unrolled, 3 k-tiles behind the copies"),
          ("warp_specialized_3xtf32", "the step: 16-byte vectors, 2 behind"),
          ("copy_warp", "a copy warp and three split warps"),
          ("registers_56_224", "the step with 56 / 224 registers (producer / consumer)")]
#: Shared memory's bandwidth per SM: 32 banks × 4 bytes a clock.
SHARED_BYTES_PER_CLOCK = 128


def bench_run() -> dict | None:
    return load_run(BENCH_RUN)


def builds_run() -> dict | None:
    return load_run(BUILDS_RUN)


def shapes_runs() -> tuple[dict | None, dict | None]:
    """The shape suite before split-K and after it."""
    return load_run(SHAPES_BEFORE), load_run(SHAPES_AFTER)


def timeline_run() -> dict | None:
    return load_run(TIMELINE_RUN)


@dataclass(frozen=True)
class Barrier:
    """One of a stage's three barriers (:func:`barriers`)."""
    name: str  # "full", "ready" or "empty"
    index: str  # its index in the kernel's barrier array, in terms of the stage s
    count: int  # the arrivals a phase counts
    arrives: str  # who arrives on it
    waits: str  # who waits for it


def barriers(step) -> list[Barrier]:
    """The three barriers of a stage in the step's kernel: which index, who arrives (and how many arrivals it
    counts), who waits."""
    c = step.module.Config.of(step.module.SEARCH_SPACE[0]).check().constants()
    stages = c["STAGES"]
    return [Barrier("full", "s", 1, "producer thread 0 (expect_tx) + the copy engine's bytes",
                    "the producer warpgroup, before it splits"),
            Barrier("ready", f"{stages} + s", c["PRODUCER_THREADS"], "every producer thread, after its split",
                    "the consumers, before their wgmma"),
            Barrier("empty", f"{2 * stages} + s", c["WARPS"], "one lane per consumer warp, once its wgmma finished",
                    "producer thread 0, before a refill")]


@dataclass(frozen=True)
class Stage:
    """One stage of the ring during a pass of the producer's loop (:func:`ring_snapshot`)."""
    stage: int  # its index
    k_tile: int | None  # the newest k-tile put there (None: none yet)
    state: str  # "copying", "landed", "splitting", "computing" or "free"


def ring_snapshot(stages: int, split_behind: int, turn: int) -> list[Stage]:
    """Step 18's ring during pass ``turn`` of the producer's loop, if the consumers keep up: per stage the newest
    k-tile put there and its state — "copying" (k-tile ``turn``), "landed" (copied, not split yet), "splitting"
    (k-tile ``turn − SPLIT_BEHIND``), "computing" (split: the consumers' k-tile), "free"."""
    ladder = [(0, "copying"), (split_behind - 1, "landed"), (split_behind, "splitting")]
    return [Stage(s, t, state) for s, (t, state) in enumerate(ring_states(stages, turn, ladder, "computing"))]


STATE_COLOURS = {"copying": "tab:orange", "landed": "tab:olive", "splitting": "tab:green", "computing": "tab:blue",
                 "free": "0.9"}


def ring_figure(step, turn: int = 6):
    """Left: one stage's life, full → ready → empty, with who arrives on each barrier and who waits for it; right:
    the ring during one pass of the producer's loop (:func:`ring_snapshot`)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, Rectangle

    from .plots import ring_stage_boxes  # here: importing the helper loads no pyplot

    c = step.module.Config.of(step.module.SEARCH_SPACE[0]).check().constants()
    stages, behind = c["STAGES"], c["SPLIT_BEHIND"]
    fig = Figure(figsize=(13, 4.6), layout="constrained")
    cycle, snap = fig.subplots(1, 2, width_ratios=[1.4, 1])
    actors = [("copy engine\n(TMA: A and B tiles)", "tab:orange"),
              ("producer warpgroup\nsplits A: big, small·2^11", "tab:green"),
              ("consumer warpgroups\n3 wgmma a k-step", "tab:blue"),
              ("producer thread 0\nissues the next copy", "tab:orange")]
    xs = [0.5, 2.5, 4.5, 6.5]
    for (text, colour), x in zip(actors, xs):
        cycle.add_patch(Rectangle((x - 0.8, 1.0), 1.6, 1.0, color=colour, alpha=0.3))
        cycle.text(x, 1.5, text, ha="center", va="center", fontsize=8)
    for b, x0, x1 in zip(barriers(step), xs, xs[1:]):
        cycle.add_patch(FancyArrowPatch((x0 + 0.8, 1.5), (x1 - 0.8, 1.5), arrowstyle="-|>", mutation_scale=14))
        cycle.text((x0 + x1) / 2, 2.15, f"{b.name}[s]", ha="center", fontsize=9, fontweight="bold")
        cycle.text((x0 + x1) / 2, 0.75, f"{b.count} arrival{'s' if b.count > 1 else ''}", ha="center",
                   fontsize=7.5)
    cycle.add_patch(FancyArrowPatch((xs[-1], 1.0), (xs[0], 1.0), connectionstyle="arc3,rad=-0.25", arrowstyle="-|>",
                                    mutation_scale=14, color="0.5"))
    cycle.text(3.5, 0.05, "the stage's next fill", ha="center", fontsize=8, color="0.4")
    cycle.set(xlim=(-0.5, 7.5), ylim=(-0.3, 2.5), title="One stage s: each barrier is arrived on by the role on its "
              "left and waited for by the role on its right")
    cycle.title.set_fontsize(9)
    cycle.axis("off")
    ring_stage_boxes(snap, ring_snapshot(stages, behind, turn), STATE_COLOURS,
                     f"Pass {turn} of the producer's loop: copy k-tile {turn}, split k-tile {turn - behind}\n"
                     f"(SPLIT_BEHIND = {behind}; STAGES = {stages})", box=(0.5, 1.4), rows=(1.6, 1.25, 0.85),
                     alpha=0.6, ylim=(0.3, 2.3))
    return fig


# -- the model ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SharedBytes:
    """Bytes through one block's shared memory per k-tile (:func:`shared_bytes`)."""
    parts: dict  # who moves them (the label the lesson prints) → bytes
    total: int  # all of them


def shared_bytes(step) -> SharedBytes:
    """Bytes through one block's shared memory per k-tile, by who moves them: the copy engine writes A's tile and
    B's copy box (the step's ``B_STAGE_FLOATS``: BLOCK_K rows of ``B_STRIDE``, the padded box its tensor map asks
    for, wider than the BLOCK_N columns used); the producer reads A and writes its big and small parts; each
    consumer warpgroup loads its columns of B into registers; each consumer's three wgmma a k-step read all of A's
    tile (big twice, small once)."""
    config = step.module.SEARCH_SPACE[0]
    c = step.module.Config.of(config).check().constants()
    a = config.BLOCK_M * config.BLOCK_K * 4
    b = config.BLOCK_K * config.BLOCK_N * 4
    b_box = c["B_STAGE_FLOATS"] * 4
    consumers = c["CONSUMERS"]
    parts = {"copies (A, B's box)": a + b_box, "split (read A, write big + small)": 3 * a, "B fragments": b,
             "wgmma reads of A": 3 * a * consumers}
    return SharedBytes(parts, sum(parts.values()))


@dataclass(frozen=True)
class StepSeventeenThird:
    """Step 17's TF32 speed / 3 at one size, worked out after the run (:attr:`Model.sizes`)."""
    step17: float  # step 17's TFLOPS in the run
    step17_third: float  # / 3
    step17_third_vs_sgemm: float  # over cuBLAS SGEMM's, same run


@dataclass(frozen=True)
class Model:
    """Lesson 18's counts (:func:`model`)."""
    tensor_clocks: float  # clocks the tensor core needs for a 3xTF32 k-tile at its dense TF32 rate
    shared_bytes: int  # bytes through shared memory a k-tile (:func:`shared_bytes`)
    shared_per_clock: float  # those bytes over ``tensor_clocks``
    shared_limit: int  # what the SM serves a clock (:data:`SHARED_BYTES_PER_CLOCK`)
    sizes: dict  # size → StepSeventeenThird, at the sizes the run has step 17 and SGEMM at


def model(step17, step18, run: dict) -> Model:
    """Lesson 18's counts. Tensor core: a 3xTF32 k-tile is three TF32 k-tiles of work; ``step17_third`` is step 17's
    TF32 speed / 3 in ``run`` (and × cuBLAS SGEMM of the same run) — worked out after the run, and not a ceiling
    (:func:`step17_third_shares`). Shared memory: the bytes of a k-tile (:func:`shared_bytes`) over the clocks the
    tensor core needs for it at its dense TF32 rate, against the SM's 128 bytes a clock."""
    c = ring_constants(step18)
    tensor = 3 * 2 * c["BLOCK_M"] * c["BLOCK_N"] * c["BLOCK_K"] / TF32_FLOP_PER_CLOCK
    shared = shared_bytes(step18)
    sizes = {}
    for size in BIG:
        r17, sgemm = record(run, step17.name, size), record(run, "cublas", size)
        if r17 and sgemm:
            sizes[size] = StepSeventeenThird(r17["tflops"], r17["tflops"] / 3, r17["tflops"] / 3 / sgemm["tflops"])
    return Model(tensor, shared.total, shared.total / tensor, SHARED_BYTES_PER_CLOCK, sizes)


# -- speed and verdict -------------------------------------------------------------------------------------------------
def speed_table(run: dict, rows=ROWS) -> MarkdownTable:
    """TFLOPS, × cuBLAS SGEMM and the SM clock (median, slowest launch) of each row at 4096³ and 8192³."""
    return tflops_table(run, rows, BIG, against="cublas", ratio="{:.2f}× SGEMM", clock=True,
                        heading="TFLOPS (× cuBLAS SGEMM, same run) · SM clock, median (slowest launch):")


@dataclass(frozen=True)
class SizeVerdict:
    """The step against the 3xTF32 target at one size (:attr:`Verdict.sizes`)."""
    tflops: float  # its TFLOPS
    vs_sgemm: float  # over cuBLAS SGEMM's, same run
    met: bool  # ``vs_sgemm`` at least the target
    vs_step14: float | None  # over step 14's (None: not in the run)
    of_step17_third: float | None  # over step 17's TF32 / 3 (None: not in the run)
    mhz: float  # its SM clock, median
    mhz_min: float  # … the slowest launch's
    sgemm_mhz: float  # SGEMM's, median


@dataclass(frozen=True)
class Verdict:
    """Step 18 against issue 24's 3xTF32 target (:func:`verdict`)."""
    sizes: dict  # size → SizeVerdict, at 4096³ and 8192³
    target: float  # the target: × cuBLAS SGEMM
    met: bool  # met at both sizes


def verdict(run: dict, step: str = "warp_specialized_3xtf32") -> Verdict | None:
    """``step`` against issue 24's 3xTF32 target (:data:`TARGET_HOPPER_3XTF32_VS_SGEMM` × cuBLAS SGEMM at 4096³ and
    8192³, same run): per size its TFLOPS, × SGEMM, × step 14 and × step 17's TF32 / 3, its SM clock and SGEMM's,
    whether met there; ``met`` at both. None without the step and SGEMM at both sizes."""
    out = {}
    for size in BIG:
        r, sgemm, s14, s17 = (record(run, n, size) for n in (step, "cublas", "warpgroup_mma", "warp_specialized"))
        if r is None or sgemm is None:
            return None
        vs = r["tflops"] / sgemm["tflops"]
        out[size] = SizeVerdict(r["tflops"], vs, vs >= TARGET_HOPPER_3XTF32_VS_SGEMM,
                                r["tflops"] / s14["tflops"] if s14 else None,
                                3 * r["tflops"] / s17["tflops"] if s17 else None,
                                r["sm_clock_mhz_median"], r["sm_clock_mhz_min"], sgemm["sm_clock_mhz_median"])
    return Verdict(out, TARGET_HOPPER_3XTF32_VS_SGEMM, all(q.met for q in out.values()))


#: The course benchmarks with steps 17 and 18: one H100 run and one H200 run (the latter is :data:`BENCH_RUN`).
BENCHMARKS = (results_files.BENCH_NVIDIA_H100_80GB_HBM3_2026_11_26, BENCH_RUN)


@dataclass(frozen=True)
class ThirdShares:
    """Step 18 over step 17's TF32 speed / 3 in one course benchmark (:func:`step17_third_shares`)."""
    gpu: str | None  # the run's GPU
    file: str  # the run's file
    sizes: dict  # size → the share, where the run has both steps


def step17_third_shares() -> list[ThirdShares]:
    """Step 18 over step 17's TF32 speed / 3 in each course benchmark of :data:`BENCHMARKS` — above 1 where step 18
    ran faster than step 17 / 3, which a ceiling would not allow."""
    out = []
    for name in BENCHMARKS:
        run = load_run(name)
        if run is None:
            continue
        got = {size: 3 * record(run, STEP, size)["tflops"] / record(run, "warp_specialized", size)["tflops"]
               for size in BIG if record(run, STEP, size) and record(run, "warp_specialized", size)}
        out.append(ThirdShares(run["environment"].get("gpu"), name, got))
    return out


def builds_table(run: dict) -> MarkdownTable:
    """The experiment's builds: TFLOPS, × the step of the same run, and the SM clock at 4096³ and 8192³."""
    rows = [(name, f"`{name}`: {label}") for name, label in BUILDS]
    return tflops_table(run, rows, BIG, against="warp_specialized_3xtf32", ratio="{:.2f}× the step", clock=True,
                        heading="TFLOPS (× the step, same run) · SM clock, median (slowest launch):")


def build_ratios(run: dict) -> dict:
    """{build: {size: its TFLOPS / the step's}} in the experiment's run."""
    return {name: {size: record(run, name, size)["tflops"] / record(run, "warp_specialized_3xtf32", size)["tflops"]
                   for size in BIG} for name, _ in BUILDS}


@dataclass(frozen=True)
class Accuracy:
    """Step 18 in the FP32-accuracy run (:func:`accuracy`)."""
    kept: int  # (class, K) records that kept the contract
    of: int  # … of how many
    worst: float  # the worst error over its bound
    worst_class: str  # the input class it was in
    worst_K: int  # … and its K
    specials_kept: bool  # every special input gave SGEMM's inf/NaN pattern
    specials: int  # the special inputs it ran


def accuracy(run: dict, verdicts: dict, specials_kept: dict, step: str = "warp_specialized_3xtf32") -> Accuracy:
    """Step 18 in the FP32-accuracy run: (class, K) records that kept the contract of how many, the worst error /
    bound, and whether every special input gave SGEMM's inf/NaN pattern. ``verdicts`` and ``specials_kept``: lesson
    21's per-kernel summaries of the run (``lesson_24.verdicts(run)``, ``lesson_24.specials_kept(run)``), which the
    lesson passes in (one lesson's helpers do not import another's)."""
    v, s = verdicts[step], specials_kept[step]
    return Accuracy(v["kept"], v["of"], v["worst"], v["worst_class"], v["worst_K"], s["kept"],
                    sum(r["step"] == step for r in run["specials"]))


# -- split-K -----------------------------------------------------------------------------------------------------------
def slices_in_the_runs(tiles: int, k_tiles: int, sms: int) -> int:
    """The split-K policy step 18 ran with in the two shape-suite runs (2026-11-26): slices of at least 8 k-tiles, as
    many as fill the SMs once, at most 8. Since tuned for small products (slices of 2 k-tiles, none below 8 in all:
    experiments/small_split_k.py) and uncapped (experiments/split_k_slices.py): the step's ``slices``; the runs are
    read with the policy they ran."""
    if tiles >= sms:
        return 1
    return max(1, min(sms // max(tiles, 1), k_tiles // 8, 8))


@dataclass(frozen=True)
class SplitShape:
    """One shape the policy splits (:attr:`SplitK.rows`)."""
    size: tuple  # (M, N, K)
    tiles: int  # full BLOCK_M × BLOCK_N tiles
    k_tiles: int  # k-tiles of K
    slices: int  # the slices the policy splits K into
    before: float  # the step's TFLOPS before split-K
    before_pct: float  # … its % of cuBLAS SGEMM, same run
    after: float  # the step's TFLOPS after
    after_pct: float  # … its % of cuBLAS SGEMM, same run


@dataclass(frozen=True)
class SplitK:
    """Step 18 in the shape suite before and after split-K (:func:`split_k`)."""
    rows: list  # SplitShape per shape the policy splits, in the suite's order
    sms: int  # the after-run's SM count
    elsewhere: float | None  # the largest |after / before − 1| at the shapes left whole (None: there are none)


def split_k(step, before: dict, after: dict, policy=slices_in_the_runs) -> SplitK:
    """Step 18 in the shape suite before and after split-K. ``rows``: every shape of the suite where ``policy`` (the
    one the runs ran, on the after-run's SM count) splits K — its full 128×128 tiles, k-tiles, slices, and the step's TFLOPS
    and % of cuBLAS SGEMM (same run) in each file. ``elsewhere``: the largest change |after / before − 1| of the
    step's TFLOPS at the shapes the policy leaves whole (one slice)."""
    config = step.module.SEARCH_SPACE[0]
    sms = after["environment"]["sm_count"]
    rows, changes = [], []
    for size in common_sizes(after, in_file_order=True):
        m, n, k = size
        tiles, k_tiles = (m // config.BLOCK_M) * (n // config.BLOCK_N), k // config.BLOCK_K
        old, new = record(before, step.name, size), record(after, step.name, size)
        if old is None or new is None:
            continue
        slices = policy(tiles, k_tiles, sms) if tiles else 1
        if slices == 1:
            changes.append(abs(new["tflops"] / old["tflops"] - 1))
            continue
        rows.append(SplitShape(size, tiles, k_tiles, slices, old["tflops"], old["pct_of_cublas"], new["tflops"],
                               new["pct_of_cublas"]))
    return SplitK(rows, sms, max(changes) if changes else None)


def split_k_table(result: SplitK, before: dict, after: dict) -> MarkdownTable:
    """:func:`split_k`'s rows: shape, full tiles, slices, TFLOPS and % of cuBLAS SGEMM before and after."""
    rows = [{"M×N×K": "×".join(map(str, r.size)), "full tiles": str(r.tiles), "k-tiles": str(r.k_tiles),
             "slices": str(r.slices), "before split-K": f"{r.before:.1f} ({r.before_pct:.0f} %)",
             "after": f"**{r.after:.1f}** ({r.after_pct:.0f} %)"} for r in result.rows]
    return MarkdownTable(f"Step 18, TFLOPS (% of cuBLAS SGEMM, same run); {result.sms} SMs:\n\n"
                         + table(rows, align="lrrrrr") + "\n\nBefore: " + caption(before) + " After: " + caption(after))


# -- the timeline ------------------------------------------------------------------------------------------------------
def in_flight_windows(x: np.ndarray) -> np.ndarray:
    """A consumer's ``wgmma`` windows, one per k-tile: from its B fragments split (the first ``wgmma`` is issued next)
    to that k-tile's ``wait_group 0`` done in the next pass (the timeline summary's definition)."""
    w = np.stack([x[:-1, 4], x[1:, 1]], axis=1)
    return w[np.isfinite(w).all(axis=1)]


def neither_spans(timeline: dict, block: int = 0) -> np.ndarray:
    """The stretches during which neither consumer has ``wgmma`` in flight, from the first window to the last."""
    e = events(timeline, STEP, block)
    windows = sorted(map(tuple, np.concatenate([in_flight_windows(e[w]) for w in (1, 2)])))
    spans, end = [], windows[0][1]
    for a, b in windows[1:]:
        if a > end:
            spans.append((end, a))
        end = max(end, b)
    return np.array(spans)


@dataclass(frozen=True)
class ConsumerTimeline:
    """One consumer warpgroup's k-tile in step 18's timeline (:attr:`TimelineNumbers.warpgroups`)."""
    stretches: dict  # the run's summary of it: median clocks of each stretch (keys of :data:`TIMELINE_ROWS`), period
    outside: float  # the serial stretch with none of its own wgmma in flight, median clocks
    outside_share: float  # … over its period


@dataclass(frozen=True)
class InFlight:
    """Shares of a recorded block's time with wgmma in flight (:attr:`TimelineNumbers.shares`)."""
    both: float  # on both consumers
    one: float  # on one
    neither: float  # on neither


@dataclass(frozen=True)
class TimelineNumbers:
    """Step 18's timeline in numbers (:func:`timeline_numbers`)."""
    warpgroups: list  # ConsumerTimeline per consumer warpgroup
    period: float  # the consumers' mean period, clocks a k-tile
    mhz: float  # the SM clock after the launch
    producer: dict  # the run's summary of the producer's stretches (median clocks)
    shares: list  # InFlight per recorded block
    tensor_clocks: float  # clocks the tensor core needs a k-tile (the model)
    implied_tflops: float  # every SM at the timeline build's period
    shipped_tflops: float  # the shipped kernel's TFLOPS in the benchmark at the timeline's size
    shipped_period: float  # the period that speed implies, clocks
    k_tiles: list  # the first and past-the-last k-tile the summary covers
    size: int  # the timeline's square


def timeline_numbers(step, timeline: dict, run: dict) -> TimelineNumbers:
    """Step 18's timeline in numbers (block 0's medians over the k-tiles the run's summary covers, from its file):
    per consumer warpgroup the summary's stretches of a k-tile and ``outside`` — the serial stretch with none of its
    own ``wgmma`` in flight (from ``wait_group 0`` done to its next fragments split: add + release, wait for ready, B's
    fragments) — and its share of the period; the shares of time both, one or neither consumer has ``wgmma`` in flight
    (per recorded block); the producer's split; the clocks the tensor core needs a k-tile (the model), the period the
    benchmark's 4096³ speed implies for the shipped kernel, and the speed the timeline build's period implies."""
    summary = timeline["steps"][STEP]["summary"]
    start = summary["k_tiles_summarised"][0]
    e = events(timeline, STEP, 0)
    blocks = summary["blocks"]
    warpgroups = []
    for w, s in zip((1, 2), blocks[0]["warpgroups"]):
        x = e[w][start:]
        outside = float(np.nanmedian(x[:, 4] - x[:, 1]))
        warpgroups.append(ConsumerTimeline(s, outside, outside / s["period"]))
    c = ring_constants(step)
    flop = 2 * c["BLOCK_M"] * c["BLOCK_N"] * c["BLOCK_K"]
    sms, mhz = timeline["environment"]["sm_count"], timeline["steps"][STEP]["sm_clock_mhz_after"]
    period = float(np.mean([w.stretches["period"] for w in warpgroups]))
    shipped = record(run, STEP, (timeline["size"],) * 3)
    return TimelineNumbers(
        warpgroups, period, mhz, blocks[0]["producer"],
        [InFlight(*(b["consumers"][f"share_{k}_in_flight"] for k in ("both", "one", "neither"))) for b in blocks],
        3 * flop / TF32_FLOP_PER_CLOCK, sms * flop * mhz * 1e6 / period / 1e12, shipped["tflops"],
        sms * flop * shipped["sm_clock_mhz_median"] * 1e6 / shipped["tflops"] / 1e12,
        summary["k_tiles_summarised"], timeline["size"])


#: The timeline's rows: (label, summary key), per consumer warpgroup, in the order of its loop.
TIMELINE_ROWS = [("waits for k-tile u − 1's wgmma (wait_group 0)", "wait_wgmma"),
                 ("adds the fresh sum to the total, releases the stage", "add_release"),
                 ("waits for k-tile u's stage to be ready", "wait_ready"), ("loads and splits B's fragments", "fragments"),
                 ("issues the k-tile's wgmma, commits", "issue")]


def timeline_table(numbers: TimelineNumbers, timeline: dict) -> MarkdownTable:
    """Per consumer warpgroup the median clocks of each stretch of its loop, the period, and the serial stretch with
    none of its own wgmma in flight; then the shares of time both, one or neither has wgmma in flight."""
    w = numbers.warpgroups
    rows = [(label, *(f"{q.stretches[key]:,.0f}" for q in w)) for label, key in TIMELINE_ROWS]
    rows.append(("**period** (commit to commit)", *(f"**{q.stretches['period']:,.0f}**" for q in w)))
    rows.append(("none of its own wgmma in flight (add + release, ready, fragments)",
                 *(f"{q.outside:,.0f} ({q.outside_share:.0%})" for q in w)))
    shown = table([dict(zip(("median, SM clocks a k-tile", "warpgroup 0", "warpgroup 1"), r)) for r in rows],
                  align="lrr")
    shares = " · ".join(f"block {b}: both {s.both:.0%}, one {s.one:.0%}, neither {s.neither:.0%}"
                        for b, s in enumerate(numbers.shares))
    env = timeline["environment"]
    return MarkdownTable(shown + f"\n\nwgmma in flight on the SM — {shares}.\n\n*k-tiles "
                         f"{numbers.k_tiles[0]}–{numbers.k_tiles[1] - 1} of block 0, one launch at "
                         f"{numbers.size}³, SM clock {numbers.mhz:.0f} MHz; {env.get('gpu')}, "
                         f"{str(env.get('date'))[:10]}, `{TIMELINE_RUN}`.*")


#: The consumers' stretches in the figure: (label, colour), events 0→1 … 4→5, then 5 → the next pass.
CONSUMER_SEGMENTS = [("wait_group 0 (k-tile u − 1)", "tab:green"), ("add + release", "tab:purple"),
                     ("waits for ready", "tab:red"), ("B's fragments", "tab:cyan"), ("issues wgmma", "tab:blue"),
                     ("loop, recording", "0.9")]
#: The producer's (its first thread), as (label, colour, first event, last event) of a k-tile's row: it waits for
#: k-tile j's bytes and splits j in one pass, and copies j two passes earlier (SPLIT_BEHIND).
PRODUCER_SEGMENTS = [("waits for bytes", "0.7", 0, 1), ("splits A", "tab:olive", 1, 2),
                     ("waits for an empty stage", "0.45", 3, 4), ("issues the copies", "tab:orange", 4, 5)]


def timeline_figure(timeline: dict, block: int = 0, first: int = 16, k_tiles: int = 4):
    """A Gantt chart of one recorded block from warpgroup 0's turn to k-tile ``first``, for ``k_tiles`` of its
    periods: the producer's first thread, each consumer warpgroup's stretches, under each consumer its wgmma windows
    (:func:`in_flight_windows`), and at the bottom the stretches when neither consumer has wgmma in flight."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    e = events(timeline, STEP, block)
    start = e[1][first, 0]
    span = e[1][first + k_tiles, 0] - start
    e = e - start
    fig = Figure(figsize=(13, 4.4), layout="constrained")
    ax = fig.subplots()

    def bar(y, a, b, colour, height=0.6, text=None):
        a, b = max(a, 0), min(b, span)
        if np.isfinite(a) and np.isfinite(b) and b > a:
            ax.barh(y, b - a, left=a, color=colour, height=height)
            if text:
                ax.text(a + 8, y + height / 2 + 0.05, text, fontsize=6.5)

    rows = {"producer": 4, 1: 3, 2: 1.6}
    p = e[0]
    for j in range(p.shape[0]):
        for _, colour, a, b in PRODUCER_SEGMENTS:
            bar(rows["producer"], p[j, a], p[j, b], colour, text={1: f"split {j}", 4: f"copy {j}"}.get(a))
    for w in (1, 2):
        x = e[w]
        for u in range(x.shape[0]):
            edges = [*x[u], x[u + 1, 0] if u + 1 < x.shape[0] else np.nan]
            for i, (_, colour) in enumerate(CONSUMER_SEGMENTS):
                bar(rows[w], edges[i], edges[i + 1], colour, text=str(u) if i == 0 else None)
        for a, b in in_flight_windows(x):
            bar(rows[w] - 0.55, a, b, "tab:blue", height=0.18)
    for a, b in neither_spans(timeline, block) - start:
        bar(0.3, a, b, "black", height=0.35)
    ax.set_yticks([4, 3, 2.45, 1.6, 1.05, 0.3], ["producer (thread 0)", "warpgroup 0", "its wgmma in flight",
                                                 "warpgroup 1", "its wgmma in flight", "no wgmma in flight"])
    ax.set_xlim(0, span)
    ax.set_ylim(-0.1, 4.6)
    ax.set_xlabel(f"SM clocks since warpgroup 0 turned to k-tile {first} (numbers: k-tiles)")
    handles = [Patch(color=c, label=f"producer: {l}") for l, c, _, _ in PRODUCER_SEGMENTS]
    handles += [Patch(color=c, label=l) for l, c in CONSUMER_SEGMENTS]
    handles.append(Patch(color="black", label="neither consumer has wgmma in flight"))
    fig.legend(handles=handles, loc="outside lower center", ncols=6, fontsize=7.5)
    env = timeline["environment"]
    fig.suptitle(f"Step 18, %clock64 per role, block {block} of one launch at {timeline['size']}³ "
                 f"(SM clock {timeline['steps'][STEP]['sm_clock_mhz_after']:.0f} MHz): {env.get('gpu')}, "
                 f"{str(env.get('date'))[:10]}, {TIMELINE_RUN}", fontsize=9)
    return fig


# -- deep dive 18: what holds the 3xTF32 step ------------------------------------------------------------------------
#: Step 18's kernel with parts of its work taken away (experiments/step_18_ablation.py: a wrong C, times only) …
ABLATION_RUN = results_files.EXPERIMENT_STEP_18_ABLATION_NVIDIA_H200
#: … those builds and both cuBLAS back to back at 8192³, the board's power sampled (experiments/step_18_energy.py),
#: twice: the second with the kernels in the opposite order …
ENERGY_RUN = results_files.EXPERIMENT_STEP_18_ENERGY_NVIDIA_H200
ENERGY_RUNS = (ENERGY_RUN, results_files.EXPERIMENT_STEP_18_ENERGY_NVIDIA_H200_2)
#: … A split once by a first kernel, timed twice, step 18 first then last (experiments/presplit_a.py) …
PRESPLIT_RUNS = (results_files.EXPERIMENT_PRESPLIT_A_NVIDIA_H200, results_files.EXPERIMENT_PRESPLIT_A_NVIDIA_H200_2)
#: … the next k-tile's B read while this one's wgmma run (experiments/prefetch_b.py) …
PREFETCH_RUN = results_files.EXPERIMENT_PREFETCH_B_NVIDIA_H200
#: … and the producer's threads loading A from global memory, twice (step 18 first, then last), then that variant
#: without the split's arithmetic and/or the proxy fence, and without its shared stores (experiments/producer_loads_a.py,
#: --ablation, --stores).
PRODUCER_LOADS_A_RUNS = (results_files.EXPERIMENT_PRODUCER_LOADS_A_NVIDIA_H200,
                         results_files.EXPERIMENT_PRODUCER_LOADS_A_NVIDIA_H200_2)
PRODUCER_LOADS_A_ABLATION_RUNS = (results_files.EXPERIMENT_PRODUCER_LOADS_A_ABLATION_NVIDIA_H200,
                                  results_files.EXPERIMENT_PRODUCER_LOADS_A_STORES_NVIDIA_H200)
#: The ablation's builds, in its order: (record, what is taken away).
ABLATIONS = [("ablation@all_on", "nothing (the control)"), ("ablation@no_split_a", "the producer's split of A"),
             ("ablation@no_split_b", "the consumers' split of B"), ("ablation@no_fold", "their adds into the total"),
             ("ablation@no_split_b_no_fold", "both consumer parts"), ("ablation@none", "all three")]
#: How the energy figure and table name the kernels of experiments/step_18_energy.py.
ENERGY_LABELS = {STEP: "step 18", "cublas_tf32": "cuBLAS TF32", **{name: f"without {label}" for name, label in ABLATIONS}}


def ablation_table(run: dict) -> MarkdownTable:
    """Per build of the ablation: its speed over step 18's and over cuBLAS SGEMM's at each size of the run."""
    sizes = list(run["summary"])
    rows = [{"taken away": label,
             **{f"over step 18, {s.split('x')[0]}³": run["summary"][s]["over_shipped"].get(name) for s in sizes},
             **{f"× SGEMM, {s.split('x')[0]}³": run["summary"][s]["over_cublas_sgemm"].get(name) for s in sizes}}
            for name, label in ABLATIONS]
    return table(rows, formats={k: "{:.3f}" if k.startswith("over") else "{:.2f}" for k in rows[0]})


def tf32_over_sgemm(run: dict) -> dict[str, float]:
    """cuBLAS TF32's speed over cuBLAS SGEMM's at each size of a run (``"4096³"``: ratio)."""
    return {f"{shape.split('x')[0]}³": q["tflops"]["cublas_tf32"] / q["tflops"]["cublas"]
            for shape, q in run["summary"].items()}


def ablation_figure(run: dict):
    """Each build's speed over cuBLAS SGEMM at each size (step 18's as the first bar), the issue's target a line."""
    from matplotlib.figure import Figure

    sizes = list(run["summary"])
    names = [(STEP, "step 18 as shipped")] + ABLATIONS[1:]
    fig = Figure(figsize=(9, 3.8), layout="constrained")
    ax = fig.subplots()
    height = 0.8 / len(sizes)
    for i, shape in enumerate(sizes):
        over = run["summary"][shape]["over_cublas_sgemm"]
        ax.barh([y + i * height for y in range(len(names))], [over.get(name) or 0 for name, _ in names], height,
                label=f"{shape.split('x')[0]}³")
    ax.axvline(TARGET_FINAL_3XTF32_VS_SGEMM, color="black", linestyle="--", label="the issue's target")
    ax.set_yticks([y + height * (len(sizes) - 1) / 2 for y in range(len(names))],
                  [label if name == STEP else f"without {label}" for name, label in names])
    ax.invert_yaxis()
    ax.set_xlim(1.8, 3.0)
    ax.set_xlabel("× cuBLAS SGEMM in the same run, from 1.8× (builds without a part compute a wrong C: times only)")
    fig.legend(fontsize=8, loc="outside right center")
    env = run["environment"]
    fig.suptitle(f"Step 18 with parts of its work taken away: {env.get('gpu')}, {str(env.get('date'))[:10]}, "
                 f"{ABLATION_RUN}", fontsize=9)
    return fig


@dataclass
class EnergyRow:
    """One kernel back to back at 8192³: its speed, SM clock and board power, and its TF32 products a joule over
    cuBLAS TF32's (None for cuBLAS SGEMM, which runs none)."""

    name: str
    tflops: float
    mhz: float
    watts: float
    products_per_joule: float | None


def energy_rows(run: dict) -> list[EnergyRow]:
    over = run["summary"]["tf32_products_per_joule_over_cublas_tf32"]
    return [EnergyRow(name, r["tflops_back_to_back"], r["sm_clock_mhz"], r["power_w"], over.get(name))
            for name, r in run["kernels"].items()]


def energy_figure(run: dict):
    """TF32 products a joule of each tensor-core kernel over cuBLAS TF32's, and what the issue's target needs."""
    from matplotlib.figure import Figure

    rows = [r for r in energy_rows(run) if r.products_per_joule is not None]
    fig = Figure(figsize=(9, 3.5), layout="constrained")
    ax = fig.subplots()
    ax.barh(range(len(rows)), [r.products_per_joule for r in rows],
            color=["0.5" if r.name == "cublas_tf32" else "tab:blue" for r in rows])
    for y, r in enumerate(rows):
        ax.text(r.products_per_joule + 0.005, y, f"{r.tflops:.0f} TFLOPS, {r.mhz:.0f} MHz, {r.watts:.0f} W",
                va="center", fontsize=7.5)
    need = run["summary"]["target_tf32_products_per_joule_over_cublas_tf32"]
    ax.axvline(need, color="black", linestyle="--",
               label=f"{TARGET_FINAL_3XTF32_VS_SGEMM}× cuBLAS SGEMM at this power")
    ax.set_yticks(range(len(rows)), [ENERGY_LABELS.get(r.name, r.name) for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0.8, max(need, *(r.products_per_joule for r in rows)) + 0.12)
    ax.set_xlabel("TF32 products a joule, over cuBLAS TF32's (3 a 3xTF32 FLOP), from 0.8")
    fig.legend(fontsize=8, loc="outside lower center")
    env = run["environment"]
    fig.suptitle(f"8192³ back to back, board power and SM clock from NVML: {env.get('gpu')}, "
                 f"{str(env.get('date'))[:10]}, {ENERGY_RUN}", fontsize=9)
    return fig


def energy_table(runs: list[dict]) -> MarkdownTable:
    """TF32 products a joule over cuBLAS TF32's of each tensor-core kernel in each run, and what the issue's target
    needs at that run's power; with each kernel's clock."""
    rows = []
    for name in [STEP] + [n for n, _ in ABLATIONS[1:]]:
        if not all(name in run["kernels"] for run in runs):
            continue
        row = {"kernel": ENERGY_LABELS[name]}
        for i, run in enumerate(runs, 1):
            row[f"run {i}: products a joule"] = run["summary"]["tf32_products_per_joule_over_cublas_tf32"][name]
            row[f"run {i}: MHz"] = run["kernels"][name]["sm_clock_mhz"]
        rows.append(row)
    need = {"kernel": f"what {TARGET_FINAL_3XTF32_VS_SGEMM}× cuBLAS SGEMM needs"}
    for i, run in enumerate(runs, 1):
        need[f"run {i}: products a joule"] = run["summary"]["target_tf32_products_per_joule_over_cublas_tf32"]
        need[f"run {i}: MHz"] = None
    rows.append(need)
    return table(rows, formats={k: "{:.3f}×" if "products" in k else "{:.0f}" for k in rows[0]})


def over_step_18_table(runs: list[dict], labels: list[str], builds: list[str] | None = None) -> MarkdownTable:
    """Builds timed against step 18 (:func:`experiments.time_against_shipped`'s runs), a row per run, shape and
    build: its speed over step 18's, and both kernels' median SM clocks. ``labels``: what each run is called;
    ``builds``: the builds shown (None: every build of each run, named in a column of its own)."""
    rows = []
    for label, run in zip(labels, runs):
        for shape, q in run["summary"].items():
            for build in builds or list(q["over_shipped"]):
                rows.append({"run": label, "shape": shape.replace("x", "×"),
                             **({} if builds else {"build": build.split("@")[-1]}),
                             "over step 18": q["over_shipped"].get(build),
                             "its clock, MHz": q["clock_mhz"].get(build),
                             "step 18's clock, MHz": q["clock_mhz"].get(STEP)})
    return table(rows, formats={"over step 18": "{:.3f}", "its clock, MHz": "{:.0f}", "step 18's clock, MHz": "{:.0f}"})


#: How the deep dive names the two runs of a build timed twice: step 18 first, then last (``--shipped-last``).
BOTH_ORDERS = ["1 (step 18 first)", "2 (step 18 last)"]


def prefetch_ratios(run: dict) -> dict[str, float]:
    """Reading the next k-tile's B early, over step 18, by shape (its run's summary, from the first version of the
    experiments' shared timing: ``variant_over_shipped``)."""
    return {shape: q["variant_over_shipped"] for shape, q in run["summary"].items()}
