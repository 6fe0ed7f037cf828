"""Lesson 9's helpers (warp tiling), shared with its deep dive (``lessons/deep_dives/09_the_last_ten_percent.py``).
They return figures, tables and numbers; the words around them are the lessons'.

* The pictures: :func:`tiling_figure` (block tile → warp tiles → one lane's 4×4 sub-blocks) and :func:`bank_figure`
  (the words and banks each lane of one warp reads at one k-step, under step 8's and step 9's maps).
* The shared-memory model: :func:`thread_origin`, :func:`fragment_words`, :func:`store_words`, :func:`k_step_model`,
  :func:`model_table` and :func:`model_check` (against the shipped Nsight Compute reports).
* The measurement: :func:`verdict`, :func:`map_and_tiles` (the tuning sweeps separate the map from the tiles),
  :func:`what_it_bought`.
* The last 10 %: :func:`issue_rates`, :func:`issue_table`, :func:`fma_order`, :func:`ncu_h200_table`,
  :func:`code_shapes`; the k-loop in SASS (:func:`k_loop_sass`, a shipped results file): :func:`sass_table`,
  :func:`sass_compare`, :func:`reuse_counts`, :func:`pipelining_prediction`, :func:`jit_against_ptxas`,
  :func:`async_table`.
"""

from __future__ import annotations


from gemm_steps.harness.step import get_step

from . import profiles
from .compiled import blocks_per_sm, compile_with_registers, threads_per_block
from .display import MarkdownTable, as_step, facts
from .models import served
from .sweeps import config_label, same_config, sweep_records, variants_table
from .timings import headline_size, record, shipped_file, shown_path, size_label, speedups_by_size

WARP = range(32)  # the first warp of a block: threads 0 … 31
BANKS = 32
PHASE = 8  # a 128-bit shared load is served a quarter-warp (8 lanes, 32 words) at a time


# -- the thread → C maps, as the kernels write them ------------------------------------------------------------------
def is_warp_tiled(config: dict) -> bool:
    return "WARP_TILE_M" in config


def thread_origin(config: dict, tid: int) -> tuple[int, int]:
    """(thread_row, thread_col) of thread ``tid`` in the block tile, as the kernel computes them.

    Step 8 (``double_buffered.py``): ``thread_row = tid // THREADS_N * THREAD_M``, ``thread_col = tid % THREADS_N *
    THREAD_N``. Step 9 (``warp_tiling.py``): ``thread_row = warp // WARPS_N * WARP_TILE_M + lane // LANES_N * 4``,
    ``thread_col = warp % WARPS_N * WARP_TILE_N + lane % LANES_N * 4``."""
    c = config
    if is_warp_tiled(c):
        warp, lane = tid // 32, tid % 32
        return (warp // c["WARPS_N"] * c["WARP_TILE_M"] + lane // c["LANES_N"] * 4,
                warp % c["WARPS_N"] * c["WARP_TILE_N"] + lane % c["LANES_N"] * 4)
    return tid // c["THREADS_N"] * c["THREAD_M"], tid % c["THREADS_N"] * c["THREAD_N"]


def fragment_offset(config: dict, q: int, operand: str) -> int:
    """Where the float4 ``q`` (0, 4, 8, …) of a fragment starts, past thread_row (A) or thread_col (B): step 8 reads
    ``thread_row + q``; step 9 ``thread_row + q // 4 * A_CHUNK_STRIDE`` (B: ``B_CHUNK_STRIDE``)."""
    if is_warp_tiled(config):
        return q // 4 * config["A_CHUNK_STRIDE" if operand == "A" else "B_CHUNK_STRIDE"]
    return q


def fragment_words(config: dict, kk: int = 0, warp=WARP) -> dict[str, list[list[range]]]:
    """The 32-bit words of shared memory that each lane reads at k-step ``kk``: for A and for B, one list per
    ``LDS.128`` (``load_float4``), each a list of the lanes' 4 words (stage 0; ``a_tile[kk * BLOCK_M + row]``,
    ``b_tile[kk * BLOCK_N + col]``)."""
    out = {}
    for operand, width, size in (("A", config["BLOCK_M"], config["THREAD_M"]),
                                 ("B", config["BLOCK_N"], config["THREAD_N"])):
        loads = []
        for q in range(0, size, 4):
            lanes = []
            for t in warp:
                base = kk * width + thread_origin(config, t)[0 if operand == "A" else 1] + fragment_offset(config, q,
                                                                                                            operand)
                lanes.append(range(base, base + 4))
            loads.append(lanes)
        out[operand] = loads
    return out


