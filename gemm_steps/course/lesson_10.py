"""Lesson 10's helpers (persistent blocks, tile order, waves), shared with its deep dives
(``lessons/deep_dives/10_*.py``).

* **The tile order in Python** — :func:`tile_position` is the persistent kernel's index arithmetic; :func:`tile_order`
  lists the tiles in the order it visits them (the same list as the exercise's plain loops,
  :func:`gemm_steps.course.exercise_solutions.expected_tile_order`); :func:`tile_order_figure` draws that order,
  grouped and row-major, with the tiles of the first wave; :func:`first_wave_text` counts what that wave reads.
* **Registers, by compiler** — :func:`compile_with_registers` (PTX on this CPU; registers from the ``ptxas`` in
  nvJitLink and from the ``ptxas`` binary here), :func:`register_table` (with the count the driver's JIT made on the
  GPU host, from the shipped Nsight Compute reports), :func:`resident_per_sm` (the blocks per SM of what ran).
* **The persistence experiment** (``experiments/persistent.py``, ``experiment-persistent-*.json``) —
  :func:`load_experiment` reads it into one row per shape; the functions after it turn rows into the DRAM bound, the
  table, the waves figure and the verdicts (:func:`verdict` for the main path; the shape-by-shape texts for the deep
  dive ``10_persistence_and_order``). Every interpreting sentence is computed here from the records.
* **The saw-tooth sweep** (``experiment-scheduling-h200.json``, for the deep dive ``10_the_saw_tooth``) —
  :func:`saw_tooth` and the functions after it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from matplotlib.figure import Figure

from gemm_steps.harness.step import get_step
from gemm_steps.harness import results_files, tuning
from gemm_steps.harness.environment import short_label
from gemm_steps.toolkit import tuned

from . import profiles
from .compiled import blocks_per_sm, compile_with_registers, threads_per_block

#: Re-exported: the lessons call lesson_10.compile_with_registers (its home is .compiled).
__all__ = ["compile_with_registers"]
from .display import MarkdownTable, as_step
from .timings import datasheet_bandwidth_tbs, load_shipped, shown_path, size_label


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


def first_wave_text(step, rows: int, cols: int, resident: int) -> str:
    """What the first wave of the picture reads of A and B per unit of k, in both orders, with the step's tiles."""
    config = as_step(step).config
    bm, bn, group_m = config["BLOCK_M"], config["BLOCK_N"], config["GROUP_M"]
    floats = {}
    for g in (1, group_m):
        _, a_rows, b_cols = _first_wave(rows, cols, resident, g)
        floats[g] = (a_rows, b_cols, a_rows * bm + b_cols * bn)
    (ra, rb, rf), (ga, gb, gf) = floats[1], floats[group_m]
    return (f"With step {as_step(step).number}'s {bm} × {bn} tiles, the first wave reads, per step of k, "
            f"{ra} × {bm} + {rb} × {bn} = **{rf:,}** floats of A and B in row-major order and "
            f"{ga} × {bm} + {gb} × {bn} = **{gf:,}** grouped by {group_m}: {rf / gf:.1f}× fewer, for the same "
            f"{resident} tiles.")


# -- registers, by compiler -----------------------------------------------------------------------------------------
def register_counts(entry: dict) -> dict[str, int | None]:
    """One compiled kernel's registers per thread by compiler: the driver's JIT on the GPU host (the shipped Nsight
    Compute report), the ``ptxas`` in nvJitLink here, the ``ptxas`` binary here."""
    profile = profiles.load(entry["step"])
    driver = profile.value("Registers Per Thread") if profile else None
    return {"driver JIT": None if driver is None else int(driver), "nvJitLink": entry.get("registers"),
            "ptxas here": (entry.get("local_ptxas") or {}).get("registers")}


