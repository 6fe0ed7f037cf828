"""Lesson 9's helpers (warp tiling), shared with its deep dive (``lessons/deep_dives/09_the_last_ten_percent.py``).

* **The pictures** — :func:`tiling_figure`: block tile → warp tiles → one lane's 4×4 sub-blocks, drawn from the
  step's tile configuration and ``warp_tiling.layout(config)``; :func:`bank_figure`: which shared-memory words
  (and banks) each lane of one warp reads for its A and B fragments at one k-step, under step 8's and step 9's
  thread→C maps.
* **The shared-memory model** — :func:`thread_origin` (the kernels' ``thread_row``/``thread_col`` formulas),
  :func:`fragment_words` (the words of each ``LDS.128`` of one k-step), :func:`store_words` (the tile stores of
  one k-tile), :func:`k_step_model` (wavefronts and bank conflicts per warp and k-step), :func:`model_table`
  (the model against the shipped Nsight Compute reports).
* **Registers, by compiler** — :func:`compile_with_registers` (PTX on this CPU, registers from the ``ptxas`` in
  nvJitLink and the ``ptxas`` binary here), :func:`register_table` (with the driver JIT's count from the shipped
  reports).
* **The measurement** — :func:`verdict`, :func:`map_and_tiles` (the tuning sweeps separate the map from the tiles),
  :func:`what_it_bought`.
* **The last 10 %** — :func:`issue_rates` (read from the Nsight Compute reports, never typed),
  :func:`fma_order_text`, :func:`ncu_h200_table`, :func:`code_shapes_text`.
* **The k-loop in SASS** — :func:`k_loop_sass`: step 9 and the experiments' variants compiled on this CPU (NVVM,
  the ``ptxas`` binary, ``nvdisasm``), their registers and k-tile loop (instructions, FFMAs, ``.reuse`` operands),
  or :data:`SASS_RECORDED` where ``nvdisasm`` is missing; :func:`sass_table`, :func:`sass_compare`,
  :func:`reuse_prediction`, :func:`reuse_found`, :func:`pipelining_prediction`, :func:`jit_against_ptxas`,
  :func:`async_text`.

Every interpreting sentence is computed here from the shipped files, so the prose cannot drift from the numbers.
"""

from __future__ import annotations

import re

from gemm_steps.harness.step import get_step

from . import profiles
from .models import served
from .compiled import blocks_per_sm, compile_with_registers, threads_per_block
from .display import MarkdownTable, as_step
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
    report = profiles.load(as_step(steps[-1]).name)
    return MarkdownTable("\n".join(lines) + (
        f"\n\nProfiler: shared-memory wavefronts and bank conflicts of one 2048³ launch, divided by the warps' "
        f"k-steps (FFMAs / FMAs per warp and k-step); reports in `{shown_path(report.path.parent)}/`." if report
        else ""))


