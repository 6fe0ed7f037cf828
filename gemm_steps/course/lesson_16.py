"""Lesson 16's helpers (step 16, ``tma_pipeline``: the copy engine, an mbarrier ring, a wgmma always in flight) and
deep dive 16's: the ring's picture, the model lesson 16's after-the-run numbers come from, the speed table and figure
from the run that measured steps 15–17 (lessons 17 and 25 show them too), the timeline's table and the speed its
period implies, the builds before step 16, and the facts behind step 15's drop from 4096³ to 8192³. The run
(:func:`~.timings.producer_order_run`) is :mod:`.timings`', the verdict against the Hopper target
:mod:`.targets`'; the ring's constants and the tensor cores' rate :mod:`.gpu_model`'s; the timelines
:mod:`.timelines`'. Numbers, tables and figures only: the words are the lessons'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .gpu_model import TF32_FLOP_PER_CLOCK, k_tile_flop, ring_constants, ring_schedule, ring_states, tensor_clocks
from .profiles import profile_sections, report_text
from .targets import HOPPER_SIZES, TARGET_HOPPER_TF32_PCT_OF_CUBLAS
from .timelines import TIMELINE_RUN, WARM_UP_K_TILES, timeline_medians
from .timings import common_sizes, load_run, record, size_label, tflops_table

# -- the shipped files (experiments/results/) --------------------------------------------------------------------------
#: Step 16's kernel in row-major and grouped tile orders beside step 15 (experiments/warpgroup_order_bench.py), and
#: Nsight Compute on two of them; the clocks under load; the benchmark's timing against queued launches.
ORDER_RUN = results_files.EXPERIMENT_WARPGROUP_ORDER_NVIDIA_H200
ORDER_PROFILE = results_files.NCU_WARPGROUP_ORDER_NVIDIA_H200_TXT
CLOCKS_RUN = results_files.EXPERIMENT_CLOCKS_UNDER_LOAD_NVIDIA_H200
TIMING_RUN = results_files.EXPERIMENT_TIMING_METHOD_NVIDIA_H200
#: The rows of the speed table and figure: (kernel, label, colour).
ROWS = [("cublas", "cuBLAS SGEMM (FP32 units)", "tab:red"), ("cublas_tf32", "cuBLAS TF32", "tab:purple"),
        ("warpgroup_tf32", "step 15, TF32 wgmma, cp.async + bar.sync", "tab:cyan"),
        ("tma_pipeline", "step 16, TMA + mbarrier ring", "tab:green"),
        ("late_producer", "step 16, producer behind its wgmma (experiment)", "tab:olive"),
        ("warp_specialized", "step 17, producer warpgroup + setmaxnreg", "tab:orange")]


# -- the ring: which k-tile in which stage -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Stage:
    """One stage of the ring during a turn (:func:`ring_snapshot`)."""
    stage: int  # its index
    k_tile: int | None  # the newest k-tile put there (None: none yet)
    state: str  # "filling", "ahead", "read", "in flight" or "free"
    full_parity: int | None  # the parity a consumer of that k-tile waits on full[stage] with (None: no k-tile)


def ring_snapshot(stages: int, load_ahead: int, turn: int) -> list[Stage]:
    """Step 16's ring during turn ``turn`` of its loop: per stage, the newest k-tile put there, and its state —
    "filling" (the producer loads k-tile ``turn``), "ahead" (loaded, not read yet), "read" (its fragments are loaded
    and its wgmma issued: k-tile ``turn − LOAD_AHEAD``), "in flight" (the k-tile before, whose wgmma may still run,
    released after this turn's wait) or "free"."""
    ladder = [(0, "filling"), (load_ahead - 1, "ahead"), (load_ahead, "read"), (load_ahead + 1, "in flight")]
    return [Stage(s, t, state, None if t is None else t // stages % 2)
            for s, (t, state) in enumerate(ring_states(stages, turn, ladder, "free"))]


STATE_COLOURS = {"filling": "tab:orange", "ahead": "tab:olive", "read": "tab:blue", "in flight": "lightsteelblue",
                 "free": "0.9"}


def ring_figure(step, k_tiles: int = 12, turn: int = 6):
    """Left: step 16's ring during one turn (which k-tile each stage holds, its state, and the barriers' parities);
    right: every k-tile's stage and the parities its waiters use, from :func:`ring_schedule`."""
    from matplotlib.figure import Figure

    from .plots import k_tile_grid, ring_stage_boxes  # here: importing the helper loads no pyplot

    c = ring_constants(step)
    stages, ahead = c["STAGES"], c["LOAD_AHEAD"]
    fig = Figure(figsize=(13, 4.4), layout="constrained")
    snap, table = fig.subplots(1, 2, width_ratios=[1, 1.6])
    snapshot = ring_snapshot(stages, ahead, turn)
    ring_stage_boxes(snap, snapshot, STATE_COLOURS,
                     f"During turn {turn}: the producer loads k-tile {turn}, every warp computes k-tile "
                     f"{turn - ahead}\n(LOAD_AHEAD = {ahead}; k-tile {turn - ahead - 1}'s wgmma may still run)")
    for e in snapshot:  # under each box its barriers' parities (0 before the stage's first fill)
        s, parity = e.stage, e.full_parity or 0
        snap.text(s + 0.45, 0.6, f"full[{s}]\nwait parity {parity}", ha="center", fontsize=7.5, va="center")
        snap.text(s + 0.45, 0.15, f"empty[{s}]\nnext refill waits\nparity {parity}", ha="center", fontsize=7.5,
                  va="center")
    k_tile_grid(table, [(e["k_tile"], e["stage"], ("tab:green", "tab:purple")[e["full_parity"]],
                         f"t={e['k_tile']}\nfill {e['fill']}\nfull: {e['full_parity']}\nempty: "
                         f"{'—' if e['empty_parity'] is None else e['empty_parity']}")
                        for e in ring_schedule(stages, k_tiles)], stages, alpha=0.25)
    table.set_xticks([])
    table.set_title("Each k-tile t: its stage t % STAGES, which fill of it (t // STAGES), the parity consumers wait "
                    "on full[s] for\n(fill % 2; green 0, purple 1) and the parity the producer waits on empty[s] "
                    "for before refilling ((fill − 1) % 2)", fontsize=9)
    for side in ("top", "right", "bottom"):
        table.spines[side].set_visible(False)
    return fig


@dataclass(frozen=True)
class SharedBudget:
    """The ring's shared memory (:func:`shared_budget`)."""
    stage: int  # bytes of one stage (a k-tile of A and B)
    stages: int  # STAGES
    ring: int  # bytes of the whole ring
    limit: int  # bytes a block may have on the SM (sm_90, less the per-block reserve)
    one_more_fits: bool  # whether the ring plus one more stage is within ``limit``


def shared_budget(step) -> SharedBudget:
    """The ring's shared memory: bytes per stage, the ring's, the SM's per-block limit, and whether one more stage
    would fit."""
    from .compiled import SM90_LIMITS

    c = ring_constants(step)
    ring = c["STAGES"] * c["STAGE_BYTES"]
    limit = SM90_LIMITS["shared_bytes"] - SM90_LIMITS["shared_reserved_per_block"]
    return SharedBudget(c["STAGE_BYTES"], c["STAGES"], ring, limit, ring + c["STAGE_BYTES"] <= limit)


# -- the model the prediction comes from -------------------------------------------------------------------------------
#: The model of experiments/warpgroup_tma_bench.py (an assumption, not a measurement): between k-tiles a warpgroup
#: waits for shared memory (≈ 30 clocks of latency), then rounds and moves its 16 fragment values (≈ 70).
SHARED_LATENCY_CLOCKS, FRAGMENT_WORK_CLOCKS = 30, 70


def tensor_ceiling_tflops(run: dict, mhz: float | None = None) -> float:
    """Every SM's tensor cores busy all the time, at ``mhz`` (default: the run's maximum SM clock)."""
    env = run["environment"]
    return env["sm_count"] * TF32_FLOP_PER_CLOCK * (mhz or env["sm_clock_max_mhz"]) * 1e6 / 1e12


@dataclass(frozen=True)
class PausePrediction:
    """The pause model at one size (:attr:`PauseModel.sizes`)."""
    step15: float  # step 15's TFLOPS in the run
    predicted: float  # step 15 × (tensor + pause) / tensor
    ceiling: float  # the tensor cores busy all the time, at step 15's median clock there (TFLOPS)


@dataclass(frozen=True)
class PauseModel:
    """Lesson 16's pause model (:func:`pause_model`)."""
    k_tile_mflop: float  # one k-tile of the block, MFLOP
    tensor_clocks: float  # clocks the tensor cores need for it at the dense TF32 rate
    pause_clocks: int  # the pause between k-tiles the model assumes (shared-memory latency + fragment work)
    gain: float  # pause / tensor: what hiding the pause would add
    sizes: dict  # size → PausePrediction, at the big squares the run has step 15 at


def pause_model(step, run: dict) -> PauseModel:
    """Lesson 16's prediction: step 15 spends a k-tile's tensor-core time plus a pause (the model's constants) with
    the tensor cores idle, since ``bar.sync`` keeps both warpgroups' pauses together; step 16 hides the pause (the
    ring lets the warpgroups drift apart, and a second fragment register set overlaps it with the wgmma in flight).
    Per big square: step 15's TFLOPS in ``run``, the prediction step 15 × (tensor + pause) / tensor, and the tensor
    ceiling at that record's median clock."""
    c = ring_constants(step)
    tensor, pause = tensor_clocks(c), SHARED_LATENCY_CLOCKS + FRAGMENT_WORK_CLOCKS
    sizes = {}
    for size in HOPPER_SIZES:
        r15 = record(run, "warpgroup_tf32", size)
        if r15:
            sizes[size] = PausePrediction(r15["tflops"], r15["tflops"] * (tensor + pause) / tensor,
                                          tensor_ceiling_tflops(run, r15.get("sm_clock_mhz_median")))
    return PauseModel(k_tile_flop(c) / 1e6, tensor, pause, pause / tensor, sizes)


# -- speed: the run that measured steps 15–17 beside both cuBLAS -------------------------------------------------------
@dataclass(frozen=True)
class Speed:
    """One kernel at one size in the run (:func:`speed_rows`)."""
    tflops: float  # its TFLOPS
    of_cublas_tf32: float  # over cuBLAS TF32's, same run
    vs_sgemm: float  # over cuBLAS SGEMM's, same run
    mhz: float | None  # its SM clock, median of the launches
    mhz_min: float | None  # … and the slowest launch's
    ms: float  # median time of a launch


def speed_rows(run: dict) -> dict:
    """{kernel: {size: :class:`Speed`}} for :data:`ROWS`."""
    out = {}
    for kernel, *_ in ROWS:
        out[kernel] = {}
        for size in common_sizes(run, in_file_order=True):
            r, tf32, sgemm = (record(run, k, size) for k in (kernel, "cublas_tf32", "cublas"))
            if r is None:
                continue
            out[kernel][size] = Speed(r["tflops"], r["tflops"] / tf32["tflops"], r["tflops"] / sgemm["tflops"],
                                      r.get("sm_clock_mhz_median"), r.get("sm_clock_mhz_min"), r["median_ms"])
    return out


def speed_table(run: dict, kernels=None) -> MarkdownTable:
    """TFLOPS, share of cuBLAS TF32 and the SM clock (median, and the slowest launch's) of each kernel at each size."""
    chosen = [row for row in ROWS if kernels is None or row[0] in kernels]
    return tflops_table(run, chosen, common_sizes(run, in_file_order=True), against="cublas_tf32",
                        ratio="{:.0%} of TF32", clock=True,
                        heading="TFLOPS (share of cuBLAS TF32, same run) · SM clock, median (slowest launch):")


def speed_figure(run: dict, kernels=None):
    """Left: TFLOPS of each kernel at each size (bars); right: share of cuBLAS TF32 at the two big squares with the
    course's target."""
    from matplotlib.figure import Figure

    rows = speed_rows(run)
    chosen = [row for row in ROWS if kernels is None or row[0] in kernels]
    size_list = common_sizes(run, in_file_order=True)
    fig = Figure(figsize=(13, 4.4), layout="constrained")
    speed, share = fig.subplots(1, 2)
    width = 0.8 / len(chosen)
    for i, (kernel, label, colour) in enumerate(chosen):
        x = np.arange(len(size_list)) + (i - (len(chosen) - 1) / 2) * width
        speed.bar(x, [q.tflops if (q := rows[kernel].get(s)) else np.nan for s in size_list], width, color=colour,
                  label=label)
        if kernel not in ("cublas", "cublas_tf32"):
            xb = np.arange(len(HOPPER_SIZES)) + (i - (len(chosen) - 1) / 2) * width
            share.bar(xb, [100 * q.of_cublas_tf32 if (q := rows[kernel].get(s)) else np.nan for s in HOPPER_SIZES],
                      width, color=colour, label=label)
    speed.set_xticks(range(len(size_list)), [size_label(s) for s in size_list])
    top = max(q.tflops for kernel, *_ in chosen for q in rows[kernel].values())
    speed.set(ylabel="TFLOPS", title="Speed", ylim=(0, 1.6 * top))  # room for the legend above the bars
    speed.legend(fontsize=7, loc="upper right")
    share.axhline(TARGET_HOPPER_TF32_PCT_OF_CUBLAS, color="k", ls="--", lw=1,
                  label=f"the course's target: {TARGET_HOPPER_TF32_PCT_OF_CUBLAS:.0f} % of cuBLAS TF32")
    share.axhline(100, color="tab:purple", lw=1)
    share.set_xticks(range(len(HOPPER_SIZES)), [size_label(s) for s in HOPPER_SIZES])
    share.set(ylabel="% of cuBLAS TF32 (same run)", title="Against cuBLAS TF32", ylim=(0, 110))
    share.legend(fontsize=7, loc="lower right")
    env = run["environment"]
    fig.suptitle(f"Steps 15–17 beside both cuBLAS, one run: {env.get('gpu')}, {str(env.get('date'))[:10]}",
                 fontsize=9)
    return fig


@dataclass(frozen=True)
class Ragged:
    """Steps 15–17 at the ragged shape (:func:`ragged_same`)."""
    size: tuple  # the shape (M, N, K)
    tflops: dict  # kernel → its TFLOPS there
    same: bool  # whether the fastest is within the tolerance of the slowest


def ragged_same(run: dict, tolerance: float = 0.02) -> Ragged | None:
    """The ragged shape (K not a multiple of 32: every tile on step 15's edge kernel): each step's TFLOPS there and
    whether steps 15–17 are within ``tolerance`` of each other; None if the run has no ragged shape."""
    ragged = [s for s in common_sizes(run, in_file_order=True) if s not in HOPPER_SIZES]
    if not ragged:
        return None
    size = ragged[0]
    got = {k: record(run, k, size)["tflops"] for k in ("warpgroup_tf32", "tma_pipeline", "warp_specialized")
           if record(run, k, size)}
    return Ragged(size, got, max(got.values()) / min(got.values()) - 1 <= tolerance)


# -- the timeline ------------------------------------------------------------------------------------------------------
def implied_tflops(timeline: dict, step_name: str, step) -> float:
    """The TFLOPS every SM would run at if each took the recorded block's period per k-tile (one block per SM, no
    tails): SMs × k-tile FLOP / (period / clock)."""
    m = timeline_medians(timeline, step_name)
    return timeline["environment"]["sm_count"] * k_tile_flop(ring_constants(step)) * m["mhz"] * 1e6 / m["period"] / 1e12


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


# -- how step 16 was found (H100 runs of experiments/warpgroup_tma_bench.py) -------------------------------------------
#: The TMA builds before step 16, each in its own run beside step 15: (file, record, what changed).
HISTORY = [(results_files.EXPERIMENT_WARPGROUP_TMA_BULK_ROWS_NVIDIA_H100, "warpgroup_tma", "B by 32 bulk row copies"),
           (results_files.EXPERIMENT_WARPGROUP_TMA_NVIDIA_H100, "warpgroup_tma",
            "B by one tensor copy; ptxas serialised the wgmma around the wait's divergent branches (C7518)"),
           (results_files.EXPERIMENT_WARPGROUP_TMA_UNIFORM_WAIT_NVIDIA_H100, "warpgroup_tma",
            "the wait as uniform branches (bra.uni)"),
           (results_files.EXPERIMENT_WARPGROUP_OVERLAP_NVIDIA_H100, "warpgroup_overlap",
            "two fragment register sets: a k-tile of wgmma in flight (step 16 but for the tile order)")]


@dataclass(frozen=True)
class BuildSpeed:
    """One build of :data:`HISTORY` at one size."""
    tflops: float  # its TFLOPS
    vs_step15: float  # over step 15's, same run


@dataclass(frozen=True)
class Build:
    """One build of :data:`HISTORY` in its run (:func:`history`)."""
    file: str  # the run's file
    what: str  # what changed
    gpu: str | None  # the run's GPU
    sizes: dict  # size → BuildSpeed, at the big squares the run has both at


def history() -> list[Build]:
    """Each build of :data:`HISTORY` at 4096³ and 8192³: its TFLOPS and × step 15 in the same run."""
    out = []
    for name, build, what in HISTORY:
        run = load_run(name)
        if run is None:
            continue
        sizes = {}
        for size in HOPPER_SIZES:
            r, r15 = record(run, build, size), record(run, "warpgroup_tf32", size)
            if r and r15:
                sizes[size] = BuildSpeed(r["tflops"], r["tflops"] / r15["tflops"])
        out.append(Build(name, what, run["environment"].get("gpu"), sizes))
    return out


def history_table() -> MarkdownTable:
    def cell(q):
        return "—" if q is None else f"{q.tflops:.1f} ({q.vs_step15:.2f}×)"

    return table([{"build": row.what, **{f"{size_label(s)}: TFLOPS (× step 15)": cell(row.sizes.get(s))
                                         for s in HOPPER_SIZES}, "file": f"`{row.file}` ({row.gpu})"}
                  for row in history()], align="lrrl")


# -- step 15's drop from 4096³ to 8192³ (deep dive 16) -----------------------------------------------------------------
@dataclass(frozen=True)
class Drop:
    """One kernel from 4096³ to 8192³ (:func:`drop`)."""
    ratio: float  # TFLOPS at 8192³ over 4096³
    mhz: tuple  # its median SM clocks at 4096³ and 8192³
    per_clock: float | None  # the ratio per clock: TFLOPS / MHz at 8192³ over 4096³ (None without both clocks)


def drop(run: dict) -> dict:
    """{kernel: :class:`Drop`} for the kernels of :data:`ROWS` at both sizes in ``run``: TFLOPS at 8192³ over 4096³,
    the two median clocks, and the ratio per clock."""
    out = {}
    for kernel, *_ in ROWS:
        small, big = (record(run, kernel, s) for s in HOPPER_SIZES)
        if small and big:
            mhz = (small.get("sm_clock_mhz_median"), big.get("sm_clock_mhz_median"))
            ratio = big["tflops"] / small["tflops"]
            out[kernel] = Drop(ratio, mhz, ratio * mhz[0] / mhz[1] if all(mhz) else None)
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


@dataclass(frozen=True)
class WaveTraffic:
    """The DRAM model of one wave (:func:`wave_traffic`)."""
    a_panels: int  # A panels (bm × K floats) the wave's tiles touch
    b_panels: int  # B panels (K × bn)
    mb: float  # MB they read
    mb_per_gflop: float  # MB per GFLOP of the wave's work


def wave_traffic(size: int, group_m: int, sms: int, bm: int = 256, bn: int = 128) -> WaveTraffic:
    """The DRAM model of experiments/warpgroup_order_bench.py: one wave's tiles read each A panel (bm × K floats) and
    B panel (K × bn) they touch once, and nothing survives in L2 between waves. The wave's panels, its MB, and MB per
    GFLOP of the wave's work."""
    tiles = first_wave_tiles(size, group_m, sms, bm, bn)
    rows, cols = len({r for r, _ in tiles}), len({c for _, c in tiles})
    mb = (rows * bm + cols * bn) * size * 4 / 1e6
    gflop = 2 * len(tiles) * bm * bn * size / 1e9
    return WaveTraffic(rows, cols, mb, mb / gflop)


def order_table(order_run: dict) -> MarkdownTable:
    """Step 16's kernel in row-major order and in groups of 4, 8, 16 tile-rows beside step 15 and cuBLAS TF32:
    TFLOPS at both squares and 8192³ over 4096³."""
    names = [("warpgroup_tf32", "step 15"), ("overlap_group1", "step 16's kernel, row-major"),
             ("overlap_group4", "… groups of 4"), ("overlap_group8", "… groups of 8 (step 16)"),
             ("overlap_group16", "… groups of 16"), ("cublas_tf32", "cuBLAS TF32")]
    got = {name: [record(order_run, name, s) for s in HOPPER_SIZES] for name, _ in names}
    return tflops_table(order_run, [row for row in names if None not in got[row[0]]], HOPPER_SIZES, align="lrrr",
                        more=lambda name: {"8192³ / 4096³": f"{got[name][1]['tflops'] / got[name][0]['tflops']:.3f}"})


@dataclass(frozen=True)
class OrderGain:
    """What grouping by 8 bought (:func:`order_gain`)."""
    gain: dict  # size → grouped TFLOPS over row-major
    drop_row_major: float  # 1 − 8192³ / 4096³ TFLOPS, row-major
    drop_grouped: float  # the same, grouped by 8
    share_recovered: float | None  # the share of the row-major drop grouping makes up (None: no drop)


def order_gain(order_run: dict) -> OrderGain:
    """What grouping by 8 bought at each square (× row-major), and the share of step 15's drop it makes up at
    8192³ (the gain over the row-major drop's size)."""
    out = {}
    for s in HOPPER_SIZES:
        out[s] = record(order_run, "overlap_group8", s)["tflops"] / record(order_run, "overlap_group1", s)["tflops"]
    row = [record(order_run, "overlap_group1", s)["tflops"] for s in HOPPER_SIZES]
    group = [record(order_run, "overlap_group8", s)["tflops"] for s in HOPPER_SIZES]
    lost_row = 1 - row[1] / row[0]
    lost_group = 1 - group[1] / group[0]
    return OrderGain(out, lost_row, lost_group, (lost_row - lost_group) / lost_row if lost_row > 0 else None)


_PROFILE_HEADER = re.compile(r"^=== size (\d+) group (\d+)\s*$", re.M)


@dataclass(frozen=True)
class ProfiledLaunch:
    """One launch under Nsight Compute (:func:`order_profile`)."""
    dram_gb: float  # DRAM bytes read, GB
    l2_hit_pct: float  # L2 sector hit rate, %
    ms: float  # the launch's duration
    ghz: float  # SM clock


def order_profile() -> dict:
    """Nsight Compute on step 16's kernel (:data:`ORDER_PROFILE`): {(size, group): :class:`ProfiledLaunch`}; {} if
    the report is not shipped."""
    text = report_text(ORDER_PROFILE)
    if text is None:
        return {}
    return {(int(head.group(1)), int(head.group(2))): ProfiledLaunch(
        metrics["dram__bytes_read.sum"] / 1e9, metrics["lts__t_sector_hit_rate.pct"],
        metrics["gpu__time_duration.sum"] * 1e3, metrics["sm__cycles_elapsed.avg.per_second"] / 1e9)
        for head, metrics in profile_sections(text, _PROFILE_HEADER)}


def profile_tflops(profile: dict) -> dict:
    """TFLOPS of each profiled launch (one launch, Nsight Compute's duration)."""
    return {key: 2 * key[0] ** 3 / (q.ms * 1e-3) / 1e12 for key, q in profile.items()}


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