def _host_driver() -> str:
    """The driver of the GPU host where the shipped reports were made, as that host's benchmark file records it."""
    gpu = profiles.REPORTS.removeprefix("ncu-steps-")
    found = results_files.newest_matching(f"bench-{gpu}*.json")
    if not found:
        return "the GPU host's driver"
    env = found[1]["environment"]
    return (f"driver {env['smi_driver_version']}, CUDA {env['driver_cuda_version']}, on the {env['gpu']}, as "
            f"`{shown_path(found[0])}` records that host")


def resident_per_sm(compiled: dict, step) -> dict:
    """Blocks per SM of a step's fast kernel at the register count that ran (the driver's JIT, from the report),
    or at nvJitLink's where there is no report (NVIDIA's occupancy rules: a calculation)."""
    entry = compiled[f"{as_step(step).name}_fast"]
    counts = register_counts(entry)
    registers = counts["driver JIT"] or counts["nvJitLink"]
    return blocks_per_sm(registers, threads_per_block(as_step(step)), entry["shared_bytes"])


def register_table(compiled: dict) -> MarkdownTable:
    """Registers per thread of each fast kernel, by compiler, and the blocks per SM each count allows; then which
    compilers here agree with the driver's, and how each count moves from one kernel to the next."""
    jit = next((e["ptxas"] for e in compiled.values() if e.get("ptxas")), "nvJitLink")
    local = next((e["local_ptxas"]["version"] for e in compiled.values() if e.get("local_ptxas")), "ptxas here")
    names = {"driver JIT": "the driver's JIT", "nvJitLink": f"ptxas in {jit}", "ptxas here": local}
    lines = [f"| kernel | {names['driver JIT']}, on the GPU host (Nsight Compute) | {names['nvJitLink']}, here "
             f"| {local}, here | blocks (warps) per SM at that count |", "|:--|--:|--:|--:|:--|"]
    counts = {}
    for label, entry in compiled.items():
        counts[label] = register_counts(entry)
        step = get_step(entry["step"])
        allowed = sorted({f"{o['blocks']} ({o['warps']})" for n in counts[label].values() if n
                          for o in [blocks_per_sm(n, threads_per_block(step), entry["shared_bytes"])]})
        lines.append(f"| {label} | " + " | ".join("—" if n is None else str(n) for n in counts[label].values())
                     + f" | {' or '.join(allowed)} |")
    lowered = next((e["local_ptxas"].get("ptx_version") for e in compiled.values() if e.get("local_ptxas")), None)
    text = ("\n".join(lines) + "\n\nThe first column is what ran: the PTX compiled by the driver when the kernel was "
            f"loaded ({_host_driver()}), as the shipped reports record it "
            f"(`{shown_path(profiles.load('persistent').path.parent)}/`). The other two compile the PTX that NVVM "
            "makes here, for sm_90" + (f" (for {local}, with the PTX's `.version` line lowered to {lowered}, the "
                                       "newest it accepts)" if lowered else "") + ".")
    if all(c["driver JIT"] for c in counts.values()):
        agree = [names[key] for key in ("nvJitLink", "ptxas here")
                 if all(c[key] == c["driver JIT"] for c in counts.values())]
        moves = "; ".join(f"{names[key]}: " + " → ".join(str(c[key]) for c in counts.values())
                          for key in names if all(c[key] for c in counts.values()))
        text += (f" On {'both kernels' if len(counts) == 2 else 'every kernel'}, "
                 + (f"{' and '.join(agree)} gives the driver's count" if agree else "no compiler here gives the "
                    "driver's count") + f". From {' to '.join(counts)}: {moves}. "
                 "A register count means something only with the name of the compiler that made it.")
    return MarkdownTable(text)


# -- the persistence experiment -----------------------------------------------------------------------------------
GROUPED = 8  # the GROUP_M of the experiment's grouped runs (as its records name them)
NAMES = {"twin": "warp_tiling(same config)", "G8": f"persistent GROUP_M={GROUPED}", "G1": "persistent GROUP_M=1",
         "cuBLAS": "cublas"}


@dataclass
class Experiment:
    """experiment-persistent-*.json, one row per shape (sorted by tile count)."""

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