def store_words(config: dict, warp=WARP) -> dict[str, list[list[range]]]:
    """The words each lane writes into one stage, per k-tile: A transposed, one float at a time
    (``a_tile[a_k * BLOCK_M + a_row + q * BLOCK_M]``), B as float4 (``b_tile[b_k * BLOCK_N + b_col]``)."""
    c = config
    a, b = [], []
    for load in range(c["A_LOADS"]):
        for q in range(4):
            lanes = []
            for t in warp:
                row, k = (t + load * c["THREADS"]) // c["A_VECTORS_PER_ROW"], (t + load * c["THREADS"]) % c[
                    "A_VECTORS_PER_ROW"] * 4
                lanes.append(range(k * c["BLOCK_M"] + row + q * c["BLOCK_M"], k * c["BLOCK_M"] + row + q * c[
                    "BLOCK_M"] + 1))
            a.append(lanes)
    for load in range(c["B_LOADS"]):
        lanes = []
        for t in warp:
            k, col = (t + load * c["THREADS"]) // c["B_VECTORS_PER_ROW"], (t + load * c["THREADS"]) % c[
                "B_VECTORS_PER_ROW"] * 4
            lanes.append(range(k * c["BLOCK_N"] + col, k * c["BLOCK_N"] + col + 4))
        b.append(lanes)
    return {"A": a, "B": b}


def cost(lanes: list[range]) -> tuple[int, int]:
    """(wavefronts, the fewest possible) of one warp-wide access: 32 / width lanes at a time (a quarter-warp for
    128-bit accesses), each phase as many wavefronts as the most distinct words one bank must serve in it."""
    width = len(lanes[0])
    return served(lanes, width), len(lanes) // (32 // width)


def k_step_model(step) -> dict:
    """Wavefronts and bank conflicts (wavefronts beyond the fewest possible) per warp and k-step: the fragment loads
    of one k-step, and the tile stores of one k-tile divided by its BLOCK_K k-steps."""
    c = as_step(step).config
    frags, stores = fragment_words(c), store_words(c)
    out = {}
    for what, accesses, per in (("A loads", frags["A"], 1), ("B loads", frags["B"], 1),
                                ("A stores", stores["A"], c["BLOCK_K"]), ("B stores", stores["B"], c["BLOCK_K"])):
        costs = [cost(lanes) for lanes in accesses]
        out[what] = {"wavefronts": sum(w for w, _ in costs) / per, "conflicts": sum(w - m for w, m in costs) / per}
    out["total"] = {key: sum(v[key] for v in out.values()) for key in ("wavefronts", "conflicts")}
    return out


def fmas_per_warp_k_step(config: dict) -> int:
    return 32 * config["THREAD_M"] * config["THREAD_N"]


