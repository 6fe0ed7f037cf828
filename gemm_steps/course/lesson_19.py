"""Lesson 19's helpers (step 19, ``pingpong``: step 17 persistent, each consumer warpgroup owning whole tiles and the
two taking turns in the main loop): the ring's counter over a block's tiles and what a parity wait can tell, the
model the prediction comes from (experiments/kernels/pingpong_specialized.py's docstring), the speed table and
verdict from the H100 run that measured step 19 beside step 17, its persistent form and both cuBLAS
(experiments/pingpong_bench.py), and the ping-pong timeline from the GPU (experiments/timeline.py) beside step 17's.
Numbers, tables and figures only: the words are the lesson's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .gpu_model import TF32_FLOP_PER_CLOCK, ring_constants, ring_schedule
from .targets import TARGET_HOPPER_TF32_PCT_OF_CUBLAS
from .timelines import TIMELINE_RUN as STEP17_TIMELINE_RUN
from .timelines import WARM_UP_K_TILES, events
from .timelines import timeline_medians as step17_medians
from .timings import load_run, record, size_label, tflops_table

# -- the shipped files (experiments/results/) -------------------------------------------------------------------------
#: Step 17, its persistent form and step 19 beside both cuBLAS, one H100 run (experiments/pingpong_bench.py). Step 19
#: ran as the experiment's ordered build, ``pingpong_specialized`` (the same kernel).
BENCH_RUN = results_files.EXPERIMENT_PINGPONG_NVIDIA_H100
#: Step 19's timeline: the same kernel with %clock64 writes, one launch at 4096³ on the same H100
#: (experiments/kernels/pingpong_specialized_timeline.py).
TIMELINE_RUN = results_files.EXPERIMENT_TIMELINE_PINGPONG_SPECIALIZED_NVIDIA_H100
TIMELINE_BUILD = "pingpong_specialized"
#: Step 19's record in :data:`BENCH_RUN`.
RECORD = "pingpong_specialized"
SIZES = ((4096, 4096, 4096), (8192, 8192, 8192), (6144, 6144, 2048))
#: The rows of the speed table: (record, label).
ROWS = [("cublas", "cuBLAS SGEMM (FP32 units)"), ("cublas_tf32", "cuBLAS TF32"),
        ("warp_specialized", "step 17: a block a 256×128 tile, both consumers on it"),
        ("persistent_specialized", "step 17 persistent (experiment)"),
        (RECORD, "step 19: persistent ping-pong, a consumer a 128×128 tile")]

# -- the model's assumptions, as experiments/kernels/pingpong_specialized.py's docstring wrote them before the run ---
#: What ping-pong takes off each 256×128-equivalent tile: the store of C and the turn from one tile's last k-tile to
#: the next one's first (≈ one k-tile), in clocks — the docstring's estimate (the store "not measured").
SAVED_CLOCKS = (1_500, 2_500)
#: The store's rate the docstring assumed, bytes a clock (its estimate of the store's clocks).
STORE_BYTES_PER_CLOCK = (128, 64)


def bench_run() -> dict | None:
    return load_run(BENCH_RUN)


def timeline_run() -> dict | None:
    return load_run(TIMELINE_RUN)


def step17_timeline_run() -> dict | None:
    return load_run(STEP17_TIMELINE_RUN)


# -- the ring: one counter over the block's tiles, and what a parity wait can tell -------------------------------------
def consumer_tile(step) -> tuple[int, int]:
    """The rows × columns of C one consumer warpgroup computes per tile: step 17's two consumers split the block's
    columns, step 19's consumer owns the whole tile."""
    c = ring_constants(step)
    return (c["BLOCK_M"], c["BLOCK_N"]) if step.name == "pingpong" else (c["BLOCK_M"], c["BLOCK_N"] // 2)


@dataclass(frozen=True)
class RingTile:
    """One k-tile g of the ring's walk over a block's tiles (:func:`ring_walk`)."""
    k_tile: int  # g, the ring's counter
    stage: int  # g % STAGES
    fill: int  # which fill of that stage: g // STAGES
    full_parity: int  # the parity its reader waits on full[stage] with
    empty_parity: int | None  # the parity the producer waits on empty[stage] with before the fill (None: the first)
    tile: int  # the block's tile it belongs to
    consumer: int  # the consumer that reads it


def ring_walk(step, k_tiles: int, tiles: int = 3) -> list[RingTile]:
    """The ring's k-tiles g of a block's first ``tiles`` tiles of ``k_tiles`` k-tiles each, as step 19 counts them:
    per g its tile (g // k_tiles), the consumer that reads it (tile % 2), its stage, which fill of that stage it is,
    the parity its reader waits for (:func:`gemm_steps.course.gpu_model.ring_schedule`: the kernel's formulas)."""
    stages = ring_constants(step)["STAGES"]
    return [RingTile(**e, tile=e["k_tile"] // k_tiles, consumer=e["k_tile"] // k_tiles % 2)
            for e in ring_schedule(stages, tiles * k_tiles)]


@dataclass(frozen=True)
class ParityWait:
    """A parity wait for one fill of a stage, begun in one phase of its full barrier (:func:`parity_wait`)."""
    fill: int  # the fill waited for
    phase: int  # the barrier's phase when the wait begins
    at_once: bool  # it returns at once (the phase's parity is not the fill's)
    ends_at: int | None  # else the fill whose landing ends it
    landed: bool  # the fill had landed when the wait began
    right: bool  # it ends when the fill has landed and not later


def parity_wait(fill: int, phase: int) -> ParityWait:
    """A wait for fill ``fill`` of a stage (``try_wait.parity`` with parity fill % 2) that starts while the stage's
    full barrier is in phase ``phase`` (fills 0 … phase − 1 have landed). The barrier knows only its phase's parity:
    the wait returns at once if phase % 2 ≠ fill % 2 (``at_once``), else when the phase in progress completes —
    when fill ``phase`` lands (``ends_at``). ``landed``: fill ``fill`` had landed when the wait began. ``right``: the
    wait ends when fill ``fill`` has landed and not later — only for phase fill (it blocks until exactly that fill
    lands) and phase fill + 1 (it has landed: at once)."""
    at_once = phase % 2 != fill % 2
    return ParityWait(fill, phase, at_once, None if at_once else phase, phase > fill, phase in (fill, fill + 1))


#: The stage count of the builds the H100 run timed (the most that fit, then): step 19 keeps 4 since the fair run.
RUN_STAGES = 6


@dataclass(frozen=True)
class UnorderedStart:
    """Consumer 1's first wait without the order (:func:`unordered_start`)."""
    g: int  # the ring's k-tile it waits for: k_tiles, where the block's second tile starts
    stage: int  # its stage
    stages: int  # the ring's stages
    wait: ParityWait  # the wait for its fill, begun while the stage is in phase 0


def unordered_start(step, k: int, stages: int | None = None) -> UnorderedStart:
    """What consumer 1 would wait for first without the order: the ring's k-tile g = k_tiles (the block's second tile
    starts there), its stage and fill, and the wait's answer while that stage is still in phase 0 (nothing landed:
    its earlier fills are consumer 0's, which has only just started). ``stages``: the ring's (default: the step's)."""
    c = ring_constants(step)
    stages = stages or c["STAGES"]
    g = k // c["BLOCK_K"]
    return UnorderedStart(g, g % stages, stages, parity_wait(g // stages, 0))


STATE_COLOURS = {0: "tab:blue", 1: "tab:orange"}


def ring_figure(step, k_tiles: int = 4, fill: int = 3):
    """Left: the ring's k-tiles over a block's first three tiles of ``k_tiles`` k-tiles each (a small K for the
    picture), by stage, coloured by the consumer that reads them, with each fill's parity. Right: a wait for fill
    ``fill`` of a stage against the phase the stage is in — where the parity gives the right answer and where it
    does not."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    from .plots import k_tile_grid  # here: importing the helper loads no pyplot

    stages = ring_constants(step)["STAGES"]
    walk = ring_walk(step, k_tiles)
    fig = Figure(figsize=(13, 4.2), layout="constrained")
    ring, table = fig.subplots(1, 2, width_ratios=[1.6, 1])
    k_tile_grid(ring, [(e.k_tile, e.stage, STATE_COLOURS[e.consumer],
                        f"g={e.k_tile}\nfill {e.fill}\nparity {e.full_parity}") for e in walk], stages, alpha=0.35,
                cell=(0.92, 0.88), centre=(0.46, 0.44))
    for t in range(1, len(walk) // k_tiles):
        ring.axvline(t * k_tiles - 0.04, color="k", lw=1)
    ring.set_xticks([(t + 0.5) * k_tiles for t in range(len(walk) // k_tiles)],
                    [f"the block's tile {t}" for t in range(len(walk) // k_tiles)])
    ring.legend(handles=[Patch(color=STATE_COLOURS[w], alpha=0.35, label=f"read by consumer {w}") for w in (0, 1)],
                loc="upper right", fontsize=7, ncols=2, bbox_to_anchor=(1, 1.16))
    ring.set_title(f"One counter g over the block's tiles ({k_tiles} k-tiles a tile here): stage g % {stages}, "
                   f"fill g // {stages}, parity fill % 2", fontsize=9, loc="left")
    phases = list(range(fill - 2, fill + 3))
    for i, p in enumerate(phases):
        w = parity_wait(fill, p)
        y = len(phases) - 0.55 - i
        table.add_patch(Rectangle((0, y - 0.45), 3, 0.9, color="tab:green" if w.right else "tab:red", alpha=0.25))
        landed = "nothing landed" if p == 0 else "fill 0 landed" if p == 1 else f"fills 0–{p - 1} landed"
        table.text(0.05, y, f"phase {p}: {landed}", fontsize=8, va="center")
        table.text(1.25, y, "returns at once" if w.at_once else f"waits for fill {w.ends_at}", fontsize=8,
                   va="center")
        table.text(2.3, y, "right" if w.right else ("too early" if p < fill else "too late"), fontsize=8,
                   va="center", fontweight="bold")
    table.set(xlim=(0, 3), ylim=(0, len(phases)))
    table.axis("off")
    table.set_title(f"A wait for fill {fill} (parity {fill % 2}), by the stage's phase when it begins", fontsize=9,
                    loc="left")
    return fig


# -- the model the prediction comes from ------------------------------------------------------------------------------
def k_tile_macs(step) -> int:
    """Multiply-adds of one consumer's k-tile."""
    rows, cols = consumer_tile(step)
    return rows * cols * ring_constants(step)["BLOCK_K"]


def tensor_clocks(step) -> float:
    """Clocks the SM's tensor cores need for one consumer's k-tile at the dense TF32 rate."""
    return 2 * k_tile_macs(step) / TF32_FLOP_PER_CLOCK


def fragment_values(step) -> int:
    """B's values a consumer thread loads from shared memory and rounds to TF32 per k-tile: 4 per 64 columns of C
    and k-step (the register operand of one m64nNk8)."""
    c = step.module.Config.of(step.module.SEARCH_SPACE[0]).check().constants()
    return consumer_tile(step)[1] // 64 * c["K_STEPS"] * 4


def bytes_per_mac(step) -> float:
    """Bytes the copy engine brings from L2 into shared memory per 2^20 multiply-adds (a stage over its k-tile)."""
    c = ring_constants(step)
    return c["STAGE_BYTES"] / (c["BLOCK_M"] * c["BLOCK_N"] * c["BLOCK_K"]) * 2 ** 20


def consumers_at_once(step) -> int:
    """How many consumer warpgroups multiply at the same time: both of step 17's (they share the tile), one of step
    19's (they take turns)."""
    if step.name == "pingpong":
        return 1
    return step.module.Config.of(step.module.SEARCH_SPACE[0]).check().constants()["CONSUMERS"]


@dataclass(frozen=True)
class SizePrediction:
    """The model at one size (:attr:`Model.sizes`)."""
    k_tiles: int  # k-tiles of K
    tile_clocks: float  # a 256×128 tile's k-loop at step 17's period
    gain: tuple  # the saved clocks over that, low and high
    persistent: float  # step 17 persistent's TFLOPS in the run
    predicted: tuple  # step 19's predicted TFLOPS, low and high


@dataclass(frozen=True)
class Model:
    """The docstring's prediction and the risks it named (:func:`model`)."""
    period17: float  # step 17's k-tile period (its timeline), clocks
    same_rate_period: float  # a 128×128 k-tile at step 17's rate per multiply-add, one consumer at a time
    saved: tuple  # :data:`SAVED_CLOCKS`
    bytes17: float  # bytes from L2 into shared memory per 2^20 multiply-adds, step 17
    bytes19: float  # … step 19
    tensor_clocks: float  # clocks the tensor cores need for one of step 19's consumer k-tiles
    fragment_clocks17: float  # step 17's consumer: loads fragments and issues wgmma (its timeline), clocks
    fragments17: int  # B's values a consumer thread loads and rounds a k-tile, step 17
    fragments19: int  # … step 19
    timeline_gpu: str | None  # the GPU of step 17's timeline
    sizes: dict  # size → SizePrediction, at the sizes the run has step 17 persistent at


def model(step17, step19, run: dict, timeline17: dict) -> Model:
    """The docstring's prediction: step 17's k-tile period (its timeline), so a 256×128 tile's k-loop of K / 32
    k-tiles takes k_tiles × period clocks; ping-pong takes :data:`SAVED_CLOCKS` off each such tile (the store and the
    turn, now under the other consumer's main loop), so step 19 = step 17 persistent (same run) × (1 + saved / tile
    clocks), if its 128×128 k-tile keeps step 17's rate per multiply-add (``same_rate_period``). And the risks it
    named: the bytes per multiply-add, and one k-tile of products in flight (``tensor_clocks``) against a consumer's
    own fragment work (step 17's timeline: loads fragments, issues wgmma)."""
    m17 = step17_medians(timeline17, "warp_specialized")
    period = m17["period"]
    same_rate = period * k_tile_macs(step19) / (consumers_at_once(step17) * k_tile_macs(step17))
    sizes = {}
    for size in SIZES:
        k_tiles = size[2] // ring_constants(step19)["BLOCK_K"]
        clocks = k_tiles * period
        gain = tuple(s / clocks for s in SAVED_CLOCKS)
        persistent = record(run, "persistent_specialized", size)
        if persistent is None:
            continue
        sizes[size] = SizePrediction(k_tiles, clocks, gain, persistent["tflops"],
                                     tuple(persistent["tflops"] * (1 + g) for g in gain))
    return Model(period, same_rate, SAVED_CLOCKS, bytes_per_mac(step17), bytes_per_mac(step19), tensor_clocks(step19),
                 float(np.mean([w["issue"] for w in m17["warpgroups"]])), fragment_values(step17),
                 fragment_values(step19), timeline17["environment"].get("gpu"), sizes)


# -- speed and verdict --------------------------------------------------------------------------------------------------
def speed_table(run: dict) -> MarkdownTable:
    """TFLOPS, × step 17 and the SM clock (median, slowest launch) of each row at each size of the run."""
    return tflops_table(run, ROWS, SIZES, against="warp_specialized", ratio="{:.2f}× step 17", clock=True,
                        heading="TFLOPS (× step 17, same run) · SM clock, median (slowest launch):")


@dataclass(frozen=True)
class SizeVerdict:
    """Step 19 at one size (:attr:`Verdict.sizes`)."""
    tflops: float  # its TFLOPS
    over_persistent: float  # over step 17 persistent's, same run
    predicted_over_persistent: tuple  # the predicted range of that, low and high
    over_step17: float  # over step 17's
    over_step17_per_clock: float  # … per clock: TFLOPS / MHz over step 17's
    mhz: float  # its SM clock, median
    step17_mhz: float  # step 17's
    pct_of_cublas_tf32: float  # % of cuBLAS TF32's TFLOPS


@dataclass(frozen=True)
class Verdict:
    """Step 19 against the prediction, step 17 and the course's TF32 target (:func:`verdict`)."""
    sizes: dict  # size → SizeVerdict, at :data:`SIZES`
    target_pct: float  # the course's target, % of cuBLAS TF32
    prediction_met: bool  # the range's low end reached at every size
    target_met: bool  # the target met at every size
    at_least_step17_at_8192: bool  # at least step 17's speed at 8192³ (the issue's rule for a new step)


def verdict(run: dict, prediction: Model) -> Verdict:
    """Step 19 against the prediction (× step 17 persistent, same run, against the predicted range), against step 17
    (and per clock: TFLOPS / MHz against step 17's), and against the course's TF32 target (% of cuBLAS TF32);
    ``prediction_met`` where it reached the range's low end at every size, ``target_met`` at every size,
    ``at_least_step17_at_8192`` (the issue's rule for a new step)."""
    out = {}
    for size in SIZES:
        r, s17, per, tf32 = (record(run, n, size) for n in (RECORD, "warp_specialized", "persistent_specialized",
                                                          "cublas_tf32"))
        gain = prediction.sizes[size].gain
        out[size] = SizeVerdict(r["tflops"], r["tflops"] / per["tflops"], tuple(1 + g for g in gain),
                                r["tflops"] / s17["tflops"],
                                (r["tflops"] / r["sm_clock_mhz_median"]) / (s17["tflops"] / s17["sm_clock_mhz_median"]),
                                r["sm_clock_mhz_median"], s17["sm_clock_mhz_median"],
                                100 * r["tflops"] / tf32["tflops"])
    return Verdict(out, TARGET_HOPPER_TF32_PCT_OF_CUBLAS,
                   all(q.over_persistent >= q.predicted_over_persistent[0] for q in out.values()),
                   all(q.pct_of_cublas_tf32 >= TARGET_HOPPER_TF32_PCT_OF_CUBLAS for q in out.values()),
                   out[(8192, 8192, 8192)].over_step17 >= 1.0)


# -- the timeline -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tile:
    """One recorded tile of a block, clocks of its events (:func:`tiles`)."""
    consumer: int  # the consumer that computed it
    first: int  # its first ring k-tile g
    last: int  # its last
    turn: float  # the consumer turned to it
    data: float  # its first k-tile's data landed
    first_issue: float  # its first wgmma issued
    last_issue: float  # its last wgmma issued
    done: float  # its products done
    stored: float  # its stores issued
    past_order: float  # the build's "past the order barrier" mark


def tiles(timeline: dict, block: int = 0) -> list[Tile]:
    """The block's recorded tiles in the ring's order: per tile its consumer, first and last g, and the clocks at
    which the consumer turned to it, its first k-tile's data landed, its first and last wgmma were issued, its
    products were done and its stores issued. The build's events (:func:`gemm_steps.course.timelines.events`,
    ``[role, ring k-tile g, event]``): roles 0 the producer, 1 and 2 the consumers; a consumer's events: 0 it turns to
    k-tile u (u = 0: to the tile), 1 u's data landed, 2 u's wgmma issued, 3 u − 1's done, 4 (u = 0) past the order
    barrier / (last u) the tile's products done, 5 (last u) its stores issued."""
    e = events(timeline, TIMELINE_BUILD, block)
    out = []
    for w in (0, 1):
        x = e[1 + w]
        written = np.flatnonzero(np.isfinite(x[:, 1]))
        runs = np.split(written, np.flatnonzero(np.diff(written) > 1) + 1) if written.size else []
        for r in runs:
            f, last = int(r[0]), int(r[-1])
            out.append(Tile(w, f, last, x[f, 0], x[f, 1], x[f, 2], x[last, 2], x[last, 4], x[last, 5], x[f, 4]))
    return sorted(out, key=lambda t: t.first)


@dataclass(frozen=True)
class Alternation:
    """How one recorded block's consumers took turns (:func:`alternation`)."""
    tiles: int  # the tiles recorded
    overlap: float  # the most consecutive tiles' main loops overlap, clocks (≤ 0: never at once)
    handoff: float  # last wgmma issued of one tile to the first of the next, median clocks
    turn_wait: float  # turning to a tile to its first data landing (tiles after the first pair), median
    other_main_loop: float  # the other consumer's main loop meanwhile, median
    mark_after_turn: float  # the "past the order barrier" mark, clocks after the turn (median)
    mark_before_arrival: bool  # the mark came before the other consumer's last issue in every tile
    store: float  # a consumer's store, median clocks (the run's summary)
    store_covered: float  # the share of it under the other consumer's main loop (the run's summary)
    period: float  # a consumer's k-tile period, median clocks (the run's summary)


def alternation(timeline: dict) -> list[Alternation]:
    """Per recorded block, from :func:`tiles`: the overlap of consecutive tiles' main loops (first to last wgmma
    issued; ≤ 0: they never run at once), the hand-off (last issue of one tile to the first of the next), the wait
    for the turn (turning to a tile to its first data landing, tiles after the first pair) against the other
    consumer's main loop, and where the build's "past the order barrier" mark sits: clocks after the turn, and
    whether it came before the other consumer's last issue (the arrival the barrier waits for). With the run's
    ``summary`` (experiments/kernels/pingpong_specialized_timeline.py): one :class:`Alternation` per block."""
    out = []
    for block, summary in enumerate(timeline["steps"][TIMELINE_BUILD]["summary"]["blocks"]):
        t = tiles(timeline, block)
        pairs = list(zip(t, t[1:]))
        later = [(a, b) for a, b in pairs if b.first >= 2 * (t[0].last - t[0].first + 1)]
        out.append(Alternation(
            len(t), max(a.last_issue - b.first_issue for a, b in pairs),
            float(np.median([b.first_issue - a.last_issue for a, b in pairs])),
            float(np.median([b.data - b.turn for _, b in later])),
            float(np.median([a.done - a.first_issue for a, _ in later])),
            float(np.median([b.past_order - b.turn for _, b in pairs])),
            all(b.past_order < a.last_issue for a, b in pairs),
            float(np.median([c["store"] for c in summary["consumers"]])), summary["store_covered"],
            float(np.median([c["period"] for c in summary["consumers"]]))))
    return out


#: The segments of the ping-pong picture: (label, colour).
TILE_SEGMENTS = [("waits for its turn", "0.8"), ("main loop", "tab:blue"), ("stores its tile of C", "tab:orange")]


def pingpong_figure(timeline: dict, block: int = 0):
    """The whole recorded stretch of one block: per consumer, for each of its tiles, the wait for its turn (from
    turning to the tile to its first data), its main loop (to the tile's products done) and its store; the tile
    numbers on the bars."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    fig = Figure(figsize=(13, 2.8), layout="constrained")
    ax = fig.subplots()
    for i, t in enumerate(tiles(timeline, block)):
        y = 1 - t.consumer
        spans = [(t.turn, t.data), (t.data, t.done), (t.done, t.stored)]
        for (_, colour), (a, b) in zip(TILE_SEGMENTS, spans):
            ax.barh(y, (b - a) / 1e3, left=a / 1e3, color=colour, height=0.55)
        ax.text((t.data + t.done) / 2e3, y, f"tile {i}", ha="center", va="center", fontsize=8, color="w")
    ax.set_yticks([1, 0], ["consumer 0", "consumer 1"])
    ax.set_xlabel("thousands of SM clocks since the block's first event")
    env = timeline["environment"]
    mhz = timeline["steps"][TIMELINE_BUILD]["sm_clock_mhz_after"]
    ax.set_title(f"Step 19, block {block}: one launch at {timeline['size']}³ ({env.get('gpu')}, "
                 f"{str(env.get('date'))[:10]}, SM clock {mhz:.0f} MHz)", fontsize=9)
    fig.legend(handles=[Patch(color=c, label=l) for l, c in TILE_SEGMENTS], loc="outside lower center", ncols=3,
               fontsize=8)
    return fig


def _stretches(x: np.ndarray) -> dict:
    """Medians of one consumer's k-tile stretches (events 0–3 of each k-tile; the rest runs from u − 1's done to the
    turn to u + 1)."""
    return {"wait_data": float(np.nanmedian(x[:, 1] - x[:, 0])), "issue": float(np.nanmedian(x[:, 2] - x[:, 1])),
            "wait_previous": float(np.nanmedian(x[:, 3] - x[:, 2])),
            "rest": float(np.nanmedian(x[1:, 0] - x[:-1, 3]))}


@dataclass(frozen=True)
class ConsumerKTile:
    """One consumer's k-tile in a timeline (:attr:`KLoopNumbers.step17`, :attr:`KLoopNumbers.step19`)."""
    wait_data: float  # waits for its data, median clocks
    issue: float  # loads and rounds B's fragments, issues the wgmma
    wait_previous: float  # waits for the previous k-tile's wgmma
    rest: float  # release, loop, the recording's stores
    period: float  # turn to turn
    tensor_clocks: float  # the tensor core's clocks for the k-tile at the dense TF32 rate
    busy: float  # the share of the tensor core's time the consumers keep busy: running × tensor_clocks / period
    running: int  # consumers multiplying at once
    macs_per_clock: float  # multiply-adds an SM does a clock, by the timeline
    fragments: int  # B's values a thread loads and rounds a k-tile
    shape: tuple  # the consumer's k-tile: rows, columns, BLOCK_K
    bench_macs_per_clock: float  # multiply-adds an SM does a clock, by the benchmark at the timeline's size
    gpu: str | None  # the timeline's GPU
    size: int  # the timeline's square


@dataclass(frozen=True)
class KLoopNumbers:
    """A consumer's k-tile in step 17's and step 19's timelines (:func:`kloop_numbers`)."""
    step17: ConsumerKTile  # step 17 (``warp_specialized``)
    step19: ConsumerKTile  # step 19 (``pingpong``)
    ratio: float  # step 19's multiply-adds a clock over step 17's, by the timelines
    bench_ratio: float  # … by the benchmark


def kloop_numbers(step17, step19, timeline17: dict, timeline19: dict, run: dict) -> KLoopNumbers:
    """A consumer's k-tile in both timelines (block 0; step 17 past the timelines' warm-up k-tiles, step 19 within its
    tiles, the tile's first k-tile left out) — its period, the stretches, the clocks the tensor core needs for it, and
    the share of the SM's tensor-core time the consumers keep busy (both of step 17's at once, one of step 19's);
    the multiply-adds an SM does a clock by the timelines and by the benchmark (same H100 run for both steps)."""
    out = {}
    for name, step, timeline in (("warp_specialized", step17, timeline17), ("pingpong", step19, timeline19)):
        running = consumers_at_once(step)
        if name == "pingpong":
            e = events(timeline, TIMELINE_BUILD, 0)
            stretches = []
            for t in tiles(timeline):
                x = e[1 + t.consumer][t.first + 1: t.last + 1]
                stretches.append(_stretches(x))
            s = {k: float(np.median([q[k] for q in stretches])) for k in stretches[0]}
            period = float(np.median([c["period"] for c in
                                      timeline["steps"][TIMELINE_BUILD]["summary"]["blocks"][0]["consumers"]]))
            found = record(run, RECORD, (timeline["size"],) * 3)
        else:
            e = events(timeline, name, 0)
            ws = [_stretches(e[w][WARM_UP_K_TILES:]) for w in (1, 2)]
            s = {k: float(np.mean([q[k] for q in ws])) for k in ws[0]}
            period = step17_medians(timeline, name)["period"]
            found = record(run, name, (timeline["size"],) * 3)
        tensor = tensor_clocks(step)
        macs = k_tile_macs(step)
        sms = run["environment"]["sm_count"]
        out[name] = ConsumerKTile(
            **s, period=period, tensor_clocks=tensor, busy=running * tensor / period, running=running,
            macs_per_clock=running * macs / period, fragments=fragment_values(step),
            shape=(*consumer_tile(step), ring_constants(step)["BLOCK_K"]),
            bench_macs_per_clock=found["tflops"] * 1e12 / 2 / (sms * found["sm_clock_mhz_median"] * 1e6),
            gpu=timeline["environment"].get("gpu"), size=timeline["size"])
    n17, n19 = out["warp_specialized"], out["pingpong"]
    return KLoopNumbers(n17, n19, n19.macs_per_clock / n17.macs_per_clock,
                        n19.bench_macs_per_clock / n17.bench_macs_per_clock)


#: The k-tile table's rows: (label, field of :class:`ConsumerKTile`, format).
KLOOP_ROWS = [("waits for its k-tile's data", "wait_data", "{:,.0f}"),
              ("loads and rounds B's fragments, issues the k-tile's wgmma", "issue", "{:,.0f}"),
              ("waits for the previous k-tile's wgmma", "wait_previous", "{:,.0f}"),
              ("the rest (release, loop, the recording's stores)", "rest", "{:,.0f}"),
              ("**period** (turn to turn)", "period", "**{:,.0f}**"),
              ("B's values a thread loads and rounds a k-tile", "fragments", "{:d}"),
              ("the tensor core's clocks for the k-tile (dense TF32)", "tensor_clocks", "{:,.0f}"),
              ("consumers multiplying at once", "running", "{:d}"),
              ("tensor core busy (consumers × its clocks / period)", "busy", "{:.0%}"),
              ("multiply-adds an SM does a clock: by the timeline", "macs_per_clock", "{:,.0f}"),
              ("… by the benchmark (H100 run, 4096³)", "bench_macs_per_clock", "{:,.0f}")]


def kloop_table(numbers: KLoopNumbers) -> MarkdownTable:
    """One consumer's k-tile of step 17 and of step 19, median clocks of each stretch, and what the SM gets done."""
    n17, n19 = numbers.step17, numbers.step19
    cols = {"step 17": n17, "step 19": n19}
    shown = table([{"one consumer's k-tile (median, SM clocks)": label,
                    **{head: fmt.format(getattr(n, key)) for head, n in cols.items()}}
                   for label, key, fmt in KLOOP_ROWS], align="lrr")
    return MarkdownTable(shown + f"\n\n*Step 17: {n17.gpu}, {n17.size}³, `{STEP17_TIMELINE_RUN}`; "
                         f"step 19: {n19.gpu}, {n19.size}³, `{TIMELINE_RUN}`; block 0. A consumer's k-tile: step 17 "
                         f"{' × '.join(map(str, n17.shape))}, step 19 {' × '.join(map(str, n19.shape))} "
                         "multiply-adds.*")


def kloop_figure(step17, step19, timeline17: dict, timeline19: dict, k_tiles: int = 4, first: int = 16):
    """One consumer's k-tiles on one clock scale, step 17 (both consumers) above step 19 (the one multiplying):
    from a consumer's turn to k-tile ``first`` of a tile, for ``k_tiles`` of step 19's periods; under the consumers,
    the tensor core's work if every issued k-tile ran at the dense TF32 rate as soon as the one before it was done (a
    model, from the issue marks)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    from .plots import span_bar  # here: importing the helper loads no pyplot

    segments = [("waits for data", "tab:red"), ("loads fragments, issues wgmma", "tab:blue"),
                ("waits for the previous wgmma", "tab:green"), ("the rest", "0.85")]
    t0 = tiles(timeline19)[0]
    e19 = events(timeline19, TIMELINE_BUILD, 0)
    rows19 = {0: e19[1 + t0.consumer][t0.first: t0.last + 1]}
    e17 = events(timeline17, "warp_specialized", 0)
    panels = [("step 17: two consumers on one 256×128 tile", {0: e17[1], 1: e17[2]}, step17),
              ("step 19: the consumer whose turn it is, on its 128×128 tile", rows19, step19)]
    span = k_tiles * float(np.nanmedian(np.diff(rows19[0][:, 2])))
    fig = Figure(figsize=(13, 4.6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for ax, (title, rows, step) in zip(axes, panels):
        start = min(np.nanmin(x[first, 0]) for x in rows.values())
        issues = []
        for w, x in rows.items():
            x = x - start
            for u in range(x.shape[0] - 1):
                edges = [x[u, 0], x[u, 1], x[u, 2], x[u, 3], x[u + 1, 0]]
                for (_, colour), a, b in zip(segments, edges, edges[1:]):
                    span_bar(ax, len(rows) - w, a, b, colour, span)
                issues.append(x[u, 2])
        end, busy = -np.inf, []
        for t in sorted(i for i in issues if np.isfinite(i)):
            a = max(t, end)
            end = a + tensor_clocks(step)
            busy.append((a, end))
        for a, b in busy:
            span_bar(ax, 0, a, b, "tab:purple", span, height=0.5)
        ax.set_yticks([len(rows) - w for w in rows] + [0],
                      [f"consumer {w}" for w in rows] + ["tensor core (model)"])
        ax.set_xlim(0, span)
        ax.set_title(title, fontsize=9, loc="left")
    axes[-1].set_xlabel("SM clocks")
    fig.legend(handles=[Patch(color=c, label=l) for l, c in segments] + [Patch(color="tab:purple",
               label="a k-tile's products at the dense TF32 rate")], loc="outside lower center", ncols=5, fontsize=8)
    return fig


@dataclass(frozen=True)
class StoreNumbers:
    """A consumer's store of its tile of C (:func:`store_numbers`)."""
    bytes: int  # the tile's bytes
    estimate: tuple  # the clocks the docstring's rates would give, fast and slow
    store: float  # the measured store, median clocks
    covered: float  # the share of it under the other consumer's main loop
    handoff: float  # one tile's last wgmma to the next tile's first, median clocks


def store_numbers(step19, timeline19: dict) -> StoreNumbers:
    """The store: the bytes of a consumer's tile of C, the clocks the docstring's rate would give
    (:data:`STORE_BYTES_PER_CLOCK`), and the measured median store and the share of it under the other consumer's
    main loop (block 0 of the timeline's summary)."""
    rows, cols = consumer_tile(step19)
    b = rows * cols * 4
    alt = alternation(timeline19)[0]
    return StoreNumbers(b, tuple(b / r for r in STORE_BYTES_PER_CLOCK), alt.store, alt.store_covered, alt.handoff)


# -- ping-pong, fairly: the schedule alone (experiments/pingpong_fair.py, two H200 runs) -----------------------------
#: The two runs: step 19's ring in 64-bit arithmetic in the first, in 32-bit (``ring_place``) in the second. In both,
#: ``pingpong`` is step 19 with 6 stages (then shipped) and ``pingpong_4`` with 4 (shipped since).
FAIR_RUNS = (results_files.EXPERIMENT_PINGPONG_FAIR_NVIDIA_H200, results_files.EXPERIMENT_PINGPONG_FAIR_NVIDIA_H200_2)
#: Nsight Compute on the same builds, one launch each at 4096³, with the first run's kernels.
FAIR_COUNTERS = results_files.EXPERIMENT_PINGPONG_FAIR_NCU_NVIDIA_H200
#: The course benchmarks before and after step 19's ring and stage count changed (H200, one run each).
BENCH_BEFORE, BENCH_AFTER = results_files.BENCH_NVIDIA_H200_2026_11_28, results_files.BENCH_NVIDIA_H200_2026_11_28_2
FAIR_SIZES = ((4096, 4096, 4096), (8192, 8192, 8192))
#: The builds, in the order of the table: (record, what it is).
FAIR_ROWS = [("warp_specialized", "step 17: both consumers on a 256×128 tile, a block a tile"),
             ("persistent_specialized", "step 17 persistent: one block an SM walks the tiles"),
             ("pingpong_wide_4", "ping-pong, a consumer a whole 256×64 tile (only the schedule differs)"),
             ("pingpong_4", "step 19's tile, 128×128 a consumer, 4 stages"),
             ("pingpong", "step 19's tile, 6 stages")]


def fair_runs() -> list[dict]:
    return [run for run in (load_run(name) for name in FAIR_RUNS) if run is not None]


def fair_counters() -> dict | None:
    return load_run(FAIR_COUNTERS)


def fair_table(runs: list[dict]) -> MarkdownTable:
    """Each build's TFLOPS over step 17 persistent's, at each size, in each run (and cuBLAS TF32's TFLOPS)."""
    rows = []
    for name, label in [("cublas_tf32", "cuBLAS TF32 (TFLOPS)")] + FAIR_ROWS:
        row = {"build": label}
        for i, run in enumerate(runs):
            for s in FAIR_SIZES:
                r, base = record(run, name, s), record(run, "persistent_specialized", s)
                row[f"{size_label(s)} run {i + 1}"] = (f"{r['tflops']:.0f}" if name == "cublas_tf32" else
                                                       f"{r['tflops'] / base['tflops']:.2f}×")
        rows.append(row)
    return table(rows)


@dataclass(frozen=True)
class FairPairs:
    """The pairs the lesson reads in one fair run at one size (:func:`fair_numbers`)."""
    schedule: float  # the schedule alone: the wide ping-pong over step 17 persistent
    tile: float  # the tile under ping-pong: step 19's tile over the wide one, 4 stages each
    six_over_four: float  # step 19 with 6 stages over 4
    best_over_step17: float  # the faster ping-pong of 4 stages over step 17


def fair_numbers(runs: list[dict]) -> dict:
    """{(run index, size): :class:`FairPairs`}: the schedule alone (wide ping-pong over step 17 persistent), the
    tile under ping-pong (step 19's tile over the wide one, 4 stages each), and step 19's 6 stages over 4."""
    out = {}
    for i, run in enumerate(runs):
        for s in FAIR_SIZES:
            t = {name: record(run, name, s)["tflops"] for name, _ in FAIR_ROWS}
            out[(i, s[0])] = FairPairs(t["pingpong_wide_4"] / t["persistent_specialized"],
                                       t["pingpong_4"] / t["pingpong_wide_4"], t["pingpong"] / t["pingpong_4"],
                                       max(t["pingpong_wide_4"], t["pingpong_4"]) / t["warp_specialized"])
    return out


def counters_table(counters: dict) -> MarkdownTable:
    """Nsight Compute's counts per build at 4096³: L2 bytes per 1,000 FLOP, the L2's bytes a second and its share of
    peak, warp instructions per MFLOP, and cycles over step 17's."""
    builds = counters["builds"]
    c17 = builds["warp_specialized"]["cycles"]
    return table([{"build": label, "L2 bytes / 1,000 FLOP": b["l2_bytes_per_kflop"], "L2 TB/s": b["l2_tb_per_s"],
                   "L2 % of peak": b["l2_throughput_pct_of_peak"],
                   "warp instructions / MFLOP": b["warp_instructions_per_mflop"], "cycles ÷ step 17": b["cycles"] / c17}
                  for name, label in FAIR_ROWS for b in [builds[name]]],
                 {"L2 bytes / 1,000 FLOP": "{:.1f}", "L2 TB/s": "{:.1f}", "L2 % of peak": "{:.0f} %",
                  "warp instructions / MFLOP": "{:.0f}", "cycles ÷ step 17": "{:.2f}"})


@dataclass(frozen=True)
class BytesAndTime:
    """The wide ping-pong against step 17 persistent under Nsight Compute (:func:`bytes_and_time`)."""
    bytes: float  # L2 bytes, wide over persistent
    cycles: float  # cycles, wide over persistent
    rate_wide: float  # the wide ping-pong's L2 TB/s
    rate_coop: float  # step 17 persistent's


def bytes_and_time(counters: dict) -> BytesAndTime:
    """The wide ping-pong against step 17 persistent: how many times the L2 bytes, and how many times the cycles."""
    wide, coop = counters["builds"]["pingpong_wide_4"], counters["builds"]["persistent_specialized"]
    return BytesAndTime(wide["l2_bytes"] / coop["l2_bytes"], wide["cycles"] / coop["cycles"], wide["l2_tb_per_s"],
                        coop["l2_tb_per_s"])


@dataclass(frozen=True)
class BeforeAfter:
    """Step 19 over step 17 in the course benchmark at one size (:func:`step19_before_after`)."""
    before: float  # 6 stages, 64-bit ring
    after: float  # 4 stages, 32-bit ring


def step19_before_after() -> dict | None:
    """{size: :class:`BeforeAfter`}: step 19 in the course benchmark before (6 stages, 64-bit ring) and after (4
    stages, 32-bit ring), each over step 17 in its own run; None without both runs."""
    before, after = load_run(BENCH_BEFORE), load_run(BENCH_AFTER)
    if before is None or after is None:
        return None
    out = {}
    for s in FAIR_SIZES:
        b, a = (record(run, "pingpong", s)["tflops"] / record(run, "warp_specialized", s)["tflops"]
                for run in (before, after))
        out[s[0]] = BeforeAfter(b, a)
    return out