def load_experiment(blocks_per_sm: int) -> Experiment | None:
    """The shipped persistence experiment with step 10's tuned tiles for its GPU, or None (said so)."""
    doc = load_shipped("experiment-persistent-*.json", "`experiments/persistent.py`: step 10 with GROUP_M = 8 and = 1, "
                       "and its non-persistent twin (step 9 with step 10's tiles), in one run over squares, "
                       "wave-boundary shapes, a small and a K-heavy shape")
    if not doc:
        return None
    env = doc["environment"]
    shipped = json.loads(tuned.SHIPPED_TABLE.read_text()).get(env["gpu"], {}).get("warp_tiling")
    import gemm_steps

    config = shipped["config"] if shipped else dict(gemm_steps.get_step("persistent").config)
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


def setup_text(exp: Experiment, blocks_per_sm: int) -> str:
    env = exp.env
    return (f"The experiment ran step 10's tuned tiles for the {env['gpu']} (`gemm_steps/toolkit/tuned.json`): "
            f"**{exp.BM}×{exp.BN}**, so a wave is {exp.per_wave} tiles ({env['sm_count']} SMs × {blocks_per_sm}). "
            f"L2: {env['l2_bytes'] / 2**20:.0f} MiB; DRAM: {exp.bandwidth_tbs} TB/s (datasheet).")


def dram_lower_bound(exp: Experiment, m: int, n: int, k: int, group_m: int) -> int:
    """Bytes of A and B each wave touches (each read once per wave) plus C written once, for one tile order."""
    rows, cols = m // exp.BM, n // exp.BN
    total = 4 * m * n
    for start in range(0, rows * cols, exp.per_wave):
        wave = [tile_position(t, rows, cols, group_m) for t in range(start, min(start + exp.per_wave, rows * cols))]
        total += 4 * k * (exp.BM * len({r for r, _ in wave}) + exp.BN * len({c for _, c in wave}))
    return total


def dram_table(exp: Experiment) -> str:
    """The DRAM lower bound of each square size in both orders, against the measured time: the order's prediction."""
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
    return ("\n".join(lines) + f"\n\n**Prediction:** if L2 keeps each wave's data, DRAM needs about "
            f"**{share:.0%}** of the kernel's time at full bandwidth in either order, so the order has little to win "
            "at these sizes: "
            "the kernel is not waiting on DRAM. (Grouping can even touch *more* rows per wave, when a wave ends "
            "part-way into a group.)")


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


def waves_text(exp: Experiment) -> str:
    one = exp.one_wave
    if not one:
        return "This run has no shape of exactly one wave to compare with."
    just_past = min((row for row in exp.rows if 1 < row["waves"] < 1.5 and row["twin"]), key=lambda r: r["waves"],
                    default=None)
    two = next((row for row in exp.rows if abs(row["waves"] - 2) < 1e-9 and row["twin"]), None)
    lines = []
    if just_past:
        ratio = just_past["twin"]["median_ms"] / one["twin"]["median_ms"]
        model = math.ceil(just_past["waves"])
        lines.append(
            f"* {just_past['tiles']} tiles ({just_past['waves']:.2f} waves) take **{ratio:.2f}×** the time of "
            f"{one['tiles']} tiles (1.00 wave) for {just_past['tiles'] / one['tiles']:.2f}× the work; the wave model "
            f"says {model}×. The last wave holds {just_past['waves'] - (model - 1):.0%} of a wave's work and costs "
            f"**{ratio - (model - 1):.0%} of a wave's time**"
            + (" — less than a full wave (its few blocks have memory and L2 nearly to themselves), but far more "
               "than its work. " if ratio < model else ". ")
            + f"cuBLAS, on the same two shapes: {just_past['cuBLAS']['median_ms'] / one['cuBLAS']['median_ms']:.2f}×.")
    if two:
        lines.append(f"* {two['tiles']} tiles (2.00 waves) run at {two['twin']['tflops']:.1f} TFLOPS, "
                     f"{two['twin']['tflops'] / one['twin']['tflops']:.2f}× the rate of one wave.")
    return "\n".join(lines)


