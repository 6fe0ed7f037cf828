"""Lesson 10's helpers (persistent blocks, tile order, waves), shared with its deep dives
(``lessons/deep_dives/10_*.py``). They return figures, tables and numbers; the words are the lessons'.

* The tile order in Python: :func:`tile_position` (the persistent kernel's index arithmetic), :func:`tile_order`,
  :func:`tile_order_figure`, :func:`first_wave` (what the first wave reads in each order).
* Registers: :func:`register_counts` (by compiler) and :func:`resident_per_sm` (the blocks per SM of what ran).
* The persistence experiment (:data:`PERSISTENCE_RUN`): :func:`load_experiment`, :func:`setup`,
  :func:`dram_table`, :func:`experiment_table`, :func:`waves_figure`, :func:`waves`, :func:`persistence`,
  :func:`order`, :func:`verdict`, :func:`worst_table`.
* The saw-tooth sweep (``experiment-scheduling-h200.json``): :func:`saw_tooth`, :func:`saw_tooth_table`,
  :func:`saw_tooth_figure`, :func:`saw_tooth_numbers`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from matplotlib.figure import Figure

from gemm_steps.harness import tuning
from gemm_steps.harness.environment import short_label

from . import profiles
from .compiled import blocks_per_sm, compile_with_registers, threads_per_block

#: Re-exported: the lessons call lesson_10.compile_with_registers (its home is .compiled).
__all__ = ["compile_with_registers"]
from .display import MarkdownTable, as_step, facts
from .timings import datasheet_bandwidth_tbs, load_shipped, size_label


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
    group_m = as_step(step).config["GROUP_M"]
    fig = Figure(figsize=(12, 0.36 * rows + 1.3), layout="constrained")
    for ax, g in zip(fig.subplots(1, 2), (1, group_m)):
        first, a_rows, b_cols = _first_wave(rows, cols, resident, g)
        for tile, (r, c) in enumerate(tile_order(rows, cols, g)):
            colour = "#f4a261" if (r, c) in first else ("#dee2e6" if tile // resident % 2 else "white")
            ax.add_patch(_square(c, r, colour))
            ax.text(c + 0.5, r + 0.5, str(tile), ha="center", va="center", fontsize=7)
        for boundary in range(g, rows, g):
            if g > 1:
                ax.axhline(boundary, color="#000080", linewidth=2)
        ax.set(xlim=(0, cols), ylim=(rows, 0), aspect="equal", xticks=[], yticks=[],
               xlabel=f"first wave (shaded): {a_rows} row{'s' * (a_rows != 1)} of A's tiles, "
                      f"{b_cols} column{'s' * (b_cols != 1)} of B's")
        ax.set_title("row-major (GROUP_M = 1)" if g == 1 else
                     f"grouped: GROUP_M = {g} (step {as_step(step).number}), groups divided in blue", fontsize=10)
    fig.suptitle(f"The order of {rows} × {cols} tiles of C on a GPU that runs {resident} blocks at once: each number is "
                 f"the tile's place in the order; waves of {resident} tiles alternate white and grey", fontsize=10)
    return fig


def _square(x, y, colour):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="0.5", linewidth=0.8)


def first_wave(step, rows: int, cols: int, resident: int) -> dict:
    """What the first wave of the picture reads of A and B per unit of k (floats), row-major and grouped by the
    step's ``GROUP_M``, and their ratio."""
    config = as_step(step).config
    out = {}
    for g in (1, config["GROUP_M"]):
        _, a_rows, b_cols = _first_wave(rows, cols, resident, g)
        out[f"GROUP_M = {g}: rows of A's tiles, columns of B's"] = f"{a_rows}, {b_cols}"
        out[f"GROUP_M = {g}: floats per step of k"] = a_rows * config["BLOCK_M"] + b_cols * config["BLOCK_N"]
    values = [v for k, v in out.items() if "floats" in k]
    out["row-major / grouped"] = values[0] / values[1]
    return {**out, "table": facts(out)}


