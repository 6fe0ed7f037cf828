"""Lesson 5's helpers (2-D register tiling), shared with its deep dives (``lessons/deep_dives/05_*.py``). They
return figures, tables and numbers; the words around them are the lessons'.

* The picture: :func:`outer_product_figure`. The prediction: :func:`reuse_table` (loads per FMA from the tile
  sizes); the wavefront model of one warp's k-step (:func:`thread_map`, :func:`k_step_wavefronts`) and
  :func:`prediction`, the shared-memory ceilings it gives.
* The profiler: :func:`profile_counts` (the shipped Nsight Compute reports per warp and k-step),
  :func:`profile_check` (against the model). The measurement: :func:`verdict`, :func:`waiting`.
* The step-5 experiment (signed first attempt, strided variants): :func:`load_experiment`, :func:`variants_table`,
  :func:`variants_figure`, :func:`runs_agree`, :func:`earlier_experiment`.
* The compiled code: :func:`first_attempt`, :func:`compile_step_5`, :func:`sign_tests`, :func:`sign_masks`,
  :func:`sign_table`, :func:`sign_test_example`, :func:`fmas_in_ptx`, :func:`ceilings`.
* The strided map: :func:`load_widths`, :func:`strided_table`.
"""

from __future__ import annotations

import re

from gemm_steps.toolkit.kernel_tools import ceil_div

from . import profiles
from .compiled import blocks_per_sm, compile_kernels, fmas_per_k_tile, k_loop_mix, threads_per_block
from .display import MarkdownTable, as_step, facts
from .models import ceiling_figure, served, sm_rate_tflops, wavefronts
from .timings import common_sizes, fp32_peak_tflops, headline_size, load_shipped, record, size_label

WARP = range(32)  # the first warp of a block: threads 0 … 31
KK = 0  # the k-step the model looks at (every k-step costs the same)


def _tm(config):
    return config.get("THREAD_M", 1)


def _tn(config):
    return config.get("THREAD_N", 1)