def persistence(exp: Experiment) -> list[tuple[dict, float]]:
    """(row, persistent's speed ÷ its twin's) on the square sizes more than one wave deep, grouped order."""
    return [(row, row["twin"]["median_ms"] / row["G8"]["median_ms"]) for row in exp.rows
            if row["shape"][0] == row["shape"][1] == row["shape"][2] and row["twin"] and row["G8"] and row["waves"] > 1]


def _flat(exp: Experiment) -> bool:
    return all(abs(speedup - 1) < 0.02 for _, speedup in persistence(exp))


def persistence_text(exp: Experiment) -> str:
    lines = [f"* {size_label(row['shape'])} ({row['waves']:.2f} waves): persistent is **{speedup:.3f}×** as fast as "
             f"its twin (GROUP_M = {GROUPED})" for row, speedup in persistence(exp)]
    return "\n".join(lines) + "\n\n" + (
        "Flat, as predicted: within 2 %. With one block per SM the twin already runs in waves of one tile per SM; "
        "the hardware block scheduler launches a block in far less time than a tile takes; and the last wave is "
        "equally partial either way. A persistent kernel earns its keep when there is something to do *between* "
        "tiles — prologue work to amortize, or a smarter split of the work than whole tiles (lesson 11)."
        if _flat(exp) else "Not flat: persistence changed the time by more than 2 % on a square size; the reasons the "
        "model gives for flatness do not cover it.")


def order(exp: Experiment) -> dict:
    """Grouped ÷ row-major speed at every shape; the shapes where it is faster or slower by more than the noise."""
    diffs = [(row, row["G1"]["median_ms"] / row["G8"]["median_ms"]) for row in exp.rows if row["G8"] and row["G1"]]
    return {"diffs": diffs, "faster": [row for row, d in diffs if d > 1 + tuning.NOISE],
            "slower": [row for row, d in diffs if d < 1 - tuning.NOISE]}


def order_text(exp: Experiment) -> str:
    o = order(exp)
    diffs, faster, slower = o["diffs"], o["faster"], o["slower"]
    return (
        ", ".join(f"{size_label(row['shape'])} {d:.3f}×" for row, d in diffs) + " (grouped ÷ row-major speed).\n\n"
        + f"Within {tuning.NOISE:.0%} (the course's noise threshold) at {len(diffs) - len(faster) - len(slower)} of "
        f"{len(diffs)} shapes; grouped faster by more than that at {len(faster)}"
        + (f" ({', '.join(size_label(r['shape']) for r in faster)})" if faster else "")
        + f", row-major faster at {len(slower)}"
        + (f" ({', '.join(size_label(r['shape']) for r in slower)})" if slower else "")
        + ". There is no consistent sign, and the DRAM count leaves little for an order to win at these sizes on "
        "a cache this large. What differs at single shapes is one run each: this experiment cannot say whether a few "
        "percent either way is the order or run-to-run variation, and we do not claim either.")


def verdict(exp: Experiment) -> str:
    """The main path's verdict on both predictions, one sentence each, from the experiment's records."""
    deep, o = persistence(exp), order(exp)
    ratios = [d for _, d in o["diffs"]]
    steady = len(ratios) - len(o["faster"]) - len(o["slower"])
    return (
        f"* **Persistence:** on the squares more than a wave deep ({', '.join(size_label(r['shape']) for r, _ in deep)}"
        f"), step 10 runs at {' and '.join(f'{d:.3f}×' for _, d in deep)} the speed of its non-persistent twin: "
        + ("**flat, as predicted**." if _flat(exp) else "**not flat**: more than 2 % apart, which the prediction did "
           "not expect.")
        + f"\n* **Tile order:** grouped (GROUP_M = {GROUPED}) ÷ row-major speed runs from {min(ratios):.3f}× to "
        f"{max(ratios):.3f}× over {len(ratios)} shapes — within {tuning.NOISE:.0%} at {steady}, faster at "
        f"{len(o['faster'])}, slower at {len(o['slower'])}: "
        + ("**no consistent sign**, as the DRAM count predicted; one run per shape cannot tell a few percent at a "
           "single shape from run-to-run variation." if o["faster"] and o["slower"] else
           "**no difference beyond the noise**, as the DRAM count predicted." if not (o["faster"] or o["slower"]) else
           f"**{'grouped' if o['faster'] else 'row-major'} never slower**, which the DRAM count did not predict."))