# -- registers, by compiler -----------------------------------------------------------------------------------------
def register_counts(entry: dict) -> dict[str, int | None]:
    """One compiled kernel's registers per thread by compiler: the driver's JIT on the GPU host (the shipped Nsight
    Compute report), the ``ptxas`` in nvJitLink here, the ``ptxas`` binary here."""
    profile = profiles.load(entry["step"])
    driver = profile.value("Registers Per Thread") if profile else None
    return {"driver JIT": None if driver is None else int(driver), "nvJitLink": entry.get("registers"),
            "ptxas here": (entry.get("local_ptxas") or {}).get("registers")}


def resident_per_sm(compiled: dict, step) -> dict:
    """Blocks per SM of a step's fast kernel at the register count that ran (the driver's JIT, from the report),
    or at nvJitLink's where there is no report (NVIDIA's occupancy rules: a calculation)."""
    entry = compiled[f"{as_step(step).name}_fast"]
    counts = register_counts(entry)
    registers = counts["driver JIT"] or counts["nvJitLink"]
    return blocks_per_sm(registers, threads_per_block(as_step(step)), entry["shared_bytes"])


# -- the persistence experiment -----------------------------------------------------------------------------------
GROUPED = 8  # the GROUP_M of the experiment's grouped runs (as its records name them)
NAMES = {"twin": "warp_tiling(same config)", "G8": f"persistent GROUP_M={GROUPED}", "G1": "persistent GROUP_M=1",
         "cuBLAS": "cublas"}


@dataclass
class Experiment:
    """The persistence experiment (:data:`PERSISTENCE_RUN`), one row per shape (sorted by tile count)."""

    doc: dict
    BM: int
    BN: int
    per_wave: int
    bandwidth_tbs: float | None
    rows: list[dict] = field(default_factory=list)

    @property
    def env(self) -> dict:
        return self.doc["environment"]

    @property
    def one_wave(self) -> dict | None:
        return next((row for row in self.rows if abs(row["waves"] - 1) < 1e-9 and row["twin"]), None)


#: The run lesson 10 reads, by its exact name (``experiment-persistent-*`` also matches step 17's persistent bench).
PERSISTENCE_RUN = "experiment-persistent-h200.json"


