"""Lesson 9's helpers (warp tiling), shared with its deep dive (``lessons/deep_dives/09_the_last_ten_percent.py``):
the pictures, the shared-memory model of both thread maps against the profiler, the measurement split into the map
and the tiles, and the last 10 % (issue rates, the k-loop's SASS, the experiments). Numbers, tables and figures;
the words are the lessons'."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gemm_steps.harness import results_files

from . import profiles
from .display import MarkdownTable, as_step, facts, table
from .models import served
from .sweeps import config_label, same_config, sweep_records, variants_table
from .timings import headline_size, record, shipped_file, shown_path, size_label, speedups_by_size, time_ratios

WARP = range(32)  # the first warp of a block: threads 0 … 31
BANKS, PHASE = 32, 8  # a 128-bit shared load is served a quarter-warp (8 lanes, 32 words) at a time


# -- the thread → C maps, as the kernels write them ------------------------------------------------------------------
def thread_origin(c: dict, tid: int) -> tuple[int, int]:
    """(thread_row, thread_col) of thread ``tid`` in the block tile, as the kernel computes them: step 8's
    contiguous map, or step 9's (warp ``tid // 32`` owns a warp tile; its lanes an LANES_M × LANES_N grid)."""
    if "WARP_TILE_M" not in c:
        return tid // c["THREADS_N"] * c["THREAD_M"], tid % c["THREADS_N"] * c["THREAD_N"]
    warp, lane = tid // 32, tid % 32
    return (warp // c["WARPS_N"] * c["WARP_TILE_M"] + lane // c["LANES_N"] * 4,
            warp % c["WARPS_N"] * c["WARP_TILE_N"] + lane % c["LANES_N"] * 4)


def fragment_offset(c: dict, q: int, operand: str) -> int:
    """Where float4 ``q`` (0, 4, 8, …) of a fragment starts past thread_row (A) or thread_col (B): ``q`` in step 8,
    ``q // 4 * A_CHUNK_STRIDE`` (B: ``B_CHUNK_STRIDE``) in step 9."""
    return q // 4 * c[f"{operand}_CHUNK_STRIDE"] if "WARP_TILE_M" in c else q


def fragment_words(c: dict, kk: int = 0, warp=WARP) -> dict[str, list[list[range]]]:
    """The words of shared memory (stage 0) that each lane reads at k-step ``kk``: for A and B, one list per
    ``LDS.128``, each the lanes' 4 words (``a_tile[kk * BLOCK_M + row]``, ``b_tile[kk * BLOCK_N + col]``)."""
    return {op: [[range(base, base + 4) for base in (kk * c[width] + thread_origin(c, t)[axis]
                                                      + fragment_offset(c, q, op) for t in warp)]
                 for q in range(0, c[size], 4)]
            for op, width, size, axis in (("A", "BLOCK_M", "THREAD_M", 0), ("B", "BLOCK_N", "THREAD_N", 1))}


def store_words(c: dict, warp=WARP) -> dict[str, list[list[range]]]:
    """The words each lane writes into one stage per k-tile: A transposed, a float at a time (``a_tile[(a_k + q) *
    BLOCK_M + a_row]``), B as float4 (``b_tile[b_k * BLOCK_N + b_col]``)."""
    def place(t, load, per_row):  # (row, column) of thread t's float4 in its load of the tile
        v = t + load * c["THREADS"]
        return v // c[per_row], v % c[per_row] * 4

    return {"A": [[range((k + q) * c["BLOCK_M"] + row, (k + q) * c["BLOCK_M"] + row + 1)
                   for row, k in (place(t, load, "A_VECTORS_PER_ROW") for t in warp)]
                  for load in range(c["A_LOADS"]) for q in range(4)],
            "B": [[range(k * c["BLOCK_N"] + col, k * c["BLOCK_N"] + col + 4)
                   for k, col in (place(t, load, "B_VECTORS_PER_ROW") for t in warp)] for load in range(c["B_LOADS"])]}


def cost(lanes: list[range]) -> tuple[int, int]:
    """(wavefronts, the fewest possible) of one warp-wide access of ``len(lanes[0])`` words per lane."""
    width = len(lanes[0])
    return served(lanes, width), len(lanes) // (32 // width)


@dataclass(frozen=True)
class Wavefronts:
    """One kind of shared-memory access, per warp and k-step."""
    wavefronts: float  # wavefronts
    conflicts: float  # of them bank conflicts: wavefronts beyond the fewest possible


