"""Lesson 10's helpers (persistent blocks, tile order, waves), shared with its deep dives
(``lessons/deep_dives/10_*.py``): the persistent kernel's tile order in Python and its picture, the blocks per SM of
what ran, the persistence experiment (:data:`PERSISTENCE_RUN`: DRAM bound, waves, verdicts) and the saw-tooth sweep.
Numbers, tables and figures; the words are the lessons'."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

from matplotlib.figure import Figure

from gemm_steps.harness import tuning
from gemm_steps.harness.environment import short_label
from gemm_steps.harness import results_files
from gemm_steps.toolkit.tile_config import tile_fields

from . import profiles
from .compiled import blocks_per_sm, threads_per_block
from .display import MarkdownTable, as_step, facts, table
from .timings import datasheet_bandwidth_tbs, load_shipped, record, size_label


# -- the tile order, in Python ------------------------------------------------------------------------------------
def tile_position(tile: int, rows: int, cols: int, group_m: int) -> tuple[int, int]:
    """(tile-row, tile-column) of tile number ``tile`` — the persistent kernel's index arithmetic, in Python."""
    per_group = group_m * cols
    first_row = tile // per_group * group_m
    rows_in_group = min(rows - first_row, group_m)
    return first_row + tile % per_group % rows_in_group, tile % per_group // rows_in_group


def tile_order(rows: int, cols: int, group_m: int) -> list[tuple[int, int]]:
    """(tile-row, tile-column) of every tile, in the order the kernel's loop numbers them — checked against the plain
    loops the exercise is graded with (:func:`~gemm_steps.course.exercise_solutions.expected_tile_order`)."""
    from .exercise_solutions import expected_tile_order

    order = [tile_position(t, rows, cols, group_m) for t in range(rows * cols)]
    assert order == expected_tile_order(rows, cols, group_m), "the kernel's formula and the plain loops disagree"
    return order


def _first_wave(rows: int, cols: int, resident: int, group_m: int) -> tuple[set, int, int]:
    """The tiles of the first wave, and how many tile-rows of A and tile-columns of B they need."""
    first = set(tile_order(rows, cols, group_m)[:resident])
    return first, len({r for r, _ in first}), len({c for _, c in first})


def tile_order_figure(step, rows: int, cols: int, resident: int) -> Figure:
    """C's tiles numbered in the order the persistent kernel visits them: row-major (GROUP_M = 1) beside the
    step's own GROUP_M; the first wave (the ``resident`` blocks' first tiles) shaded, later waves in alternate
    greys, the groups' boundaries drawn."""
    from matplotlib.patches import Rectangle

    step = as_step(step)
    fig = Figure(figsize=(12, 0.36 * rows + 1.3), layout="constrained")
    for ax, g in zip(fig.subplots(1, 2), (1, step.config["GROUP_M"])):
        first, a_rows, b_cols = _first_wave(rows, cols, resident, g)
        for tile, (r, c) in enumerate(tile_order(rows, cols, g)):
            colour = "#f4a261" if (r, c) in first else ("#dee2e6" if tile // resident % 2 else "white")
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="0.5", linewidth=0.8))
            ax.text(c + 0.5, r + 0.5, str(tile), ha="center", va="center", fontsize=7)
        for boundary in range(g, rows, g) if g > 1 else ():
            ax.axhline(boundary, color="#000080", linewidth=2)
        ax.set(xlim=(0, cols), ylim=(rows, 0), aspect="equal", xticks=[], yticks=[],
               xlabel=f"first wave (shaded): {a_rows} row{'s' * (a_rows != 1)} of A's tiles, "
                      f"{b_cols} column{'s' * (b_cols != 1)} of B's")
        ax.set_title("row-major (GROUP_M = 1)" if g == 1 else
                     f"grouped: GROUP_M = {g} (step {step.number}), groups divided in blue", fontsize=10)
    fig.suptitle(f"The order of {rows} × {cols} tiles of C on a GPU that runs {resident} blocks at once: each number is "
                 f"the tile's place in the order; waves of {resident} tiles alternate white and grey", fontsize=10)
    return fig


@dataclass(frozen=True)
class Findings:
    """Named numbers and the table that shows them."""
    numbers: dict  # label → number; the labels are the table's
    table: MarkdownTable  # ``numbers``