def model_text(before, after) -> str:
    m8, m9 = k_step_model(before), k_step_model(after)
    p8, p9 = measured_per_k_step(before), measured_per_k_step(after)
    text = (f"Per warp and k-step, the model counts **{m8['B loads']['conflicts']:g} bank conflicts in step "
            f"{as_step(before).number}'s B fragment and {m9['B loads']['conflicts']:g} in step "
            f"{as_step(after).number}'s**; the rest are the transposed stores of A "
            f"({m8['A stores']['conflicts']:g} and {m9['A stores']['conflicts']:g}).")
    if p8 and p9:
        agree = all(abs(m["total"]["conflicts"] - p["conflicts"]) < 0.05 for m, p in ((m8, p8), (m9, p9)))
        text += (" The profiler counts " + f"{p8['conflicts']:.2f} and {p9['conflicts']:.2f}"
                 + (": the same. " if agree else ": not the same, so the model misses something. ")
                 + "Its wavefront totals are lower than the model's, "
                 f"by {m8['total']['wavefronts'] - p8['wavefronts']:.1f} and "
                 f"{m9['total']['wavefronts'] - p9['wavefronts']:.1f} per k-step: some 128-bit loads are served in fewer "
                 "wavefronts than one per quarter-warp (which ones, the totals do not say). Bank conflicts, the "
                 "wavefronts beyond the fewest possible, are what the new map removes, and there the model and the "
                 "profiler ""agree" + ("." if agree else " only roughly."))
    return text


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
def register_table(compiled: dict, results: dict | None) -> MarkdownTable:
    """Registers per thread of each fast kernel by each compiler that produced a count, and the blocks per SM that
    count allows (NVIDIA's occupancy rules: a calculation)."""
    jit = next((e["ptxas"] for e in compiled.values() if e.get("ptxas")), "nvJitLink")
    local = next((e["local_ptxas"]["version"] for e in compiled.values() if e.get("local_ptxas")), None)
    lines = [f"| kernel | driver JIT on the GPU host (Nsight Compute) | ptxas in {jit} | {local or 'ptxas here'} "
             "| blocks (warps) per SM at that count |", "|:--|--:|--:|--:|:--|"]
    for label, entry in compiled.items():
        step = get_step(entry["step"])
        profile = profiles.load(entry["step"])
        counts = [profile.value("Registers Per Thread") if profile else None, entry.get("registers"),
                  (entry.get("local_ptxas") or {}).get("registers")]
        allowed = sorted({f"{int(n)}: {o['blocks']} ({o['warps']})" for n in counts if n
                          for o in [blocks_per_sm(int(n), threads_per_block(step), entry["shared_bytes"])]})
        lines.append(f"| {label} | " + " | ".join("—" if n is None else f"{n:.0f}" for n in counts)
                     + f" | {'; '.join(allowed)} |")
    env = (results or {}).get("environment", {})
    driver = (f"driver {env['smi_driver_version']}, CUDA {env['driver_cuda_version']}, as the benchmark file records "
              "it" if env.get("smi_driver_version") else "the GPU host's driver")
    report = next((profiles.load(e["step"]) for e in compiled.values() if profiles.load(e["step"])), None)
    return MarkdownTable("\n".join(lines) + (
        f"\n\nThe first column is what ran: the PTX compiled by the driver when the kernel was loaded ({driver}), "
        f"as the shipped reports record it (`{shown_path(report.path.parent)}/`). The other two compile the same "
        "PTX on this machine for sm_90. Each compiler makes its own choices, so a count is only meaningful with "
        "its compiler's name." if report else ""))


# -- the measurement ---------------------------------------------------------------------------------------------
def verdict(results: dict, before, after) -> str:
    before, after = as_step(before), as_step(after)
    size = headline_size(results, [before.name, after.name])
    old, new = record(results, before.name, size), record(results, after.name, size)
    speedup = old["median_ms"] / new["median_ms"]
    return (f"At {size_label(size)} step 9 runs at **{new['tflops']:.2f} TFLOPS, {new['pct_of_cublas']:.1f} % of "
            f"cuBLAS: {speedup:.2f}× step 8** ({speedups_by_size(results, before.name, after.name)}). "
            + ("A few percent, as predicted." if 1.0 < speedup < 1.1 else
               "More than the few percent predicted." if speedup >= 1.1 else "No gain, or a loss.")
            + " But two things changed at once — the map and the tiles — and this comparison cannot tell them apart.")


def map_and_tiles(sweep: dict | None, step8_sweep: dict | None) -> dict | None:
    """From the two tuning sweeps: step 8 as tuned, step 9's map with step 8's tiles, step 9 as tuned, and step 9's
    tiles with step 8's map; the ratios; and a paragraph."""
    if not (sweep and step8_sweep):
        return None
    from gemm_steps.harness import tuning

    nine, eight = sweep_records(sweep), sweep_records(step8_sweep)
    best9, best8 = tuning.choose_best(nine), tuning.choose_best(eight)
    same_tiles = next((r for r in nine if same_config(r["config"], best8["config"])), None)
    big_contiguous = next((r for r in eight if same_config(r["config"], best9["config"])), None)
    lines = [f"* step 8 as tuned, {config_label(best8['config'])}: {best8['median_ms']:.3f} ms "
             f"({best8['pct_of_cublas']:.1f} % of cuBLAS in its run)"]
    out = {"best8": best8, "best9": best9, "same_tiles": same_tiles}
    if same_tiles:
        out["map_alone"] = best8["median_ms"] / same_tiles["median_ms"]
        out["tiles_alone"] = same_tiles["median_ms"] / best9["median_ms"]
        lines.append(f"* warp-tiled map, **same tiles**: {same_tiles['median_ms']:.3f} ms — "
                     f"**{out['map_alone']:.3f}×** (the map alone)")
        lines.append(f"* warp-tiled map, tuned tiles {config_label(best9['config'])}: {best9['median_ms']:.3f} ms — "
                     f"**{out['tiles_alone']:.3f}×** over the same map with step 8's tiles (the tiles alone)")
    if big_contiguous:
        lines.append(f"* and the other way round — step 9's tiles with step 8's **contiguous map** (in step 8's "
                     f"sweep): {big_contiguous['median_ms']:.3f} ms, {big_contiguous['pct_of_cublas']:.1f} % of "
                     "cuBLAS in its run. With 16 columns per thread, neighbouring lanes' B fragments are 64 bytes "
                     "apart and share banks; the warp-tiled map is what makes that tile usable")
    cublas_ms = [next(r["median_ms"] for r in run["records"] if r["step"] == "cublas") for run in (step8_sweep, sweep)]
    out["text"] = ("\n".join(lines) + f"\n\nThe sweeps ran minutes apart (cuBLAS in each: {cublas_ms[0]:.3f} and "
                   f"{cublas_ms[1]:.3f} ms), and `tuning.choose_best` treats differences under {tuning.NOISE:.0%} as "
                   "noise.")
    return out