@dataclass(frozen=True)
class KStepModel:
    """The shared-memory model of one warp's k-step (:func:`k_step_model`)."""
    a_loads: Wavefronts  # A's fragment loads
    b_loads: Wavefronts  # B's fragment loads
    a_stores: Wavefronts  # A's tile stores (one k-tile's ÷ BLOCK_K)
    b_stores: Wavefronts  # B's tile stores (likewise)
    total: Wavefronts  # all four


def k_step_model(step) -> KStepModel:
    """Wavefronts and bank conflicts (wavefronts beyond the fewest possible) per warp and k-step: the fragment loads
    of one k-step, and the tile stores of one k-tile divided by its BLOCK_K k-steps."""
    c = as_step(step).config
    frags, stores = fragment_words(c), store_words(c)
    parts = []
    for accesses, per in ((frags["A"], 1), (frags["B"], 1), (stores["A"], c["BLOCK_K"]), (stores["B"], c["BLOCK_K"])):
        costs = [cost(lanes) for lanes in accesses]
        parts.append(Wavefronts(sum(w for w, _ in costs) / per, sum(w - m for w, m in costs) / per))
    total = Wavefronts(sum(p.wavefronts for p in parts), sum(p.conflicts for p in parts))
    return KStepModel(*parts, total)


def measured_per_k_step(step) -> dict | None:
    """The shipped Nsight Compute report of ``step`` (one 2048³ launch) per warp and k-step."""
    step = as_step(step)
    return profiles.per_warp_k_step(step.name, 32 * step.config["THREAD_M"] * step.config["THREAD_N"])


def model_table(steps) -> MarkdownTable:
    """The model's wavefronts and bank conflicts per warp and k-step against the profiler's, a column per step."""
    columns = {}
    for step in map(as_step, steps):
        c, m, p = step.config, k_step_model(step), measured_per_k_step(step) or {}
        columns[f"step {step.number}"] = {
            "fragment loads (A + B)": f"{c['THREAD_M'] // 4} + {c['THREAD_N'] // 4}",
            "wavefronts (model): A loads": m.a_loads.wavefronts, "… B loads": m.b_loads.wavefronts,
            "… tile stores": m.a_stores.wavefronts + m.b_stores.wavefronts,
            "**wavefronts (model)**": m.total.wavefronts, "**wavefronts (profiler)**": p.get("wavefronts"),
            "bank conflicts (model): B loads": m.b_loads.conflicts, "… A stores": m.a_stores.conflicts,
            "**bank conflicts (model)**": m.total.conflicts, "**bank conflicts (profiler)**": p.get("conflicts"),
            "FMAs per wavefront (profiler)": 32 * c["THREAD_M"] * c["THREAD_N"] / p["wavefronts"] if p else None}
    keys = next(iter(columns.values()))
    return table([{"per warp and k-step": key, **{s: col[key] for s, col in columns.items()}} for key in keys])


def model_agrees(steps) -> bool:
    """Every step's bank conflicts per warp and k-step, model against profiler, within 0.05."""
    return all((p := measured_per_k_step(s)) and abs(k_step_model(s).total.conflicts - p["conflicts"]) < 0.05
               for s in steps)


# -- the pictures --------------------------------------------------------------------------------------------------
def _box(ax, x, y, w, h, **style):
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), w, h, **{"fill": False, "lw": 0.6, "ec": "0.5", **style}))