def load_experiment(blocks_per_sm: int) -> Experiment | None:
    """The shipped persistence experiment (step 10 on its first configuration's tiles, as a GPU without a tuning
    table runs it), or None (said so)."""
    doc = load_shipped(PERSISTENCE_RUN, "`experiments/persistent.py`: step 10 with GROUP_M = 8 and = 1, "
                       "and its non-persistent twin (step 9 with step 10's tiles), in one run over squares, "
                       "wave-boundary shapes, a small and a K-heavy shape")
    if not doc:
        return None
    env = doc["environment"]
    from gemm_steps.steps import persistent

    config = asdict(persistent.SEARCH_SPACE[0])  # the tiles a GPU without a tuning table of its own runs
    exp = Experiment(doc, config["BLOCK_M"], config["BLOCK_N"], env["sm_count"] * blocks_per_sm,
                     datasheet_bandwidth_tbs(doc))
    by = {(r["step"], r["M"], r["N"], r["K"]): r for r in doc["records"] if "error" not in r}
    shapes = sorted({(r["M"], r["N"], r["K"]) for r in doc["records"]},
                    key=lambda s: (s[0] // exp.BM) * (s[1] // exp.BN))
    for shape in shapes:
        tiles = (shape[0] // exp.BM) * (shape[1] // exp.BN)
        exp.rows.append({"shape": shape, "tiles": tiles, "waves": tiles / exp.per_wave,
                         **{key: by.get((name, *shape)) for key, name in NAMES.items()}})
    return exp


def setup(exp: Experiment, blocks_per_sm: int) -> MarkdownTable:
    """The experiment's tiles (step 10's first configuration), tiles per wave, L2 and DRAM bandwidth."""
    env = exp.env
    return facts({"GPU": env["gpu"], "tiles (step 10's first configuration)": f"{exp.BM}×{exp.BN}",
                  "tiles per wave (SMs × blocks per SM)": f"{exp.per_wave} ({env['sm_count']} × {blocks_per_sm})",
                  "L2 (MiB)": env["l2_bytes"] / 2**20, "DRAM, datasheet (TB/s)": exp.bandwidth_tbs})


def dram_lower_bound(exp: Experiment, m: int, n: int, k: int, group_m: int) -> int:
    """Bytes of A and B each wave touches (each read once per wave) plus C written once, for one tile order."""
    rows, cols = m // exp.BM, n // exp.BN
    total = 4 * m * n
    for start in range(0, rows * cols, exp.per_wave):
        wave = [tile_position(t, rows, cols, group_m) for t in range(start, min(start + exp.per_wave, rows * cols))]
        total += 4 * k * (exp.BM * len({r for r, _ in wave}) + exp.BN * len({c for _, c in wave}))
    return total


def dram_table(exp: Experiment) -> dict:
    """The DRAM lower bound of each square size in both orders, against the measured time (``table``); ``share``:
    the most of a kernel's time DRAM needs at datasheet bandwidth, in either order (the order's prediction)."""
    lines = [f"| size | tiles | waves | DRAM lower bound, row-major | grouped by {GROUPED} | time at datasheet bandwidth "
             "| measured kernel time |", "|:--|--:|--:|--:|--:|--:|--:|"]
    share = 0.0
    for row in exp.rows:
        m, n, k = row["shape"]
        if not m == n == k or not row["twin"]:
            continue
        plain, grouped = dram_lower_bound(exp, m, n, k, 1), dram_lower_bound(exp, m, n, k, GROUPED)
        seconds = [bytes_ / (exp.bandwidth_tbs * 1e12) for bytes_ in (plain, grouped)]
        share = max(share, max(seconds) / (row["twin"]["median_ms"] / 1e3))
        lines.append(f"| {m}³ | {row['tiles']} | {math.ceil(row['waves'])} | {plain / 1e6:.0f} MB "
                     f"| {grouped / 1e6:.0f} MB | {seconds[0] * 1e3:.3f} / {seconds[1] * 1e3:.3f} ms "
                     f"| {row['twin']['median_ms']:.3f} ms |")
    return {"table": MarkdownTable("\n".join(lines)), "share": share}


def experiment_table(exp: Experiment) -> str:
    lines = [f"| M×N×K | tiles | tiles ÷ SMs | twin (step 9) TFLOPS | persistent, GROUP_M={GROUPED} | GROUP_M=1 | cuBLAS "
             "| twin, % of cuBLAS |", "|:--|--:|--:|--:|--:|--:|--:|--:|"]
    for row in exp.rows:
        tf = {key: (f"{row[key]['tflops']:.1f}" if row[key] else "—") for key in NAMES}
        pct = f"{row['twin']['pct_of_cublas']:.1f} %" if row["twin"] else "—"
        lines.append(f"| {size_label(row['shape'])} | {row['tiles']} | {row['waves']:.2f} | {tf['twin']} "
                     f"| {tf['G8']} | {tf['G1']} | {tf['cuBLAS']} | {pct} |")
    return "\n".join(lines)


def waves_figure(exp: Experiment) -> Figure:
    """TFLOPS against tiles per SM for the twin, both orders and cuBLAS, with the wave model T/⌈T/SMs⌉."""
    fig = Figure(figsize=(8.5, 4.8), layout="constrained")
    ax = fig.subplots()
    styles = {"twin": ("o", "tab:blue", "step 9 kernel, non-persistent (twin)"),
              "G8": ("s", "tab:orange", "step 10, persistent, GROUP_M = 8"),
              "G1": ("^", "tab:green", "step 10, persistent, GROUP_M = 1"), "cuBLAS": ("x", "k", "cuBLAS")}
    for key, (marker, color, label) in styles.items():
        points = [(row["waves"], row[key]["tflops"]) for row in exp.rows if row[key]]
        ax.scatter(*zip(*points), marker=marker, color=color, label=label, s=40, zorder=3)
    most = max(row["waves"] for row in exp.rows)
    if exp.one_wave:  # the wave model, anchored at the shape that is exactly one full wave
        xs = [x / 100 for x in range(5, 1 + int(100 * most) + 10)]
        full = exp.one_wave["twin"]["tflops"]
        ax.plot(xs, [full * x / math.ceil(x) for x in xs], color="tab:blue", alpha=0.4, lw=1,
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


def waves(exp: Experiment) -> dict | None:
    """The shape just past one wave against the one-wave shape: work and time ratios, the wave model's ratio, the
    last wave's share of a wave's work and of its time, cuBLAS's time ratio; and two waves' rate against one's."""
    one = exp.one_wave
    past = min((row for row in exp.rows if 1 < row["waves"] < 1.5 and row["twin"]), key=lambda r: r["waves"],
               default=None)
    two = next((row for row in exp.rows if abs(row["waves"] - 2) < 1e-9 and row["twin"]), None)
    if not (one and past):
        return None
    ratio, model = past["twin"]["median_ms"] / one["twin"]["median_ms"], math.ceil(past["waves"])
    out = {"tiles: one wave → just past": f"{one['tiles']} → {past['tiles']}",
           "work ratio": past["tiles"] / one["tiles"],
           "time ratio": ratio, "wave model's time ratio": model,
           "last wave: share of a wave's work": past["waves"] - (model - 1),
           "last wave: share of a wave's time": ratio - (model - 1),
           "cuBLAS's time ratio, same shapes": past["cuBLAS"]["median_ms"] / one["cuBLAS"]["median_ms"]}
    if two:
        out["two waves: rate / one wave's"] = two["twin"]["tflops"] / one["twin"]["tflops"]
    return {**out, "table": facts(out)}


def persistence(exp: Experiment) -> list[tuple[dict, float]]:
    """(row, persistent's speed ÷ its twin's) on the square sizes more than one wave deep, grouped order."""
    return [(row, row["twin"]["median_ms"] / row["G8"]["median_ms"]) for row in exp.rows
            if row["shape"][0] == row["shape"][1] == row["shape"][2] and row["twin"] and row["G8"] and row["waves"] > 1]


def _flat(exp: Experiment) -> bool:
    return all(abs(speedup - 1) < 0.02 for _, speedup in persistence(exp))


def order(exp: Experiment) -> dict:
    """Grouped ÷ row-major speed at every shape; the shapes where it is faster or slower by more than the noise."""
    diffs = [(row, row["G1"]["median_ms"] / row["G8"]["median_ms"]) for row in exp.rows if row["G8"] and row["G1"]]
    return {"diffs": diffs, "faster": [row for row, d in diffs if d > 1 + tuning.NOISE],
            "slower": [row for row, d in diffs if d < 1 - tuning.NOISE]}


def verdict(exp: Experiment) -> dict:
    """Both predictions from the experiment's records: persistent ÷ twin speed on the squares more than a wave deep
    (``flat``: all within 2 %), and grouped ÷ row-major speed over all shapes (range, and how many are within the
    noise, faster, slower; ``order``: ``"no difference"``, ``"no consistent sign"`` or ``"one-sided"``)."""
    o = order(exp)
    ratios = [d for _, d in o["diffs"]]
    out = {**{f"persistent / twin at {size_label(r['shape'])}": d for r, d in persistence(exp)},
           "persistence flat (within 2 %)": _flat(exp),
           "grouped / row-major, lowest": min(ratios), "grouped / row-major, highest": max(ratios),
           f"shapes within {tuning.NOISE:.0%} / grouped faster / slower":
               f"{len(ratios) - len(o['faster']) - len(o['slower'])} / {len(o['faster'])} / {len(o['slower'])}"}
    sign = ("no consistent sign" if o["faster"] and o["slower"] else
            "no difference" if not (o["faster"] or o["slower"]) else "one-sided")
    return {**out, "order": sign, "table": facts({**out, "tile order": sign})}


def worst_table(exp: Experiment, count: int | None = None) -> MarkdownTable:
    """The shapes furthest from cuBLAS (the ``count`` worst, or all), with how many SMs their last wave keeps busy."""
    worst = sorted((row for row in exp.rows if row["twin"]), key=lambda r: r["twin"]["pct_of_cublas"])[:count]
    lines = ["| shape | % of cuBLAS | tiles | waves | SMs busy in the last wave |", "|:--|--:|--:|--:|--:|"]
    for row in worst:
        waves_ = math.ceil(row["tiles"] / exp.per_wave)
        last = row["tiles"] - (waves_ - 1) * exp.per_wave
        lines.append(f"| {size_label(row['shape'])} | {row['twin']['pct_of_cublas']:.1f} % | {row['tiles']} | {waves_} "
                     f"| {last} of {exp.per_wave} ({last / exp.per_wave:.0%}) |")
    return MarkdownTable("\n".join(lines))


# -- the saw-tooth sweep (deep dive) ------------------------------------------------------------------------------
@dataclass
class SawTooth:
    doc: dict
    BM: int
    BN: int
    blocks: int
    family: list[dict]
    anchor: dict | None


def saw_tooth(blocks_per_sm: int) -> SawTooth | None:
    """The K = 4096 wave-boundary family of the scheduling sweep (steps 9, 10 and cuBLAS), or None."""
    doc = load_shipped("experiment-scheduling-h200.json", "`experiments/scheduling.py`: steps 9 to 11 with the same "
                       "tiles, and cuBLAS, in one run over squares, wave-boundary, deep and tall shapes")
    if not doc:
        return None
    bm, bn = doc["tile_config"]["BLOCK_M"], doc["tile_config"]["BLOCK_N"]
    blocks = doc["environment"]["sm_count"] * blocks_per_sm
    by = {(r["step"], r["M"], r["N"], r["K"]): r for r in doc["records"] if "error" not in r}
    family = []
    for m, n, k in sorted({(r["M"], r["N"], r["K"]) for r in doc["records"]}, key=lambda s: (s[0] // bm) * (s[1] // bn)):
        if k != 4096 or m == n:
            continue  # squares and the deep and tall shapes have other K, or other tile times
        tiles = (m // bm) * (n // bn)
        family.append({"shape": (m, n, k), "tiles": tiles, "waves": tiles / blocks,
                       "dp": by.get(("data_parallel (step 9)", m, n, k)), "p": by.get(("persistent (step 10)", m, n, k)),
                       "cuBLAS": by.get(("cublas", m, n, k))})
    anchor = next((row for row in family if row["tiles"] == blocks and row["dp"]), None)
    for row in family:
        row["model"] = anchor["dp"]["tflops"] * row["waves"] / math.ceil(row["waves"]) if anchor else None
    return SawTooth(doc, bm, bn, blocks, family, anchor)


def saw_tooth_table(s: SawTooth) -> str:
    lines = ["| M×N×K | tiles | tiles ÷ SMs | wave model, TFLOPS | step 9 TFLOPS | step 10 TFLOPS | measured ÷ model "
             "(step 9) | cuBLAS TFLOPS | step 9, % of cuBLAS |", "|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row in s.family:
        lines.append(f"| {size_label(row['shape'])} | {row['tiles']} | {row['waves']:.2f} | {row['model']:.1f} "
                     f"| {row['dp']['tflops']:.1f} | {row['p']['tflops']:.1f} | {row['dp']['tflops'] / row['model']:.2f} "
                     f"| {row['cuBLAS']['tflops']:.1f} | {row['dp']['pct_of_cublas']:.0f} % |")
    return MarkdownTable("\n".join(lines))


def saw_tooth_figure(s: SawTooth) -> Figure:
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    marks = {"dp": ("o", "tab:blue", "step 9, one tile per block"), "p": ("s", "tab:orange", "step 10, persistent"),
             "cuBLAS": ("x", "k", "cuBLAS")}
    xs = [t / s.blocks for t in range(s.blocks // 4, int(1.1 * max(row["tiles"] for row in s.family)))]
    left.plot(xs, [s.anchor["dp"]["tflops"] * x / math.ceil(x) for x in xs], color="tab:blue", alpha=0.4, lw=1,
              label="wave model: T/⌈T/SMs⌉")
    for key, (marker, color, label) in marks.items():
        left.scatter([row["waves"] for row in s.family], [row[key]["tflops"] for row in s.family], marker=marker,
                     color=color, label=label, s=40, zorder=3)
        if key != "cuBLAS":
            right.scatter([row["waves"] for row in s.family], [row[key]["pct_of_cublas"] for row in s.family],
                          marker=marker, color=color, label=label, s=40, zorder=3)
    left.set(xlabel="tiles ÷ SMs", ylabel="TFLOPS", ylim=(0, None), title="TFLOPS")
    right.set(xlabel="tiles ÷ SMs", ylabel="% of cuBLAS", ylim=(0, 100), title="% of cuBLAS, same run")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.title.set_fontsize(10)
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(f"The saw-tooth: K = 4096, {s.BM}×{s.BN} tiles, {s.blocks} blocks\n{short_label(s.doc['environment'])}",
                 fontsize=10)
    return fig


def saw_tooth_numbers(s: SawTooth) -> dict:
    """Step 9 against the wave model (measured ÷ model, lowest and highest away from the anchor; ``above_past_whole``:
    above the model at every point past a whole wave), step 10's time ÷ step 9's, what one tile more than a wave
    costs step 9 and cuBLAS, and step 9's % of cuBLAS at whole and part waves."""
    past = [row for row in s.family if row["waves"] % 1 and row["waves"] > 1]
    ratios = [row["dp"]["tflops"] / row["model"] for row in s.family if row is not s.anchor]
    twins = [row["p"]["median_ms"] / row["dp"]["median_ms"] for row in s.family]
    whole = [row["dp"]["pct_of_cublas"] for row in s.family if row["waves"] % 1 == 0]
    partial = [row["dp"]["pct_of_cublas"] for row in s.family if row["waves"] % 1]
    out = {"anchor (one wave)": f"{size_label(s.anchor['shape'])}, {s.anchor['dp']['tflops']:.1f} TFLOPS",
           "step 9 ÷ model": f"{min(ratios):.2f}–{max(ratios):.2f}",
           "above the model past every whole wave": all(row["dp"]["tflops"] >= row["model"] for row in past),
           "step 10's time ÷ step 9's": f"{min(twins):.3f}–{max(twins):.3f}"}
    nxt = next((r for r in past if r["tiles"] == s.blocks + 1), None)
    if nxt:
        for key, name in (("dp", "step 9"), ("cuBLAS", "cuBLAS")):
            out[f"one tile past a wave: {name} loses"] = f"{1 - nxt[key]['tflops'] / s.anchor[key]['tflops']:.0%}"
    out["step 9, % of cuBLAS at whole waves"] = f"{min(whole):.0f}–{max(whole):.0f}"
    out["step 9, % of cuBLAS at part waves"] = f"{min(partial):.0f}–{max(partial):.0f}"
    return {**out, "table": facts(out)}