# -- the picture -------------------------------------------------------------------------------------------------
def outer_product_figure(config: dict, thread: int = 37, kk: int = 3):
    """The block tile of C with its grid of threads, one thread's THREAD_M × THREAD_N block, and the column ``kk``
    of A's tile and row ``kk`` of B's tile that feed it (left); the outer product itself (right)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    bm, bn, bk, tm, tn = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"], _tm(config), _tn(config)
    rows, cols = bm // tm, bn // tn
    row0, col0 = (thread // cols) * tm, (thread % cols) * tn
    gap = bk
    fig = Figure(figsize=(11, 5.6), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.6, 1])

    def box(ax, x, y, w, h, **style):
        ax.add_patch(Rectangle((x, y), w, h, **{"fill": False, "lw": 0.6, "ec": "0.4", **style}))

    # A tile to the left of C, B tile above it (y grows downwards, as rows do)
    for k in range(1, bk):  # the BLOCK_K columns of A's tile and rows of B's
        left.plot([-gap - bk + k] * 2, [0, bm], color="0.85", lw=0.4)
        left.plot([0, bn], [-gap - bk + k] * 2, color="0.85", lw=0.4)
    box(left, -gap - bk, 0, bk, bm, lw=1.2, ec="k")
    box(left, 0, -gap - bk, bn, bk, lw=1.2, ec="k")
    for t in WARP:  # the first warp's blocks, lightly
        box(left, (t % cols) * tn, (t // cols) * tm, tn, tm, fill=True, fc="0.9", ec="none")
    for r in range(rows + 1):
        left.plot([0, bn], [r * tm, r * tm], color="0.75", lw=0.4)
    for c in range(cols + 1):
        left.plot([c * tn, c * tn], [0, bm], color="0.75", lw=0.4)
    box(left, 0, 0, bn, bm, lw=1.2, ec="k")
    box(left, col0, row0, tn, tm, fill=True, fc="tab:orange", ec="k", lw=1)
    box(left, -gap - bk + kk, row0, 1, tm, fill=True, fc="tab:blue", ec="k", lw=1)
    box(left, col0, -gap - bk + kk, tn, 1, fill=True, fc="tab:green", ec="k", lw=1)
    left.annotate(f"a_tile ({bm} × {bk})", (-gap - bk / 2, bm + 3), ha="center", va="top", fontsize=8)
    left.annotate(f"b_tile ({bk} × {bn})", (bn + 2, -gap - bk / 2), ha="left", va="center", fontsize=8)
    left.annotate(f"C tile ({bm} × {bn}): {rows} × {cols} threads,\nlight grey: the first warp (threads 0–31)",
                  (bn / 2, bm + 3), ha="center", va="top", fontsize=8)
    left.annotate(f"column kk = {kk}:\n{tm} floats → a_frag", (-gap - bk - 1, row0 + tm / 2), ha="right",
                  va="center", fontsize=8, color="tab:blue")
    left.annotate(f"row kk = {kk}: {tn} floats → b_frag", (col0 + tn + 2, -gap - bk - 2), ha="left", va="bottom",
                  fontsize=8, color="tab:green")
    left.annotate(f"thread {thread}", (col0 + tn / 2, row0 + tm + 1), ha="center", va="top", fontsize=8,
                  color="tab:orange", fontweight="bold")
    left.set(xlim=(-gap - bk - 34, bn + 30), ylim=(bm + 14, -gap - bk - 10), aspect="equal",
             title=f"One block: BLOCK_M × BLOCK_N = {bm} × {bn}, BLOCK_K = {bk}, {rows * cols} threads")
    left.title.set_fontsize(10)
    left.axis("off")

    # the outer product of one k-step, enlarged
    for i in range(tm):
        box(right, -2, i, 1, 1, fill=True, fc="tab:blue", ec="w", lw=1.5)
    for j in range(tn):
        box(right, j, -2, 1, 1, fill=True, fc="tab:green", ec="w", lw=1.5)
    for i in range(tm):
        for j in range(tn):
            box(right, j, i, 1, 1, fill=True, fc="tab:orange", ec="w", lw=1.5)
    right.annotate(f"a_frag[i] = a_tile[row + i, kk]\n{tm} shared loads", (-2.5, tm / 2), ha="right", va="center",
                   fontsize=8, rotation=90)
    right.annotate(f"b_frag[j] = b_tile[kk, col + j]: {tn} shared loads", (tn / 2, -2.6), ha="center",
                   va="bottom", fontsize=8)
    right.annotate(f"acc[i, j] += a_frag[i] * b_frag[j]\n{tm} × {tn} = {tm * tn} FMAs, in registers",
                   (tn / 2, tm + 0.6), ha="center", va="top", fontsize=8)
    right.set(xlim=(-4, tn + 0.5), ylim=(tm + 2.2, -3.6), aspect="equal",
              title=f"Thread {thread}, one k-step: an outer product")
    right.title.set_fontsize(10)
    right.axis("off")
    return fig


# -- the prediction ----------------------------------------------------------------------------------------------
def reuse_table(steps) -> MarkdownTable:
    """Per k, what one thread loads from shared memory and how many FMAs it does with it; per k-tile, what a block
    loads from global memory per FMA — from each step's tile constants (THREAD_M, THREAD_N: 1 where not given)."""
    lines = ["| step | results per thread | per k: shared loads → FMAs | FMAs per shared load "
             "| global loads per FMA |", "|:--|--:|--:|--:|--:|"]
    for step in map(as_step, steps):
        c = step.config
        tm, tn = _tm(c), _tn(c)
        per_fma = (c["BLOCK_M"] + c["BLOCK_N"]) / (c["BLOCK_M"] * c["BLOCK_N"])
        lines.append(f"| {step.number} {step.name} | {tm} × {tn} | {tm + tn} → {tm * tn} "
                     f"| {tm * tn / (tm + tn):.2f} | 1/{1 / per_fma:.0f} |")
    return MarkdownTable("\n".join(lines))


