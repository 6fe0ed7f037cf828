"""Lesson 11's helpers (stream-K), shared with its deep dives (``lessons/deep_dives/11_*.py``): the schedule in Python
(:func:`shares` … :func:`waits`), the shipped scheduling sweep read into one row per shape (:func:`load_sweep`) and
the tables, numbers and figure made from it, the fixup's PTX, determinism on the simulator, and the course against
its target (:data:`~gemm_steps.course.targets.TARGET_SGEMM_PCT`). Numbers, tables, figures: the words are the lessons'.
"""

from __future__ import annotations

import math
import re
from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from gemm_steps.steps.stream_k import WAVE_EFFICIENCY_FOR_DATA_PARALLEL, stream_k_split
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.harness import results_files

from . import compiled as _compiled
from .display import MarkdownTable, facts, table
from .targets import TARGET_SGEMM_PCT
from .timings import load_shipped, record, size_label


# -- the schedule, in Python -------------------------------------------------------------------------------------
def shares(tiles, k_tiles, blocks, split=stream_k_split, backwards=True):
    """Each block's work, in the order it does it: (tile, first k-iteration, k-iterations) — as the kernel computes
    it: the data-parallel tiles dealt round-robin, then an equal share of the stream-K tiles' k-iterations, walked
    from its end back to its start (``backwards=False``: the first version, which walked it forwards)."""
    dp, sk = split(tiles, blocks)
    iterations = sk * k_tiles
    work = []
    for block in range(blocks):
        whole = [(tile, 0, k_tiles) for tile in range(block, dp, blocks)]
        begin, end = block * iterations // blocks, (block + 1) * iterations // blocks
        pieces, i = [], begin
        while i < end:
            tile_start = i // k_tiles * k_tiles
            stop = min(tile_start + k_tiles, end)
            pieces.append((dp + i // k_tiles, i - tile_start, stop - i))
            i = stop
        work.append(whole + (pieces[::-1] if backwards else pieces))
    return work


def one_tile_per_block(tiles, blocks):
    """The split of a tile-per-block schedule (steps 9 and 10): every tile data-parallel."""
    return tiles, 0


def picture(tiles, k_tiles, blocks, split=stream_k_split):
    """Tiles × k-iterations, each cell the block that computes it."""
    dp, _ = split(tiles, blocks)
    cells = [["."] * k_tiles for _ in range(tiles)]
    for block, work in enumerate(shares(tiles, k_tiles, blocks, split)):
        for tile, first, count in work:
            cells[tile][first:first + count] = [str(block)] * count
    lines = [f"{'':8}k-iteration →"]
    for tile, row in enumerate(cells):
        helpers = sorted(set(row) - {row[-1]})
        note = ("data-parallel" if tile < dp else "stream-K") + (
            f": block {row[-1]} finishes it and adds the partial sums of block {', '.join(helpers)}" if helpers else "")
        lines.append(f"tile {tile:<2} {' '.join(row)}   {note}")
    return "\n".join(lines)


def timelines(tiles, k_tiles, blocks, split=stream_k_split, backwards=True):
    """Per block: [(tile, k-iterations computed, time spent waiting before the fixup)], in order; and the time at
    which the last block finishes (units: one k-iteration)."""
    done = {}  # tile → times at which its pieces were finished
    lines, finish = [], 0
    for work in shares(tiles, k_tiles, blocks, split, backwards):  # lower blocks first: nobody waits on a higher one
        t, line = 0, []
        for tile, first, count in work:
            t += count
            waited = 0
            if first > 0 and first + count == k_tiles:  # the owner of a split tile: wait for the other pieces
                waited = max(0, max(done[tile]) - t)
                t += waited
            done.setdefault(tile, []).append(t)
            line.append((tile, count, waited))
        lines.append(line)
        finish = max(finish, t)
    return lines, finish


def draw(tiles, k_tiles, blocks, split=stream_k_split, backwards=True):
    """Each block's timeline: the tile it computes, one character per k-iteration; · while it waits."""
    lines, finish = timelines(tiles, k_tiles, blocks, split, backwards)
    rows = [f"block {b}  " + "".join(str(tile) * count + "·" * waited for tile, count, waited in line)
            for b, line in enumerate(lines)]
    return "\n".join(rows) + f"\n          done after {finish} k-iterations"


def first_rule(tiles, blocks):
    """The hybrid rule of the first version (commit 2600508): data-parallel only when tiles fill whole waves."""
    if tiles % blocks == 0:
        return tiles, 0
    if tiles < 2 * blocks:
        return 0, tiles
    data_parallel = (tiles // blocks - 1) * blocks
    return data_parallel, tiles - data_parallel



@dataclass(frozen=True)
class Waits:
    """Who waits for whom in one launch (:func:`waits`)."""
    lower_only: bool  # every wait is for a lower-numbered block
    flags_per_block: int  # the most flags one block raises
    waited_before_flag: list  # the blocks that wait before they raise their flag
    chain: int  # the longest chain of waits (1: an owner waits only for blocks that never wait first)


def waits(tiles, k_tiles, blocks, split=stream_k_split, backwards=True) -> Waits:
    """Who waits for whom in one launch, read off :func:`shares` with the kernel's rules: a piece that stops before
    its tile's last k-iteration raises its block's flag; a piece that ends the tile but does not start it waits for
    the flags of the other blocks in the tile. ``lower_only``: every wait is for a lower-numbered block;
    ``flags_per_block``: the most flags one block raises (the kernel has one workspace slot per block);
    ``waited_before_flag``: blocks that wait before they raise their flag; ``chain``: the longest chain of blocks each
    waiting for the previous one's flag, in waits (1 = an owner waits only for blocks that never wait first)."""
    work = shares(tiles, k_tiles, blocks, split, backwards)
    holders = {}  # tile → blocks that computed a piece of it without finishing it
    for block, pieces in enumerate(work):
        for tile, first, count in pieces:
            if first + count < k_tiles:
                holders.setdefault(tile, []).append(block)
    lower_only, flags, waited_first, depth = True, 0, [], {}  # depth: of the chain before a block's flag
    for block, pieces in enumerate(work):  # lower blocks first: their depth is known when a higher one needs it
        waited_on, raised, depth[block] = [], 0, 0
        for tile, first, count in pieces:
            if first + count < k_tiles:  # raises the flag, after whatever it waited for so far
                raised += 1
                depth[block] = max((depth.get(b, 0) + 1 for b in waited_on), default=0)
                waited_first += [block] if waited_on else []
            elif first > 0:  # the owner of a split tile
                lower_only &= all(b < block for b in holders.get(tile, []))
                waited_on += holders.get(tile, [])
        flags = max(flags, raised)
    chain = max((1 + max((depth[b] for b in holders.get(tile, [])), default=-1) for pieces in work
                 for tile, first, count in pieces if first > 0 and first + count == k_tiles), default=0)
    return Waits(lower_only, flags, waited_first, chain)


# -- the shipped scheduling sweep ------------------------------------------------------------------------------------
#: The sweep's variants: row key → record name.
VARIANTS = {"dp": "data_parallel (step 9)", "p": "persistent (step 10)", "sk": "stream_k hybrid (step 11)",
            "kernel": "stream_k kernel, hybrid split", "all": "stream_k all", "cuBLAS": "cublas"}
#: The H200 scheduling sweep: its GPU, tiles, grid (G blocks) and one row per shape (:func:`load_sweep`).
Sweep = namedtuple("Sweep", "env BM BN BK G rows")


def resident_grid(compiled: dict, sm_count: int) -> int:
    """G = SMs × the stream-K kernel's blocks per SM (its compiled registers and shared memory, NVIDIA's rules)."""
    kernel = compiled["stream_k_fast"]
    return sm_count * _compiled.blocks_per_sm(kernel["registers"], _compiled.threads_per_block("stream_k"),
                                              kernel["shared_bytes"])["blocks"]


def load_sweep(compiled: dict) -> Sweep | None:
    """The shipped sweep (saying where it comes from) on G = :func:`resident_grid` blocks and, per shape, fewest
    tiles first: tiles and k-tiles, tiles ÷ G (``x``), the share of block-slots busy one tile per block (``busy``),
    the hybrid split, the balance-only prediction, and each variant's record (:data:`VARIANTS`; ``None`` if none)."""
    data = load_shipped(results_files.EXPERIMENT_SCHEDULING_NVIDIA_H200, "`experiments/scheduling.py`: step 9's data-parallel "
                        "grid, step 10, step 11, step 11's kernel without the fallback to step 10, and everything "
                        "stream-K, all with the same tiles, plus cuBLAS, in one run")
    if not data:
        return None
    BM, BN, BK = (data["tile_config"][key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    G, rows = resident_grid(compiled, data["environment"]["sm_count"]), []
    for shape in sorted({(r["M"], r["N"], r["K"]) for r in data["records"]},
                        key=lambda s: ((s[0] // BM) * (s[1] // BN), s[2])):
        tiles, k_tiles = (shape[0] // BM) * (shape[1] // BN), shape[2] // BK
        waves, (dp_tiles, sk_tiles) = math.ceil(tiles / G), stream_k_split(tiles, G)
        rows.append({"shape": shape, "tiles": tiles, "k_tiles": k_tiles, "x": tiles / G, "busy": tiles / (waves * G),
                     "dp_tiles": dp_tiles, "sk_tiles": sk_tiles,
                     "predicted": waves * k_tiles / timelines(tiles, k_tiles, G)[1],
                     **{key: record(data, name, shape) for key, name in VARIANTS.items()}})
    return Sweep(data["environment"], BM, BN, BK, G, rows)


def _split(row, otherwise: str) -> str:
    return f"{row['dp_tiles']} + {row['sk_tiles']}" if row["sk_tiles"] else otherwise


def _tflops(row, key) -> str:
    return f"{row[key]['tflops']:.1f}" if row[key] else "—"


def split_table(s: Sweep):
    """The hybrid rule's decision for every shape of the sweep, with the balance-only prediction."""
    return table([{f"M×N×K, {s.BM}×{s.BN} tiles, G = {s.G}": size_label(r["shape"]), "tiles": str(r["tiles"]),
                   "tiles ÷ SMs": f"{r['x']:.2f}", "block-slots busy, one tile per block": f"{r['busy']:.0%}",
                   "split: data-parallel + stream-K tiles": _split(r, "all data-parallel: runs step 10"),
                   "predicted speedup (balance only)": f"{r['predicted']:.2f}×"} for r in s.rows])


@dataclass(frozen=True)
class Findings:
    """Named numbers and the table that shows them."""
    numbers: dict  # label → number; the labels are the table's
    table: MarkdownTable  # ``numbers`` (with another table before them, where a function says so)


def prediction(s: Sweep) -> Findings:
    """From the schedule alone (no measured time enters it): for each shape just past one wave that the rule
    splits, the block-slots a tile-per-block schedule leaves idle and the balance-only bound; and the fixup's
    traffic: a partial tile's bytes against one k-iteration's loads of A and B; the rule's threshold."""
    out = {}
    for r in (row for row in s.rows if 1 < row["x"] < 1.5 and row["sk_tiles"]):
        slots = math.ceil(r["x"]) * s.G
        out[f"{size_label(r['shape'])}: idle block-slots"] = f"{slots - r['tiles']} of {slots} ({1 - r['busy']:.0%})"
        out[f"{size_label(r['shape'])}: balancing can buy up to"] = f"{r['predicted']:.2f}×"
    partial, per_iteration = s.BM * s.BN * 4, (s.BM + s.BN) * s.BK * 4
    out.update({"threshold: split below this share busy": WAVE_EFFICIENCY_FOR_DATA_PARALLEL,
                "a partial tile (KiB)": partial // 1024, "one k-iteration's loads of A and B (KiB)": per_iteration // 1024,
                "a partial tile, in k-iterations' loads": partial / per_iteration})
    return Findings(out, facts(out))


def measurement_table(s: Sweep):
    """Every shape of the sweep: steps 9, 10, 11 and cuBLAS in TFLOPS, step 11 ÷ step 9, % of cuBLAS."""
    return table([{"M×N×K": size_label(r["shape"]), "tiles ÷ SMs": f"{r['x']:.2f}",
                   "split (DP + SK tiles)": _split(r, "step 10"), "predicted": f"{r['predicted']:.2f}×",
                   "step 9 TFLOPS": _tflops(r, "dp"), "step 10": _tflops(r, "p"), "step 11": f"**{_tflops(r, 'sk')}**",
                   "cuBLAS": _tflops(r, "cuBLAS"), "step 11 ÷ step 9": f"**{speedup(r):.2f}×**",
                   "step 9, % of cuBLAS": f"{r['dp']['pct_of_cublas']:.0f} %",
                   "step 11, % of cuBLAS": f"{r['sk']['pct_of_cublas']:.0f} %"} for r in s.rows])


def figure(s: Sweep):
    """Left: the wave-boundary shapes (K = 4096) against tiles ÷ SMs, with both balance-only models; right: every
    shape's % of cuBLAS."""
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    rows, G = s.rows, s.G
    fig = Figure(figsize=(12, 5.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    styles = {"dp": ("o", "tab:blue", "step 9 (one tile per block)"), "p": ("s", "tab:orange", "step 10 (persistent)"),
              "sk": ("D", "tab:red", "step 11 (stream-K)"), "cuBLAS": ("x", "k", "cuBLAS")}
    family_k = 4096  # the wave-boundary shapes all have K = 4096, so a tile takes the same time in each
    family = [row for row in rows if row["shape"][2] == family_k and row["shape"][0] != row["shape"][1]]
    for key, (marker, color, label) in styles.items():
        left.scatter([r["x"] for r in family if r[key]], [r[key]["tflops"] for r in family if r[key]], marker=marker,
                     color=color, label=label, s=40, zorder=3)
    anchor = next((r for r in family if r["tiles"] == G and r["dp"]), None)
    if anchor:  # both models, anchored at the shape that is exactly one full wave
        k_tiles = family_k // s.BK
        counts = range(max(1, G // 4), int(max(r["tiles"] for r in family) * 1.1))
        full_wave = anchor["dp"]["tflops"]
        left.plot([t / G for t in counts], [full_wave * (t / G) / math.ceil(t / G) for t in counts],
                  color="tab:blue", alpha=0.4, lw=1, label="model: one tile per block, T/⌈T/G⌉")
        left.plot([t / G for t in counts],
                  [full_wave * t * k_tiles / G / timelines(t, k_tiles, G)[1] for t in counts], color="tab:red",
                  alpha=0.4, lw=1, label="model: step 11's schedule, balance only")
    left.set(xlabel="tiles ÷ SMs", ylabel="TFLOPS", ylim=(0, None), title=f"Wave-boundary shapes, K = {family_k}")
    for key, (marker, color, label) in styles.items():
        if key != "cuBLAS":
            right.scatter([r["x"] for r in rows if r[key]], [r[key]["pct_of_cublas"] for r in rows if r[key]],
                          marker=marker, color=color, label=label, s=40, zorder=3)
    for row in rows:
        if row["shape"][2] > 4096 or row["shape"][0] == row["shape"][1] == row["shape"][2] != 2048:
            right.annotate(size_label(row["shape"]), (row["x"], row["sk"]["pct_of_cublas"]), fontsize=7,
                           xytext=(4, 4), textcoords="offset points")
    right.set_xscale("log", base=2)
    ticks = [2.0**e for e in range(-4, 1 + math.ceil(math.log2(max(r["x"] for r in rows))))]
    right.set_xticks(ticks, [f"{t:g}" for t in ticks])
    right.minorticks_off()
    right.set(xlabel="tiles ÷ SMs (log scale)", ylabel="% of cuBLAS", ylim=(0, 105),
              title="Every shape of the sweep (labelled: squares and deep shapes)")
    for ax in (left, right):
        ax.title.set_fontsize(10)
        ax.grid(True, alpha=0.3)
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle(f"Step 11 against steps 9 and 10, {s.BM}×{s.BN} tiles, G = {G} blocks\n{short_label(s.env)}",
                 fontsize=10)
    return fig



def speedup(row) -> float:
    """Step 11's speedup over step 9's data-parallel grid on one shape."""
    return row["dp"]["median_ms"] / row["sk"]["median_ms"]


def groups(s: Sweep) -> dict:
    """The shapes where stream-K ran, in three families: wave-boundary (K = 4096, not square), deep (K > 4096) and
    small squares."""
    split_rows = [row for row in s.rows if row["sk_tiles"] and row["sk"] and row["dp"]]
    return {"boundary": [row for row in split_rows if row["shape"][2] == 4096 and row["shape"][0] != row["shape"][1]],
            "deep": [row for row in split_rows if row["shape"][2] > 4096],
            "small": [row for row in split_rows if row["shape"][0] == row["shape"][1] == row["shape"][2]]}


def _span(values, fmt="{:.2f}×"):
    return f"{fmt.format(min(values))}–{fmt.format(max(values))}"


def _share_of_prediction(group):
    return [speedup(r) / r["predicted"] for r in group]


def full_wave_rows(s: Sweep) -> list:
    """Shapes where the rule splits nothing and the sweep timed step 10, step 11 and step 11's kernel without the
    fallback."""
    return [row for row in s.rows if not row["sk_tiles"] and row["kernel"] and row["p"] and row["sk"]]


def kernel_cost(s: Sweep) -> dict:
    """Step 11's kernel with nothing to split (no fallback), its time ÷ step 10's, per shape."""
    return {size_label(r["shape"]): r["kernel"]["median_ms"] / r["p"]["median_ms"] for r in full_wave_rows(s)}


def where_it_ran(s: Sweep):
    """Shape by shape where stream-K ran, by family: speedup over step 9, the prediction and the share of it
    reached, % of cuBLAS before and after, time."""
    return table([{"family": family, "shape": size_label(r["shape"]), "waves": f"{r['x']:.2f}",
                   "step 11 ÷ step 9": f"**{speedup(r):.2f}×**", "predicted up to": f"{r['predicted']:.2f}×",
                   "share of it": f"{speedup(r) / r['predicted']:.0%}",
                   "% of cuBLAS, step 9 → 11": f"{r['dp']['pct_of_cublas']:.0f} → **{r['sk']['pct_of_cublas']:.0f}**",
                   "ms": f"{r['sk']['median_ms']:.3f}"} for family, group in groups(s).items() for r in group])


def verdict(s: Sweep) -> Findings | None:
    """The sweep against the prediction, by family: speedups over step 9, % of cuBLAS, the share of the predicted
    gain reached; blocks per tile on the deepest shape; and the stream-K kernel's median cost ÷ step 10 where there
    is nothing to split. ``None`` without wave-boundary and deep shapes."""
    g = groups(s)
    if not (g["boundary"] and g["deep"]):
        return None
    out = {}
    for family, group in ((family, group) for family, group in g.items() if group):
        out[f"{family}: step 11 ÷ step 9"] = _span([speedup(r) for r in group])
        out[f"{family}: % of cuBLAS, step 9 → 11"] = " → ".join(
            _span([r[key]["pct_of_cublas"] for r in group], "{:.0f}") for key in ("dp", "sk"))
        out[f"{family}: share of the predicted gain"] = _span(_share_of_prediction(group), "{:.0%}")
    out["blocks per tile on the deepest shape"] = s.G / min(r["tiles"] for r in g["deep"])
    if kernel_cost(s):
        out["stream-K kernel ÷ step 10 with nothing to split (median)"] = float(np.median([*kernel_cost(s).values()]))
    return Findings(out, facts(out))


# -- the first version (deep dive 11_first_version) ----------------------------------------------------------------
@dataclass(frozen=True)
class ForwardWalk:
    """The first version's sweep against the chain model (:func:`forward_walk`)."""
    walk: list  # (row, forward-walk record, step 10's record in its run, model and measured slowdowns), worst first
    table: MarkdownTable  # ``walk``, a row per shape
    numbers: dict  # label → value: the worst shape and slowdown, chained shapes, measured ÷ model there, correct
    correct: bool  # every run wrote all of C, with errors no larger than 1.5× step 10's


def forward_walk(s: Sweep, forward: dict) -> ForwardWalk:
    """The first version's sweep against the chain model: ``walk`` (row, forward-walk record, step 10's record in
    that run, model slowdown, measured slowdown; worst first) and its ``table``; the worst shape and slowdown; where
    the model predicts a chain (over 2×), measured ÷ model; ``correct``: every run wrote all of C, with errors no
    larger than 1.5× step 10's."""
    walk = []
    for row in (r for r in s.rows if first_rule(r["tiles"], s.G)[1]):
        fwd, p = (record(forward, name, row["shape"]) for name in (VARIANTS["sk"], VARIANTS["p"]))
        if fwd and p:
            one_per_block = math.ceil(row["tiles"] / s.G) * row["k_tiles"]
            model = timelines(row["tiles"], row["k_tiles"], s.G, first_rule, backwards=False)[1] / one_per_block
            walk.append((row, fwd, p, model, fwd["median_ms"] / p["median_ms"]))
    walk.sort(key=lambda w: -w[4])
    chained = [w[4] / w[3] for w in walk if w[3] > 2]
    correct = all(r.get("unwritten") == 0 and r["sampled_rel_error_fp64"] <= 1.5 * record(
        forward, VARIANTS["p"], (r["M"], r["N"], r["K"]))["sampled_rel_error_fp64"]
        for r in forward["records"] if r["step"] in (VARIANTS["sk"], VARIANTS["all"]))
    rows = [{"M×N×K": size_label(row["shape"]), "tiles ÷ SMs": f"{row['x']:.2f}", "forward walk, ms":
             f"{fwd['median_ms']:.3f}", "% of cuBLAS": f"{fwd['pct_of_cublas']:.1f} %",
             "time ÷ step 10's, same run": f"**{measured:.2f}×**",
             "model: forward walk ÷ one tile per block": f"{model:.2f}×"} for row, fwd, p, model, measured in walk]
    return ForwardWalk(walk, table(rows), {
        "worst": size_label(walk[0][0]["shape"]), "worst slowdown": walk[0][4], "chained shapes": len(chained),
        "measured ÷ model where chained": _span(chained, "{:.2f}") if chained else None, "correct": correct}, correct)


def the_fix(walk: list):
    """The four worst shapes of the first version, against step 11 in the final sweep (ms, % of cuBLAS)."""
    return table([{"shape": size_label(row["shape"]), "first version, ms": f"{fwd['median_ms']:.3f}",
                   "step 11, ms": f"**{row['sk']['median_ms']:.3f}**",
                   "faster": f"{fwd['median_ms'] / row['sk']['median_ms']:.1f}×",
                   "% of cuBLAS": f"{fwd['pct_of_cublas']:.1f} → {row['sk']['pct_of_cublas']:.1f}",
                   "the final rule": "splits" if row["sk_tiles"] else "no split: step 10 runs"}
                  for row, fwd, *_ in walk[:4] if row["sk"]])


# -- what the model leaves out (deep dive 11_what_the_model_leaves_out) ----------------------------------------------
def small_squares(s: Sweep, forward: dict | None) -> Findings | None:
    """The small squares: the share of their predicted gain, the k-loop work their schedule holds at the one-wave
    shape's rate (µs per k-iteration) against what they measured; and cuBLAS at the smallest in this sweep and in
    the first version's (how steady these times are)."""
    small = groups(s)["small"]
    one_wave = next((r for r in groups(s)["boundary"] + s.rows if r["tiles"] == s.G and r["dp"]), None)
    if not (small and one_wave):
        return None
    per_iteration_us = one_wave["dp"]["median_ms"] * 1e3 / one_wave["k_tiles"]
    tiny = min(small, key=lambda r: r["tiles"])
    before = record(forward, "cublas", tiny["shape"]) if forward else None
    out = {"share of the predicted gain": _span(_share_of_prediction(small), "{:.0%}"),
           f"µs per k-iteration at {size_label(one_wave['shape'])}": per_iteration_us,
           "k-loop work in their schedules (µs)": _span([timelines(r["tiles"], r["k_tiles"], s.G)[1] * per_iteration_us
                                                        for r in small], "{:.0f}"),
           "measured (µs)": _span([r["sk"]["median_ms"] * 1e3 for r in small], "{:.0f}"),
           f"cuBLAS at {size_label(tiny['shape'])}, this sweep (µs)": tiny["cuBLAS"]["median_ms"] * 1e3}
    if before:
        out[f"cuBLAS at {size_label(tiny['shape'])}, the first version's sweep (µs)"] = before["median_ms"] * 1e3
    return Findings(out, facts(out))


@dataclass(frozen=True)
class KernelCost:
    """The stream-K kernel's own cost (:func:`kernel_cost_numbers`)."""
    numbers: dict  # label → number: its time ÷ step 10's per shape and the median, instructions per FMA, registers
    typical: float  # the median of its time ÷ step 10's
    table: MarkdownTable  # ``numbers``


def kernel_cost_numbers(s: Sweep, compiled: dict) -> KernelCost:
    """Step 11's kernel where it has nothing to split, its time ÷ step 10's per shape and the median (``typical``);
    PTX instructions per FMA of both k-loops, and both kernels' registers (nvJitLink)."""
    cost = kernel_cost(s)
    out = {f"{label}: stream-K kernel ÷ step 10": ratio for label, ratio in cost.items()}
    out["median"] = typical = float(np.median(list(cost.values())))
    for name in ("persistent", "stream_k"):
        mix = _compiled.k_loop_mix(compiled[f"{name}_fast"]["ptx"], _compiled.fmas_per_k_tile(name))
        out[f"{name}: PTX instructions per FMA"] = sum(mix.values())
        out[f"{name}: registers"] = compiled[f"{name}_fast"]["registers"]
    return KernelCost(out, typical, facts(out))


@dataclass(frozen=True)
class PredictionWithCost:
    """The balance-only prediction less the kernel's cost, against the measurement (:func:`prediction_with_cost`)."""
    shrinks: bool  # what is left of the gap shrinks as the shares grow
    table: MarkdownTable  # a row per wave-boundary shape: predicted ÷ cost, measured, the share of it reached


def prediction_with_cost(s: Sweep, typical: float) -> PredictionWithCost:
    """The balance-only prediction ÷ the kernel's cost against the measurement on the wave-boundary shapes
    (``table``); ``shrinks``: what is left of the gap shrinks as the shares grow."""
    boundary = groups(s)["boundary"]
    shortfall = [1 - speedup(r) / (r["predicted"] / typical) for r in boundary]
    return PredictionWithCost(shortfall[0] > shortfall[-1], table([
        {"shape": size_label(r["shape"]), "predicted ÷ kernel cost": f"{r['predicted'] / typical:.2f}×",
         "measured": f"{speedup(r):.2f}×", "share of it": f"{speedup(r) / (r['predicted'] / typical):.0%}"}
        for r in boundary]))


def fallback(s: Sweep, typical: float) -> Findings:
    """Where the rule hands the shape to step 10: step 11 and its kernel without the fallback against step 10
    (``table``); the rule's threshold, the break-even the kernel's cost gives, the gap in µs and its largest share."""
    rows = full_wave_rows(s)
    out = {"threshold: split below this share busy": WAVE_EFFICIENCY_FOR_DATA_PARALLEL,
           "so balancing must buy more than": 1 / WAVE_EFFICIENCY_FOR_DATA_PARALLEL,
           "break-even share busy (1 ÷ kernel cost)": 1 / typical,
           "largest gap, share of step 10's time": max(r["sk"]["median_ms"] / r["p"]["median_ms"] - 1 for r in rows)}
    shapes = table([{"shape": size_label(r["shape"]), "busy": f"{r['busy']:.0%}",
                     "step 11 ÷ step 10": f"**{r['sk']['median_ms'] / r['p']['median_ms']:.3f}×**",
                     "step 10 → 11, ms": f"{r['p']['median_ms']:.3f} → {r['sk']['median_ms']:.3f}",
                     "gap, µs": f"{(r['sk']['median_ms'] - r['p']['median_ms']) * 1e3:+.0f}",
                     "kernel without the fallback ÷ step 10": f"{r['kernel']['median_ms'] / r['p']['median_ms']:.3f}×"}
                    for r in rows])
    return Findings(out, MarkdownTable(shapes + "\n\n" + facts(out)))


def before_fallback(s: Sweep, before: dict) -> Findings:
    """The stream-K kernel ÷ step 10 on the full-wave shapes in the run before the fallback existed, and the
    median."""
    out = {}
    for row in full_wave_rows(s):
        kernel, p = (record(before, name, row["shape"]) for name in (VARIANTS["sk"], VARIANTS["p"]))
        if kernel and p:
            out[size_label(row["shape"])] = kernel["median_ms"] / p["median_ms"]
    if out:
        out["median"] = float(np.median(list(out.values())))
    return Findings(out, facts(out, ("shape", "stream-K kernel ÷ step 10")))


# -- the fixup protocol (deep dive 11_fixup_protocol) -----------------------------------------------------------------
_FIXUP_OPS = re.compile(r"^\s*(st\.global\.f32|st\.global\.u32|membar\.\w+|fence\.\S+|bar\.sync|atom\.global\.\S+|"
                        r"ld\.global\.cg\.f32)\b")


def fixup_ptx_outline(ptx: str) -> str:
    """The memory operations of the fixup in the compiled PTX, in file order from the first flag read to the flag
    write, with runs of one instruction collapsed ("ld.global.cg.f32 × 128")."""
    lines = ptx.splitlines()
    start = next(i for i, line in enumerate(lines) if "atom.global.add" in line)
    stop = next(i for i, line in enumerate(lines) if "atom.global.exch" in line)
    ops = []
    for number, line in enumerate(lines[start:stop + 1], start + 1):
        match = _FIXUP_OPS.match(line)
        if match and ops and ops[-1][1] == match.group(1):
            ops[-1][2] += 1
        elif match:
            ops.append([number, match.group(1), 1, line.strip()])
    return "\n".join(f"line {number:>5}: " + (f"{op} × {count}" if count > 1 else text)
                     for number, op, count, text in ops)


@dataclass(frozen=True)
class WaitTable:
    """:func:`waits` on every shape the sweep splits (:func:`wait_table`)."""
    table: MarkdownTable  # a row per shape, with the first version's longest chain
    shapes: int  # how many shapes
    holds: bool  # on every one, the no-deadlock argument's points 1 and 2 hold


def wait_table(s: Sweep) -> WaitTable:
    """:func:`waits` on every shape of the sweep that step 11 splits, on the sweep's grid, beside the first
    version's longest chain (``table``); ``holds``: on every shape every wait is for a lower-numbered block, no block
    raises more than one flag or waits before raising it, and every chain is one link long."""
    rows = []
    for row in (r for r in s.rows if r["sk_tiles"]):
        now = waits(row["tiles"], row["k_tiles"], s.G)
        rows.append({"M×N×K": size_label(row["shape"]), "blocks": str(s.G),
                     "waits only for lower-numbered blocks": "yes" if now.lower_only else "**no**",
                     "flags raised per block, at most": str(now.flags_per_block),
                     "blocks that wait before raising their flag": str(len(now.waited_before_flag)),
                     "longest chain of waits": str(now.chain), "first version: longest chain": str(waits(
                         row["tiles"], row["k_tiles"], s.G, first_rule, backwards=False).chain),
                     "holds": now.lower_only and now.flags_per_block <= 1 and not now.waited_before_flag
                     and now.chain <= 1})
    shown = table([{key: value for key, value in row.items() if key != "holds"} for row in rows])
    return WaitTable(shown, len(rows), bool(rows) and all(row["holds"] for row in rows))


def reader_fence_table(data: dict, compiled: dict):
    """The run made after the reader's fence was added: step 11 against step 10 and cuBLAS at each of its shapes,
    and whether the rule splits the shape on G = :func:`resident_grid` blocks (the tiles: its records')."""
    blocks, rows = resident_grid(compiled, data["environment"]["sm_count"]), []
    for shape in sorted({(r["M"], r["N"], r["K"]) for r in data["records"]}, key=lambda x: x[0] * x[1] * x[2]):
        sk, p = record(data, "stream_k", shape), record(data, "persistent", shape)
        if sk and p:
            tiles = (shape[0] // sk["config"]["BLOCK_M"]) * (shape[1] // sk["config"]["BLOCK_N"])
            rows.append({"shape": size_label(shape), "split by stream-K (the fixup runs)":
                         "yes" if stream_k_split(tiles, blocks)[1] else "no: step 10 runs",
                         "step 11, ms": f"{sk['median_ms']:.3f}",
                         "step 11, % of cuBLAS": f"**{sk['pct_of_cublas']:.0f} %**",
                         "step 10, ms": f"{p['median_ms']:.3f}", "step 10, % of cuBLAS": f"{p['pct_of_cublas']:.0f} %",
                         "step 11 ÷ step 10": f"{sk['median_ms'] / p['median_ms']:.2f}×",
                         "C fully written": "yes" if sk.get("unwritten") == 0 else "**NO**"})
    return table(rows)


# -- determinism on the simulator ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Determinism:
    """Step 11 on the simulator: twice, against step 10 and on another grid (:func:`determinism`)."""
    numbers: dict  # label → number: elements that differ, where, the largest errors against float64
    same_bits: bool  # two runs of step 11 are bitwise identical
    table: MarkdownTable  # ``numbers``, errors in e-notation


def determinism(stream_k, persistent, shape, blocks_elsewhere: int = 2) -> Determinism:
    """Step 11 twice (``same_bits``: bitwise identical), against step 10, and on a grid of ``blocks_elsewhere``
    blocks instead of the simulator's usual one (another GPU, another occupancy): for each comparison, how many
    elements differ and whether they are exactly in the tiles whose k-loop was split; the largest errors against
    float64."""
    from gemm_steps.harness import api

    config = stream_k.config
    rng = np.random.default_rng(1)
    m, n, k = shape
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    first, again, step10 = stream_k(a, b), stream_k(a, b), persistent(a, b)
    other = stream_k.module.build(TileConfig(**{key: config[key] for key in (
        "BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "MIN_BLOCKS_PER_SM")}))
    other.resident_blocks = lambda variant="fast": blocks_elsewhere  # a GPU that holds this many blocks at once
    elsewhere = api.run(other.launch, a, b)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    tiles, k_tiles = (m // config["BLOCK_M"]) * (n // config["BLOCK_N"]), k // config["BLOCK_K"]
    here = stream_k.tiled.resident_blocks()

    def split_tiles(blocks):  # tiles whose k-loop more than one block computes, on a grid of this many blocks
        return {tile for work in shares(tiles, k_tiles, blocks) for tile, first, count in work if count < k_tiles}

    def differing_tiles(x, y):
        rows, cols = np.nonzero(x != y)
        return set((rows // config["BLOCK_M"] * (n // config["BLOCK_N"]) + cols // config["BLOCK_N"]).tolist())

    out = {"two runs of step 11: bitwise identical": np.array_equal(first.view(np.uint32), again.view(np.uint32)),
           "step 11 against step 10: elements that differ": int(np.count_nonzero(first != step10)),
           "… exactly in the tiles whose k-loop was split": differing_tiles(first, step10) == split_tiles(here),
           f"step 11 on {blocks_elsewhere} blocks against {here}: elements that differ":
               int(np.count_nonzero(elsewhere != first)),
           "… all in tiles split on either grid": differing_tiles(elsewhere, first) <= (
               split_tiles(here) | split_tiles(blocks_elsewhere)),
           "of elements": int(first.size),
           "largest error against float64: step 11": float(np.abs(first - reference).max()),
           "step 10": float(np.abs(step10 - reference).max()),
           f"{blocks_elsewhere} blocks": float(np.abs(elsewhere - reference).max())}
    return Determinism(out, out["two runs of step 11: bitwise identical"],
                       facts({k: f"{v:.1e}" if isinstance(v, float) else v for k, v in out.items()}))


# -- the course at the end (deep dive 11_where_the_course_ends) ----------------------------------------------------
def _label(name: str) -> str:
    from gemm_steps.harness.step import get_step

    return "cuBLAS" if name == "cublas" else f"{get_step(name).number} {name}"


def course_table(full: dict, course: list, sizes: list):
    """TFLOPS and % of cuBLAS of every step (and cuBLAS) at ``sizes``."""
    cells = (("{}: TFLOPS", "{tflops:.1f}"), ("{}: % of cuBLAS", "{pct_of_cublas:.1f} %"))
    return table([{"step": _label(name), **{key.format(size_label(s)): value.format(**record(full, name, s))
                                           for s in sizes for key, value in cells}} for name in course + ["cublas"]])


@dataclass(frozen=True)
class TargetVerdict:
    """The course against its target (:func:`target_verdict`)."""
    numbers: dict  # label → value: the fastest step at each size, its % of cuBLAS, step 11's, the target
    met: bool  # the fastest step reaches the target at some size
    table: MarkdownTable  # ``numbers`` and ``met``


def target_verdict(full: dict, course: list, sizes: list) -> TargetVerdict:
    """The fastest step at each of ``sizes`` (% of cuBLAS, TFLOPS), step 11's %, and ``met``: the best reaches
    :data:`~gemm_steps.course.targets.TARGET_SGEMM_PCT` at some size."""
    best = {s: max((record(full, name, s) for name in course), key=lambda r: r["tflops"]) for s in sizes}
    out = {}
    for s, b in best.items():
        out[f"{size_label(s)}: fastest step"] = _label(b["step"])
        out[f"{size_label(s)}: its % of cuBLAS (TFLOPS)"] = f"{b['pct_of_cublas']:.1f} % ({b['tflops']:.1f})"
        out[f"{size_label(s)}: step 11, % of cuBLAS"] = record(full, "stream_k", s)["pct_of_cublas"]
    out["target, % of cuBLAS"] = TARGET_SGEMM_PCT
    met = max(b["pct_of_cublas"] for b in best.values()) >= TARGET_SGEMM_PCT
    return TargetVerdict(out, met, facts({**out, "**target met**": met}))


def inside_the_tile(full: dict, course: list, sizes: list, s: Sweep | None, compiled: dict) -> Findings:
    """What is left inside the tile at the largest of ``sizes``: cuBLAS's and the fastest step's share of the FP32
    peak; the block-slots those shapes keep busy (nothing for stream-K to balance); the k-loop of steps 9-10 in PTX
    instructions per FMA (integer, shared loads, other) and the issue ceiling that gives; registers by nvJitLink
    here and by the GPU driver (the profiler's report)."""
    from . import profiles
    from .timings import fp32_peak_tflops

    peak, top = fp32_peak_tflops(full), sizes[-1]
    best = max((record(full, name, top) for name in course), key=lambda r: r["tflops"])
    mix = _compiled.k_loop_mix(compiled["persistent_fast"]["ptx"], _compiled.fmas_per_k_tile("persistent"))
    integer, shared, total = mix["32-bit integer"] + mix["64-bit integer"], mix["shared loads"], sum(mix.values())
    report = profiles.load("persistent")
    out = {"FP32 peak, estimated (TFLOPS)": peak, f"cuBLAS at {size_label(top)}, share of the peak":
           record(full, "cublas", top)["tflops"] / peak, "the fastest step, share of the peak": best["tflops"] / peak,
           **{f"block-slots busy at {size_label(row['shape'])}": row["busy"]
              for row in (s.rows if s else []) if row["shape"] in sizes},
           "PTX instructions per FMA, steps 9-10": total, "… integer index arithmetic": integer,
           "… shared loads": shared, "… other, besides the FMA": total - 1 - integer - shared,
           "issue ceiling, share of the peak": 1 / total,
           "registers per thread (nvJitLink here)": compiled["persistent_fast"]["registers"],
           "registers per thread (the GPU driver, Nsight Compute)":
               int(report.value("Registers Per Thread")) if report else None}
    return Findings(out, facts(out))