def what_it_bought(parts: dict, compiled: dict, step) -> str:
    from gemm_steps.harness import tuning

    step = as_step(step)
    c = step.config
    entry = compiled[f"{step.name}_fast"]
    report = profiles.load(step.name)  # the count that ran: the driver's JIT on the GPU host
    registers, compiler = ((int(report.value("Registers Per Thread")), "the driver's JIT, in the Nsight Compute report")
                           if report else (entry["registers"], entry.get("ptxas")))
    occupancy = blocks_per_sm(registers, threads_per_block(step), entry["shared_bytes"])
    map_alone, tiles_alone = parts["map_alone"], parts["tiles_alone"]
    if abs(map_alone - 1) < tuning.NOISE:
        text = (f"The conflict-free map, by itself, is worth **nothing measurable** ({map_alone:.3f}×, inside the "
                f"{tuning.NOISE:.0%} noise): shared memory was not the limit, as the wavefront count said.")
    else:
        text = (f"The conflict-free map, by itself, changes the time {map_alone:.3f}×, although the wavefront count "
                "said shared memory was not the limit: the model misses something here.")
    return text + (
        f" What the map bought is *freedom*: with lanes spread over a warp tile, a thread can own "
        f"{c['THREAD_M']}×{c['THREAD_N']} results and a block {c['BLOCK_M']}×{c['BLOCK_N']} of C without its fragment "
        f"loads conflicting, and that larger tile needs less data per FMA from L2 and memory: **{tiles_alone:.3f}×** "
        f"from the tiles alone. It pays in registers: {registers} per thread ({compiler}), so "
        f"**{occupancy['blocks']} block of {occupancy['warps']} warps** per SM, and all latency hiding now rests on "
        "double buffering and on the warps of that one block.")


# -- the last 10 % ----------------------------------------------------------------------------------------------------
H200_NCU = "ncu-step9-pipelined-cublas-h200.txt"


def _ncu_value(block: str, name: str) -> str:
    """The number Nsight Compute printed for ``name`` in one kernel's block of its text report."""
    return re.search(rf"{re.escape(name)}\s+\S*\s+([\d.,]+)", block).group(1)


def ncu_h200_kernels() -> list[dict]:
    """One entry per kernel in the H200 report of step 9, step 9 pipelined and cuBLAS (one 4096³ launch each)."""
    path = shipped_file(H200_NCU)
    if path is None:
        return []
    out = []
    for block in re.split(r"\n  (?=\S)", path.read_text())[1:]:  # one block per profiled kernel
        out.append({"kernel": block.split("(")[0].split("::")[-1].split("[")[0].strip(),
                    "instructions": float(_ncu_value(block, "smsp__inst_executed.sum").replace(",", "")),
                    "issue": float(_ncu_value(block, "Issued Warp Per Scheduler")),
                    "registers": int(_ncu_value(block, "Registers Per Thread")),
                    "clock": float(_ncu_value(block, "sm__cycles_elapsed.avg.per_second")), "path": path})
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


def issue_text() -> str:
    """The issue rates of :func:`issue_rates` as a table, each with the report it is read from."""
    rates = issue_rates()
    rows = ["| GPU, size | step 9 | cuBLAS | cuBLAS's kernel | cuBLAS's warp-instructions / step 9's | report |",
            "|:--|--:|--:|:--|--:|:--|"]
    for gpu, where in (("h100", "H100, 2048³"), ("h200", "H200, 4096³")):
        if gpu in rates:
            r = rates[gpu]
            rows.append(f"| {where} | **{r['step9']:.2f}** | **{r['cublas']:.2f}** | "
                        f"`{r['cublas_kernel'].replace('void ', '')[:60]}` | "
                        f"{r['instructions'][1] / r['instructions'][0]:.3f} | `{shown_path(r['path'])}` |")
    if len(rows) == 2:
        return "No Nsight Compute report is shipped."
    return ("\n".join(rows) + "\n\nIssued warp-instructions per cycle per scheduler (`Issued Warp Per Scheduler`); "
            "1 is the most a scheduler can issue.")