def furthest_text(exp: Experiment, count: int = 3) -> str:
    """The ``count`` shapes furthest from cuBLAS, with how many SMs their last wave keeps busy."""
    return "\n".join(worst_text(exp).splitlines()[:count])


def worst_text(exp: Experiment) -> str:
    worst = sorted((row for row in exp.rows if row["twin"]), key=lambda r: r["twin"]["pct_of_cublas"])

    def waves(tiles):
        count, last = math.ceil(tiles / exp.per_wave), tiles - (math.ceil(tiles / exp.per_wave) - 1) * exp.per_wave
        return (f"{tiles} tiles: {count} wave{'s, the last' if count > 1 else ''} with {last} of {exp.per_wave} SMs "
                f"busy ({last / exp.per_wave:.0%})")

    return "\n".join(f"* {size_label(row['shape'])}: **{row['twin']['pct_of_cublas']:.1f} %** of cuBLAS — "
                     f"{waves(row['tiles'])}" for row in worst)


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
    return (f"The wave model, T/⌈T/SMs⌉, anchored at the shape that is exactly one wave "
            f"({size_label(s.anchor['shape'])}, {s.anchor['dp']['tflops']:.1f} TFLOPS):\n\n" + "\n".join(lines))


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


def saw_tooth_text(s: SawTooth) -> str:
    past = [row for row in s.family if row["waves"] % 1 and row["waves"] > 1]
    ratios = [row["dp"]["tflops"] / row["model"] for row in s.family if row is not s.anchor]
    twins = [row["p"]["median_ms"] / row["dp"]["median_ms"] for row in s.family]
    whole = [row["dp"]["pct_of_cublas"] for row in s.family if row["waves"] % 1 == 0]
    partial = [row["dp"]["pct_of_cublas"] for row in s.family if row["waves"] % 1]
    next_one = next((r for r in past if r["tiles"] == s.blocks + 1), None)
    drops = {key: 1 - next_one[key]["tflops"] / s.anchor[key]["tflops"] for key in ("dp", "cuBLAS")} if next_one else None
    return (
        f"Step 9 follows the wave model to within **{min(ratios):.2f}–{max(ratios):.2f}×** at every point but the one "
        "it is anchored at, "
        + ("and always a little above it past a whole wave: a part-empty last wave runs a little faster than a full "
           "one. " if all(row["dp"]["tflops"] >= row["model"] for row in past) else "")
        + f"Step 10 tracks step 9 point for point (its time ÷ step 9's: {min(twins):.3f}–{max(twins):.3f}): persistence "
        "moves no point of the saw-tooth. "
        + (f"One tile more than a wave costs step 9 **{drops['dp']:.0%}** of its TFLOPS; cuBLAS loses "
           f"{drops['cuBLAS']:.0%} on the same two shapes — it is free to choose other tiles or to split K for a shape, "
           "and we do not know what it chose. " if drops else "")
        + "The % of cuBLAS on the right is the same saw-tooth: at whole waves step 9 reaches "
        + "–".join(f"{x:.0f}" for x in sorted({min(whole), max(whole)})) + " % of cuBLAS, elsewhere "
        + "–".join(f"{x:.0f}" for x in sorted({min(partial), max(partial)})) + " %; the difference is the empty part "
        "of the last wave.")