def thread_map(config: dict, strided: bool = False):
    """``element(t, i, j) -> (row, col)`` in the block tile: the element of C that result (i, j) of thread t is.
    Contiguous (steps 4 and 5): thread t owns a THREAD_M × THREAD_N block. Strided (the experiment's variants): rows
    t // 16 + 16·i and columns t % 16 + 16·j, for step 5's 16 × 16 threads."""
    tm, tn = _tm(config), _tn(config)
    rows, cols = config["BLOCK_M"] // tm, config["BLOCK_N"] // tn
    if strided:
        return lambda t, i, j: (t // cols + rows * i, t % cols + cols * j)
    return lambda t, i, j: ((t // cols) * tm + i, (t % cols) * tn + j)


def k_step_wavefronts(config: dict, element, a_transposed: bool = False, b_width: int = 1) -> tuple[int, int]:
    """(A, B) wavefronts of the first warp's k-step: THREAD_M scalar loads of A's fragment, and THREAD_N floats of
    B's fragment in loads of ``b_width`` neighbouring floats (1: scalar; 4: 128-bit)."""
    bm, bn, bk = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]

    def a_word(row):  # a_tile[row, kk] in a (BLOCK_M, BLOCK_K) tile, or a_tile[kk, row] in a transposed one
        return KK * bm + row if a_transposed else row * bk + KK

    a = sum(wavefronts([[a_word(element(t, i, 0)[0])] for t in WARP]) for i in range(_tm(config)))
    b = sum(served([range(KK * bn + element(t, 0, q)[1], KK * bn + element(t, 0, q)[1] + b_width) for t in WARP],
                   b_width) for q in range(0, _tn(config), b_width))
    return a, b


def tile_stores_per_k_step(config: dict) -> float:
    """Shared stores per warp and k-step when the block copies its tiles (one wavefront per warp-wide store)."""
    return (config["BLOCK_M"] + config["BLOCK_N"]) / config["THREADS"]


def fmas_per_warp_k_step(config: dict) -> int:
    return len(WARP) * _tm(config) * _tn(config)


def prediction(results: dict, before, after) -> dict:
    """The shared-memory model of ``before`` and ``after`` (steps 4 and 5), scalar loads as written: per step the
    wavefronts of A's and B's fragments per warp and k-step, FMAs per wavefront and the ceiling in TFLOPS on the
    results' GPU; ``ratio`` (the ceilings' ratio) and ``table``."""
    model = {}
    for step in map(as_step, (before, after)):
        a, b = k_step_wavefronts(step.config, thread_map(step.config))
        per = fmas_per_warp_k_step(step.config) / (a + b)
        model[step.name] = {"A wavefronts": a, "B wavefronts": b, "FMAs": fmas_per_warp_k_step(step.config),
                            "FMAs per wavefront": per, "ceiling (TFLOPS)": sm_rate_tflops(results, per)}
    ratio = model[as_step(after).name]["ceiling (TFLOPS)"] / model[as_step(before).name]["ceiling (TFLOPS)"]
    names = list(model)
    lines = [f"| per warp and k-step | {names[0]} | {names[1]} |", "|:--|--:|--:|"]
    lines += [f"| {key} | " + " | ".join(f"{model[n][key]:,.1f}" if isinstance(model[n][key], float)
                                        else f"{model[n][key]:,}" for n in names) + " |" for key in model[names[0]]]
    lines.append(f"| **ceiling ratio** | | **{ratio:.2f}×** |")
    return {"model": model, "ratio": ratio, "table": MarkdownTable("\n".join(lines))}


# -- what the profiler says ----------------------------------------------------------------------------------------
def profile_counts(step) -> dict | None:
    """The shipped Nsight Compute report of ``step`` (one 2048³ launch), per warp and k-step: shared-memory
    wavefronts, bank conflicts; and executed instructions per FMA, global load requests. ``None`` if not shipped."""
    step = as_step(step)
    p = profiles.load(step.name)
    if p is None:
        return None
    ffma = p.value("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")  # one per thread and FMA
    warp_k_steps = ffma / fmas_per_warp_k_step(step.config)
    return {"profile": p, "warp_k_steps": warp_k_steps,
            "wavefronts": p.value("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") / warp_k_steps,
            "conflicts": p.value("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum") / warp_k_steps,
            "fmas_per_wavefront": ffma / p.value("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
            "instructions_per_fma": p.value("smsp__inst_executed.sum") / (ffma / 32),
            "global_requests": p.value("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
            "issue": p.value("Issued Warp Per Scheduler"), "registers": p.value("Registers Per Thread"),
            "warps_per_sm": p.value("Achieved Active Warps Per SM"), "l1_busy": p.value("L1/TEX Cache Throughput")}


def _model_rows(config: dict) -> dict:
    """The model's wavefronts per warp and k-step with the tile stores, and its bank conflicts (wavefronts beyond
    one per phase), for B's fragment as scalar loads and as 128-bit loads."""
    element, stores, tm, tn = thread_map(config), tile_stores_per_k_step(config), _tm(config), _tn(config)
    a, b1 = k_step_wavefronts(config, element)
    _, b4 = k_step_wavefronts(config, element, b_width=4)
    return {"scalar": {"a": a, "b": b1, "total": a + b1 + stores, "conflicts": a - tm + b1 - tn},
            "wide": {"a": a, "b": b4, "total": a + b4 + stores, "conflicts": a - tm + b4 - tn}}


def profile_check(before, after) -> MarkdownTable | None:
    """The wavefront model of ``before`` and ``after`` (loads as written, and B as two 128-bit loads) against their
    profiles, per warp and k-step; and the profiles' FMAs per wavefront, global load requests and instructions per
    FMA. ``None`` where a report is not shipped."""
    old, new = profile_counts(before), profile_counts(after)
    if old is None or new is None:
        return None
    m4, m5 = _model_rows(as_step(before).config)["scalar"], _model_rows(as_step(after).config)
    f5 = fmas_per_warp_k_step(as_step(after).config)
    return MarkdownTable("\n".join([
        "| per warp and k-step | model, loads as written | model, B as two 128-bit loads | profiler |",
        "|:--|--:|--:|--:|",
        f"| step 4: shared wavefronts | {m4['total']:.2f} | | {old['wavefronts']:.2f} |",
        f"| step 5: shared wavefronts | {m5['scalar']['total']:.2f} | {m5['wide']['total']:.2f} "
        f"| **{new['wavefronts']:.2f}** |",
        f"| step 5: of them bank conflicts | {m5['scalar']['conflicts']} | {m5['wide']['conflicts']} "
        f"| **{new['conflicts']:.2f}** |",
        f"| step 5: FMAs per wavefront (fragments) | {f5 / (m5['scalar']['a'] + m5['scalar']['b']):.1f} "
        f"| {f5 / (m5['wide']['a'] + m5['wide']['b']):.1f} | {new['fmas_per_wavefront']:.1f} |",
        f"| global load requests (M), step 4 → 5 | | | {old['global_requests'] / 1e6:.2f} → "
        f"{new['global_requests'] / 1e6:.2f} |",
        f"| instructions per FMA, step 4 → 5 | | | {old['instructions_per_fma']:.2f} → "
        f"{new['instructions_per_fma']:.2f} |"]))


# -- the measurement -------------------------------------------------------------------------------------------------
def verdict(results: dict, steps, pred: dict) -> dict:
    """Step 5 against steps 3 and 4 and the prediction at the headline size (``numbers``: TFLOPS, speedups, the
    predicted ratio, the ceilings as written and with B's 128-bit loads); and size by size (``sizes``, a table:
    step 5 over step 4 and the blocks of its grid against the SMs). ``beats_model``: faster than the model
    allowed; ``idle_sms``: some size leaves SMs without a block."""
    step3, step4, step5 = map(as_step, steps)
    size = headline_size(results, [s.name for s in steps])
    r3, r4, r5 = (record(results, s.name, size) for s in (step3, step4, step5))
    c, sms = step5.config, results["environment"]["sm_count"]
    wide = _model_rows(c)["wide"]
    numbers = {"size": size_label(size), "step 5 TFLOPS": r5["tflops"], "step 5 % of cuBLAS": r5["pct_of_cublas"],
               "step 5 / step 4": r4["median_ms"] / r5["median_ms"],
               "step 5 / step 3": r3["median_ms"] / r5["median_ms"],
               "predicted at most (ceiling ratio)": pred["ratio"],
               "ceiling, loads as written (TFLOPS)": pred["model"][step5.name]["ceiling (TFLOPS)"],
               "ceiling, B in 128-bit loads (TFLOPS)": sm_rate_tflops(results, fmas_per_warp_k_step(c)
                                                                      / (wide["a"] + wide["b"]))}
    rows = ["| size | step 5 / step 4 | blocks in the grid | SMs |", "|:--|--:|--:|--:|"]
    idle = False
    for m, n, k in common_sizes(results, [step4.name, step5.name]):
        blocks = ceil_div(m, c["BLOCK_M"]) * ceil_div(n, c["BLOCK_N"])
        idle |= blocks < sms
        ratio = (record(results, step4.name, (m, n, k))["median_ms"]
                 / record(results, step5.name, (m, n, k))["median_ms"])
        rows.append(f"| {size_label((m, n, k))} | {ratio:.2f}× | {blocks}{' **(SMs idle)**' if blocks < sms else ''} "
                    f"| {sms} |")
    return {"numbers": numbers, "table": facts(numbers), "sizes": MarkdownTable("\n".join(rows)),
            "beats_model": numbers["step 5 / step 4"] > pred["ratio"], "idle_sms": idle}


def waiting(after) -> MarkdownTable | None:
    """What step 5's profile says it waits for: issue rate, cycles with no warp ready, registers, blocks and warps
    per SM, how busy shared memory is and how much of it goes to bank conflicts."""
    new = profile_counts(after)
    if new is None:
        return None
    p = new["profile"]
    return facts({"instructions issued per cycle per scheduler": new["issue"],
                  "cycles with no warp ready (%)": p.value("No Eligible"), "registers per thread": new["registers"],
                  "blocks per SM (register limit)": p.value("Block Limit Registers"),
                  "warps per SM, on average (of 64)": new["warps_per_sm"], "L1/shared busy (%)": new["l1_busy"],
                  "wavefronts spent on bank conflicts (%)": 100 * new["conflicts"] / new["wavefronts"]})


# -- the step-5 experiment: signed first attempt, strided variants ------------------------------------------------
EXPERIMENT = "experiment-register-2d-unsigned-*.json"
EARLIER = "experiment-register-2d-h200.json"
VARIANTS = {
    "signed": "first attempt: signed indices",
    "unsigned": "step 5 as shipped: unsigned indices",
    "unsigned_strided": "+ strided thread map",
    "unsigned_strided_transposed_a": "+ strided map, A tile transposed",
    "shared_memory": "step 3",
    "register_1d": "step 4",
}


def load_experiment() -> dict | None:
    return load_shipped(EXPERIMENT, "step 5, its first attempt with signed indices and two variants, with steps 3 "
                                    "and 4, timed in one run")


def experiment_sizes(experiment: dict) -> list:
    return sorted({(r["M"], r["N"], r["K"]) for r in experiment["records"]}, key=lambda s: s[0] * s[1] * s[2])


def variants_table(experiment: dict, names) -> MarkdownTable:
    """% of cuBLAS of the named variants at every size of the experiment; TFLOPS and speed against the first
    (signed) attempt at the largest."""
    sizes = experiment_sizes(experiment)
    signed = record(experiment, "signed", sizes[-1])
    lines = ["| variant | what it is | " + " | ".join(f"% of cuBLAS at {size_label(s)}" for s in sizes)
             + f" | TFLOPS at {size_label(sizes[-1])} | × the first attempt |",
             "|:--|:--|" + "--:|" * (len(sizes) + 2)]
    for name in names:
        recs = [record(experiment, name, s) for s in sizes]
        lines.append(f"| `{name}` | {VARIANTS[name]} | "
                     + " | ".join(f"{r['pct_of_cublas']:.1f} %" if r else "—" for r in recs)
                     + (f" | {recs[-1]['tflops']:.2f} | {signed['median_ms'] / recs[-1]['median_ms']:.2f}× |"
                        if recs[-1] else " | — | — |"))
    return MarkdownTable("\n".join(lines))


def variants_figure(experiment: dict, names):
    """Bars: % of cuBLAS of the named variants at the experiment's largest size."""
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    big = experiment_sizes(experiment)[-1]
    shown = [n for n in names if record(experiment, n, big)]
    fig = Figure(figsize=(7.5, 4), layout="constrained")
    ax = fig.subplots()
    colours = {"signed": "tab:red", "unsigned": "tab:blue", "shared_memory": "tab:gray", "register_1d": "tab:gray"}
    bars = ax.bar([VARIANTS[n].replace(": ", ":\n").replace(", ", ",\n") for n in shown],
                  [record(experiment, n, big)["pct_of_cublas"] for n in shown],
                  color=[colours.get(n, "tab:cyan") for n in shown])
    ax.bar_label(bars, fmt="%.1f %%", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set(ylabel="% of cuBLAS (same run)",
           title=f"Step 5 and variants, {size_label(big)}\n{short_label(experiment['environment'])}")
    ax.title.set_fontsize(10)
    return fig


def runs_agree(results: dict, experiment: dict) -> dict | None:
    """Step 5's % of cuBLAS in the course's benchmark and as the experiment's ``unsigned`` and ``signed`` variants at
    their largest common size; ``agree``: the benchmark is closer to ``unsigned`` (it timed step 5 as shipped)."""
    both = [s for s in experiment_sizes(experiment)
            if record(results, "register_2d", s) and record(experiment, "unsigned", s)]
    if not both:
        return None
    size = both[-1]
    out = {"size": size_label(size), "benchmark": record(results, "register_2d", size)["pct_of_cublas"],
           "experiment, unsigned": record(experiment, "unsigned", size)["pct_of_cublas"],
           "experiment, signed": record(experiment, "signed", size)["pct_of_cublas"],
           "benchmark GPU": results["environment"].get("gpu"), "experiment GPU": experiment["environment"].get("gpu")}
    out["agree"] = (abs(out["benchmark"] - out["experiment, unsigned"])
                    < abs(out["benchmark"] - out["experiment, signed"]))
    return out


def earlier_experiment(earlier: dict, experiment: dict) -> MarkdownTable:
    """The first, signed-only run of the experiment beside the current one at the earlier run's largest size (% of
    cuBLAS of each run), and what the strided map was worth in each."""
    size = experiment_sizes(earlier)[-1]
    old = {n: record(earlier, n, size) for n in ("A_shipped", "B_strided", "C_strided_transposedA",
                                                            "shared_memory")}
    new = {n: record(experiment, n, size) for n in ("signed", "unsigned", "unsigned_strided")}
    pct = {**{k: f"{r['pct_of_cublas']:.1f} %" for k, r in old.items()},
           **{k: f"{r['pct_of_cublas']:.1f} %" for k, r in new.items()}}
    return MarkdownTable("\n".join([
        f"| at {size_label(size)} | signed indices (earlier run) | unsigned indices (current run) |", "|:--|--:|--:|",
        f"| contiguous map (step 5) | {pct['A_shipped']} | {pct['unsigned']} |",
        f"| strided map | {pct['B_strided']} | {pct['unsigned_strided']} |",
        f"| strided map, A transposed | {pct['C_strided_transposedA']} | |", f"| step 3 | {pct['shared_memory']} | |",
        f"| **strided map's speedup** | {old['A_shipped']['median_ms'] / old['B_strided']['median_ms']:.2f}× "
        f"| {new['unsigned']['median_ms'] / new['unsigned_strided']['median_ms']:.2f}× |",
        f"| the signed kernel, current run against earlier | | "
        f"{new['signed']['median_ms'] / old['A_shipped']['median_ms'] - 1:+.1%} time |"]))


# -- the compiled code -----------------------------------------------------------------------------------------------
def first_attempt(step):
    """The first attempt (``register_2d_signed_kernel``, launched by ``launch_signed``) as a ``Step``, so that
    ``lesson.check_against_numpy`` can check it."""
    from types import SimpleNamespace

    from gemm_steps.harness.step import Step

    step = as_step(step)
    return Step(step.number, SimpleNamespace(
        TITLE="2D register tiling, signed indices (first attempt)",
        SUMMARY="Step 5's kernel with Numba's default, signed, index types.",
        launch=step.module.launch_signed), name="register_2d_signed")


def compile_step_5(register_1d, register_2d) -> dict:
    """Steps 4 and 5 and the first attempt, compiled to PTX on the CPU, labelled for the tables."""
    compiled = compile_kernels([register_1d, register_2d], counter_examples=[register_2d])
    return {"register_1d (step 4)": compiled["register_1d"],
            "register_2d_signed (first attempt)": compiled["register_2d_signed"],
            "register_2d (step 5)": compiled["register_2d"]}


SIGNED, SHIPPED = "register_2d_signed (first attempt)", "register_2d (step 5)"
SIGN_BIT = "-9223372036854775808"  # 0x8000000000000000, the sign bit of a 64-bit integer, as PTX prints it


def sign_tests(ptx: str) -> dict:
    """How often the PTX isolates the sign bit of a 64-bit value, by the power of two the next shift makes of it."""
    lines = ptx.splitlines()
    found: dict = {}
    for at, line in enumerate(lines):
        if SIGN_BIT in line:
            shift = re.search(r"shr\.u64\s+%rd\d+, %rd\d+, (\d+);", lines[at + 1]) if at + 1 < len(lines) else None
            added = 2 ** (63 - int(shift.group(1))) if shift else None
            found[added] = found.get(added, 0) + 1
    return found


def sign_masks(ptx: str) -> int:
    """How often the PTX spreads the sign bit of a 64-bit value over all 64 bits (``shr.s64 x, 63``)."""
    return len(re.findall(r"shr\.s64\s+%rd\d+, %rd\d+, 63;", ptx))


def sign_table(compiled: dict) -> str:
    """One line per kernel: its sign-bit tests (by what they add) and sign masks."""
    out = []
    for label, entry in compiled.items():
        tests = sign_tests(entry["ptx"])
        detail = ", ".join(f"{n} adding {added}" for added, n in sorted(tests.items(), key=lambda x: -x[1]) if added)
        out.append(f"{label:36} {sum(tests.values()):3d} sign-bit tests" + (f" ({detail})" if detail else "")
                   + f", {sign_masks(entry['ptx'])} sign masks")
    return "\n".join(out)


def sign_test_example(ptx: str, shift: int = 56) -> str:
    """The four PTX lines around the first sign-bit test followed by a right shift of ``shift``."""
    lines = ptx.splitlines()
    at = next(i for i, line in enumerate(lines)
              if SIGN_BIT in line and re.search(rf"shr\.u64.*, {shift};", lines[i + 1]))
    return "\n".join(line.strip() for line in lines[at - 1:at + 3])


def fmas_in_ptx(compiled: dict, step) -> dict:
    """``fma.rn.f32`` in the PTX of each of ``step``'s kernels, in k-steps' worth (THREAD_M × THREAD_N FMAs each):
    1 means the ``kk`` loop reached ``ptxas`` as a loop."""
    config = as_step(step).config
    return {label: len(re.findall(r"\bfma\.rn\.f32\b", entry["ptx"])) / (_tm(config) * _tn(config))
            for label, entry in compiled.items() if as_step(entry["step"]).name == as_step(step).name}


def ceilings(experiment: dict, compiled: dict, step):
    """Both kernels against their ceilings in the experiment's run: the shared-memory ceiling (the first attempt
    with its loads as written, step 5 with B's two 128-bit loads that its profile shows) and the issue ceiling
    (the FP32 peak over the PTX instructions per FMA of the k-loop). A figure, and a table per kernel: TFLOPS, the
    lower ceiling and the share of it reached, registers, blocks and warps per SM."""
    step = as_step(step)
    big = experiment_sizes(experiment)[-1]
    peak, rows, fmas = fp32_peak_tflops(experiment), _model_rows(step.config), fmas_per_warp_k_step(step.config)
    issue = {label: peak / sum(k_loop_mix(compiled[label]["ptx"], fmas_per_k_tile(step)).values())
             for label in (SIGNED, SHIPPED)}
    limits = {
        SIGNED: {"shared-memory ceiling, loads as written":
                 sm_rate_tflops(experiment, fmas / (rows["scalar"]["a"] + rows["scalar"]["b"])),
                 "issue ceiling": issue[SIGNED]},
        SHIPPED: {"shared-memory ceiling, B in 128-bit loads":
                  min(sm_rate_tflops(experiment, fmas / (rows["wide"]["a"] + rows["wide"]["b"])), peak),
                  "issue ceiling": issue[SHIPPED]}}
    measured = {SIGNED: record(experiment, "signed", big),
                SHIPPED: record(experiment, "unsigned", big)}
    fig = ceiling_figure([("first attempt\n(signed)", measured[SIGNED]["tflops"], limits[SIGNED]),
                          ("step 5\n(unsigned)", measured[SHIPPED]["tflops"], limits[SHIPPED])],
                         f"Step 5 and its first attempt at {size_label(big)}", experiment)
    lines = ["| kernel | TFLOPS | lower ceiling (TFLOPS) | share of it | issue ceiling (TFLOPS) | registers "
             "| blocks per SM | warps per SM |", "|:--|--:|--:|--:|--:|--:|--:|--:|"]
    for label in (SIGNED, SHIPPED):
        low = min(limits[label].values())
        fit = blocks_per_sm(compiled[label]["registers"], threads_per_block(step), compiled[label]["shared_bytes"])
        lines.append(f"| {label} | {measured[label]['tflops']:.2f} | {low:.1f} | {measured[label]['tflops'] / low:.0%} "
                     f"| {issue[label]:.1f} | {compiled[label]['registers']} | {fit['blocks']} | {fit['warps']} |")
    speedup = measured[SIGNED]["median_ms"] / measured[SHIPPED]["median_ms"]
    lines.append(f"| **step 5 / first attempt** | {speedup:.2f}× | | | {issue[SHIPPED] / issue[SIGNED]:.2f}× | | | |")
    return fig, MarkdownTable("\n".join(lines))


# -- the strided map (deep dive 05_strided_map) -----------------------------------------------------------------------
def load_widths(step) -> MarkdownTable:
    """B's fragment in loads of 1, 2 and 4 floats (scalar, 64-bit, 128-bit): the wavefront model of each, beside
    what the profiler measured (its shared wavefronts per warp and k-step, less the model's A loads and stores)."""
    step = as_step(step)
    config, element = step.config, thread_map(step.config)
    counts = profile_counts(step)
    a, stores = k_step_wavefronts(config, element)[0], tile_stores_per_k_step(config)
    lines = ["| B's fragment loaded as | loads per k-step | lanes served at a time | B wavefronts (model) "
             "| A + B + stores (model) |", "|:--|--:|--:|--:|--:|"]
    for width, what in ((1, "scalar"), (2, "64-bit"), (4, "128-bit")):
        b = k_step_wavefronts(config, element, b_width=width)[1]
        lines.append(f"| {what} | {_tn(config) // width} | {32 // width} | {b} | {a + b + stores:g} |")
    if counts:
        lines.append(f"| **profiler** (shared wavefronts per warp and k-step) | | | "
                     f"**{counts['wavefronts'] - a - stores:.2f}** | **{counts['wavefronts']:.2f}** |")
    return MarkdownTable("\n".join(lines))


def strided_table(experiment: dict, config: dict) -> MarkdownTable:
    """The experiment's three unsigned variants at its largest size: the wavefront model (A + B per k-step), the
    shared-memory ceiling it gives, TFLOPS, % of cuBLAS and speed against step 5."""
    big = experiment_sizes(experiment)[-1]
    fmas, peak = fmas_per_warp_k_step(config), fp32_peak_tflops(experiment)
    contiguous, strided = thread_map(config), thread_map(config, strided=True)
    models = {"unsigned": (*k_step_wavefronts(config, contiguous, b_width=4), "B as two 128-bit loads"),
              "unsigned_strided": (*k_step_wavefronts(config, strided), "scalar loads"),
              "unsigned_strided_transposed_a": (*k_step_wavefronts(config, strided, a_transposed=True), "scalar loads")}
    shipped = record(experiment, "unsigned", big)
    lines = [f"| variant, at {size_label(big)} | wavefronts per k-step (A + B) | FMAs per wavefront "
             "| shared-memory ceiling (TFLOPS) | TFLOPS | % of cuBLAS (same run) | × step 5 |",
             "|:--|--:|--:|--:|--:|--:|--:|"]
    for name, (a, b, how) in models.items():
        rec = record(experiment, name, big)
        lines.append(f"| `{name}` | {a} + {b} ({how}) | {fmas / (a + b):.1f} "
                     f"| {min(sm_rate_tflops(experiment, fmas / (a + b)), peak):.1f} | {rec['tflops']:.2f} "
                     f"| {rec['pct_of_cublas']:.1f} % | {shipped['median_ms'] / rec['median_ms']:.2f}× |")
    return MarkdownTable("\n".join(lines))


__all__ = ["outer_product_figure", "reuse_table", "thread_map", "k_step_wavefronts", "tile_stores_per_k_step",
           "fmas_per_warp_k_step", "prediction", "profile_counts", "profile_check", "verdict", "waiting",
           "EXPERIMENT", "EARLIER", "VARIANTS", "load_experiment", "experiment_sizes",
           "variants_table", "variants_figure", "runs_agree", "earlier_experiment", "first_attempt", "compile_step_5",
           "SIGNED", "SHIPPED", "SIGN_BIT", "sign_tests", "sign_masks", "sign_table", "sign_test_example",
           "fmas_in_ptx", "ceilings", "load_widths", "strided_table"]