def measured_per_k_step(step) -> dict | None:
    """The shipped Nsight Compute report of ``step`` (one 2048³ launch), per warp and k-step."""
    step = as_step(step)
    p = profiles.load(step.name)
    if p is None:
        return None
    ffma = p.value("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
    k_steps = ffma / fmas_per_warp_k_step(step.config)
    return {"wavefronts": p.value("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") / k_steps,
            "conflicts": p.value("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum") / k_steps}


def model_table(steps) -> MarkdownTable:
    """The model's wavefronts and conflicts per warp and k-step against the profiler's, for each step."""
    lines = ["| step | fragment loads per k-step (A + B) | wavefronts: A loads + B loads + stores (model) "
             "| bank conflicts (model) | bank conflicts (profiler) | shared wavefronts (profiler) "
             "| FMAs per wavefront (profiler) |", "|:--|--:|--:|--:|--:|--:|--:|"]
    for step in map(as_step, steps):
        c, m, p = step.config, k_step_model(step), measured_per_k_step(step)
        loads = f"{c['THREAD_M'] // 4} + {c['THREAD_N'] // 4}"
        wf = (f"{m['A loads']['wavefronts']:g} + {m['B loads']['wavefronts']:g} + "
              f"{m['A stores']['wavefronts'] + m['B stores']['wavefronts']:g} = {m['total']['wavefronts']:g}")
        fmas = fmas_per_warp_k_step(c)
        lines.append(f"| {step.number} {step.name} | {loads} | {wf} | {m['total']['conflicts']:g} | "
                     + (f"{p['conflicts']:.2f} | {p['wavefronts']:.2f} | {fmas / p['wavefronts']:.0f} |" if p else
                        "— | — | — |"))
    return MarkdownTable("\n".join(lines))


def model_check(before, after) -> dict:
    """The model's bank conflicts per warp and k-step (B fragment, A stores) against the profiler's, for both steps;
    ``agree``: every total within 0.05; and how many wavefronts the profiler counts fewer than the model."""
    m = {as_step(s).number: k_step_model(s) for s in (before, after)}
    p = {as_step(s).number: measured_per_k_step(s) for s in (before, after)}
    out = {}
    for n in m:
        out[f"step {n}: B-fragment conflicts (model)"] = m[n]["B loads"]["conflicts"]
        out[f"step {n}: A-store conflicts (model)"] = m[n]["A stores"]["conflicts"]
        if p[n]:
            out[f"step {n}: conflicts, model / profiler"] = f"{m[n]['total']['conflicts']:g} / {p[n]['conflicts']:.2f}"
            out[f"step {n}: wavefronts the profiler counts fewer"] = m[n]["total"]["wavefronts"] - p[n]["wavefronts"]
    agree = all(p[n] and abs(m[n]["total"]["conflicts"] - p[n]["conflicts"]) < 0.05 for n in m)
    return {**out, "agree": agree, "table": facts({**out, "model and profiler agree on conflicts": agree})}


# -- the pictures --------------------------------------------------------------------------------------------------
def tiling_figure(step, lane: int = 5, warp: int = 0):
    """Block tile → warp tiles → lane ``lane``'s 4×4 sub-blocks, drawn from the step's tile configuration."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from gemm_steps.steps.warp_tiling import layout

    step = as_step(step)
    config = step.tiled.config
    lay = layout(config)
    bm, bn, tm, tn = config.BLOCK_M, config.BLOCK_N, config.THREAD_M, config.THREAD_N
    wm, wn, warps_n = lay["WARP_TILE_M"], lay["WARP_TILE_N"], lay["WARPS_N"]
    lanes_m, lanes_n, sa, sb = lay["LANES_M"], lay["LANES_N"], lay["A_CHUNK_STRIDE"], lay["B_CHUNK_STRIDE"]
    warps_m = bm // wm
    fig = Figure(figsize=(12, 5.4), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[bn / bm, 1.5])

    def box(ax, x, y, w, h, **style):
        ax.add_patch(Rectangle((x, y), w, h, **{"fill": False, "lw": 0.6, "ec": "0.5", **style}))

    box(left, 0, 0, bn, bm, lw=1.5, ec="k")
    for w in range(warps_m * warps_n):
        r, c = w // warps_n * wm, w % warps_n * wn
        box(left, c, r, wn, wm, fill=(w == warp), fc="tab:blue", alpha=0.25 if w == warp else 1, ec="k", lw=1)
        left.text(c + wn / 2, r + wm / 2, f"warp {w}", ha="center", va="center", fontsize=9)
    # the lane's sub-blocks inside its warp tile
    r0, c0 = warp // warps_n * wm, warp % warps_n * wn
    for i in range(tm // 4):
        for j in range(tn // 4):
            box(left, c0 + lane % lanes_n * 4 + j * sb, r0 + lane // lanes_n * 4 + i * sa, 4, 4, fill=True,
                fc="tab:orange", ec="k", lw=0.5)
    left.set(xlim=(-2, bn + 2), ylim=(bm + 2, -2), aspect="equal",
             title=f"Block tile {bm} × {bn}: {warps_m} × {warps_n} warp tiles of {wm} × {wn}\n"
                   f"orange: the thread tile of lane {lane} in warp {warp}, its {tm} × {tn} results")
    left.title.set_fontsize(10)
    left.axis("off")

    # one warp tile: every 4×4 cell with the lane that owns it
    for r in range(0, wm, 4):
        for c in range(0, wn, 4):
            owner = (r % sa) // 4 * lanes_n + (c % sb) // 4
            mine = owner == lane
            box(right, c, r, 4, 4, fill=True, fc="tab:orange" if mine else ("0.93" if (r // sa + c // sb) % 2
                                                                             else "white"), ec="0.6", lw=0.4)
            right.text(c + 2, r + 2, str(owner), ha="center", va="center", fontsize=6,
                       fontweight="bold" if mine else "normal")
    for r in range(0, wm + 1, sa):
        right.plot([0, wn], [r, r], color="k", lw=1)
    for c in range(0, wn + 1, sb):
        right.plot([c, c], [0, wm], color="k", lw=1)
    right.set(xlim=(-1, wn + 1), ylim=(wm + 1, -1), aspect="equal",
              title=f"Warp tile {wm} × {wn}: the 32 lanes as an {lanes_m} × {lanes_n} grid of 4 × 4 cells,\n"
                    f"repeated {tm // 4} × {tn // 4} times; lane l owns the cells numbered l,\nspaced {sa} rows "
                    f"(A_CHUNK_STRIDE) and {sb} columns\n(B_CHUNK_STRIDE) apart")
    right.title.set_fontsize(9)
    right.axis("off")
    return fig


def bank_figure(steps, kk: int = 0):
    """For each step (a row) and each of A's and B's first fragment load (a column): which words each lane of the
    first warp reads (a mark in the word's bank, numbered by the word's 32-word row of shared memory), coloured by
    the quarter-warp that is served together, and what the load costs in wavefronts."""
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    steps = [as_step(s) for s in steps]
    fig = Figure(figsize=(12, 5.2 * len(steps)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(steps), 2))
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]
    for ax_row, step in zip(axes, steps):
        c = step.config
        words = fragment_words(c, kk)
        for ax, operand in zip(ax_row, ("A", "B")):
            lanes = words[operand][0]
            wf, fewest = cost(lanes)
            for lane, read in enumerate(lanes):
                for word in read:
                    ax.add_patch(Rectangle((word % BANKS, lane), 1, 1, fc=colours[lane // PHASE], alpha=0.6, ec="w"))
                    ax.text(word % BANKS + 0.5, lane + 0.5, str(word // BANKS), ha="center", va="center",
                            fontsize=5.5)
            for p in range(1, 32 // PHASE):
                ax.axhline(p * PHASE, color="k", lw=0.6)
            per_phase = [served(lanes[p:p + PHASE], 4) for p in range(0, 32, PHASE)]
            for p, n in enumerate(per_phase):
                ax.text(32.5, p * PHASE + PHASE / 2, f"{n} wavefront{'s' * (n > 1)}", va="center", fontsize=8,
                        color=colours[p])
            distinct = len({tuple(r) for r in lanes})
            ax.set(xlim=(0, 38), ylim=(32, 0), xlabel="bank (word address mod 32)", ylabel="lane",
                   xticks=range(0, 33, 4), yticks=range(0, 33, 4),
                   title=f"Step {step.number} ({step.name}), {operand}'s first LDS.128 at kk = {kk}: "
                         f"{distinct} distinct float4\n{wf} wavefronts (fewest possible: {fewest})")
            ax.title.set_fontsize(9)
    fig.suptitle("Which word each lane reads, in which bank (number in a cell: the word's row, address // 32); "
                 "colours: the quarter-warps served together", fontsize=9)
    return fig


# -- registers, by compiler ----------------------------------------------------------------------------------------
# -- the measurement ---------------------------------------------------------------------------------------------
def verdict(results: dict, before, after) -> dict:
    """Step 9 against step 8 at the headline size, and the speedup at every common size (``table``). ``outcome``:
    ``"a few percent"`` (the prediction: 1.0–1.1×), ``"more"`` or ``"none"``."""
    before, after = as_step(before), as_step(after)
    size = headline_size(results, [before.name, after.name])
    old, new = record(results, before.name, size), record(results, after.name, size)
    speedup = old["median_ms"] / new["median_ms"]
    numbers = {"size": size_label(size), "TFLOPS": new["tflops"], "% of cuBLAS": new["pct_of_cublas"],
               f"step {after.number} / step {before.number}": speedup,
               "by size": speedups_by_size(results, before.name, after.name)}
    return {"numbers": numbers, "table": facts(numbers),
            "outcome": "a few percent" if 1.0 < speedup < 1.1 else "more" if speedup >= 1.1 else "none"}


def map_and_tiles(sweep: dict | None, step8_sweep: dict | None) -> dict | None:
    """From the two tuning sweeps (ms, % of cuBLAS in each run): step 8 as tuned, step 9's map with step 8's tiles,
    step 9 as tuned, and step 9's tiles with step 8's map; ``map_alone`` and ``tiles_alone`` (the ratios); cuBLAS in
    each run; ``table``."""
    if not (sweep and step8_sweep):
        return None
    from gemm_steps.harness import tuning

    nine, eight = sweep_records(sweep), sweep_records(step8_sweep)
    best9, best8 = tuning.choose_best(nine), tuning.choose_best(eight)
    same_tiles = next((r for r in nine if same_config(r["config"], best8["config"])), None)
    big_contiguous = next((r for r in eight if same_config(r["config"], best9["config"])), None)
    rows = [("step 8 as tuned", best8), ("step 9's map, step 8's tiles", same_tiles),
            ("step 9 as tuned", best9), ("step 9's tiles, step 8's contiguous map", big_contiguous)]
    lines = ["| kernel | tiles | ms | % of cuBLAS (its run) |", "|:--|:--|--:|--:|"]
    lines += [f"| {what} | {config_label(r['config'])} | {r['median_ms']:.3f} | {r['pct_of_cublas']:.1f} % |"
              for what, r in rows if r]
    out = {"best8": best8, "best9": best9, "same_tiles": same_tiles, "noise": tuning.NOISE,
           "cublas_ms": [next(r["median_ms"] for r in run["records"] if r["step"] == "cublas")
                         for run in (step8_sweep, sweep)]}
    if same_tiles:
        out["map_alone"] = best8["median_ms"] / same_tiles["median_ms"]
        out["tiles_alone"] = same_tiles["median_ms"] / best9["median_ms"]
        lines += [f"| **the map alone** | | {out['map_alone']:.3f}× | |",
                  f"| **the tiles alone** | | {out['tiles_alone']:.3f}× | |"]
    lines.append("| cuBLAS, step 8's run / step 9's | | " + " / ".join(f"{ms:.3f}" for ms in out["cublas_ms"])
                 + " | |")
    return {**out, "table": MarkdownTable("\n".join(lines))}


def what_it_bought(parts: dict, compiled: dict, step) -> dict:
    """The map alone (``the map alone: within the noise``: inside ``tuning.NOISE``), the tiles alone, and what the
    tiles cost: the registers that ran (the driver's JIT, from the Nsight Compute report; else nvJitLink's ptxas)
    and the blocks and warps per SM they allow."""
    step = as_step(step)
    entry = compiled[f"{step.name}_fast"]
    report = profiles.load(step.name)
    registers = int(report.value("Registers Per Thread")) if report else entry["registers"]
    occupancy = blocks_per_sm(registers, threads_per_block(step), entry["shared_bytes"])
    out = {"the map alone": parts["map_alone"],
           "the map alone: within the noise": abs(parts["map_alone"] - 1) < parts["noise"],
           "the tiles alone": parts["tiles_alone"], "registers per thread": registers,
           "registers counted by": "the driver's JIT (Nsight Compute)" if report else entry.get("ptxas"),
           "blocks per SM": occupancy["blocks"], "warps per SM": occupancy["warps"]}
    return {**out, "table": facts(out)}


# -- the last 10 % ----------------------------------------------------------------------------------------------------
H200_NCU = "ncu-step9-pipelined-cublas-h200.txt"


def ncu_h200_kernels() -> list[dict]:
    """One entry per kernel in the H200 report of step 9, step 9 pipelined and cuBLAS (one 4096³ launch each)."""
    path = shipped_file(H200_NCU)
    if path is None:
        return []
    out = []
    for kernel, part in profiles.kernel_sections(path.read_text()):
        metrics = profiles.report_metrics(part)
        out.append({"kernel": kernel.split("::")[-1], "instructions": metrics["smsp__inst_executed.sum"],
                    "issue": metrics["Issued Warp Per Scheduler"], "registers": int(metrics["Registers Per Thread"]),
                    "clock": metrics["sm__cycles_elapsed.avg.per_second"], "path": path})
    return out


def issue_rates() -> dict:
    """Issued warp-instructions per cycle per scheduler of step 9 and cuBLAS, from the shipped Nsight Compute
    reports: the H100 step reports (2048³) and, where shipped, the H200 report (4096³)."""
    out = {}
    nine, cublas = profiles.load("warp_tiling"), profiles.load("cublas")
    if nine and cublas:
        out["h100"] = {"step9": nine.value("Issued Warp Per Scheduler"), "cublas": cublas.value(
            "Issued Warp Per Scheduler"), "cublas_kernel": cublas.kernel, "path": nine.path.parent,
            "instructions": (nine.value("smsp__inst_executed.sum"), cublas.value("smsp__inst_executed.sum"))}
    kernels = ncu_h200_kernels()
    if kernels:
        shipped = next(k for k in kernels if "shipped" in k["kernel"])
        theirs = next(k for k in kernels if "gemm" in k["kernel"])
        out["h200"] = {"step9": shipped["issue"], "cublas": theirs["issue"], "cublas_kernel": theirs["kernel"],
                       "path": shipped["path"], "instructions": (shipped["instructions"], theirs["instructions"])}
    return out


def issue_table() -> MarkdownTable | None:
    """The issue rates of :func:`issue_rates` (issued warp-instructions per cycle per scheduler; 1 is the most) as a
    table, each with the report it is read from. ``None`` if no report is shipped."""
    rates = issue_rates()
    rows = ["| GPU, size | step 9 | cuBLAS | cuBLAS's kernel | cuBLAS's warp-instructions / step 9's | report |",
            "|:--|--:|--:|:--|--:|:--|"]
    for gpu, where in (("h100", "H100, 2048³"), ("h200", "H200, 4096³")):
        if gpu in rates:
            r = rates[gpu]
            rows.append(f"| {where} | **{r['step9']:.2f}** | **{r['cublas']:.2f}** | "
                        f"`{r['cublas_kernel'].replace('void ', '')[:60]}` | "
                        f"{r['instructions'][1] / r['instructions'][0]:.3f} | `{shown_path(r['path'])}` |")
    return MarkdownTable("\n".join(rows)) if rates else None


def fma_order(experiment: dict) -> dict:
    """Row order against serpentine in one run: the variants' table, and per size serpentine's speedup and its gain
    in points of cuBLAS (``gains``)."""
    by = {(r["step"], r["M"]): r for r in experiment["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    gains = {f"{m}³": (by[("row_order", m)]["median_ms"] / by[("serpentine", m)]["median_ms"],
                       by[("serpentine", m)]["pct_of_cublas"] - by[("row_order", m)]["pct_of_cublas"]) for m in sizes}
    table = variants_table(experiment, first_column="FMA order", only=("row_order", "serpentine"))
    return {"gains": gains, "table": MarkdownTable(table + "\n\n" + facts(
        {f"serpentine / row order at {size} (points of cuBLAS)": f"{g:.3f}× ({p:+.1f})"
         for size, (g, p) in gains.items()}))}


def ncu_h200_table() -> MarkdownTable | None:
    """The H200 report's kernels (warp-instructions, issue rate, registers as they ran, SM clock), and how many more
    instructions the pipelined kernel executes than the shipped one."""
    kernels = ncu_h200_kernels()
    if not kernels:
        return None
    rows = ["| kernel | instructions (warp-level) | issued per cycle per scheduler | registers per thread "
            "| SM clock |", "|:--|--:|--:|--:|--:|"]
    rows += [f"| `{k['kernel']}` | {k['instructions']:,.0f} | {k['issue']:.2f} | {k['registers']} "
             f"| {k['clock']:.2f} GHz |" for k in kernels]
    shipped = next(k for k in kernels if "shipped" in k["kernel"])
    piped = next(k for k in kernels if "pipelined" in k["kernel"])
    return MarkdownTable("\n".join(rows) + f"\n\n`{shown_path(shipped['path'])}`. Pipelined / shipped "
                         f"instructions: {piped['instructions'] / shipped['instructions'] - 1:+.1%}.")


# -- the k-loop in SASS ------------------------------------------------------------------------------------------------
#: Step 9's k-tile loop and its experiments' variants in SASS for sm_90, compiled on a CPU by
#: ``python -m experiments.k_loop_sass`` (ptxas + nvdisasm); tests/test_lesson_09.py recomputes the shipped row.
SASS_FILE = "k-loop-sass-sm90.json"


def k_loop_sass() -> dict | None:
    """The shipped :data:`SASS_FILE` (``{"tools", "date", "kernels": {label: {"registers", "instructions", "ffma",
    "reuse"}}}``, with ``path``), or ``None`` (said) if it is missing."""
    import json

    path = shipped_file(SASS_FILE)
    if path is None:
        return None
    return {**json.loads(path.read_text()), "path": str(path)}


def sass_table(sass: dict, labels) -> MarkdownTable:
    """Registers and the k-tile loop's instructions of some of :func:`k_loop_sass`'s kernels."""
    tools, block_k = sass["tools"], get_step("warp_tiling").config["BLOCK_K"]
    rows = ["| kernel | registers | instructions in the k-tile loop | FFMAs | FFMAs with a `.reuse` operand |",
            "|:--|--:|--:|--:|--:|"]
    for label in labels:
        k = sass["kernels"][label]
        rows.append(f"| {label} | {k['registers']} | {k['instructions']:,} | {k['ffma']:,} | {k['reuse']:,} |")
    return MarkdownTable("\n".join(rows) + (
        f"\n\nSASS for sm_90 from {tools['ptxas']} on a CPU, read with {tools['nvdisasm']} on {sass['date']} "
        f"(`{shown_path(sass['path'])}`, `python -m experiments.k_loop_sass`); the loop is the k-tile loop "
        f"(`loop_mix` in `gemm_steps/course/sass.py`), one k-tile of {block_k} k-steps. The driver's JIT on the GPU "
        "host may schedule and allocate differently."))


def sass_compare(sass: dict, before: str, after: str) -> MarkdownTable:
    """``after``'s k-tile loop against ``before``'s: instructions, FFMAs with a ``.reuse`` operand, registers."""
    a, b = sass["kernels"][before], sass["kernels"][after]
    return facts({f"instructions per k-tile, {before} → {after}": f"{a['instructions']:,} → {b['instructions']:,}",
                  "change": f"{b['instructions'] / a['instructions'] - 1:+.1%}",
                  f"FFMAs with a .reuse operand (of {b['ffma']:,})": f"{a['reuse']:,} → {b['reuse']:,}",
                  f"registers ({sass['tools']['ptxas']})": f"{a['registers']} → {b['registers']}"})


def jit_against_ptxas(sass: dict) -> dict | None:
    """Registers of step 9 and its pipelined variant from the driver's JIT on the H200 host (its Nsight Compute
    report) and from ``ptxas`` here (the SASS file); ``same``: the counts agree."""
    ran = {("step9 shipped" if "shipped" in k["kernel"] else "step9 pipelined"): k["registers"]
           for k in ncu_h200_kernels() if "step9" in k["kernel"]}
    if not ran:
        return None
    here = {label: sass["kernels"][label]["registers"] for label in ran}
    out = {f"{label}: driver JIT (H200) / {sass['tools']['ptxas']}": f"{ran[label]} / {here[label]}" for label in ran}
    return {**out, "same": ran == here, "table": facts(out)}


def async_table(sass: dict, experiment: dict) -> MarkdownTable:
    """Each cp.async / uint32 variant against the shipped kernel: change in k-loop instructions, in time at each
    size of the experiment, and registers."""
    by = {(r["step"], r["M"]): r for r in experiment["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    shipped = sass["kernels"]["step9 shipped"]
    rows = ["| variant | k-loop instructions | " + " | ".join(f"time at {m}³" for m in sizes) + " | registers |",
            "|:--|--:|" + "--:|" * len(sizes) + "--:|",
            f"| step9 shipped | | {'| ' * len(sizes)}{shipped['registers']} |"]
    for label in ("uint32 stage", "async B", "async A+B", "async A+B, uint32 stage"):
        if label in sass["kernels"] and (label, sizes[0]) in by:
            k = sass["kernels"][label]
            rows.append(f"| {label} | {k['instructions'] / shipped['instructions'] - 1:+.1%} | " + " | ".join(
                f"{by[(label, m)]['median_ms'] / by[('step9 shipped', m)]['median_ms'] - 1:+.1%}" for m in sizes)
                + f" | {k['registers']} |")
    return MarkdownTable("\n".join(rows))


def reuse_counts(sass: dict, step) -> dict:
    """Serpentine against row order: the most extra ``.reuse`` FFMAs the row ends allow per k-tile (one per row end
    per k-step; as a share of the FFMAs), and how many ``ptxas`` marked."""
    c = as_step(step).config
    rows, serp = sass["kernels"]["row_order"], sass["kernels"]["step9 shipped"]
    bound = (c["THREAD_M"] - 1) * c["BLOCK_K"]
    out = {"FFMAs per k-tile": serp["ffma"], "extra .reuse at most (row ends)": bound,
           "at most, as a share of the FFMAs": bound / serp["ffma"],
           "extra .reuse found": serp["reuse"] - rows["reuse"]}
    return {**out, "table": facts(out)}


def pipelining_prediction(sass: dict, step) -> dict:
    """What register double buffering could hide: one shared-load latency per k-tile (about 30 cycles, the figure
    ``experiments/pipelining.py``'s prediction used) against the cycles one scheduler spends on a k-tile (its warps'
    instructions at the measured issue rate)."""
    c = as_step(step).config
    rates = issue_rates()
    gpu = "h200" if "h200" in rates else "h100"
    warps = c["THREADS"] // 32 // 4  # 4 schedulers per SM, one block per SM
    instructions = sass["kernels"]["step9 shipped"]["instructions"]
    cycles = warps * instructions / rates[gpu]["step9"]
    out = {"warps per scheduler": warps, "instructions per k-tile (SASS)": instructions,
           f"issue rate ({gpu.upper()}, Nsight Compute)": rates[gpu]["step9"], "cycles per k-tile": cycles,
           "30 cycles of latency, as a share": 30 / cycles}
    return {**out, "table": facts(out)}


def code_shapes(experiment: dict) -> dict:
    """The equivalent k-column shapes against the shipped kernel: the table, each shape's gains by size, the best
    (by its smaller gain) and ``adopt``: it beats the shipped kernel by over 1 % at every size."""
    by = {(r["step"], r["M"]): r for r in experiment["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    gains = {name: [by[("step9 shipped", m)]["median_ms"] / by[(name, m)]["median_ms"] - 1 for m in sizes]
             for name, m in by if m == sizes[0] and name not in ("cublas", "step9 shipped", "step9 shipped again")}
    best = max(gains, key=lambda name: min(gains[name]))
    return {"table": variants_table(experiment, first_column="k-column shape"), "gains": gains, "best": best,
            "adopt": min(gains[best]) > 0.01}


__all__ = ["tile_table", "thread_origin", "fragment_offset", "fragment_words", "store_words", "cost", "k_step_model",
           "measured_per_k_step", "model_table", "model_check", "tiling_figure", "bank_figure",
           "compile_with_registers", "verdict", "map_and_tiles", "what_it_bought", "issue_rates", "issue_table",
           "fma_order", "ncu_h200_kernels", "ncu_h200_table", "code_shapes", "SASS_FILE", "k_loop_sass",
           "sass_table", "sass_compare", "async_table", "reuse_counts", "pipelining_prediction", "jit_against_ptxas"]


def tile_table(before, after) -> MarkdownTable:
    """Both steps' tile constants, and what a block loads from L2 or memory per FMA."""
    before, after = as_step(before), as_step(after)
    keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "THREADS", "MIN_BLOCKS_PER_SM", "WARP_TILE_M",
            "WARP_TILE_N", "A_CHUNK_STRIDE", "B_CHUNK_STRIDE"]
    lines = [f"| constant | step {before.number} | step {after.number} |", "|:--|--:|--:|"]
    lines += [f"| `{key}` | {before.config.get(key, '—')} | {after.config.get(key, '—')} |" for key in keys]
    lines.append("| global (or L2) loads per FMA, (BLOCK_M + BLOCK_N) / (BLOCK_M · BLOCK_N) | "
                 + " | ".join(f"{(s.config['BLOCK_M'] + s.config['BLOCK_N']) / (s.config['BLOCK_M'] * s.config['BLOCK_N']):.4f}"
                              for s in (before, after)) + " |")
    return MarkdownTable("\n".join(lines))
