"""Lesson 19's helpers (step 19, ``pingpong``: step 17 persistent, each consumer warpgroup owning whole tiles and the
two taking turns in the main loop): the ring's counter over a block's tiles and what a parity wait can tell, the
model the prediction comes from (experiments/kernels/pingpong_specialized.py's docstring), the speed table and
verdict from the H100 run that measured step 19 beside step 17, its persistent form and both cuBLAS
(experiments/pingpong_bench.py), and the ping-pong timeline from the GPU (experiments/timeline.py) beside step 17's.
Numbers, tables and figures only: the words are the lesson's."""

from __future__ import annotations

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


def ring_walk(step, k_tiles: int, tiles: int = 3) -> list[dict]:
    """The ring's k-tiles g of a block's first ``tiles`` tiles of ``k_tiles`` k-tiles each, as step 19 counts them:
    per g its tile (g // k_tiles), the consumer that reads it (tile % 2), its stage, which fill of that stage it is,
    the parity its reader waits for (:func:`gemm_steps.course.gpu_model.ring_schedule`: the kernel's formulas)."""
    stages = ring_constants(step)["STAGES"]
    return [{**e, "tile": e["k_tile"] // k_tiles, "consumer": e["k_tile"] // k_tiles % 2}
            for e in ring_schedule(stages, tiles * k_tiles)]


def parity_wait(fill: int, phase: int) -> dict:
    """A wait for fill ``fill`` of a stage (``try_wait.parity`` with parity fill % 2) that starts while the stage's
    full barrier is in phase ``phase`` (fills 0 … phase − 1 have landed). The barrier knows only its phase's parity:
    the wait returns at once if phase % 2 ≠ fill % 2 (``at_once``), else when the phase in progress completes —
    when fill ``phase`` lands (``ends_at``). ``landed``: fill ``fill`` had landed when the wait began. ``right``: the
    wait ends when fill ``fill`` has landed and not later — only for phase fill (it blocks until exactly that fill
    lands) and phase fill + 1 (it has landed: at once)."""
    at_once = phase % 2 != fill % 2
    return {"fill": fill, "phase": phase, "at_once": at_once, "ends_at": None if at_once else phase,
            "landed": phase > fill, "right": phase in (fill, fill + 1)}


#: The stage count of the builds the H100 run timed (the most that fit, then): step 19 keeps 4 since the fair run.
RUN_STAGES = 6


def unordered_start(step, k: int, stages: int | None = None) -> dict:
    """What consumer 1 would wait for first without the order: the ring's k-tile g = k_tiles (the block's second tile
    starts there), its stage and fill, and the wait's answer while that stage is still in phase 0 (nothing landed:
    its earlier fills are consumer 0's, which has only just started). ``stages``: the ring's (default: the step's)."""
    c = ring_constants(step)
    stages = stages or c["STAGES"]
    g = k // c["BLOCK_K"]
    return {"k_tiles": g, "g": g, "stage": g % stages, "stages": stages, **parity_wait(g // stages, 0)}


STATE_COLOURS = {0: "tab:blue", 1: "tab:orange"}


def ring_figure(step, k_tiles: int = 4, fill: int = 3):
    """Left: the ring's k-tiles over a block's first three tiles of ``k_tiles`` k-tiles each (a small K for the
    picture), by stage, coloured by the consumer that reads them, with each fill's parity. Right: a wait for fill
    ``fill`` of a stage against the phase the stage is in — where the parity gives the right answer and where it
    does not."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    stages = ring_constants(step)["STAGES"]
    walk = ring_walk(step, k_tiles)
    fig = Figure(figsize=(13, 4.2), layout="constrained")
    ring, table = fig.subplots(1, 2, width_ratios=[1.6, 1])
    for e in walk:
        x, y = e["k_tile"], stages - 1 - e["stage"]
        ring.add_patch(Rectangle((x, y), 0.92, 0.88, color=STATE_COLOURS[e["consumer"]], alpha=0.35))
        ring.text(x + 0.46, y + 0.44, f"g={x}\nfill {e['fill']}\nparity {e['full_parity']}", ha="center",
                  va="center", fontsize=7)
    for t in range(1, len(walk) // k_tiles):
        ring.axvline(t * k_tiles - 0.04, color="k", lw=1)
    ring.set(xlim=(0, len(walk)), ylim=(0, stages))
    ring.set_yticks([stages - 1 - s + 0.44 for s in range(stages)], [f"stage {s}" for s in range(stages)])
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
        table.add_patch(Rectangle((0, y - 0.45), 3, 0.9, color="tab:green" if w["right"] else "tab:red", alpha=0.25))
        landed = "nothing landed" if p == 0 else "fill 0 landed" if p == 1 else f"fills 0–{p - 1} landed"
        table.text(0.05, y, f"phase {p}: {landed}", fontsize=8, va="center")
        table.text(1.25, y, "returns at once" if w["at_once"] else f"waits for fill {w['ends_at']}", fontsize=8,
                   va="center")
        table.text(2.3, y, "right" if w["right"] else ("too early" if p < fill else "too late"), fontsize=8,
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
    c = step.module.layout(step.module.SEARCH_SPACE[0])
    return consumer_tile(step)[1] // 64 * c["K_STEPS"] * 4


def bytes_per_mac(step) -> float:
    """Bytes the copy engine brings from L2 into shared memory per 2^20 multiply-adds (a stage over its k-tile)."""
    c = ring_constants(step)
    return c["STAGE_BYTES"] / (c["BLOCK_M"] * c["BLOCK_N"] * c["BLOCK_K"]) * 2 ** 20


def consumers_at_once(step) -> int:
    """How many consumer warpgroups multiply at the same time: both of step 17's (they share the tile), one of step
    19's (they take turns)."""
    return 1 if step.name == "pingpong" else step.module.layout(step.module.SEARCH_SPACE[0])["CONSUMERS"]


def model(step17, step19, run: dict, timeline17: dict) -> dict:
    """The docstring's prediction: step 17's k-tile period (its timeline), so a 256×128 tile's k-loop of K / 32
    k-tiles takes k_tiles × period clocks; ping-pong takes :data:`SAVED_CLOCKS` off each such tile (the store and the
    turn, now under the other consumer's main loop), so step 19 = step 17 persistent (same run) × (1 + saved / tile
    clocks), if its 128×128 k-tile keeps step 17's rate per multiply-add (``same_rate_period``). And the risks it
    named: the bytes per multiply-add, and one k-tile of products in flight (``tensor_clocks``) against a consumer's
    own fragment work (step 17's timeline: loads fragments, issues wgmma)."""
    m17 = step17_medians(timeline17, "warp_specialized")
    period = m17["period"]
    same_rate = period * k_tile_macs(step19) / (consumers_at_once(step17) * k_tile_macs(step17))
    out = {"period17": period, "same_rate_period": same_rate,
           "saved": SAVED_CLOCKS, "bytes17": bytes_per_mac(step17), "bytes19": bytes_per_mac(step19),
           "tensor_clocks": tensor_clocks(step19),
           "fragment_clocks17": float(np.mean([w["issue"] for w in m17["warpgroups"]])),
           "fragments17": fragment_values(step17), "fragments19": fragment_values(step19),
           "timeline_gpu": timeline17["environment"].get("gpu"), "sizes": {}}
    for size in SIZES:
        k_tiles = size[2] // ring_constants(step19)["BLOCK_K"]
        clocks = k_tiles * period
        gain = tuple(s / clocks for s in SAVED_CLOCKS)
        persistent = record(run, "persistent_specialized", size)
        if persistent is None:
            continue
        out["sizes"][size] = {"k_tiles": k_tiles, "tile_clocks": clocks, "gain": gain,
                              "persistent": persistent["tflops"],
                              "predicted": tuple(persistent["tflops"] * (1 + g) for g in gain)}
    return out


# -- speed and verdict --------------------------------------------------------------------------------------------------
def speed_table(run: dict) -> MarkdownTable:
    """TFLOPS, × step 17 and the SM clock (median, slowest launch) of each row at each size of the run."""
    return tflops_table(run, ROWS, SIZES, against="warp_specialized", ratio="{:.2f}× step 17", clock=True,
                        heading="TFLOPS (× step 17, same run) · SM clock, median (slowest launch):")


def verdict(run: dict, prediction: dict) -> dict:
    """Step 19 against the prediction (× step 17 persistent, same run, against the predicted range), against step 17
    (and per clock: TFLOPS / MHz against step 17's), and against the course's TF32 target (% of cuBLAS TF32);
    ``prediction_met`` where it reached the range's low end at every size, ``target_met`` at every size,
    ``at_least_step17_at_8192`` (the issue's rule for a new step)."""
    out = {}
    for size in SIZES:
        r, s17, per, tf32 = (record(run, n, size) for n in (RECORD, "warp_specialized", "persistent_specialized",
                                                          "cublas_tf32"))
        gain = prediction["sizes"][size]["gain"]
        out[size] = {"tflops": r["tflops"], "over_persistent": r["tflops"] / per["tflops"],
                     "predicted_over_persistent": tuple(1 + g for g in gain),
                     "over_step17": r["tflops"] / s17["tflops"],
                     "over_step17_per_clock": (r["tflops"] / r["sm_clock_mhz_median"])
                     / (s17["tflops"] / s17["sm_clock_mhz_median"]),
                     "mhz": r["sm_clock_mhz_median"], "step17_mhz": s17["sm_clock_mhz_median"],
                     "pct_of_cublas_tf32": 100 * r["tflops"] / tf32["tflops"]}
    return {"sizes": out, "target_pct": TARGET_HOPPER_TF32_PCT_OF_CUBLAS,
            "prediction_met": all(q["over_persistent"] >= q["predicted_over_persistent"][0] for q in out.values()),
            "target_met": all(q["pct_of_cublas_tf32"] >= TARGET_HOPPER_TF32_PCT_OF_CUBLAS for q in out.values()),
            "at_least_step17_at_8192": out[(8192, 8192, 8192)]["over_step17"] >= 1.0}


# -- the timeline -------------------------------------------------------------------------------------------------------
def tiles(timeline: dict, block: int = 0) -> list[dict]:
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
            out.append({"consumer": w, "first": f, "last": last, "turn": x[f, 0], "data": x[f, 1],
                        "first_issue": x[f, 2], "last_issue": x[last, 2], "done": x[last, 4], "stored": x[last, 5],
                        "past_order": x[f, 4]})
    return sorted(out, key=lambda t: t["first"])


def alternation(timeline: dict) -> dict:
    """Per recorded block, from :func:`tiles`: the overlap of consecutive tiles' main loops (first to last wgmma
    issued; ≤ 0: they never run at once), the hand-off (last issue of one tile to the first of the next), the wait
    for the turn (turning to a tile to its first data landing, tiles after the first pair) against the other
    consumer's main loop, and where the build's "past the order barrier" mark sits: clocks after the turn, and
    whether it came before the other consumer's last issue (the arrival the barrier waits for). With the run's
    ``summary`` (experiments/kernels/pingpong_specialized_timeline.py) per block."""
    out = []
    for block, summary in enumerate(timeline["steps"][TIMELINE_BUILD]["summary"]["blocks"]):
        t = tiles(timeline, block)
        pairs = list(zip(t, t[1:]))
        later = [(a, b) for a, b in pairs if b["first"] >= 2 * (t[0]["last"] - t[0]["first"] + 1)]
        out.append({
            "tiles": len(t),
            "overlap": max(a["last_issue"] - b["first_issue"] for a, b in pairs),
            "handoff": float(np.median([b["first_issue"] - a["last_issue"] for a, b in pairs])),
            "turn_wait": float(np.median([b["data"] - b["turn"] for _, b in later])),
            "other_main_loop": float(np.median([a["done"] - a["first_issue"] for a, _ in later])),
            "mark_after_turn": float(np.median([b["past_order"] - b["turn"] for _, b in pairs])),
            "mark_before_arrival": all(b["past_order"] < a["last_issue"] for a, b in pairs),
            "store": float(np.median([c["store"] for c in summary["consumers"]])),
            "store_covered": summary["store_covered"], "period": float(np.median([c["period"] for c in
                                                                                summary["consumers"]]))})
    return {"blocks": out}


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
        y = 1 - t["consumer"]
        spans = [(t["turn"], t["data"]), (t["data"], t["done"]), (t["done"], t["stored"])]
        for (_, colour), (a, b) in zip(TILE_SEGMENTS, spans):
            ax.barh(y, (b - a) / 1e3, left=a / 1e3, color=colour, height=0.55)
        ax.text((t["data"] + t["done"]) / 2e3, y, f"tile {i}", ha="center", va="center", fontsize=8, color="w")
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


def kloop_numbers(step17, step19, timeline17: dict, timeline19: dict, run: dict) -> dict:
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
                x = e[1 + t["consumer"]][t["first"] + 1: t["last"] + 1]
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
        out[name] = {**s, "period": period, "tensor_clocks": tensor, "busy": running * tensor / period,
                     "running": running,
                     "macs_per_clock": running * macs / period, "fragments": fragment_values(step),
                     "shape": (*consumer_tile(step), ring_constants(step)["BLOCK_K"]),
                     "bench_macs_per_clock": found["tflops"] * 1e12 / 2 / (sms * found["sm_clock_mhz_median"] * 1e6),
                     "gpu": timeline["environment"].get("gpu"), "size": timeline["size"]}
    out["ratio"] = out["pingpong"]["macs_per_clock"] / out["warp_specialized"]["macs_per_clock"]
    out["bench_ratio"] = out["pingpong"]["bench_macs_per_clock"] / out["warp_specialized"]["bench_macs_per_clock"]
    return out


#: The k-tile table's rows: (label, key, format).
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


def kloop_table(numbers: dict) -> MarkdownTable:
    """One consumer's k-tile of step 17 and of step 19, median clocks of each stretch, and what the SM gets done."""
    cols = {"step 17": "warp_specialized", "step 19": "pingpong"}
    shown = table([{"one consumer's k-tile (median, SM clocks)": label,
                    **{head: fmt.format(numbers[c][key]) for head, c in cols.items()}}
                   for label, key, fmt in KLOOP_ROWS], align="lrr")
    n17, n19 = numbers["warp_specialized"], numbers["pingpong"]
    return MarkdownTable(shown + f"\n\n*Step 17: {n17['gpu']}, {n17['size']}³, `{STEP17_TIMELINE_RUN}`; "
                         f"step 19: {n19['gpu']}, {n19['size']}³, `{TIMELINE_RUN}`; block 0. A consumer's k-tile: step 17 "
                         f"{' × '.join(map(str, n17['shape']))}, step 19 {' × '.join(map(str, n19['shape']))} "
                         "multiply-adds.*")


def kloop_figure(step17, step19, timeline17: dict, timeline19: dict, k_tiles: int = 4, first: int = 16):
    """One consumer's k-tiles on one clock scale, step 17 (both consumers) above step 19 (the one multiplying):
    from a consumer's turn to k-tile ``first`` of a tile, for ``k_tiles`` of step 19's periods; under the consumers,
    the tensor core's work if every issued k-tile ran at the dense TF32 rate as soon as the one before it was done (a
    model, from the issue marks)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    segments = [("waits for data", "tab:red"), ("loads fragments, issues wgmma", "tab:blue"),
                ("waits for the previous wgmma", "tab:green"), ("the rest", "0.85")]
    t0 = tiles(timeline19)[0]
    e19 = events(timeline19, TIMELINE_BUILD, 0)
    rows19 = {0: e19[1 + t0["consumer"]][t0["first"]: t0["last"] + 1]}
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
                    if np.isfinite(a) and np.isfinite(b) and a < span and b > 0:
                        ax.barh(len(rows) - w, b - a, left=a, color=colour, height=0.6)
                issues.append(x[u, 2])
        end, busy = -np.inf, []
        for t in sorted(i for i in issues if np.isfinite(i)):
            a = max(t, end)
            end = a + tensor_clocks(step)
            busy.append((a, end))
        for a, b in busy:
            if a < span and b > 0:
                ax.barh(0, b - a, left=a, color="tab:purple", height=0.5)
        ax.set_yticks([len(rows) - w for w in rows] + [0],
                      [f"consumer {w}" for w in rows] + ["tensor core (model)"])
        ax.set_xlim(0, span)
        ax.set_title(title, fontsize=9, loc="left")
    axes[-1].set_xlabel("SM clocks")
    fig.legend(handles=[Patch(color=c, label=l) for l, c in segments] + [Patch(color="tab:purple",
               label="a k-tile's products at the dense TF32 rate")], loc="outside lower center", ncols=5, fontsize=8)
    return fig


def store_numbers(step19, timeline19: dict) -> dict:
    """The store: the bytes of a consumer's tile of C, the clocks the docstring's rate would give
    (:data:`STORE_BYTES_PER_CLOCK`), and the measured median store and the share of it under the other consumer's
    main loop (block 0 of the timeline's summary)."""
    rows, cols = consumer_tile(step19)
    b = rows * cols * 4
    alt = alternation(timeline19)["blocks"][0]
    return {"bytes": b, "estimate": tuple(b / r for r in STORE_BYTES_PER_CLOCK), "store": alt["store"],
            "covered": alt["store_covered"], "handoff": alt["handoff"]}


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


def fair_numbers(runs: list[dict]) -> dict:
    """The pairs the lesson reads, per run and size: the schedule alone (wide ping-pong over step 17 persistent), the
    tile under ping-pong (step 19's tile over the wide one, 4 stages each), and step 19's 6 stages over 4."""
    out = {}
    for i, run in enumerate(runs):
        for s in FAIR_SIZES:
            t = {name: record(run, name, s)["tflops"] for name, _ in FAIR_ROWS}
            out[(i, s[0])] = {"schedule": t["pingpong_wide_4"] / t["persistent_specialized"],
                              "tile": t["pingpong_4"] / t["pingpong_wide_4"],
                              "six_over_four": t["pingpong"] / t["pingpong_4"],
                              "best_over_step17": max(t["pingpong_wide_4"], t["pingpong_4"]) / t["warp_specialized"]}
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


def bytes_and_time(counters: dict) -> dict:
    """The wide ping-pong against step 17 persistent: how many times the L2 bytes, and how many times the cycles."""
    wide, coop = counters["builds"]["pingpong_wide_4"], counters["builds"]["persistent_specialized"]
    return {"bytes": wide["l2_bytes"] / coop["l2_bytes"], "cycles": wide["cycles"] / coop["cycles"],
            "rate_wide": wide["l2_tb_per_s"], "rate_coop": coop["l2_tb_per_s"]}


def step19_before_after() -> dict | None:
    """Step 19 in the course benchmark before (6 stages, 64-bit ring) and after (4 stages, 32-bit ring), each over
    step 17 in its own run."""
    before, after = load_run(BENCH_BEFORE), load_run(BENCH_AFTER)
    if before is None or after is None:
        return None
    out = {}
    for s in FAIR_SIZES:
        b, a = (record(run, "pingpong", s)["tflops"] / record(run, "warp_specialized", s)["tflops"]
                for run in (before, after))
        out[s[0]] = {"before": b, "after": a}
    return out
