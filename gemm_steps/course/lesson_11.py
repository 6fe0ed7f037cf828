"""Lesson 11's helpers (stream-K), shared with its deep dives (``lessons/deep_dives/11_*.py``).

* **The schedule in Python** — the kernel's arithmetic, small enough to read: :func:`shares` (each block's work,
  in the order the kernel does it), :func:`picture` (tiles × k-iterations, which block computes what),
  :func:`timelines` and :func:`draw` (the balance-only model: one time unit per k-iteration, an owner waits for
  the other pieces of its tile), :func:`waits` (who waits for whom, and whether a block waits before it raises
  its flag), :func:`first_rule` (the hybrid rule of the first version).
* **The shipped scheduling sweeps** — :func:`load_sweep` reads ``experiment-scheduling-h200.json`` into one row per
  shape (its split, its prediction, the record of each variant); the functions after it turn rows into the tables,
  verdicts and figure the lesson shows. Every interpreting sentence is computed here from the records, so the
  prose cannot drift from the numbers.
* **Plumbing** — the determinism experiment on the simulator, an outline of the fixup's PTX.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from gemm_steps.steps.stream_k import WAVE_EFFICIENCY_FOR_DATA_PARALLEL, stream_k_split
from gemm_steps.toolkit.tiles import TileConfig

from . import compiled as _compiled
from .timings import load_shipped, size_label


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


def waits(tiles, k_tiles, blocks, split=stream_k_split, backwards=True) -> dict:
    """Who waits for whom in one launch, read off :func:`shares` with the kernel's rules: a piece that stops before
    its tile's last k-iteration raises its block's flag; a piece that ends the tile but does not start it waits for
    the flags of the other blocks in the tile.

    Returns ``lower_only`` (every wait is for a lower-numbered block), ``flags_per_block`` (most flags one block
    raises: the kernel has one workspace slot per block), ``waited_before_flag`` (blocks that wait before they raise
    their flag) and ``chain`` (the longest chain of blocks each waiting for the previous one's flag, counted in
    waits: 1 = an owner waits only for blocks that never wait first)."""
    work = shares(tiles, k_tiles, blocks, split, backwards)
    holders = {}  # tile → blocks that computed a piece of it without finishing it
    for block, pieces in enumerate(work):
        for tile, first, count in pieces:
            if first + count < k_tiles:
                holders.setdefault(tile, []).append(block)
    lower_only, flags, waited_first, depth = True, 0, [], {}
    for block, pieces in enumerate(work):  # lower blocks first: their depth is known when a higher one needs it
        waited_on, flag_depth, raised = [], None, 0
        for tile, first, count in pieces:
            if first + count < k_tiles:  # raises the flag, after whatever it waited for so far
                raised += 1
                flag_depth = max((depth.get(b, 0) + 1 for b in waited_on), default=0)
                if waited_on:
                    waited_first.append(block)
            elif first > 0:  # the owner of a split tile
                others = holders.get(tile, [])
                lower_only &= all(b < block for b in others)
                waited_on += others
        flags = max(flags, raised)
        depth[block] = flag_depth if flag_depth is not None else 0
    owners_chain = 0
    for block, pieces in enumerate(work):
        for tile, first, count in pieces:
            if first > 0 and first + count == k_tiles:
                owners_chain = max(owners_chain, 1 + max((depth.get(b, 0) for b in holders.get(tile, [])), default=-1))
    return {"lower_only": lower_only, "flags_per_block": flags, "waited_before_flag": waited_first,
            "chain": owners_chain}


# -- the shipped scheduling sweep ------------------------------------------------------------------------------------
VARIANTS = {"dp": "data_parallel (step 9)", "p": "persistent (step 10)", "sk": "stream_k hybrid (step 11)",
            "kernel": "stream_k kernel, hybrid split", "all": "stream_k all", "cuBLAS": "cublas"}


@dataclass
class Sweep:
    """The H200 scheduling sweep: its file, tiles, grid (G blocks) and one row per shape (see :func:`load_sweep`)."""
    data: dict
    env: dict
    BM: int
    BN: int
    BK: int
    per_sm: int
    G: int
    rows: list


def records_by_shape(data: dict) -> dict:
    """{(variant, M, N, K): record} of a sweep's successful records."""
    return {(r["step"], r["M"], r["N"], r["K"]): r for r in data["records"] if "error" not in r}