def first_wave(step, rows: int, cols: int, resident: int) -> Findings:
    """What the first wave of the picture reads of A and B per unit of k (floats), row-major and grouped by the
    step's ``GROUP_M``, and their ratio."""
    config, out = as_step(step).config, {}
    for g in (1, config["GROUP_M"]):
        _, a_rows, b_cols = _first_wave(rows, cols, resident, g)
        out[f"GROUP_M = {g}: rows of A's tiles, columns of B's"] = f"{a_rows}, {b_cols}"
        out[f"GROUP_M = {g}: floats per step of k"] = a_rows * config["BLOCK_M"] + b_cols * config["BLOCK_N"]
    values = [v for k, v in out.items() if "floats" in k]
    out["row-major / grouped"] = values[0] / values[1]
    return Findings(out, facts(out))


def resident_per_sm(compiled: dict, step) -> dict:
    """Blocks per SM of a step's fast kernel at the register count that ran (the driver's JIT, from the shipped
    Nsight Compute report), or at nvJitLink's where there is no report (NVIDIA's occupancy rules: a calculation)."""
    step = as_step(step)
    entry, report = compiled[f"{step.name}_fast"], profiles.load(step.name)
    registers = int(report.value("Registers Per Thread")) if report else entry.get("registers")
    return blocks_per_sm(registers, threads_per_block(step), entry["shared_bytes"])


