"""What lessons 16–17 (and their deep dives, and lesson 18) read about Hopper's own GEMM design — steps 16
(``tma_pipeline``: the copy engine, an mbarrier ring, a wgmma always in flight) and 17 (``warp_specialized``: a
producer warpgroup and ``setmaxnreg``): the ring's schedule and its picture, the model lesson 16's after-the-run
numbers come from, the speed table, figure and verdict from the run that measured both steps, the timelines from the GPU, the
facts behind step 15's drop from 4096³ to 8192³, and what ptxas says of ``setmaxnreg``. Numbers, tables and figures
only: the words are the lessons'. A shared module like :mod:`.tensor_core_results`, not a lesson's own helper.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from gemm_steps.harness import results_files

from . import reference
from .display import MarkdownTable, table
from .profiles import base_units, read_metrics
from .targets import TARGET_HOPPER_TF32_PCT_OF_CUBLAS
from .tensor_core_results import (FP32_FMA_PER_SM, TENSOR_TF32_PER_FP32, caption, clock_table, find, load_run,
                                  read_text)
from .timings import size_label

# -- the shipped files (experiments/results/) -------------------------------------------------------------------------
#: Steps 15, 16 and 17 (and the late-producer experiment) beside cuBLAS SGEMM and TF32 in one H200 run
#: (experiments/producer_order_bench.py), the SM clock recorded per record.
PRODUCER_ORDER_RUN = results_files.EXPERIMENT_PRODUCER_ORDER_NVIDIA_H200
#: Steps 16 and 17's timelines from one H200 run (experiments/timeline.py).
TIMELINE_RUN = results_files.EXPERIMENT_TIMELINE_NVIDIA_H200
#: Step 16's kernel in row-major and grouped tile orders beside step 15 (experiments/warpgroup_order_bench.py), and
#: Nsight Compute on two of them; the clocks under load; the benchmark's timing against queued launches.
ORDER_RUN = results_files.EXPERIMENT_WARPGROUP_ORDER_NVIDIA_H200
ORDER_PROFILE = results_files.NCU_WARPGROUP_ORDER_NVIDIA_H200_TXT
CLOCKS_RUN = results_files.EXPERIMENT_CLOCKS_UNDER_LOAD_NVIDIA_H200
TIMING_RUN = results_files.EXPERIMENT_TIMING_METHOD_NVIDIA_H200
#: Step 17's k-loop with fewer instructions, one change a build (experiments/loop_instructions.py), and Nsight Compute
#: on its first and last builds at 4096³.
LOOP_RUN = results_files.EXPERIMENT_LOOP_INSTRUCTIONS_NVIDIA_H200
LOOP_PROFILE = results_files.NCU_LOOP_INSTRUCTIONS_NVIDIA_H200_TXT
#: Step 17, its persistent build and cuBLAS TF32 over K at M = N = 4096 (experiments/per_tile_cost.py).
PER_TILE_RUN = results_files.EXPERIMENT_PER_TILE_COST_NVIDIA_H200
#: Step 17's and step 20's timelines from one run (experiments/timeline.py --only warp_specialized --only
#: cluster_multicast): does multicast make the copies land sooner?
TIMELINE_17_20_RUN = results_files.EXPERIMENT_TIMELINE_WARP_SPECIALIZED_CLUSTER_MULTICAST_NVIDIA_H200
#: … and again after step 20 took one cluster arrival a warpgroup and block (its timeline build too).
TIMELINE_17_20_RUN_2 = results_files.EXPERIMENT_TIMELINE_WARP_SPECIALIZED_CLUSTER_MULTICAST_NVIDIA_H200_2
#: Step 20 with one cluster arrival a warpgroup and block against every warp arriving (experiments/cluster_arrivals.py),
#: two runs; in both, ``cluster_one_arrival`` is the change and ``cluster_multicast`` step 20 as it was.
ARRIVAL_RUNS = (results_files.EXPERIMENT_CLUSTER_ARRIVALS_NVIDIA_H200,
                results_files.EXPERIMENT_CLUSTER_ARRIVALS_NVIDIA_H200_2)
#: Its kernels, as the tables name them.
PER_TILE_KERNELS = [("warp_specialized", "step 17"), ("persistent_specialized", "step 17 persistent"),
                    ("cublas_tf32", "cuBLAS TF32")]
#: The builds of that experiment, each one change more than the one before it, and what each changed.
LOOP_BUILDS = [("before", "step 17 before"), ("ring_32", "+ 32-bit ring arithmetic"),
               ("stage_descriptor", "+ A's descriptor once a stage"), ("rounding_2", "+ rounding in 2 instructions")]

#: The record name of each kernel in :data:`PRODUCER_ORDER_RUN`. The run measured step 17 while it was still the
#: experiment's build (``specialized_setmaxnreg``: the same kernel, experiments/producer_order_bench.py).
RECORDS = {"cublas": "cublas", "cublas_tf32": "cublas_tf32", "warpgroup_tf32": "warpgroup_tf32",
           "tma_pipeline": "tma_pipeline", "late_producer": "late_producer",
           "warp_specialized": "specialized_setmaxnreg"}
#: The rows of the speed table and figure: (kernel, label, colour).
ROWS = [("cublas", "cuBLAS SGEMM (FP32 units)", "tab:red"), ("cublas_tf32", "cuBLAS TF32", "tab:purple"),
        ("warpgroup_tf32", "step 15, TF32 wgmma, cp.async + bar.sync", "tab:cyan"),
        ("tma_pipeline", "step 16, TMA + mbarrier ring", "tab:green"),
        ("late_producer", "step 16, producer behind its wgmma (experiment)", "tab:olive"),
        ("warp_specialized", "step 17, producer warpgroup + setmaxnreg", "tab:orange")]
#: The step before each step.
PREVIOUS = {"tma_pipeline": "warpgroup_tf32", "warp_specialized": "tma_pipeline"}
BIG = ((4096, 4096, 4096), (8192, 8192, 8192))


def producer_order_run() -> dict | None:
    return load_run(PRODUCER_ORDER_RUN)


def timeline_run() -> dict | None:
    return load_run(TIMELINE_RUN)


def measured(run: dict, kernel: str, size: tuple) -> dict | None:
    """The record of ``kernel`` (a key of :data:`RECORDS`) at ``size`` in :data:`PRODUCER_ORDER_RUN`."""
    return find(run, RECORDS.get(kernel, kernel), size)


def sizes(run: dict) -> list[tuple]:
    """The sizes of the run, in its order (the two squares, then the ragged shape)."""
    return list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in run["records"]))


# -- the ring: which k-tile in which stage, and which parity each waiter names ------------------------------------------
def ring_constants(step) -> dict:
    """The ring's constants of a step at its GPU tiles (``SEARCH_SPACE[0]``): STAGES, LOAD_AHEAD (step 16; step 17
    has none: its producer runs as far ahead as the ring lets it), BLOCK_M/N/K, STAGE_BYTES, WARPS, threads."""
    config = step.module.SEARCH_SPACE[0]
    constants = step.module.layout(config)
    return {"STAGES": constants["STAGES"], "LOAD_AHEAD": constants.get("LOAD_AHEAD"),
            "STAGE_BYTES": constants["STAGE_BYTES"], "WARPS": constants["WARPS"], "BLOCK_M": config.BLOCK_M,
            "BLOCK_N": config.BLOCK_N, "BLOCK_K": config.BLOCK_K,
            "threads": config.THREADS + constants.get("PRODUCER_THREADS", 0)}


def ring_schedule(stages: int, k_tiles: int) -> list[dict]:
    """Per k-tile t: its stage (t % STAGES), which fill of that stage it is (t // STAGES), the parity a consumer
    waits on full[stage] with (the fill's phase: fill % 2) and the parity the producer waits on empty[stage] with
    before the fill (the previous fill's release: (fill − 1) % 2; None for the first fill: nothing to wait for) —
    the kernels' formulas."""
    return [{"k_tile": t, "stage": t % stages, "fill": t // stages, "full_parity": t // stages % 2,
             "empty_parity": None if t < stages else (t // stages - 1) % 2} for t in range(k_tiles)]


def ring_snapshot(stages: int, load_ahead: int, turn: int) -> list[dict]:
    """Step 16's ring during turn ``turn`` of its loop: per stage, the newest k-tile put there, and its state —
    "filling" (the producer loads k-tile ``turn``), "ahead" (loaded, not read yet), "read" (its fragments are loaded
    and its wgmma issued: k-tile ``turn − LOAD_AHEAD``), "in flight" (the k-tile before, whose wgmma may still run,
    released after this turn's wait) or "free"."""
    computed = turn - load_ahead
    out = []
    for s in range(stages):
        t = max((t for t in range(turn + 1) if t % stages == s), default=None)
        if t is None:
            state = "free"
        elif t == turn:
            state = "filling"
        elif t > computed:
            state = "ahead"
        elif t == computed:
            state = "read"
        elif t == computed - 1:
            state = "in flight"
        else:
            state = "free"
        out.append({"stage": s, "k_tile": t, "state": state,
                    "full_parity": None if t is None else t // stages % 2})
    return out


STATE_COLOURS = {"filling": "tab:orange", "ahead": "tab:olive", "read": "tab:blue", "in flight": "lightsteelblue",
                 "free": "0.9"}


def ring_figure(step, k_tiles: int = 12, turn: int = 6):
    """Left: step 16's ring during one turn (which k-tile each stage holds, its state, and the barriers' parities);
    right: every k-tile's stage and the parities its waiters use, from :func:`ring_schedule`."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    c = ring_constants(step)
    stages, ahead = c["STAGES"], c["LOAD_AHEAD"]
    fig = Figure(figsize=(13, 4.4), layout="constrained")
    snap, table = fig.subplots(1, 2, width_ratios=[1, 1.6])
    for entry in ring_snapshot(stages, ahead, turn):
        s, t = entry["stage"], entry["k_tile"]
        snap.add_patch(Rectangle((s, 0.9), 0.9, 1.2, color=STATE_COLOURS[entry["state"]]))
        snap.text(s + 0.45, 1.75, f"stage {s}", ha="center", fontsize=9, fontweight="bold")
        snap.text(s + 0.45, 1.45, f"k-tile {t}" if t is not None else "—", ha="center", fontsize=9)
        snap.text(s + 0.45, 1.1, entry["state"], ha="center", fontsize=8)
        fill = t // stages if t is not None else 0
        snap.text(s + 0.45, 0.6, f"full[{s}]\nwait parity {fill % 2}", ha="center", fontsize=7.5, va="center")
        snap.text(s + 0.45, 0.15, f"empty[{s}]\nnext refill waits\nparity {fill % 2}", ha="center", fontsize=7.5,
                  va="center")
    snap.set(xlim=(-0.1, stages), ylim=(-0.2, 2.3), title=f"During turn {turn}: the producer loads k-tile {turn}, "
             f"every warp computes k-tile {turn - ahead}\n(LOAD_AHEAD = {ahead}; k-tile {turn - ahead - 1}'s wgmma "
             "may still run)")
    snap.title.set_fontsize(9)
    snap.axis("off")
    schedule = ring_schedule(stages, k_tiles)
    for e in schedule:
        x, y = e["k_tile"], stages - 1 - e["stage"]
        table.add_patch(Rectangle((x, y), 0.95, 0.9, color=("tab:green", "tab:purple")[e["full_parity"]], alpha=0.25))
        empty = "—" if e["empty_parity"] is None else str(e["empty_parity"])
        table.text(x + 0.47, y + 0.45, f"t={x}\nfill {e['fill']}\nfull: {e['full_parity']}\nempty: {empty}",
                   ha="center", va="center", fontsize=7)
    table.set_xlim(0, k_tiles)
    table.set_ylim(0, stages)
    table.set_yticks([stages - 1 - s + 0.45 for s in range(stages)], [f"stage {s}" for s in range(stages)])
    table.set_xticks([])
    table.set_title("Each k-tile t: its stage t % STAGES, which fill of it (t // STAGES), the parity consumers wait "
                    "on full[s] for\n(fill % 2; green 0, purple 1) and the parity the producer waits on empty[s] "
                    "for before refilling ((fill − 1) % 2)", fontsize=9)
    for side in ("top", "right", "bottom"):
        table.spines[side].set_visible(False)
    return fig


# -- the models the predictions come from -----------------------------------------------------------------------------
#: Dense TF32 FLOP per clock per SM: 8 × the FP32 units' 128 multiply-adds, 2 FLOP each.
TF32_FLOP_PER_CLOCK = 2 * TENSOR_TF32_PER_FP32 * FP32_FMA_PER_SM
#: The model of experiments/warpgroup_tma_bench.py (an assumption, not a measurement): between k-tiles a warpgroup
#: waits for shared memory (≈ 30 clocks of latency), then rounds and moves its 16 fragment values (≈ 70).
SHARED_LATENCY_CLOCKS, FRAGMENT_WORK_CLOCKS = 30, 70


def k_tile_flop(constants: dict) -> int:
    """FLOP of one k-tile of one block: 2 · BLOCK_M · BLOCK_N · BLOCK_K."""
    return 2 * constants["BLOCK_M"] * constants["BLOCK_N"] * constants["BLOCK_K"]


def tensor_clocks(constants: dict) -> float:
    """Clocks one SM's tensor cores need for one k-tile of the block at the dense TF32 rate."""
    return k_tile_flop(constants) / TF32_FLOP_PER_CLOCK


def tensor_ceiling_tflops(run: dict, mhz: float | None = None) -> float:
    """Every SM's tensor cores busy all the time, at ``mhz`` (default: the run's maximum SM clock)."""
    env = run["environment"]
    return env["sm_count"] * TF32_FLOP_PER_CLOCK * (mhz or env["sm_clock_max_mhz"]) * 1e6 / 1e12


def pause_model(step, run: dict) -> dict:
    """Lesson 16's prediction: step 15 spends a k-tile's tensor-core time plus a pause (the model's constants) with
    the tensor cores idle, since ``bar.sync`` keeps both warpgroups' pauses together; step 16 hides the pause (the
    ring lets the warpgroups drift apart, and a second fragment register set overlaps it with the wgmma in flight).
    Per big square: step 15's TFLOPS in ``run``, the prediction step 15 × (tensor + pause) / tensor, and the tensor
    ceiling at that record's median clock."""
    c = ring_constants(step)
    tensor, pause = tensor_clocks(c), SHARED_LATENCY_CLOCKS + FRAGMENT_WORK_CLOCKS
    out = {"k_tile_mflop": k_tile_flop(c) / 1e6, "tensor_clocks": tensor, "pause_clocks": pause,
           "gain": pause / tensor, "sizes": {}}
    for size in BIG:
        r15 = measured(run, "warpgroup_tf32", size)
        if r15:
            out["sizes"][size] = {"step15": r15["tflops"], "predicted": r15["tflops"] * (tensor + pause) / tensor,
                                  "ceiling": tensor_ceiling_tflops(run, r15.get("sm_clock_mhz_median"))}
    return out


# -- speed: the run that measured steps 15–17 beside both cuBLAS ---------------------------------------------------
def speed_rows(run: dict) -> dict:
    """{kernel: {size: {"tflops", "of_cublas_tf32", "vs_sgemm", "mhz", "mhz_min", "ms"}}} for :data:`ROWS`."""
    out = {}
    for kernel, *_ in ROWS:
        out[kernel] = {}
        for size in sizes(run):
            r, tf32, sgemm = (measured(run, k, size) for k in (kernel, "cublas_tf32", "cublas"))
            if r is None:
                continue
            out[kernel][size] = {"tflops": r["tflops"], "of_cublas_tf32": r["tflops"] / tf32["tflops"],
                                 "vs_sgemm": r["tflops"] / sgemm["tflops"], "mhz": r.get("sm_clock_mhz_median"),
                                 "mhz_min": r.get("sm_clock_mhz_min"), "ms": r["median_ms"]}
    return out


def speed_table(run: dict, kernels=None) -> MarkdownTable:
    """TFLOPS, share of cuBLAS TF32 and the SM clock (median, and the slowest launch's) of each kernel at each size."""
    chosen = [row for row in ROWS if kernels is None or row[0] in kernels]
    return clock_table(run, chosen, sizes(run), "cublas_tf32", "{:.0%} of TF32", "share of cuBLAS TF32", measured)


def speed_figure(run: dict, kernels=None):
    """Left: TFLOPS of each kernel at each size (bars); right: share of cuBLAS TF32 at the two big squares with the
    course's target."""
    from matplotlib.figure import Figure

    rows = speed_rows(run)
    chosen = [row for row in ROWS if kernels is None or row[0] in kernels]
    size_list = sizes(run)
    fig = Figure(figsize=(13, 4.4), layout="constrained")
    speed, share = fig.subplots(1, 2)
    width = 0.8 / len(chosen)
    for i, (kernel, label, colour) in enumerate(chosen):
        x = np.arange(len(size_list)) + (i - (len(chosen) - 1) / 2) * width
        speed.bar(x, [rows[kernel].get(s, {}).get("tflops", np.nan) for s in size_list], width, color=colour,
                  label=label)
        if kernel not in ("cublas", "cublas_tf32"):
            xb = np.arange(len(BIG)) + (i - (len(chosen) - 1) / 2) * width
            share.bar(xb, [100 * rows[kernel].get(s, {}).get("of_cublas_tf32", np.nan) for s in BIG], width,
                      color=colour, label=label)
    speed.set_xticks(range(len(size_list)), [size_label(s) for s in size_list])
    top = max(q["tflops"] for kernel, *_ in chosen for q in rows[kernel].values())
    speed.set(ylabel="TFLOPS", title="Speed", ylim=(0, 1.6 * top))  # room for the legend above the bars
    speed.legend(fontsize=7, loc="upper right")
    share.axhline(TARGET_HOPPER_TF32_PCT_OF_CUBLAS, color="k", ls="--", lw=1,
                  label=f"the course's target: {TARGET_HOPPER_TF32_PCT_OF_CUBLAS:.0f} % of cuBLAS TF32")
    share.axhline(100, color="tab:purple", lw=1)
    share.set_xticks(range(len(BIG)), [size_label(s) for s in BIG])
    share.set(ylabel="% of cuBLAS TF32 (same run)", title="Against cuBLAS TF32", ylim=(0, 110))
    share.legend(fontsize=7, loc="lower right")
    env = run["environment"]
    fig.suptitle(f"Steps 15–17 beside both cuBLAS, one run: {env.get('gpu')}, {str(env.get('date'))[:10]}",
                 fontsize=9)
    return fig


def verdict(run: dict, step: str, records: dict = RECORDS) -> dict | None:
    """``step`` against the course's target (:data:`TARGET_HOPPER_TF32_PCT_OF_CUBLAS` % of cuBLAS TF32 at 4096³ and
    8192³, same run): per size its TFLOPS, share, × the previous step, the SM clocks of it and cuBLAS TF32 and the
    share per clock (``pct_per_clock``: the share if both had run at the same clock);
    ``met`` (at both), ``at_least_previous_at_8192`` (the issue's rule: each step at least as fast as the one
    before it at 8192³); None without the step at both sizes. ``records``: the record name of each kernel in ``run``
    (:data:`RECORDS` for :data:`PRODUCER_ORDER_RUN`; ``{}`` for a course benchmark, whose records are the steps'
    names)."""
    out = {}
    for size in BIG:
        r, tf32, before = (find(run, records.get(k, k), size) for k in (step, "cublas_tf32", PREVIOUS[step]))
        if r is None or tf32 is None:
            return None
        out[size] = {"tflops": r["tflops"], "pct_of_cublas_tf32": 100 * r["tflops"] / tf32["tflops"],
                     "cublas_tf32": tf32["tflops"], "vs_previous": r["tflops"] / before["tflops"] if before else None,
                     "mhz": r.get("sm_clock_mhz_median"), "cublas_tf32_mhz": tf32.get("sm_clock_mhz_median")}
        if out[size]["mhz"] and out[size]["cublas_tf32_mhz"]:  # the share per clock: TFLOPS / MHz against cuBLAS's
            out[size]["pct_per_clock"] = (out[size]["pct_of_cublas_tf32"] * out[size]["cublas_tf32_mhz"]
                                          / out[size]["mhz"])
    last = out[BIG[-1]]["vs_previous"]
    return {"sizes": out, "target_pct": TARGET_HOPPER_TF32_PCT_OF_CUBLAS,
            "met": all(q["pct_of_cublas_tf32"] >= TARGET_HOPPER_TF32_PCT_OF_CUBLAS for q in out.values()),
            "at_least_previous_at_8192": last is not None and last >= 1.0}


#: The course benchmarks with steps 16–18 beside both cuBLAS: one H100 run and one H200 run.
BENCHMARKS = (results_files.BENCH_NVIDIA_H100_80GB_HBM3_2026_11_26, results_files.BENCH_NVIDIA_H200_2026_11_26_3)


def benchmark_verdicts(step: str) -> list[dict]:
    """:func:`verdict` of ``step`` in each of :data:`BENCHMARKS` that is shipped, with its GPU and file: whether the
    course's target is met depends on the GPU."""
    out = []
    for name in BENCHMARKS:
        run = load_run(name)
        v = verdict(run, step, records={}) if run else None
        if v:
            out.append({**v, "gpu": run["environment"].get("gpu"), "file": name})
    return out


def clock_share(run: dict, step: str, size: tuple = BIG[1], records: dict = RECORDS) -> dict:
    """At ``size``, ``step`` against cuBLAS TF32 in one run: both SM clocks (medians), the share of cuBLAS TF32's
    throughput, the share per clock, and the energy per FLOP of the step over cuBLAS's *if both drew the same
    power* (the board's limit): cuBLAS's TFLOPS over the step's."""
    r, tf32 = find(run, records.get(step, step), size), find(run, "cublas_tf32", size)
    share = r["tflops"] / tf32["tflops"]
    mhz, tf32_mhz = r["sm_clock_mhz_median"], tf32["sm_clock_mhz_median"]
    return {"mhz": mhz, "cublas_tf32_mhz": tf32_mhz, "share": share, "share_per_clock": share * tf32_mhz / mhz,
            "energy_per_flop_at_equal_power": 1 / share}


def clocks_under_load_power(clocks_run: dict, kernel: str = "cublas_tf32", size: int = 8192) -> float | None:
    """The board power (median, W) while ``kernel`` ran back to back at ``size`` in :data:`CLOCKS_RUN`."""
    got = [r["power_w_median"] for r in clocks_run["records"] if r["kernel"] == kernel and r["size"] == size]
    return got[0] if got else None


def ragged_same(run: dict, tolerance: float = 0.02) -> dict:
    """The ragged shape (K not a multiple of 32: every tile on step 15's edge kernel): each step's TFLOPS there and
    whether steps 15–17 are within ``tolerance`` of each other."""
    ragged = [s for s in sizes(run) if s not in BIG]
    if not ragged:
        return {}
    size = ragged[0]
    got = {k: measured(run, k, size)["tflops"] for k in ("warpgroup_tf32", "tma_pipeline", "warp_specialized")
           if measured(run, k, size)}
    return {"size": size, "tflops": got, "same": max(got.values()) / min(got.values()) - 1 <= tolerance}


# -- the timelines ------------------------------------------------------------------------------------------------------
#: The k-tiles the medians skip: the ring filling at the start.
WARM_UP_K_TILES = 8


def events(timeline: dict, step: str) -> np.ndarray:
    """Clocks since the first event, ``[block, role, k-tile, event]`` as floats, NaN where nothing was written
    (the producer's fourth event)."""
    cycles = np.array(timeline["steps"][step]["cycles_since_first_event"], dtype=float)
    cycles[cycles < 0] = np.nan
    return cycles


def timeline_medians(timeline: dict, step: str, block: int = 0) -> dict:
    """Medians over one recorded block's k-tiles after :data:`WARM_UP_K_TILES`: the producer's wait for an empty
    stage and its issuing of the copies; per warpgroup its period (turn to turn), its wait for data, its fragment
    loads and wgmma issue, its wait for the previous k-tile's wgmma, the rest (release, loop, the recording's
    stores), how long before its turn to a k-tile the producer had issued that k-tile's copies (``lead``), from
    issue to the end of its wait for data (``copy``); ``period`` (the warpgroups' mean), ``landing`` (``copy`` of
    the warpgroup that waited longest for data: there the wait ended as the bytes landed), ``behind`` (k-tiles warpgroup 0 runs behind
    warpgroup 1), the clock, and the TFLOPS the period implies on every SM."""
    e = events(timeline, step)[block]
    steady = slice(WARM_UP_K_TILES, None)
    producer = e[0]
    out = {"producer": {"wait_empty": float(np.nanmedian(producer[steady, 1] - producer[steady, 0])),
                        "issue": float(np.nanmedian(producer[steady, 2] - producer[steady, 1]))},
           "warpgroups": []}
    for w in (1, 2):
        x = e[w]
        out["warpgroups"].append({
            "period": float(np.nanmedian(np.diff(x[steady, 0]))),
            "wait_data": float(np.nanmedian(x[steady, 1] - x[steady, 0])),
            "issue": float(np.nanmedian(x[steady, 2] - x[steady, 1])),
            "wait_previous": float(np.nanmedian(x[steady, 3] - x[steady, 2])),
            "rest": float(np.nanmedian(x[WARM_UP_K_TILES + 1:, 0] - x[WARM_UP_K_TILES:-1, 3])),
            "lead": float(np.nanmedian(x[steady, 0] - producer[steady, 2])),
            "copy": float(np.nanmedian(x[steady, 1] - producer[steady, 2]))})
    out["period"] = float(np.mean([w["period"] for w in out["warpgroups"]]))
    # A wait for data ends when the bytes land only for a warpgroup that did wait: take the one that waited longest.
    out["landing"] = max(out["warpgroups"], key=lambda w: w["wait_data"])["copy"]
    out["behind"] = float(np.nanmedian(e[1][steady, 0] - e[2][steady, 0])) / out["period"]
    mhz = timeline["steps"][step]["sm_clock_mhz_after"]
    out["mhz"] = mhz
    return out


def implied_tflops(timeline: dict, step_name: str, step) -> float:
    """The TFLOPS every SM would run at if each took the recorded block's period per k-tile (one block per SM, no
    tails): SMs × k-tile FLOP / (period / clock)."""
    m = timeline_medians(timeline, step_name)
    return timeline["environment"]["sm_count"] * k_tile_flop(ring_constants(step)) * m["mhz"] * 1e6 / m["period"] / 1e12


#: The timeline's segments: (label, colour), by role.
PRODUCER_SEGMENTS = [("waits for an empty stage", "0.75"), ("issues the copies", "tab:orange")]
CONSUMER_SEGMENTS = [("waits for data", "tab:red"), ("loads fragments, issues wgmma", "tab:blue"),
                     ("waits for the previous k-tile's wgmma", "tab:green"), ("the rest (release, loop, recording)",
                                                                          "0.9")]


def timeline_figure(timeline: dict, step_names, block: int = 0, first: int = 16, k_tiles: int = 4):
    """A Gantt chart per step (side by side, the same span of clocks): from the first warpgroup's turn to k-tile
    ``first`` of one recorded block, for as long as the slowest of the steps takes for ``k_tiles`` k-tiles, the
    producer's waits for an empty stage and its copies, and per warpgroup its waits for data, its fragment loads and
    wgmma issue, its waits for the previous k-tile's wgmma, and the rest; each bar labelled with its k-tile."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    names = list(step_names)
    starts = {name: np.nanmin(events(timeline, name)[block][1:, first, 0]) for name in names}
    span = max(np.nanmax(events(timeline, name)[block][1:, first + k_tiles, 0]) - starts[name] for name in names)
    fig = Figure(figsize=(7 * len(names), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(names)))
    for ax, name in zip(axes, names):
        e = events(timeline, name)[block] - starts[name]

        def bar(y, a, b, colour, label_at=None, text=None):
            if np.isfinite(a) and np.isfinite(b) and a < span and b > 0:
                ax.barh(y, b - a, left=a, color=colour, height=0.6)
                if text is not None and 0 <= label_at < span * 0.98:
                    ax.text(label_at, y + 0.36, text, fontsize=6, ha="left")

        p = e[0]
        for t in range(p.shape[0]):
            bar(2, p[t, 0], p[t, 1], PRODUCER_SEGMENTS[0][1])
            bar(2, p[t, 1], p[t, 2], PRODUCER_SEGMENTS[1][1], p[t, 1], str(t))
        for w in (1, 2):
            x = e[w]
            for u in range(x.shape[0]):
                edges = [x[u, 0], x[u, 1], x[u, 2], x[u, 3], x[u + 1, 0] if u + 1 < x.shape[0] else np.nan]
                for i, ((_, colour), a, b) in enumerate(zip(CONSUMER_SEGMENTS, edges, edges[1:])):
                    bar(2 - w, a, b, colour, x[u, 0], str(u) if i == 0 else None)
        ax.set_yticks([2, 1, 0], ["producer", "warpgroup 0", "warpgroup 1"])
        ax.set_xlim(0, span)
        mhz = timeline["steps"][name]["sm_clock_mhz_after"]
        ax.set(xlabel=f"SM clocks since a warpgroup turned to k-tile {first}",
               title=f"{name}: block {block}, numbers are k-tiles; SM clock {mhz:.0f} MHz")
        ax.title.set_fontsize(9)
    handles = [Patch(color=c, label=f"producer {l}") for l, c in PRODUCER_SEGMENTS]
    handles += [Patch(color=c, label=f"warpgroup {l}") for l, c in CONSUMER_SEGMENTS]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    env = timeline["environment"]
    fig.suptitle(f"%clock64 per role and k-tile, one launch at {timeline['size']}³: {env.get('gpu')}, "
                 f"{str(env.get('date'))[:10]}", fontsize=9)
    return fig


def timeline_table(timeline: dict, step_names) -> MarkdownTable:
    """The medians of :func:`timeline_medians` per step, one column per step (clocks)."""
    m = {name: timeline_medians(timeline, name) for name in step_names}
    rows = [("producer: waits for an empty stage", lambda q: q["producer"]["wait_empty"]),
            ("producer: issues the copies", lambda q: q["producer"]["issue"])]
    for w in (0, 1):
        rows += [(f"warpgroup {w}: period (turn to turn)", lambda q, w=w: q["warpgroups"][w]["period"]),
                 (f"warpgroup {w}: waits for data", lambda q, w=w: q["warpgroups"][w]["wait_data"]),
                 (f"warpgroup {w}: loads fragments, issues wgmma", lambda q, w=w: q["warpgroups"][w]["issue"]),
                 (f"warpgroup {w}: waits for the previous wgmma", lambda q, w=w: q["warpgroups"][w]["wait_previous"]),
                 (f"warpgroup {w}: copies issued before its turn", lambda q, w=w: q["warpgroups"][w]["lead"])]
    cells = [{"median, clocks": label, **{f"`{n}`": f"{get(m[n]):,.0f}" for n in step_names}} for label, get in rows]
    cells.append({"median, clocks": "warpgroup 0 behind warpgroup 1, k-tiles",
                  **{f"`{n}`": f"{m[n]['behind']:.1f}" for n in step_names}})
    return MarkdownTable(table(cells, align="l" + "r" * len(step_names)) + f"\n\n*k-tiles {WARM_UP_K_TILES}–"
                         f"{timeline['recorded_k_tiles'] - 1} of block 0; `{TIMELINE_RUN}`.*")


# -- step 15's drop from 4096³ to 8192³ (deep dive 16) --------------------------------------------------------------
def drop(run: dict) -> dict:
    """Per kernel of :data:`ROWS`: TFLOPS at 8192³ over 4096³, the two median clocks, and the ratio per clock
    (TFLOPS / MHz at 8192³ over 4096³), from ``run``."""
    out = {}
    for kernel, *_ in ROWS:
        small, big = (measured(run, kernel, s) for s in BIG)
        if small and big:
            mhz = (small.get("sm_clock_mhz_median"), big.get("sm_clock_mhz_median"))
            ratio = big["tflops"] / small["tflops"]
            out[kernel] = {"ratio": ratio, "mhz": mhz, "per_clock": ratio * mhz[0] / mhz[1] if all(mhz) else None}
    return out


def first_wave_tiles(size: int, group_m: int, sms: int, bm: int = 256, bn: int = 128) -> list[tuple[int, int]]:
    """(tile-row, tile-column) of the first ``sms`` tiles of a square of ``size`` in step 16's order: column by
    column within groups of ``group_m`` tile-rows (1: row-major) — the kernel's formula."""
    rows, cols = size // bm, size // bn
    out = []
    for tile in range(min(sms, rows * cols)):
        first_row = tile // cols // group_m * group_m
        height = min(rows - first_row, group_m)
        in_group = tile - first_row * cols
        out.append((first_row + in_group % height, in_group // height))
    return out


def wave_traffic(size: int, group_m: int, sms: int, bm: int = 256, bn: int = 128) -> dict:
    """The DRAM model of experiments/warpgroup_order_bench.py: one wave's tiles read each A panel (bm × K floats) and
    B panel (K × bn) they touch once, and nothing survives in L2 between waves. The wave's panels, its MB, and MB per
    GFLOP of the wave's work."""
    tiles = first_wave_tiles(size, group_m, sms, bm, bn)
    rows, cols = len({r for r, _ in tiles}), len({c for _, c in tiles})
    mb = (rows * bm + cols * bn) * size * 4 / 1e6
    gflop = 2 * len(tiles) * bm * bn * size / 1e9
    return {"a_panels": rows, "b_panels": cols, "mb": mb, "mb_per_gflop": mb / gflop}


def order_table(order_run: dict) -> MarkdownTable:
    """Step 16's kernel in row-major order and in groups of 4, 8, 16 tile-rows beside step 15 and cuBLAS TF32:
    TFLOPS at both squares and 8192³ over 4096³."""
    names = [("warpgroup_tf32", "step 15"), ("overlap_group1", "step 16's kernel, row-major"),
             ("overlap_group4", "… groups of 4"), ("overlap_group8", "… groups of 8 (step 16)"),
             ("overlap_group16", "… groups of 16"), ("cublas_tf32", "cuBLAS TF32")]
    rows = []
    for name, label in names:
        got = [find(order_run, name, s) for s in BIG]
        if None not in got:
            rows.append({"kernel": label, **{size_label(s): f"{g['tflops']:.1f}" for s, g in zip(BIG, got)},
                         "8192³ / 4096³": f"{got[1]['tflops'] / got[0]['tflops']:.3f}"})
    return MarkdownTable(table(rows, align="lrrr") + "\n\n" + caption(order_run))


def order_gain(order_run: dict) -> dict:
    """What grouping by 8 bought at each square (× row-major), and the share of step 15's drop it makes up at
    8192³ (the gain over the row-major drop's size)."""
    out = {}
    for s in BIG:
        out[s] = find(order_run, "overlap_group8", s)["tflops"] / find(order_run, "overlap_group1", s)["tflops"]
    row = [find(order_run, "overlap_group1", s)["tflops"] for s in BIG]
    group = [find(order_run, "overlap_group8", s)["tflops"] for s in BIG]
    lost_row = 1 - row[1] / row[0]
    lost_group = 1 - group[1] / group[0]
    return {"gain": out, "drop_row_major": lost_row, "drop_grouped": lost_group,
            "share_recovered": (lost_row - lost_group) / lost_row if lost_row > 0 else None}


_PROFILE_HEADER = re.compile(r"^=== size (\d+) group (\d+)\s*$", re.M)


def profile_sections(text: str, header: re.Pattern) -> list[tuple[re.Match, dict]]:
    """The sections of an Nsight Compute text that ``header`` (a line pattern) starts: (the header's match, the
    section's metrics in base units: bytes, seconds, hertz)."""
    heads = list(header.finditer(text))
    return [(head, {name: base_units(value, unit) for name, (value, unit)
                    in read_metrics(text[head.end():nxt.start() if nxt else len(text)]).items()})
            for head, nxt in zip(heads, heads[1:] + [None])]


def order_profile() -> dict:
    """Nsight Compute on step 16's kernel (:data:`ORDER_PROFILE`): {(size, group): {"dram_gb", "l2_hit_pct",
    "ms", "ghz"}}; {} if the report is not shipped."""
    text = read_text(ORDER_PROFILE)
    if text is None:
        return {}
    return {(int(head.group(1)), int(head.group(2))): {
        "dram_gb": metrics["dram__bytes_read.sum"] / 1e9, "l2_hit_pct": metrics["lts__t_sector_hit_rate.pct"],
        "ms": metrics["gpu__time_duration.sum"] * 1e3, "ghz": metrics["sm__cycles_elapsed.avg.per_second"] / 1e9}
        for head, metrics in profile_sections(text, _PROFILE_HEADER)}


def profile_tflops(profile: dict) -> dict:
    """TFLOPS of each profiled launch (one launch, Nsight Compute's duration)."""
    return {key: 2 * key[0] ** 3 / (q["ms"] * 1e-3) / 1e12 for key, q in profile.items()}


def clocks_table(clocks_run: dict) -> MarkdownTable:
    """The clocks under load (:data:`CLOCKS_RUN`): per kernel and size, the SM clock and power while it ran back to
    back for seconds, and the clock right after each benchmark-style launch (median, slowest)."""
    rows = [{"kernel": f"`{r['kernel']}`", "size": f"{r['size']}³", "back to back: SM clock, median (min) MHz":
             f"{r['sm_clock_mhz_median']:.0f} ({r['sm_clock_mhz_min']:.0f})", "power, W": f"{r['power_w_median']:.0f}",
             "after each launch: median (min) MHz": f"{r['probe_mhz_median']:.0f} ({r['probe_mhz_min']:.0f})"}
            for r in clocks_run["records"]]
    env = clocks_run["environment"]
    return MarkdownTable(table(rows, align="lrrrr") + f"\n\n*{env.get('gpu')}, power limit "
                         f"{env.get('smi_power_limit')} W, `{CLOCKS_RUN}`.*")


def timing_table(timing_run: dict) -> MarkdownTable:
    """The benchmark's timing against the same launches queued behind a spinning kernel (:data:`TIMING_RUN`)."""
    rows = [{"kernel": f"`{r['kernel']}`", "size": f"{r['size']}³", "benchmark, ms": f"{r['bench_ms']:.3f}",
             "queued, ms": f"{r['queued_ms']:.3f}", "queued / benchmark": f"{r['queued_ms'] / r['bench_ms']:.3f}",
             "host in launch(), µs": f"{r['host_launch_us']:.0f}"} for r in timing_run["records"]]
    return MarkdownTable(table(rows, align="lrrrrr") + f"\n\n*{timing_run['environment'].get('gpu')}, `{TIMING_RUN}`.*")


def timing_agreement(timing_run: dict, kernels=("warpgroup_tf32", "overlap_group8")) -> float:
    """The largest |queued / benchmark − 1| over ``kernels`` (the course's own: their launches hide behind the
    fills)."""
    return max(abs(r["queued_ms"] / r["bench_ms"] - 1) for r in timing_run["records"] if r["kernel"] in kernels)


# -- setmaxnreg: what ptxas says, assembled as a unit or linked whole (deep dive 17) ------------------------------------
def ptxas_reports(kernel_sources: list[str]) -> dict:
    """For every kernel of each source — ``"step:NAME"`` (the step's fast kernel) or ``"MODULE:FUNCTION"`` (a
    function returning ``{label: (dispatcher, signature)}``) — what ptxas reports assembled as relocatable PTX
    (:func:`gemm_steps.harness.ptx.ptxas_info`) and linked whole with LTO (``kernel_ptxas_info``), and how many
    ``setmaxnreg`` its PTX has. Compiled in the GPU-mode worker (:mod:`gemm_steps.harness.gpu_mode`; no GPU needed),
    once for the same code and compilers (``remembered_in_gpu_mode``: the folders of the modules named are part of its
    key)."""
    import importlib.util

    from gemm_steps.harness.ptx import remembered_in_gpu_mode

    specs = [importlib.util.find_spec(source.split(":")[0]) for source in kernel_sources
             if not source.startswith("step:")]
    folders = {Path(spec.origin).parent for spec in specs if spec and spec.origin}  # a missing one fails in the child
    return remembered_in_gpu_mode("gemm_steps.course.hopper:ptxas_reports_here", list(kernel_sources),
                                  also_hash=sorted(folders))


def ptxas_reports_here(kernel_sources: list[str]) -> dict:
    """:func:`ptxas_reports` in this process (GPU mode)."""
    import importlib

    from gemm_steps.harness.ptx import compiled_kernel, ptx_stats, ptxas_info
    from gemm_steps.harness.step import get_step

    out = {}
    for source in kernel_sources:
        where, name = source.split(":")
        if where == "step":
            kernels = {label: entry for label, entry in get_step(name).kernels().items() if label == f"{name}_fast"}
        else:
            kernels = getattr(importlib.import_module(where), name)()
        for label, (dispatcher, signature) in kernels.items():
            kept = compiled_kernel(dispatcher, signature, lto=True)  # one lowering, NVVM twice; once on this machine
            ptx = kept["ptx"]
            out[label] = {"setmaxnreg": ptx_stats(ptx)["setmaxnreg"], "relocatable": ptxas_info(ptx),
                          "lto": kept["lto_ptxas"]}
    return out


def register_budget(step) -> dict:
    """Step 17's register arithmetic: the SM's registers, the threads launched, the cap each thread gets at entry
    (registers / threads, rounded down to a multiple of 8), and the registers the roles keep after the hand-off."""
    from .compiled import SM90_LIMITS

    config = step.module.SEARCH_SPACE[0]
    c = step.module.layout(config)
    threads = config.THREADS + c["PRODUCER_THREADS"]
    total = SM90_LIMITS["registers"]
    after = c["PRODUCER_THREADS"] * c["PRODUCER_REGISTERS"] + config.THREADS * c["CONSUMER_REGISTERS"]
    return {"registers": total, "threads": threads, "at_entry": total // threads // 8 * 8,
            "producer": c["PRODUCER_REGISTERS"], "consumer": c["CONSUMER_REGISTERS"], "after": after}


def shared_budget(step) -> dict:
    """The ring's shared memory: bytes per stage, the ring's, the SM's per-block limit, and whether one more stage
    would fit."""
    from .compiled import SM90_LIMITS

    c = ring_constants(step)
    ring = c["STAGES"] * c["STAGE_BYTES"]
    limit = SM90_LIMITS["shared_bytes"] - SM90_LIMITS["shared_reserved_per_block"]
    return {"stage": c["STAGE_BYTES"], "stages": c["STAGES"], "ring": ring, "limit": limit,
            "one_more_fits": ring + c["STAGE_BYTES"] <= limit}


# -- how step 16 was found (H100 runs of experiments/warpgroup_tma_bench.py) ------------------------------------------
#: The TMA builds before step 16, each in its own run beside step 15: (file, record, what changed).
HISTORY = [(results_files.EXPERIMENT_WARPGROUP_TMA_BULK_ROWS_NVIDIA_H100, "warpgroup_tma", "B by 32 bulk row copies"),
           (results_files.EXPERIMENT_WARPGROUP_TMA_NVIDIA_H100, "warpgroup_tma",
            "B by one tensor copy; ptxas serialised the wgmma around the wait's divergent branches (C7518)"),
           (results_files.EXPERIMENT_WARPGROUP_TMA_UNIFORM_WAIT_NVIDIA_H100, "warpgroup_tma",
            "the wait as uniform branches (bra.uni)"),
           (results_files.EXPERIMENT_WARPGROUP_OVERLAP_NVIDIA_H100, "warpgroup_overlap",
            "two fragment register sets: a k-tile of wgmma in flight (step 16 but for the tile order)")]


def history() -> list[dict]:
    """Each build of :data:`HISTORY` at 4096³ and 8192³: its TFLOPS and × step 15 in the same run."""
    out = []
    for name, build, what in HISTORY:
        run = load_run(name)
        if run is None:
            continue
        row = {"file": name, "what": what, "gpu": run["environment"].get("gpu"), "sizes": {}}
        for size in BIG:
            r, r15 = find(run, build, size), find(run, "warpgroup_tf32", size)
            if r and r15:
                row["sizes"][size] = {"tflops": r["tflops"], "vs_step15": r["tflops"] / r15["tflops"]}
        out.append(row)
    return out


def history_table() -> MarkdownTable:
    def cell(q):
        return "—" if q is None else f"{q['tflops']:.1f} ({q['vs_step15']:.2f}×)"

    return table([{"build": row["what"], **{f"{size_label(s)}: TFLOPS (× step 15)": cell(row["sizes"].get(s))
                                            for s in BIG}, "file": f"`{row['file']}` ({row['gpu']})"}
                  for row in history()], align="lrrl")


def ptxas_table(reports: dict) -> MarkdownTable:
    """One row per kernel of :func:`ptxas_reports`, assembled as a unit and linked whole: registers, spill bytes,
    wgmma serialised, ptxas's performance warnings."""
    return table([{"kernel": f"`{label}`", "setmaxnreg in its PTX": str(r["setmaxnreg"]), "ptxas": str(q.get("ptxas")),
                   "registers": str(q.get("registers")), "spill bytes": str(q.get("spill_bytes")),
                   "wgmma serialised": str(q.get("wgmma_serialized")), "warnings": ", ".join(q.get("warnings") or [])
                   or "—"} for label, r in reports.items() for q in (r["relocatable"], r["lto"])], align="lrlrrrl")


# -- fewer instructions in step 17's k-loop (experiments/loop_instructions.py) ----------------------------------------
_BUILD_HEADER = re.compile(r"^=== build (\w+)", re.M)


def loop_profile() -> dict:
    """Nsight Compute on the ``before`` and ``rounding_2`` builds at 4096³ (:data:`LOOP_PROFILE`): {build:
    {"instructions", "uniform", "cycles", "l2_gb"}}; {} if the report is not shipped."""
    text = read_text(LOOP_PROFILE)
    if text is None:
        return {}
    return {head.group(1): {"instructions": m["smsp__inst_executed.sum"], "l2_gb": m["lts__t_bytes.sum"] / 1e9,
                            "uniform": m["sm__inst_executed_pipe_uniform.sum"], "cycles": m["sm__cycles_elapsed.max"]}
            for head, m in profile_sections(text, _BUILD_HEADER)}


def loop_table(run: dict) -> MarkdownTable:
    """Each build of the loop experiment (:data:`LOOP_BUILDS`, each one change more than the one above it) over
    ``before`` and over cuBLAS TF32, at 4096³ and 8192³."""
    rows = []
    for name, label in LOOP_BUILDS:
        row = {"build": label}
        for size in BIG:
            r, base, tf32 = find(run, name, size), find(run, "before", size), find(run, "cublas_tf32", size)
            row[f"{size_label(size)} / before"] = f"{r['tflops'] / base['tflops']:.3f}"
            row[f"{size_label(size)} / cuBLAS TF32"] = f"{r['tflops'] / tf32['tflops']:.0%}"
        rows.append(row)
    return table(rows)


def loop_numbers(run: dict) -> dict:
    """What the loop experiment's verdict reads: warp instructions executed at 4096³ (millions, ``before`` and
    ``rounding_2``), cuBLAS TF32's from the reference file of the same GPU, and the SM clock under load at 8192³."""
    profile, load = loop_profile(), run["under_load_8192"]
    ref = reference.load(run["environment"]["gpu"])
    return {"instructions_before": profile["before"]["instructions"] / 1e6,
            "instructions_after": profile["rounding_2"]["instructions"] / 1e6,
            "cycles_ratio": profile["rounding_2"]["cycles"] / profile["before"]["cycles"],
            "instructions_cublas": (ref.kernel("cublas_tf32", 4096).warp_instructions_per_flop * 2 * 4096 ** 3 / 1e6
                                    if ref else None),
            "mhz_before": load["before"]["sm_clock_mhz"], "mhz_after": load["rounding_2"]["sm_clock_mhz"],
            "mhz_cublas": load["cublas_tf32"]["sm_clock_mhz"],
            "identical": all(v for shape in run["bit_identical_to_before"].values()
                             for k, v in shape.items() if k != "nan_elements")}


# -- a tile's cost besides its k-loop (experiments/per_tile_cost.py) --------------------------------------------------
def per_tile_table(run: dict) -> MarkdownTable:
    """At each K (M = N = 4096): each kernel's TFLOPS and SM clock, and step 17's and its persistent build's TFLOPS
    per clock over cuBLAS TF32's; the last rows, each kernel's line fit (µs, fixed and per 1,024 of K)."""
    per_k, lines = run["summary"]["per_k"], run["summary"]["lines"]
    rows = []
    for k, row in per_k.items():
        entry = {"K": k}
        for name, label in PER_TILE_KERNELS:
            r = row.get(name) or {}
            entry[f"{label} TFLOPS (MHz)"] = f"{r['tflops']:.0f} ({r['mhz']:.0f})" if r else "—"
            if name != "cublas_tf32":
                entry[f"{label} / cuBLAS TF32 per clock"] = f"{r['over_tf32_per_clock']:.3f}" if r else "—"
        rows.append(entry)
    fits = {"K": "line: fixed µs + µs per 1,024 of K"}
    for name, label in PER_TILE_KERNELS:
        line = lines.get(name)
        fits[f"{label} TFLOPS (MHz)"] = f"{line['intercept_us']:.1f} + {line['us_per_1024_k']:.1f}" if line else "—"
        if name != "cublas_tf32":
            fits[f"{label} / cuBLAS TF32 per clock"] = ""
    return table(rows + [fits])


def per_tile_numbers(run: dict) -> dict:
    """What the verdict reads: step 17's per-clock ratio to cuBLAS TF32 at each K, each kernel's fixed µs and µs per
    1,024 of K, and cuBLAS's µs per 1,024 of K over step 17's (``loop_pace``)."""
    per_k, lines = run["summary"]["per_k"], run["summary"]["lines"]
    ratio_at = {int(k): row["warp_specialized"]["over_tf32_per_clock"] for k, row in per_k.items()}
    return {"ratio_at": ratio_at,
            "fixed_us": {name: line["intercept_us"] for name, line in lines.items()},
            "per_1024_us": {name: line["us_per_1024_k"] for name, line in lines.items()},
            "loop_pace": lines["cublas_tf32"]["us_per_1024_k"] / lines["warp_specialized"]["us_per_1024_k"]}


# -- step 17's and step 20's timelines in one run ----------------------------------------------------------------------
#: The medians the comparison shows, per consumer warpgroup: (key, what it is).
TIMELINE_PARTS = [("period", "period (turn to turn)"), ("wait_data", "waits for data"),
                  ("issue", "loads fragments, issues wgmma"), ("wait_previous", "waits for the previous wgmma"),
                  ("rest", "releases the stage, loops"), ("copy", "copies issued → data there (landing)"),
                  ("lead", "copies issued → the warpgroup turns to it (lead)")]


def timeline_compare_table(run: dict) -> MarkdownTable:
    """Median cycles a k-tile of each consumer warpgroup, step 17 and step 20, the two recorded blocks side by side
    (blocks 0 and 1: step 20's first cluster), and step 20 over step 17 (the blocks' mean)."""
    medians = {name: [timeline_medians(run, name, block) for block in (0, 1)]
               for name in ("warp_specialized", "cluster_multicast")}
    rows = []
    for key, label in TIMELINE_PARTS:
        for w in (0, 1):
            row = {"median cycles": f"warpgroup {w}: {label}"}
            values = {}
            for name, step in (("warp_specialized", "step 17"), ("cluster_multicast", "step 20")):
                v = [m["warpgroups"][w][key] for m in medians[name]]
                values[name] = sum(v) / len(v)
                row[f"{step}, blocks 0 / 1"] = f"{v[0]:,.0f} / {v[1]:,.0f}"
            row["step 20 / step 17"] = f"{values['cluster_multicast'] / values['warp_specialized']:.2f}"
            rows.append(row)
    return table(rows)


def timeline_compare(run: dict) -> dict:
    """Step 20 over step 17, the warpgroups' and blocks' mean of each part of :data:`TIMELINE_PARTS`."""
    medians = {name: [timeline_medians(run, name, block) for block in (0, 1)]
               for name in ("warp_specialized", "cluster_multicast")}
    out = {}
    for key, _ in TIMELINE_PARTS:
        mean = {name: np.mean([m["warpgroups"][w][key] for m in blocks for w in (0, 1)])
                for name, blocks in medians.items()}
        out[key] = mean["cluster_multicast"] / mean["warp_specialized"]
    return out


# -- one cluster arrival a warpgroup (experiments/cluster_arrivals.py) ------------------------------------------------
def arrivals_table() -> MarkdownTable:
    """Each run of :data:`ARRIVAL_RUNS`: at each shape, one arrival a warpgroup over every warp arriving, and both over
    step 17."""
    rows = []
    for i, name in enumerate(ARRIVAL_RUNS):
        run = load_run(name)
        if run is None:
            continue
        for size in sorted({(r["M"], r["N"], r["K"]) for r in run["records"]}):
            one, every, s17 = (find(run, k, size)["tflops"] for k in ("cluster_one_arrival", "cluster_multicast",
                                                                      "warp_specialized"))
            rows.append({"run": str(i + 1), "shape": size_label(size), "one arrival / every warp": f"{one / every:.3f}",
                         "one arrival / step 17": f"{one / s17:.3f}", "every warp / step 17": f"{every / s17:.3f}"})
    return table(rows)