def load_sweep(compiled: dict) -> Sweep | None:
    """The shipped sweep (saying where it comes from), with G = SMs × blocks per SM of the stream-K kernel (from
    the compiler's register count and NVIDIA's occupancy rules) and, per shape, smallest first: its tiles and
    k-tiles, tiles ÷ G (``x``), the share of block-slots busy one tile per block (``busy``), the hybrid split, the
    balance-only prediction, and the record of each variant of :data:`VARIANTS` (``None`` where it has none)."""
    data = load_shipped("experiment-scheduling-h200.json", "`experiments/scheduling.py`: step 9's data-parallel "
                        "grid, step 10, step 11, step 11's kernel without the fallback to step 10, and everything "
                        "stream-K, all with the same tiles, plus cuBLAS, in one run")
    if not data:
        return None
    env = data["environment"]
    BM, BN, BK = (data["tile_config"][key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    kernel = compiled["stream_k_fast"]
    per_sm = _compiled.blocks_per_sm(kernel["registers"], _compiled.threads_per_block("stream_k"),
                                     kernel["shared_bytes"])["blocks"]
    G = env["sm_count"] * per_sm
    by = records_by_shape(data)

    def tiles_of(shape):
        return (shape[0] // BM) * (shape[1] // BN)

    rows = []
    for shape in sorted({(r["M"], r["N"], r["K"]) for r in data["records"]}, key=lambda s: (tiles_of(s), s[2])):
        tiles, k_tiles = tiles_of(shape), shape[2] // BK
        waves = math.ceil(tiles / G)
        dp_tiles, sk_tiles = stream_k_split(tiles, G)
        predicted = waves * k_tiles / timelines(tiles, k_tiles, G)[1]
        rows.append({"shape": shape, "tiles": tiles, "k_tiles": k_tiles, "x": tiles / G, "busy": tiles / (waves * G),
                     "dp_tiles": dp_tiles, "sk_tiles": sk_tiles, "predicted": predicted,
                     **{key: by.get((name, *shape)) for key, name in VARIANTS.items()}})
    return Sweep(data, env, BM, BN, BK, per_sm, G, rows)


def split_table(s: Sweep) -> str:
    """The hybrid rule's decision for every shape of the sweep, with the balance-only prediction."""
    lines = ["| M×N×K | tiles | tiles ÷ SMs | block-slots busy, one tile per block | split: data-parallel + stream-K "
             "tiles | predicted speedup (balance only) |", "|:--|--:|--:|--:|:--|--:|"]
    for row in s.rows:
        split_text = f"{row['dp_tiles']} + {row['sk_tiles']}" if row["sk_tiles"] else "all data-parallel: runs step 10"
        lines.append(f"| {size_label(row['shape'])} | {row['tiles']} | {row['x']:.2f} | {row['busy']:.0%} "
                     f"| {split_text} | {row['predicted']:.2f}× |")
    return (f"With **{s.BM}×{s.BN}** tiles (`BLOCK_K` = {s.BK}) and G = {s.env['sm_count']} SMs × {s.per_sm} = "
            f"**{s.G} blocks**, the hybrid rule decides, shape by shape of the sweep:\n\n" + "\n".join(lines))


def prediction(s: Sweep) -> str:
    """The prediction, written from the schedule alone (no measured time enters it)."""
    G = s.G
    past_one = [row for row in s.rows if 1 < row["x"] < 1.5 and row["sk_tiles"]]
    partial = s.BM * s.BN * 4
    per_iteration = (s.BM + s.BN) * s.BK * 4
    return (
        "**Prediction.** "
        + " ".join(f"At {r['x']:.2f} waves ({r['tiles']} tiles), a tile-per-block schedule leaves **{1 - r['busy']:.0%} "
                   f"of its block-slots idle** ({math.ceil(r['x']) * G - r['tiles']} of {math.ceil(r['x']) * G}), so "
                   f"balancing can buy up to **{r['predicted']:.2f}×**." for r in past_one)
        + " Where the rule keeps data-parallel waves, the gain shrinks with their share; where the tiles fill whole "
        "waves, step 11 is step 10 and the prediction is 1.00×. Shapes with few, deep tiles (small M·N, large K) "
        f"have the most to gain: a few busy SMs become {G}.\n\n"
        f"**Minus the fixups,** which the model leaves out. A partial tile is {partial // 1024} KiB, written once "
        f"and read once by its owner — as many bytes as {partial / per_iteration:.1f} k-iterations' loads of A and "
        f"B ({per_iteration // 1024} KiB each) — and an owner adds its tile's partial sums one after another. Small "
        "against a share of hundreds of k-iterations; less small where a tile is split among many blocks, as on "
        "the deep, few-tile shapes.")


def measurement_table(s: Sweep) -> str:
    """Every shape of the sweep: steps 9, 10, 11 and cuBLAS in TFLOPS, step 11 ÷ step 9, % of cuBLAS."""
    lines = ["| M×N×K | tiles ÷ SMs | split (DP + SK tiles) | predicted | step 9 TFLOPS | step 10 | step 11 | cuBLAS "
             "| step 11 ÷ step 9 | step 9, % of cuBLAS | step 11, % of cuBLAS |",
             "|:--|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row in s.rows:
        tf = {key: (f"{row[key]['tflops']:.1f}" if row[key] else "—") for key in ("dp", "p", "sk", "cuBLAS")}
        split_text = f"{row['dp_tiles']} + {row['sk_tiles']}" if row["sk_tiles"] else "step 10"
        lines.append(f"| {size_label(row['shape'])} | {row['x']:.2f} | {split_text} | {row['predicted']:.2f}× "
                     f"| {tf['dp']} | {tf['p']} | **{tf['sk']}** | {tf['cuBLAS']} "
                     f"| **{row['dp']['median_ms'] / row['sk']['median_ms']:.2f}×** "
                     f"| {row['dp']['pct_of_cublas']:.0f} % | {row['sk']['pct_of_cublas']:.0f} % |")
    return "\n".join(lines)


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


def _span(values, fmt):
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


def where_it_ran(s: Sweep) -> str:
    """Shape by shape, where stream-K ran: speedup over step 9, share of the prediction, % of cuBLAS."""
    g = groups(s)

    def describe(group):
        return "\n".join(
            f"* {size_label(r['shape'])} ({r['x']:.2f} waves): **{speedup(r):.2f}×** step 9 (predicted up to "
            f"{r['predicted']:.2f}×: {speedup(r) / r['predicted']:.0%} of it); {r['dp']['pct_of_cublas']:.0f} % → "
            f"**{r['sk']['pct_of_cublas']:.0f} %** of cuBLAS; {r['sk']['median_ms']:.3f} ms" for r in group)

    return ("*Wave-boundary shapes* (K = 4096, tiles just past a whole number of waves):\n\n" + describe(g["boundary"])
            + "\n\n*Deep shapes* (few tiles, long k-loops):\n\n" + describe(g["deep"])
            + "\n\n*Small squares* (few tiles, short k-loops):\n\n" + describe(g["small"]))


def verdict(s: Sweep) -> str:
    """What the sweep says about the prediction: where stream-K wins, by how much less than predicted, and what
    the stream-K kernel costs where there is nothing to split."""
    g = groups(s)
    boundary, deep, small = g["boundary"], g["deep"], g["small"]
    if not (boundary and deep):
        return "The sweep lacks the wave-boundary or the deep shapes, so there is nothing to conclude from it."
    text = (
        f"**Stream-K wins where waves were the problem.** On the wave-boundary shapes step 11 is "
        f"**{_span([speedup(r) for r in boundary], '{:.2f}')}×** step 9 and reaches "
        f"**{_span([r['sk']['pct_of_cublas'] for r in boundary], '{:.0f}')} %** of cuBLAS (step 9: "
        f"{_span([r['dp']['pct_of_cublas'] for r in boundary], '{:.0f}')} %). On the deep shapes it is "
        f"**{_span([speedup(r) for r in deep], '{:.2f}')}×** step 9, the largest gains of the course's last step "
        f"({_span([r['dp']['pct_of_cublas'] for r in deep], '{:.0f}')} → "
        f"{_span([r['sk']['pct_of_cublas'] for r in deep], '{:.0f}')} % of cuBLAS).\n\n"
        f"**Less than predicted, everywhere.** The wave-boundary shapes got "
        f"{_span(_share_of_prediction(boundary), '{:.0%}')} of their predicted gain, the deep shapes "
        f"{_span(_share_of_prediction(deep), '{:.0%}')}: their tiles are split among the most blocks (about "
        f"{s.G / min(r['tiles'] for r in deep):.0f} per tile on the deepest), so each owner waits for and adds the "
        "most partial sums.")
    if small:
        text += (f" The small squares got only {_span(_share_of_prediction(small), '{:.0%}')} of theirs: at these "
                 "sizes fixed costs (the launch, host time) outweigh any schedule.")
    cost = kernel_cost(s)
    if cost:
        typical = float(np.median(list(cost.values())))
        text += (f" And the stream-K kernel is not free: where there is nothing to split, it took a median "
                 f"**{typical:.3f}×** step 10's time — which is why step 11 runs step 10's kernel there.")
    return text


# -- the first version (deep dive 11_first_version) ----------------------------------------------------------------
def forward_walk(s: Sweep, forward: dict) -> tuple[str, list]:
    """The first version's sweep against the chain model: a table and a verdict, and the rows behind them
    (row, forward-walk record, step 10's record in that run, model slowdown, measured slowdown), worst first."""
    G = s.G
    fby = records_by_shape(forward)
    walk = []
    for row in s.rows:
        fwd, p = fby.get(("stream_k hybrid (step 11)", *row["shape"])), fby.get(("persistent (step 10)", *row["shape"]))
        if not (fwd and p) or first_rule(row["tiles"], G)[1] == 0:
            continue
        one_per_block = math.ceil(row["tiles"] / G) * row["k_tiles"]
        model = timelines(row["tiles"], row["k_tiles"], G, first_rule, backwards=False)[1] / one_per_block
        walk.append((row, fwd, p, model, fwd["median_ms"] / p["median_ms"]))
    walk.sort(key=lambda w: -w[4])
    lines = ["| M×N×K | tiles ÷ SMs | forward walk, ms | % of cuBLAS | time ÷ step 10's, same run | model: forward "
             "walk ÷ one tile per block |", "|:--|--:|--:|--:|--:|--:|"]
    for row, fwd, p, model, measured in walk:
        lines.append(f"| {size_label(row['shape'])} | {row['x']:.2f} | {fwd['median_ms']:.3f} "
                     f"| {fwd['pct_of_cublas']:.1f} % | **{measured:.2f}×** | {model:.2f}× |")
    chained = [w for w in walk if w[3] > 2]
    agreement = [w[4] / w[3] for w in chained]
    streamed = [r for r in forward["records"] if r["step"] in ("stream_k hybrid (step 11)", "stream_k all")]
    correct = all(r.get("unwritten") == 0 for r in streamed) and all(
        r["sampled_rel_error_fp64"] <= 1.5 * fby[("persistent (step 10)", r["M"], r["N"], r["K"])]["sampled_rel_error_fp64"]
        for r in streamed)
    text = "\n".join(lines) + "\n\n" + (
        f"On the worst shape, {size_label(walk[0][0]['shape'])}, the first version took **{walk[0][4]:.1f}×** "
        f"as long as step 10. Wherever the model predicts a chain (more than 2× slower: {len(chained)} shapes), the "
        f"measured slowdown is **{min(agreement):.2f}–{max(agreement):.2f}× the model's** — a model that knows "
        "nothing but the order of the work and who waits for whom."
        if chained else "The model predicts no chain on these shapes.") + (
        " The kernel was correct all along: every run wrote every element of C, with errors no larger than step "
        "10's. It was slow only because of the order in which blocks did their pieces." if correct else "")
    return text, walk


def the_fix(walk: list) -> str:
    """The four worst shapes of the first version, against step 11 in the final sweep."""
    return "\n".join(
        f"* {size_label(row['shape'])}: {fwd['median_ms']:.3f} ms → **{row['sk']['median_ms']:.3f} ms** "
        f"({fwd['median_ms'] / row['sk']['median_ms']:.1f}× faster; {fwd['pct_of_cublas']:.1f} → "
        f"{row['sk']['pct_of_cublas']:.1f} % of cuBLAS)"
        + ("" if row["sk_tiles"] else " — here the final rule no longer splits at all: step 10 runs")
        for row, fwd, *_ in walk[:4] if row["sk"])


# -- what the model leaves out (deep dive 11_what_the_model_leaves_out) ----------------------------------------------
def small_squares(s: Sweep, forward: dict | None) -> str:
    """Why the small squares got so little of their prediction: the k-loop work their schedule holds, at the
    one-wave shape's rate, against what they measured."""
    small = groups(s)["small"]
    one_wave = next((r for r in groups(s)["boundary"] + s.rows if r["tiles"] == s.G and r["dp"]), None)
    if not (small and one_wave):
        return "The sweep has no small squares split by stream-K, or no one-wave shape to take a rate from."
    per_iteration_us = one_wave["dp"]["median_ms"] * 1e3 / one_wave["k_tiles"]
    work_us = [timelines(r["tiles"], r["k_tiles"], s.G)[1] * per_iteration_us for r in small]
    tiny = min(small, key=lambda r: r["tiles"])
    fby = records_by_shape(forward) if forward else {}
    cublas_here, cublas_before = tiny["cuBLAS"], fby.get(("cublas", *tiny["shape"]))
    return (
        f"The small squares got {_span(_share_of_prediction(small), '{:.0%}')} of their predicted gain, and balance "
        f"is not what limits them. At the rate of the one-wave shape, {size_label(one_wave['shape'])} "
        f"({per_iteration_us:.2f} µs per k-iteration, one block per SM), their stream-K schedules hold about "
        f"{_span(work_us, '{:.0f}')} µs of k-loop work; they measured "
        f"{_span([r['sk']['median_ms'] * 1e3 for r in small], '{:.0f}')} µs. The rest is fixed cost — the "
        "launch, host time the timing counts, fixups — that no schedule removes."
        + (f" (This sweep's times at these sizes are also less steady than the others': cuBLAS at "
           f"{size_label(tiny['shape'])} took {cublas_here['median_ms'] * 1e3:.0f} µs here and "
           f"{cublas_before['median_ms'] * 1e3:.0f} µs in the first version's sweep, so their percentages of "
           "cuBLAS say little.)" if cublas_here and cublas_before else ""))


def kernel_cost_text(s: Sweep, compiled: dict) -> tuple[str, float]:
    """Step 11's kernel where it has nothing to split, against step 10, and the likely reason; and the median cost."""
    from .compiled import fmas_per_k_tile, k_loop_mix

    cost = kernel_cost(s)
    typical = float(np.median(list(cost.values())))
    registers = {name: compiled[f"{name}_fast"]["registers"] for name in ("persistent", "stream_k")}
    per_fma = {name: sum(k_loop_mix(compiled[f"{name}_fast"]["ptx"], fmas_per_k_tile(name)).values())
               for name in ("persistent", "stream_k")}
    return (
        "Step 11's kernel with nothing to split, its time ÷ step 10's: "
        + ", ".join(f"{label} **{ratio:.3f}×**" for label, ratio in cost.items())
        + f" (median {typical:.3f}×). Its k-loop has the same instruction mix as step 10's ({per_fma['stream_k']:.2f} "
        f"vs {per_fma['persistent']:.2f} PTX instructions per FMA), but the share bounds, the walk and the fixup "
        f"raise the registers from {registers['persistent']} to {registers['stream_k']} per thread, close to the "
        "limit of 255, which leaves the compiler less room to schedule. That is the likely cost; a profiler would "
        "have to confirm it."), typical


def prediction_with_cost(s: Sweep, typical: float) -> str:
    """The balance-only prediction divided by the kernel's cost, against the measurement, on the wave-boundary
    shapes; and whether what is left shrinks as the shares grow."""
    boundary = groups(s)["boundary"]
    lines = [f"* {size_label(row['shape'])}: {row['predicted']:.2f}× ÷ {typical:.3f} = "
             f"**{row['predicted'] / typical:.2f}×** expected, {speedup(row):.2f}× measured: "
             f"{speedup(row) / (row['predicted'] / typical):.0%} of it" for row in boundary]
    shortfall = [1 - speedup(row) / (row["predicted"] / typical) for row in boundary]
    trend = ("What is left shrinks as the shares grow (the shapes are sorted by tiles ÷ SMs): a cost per block or "
             "per split tile that the model leaves out — writing, waiting for and adding partial sums."
             if shortfall[0] > shortfall[-1] else
             "What is left does not shrink as the shares grow: it is not a fixed cost per block, and this sweep "
             "cannot say what it is.")
    return ("Taking the kernel's cost into the prediction, on the wave-boundary shapes:\n\n" + "\n".join(lines)
            + "\n\n" + trend)


def fallback_text(s: Sweep, typical: float) -> str:
    """Where the rule hands the shape to step 10: the measured gap, the threshold against the break-even."""
    full_waves = full_wave_rows(s)
    threshold = WAVE_EFFICIENCY_FOR_DATA_PARALLEL
    lines = [f"* {size_label(r['shape'])} ({r['busy']:.0%} busy): step 11 took "
             f"**{r['sk']['median_ms'] / r['p']['median_ms']:.3f}×** step 10's time ({r['p']['median_ms']:.3f} → "
             f"{r['sk']['median_ms']:.3f} ms, {(r['sk']['median_ms'] - r['p']['median_ms']) * 1e3:+.0f} µs); its "
             f"kernel without the fallback, {r['kernel']['median_ms'] / r['p']['median_ms']:.3f}×" for r in full_waves]
    gap = [(r["sk"]["median_ms"] - r["p"]["median_ms"]) * 1e3 for r in full_waves]
    worst = max((r["sk"]["median_ms"] - r["p"]["median_ms"]) / r["p"]["median_ms"] for r in full_waves)
    return (
        "\n".join(lines) + "\n\n"
        f"The rule's threshold: split only when fewer than {threshold:.0%} of the block-slots would be busy, that "
        f"is, when balancing could buy more than {1 / threshold:.2f}×. With the kernel's cost of {typical:.3f}×, "
        f"balancing pays only below about **{1 / typical:.0%} busy**: the threshold sits close to the measured "
        "break-even.\n\n"
        f"Where it falls back, step 11 runs step 10's very kernel, yet measured {min(gap):+.0f} to {max(gap):+.0f} µs "
        "slower. That difference is not in the kernel. In the measured version, step 11's launch did more host "
        "work before it handed over (it checked the arrays, sized the grid and split, then called step 10's "
        "launch, which checked them again), and these timings count host time that outlasts the L2 flush queued "
        "before each launch (`docs/measurement.md`). That is the likely reason, not a measured one. It weighs most "
        f"on the shortest kernels (up to {worst:.0%} of the time here). The launch has since been made leaner — the "
        "fallback now takes over the launch before anything is compiled (`StreamKTiles.launch_tiles` in "
        "`gemm_steps/toolkit/tiles.py`), with the arrays checked once — and has not been timed again yet.")


def before_fallback_text(s: Sweep, before: dict, typical: float) -> str:
    """The stream-K kernel against step 10 on the full-wave shapes in the run before the fallback existed."""
    bby = records_by_shape(before)
    earlier = {}
    for row in full_wave_rows(s):
        kernel, p = bby.get(("stream_k hybrid (step 11)", *row["shape"])), bby.get(("persistent (step 10)", *row["shape"]))
        if kernel and p:
            earlier[size_label(row["shape"])] = kernel["median_ms"] / p["median_ms"]
    if not earlier:
        return "That run has none of the full-wave shapes."
    return ("Stream-K kernel ÷ step 10 on the same full-wave shapes, in that run: "
            + ", ".join(f"{label} {ratio:.3f}×" for label, ratio in earlier.items())
            + f" (median {float(np.median(list(earlier.values()))):.3f}×, against {typical:.3f}× in the "
            "final sweep). Two runs agree: where there is nothing to balance, the stream-K kernel only costs, "
            "so step 11 does not run it there.")


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
        if not match:
            continue
        op = match.group(1)
        if ops and ops[-1][1] == op:
            ops[-1][2] += 1
        else:
            ops.append([number, op, 1, line.strip()])
    return "\n".join(f"line {number:>5}: " + (f"{op} × {count}" if count > 1 else text)
                     for number, op, count, text in ops)


def wait_table(s: Sweep) -> str:
    """:func:`waits` on every shape of the sweep that step 11 splits, on the sweep's grid of G blocks; and the same
    shapes as the first version (forward walk, :func:`first_rule`) would have run them."""
    lines = ["| M×N×K | blocks | waits only for lower-numbered blocks | flags raised per block, at most | blocks that "
             "wait before raising their flag | longest chain of waits | first version: longest chain |",
             "|:--|--:|:--|--:|--:|--:|--:|"]
    verdicts = []
    for row in s.rows:
        if not row["sk_tiles"]:
            continue
        now = waits(row["tiles"], row["k_tiles"], s.G)
        before = waits(row["tiles"], row["k_tiles"], s.G, first_rule, backwards=False)
        verdicts.append(now["lower_only"] and now["flags_per_block"] <= 1 and not now["waited_before_flag"]
                        and now["chain"] <= 1)
        lines.append(f"| {size_label(row['shape'])} | {s.G} | {'yes' if now['lower_only'] else '**no**'} "
                     f"| {now['flags_per_block']} | {len(now['waited_before_flag'])} | {now['chain']} "
                     f"| {before['chain']} |")
    summary = (f"On all {len(verdicts)} shapes that step 11 splits, every wait is for a lower-numbered block, no block "
               "raises more than one flag (it has one workspace slot), and no block waits before it raises its flag: "
               "every chain of waits is one link long." if verdicts and all(verdicts) else
               f"**On {verdicts.count(False)} of {len(verdicts)} shapes the argument does not hold** (see the table).")
    return "\n".join(lines) + "\n\n" + summary


def reader_fence_text(data: dict, tiles_config: tuple, blocks: int) -> str:
    """The run made after the reader's fence was added: step 11 against step 10 and cuBLAS at each of its shapes,
    and whether the rule splits the shape at all (``tiles_config``: BLOCK_M, BLOCK_N; ``blocks``: the grid)."""
    by = records_by_shape(data)
    bm, bn = tiles_config
    shapes = sorted({(r["M"], r["N"], r["K"]) for r in data["records"]}, key=lambda s: s[0] * s[1] * s[2])
    lines = []
    for shape in shapes:
        sk, p = by.get(("stream_k", *shape)), by.get(("persistent", *shape))
        if sk and p:
            split = stream_k_split((shape[0] // bm) * (shape[1] // bn), blocks)[1] > 0
            what = "split by stream-K: the fixup runs" if split else "nothing split: step 10 runs, no fixup"
            lines.append(f"* {size_label(shape)} ({what}): "
                         f"step 11 {sk['median_ms']:.3f} ms, **{sk['pct_of_cublas']:.0f} %** of "
                         f"cuBLAS; step 10 {p['median_ms']:.3f} ms ({p['pct_of_cublas']:.0f} %); step 11 ÷ step 10: "
                         f"{sk['median_ms'] / p['median_ms']:.2f}×; C fully written: "
                         f"{'yes' if sk.get('unwritten') == 0 else 'NO'}")
    return "\n".join(lines)


# -- determinism on the simulator ---------------------------------------------------------------------------------
def determinism(stream_k, persistent, shape, blocks_elsewhere: int = 2) -> tuple[str, bool]:
    """Step 11 twice (bit patterns compared), against step 10, and on a grid of ``blocks_elsewhere`` blocks instead
    of the simulator's usual one (another GPU, another occupancy): a list saying what differs, and whether the two
    runs were bitwise identical."""
    from gemm_steps.harness import api

    config = stream_k.config
    rng = np.random.default_rng(1)
    m, n, k = shape
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    first, again, step10 = stream_k(a, b), stream_k(a, b), persistent(a, b)
    tile_config = TileConfig(**{key: config[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M",
                                                             "THREAD_N", "MIN_BLOCKS_PER_SM")})
    other = stream_k.module.build(tile_config)
    other.resident_blocks = lambda variant="fast": blocks_elsewhere  # a GPU that holds this many blocks at once
    other_grid = api.run(other.launch, a, b)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    tiles, k_tiles = (m // config["BLOCK_M"]) * (n // config["BLOCK_N"]), k // config["BLOCK_K"]
    blocks_here = stream_k.module.TILED.resident_blocks()

    def split_tiles(blocks):  # tiles whose k-loop more than one block computes, on a grid of this many blocks
        return {tile for work in shares(tiles, k_tiles, blocks) for tile, first, count in work if count < k_tiles}

    def tiles_that_differ(x, y, split):
        rows, cols = np.nonzero(x != y)
        differing = set((rows // config["BLOCK_M"] * (n // config["BLOCK_N"]) + cols // config["BLOCK_N"]).tolist())
        where = ("exactly the tiles whose k-loop was split, summed in another order" if differing == split else
                 f"while the tiles whose k-loop was split are {sorted(split)}")
        return (f"{np.count_nonzero(x != y)} of {x.size} elements differ, in tiles {sorted(differing)} — {where}")

    same_bits = np.array_equal(first.view(np.uint32), again.view(np.uint32))
    text = (
        f"* two runs of step 11: **{'bitwise identical' if same_bits else 'DIFFERENT'}**\n"
        f"* step 11 against step 10: {tiles_that_differ(first, step10, split_tiles(blocks_here))}\n"
        f"* step 11 on {blocks_elsewhere} blocks against {blocks_here} blocks ({blocks_elsewhere} blocks split "
        f"{tiles} tiles as {stream_k_split(tiles, blocks_elsewhere)}, {blocks_here} as "
        f"{stream_k_split(tiles, blocks_here)}): "
        f"{tiles_that_differ(other_grid, first, split_tiles(blocks_here) | split_tiles(blocks_elsewhere))}\n"
        f"* largest error against float64: {np.abs(first - reference).max():.1e} (step 11), "
        f"{np.abs(step10 - reference).max():.1e} (step 10), {np.abs(other_grid - reference).max():.1e} "
        f"({blocks_elsewhere} blocks)")
    return text, same_bits


# -- the course at the end (deep dive 11_where_the_course_ends) ----------------------------------------------------
TARGET = 95.0  # % of cuBLAS at the largest squares: the goal the project set itself


def course_table(full: dict, course: list, sizes: list) -> str:
    """TFLOPS and % of cuBLAS of every step (and cuBLAS) at ``sizes``."""
    import gemm_steps

    from .timings import record

    lines = ["| step | " + " | ".join(f"{size_label(s)}: TFLOPS | % of cuBLAS" for s in sizes) + " |",
             "|:--|" + "--:|--:|" * len(sizes)]
    for name in course + ["cublas"]:
        cells = [record(full, name, s) for s in sizes]
        label = "cuBLAS" if name == "cublas" else f"{gemm_steps.get_step(name).number} {name}"
        lines.append(f"| {label} | " + " | ".join(f"{c['tflops']:.1f} | {c['pct_of_cublas']:.1f} %" for c in cells)
                     + " |")
    return "\n".join(lines)


def target_verdict(full: dict, course: list, sizes: list) -> str:
    """One sentence: the fastest step at the largest squares, in % of cuBLAS, against the course's target."""
    import gemm_steps

    from .timings import record

    best = {s: max((record(full, name, s) for name in course), key=lambda r: r["tflops"]) for s in sizes}
    met = max(best[s]["pct_of_cublas"] for s in sizes) >= TARGET
    reached = " and ".join(
        f"**{best[s]['pct_of_cublas']:.1f} %** of cuBLAS at {size_label(s)} (step "
        f"{gemm_steps.get_step(best[s]['step']).number}, {best[s]['tflops']:.1f} TFLOPS)" for s in sizes)
    return (f"At the two largest squares the course's fastest kernel reaches {reached}. "
            + (f"**The target, {TARGET:.0f} % of cuBLAS, is met.**" if met else
               f"**The target, {TARGET:.0f} % of cuBLAS, is not met.**"))


def where_the_course_ends(full: dict, course: list, sizes: list, s: Sweep | None, compiled: dict) -> str:
    """Where the course ends against cuBLAS, and what the lessons measured about the difference."""
    import gemm_steps

    from .compiled import fmas_per_k_tile, k_loop_mix
    from .timings import fp32_peak_tflops, record

    peak = fp32_peak_tflops(full)
    best = {size: max((record(full, name, size) for name in course), key=lambda r: r["tflops"]) for size in sizes}
    final = {size: record(full, "stream_k", size) for size in sizes}
    cublas_top = record(full, "cublas", sizes[-1])
    busy = [row["busy"] for row in s.rows if row["shape"] in sizes] if s else []
    mix = k_loop_mix(compiled["persistent_fast"]["ptx"], fmas_per_k_tile(gemm_steps.get_step("persistent")))
    return (
        target_verdict(full, course, sizes) + " Step 11, which runs step 10's kernel there, reaches "
        + " and ".join("{:.1f} %".format(final[size]["pct_of_cublas"]) for size in sizes) + ". "
        + ("Stream-K was never going to close that gap: those shapes keep "
           + " and ".join("{:.0%}".format(x) for x in busy) + " of their block-slots busy, so there is nothing to "
           "balance; its gains are on shapes where the number of tiles, not the tile, was the problem.\n\n"
           if busy else "\n\n")
        + f"What is left is inside the tile. cuBLAS runs at {cublas_top['tflops'] / peak:.0%} of the estimated "
        f"FP32 peak ({peak:.1f} TFLOPS) at {size_label(sizes[-1])}, the course's fastest kernel at "
        f"{best[sizes[-1]]['tflops'] / peak:.0%}. What the lessons measured says where the difference is, and where "
        "it is not:\n\n"
        f"* **Not mainly the instruction count.** The k-loop of steps 9 and 10 (the same code) issues "
        f"{sum(mix.values()):.2f} PTX instructions per FMA — besides the FMA, "
        f"{mix['32-bit integer'] + mix['64-bit integer']:.3f} of integer index arithmetic (mostly 64-bit), "
        f"{mix['shared loads']:.3f} shared loads and "
        f"{sum(mix.values()) - 1 - mix['32-bit integer'] - mix['64-bit integer'] - mix['shared loads']:.3f} "
        f"else. If issuing them were the limit, it could run at {1 / sum(mix.values()):.0%} of the peak; it runs at "
        f"{best[sizes[-1]]['tflops'] / peak:.0%}. Fewer index instructions would raise that ceiling, but the kernel "
        "is not at it.\n"
        f"* **Waiting.** At {compiled['persistent_fast']['registers']} registers per thread (nvJitLink's count here; "
        f"the GPU driver's own compile used {_profiled_registers('persistent')}, in the profiler's report), one block "
        "of 8 warps "
        "fits on an SM, and all waiting — for memory, for shared loads, at the barrier — must be hidden inside that "
        "one block, by double buffering alone. Larger register tiles, or a second block per SM, both need "
        "registers this kernel does not have to spare.\n"
        "* **The machine code.** PTX is not what runs: `ptxas` allocates registers and orders the instructions. "
        "Lesson 9 looked below PTX: under Nsight Compute, cuBLAS runs a kernel of step 9's design (the same tile, "
        "threads, registers and grid) with the same instruction count, and issues 0.90 warp-instructions per cycle "
        "per scheduler against step 9's 0.81; register double buffering, `cp.async` copies, cheaper index "
        "arithmetic and other FMA orders, each measured against step 9 in one run, were slower or within about "
        "1 %. cuBLAS's kernels are tuned down to the machine code (SASS); a Numba kernel reaches it only through "
        "NVVM and `ptxas`, whose schedule moved by ±6 % under small PTX changes that no instruction count "
        "predicted.")


__all__ = ["shares", "one_tile_per_block", "picture", "timelines", "draw", "first_rule", "waits", "VARIANTS",
           "Sweep", "records_by_shape", "load_sweep", "split_table", "prediction", "measurement_table", "figure",
           "speedup", "groups", "full_wave_rows", "kernel_cost", "where_it_ran", "verdict", "forward_walk", "the_fix",
           "small_squares", "kernel_cost_text", "prediction_with_cost", "fallback_text", "before_fallback_text",
           "fixup_ptx_outline", "wait_table", "reader_fence_text", "determinism", "TARGET", "course_table",
           "target_verdict", "where_the_course_ends"]


def _profiled_registers(step: str) -> str:
    """Registers per thread of a step's kernel as the GPU driver compiled it (the shipped Nsight Compute report)."""
    from . import profiles

    return f"{profiles.load(step).value('Registers Per Thread'):.0f}"