def _shapes(doc: dict, names: dict, bm: int, bn: int, per_wave: int) -> list[dict]:
    """A row per shape of a run, by tile count: its tiles, waves (tiles ÷ ``per_wave``) and the record of each of
    ``names`` (``{key: record name}``; ``None`` where it did not run)."""
    shapes = sorted({(r["M"], r["N"], r["K"]) for r in doc["records"]}, key=lambda s: (s[0] // bm) * (s[1] // bn))
    return [{"shape": s, "tiles": tiles, "waves": tiles / per_wave, **{k: record(doc, n, s) for k, n in names.items()}}
            for s in shapes for tiles in [(s[0] // bm) * (s[1] // bn)]]


def _wave_model(anchor_tflops: float, xs) -> list[float]:
    """The wave model's TFLOPS at ``xs`` tiles ÷ SMs: T/⌈T/SMs⌉, anchored at one full wave."""
    return [anchor_tflops * x / math.ceil(x) for x in xs]


# -- the persistence experiment -----------------------------------------------------------------------------------
GROUPED = 8  # the GROUP_M of the experiment's grouped runs (as its records name them)
NAMES = {"twin": "warp_tiling(same config)", "G8": f"persistent GROUP_M={GROUPED}", "G1": "persistent GROUP_M=1",
         "cuBLAS": "cublas"}
#: The run lesson 10 reads, by its exact name (``experiment-persistent-*`` also matches step 17's persistent bench).
PERSISTENCE_RUN = results_files.EXPERIMENT_PERSISTENT_NVIDIA_H200


def load_experiment(blocks_per_sm: int) -> SimpleNamespace | None:
    """The shipped persistence experiment on step 10's first configuration's tiles (as a GPU without a tuning table
    runs it): ``rows`` (one per shape, :func:`_shapes` of :data:`NAMES`), ``one_wave`` (the row exactly one wave
    deep), the tiles, tiles per wave, datasheet bandwidth; or None (said so)."""
    doc = load_shipped(PERSISTENCE_RUN, "`experiments/persistent.py`: step 10 with GROUP_M = 8 and = 1, "
                       "and its non-persistent twin (step 9 with step 10's tiles), in one run over squares, "
                       "wave-boundary shapes, a small and a K-heavy shape")
    if not doc:
        return None
    from gemm_steps.steps import persistent

    config, per_wave = tile_fields(persistent.SEARCH_SPACE[0]), doc["environment"]["sm_count"] * blocks_per_sm
    rows = _shapes(doc, NAMES, config["BLOCK_M"], config["BLOCK_N"], per_wave)
    return SimpleNamespace(doc=doc, env=doc["environment"], BM=config["BLOCK_M"], BN=config["BLOCK_N"],
                           per_wave=per_wave, bandwidth_tbs=datasheet_bandwidth_tbs(doc), rows=rows,
                           one_wave=next((r for r in rows if abs(r["waves"] - 1) < 1e-9 and r["twin"]), None))


def setup(exp, blocks_per_sm: int) -> MarkdownTable:
    """The experiment's tiles (step 10's first configuration), tiles per wave, L2 and DRAM bandwidth."""
    return facts({"GPU": exp.env["gpu"], "tiles (step 10's first configuration)": f"{exp.BM}×{exp.BN}",
                  "tiles per wave (SMs × blocks per SM)": f"{exp.per_wave} ({exp.env['sm_count']} × {blocks_per_sm})",
                  "L2 (MiB)": exp.env["l2_bytes"] / 2**20, "DRAM, datasheet (TB/s)": exp.bandwidth_tbs})


def dram_lower_bound(exp, m: int, n: int, k: int, group_m: int) -> int:
    """Bytes of A and B each wave touches (each read once per wave) plus C written once, for one tile order."""
    rows, cols, total = m // exp.BM, n // exp.BN, 4 * m * n
    for start in range(0, rows * cols, exp.per_wave):
        wave = [tile_position(t, rows, cols, group_m) for t in range(start, min(start + exp.per_wave, rows * cols))]
        total += 4 * k * (exp.BM * len({r for r, _ in wave}) + exp.BN * len({c for _, c in wave}))
    return total


@dataclass(frozen=True)
class DramBound:
    """The DRAM lower bound of the square sizes against the measured time (:func:`dram_table`)."""
    table: MarkdownTable  # a row per square size: the bound in both orders, its time at datasheet bandwidth, measured
    share: float  # the most of a kernel's time DRAM needs at datasheet bandwidth, in either order


def dram_table(exp) -> DramBound:
    """The DRAM lower bound of each square size in both orders, against the measured time (``table``); ``share``:
    the most of a kernel's time DRAM needs at datasheet bandwidth, in either order (the order's prediction)."""
    rows = []
    for row in (r for r in exp.rows if r["shape"][0] == r["shape"][1] == r["shape"][2] and r["twin"]):
        plain, grouped = (dram_lower_bound(exp, *row["shape"], g) for g in (1, GROUPED))
        rows.append({"size": size_label(row["shape"]), "tiles": row["tiles"], "waves": math.ceil(row["waves"]),
                     "DRAM lower bound, row-major (MB)": plain / 1e6, f"grouped by {GROUPED} (MB)": grouped / 1e6,
                     "time at datasheet bandwidth (ms)": " / ".join(f"{b / (exp.bandwidth_tbs * 1e9):.3f}"
                                                                    for b in (plain, grouped)),
                     "measured kernel time (ms)": row["twin"]["median_ms"],
                     "share": max(plain, grouped) / (exp.bandwidth_tbs * 1e9) / row["twin"]["median_ms"]})
    return DramBound(table([{k: v for k, v in r.items() if k != "share"} for r in rows],
                           {"DRAM lower bound, row-major (MB)": "{:.0f}", f"grouped by {GROUPED} (MB)": "{:.0f}",
                            "measured kernel time (ms)": "{:.3f}"}),
                     max(r["share"] for r in rows))


def experiment_table(exp) -> MarkdownTable:
    """Every shape of the experiment: tiles, waves, TFLOPS of the twin, both orders and cuBLAS, the twin's share."""
    tflops = {"twin": "twin (step 9) TFLOPS", "G8": f"persistent, GROUP_M={GROUPED}", "G1": "GROUP_M=1",
              "cuBLAS": "cuBLAS"}
    return table([{"M×N×K": size_label(r["shape"]), "tiles": r["tiles"], "tiles ÷ SMs": r["waves"],
                   **{col: r[key] and r[key]["tflops"] for key, col in tflops.items()},
                   "twin, % of cuBLAS": r["twin"] and r["twin"]["pct_of_cublas"]} for r in exp.rows],
                 {**{col: "{:.1f}" for col in tflops.values()}, "twin, % of cuBLAS": "{:.1f} %"})


def waves_figure(exp) -> Figure:
    """TFLOPS against tiles per SM for the twin, both orders and cuBLAS, with the wave model T/⌈T/SMs⌉."""
    fig = Figure(figsize=(8.5, 4.8), layout="constrained")
    ax = fig.subplots()
    for key, marker, color, label in (("twin", "o", "tab:blue", "step 9 kernel, non-persistent (twin)"),
                                      ("G8", "s", "tab:orange", "step 10, persistent, GROUP_M = 8"),
                                      ("G1", "^", "tab:green", "step 10, persistent, GROUP_M = 1"),
                                      ("cuBLAS", "x", "k", "cuBLAS")):
        ax.scatter(*zip(*[(r["waves"], r[key]["tflops"]) for r in exp.rows if r[key]]), marker=marker, color=color,
                   label=label, s=40, zorder=3)
    most = max(row["waves"] for row in exp.rows)
    if exp.one_wave:  # the wave model, anchored at the shape that is exactly one full wave
        xs = [x / 100 for x in range(5, 1 + int(100 * most) + 10)]
        ax.plot(xs, _wave_model(exp.one_wave["twin"]["tflops"], xs), color="tab:blue", alpha=0.4, lw=1,
                label="wave model: T/⌈T/SMs⌉, anchored at one full wave")
    for row in exp.rows:
        ax.annotate(size_label(row["shape"]), (row["waves"], row["twin"]["tflops"] if row["twin"] else 0),
                    fontsize=7, xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ticks = [2.0**e for e in range(-3, 1 + math.ceil(math.log2(most)))]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set(xlabel="tiles ÷ SMs (waves of one tile per SM)", ylabel="TFLOPS", ylim=(0, None),
           title=f"Waves: TFLOPS against tiles per SM, {exp.BM}×{exp.BN} tiles\n{short_label(exp.env)}")
    ax.title.set_fontsize(10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def waves(exp) -> Findings | None:
    """The shape just past one wave against the one-wave shape: work and time ratios, the wave model's ratio, the
    last wave's share of a wave's work and of its time, cuBLAS's time ratio; and two waves' rate against one's."""
    one, rows = exp.one_wave, [r for r in exp.rows if r["twin"]]
    past = min((r for r in rows if 1 < r["waves"] < 1.5), key=lambda r: r["waves"], default=None)
    two = next((r for r in rows if abs(r["waves"] - 2) < 1e-9), None)
    if not (one and past):
        return None
    ratio, model = past["twin"]["median_ms"] / one["twin"]["median_ms"], math.ceil(past["waves"])
    out = {"tiles: one wave → just past": f"{one['tiles']} → {past['tiles']}",
           "work ratio": past["tiles"] / one["tiles"], "time ratio": ratio, "wave model's time ratio": model,
           "last wave: share of a wave's work": past["waves"] - (model - 1),
           "last wave: share of a wave's time": ratio - (model - 1),
           "cuBLAS's time ratio, same shapes": past["cuBLAS"]["median_ms"] / one["cuBLAS"]["median_ms"]}
    if two:
        out["two waves: rate / one wave's"] = two["twin"]["tflops"] / one["twin"]["tflops"]
    return Findings(out, facts(out))


def persistence(exp) -> list[tuple[dict, float]]:
    """(row, persistent's speed ÷ its twin's) on the square sizes more than one wave deep, grouped order."""
    return [(row, row["twin"]["median_ms"] / row["G8"]["median_ms"]) for row in exp.rows
            if row["shape"][0] == row["shape"][1] == row["shape"][2] and row["twin"] and row["G8"] and row["waves"] > 1]


@dataclass(frozen=True)
class TileOrder:
    """Grouped against row-major order in the experiment (:func:`order`)."""
    diffs: list  # (row, grouped ÷ row-major speed) at every shape that ran both
    faster: list  # the rows where grouped is faster by more than the noise
    slower: list  # the rows where it is slower by more than the noise


def order(exp) -> TileOrder:
    """Grouped ÷ row-major speed at every shape; the shapes where it is faster or slower by more than the noise."""
    diffs = [(row, row["G1"]["median_ms"] / row["G8"]["median_ms"]) for row in exp.rows if row["G8"] and row["G1"]]
    return TileOrder(diffs, [row for row, d in diffs if d > 1 + tuning.NOISE],
                     [row for row, d in diffs if d < 1 - tuning.NOISE])


@dataclass(frozen=True)
class Verdict:
    """Both predictions against the experiment (:func:`verdict`)."""
    numbers: dict  # label → number: persistent ÷ twin per square, flat or not, grouped ÷ row-major range and counts
    order: str  # "no difference", "no consistent sign" or "one-sided"
    table: MarkdownTable  # ``numbers`` and ``order``


def verdict(exp) -> Verdict:
    """Both predictions from the experiment's records: persistent ÷ twin speed on the squares more than a wave deep
    (``flat``: all within 2 %), and grouped ÷ row-major speed over all shapes (range, and how many are within the
    noise, faster, slower; ``order``: ``"no difference"``, ``"no consistent sign"`` or ``"one-sided"``)."""
    o, kept = order(exp), persistence(exp)
    ratios = [d for _, d in o.diffs]
    out = {**{f"persistent / twin at {size_label(r['shape'])}": d for r, d in kept},
           "persistence flat (within 2 %)": all(abs(d - 1) < 0.02 for _, d in kept),
           "grouped / row-major, lowest": min(ratios), "grouped / row-major, highest": max(ratios),
           f"shapes within {tuning.NOISE:.0%} / grouped faster / slower":
               f"{len(ratios) - len(o.faster) - len(o.slower)} / {len(o.faster)} / {len(o.slower)}"}
    sign = ("no consistent sign" if o.faster and o.slower else
            "no difference" if not (o.faster or o.slower) else "one-sided")
    return Verdict(out, sign, facts({**out, "tile order": sign}))


def worst_table(exp, count: int | None = None) -> MarkdownTable:
    """The shapes furthest from cuBLAS (the ``count`` worst, or all), with how many SMs their last wave keeps busy."""
    rows = []
    for row in sorted((r for r in exp.rows if r["twin"]), key=lambda r: r["twin"]["pct_of_cublas"])[:count]:
        last = row["tiles"] - (math.ceil(row["tiles"] / exp.per_wave) - 1) * exp.per_wave
        rows.append({"shape": size_label(row["shape"]), "% of cuBLAS": row["twin"]["pct_of_cublas"],
                     "tiles": row["tiles"], "waves": math.ceil(row["tiles"] / exp.per_wave),
                     "SMs busy in the last wave": f"{last} of {exp.per_wave} ({last / exp.per_wave:.0%})"})
    return table(rows, {"% of cuBLAS": "{:.1f} %"})


# -- the saw-tooth sweep (deep dive) ------------------------------------------------------------------------------
def saw_tooth(blocks_per_sm: int) -> SimpleNamespace | None:
    """The K = 4096 wave-boundary family of the scheduling sweep (steps 9, 10 and cuBLAS): ``family`` (rows as
    :func:`_shapes`, with the wave model's TFLOPS), ``anchor`` (the one-wave row), the tiles and blocks; or None."""
    doc = load_shipped(results_files.EXPERIMENT_SCHEDULING_NVIDIA_H200, "`experiments/scheduling.py`: steps 9 to 11 with the same "
                       "tiles, and cuBLAS, in one run over squares, wave-boundary, deep and tall shapes")
    if not doc:
        return None
    bm, bn = doc["tile_config"]["BLOCK_M"], doc["tile_config"]["BLOCK_N"]
    blocks = doc["environment"]["sm_count"] * blocks_per_sm
    family = [row for row in _shapes(doc, {"dp": "data_parallel (step 9)", "p": "persistent (step 10)",
                                           "cuBLAS": "cublas"}, bm, bn, blocks)
              if row["shape"][2] == 4096 and row["shape"][0] != row["shape"][1]]  # squares, deep and tall: other K
    anchor = next((row for row in family if row["tiles"] == blocks and row["dp"]), None)
    for row in family:
        row["model"] = _wave_model(anchor["dp"]["tflops"], [row["waves"]])[0] if anchor else None
    return SimpleNamespace(doc=doc, BM=bm, BN=bn, blocks=blocks, family=family, anchor=anchor)


def saw_tooth_table(s) -> MarkdownTable:
    """Each shape of the family: tiles, waves, the wave model's TFLOPS, steps 9 and 10 and cuBLAS."""
    return table([{"M×N×K": size_label(r["shape"]), "tiles": r["tiles"], "tiles ÷ SMs": r["waves"],
                   "wave model, TFLOPS": r["model"], "step 9 TFLOPS": r["dp"]["tflops"],
                   "step 10 TFLOPS": r["p"]["tflops"], "measured ÷ model (step 9)": r["dp"]["tflops"] / r["model"],
                   "cuBLAS TFLOPS": r["cuBLAS"]["tflops"], "step 9, % of cuBLAS": r["dp"]["pct_of_cublas"]}
                  for r in s.family], {**{k: "{:.1f}" for k in ("wave model, TFLOPS", "step 9 TFLOPS", "step 10 TFLOPS",
                                                                "cuBLAS TFLOPS")}, "step 9, % of cuBLAS": "{:.0f} %"})


def saw_tooth_figure(s) -> Figure:
    """The family's TFLOPS (left, with the wave model) and % of cuBLAS (right) against tiles ÷ SMs."""
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    xs = [t / s.blocks for t in range(s.blocks // 4, int(1.1 * max(row["tiles"] for row in s.family)))]
    left.plot(xs, _wave_model(s.anchor["dp"]["tflops"], xs), color="tab:blue", alpha=0.4, lw=1,
              label="wave model: T/⌈T/SMs⌉")
    for key, marker, color, label in (("dp", "o", "tab:blue", "step 9, one tile per block"),
                                      ("p", "s", "tab:orange", "step 10, persistent"), ("cuBLAS", "x", "k", "cuBLAS")):
        waves_ = [row["waves"] for row in s.family]
        left.scatter(waves_, [row[key]["tflops"] for row in s.family], marker=marker, color=color, label=label, s=40,
                     zorder=3)
        if key != "cuBLAS":
            right.scatter(waves_, [row[key]["pct_of_cublas"] for row in s.family], marker=marker, color=color,
                          label=label, s=40, zorder=3)
    left.set(xlabel="tiles ÷ SMs", ylabel="TFLOPS", ylim=(0, None), title="TFLOPS")
    right.set(xlabel="tiles ÷ SMs", ylabel="% of cuBLAS", ylim=(0, 100), title="% of cuBLAS, same run")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.title.set_fontsize(10)
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(f"The saw-tooth: K = 4096, {s.BM}×{s.BN} tiles, {s.blocks} blocks\n{short_label(s.doc['environment'])}",
                 fontsize=10)
    return fig


def saw_tooth_numbers(s) -> Findings:
    """Step 9 against the wave model (measured ÷ model, lowest and highest away from the anchor; whether above the
    model at every point past a whole wave), step 10's time ÷ step 9's, what one tile more than a wave costs step 9
    and cuBLAS, and step 9's % of cuBLAS at whole and part waves."""
    past = [row for row in s.family if row["waves"] % 1 and row["waves"] > 1]
    ratios = [row["dp"]["tflops"] / row["model"] for row in s.family if row is not s.anchor]
    twins = [row["p"]["median_ms"] / row["dp"]["median_ms"] for row in s.family]
    pct = {whole: [r["dp"]["pct_of_cublas"] for r in s.family if (r["waves"] % 1 == 0) == whole] for whole in (1, 0)}
    out = {"anchor (one wave)": f"{size_label(s.anchor['shape'])}, {s.anchor['dp']['tflops']:.1f} TFLOPS",
           "step 9 ÷ model": f"{min(ratios):.2f}–{max(ratios):.2f}",
           "above the model past every whole wave": all(row["dp"]["tflops"] >= row["model"] for row in past),
           "step 10's time ÷ step 9's": f"{min(twins):.3f}–{max(twins):.3f}"}
    nxt = next((r for r in past if r["tiles"] == s.blocks + 1), None)
    for key, name in (("dp", "step 9"), ("cuBLAS", "cuBLAS")) if nxt else ():
        out[f"one tile past a wave: {name} loses"] = f"{1 - nxt[key]['tflops'] / s.anchor[key]['tflops']:.0%}"
    for whole, what in ((1, "whole"), (0, "part")):
        out[f"step 9, % of cuBLAS at {what} waves"] = f"{min(pct[whole]):.0f}–{max(pct[whole]):.0f}"
    return Findings(out, facts(out))