def tiling_figure(step, lane: int = 5, warp: int = 0):
    """Block tile → warp tiles → lane ``lane``'s 4×4 sub-blocks (left); one warp tile, each 4×4 cell numbered with
    the lane that owns it (right) — drawn from the step's tile configuration."""
    from matplotlib.figure import Figure

    c = as_step(step).config
    bm, bn, tm, tn, wm, wn = (c[k] for k in ("BLOCK_M", "BLOCK_N", "THREAD_M", "THREAD_N", "WARP_TILE_M",
                                             "WARP_TILE_N"))
    warps_n, lanes_n, sa, sb, warps_m = c["WARPS_N"], c["LANES_N"], c["A_CHUNK_STRIDE"], c["B_CHUNK_STRIDE"], bm // wm
    fig = Figure(figsize=(12, 5.4), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[bn / bm, 1.5])
    _box(left, 0, 0, bn, bm, lw=1.5, ec="k")
    for w in range(warps_m * warps_n):
        r, col = w // warps_n * wm, w % warps_n * wn
        _box(left, col, r, wn, wm, fill=(w == warp), fc="tab:blue", alpha=0.25 if w == warp else 1, ec="k", lw=1)
        left.text(col + wn / 2, r + wm / 2, f"warp {w}", ha="center", va="center", fontsize=9)
    r0, c0 = warp // warps_n * wm, warp % warps_n * wn
    for i in range(tm // 4):
        for j in range(tn // 4):
            _box(left, c0 + lane % lanes_n * 4 + j * sb, r0 + lane // lanes_n * 4 + i * sa, 4, 4, fill=True,
                 fc="tab:orange", ec="k", lw=0.5)
    left.set(xlim=(-2, bn + 2), ylim=(bm + 2, -2), aspect="equal",
             title=f"Block tile {bm} × {bn}: {warps_m} × {warps_n} warp tiles of {wm} × {wn}\n"
                   f"orange: lane {lane} of warp {warp}, its {tm} × {tn} results")
    for r in range(0, wm, 4):
        for col in range(0, wn, 4):
            owner = (r % sa) // 4 * lanes_n + (col % sb) // 4
            _box(right, col, r, 4, 4, fill=True, ec="0.6", lw=0.4,
                 fc="tab:orange" if owner == lane else ("0.93" if (r // sa + col // sb) % 2 else "white"))
            right.text(col + 2, r + 2, str(owner), ha="center", va="center", fontsize=6,
                       fontweight="bold" if owner == lane else "normal")
    for r in range(0, wm + 1, sa):
        right.plot([0, wn], [r, r], color="k", lw=1)
    for col in range(0, wn + 1, sb):
        right.plot([col, col], [0, wm], color="k", lw=1)
    right.set(xlim=(-1, wn + 1), ylim=(wm + 1, -1), aspect="equal",
              title=f"Warp tile {wm} × {wn}: lanes as a {c['LANES_M']} × {lanes_n} grid of 4 × 4 cells, repeated "
                    f"{tm // 4} × {tn // 4} times,\n{sa} rows (A_CHUNK_STRIDE) and {sb} columns (B_CHUNK_STRIDE) apart")
    for ax in (left, right):
        ax.title.set_fontsize(9)
        ax.axis("off")
    return fig


def bank_figure(steps, kk: int = 0):
    """For each step (a row) and A's and B's first fragment load (a column): the bank of each word each lane of the
    first warp reads (numbered by the word's row of 32 words), coloured by quarter-warp, and the wavefronts."""
    import numpy as np
    from matplotlib.figure import Figure

    steps = [as_step(s) for s in steps]
    fig = Figure(figsize=(12, 5.2 * len(steps)), layout="constrained")
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]
    for ax_row, step in zip(np.atleast_2d(fig.subplots(len(steps), 2)), steps):
        words = fragment_words(step.config, kk)
        for ax, operand in zip(ax_row, ("A", "B")):
            lanes = words[operand][0]
            for lane, read in enumerate(lanes):
                for word in read:
                    _box(ax, word % BANKS, lane, 1, 1, fill=True, fc=colours[lane // PHASE], alpha=0.6, ec="w")
                    ax.text(word % BANKS + 0.5, lane + 0.5, str(word // BANKS), ha="center", va="center", fontsize=5.5)
            for p in range(0, 32, PHASE):
                if p:
                    ax.axhline(p, color="k", lw=0.6)
                n = served(lanes[p:p + PHASE], 4)
                ax.text(32.5, p + PHASE / 2, f"{n} wavefront{'s' * (n > 1)}", va="center", fontsize=8,
                        color=colours[p // PHASE])
            ax.set(xlim=(0, 38), ylim=(32, 0), xlabel="bank (word address mod 32)", ylabel="lane",
                   xticks=range(0, 33, 4), yticks=range(0, 33, 4),
                   title=f"Step {step.number} ({step.name}), {operand}'s first LDS.128 at kk = {kk}: "
                         f"{len({tuple(r) for r in lanes})} distinct float4\n"
                         "{} wavefronts (fewest possible: {})".format(*cost(lanes)))
            ax.title.set_fontsize(9)
    fig.suptitle("The bank of each word each lane reads (in a cell: the word's row, address // 32), coloured by "
                 "quarter-warp", fontsize=9)
    return fig


def tile_table(before, after) -> MarkdownTable:
    """Both steps' tile constants, and what a block loads from L2 or memory per FMA."""
    steps = [as_step(before), as_step(after)]
    keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "THREADS", "MIN_BLOCKS_PER_SM", "WARP_TILE_M",
            "WARP_TILE_N", "A_CHUNK_STRIDE", "B_CHUNK_STRIDE"]
    rows = [{"constant": f"`{key}`", **{f"step {s.number}": s.config.get(key) for s in steps}} for key in keys]
    rows.append({"constant": "global (or L2) loads per FMA, (BLOCK_M + BLOCK_N) / (BLOCK_M · BLOCK_N)",
                 **{f"step {s.number}": f"{(s.config['BLOCK_M'] + s.config['BLOCK_N']) / (s.config['BLOCK_M'] * s.config['BLOCK_N']):.4f}"
                    for s in steps}})
    return table(rows)


# -- the measurement ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """Step 9 against step 8 (:func:`verdict`)."""
    numbers: dict  # label → number at the headline size, and the speedups by size, as ``table`` shows them
    table: MarkdownTable  # ``numbers``
    outcome: str  # "a few percent" (the prediction: 1.0–1.1×), "more" or "none"


def verdict(results: dict, before, after) -> Verdict:
    """Step 9 against step 8 at the headline size, and the speedup at every common size. ``outcome``: ``"a few
    percent"`` (the prediction: 1.0–1.1×), ``"more"`` or ``"none"``."""
    before, after = as_step(before), as_step(after)
    size = headline_size(results, [before.name, after.name])
    new = record(results, after.name, size)
    speedup = record(results, before.name, size)["median_ms"] / new["median_ms"]
    numbers = {"size": size_label(size), "TFLOPS": new["tflops"], "% of cuBLAS": new["pct_of_cublas"],
               f"step {after.number} / step {before.number}": speedup,
               "by size": speedups_by_size(results, before.name, after.name)}
    return Verdict(numbers, facts(numbers),
                   "a few percent" if 1.0 < speedup < 1.1 else "more" if speedup >= 1.1 else "none")


@dataclass(frozen=True)
class MapAndTiles:
    """The map and the tiles separated by the tuning sweeps (:func:`map_and_tiles`)."""
    best8: dict  # step 8's sweep: the record the rule picks
    best9: dict  # step 9's sweep: likewise
    same_tiles: dict | None  # step 9's sweep: step 9's map with step 8's chosen tiles (None if not swept)
    table: MarkdownTable  # the four kernels: tiles, ms, % of cuBLAS in their run
    map_alone: float | None = None  # step 8 as tuned ÷ step 9's map on its tiles (time ratio)
    tiles_alone: float | None = None  # step 9's map on step 8's tiles ÷ step 9 as tuned (time ratio)
    numbers: MarkdownTable | None = None  # both ratios, whether the map's is within the noise, cuBLAS in each run


def map_and_tiles(sweep: dict | None, step8_sweep: dict | None) -> MapAndTiles | None:
    """From the two tuning sweeps: step 8 as tuned, step 9's map with step 8's tiles, step 9 as tuned, step 9's
    tiles with step 8's map (``table``: ms, % of cuBLAS in its run); ``map_alone`` (and whether it is inside
    ``tuning.NOISE``) and ``tiles_alone``, time ratios; cuBLAS in each run (``numbers``, a table of them)."""
    if not (sweep and step8_sweep):
        return None
    from gemm_steps.harness import tuning

    nine, eight = sweep_records(sweep), sweep_records(step8_sweep)
    best9, best8 = tuning.choose_best(nine), tuning.choose_best(eight)
    same_tiles = next((r for r in nine if same_config(r["config"], best8["config"])), None)
    big_contiguous = next((r for r in eight if same_config(r["config"], best9["config"])), None)
    rows = [{"kernel": what, "tiles": config_label(r["config"]), "ms": r["median_ms"],
             "% of cuBLAS (its run)": r["pct_of_cublas"]}
            for what, r in (("step 8 as tuned", best8), ("step 9's map, step 8's tiles", same_tiles),
                            ("step 9 as tuned", best9), ("step 9's tiles, step 8's contiguous map", big_contiguous)) if r]
    shown = table(rows, {"ms": "{:.3f}", "% of cuBLAS (its run)": "{:.1f} %"})
    if not same_tiles:
        return MapAndTiles(best8, best9, same_tiles, shown)
    map_alone, tiles_alone = best8["median_ms"] / same_tiles["median_ms"], same_tiles["median_ms"] / best9["median_ms"]
    numbers = {"the map alone": map_alone, f"within the noise ({tuning.NOISE:.0%})": abs(map_alone - 1) < tuning.NOISE,
               "the tiles alone": tiles_alone, "cuBLAS (ms), step 8's run / step 9's": " / ".join(
                   f"{next(r['median_ms'] for r in run['records'] if r['step'] == 'cublas'):.3f}"
                   for run in (step8_sweep, sweep))}
    return MapAndTiles(best8, best9, same_tiles, shown, map_alone, tiles_alone, facts(numbers))


# -- the last 10 % ------------------------------------------------------------------------------------------------
H200_NCU = results_files.NCU_STEP9_PIPELINED_CUBLAS_NVIDIA_H200_TXT


@dataclass(frozen=True)
class ReportedKernel:
    """One kernel of the H200 report (:func:`ncu_h200_kernels`)."""
    kernel: str  # its name, without the module
    instructions: float  # warp-instructions executed
    issue: float  # warp-instructions issued per cycle per scheduler
    registers: int  # per thread, as the driver's JIT (or the library) compiled it
    clock: float  # SM clock (cycles per second)
    path: Path  # the report


def ncu_h200_kernels() -> list[ReportedKernel]:
    """One entry per kernel in the H200 report of step 9, step 9 pipelined and cuBLAS (one 4096³ launch each)."""
    path = shipped_file(H200_NCU)
    if path is None:
        return []
    out = []
    for kernel, part in profiles.kernel_sections(path.read_text()):
        m = profiles.report_metrics(part)
        out.append(ReportedKernel(kernel.split("::")[-1], m["smsp__inst_executed.sum"], m["Issued Warp Per Scheduler"],
                                  int(m["Registers Per Thread"]), m["sm__cycles_elapsed.avg.per_second"], path))
    return out


def issue_table() -> MarkdownTable | None:
    """Issued warp-instructions per cycle per scheduler (1 is the most) of step 9 and cuBLAS, from the shipped
    Nsight Compute reports: the H100 step reports (2048³) and the H200 report (4096³), where shipped; cuBLAS's
    kernel and warp-instructions against step 9's. ``None`` if no report is shipped."""
    rows, nine, cublas = [], profiles.load("warp_tiling"), profiles.load("cublas")
    if nine and cublas:
        rows.append(("H100, 2048³", nine.value("Issued Warp Per Scheduler"), nine.value("smsp__inst_executed.sum"),
                     cublas.value("Issued Warp Per Scheduler"), cublas.value("smsp__inst_executed.sum"),
                     cublas.kernel, nine.path.parent))
    kernels = ncu_h200_kernels()
    if kernels:
        ours, theirs = (next(k for k in kernels if key in k.kernel) for key in ("shipped", "gemm"))
        rows.append(("H200, 4096³", ours.issue, ours.instructions, theirs.issue, theirs.instructions, theirs.kernel,
                     ours.path))
    return table([{"GPU, size": gpu, "step 9": issue, "cuBLAS": their_issue,
                   "cuBLAS's kernel": f"`{kernel.replace('void ', '')[:60]}`",
                   "cuBLAS's warp-instructions / step 9's": theirs / ours, "report": f"`{shown_path(path)}`"}
                  for gpu, issue, ours, their_issue, theirs, kernel, path in rows],
                 {"step 9": "**{:.2f}**", "cuBLAS": "**{:.2f}**", "cuBLAS's warp-instructions / step 9's": "{:.3f}"}
                 ) if rows else None


def ncu_h200_table(sass: dict) -> MarkdownTable | None:
    """The H200 report's kernels: warp-instructions (and against the shipped kernel's), issue rate, registers as they
    ran (the driver's JIT) and as ``ptxas`` here gives them (:func:`k_loop_sass`), SM clock."""
    kernels = ncu_h200_kernels()
    if not kernels:
        return None
    shipped = next(k for k in kernels if "shipped" in k.kernel).instructions
    here = {k.kernel: sass["kernels"].get(k.kernel.removesuffix("_fast_kernel").replace("_", " "), {})
            for k in kernels}
    return table([{"kernel": f"`{k.kernel}`", "instructions (warp-level)": int(k.instructions),
                   "against the shipped kernel's": k.instructions / shipped - 1,
                   "issued per cycle per scheduler": k.issue, "registers (driver JIT)": k.registers,
                   f"registers ({sass['tools']['ptxas']} here)": here[k.kernel].get("registers"),
                   "SM clock (GHz)": k.clock} for k in kernels], {"against the shipped kernel's": "{:+.1%}"})


# -- the k-loop in SASS ------------------------------------------------------------------------------------------------
#: Step 9's k-tile loop and its experiments' variants in SASS for sm_90, compiled on a CPU by
#: ``python -m experiments.k_loop_sass`` (ptxas + nvdisasm); tests/test_lesson_09.py recomputes the shipped row.
SASS_FILE = results_files.EXPERIMENT_K_LOOP_SASS_SM90


def k_loop_sass() -> dict | None:
    """The shipped :data:`SASS_FILE` (``{"tools", "date", "kernels": {label: {"registers", "instructions", "ffma",
    "reuse"}}}``, with ``path``), or ``None`` (said) if it is missing."""
    import json

    path = shipped_file(SASS_FILE)
    return None if path is None else {**json.loads(path.read_text()), "path": shown_path(path)}


def sass_table(sass: dict, labels) -> MarkdownTable:
    """Registers and the k-tile loop's instructions (and their change from the first kernel's) of some of
    :func:`k_loop_sass`'s kernels."""
    first = sass["kernels"][labels[0]]["instructions"]
    return table([{"kernel": label, "registers": k["registers"], "instructions in the k-tile loop": k["instructions"],
                   "change": k["instructions"] / first - 1, "FFMAs": k["ffma"],
                   "FFMAs with a `.reuse` operand": k["reuse"]} for label in labels for k in [sass["kernels"][label]]],
                 {"change": "{:+.1%}"})


@dataclass(frozen=True)
class Findings:
    """Named numbers and the table that shows them."""
    numbers: dict  # label → number; the labels are the table's
    table: MarkdownTable  # ``numbers``


def reuse_counts(sass: dict, step) -> Findings:
    """Serpentine against row order: the most extra ``.reuse`` FFMAs the row ends allow per k-tile (one per row end
    per k-step; as a share of the FFMAs), and how many ``ptxas`` marked."""
    c = as_step(step).config
    rows, serp = sass["kernels"]["row_order"], sass["kernels"]["step9 shipped"]
    bound = (c["THREAD_M"] - 1) * c["BLOCK_K"]
    out = {"FFMAs per k-tile": serp["ffma"], "extra .reuse at most (row ends)": bound,
           "at most, as a share of the FFMAs": bound / serp["ffma"],
           "extra .reuse found": serp["reuse"] - rows["reuse"]}
    return Findings(out, facts(out))


def pipelining_prediction(sass: dict, step) -> Findings:
    """What register double buffering could hide: one shared-load latency per k-tile (about 30 cycles, the figure
    ``experiments/pipelining.py``'s prediction used) against the cycles one scheduler spends on a k-tile (its warps'
    instructions at the measured issue rate: the H200's where shipped, else the H100's)."""
    c = as_step(step).config
    rate = issue_table().rows[-1]
    warps = c["THREADS"] // 32 // 4  # 4 schedulers per SM, one block per SM
    instructions = sass["kernels"]["step9 shipped"]["instructions"]
    cycles = warps * instructions / rate["step 9"]
    out = {"warps per scheduler": warps, "instructions per k-tile (SASS)": instructions,
           f"issue rate ({rate['GPU, size']}, Nsight Compute)": rate["step 9"], "cycles per k-tile": cycles,
           "30 cycles of latency, as a share": 30 / cycles}
    return Findings(out, facts(out))


@dataclass(frozen=True)
class CodeShapes:
    """The equivalent k-column shapes against the shipped kernel (:func:`code_shapes`)."""
    table: MarkdownTable  # every shape against the shipped kernel, by size
    gains: dict  # shape → its gains over the shipped kernel, one per size (0.01: 1 % faster)
    best: str  # the shape whose smaller gain is largest
    adopt: bool  # ``best`` beats the shipped kernel by over 1 % at every size


def code_shapes(experiment: dict) -> CodeShapes:
    """The equivalent k-column shapes against the shipped kernel: the table, each shape's gains by size, the best
    (by its smaller gain) and ``adopt``: it beats the shipped kernel by over 1 % at every size."""
    names = [r["step"] for r in experiment["records"]
             if "error" not in r and r["step"] not in ("cublas", "step9 shipped", "step9 shipped again")]
    gains = {name: [r - 1 for r in ratios.values()]
             for name, ratios in time_ratios(experiment, "step9 shipped", dict.fromkeys(names)).items()}
    best = max(gains, key=lambda name: min(gains[name]))
    return CodeShapes(variants_table(experiment, "k-column shape", base="step9 shipped"), gains, best,
                      min(gains[best]) > 0.01)