def fma_order_text(fma_order: dict) -> str:
    by = {(r["step"], r["M"]): r for r in fma_order["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    gains = [by[("row_order", m)]["median_ms"] / by[("serpentine", m)]["median_ms"] for m in sizes]
    points = [by[("serpentine", m)]["pct_of_cublas"] - by[("row_order", m)]["pct_of_cublas"] for m in sizes]
    return (variants_table(fma_order, first_column="FMA order", only=("row_order", "serpentine"))
            + "\n\nSerpentine is " + ", ".join(f"**{g:.3f}×** ({p:+.1f} points of cuBLAS)" for g, p in
                                             zip(gains, points))
            + " row order at " + ", ".join(f"{m}³" for m in sizes) + ", in the same run. Step 9 ships it (the `j = "
            "THREAD_N - 1 - jj if i % 2 else jj` line in its kernel), and steps 10 and 11 inherit it.")


def ncu_h200_table() -> str:
    kernels = ncu_h200_kernels()
    if not kernels:
        return ""
    rows = ["| kernel | instructions (warp-level) | issued per cycle per scheduler | registers per thread "
            "| SM clock |", "|:--|--:|--:|--:|--:|"]
    for k in kernels:
        rows.append(f"| `{k['kernel']}` | {k['instructions']:,.0f} | {k['issue']:.2f} | {k['registers']} "
                    f"| {k['clock']:.2f} GHz |")
    shipped = next(k for k in kernels if "shipped" in k["kernel"])
    piped = next(k for k in kernels if "pipelined" in k["kernel"])
    return ("\n".join(rows) + f"\n\nFrom `{shown_path(shipped['path'])}` (H200). Registers as the kernels ran: ours "
            "compiled from PTX by the driver's JIT on that host; cuBLAS's compiled by NVIDIA, in the library. The "
            "pipelined kernel executes "
            f"{piped['instructions'] / shipped['instructions'] - 1:.1%} more instructions, at an issue rate of "
            f"{piped['issue']:.2f} against {shipped['issue']:.2f}.")


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


def sass_compare(sass: dict, before: str, after: str) -> str:
    """One sentence: ``after``'s k-tile loop against ``before``'s."""
    a, b = sass["kernels"][before], sass["kernels"][after]
    return (f"**{after}** runs {b['instructions']:,} instructions per k-tile against {a['instructions']:,} "
            f"({b['instructions'] / a['instructions'] - 1:+.1%}), and {b['reuse']:,} of its {b['ffma']:,} FFMAs carry "
            f"a `.reuse` operand against {a['reuse']:,}; {b['registers']} registers against {a['registers']} "
            f"({sass['tools']['ptxas']}).")


def jit_against_ptxas(sass: dict) -> str:
    """Whether the driver's JIT on the H200 host (its Nsight Compute report) and ``ptxas`` here gave step 9 and its
    pipelined variant the same registers."""
    ran = {("step9 shipped" if "shipped" in k["kernel"] else "step9 pipelined"): k["registers"]
           for k in ncu_h200_kernels() if "step9" in k["kernel"]}
    if not ran:
        return ""
    here = {label: sass["kernels"][label]["registers"] for label in ran}
    same = ran == here
    return ("Registers: the driver's JIT on the H200 host (the Nsight Compute table) gave "
            + " and ".join(f"{ran[k]}" for k in ran) + f", `{sass['tools']['ptxas']}` here "
            + " and ".join(f"{here[k]}" for k in ran) + (": the same counts." if same else
                                                          ": different counts, from different compilers."))


def async_text(sass: dict, experiment: dict) -> str:
    """Each cp.async / uint32 variant: its change in k-loop instructions against its change in time, and registers."""
    by = {(r["step"], r["M"]): r for r in experiment["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    shipped = sass["kernels"]["step9 shipped"]
    parts = []
    for label in ("uint32 stage", "async B", "async A+B", "async A+B, uint32 stage"):
        if label not in sass["kernels"] or (label, sizes[0]) not in by:
            continue
        k = sass["kernels"][label]
        slower = [by[(label, m)]["median_ms"] / by[("step9 shipped", m)]["median_ms"] - 1 for m in sizes]
        parts.append(f"{label}: {k['instructions'] / shipped['instructions'] - 1:+.1%} instructions, "
                     + " and ".join(f"{s:+.1%}" for s in slower) + f" time, {k['registers']} registers")
    return ("Against the shipped kernel (time at " + " and ".join(f"{m}³" for m in sizes) + "): " + "; ".join(parts)
            + f". The shipped kernel: {shipped['registers']} registers ({sass['tools']['ptxas']}).")


def reuse_prediction(step) -> str:
    """How many more FFMAs a serpentine order can put on the reuse cache than row order: one per row end."""
    c = as_step(step).config
    per_k_step, row_ends = c["THREAD_M"] * c["THREAD_N"], c["THREAD_M"] - 1
    return (f"Row by row, {c['THREAD_N'] - 1} of every {c['THREAD_N']} FFMAs can reuse `a[i]`; serpentine adds at most "
            f"one reuse per row end: {row_ends} per k-step of {per_k_step} FFMAs ({row_ends / per_k_step:.1%}), "
            f"{row_ends * c['BLOCK_K']} per k-tile.")


def reuse_found(sass: dict, step) -> str:
    """What ``ptxas`` did with the serpentine order, against :func:`reuse_prediction`'s bound."""
    c = as_step(step).config
    rows, serp = sass["kernels"]["row_order"], sass["kernels"]["step9 shipped"]
    return (f"`ptxas` marks {serp['reuse'] - rows['reuse']} more FFMAs per k-tile `.reuse` in serpentine order "
            f"({serp['reuse']:,} against {rows['reuse']:,} of {serp['ffma']:,}), of the at most "
            f"{(c['THREAD_M'] - 1) * c['BLOCK_K']} that the row ends allow.")


def pipelining_prediction(sass: dict, step) -> str:
    """The size of what register double buffering could hide: one shared-load latency per k-tile, against the
    cycles one scheduler spends on a k-tile (its warps' instructions at the measured issue rate)."""
    c = as_step(step).config
    rates = issue_rates()
    gpu = "h200" if "h200" in rates else "h100"
    rate = rates[gpu]["step9"]
    warps = c["THREADS"] // 32 // 4  # 4 schedulers per SM, one block per SM
    instructions = sass["kernels"]["step9 shipped"]["instructions"]
    cycles = warps * instructions / rate
    return (f"A k-tile costs one scheduler about **{cycles:,.0f} cycles**: {warps} warps × {instructions:,} "
            f"instructions (the SASS above) at {rate:.2f} issued per cycle ({gpu.upper()}, Nsight Compute). One "
            f"shared-load latency after each barrier, about 30 cycles (the figure `experiments/pipelining.py`'s "
            f"prediction used), is {30 / cycles:.1%} of that.")


def code_shapes_text(shapes: dict) -> str:
    by = {(r["step"], r["M"]): r for r in shapes["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    gains = {name: [by[("step9 shipped", m)]["median_ms"] / by[(name, m)]["median_ms"] - 1 for m in sizes]
             for name, m in by if m == sizes[0] and name not in ("cublas", "step9 shipped", "step9 shipped again")}
    best = max(gains, key=lambda name: min(gains[name]))
    verdict_ = "adopt it" if min(gains[best]) > 0.01 else "it misses the bar, so step 9 keeps its serpentine order"
    return (variants_table(shapes, first_column="k-column shape") + f"\n\nThe best shape, **{best}**, is "
            + " and ".join(f"{g:+.1%}" for g in gains[best]) + " against the shipped kernel at "
            + " and ".join(f"{m}³" for m in sizes) + f": {verdict_}.")


__all__ = ["tile_table", "thread_origin", "fragment_offset", "fragment_words", "store_words", "cost", "k_step_model",
           "measured_per_k_step", "model_table", "model_text", "tiling_figure", "bank_figure",
           "compile_with_registers", "register_table", "verdict", "map_and_tiles", "what_it_bought", "issue_rates",
           "issue_text", "fma_order_text", "ncu_h200_kernels", "ncu_h200_table", "code_shapes_text",
           "SASS_FILE", "k_loop_sass", "sass_table",
           "sass_compare", "async_text", "reuse_prediction", "reuse_found",
           "pipelining_prediction", "jit_against_ptxas"]


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
