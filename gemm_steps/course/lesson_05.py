"""Lesson 5's helpers (2-D register tiling), shared with its deep dives (``lessons/deep_dives/05_*.py``).

* **The picture** — :func:`outer_product_figure`: one thread's THREAD_M × THREAD_N block of C, and the column of
  A's tile and row of B's tile whose outer product feeds it, drawn from a step's tile configuration.
* **The prediction** — :func:`reuse_table` (shared and global loads per FMA, from the tile sizes); the wavefront
  model of one warp's k-step (:func:`thread_map`, :func:`k_step_wavefronts`, :func:`tile_stores_per_k_step`);
  :func:`prediction`, the shared-memory ceilings it gives.
* **What the profiler says** — :func:`profile_counts` turns the shipped Nsight Compute reports into counts per warp
  and k-step (wavefronts, bank conflicts, instructions per FMA); :func:`profile_check` sets them against the model.
* **The measurement** — :func:`verdict`; the step-5 experiment (the signed first attempt, two strided variants):
  :func:`load_experiment`, :func:`experiment_record`, :func:`variants_table`, :func:`variants_figure`,
  :func:`runs_agree`, :func:`side_experiments`, :func:`signed_story`, :func:`earlier_experiment`.
* **The compiled code** — :func:`first_attempt` (the signed kernel as a checkable ``Step``), :func:`compile_step_5`,
  :func:`sign_tests`, :func:`sign_masks`, :func:`sign_table`, :func:`sign_test_example` (what Numba's
  negative-index handling looks like in PTX), :func:`ceilings` (both kernels against their ceilings).
* **The strided map** (deep dive ``05_strided_map``) — :func:`variant_models`, :func:`strided_table`,
  :func:`strided_text`.

Every interpreting sentence is computed here from the shipped files, so the prose cannot drift from the numbers.
"""

from __future__ import annotations

import re

from gemm_steps.toolkit.kernel_tools import ceil_div

from . import profiles
from .compiled import blocks_per_sm, compile_kernels, fmas_per_k_tile, k_loop_mix, threads_per_block
from .display import as_step
from .models import ceiling_figure, sm_rate_tflops, wavefronts
from .timings import common_sizes, fp32_peak_tflops, headline_size, load_shipped, record, shown_path, size_label

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


# -- the prediction: loads per FMA from the tile sizes -------------------------------------------------------------
def reuse_table(steps) -> str:
    """Per k, what one thread loads from shared memory and how many FMAs it does with it; per k-tile, what a block
    loads from global memory per FMA — from each step's tile constants (THREAD_M, THREAD_N: 1 where not given)."""
    lines = ["| step | results per thread | per k: shared loads → FMAs | FMAs per shared load "
             "| global loads per FMA |", "|:--|--:|--:|--:|--:|"]
    per_load, global_loads = [], []
    for step in map(as_step, steps):
        c = step.config
        tm, tn = _tm(c), _tn(c)
        loads, fmas = tm + tn, tm * tn
        global_per_fma = (c["BLOCK_M"] + c["BLOCK_N"]) / (c["BLOCK_M"] * c["BLOCK_N"])
        per_load.append(fmas / loads)
        global_loads.append(global_per_fma)
        lines.append(f"| {step.number} {step.name} | {tm} × {tn} | {loads} → {fmas} | {fmas / loads:.2f} "
                     f"| 1/{1 / global_per_fma:.0f} |")
    return "\n".join(lines) + (
        f"\n\nPer thread, step {as_step(steps[-1]).number} does **{per_load[-1] / per_load[-2]:.1f}×** as many FMAs "
        f"per shared load as step {as_step(steps[-2]).number}, and its blocks make "
        f"{global_loads[-2] / global_loads[-1]:.0f}× fewer global loads per FMA.")


# -- the wavefront model of one warp's k-step -----------------------------------------------------------------------
def thread_map(config: dict, strided: bool = False):
    """``element(t, i, j) -> (row, col)`` in the block tile: the element of C that result (i, j) of thread t is.

    Contiguous (steps 4 and 5): thread t owns a THREAD_M × THREAD_N block, at block-row t // (BLOCK_N / THREAD_N)
    and block-column t % (BLOCK_N / THREAD_N). Strided (the experiment's variants): rows t // 16 + 16·i and columns
    t % 16 + 16·j, for step 5's 16 × 16 threads."""
    tm, tn = _tm(config), _tn(config)
    rows, cols = config["BLOCK_M"] // tm, config["BLOCK_N"] // tn
    if strided:
        return lambda t, i, j: (t // cols + rows * i, t % cols + cols * j)
    return lambda t, i, j: ((t // cols) * tm + i, (t % cols) * tn + j)


def served(words_per_lane: list, width: int) -> int:
    """Wavefronts of one warp-wide load of ``width`` neighbouring floats per lane, served 32 / ``width`` lanes at a
    time (a quarter-warp for 128-bit loads), each phase at least one wavefront. For a scalar load this is
    :func:`~gemm_steps.course.models.wavefronts`; for a wide one, it is the rule that reproduces the profiler's
    counts (:func:`profile_check`)."""
    phase = 32 // width
    return sum(wavefronts(words_per_lane[p:p + phase]) for p in range(0, len(words_per_lane), phase))


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
    """Shared stores per warp and k-step when the block copies its tiles: each thread stores (BLOCK_M + BLOCK_N) ·
    BLOCK_K / THREADS floats per k-tile, 32 neighbouring ones per warp-wide store (one wavefront each)."""
    return (config["BLOCK_M"] + config["BLOCK_N"]) / config["THREADS"]


def fmas_per_warp_k_step(config: dict) -> int:
    return len(WARP) * _tm(config) * _tn(config)


def prediction(results: dict, before, after) -> dict:
    """The shared-memory model of ``before`` and ``after`` (steps 4 and 5), scalar loads as written: wavefronts
    per warp and k-step, FMAs per wavefront, and the ceiling in TFLOPS on the results' GPU; and a paragraph."""
    model = {}
    for step in map(as_step, (before, after)):
        a, b = k_step_wavefronts(step.config, thread_map(step.config))
        per = fmas_per_warp_k_step(step.config) / (a + b)
        model[step.name] = {"a": a, "b": b, "fmas_per_wavefront": per, "ceiling": sm_rate_tflops(results, per)}
    old, new = model[as_step(before).name], model[as_step(after).name]
    ratio = new["ceiling"] / old["ceiling"]
    c = as_step(after).config
    text = (
        f"Per warp, lanes that need different words of one bank wait for each other (lesson 3). For the first warp of "
        f"a block (threads 0–31: block-rows 0 and 1 of step 5's {c['BLOCK_M'] // _tm(c)} × "
        f"{c['BLOCK_N'] // _tn(c)} threads), one k-step of step 5 costs **{new['a']} wavefronts for A's fragment "
        f"and {new['b']} for B's**: lanes 0 and 16 read A words {_tm(c) * c['BLOCK_K']} floats apart (the same bank), "
        f"and the 16 lanes of a block-row read B words {_tn(c)} floats apart, four to a bank. That is "
        f"{new['fmas_per_wavefront']:.1f} FMAs per wavefront, against step 4's {old['fmas_per_wavefront']:.1f} "
        f"({old['a'] + old['b']} wavefronts for {fmas_per_warp_k_step(as_step(before).config)} FMAs).\n\n"
        f"At one wavefront per clock per SM on the {results['environment']['gpu']}, the shared-memory ceiling is "
        f"**{new['ceiling']:.1f} TFLOPS** (step 4: {old['ceiling']:.1f}). **Prediction: if shared memory were the "
        f"limit, step 5 could be up to {ratio:.2f}× faster than step 4.** Lesson 4 taught us to distrust a model "
        "that counts one resource: step 4 was held back by the instructions around its FMAs, not by shared memory. "
        "So this is a ceiling, not a forecast.")
    return {"model": model, "ratio": ratio, "text": text}


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
            "warps_per_sm": p.value("Achieved Active Warps Per SM"),
            "l1_busy": p.value("L1/TEX Cache Throughput")}


def _model_rows(config: dict) -> dict:
    """The model's wavefronts per warp and k-step with the tile stores, and its bank conflicts (wavefronts beyond
    one per phase), for B's fragment as scalar loads and as 128-bit loads."""
    element = thread_map(config)
    stores = tile_stores_per_k_step(config)
    a, b1 = k_step_wavefronts(config, element)
    _, b4 = k_step_wavefronts(config, element, b_width=4)
    tm, tn = _tm(config), _tn(config)
    return {"scalar": {"a": a, "b": b1, "total": a + b1 + stores, "conflicts": a - tm + b1 - tn},
            "wide": {"a": a, "b": b4, "total": a + b4 + stores, "conflicts": a - tm + b4 - tn}}


def profile_check(before, after) -> str:
    """The wavefront model of ``before`` and ``after`` against their profiles, and what the profiles say about
    instructions and global loads."""
    old, new = profile_counts(before), profile_counts(after)
    if old is None or new is None:
        return "(No shipped Nsight Compute report for these steps.)"
    before, after = as_step(before), as_step(after)
    m4, m5 = _model_rows(before.config)["scalar"], _model_rows(after.config)
    predicted = fmas_per_warp_k_step(after.config) / (m5["scalar"]["a"] + m5["scalar"]["b"])
    lines = [
        "Per warp and k-step (model: the fragment loads of the prediction plus the tile stores, "
        f"{tile_stores_per_k_step(after.config):g} per k-step in step 5):\n",
        "| | model, loads as written | model, B as two 128-bit loads | profiler |", "|:--|--:|--:|--:|",
        f"| step 4: shared wavefronts | {m4['total']:.2f} | | {old['wavefronts']:.2f} |",
        f"| step 5: shared wavefronts | {m5['scalar']['total']:.2f} | {m5['wide']['total']:.2f} "
        f"| **{new['wavefronts']:.2f}** |",
        f"| step 5: of them bank conflicts | {m5['scalar']['conflicts']} | {m5['wide']['conflicts']} "
        f"| **{new['conflicts']:.2f}** |"]
    return "\n".join(lines) + (
        f"\n\nStep 4's profile matches the model ({old['fmas_per_wavefront']:.1f} FMAs per wavefront measured). "
        f"Step 5's does not match its loads as written: it matches B's 8 scalar loads merged by `ptxas` into two "
        f"128-bit loads. Served a quarter-warp (8 lanes) at a time, each needs two wavefronts per quarter: "
        f"{m5['wide']['b']} for B's fragment instead of {m5['scalar']['b']} (four 64-bit loads, a half-warp at a "
        f"time, would need {k_step_wavefronts(after.config, thread_map(after.config), b_width=2)[1]}). The profiler "
        "measures "
        f"**{new['fmas_per_wavefront']:.1f} FMAs per wavefront**, not the {predicted:.1f} "
        f"predicted. Global load requests halve, as the tile sizes said ({old['global_requests'] / 1e6:.2f} M → "
        f"{new['global_requests'] / 1e6:.2f} M). And per FMA, step 4 executed **{old['instructions_per_fma']:.2f} "
        f"instructions**, step 5 **{new['instructions_per_fma']:.2f}**.")


# -- the measurement -------------------------------------------------------------------------------------------------
def verdict(results: dict, steps, pred: dict) -> str:
    """What the benchmark says about the prediction: step 5 against steps 3 and 4 and the ceiling, why it beat the
    ceiling (from the profiles), and size by size how many blocks the grid has for the GPU's SMs."""
    step3, step4, step5 = map(as_step, steps)
    size = headline_size(results, [s.name for s in steps])
    r3, r4, r5 = (record(results, s.name, size) for s in (step3, step4, step5))
    speedup = r4["median_ms"] / r5["median_ms"]
    ceiling = pred["model"][step5.name]["ceiling"]
    c = step5.config
    sms = results["environment"]["sm_count"]
    old, new = profile_counts(step4), profile_counts(step5)
    text = (f"At {size_label(size)} step 5 runs at **{r5['tflops']:.2f} TFLOPS**, {r5['pct_of_cublas']:.1f} % of "
            f"cuBLAS: **{speedup:.2f}× step 4** and {r3['median_ms'] / r5['median_ms']:.2f}× step 3. ")
    if speedup > pred["ratio"]:
        text += (f"That is more than the {pred['ratio']:.2f}× the shared-memory model allowed"
                 + (f", and above its ceiling of {ceiling:.1f} TFLOPS" if r5["tflops"] > ceiling else "") + ". ")
    else:
        text += f"That is within the {pred['ratio']:.2f}× the shared-memory model allowed. "
    if old and new:
        wide = _model_rows(c)["wide"]
        wide_ceiling = sm_rate_tflops(results, fmas_per_warp_k_step(c) / (wide["a"] + wide["b"]))
        text += (
            "The profiles say why the model was too low on both counts:\n\n"
            f"* **The ceiling counted loads that do not run.** With B's fragment in two 128-bit loads, as the "
            f"profiler counts it, the ceiling is {wide_ceiling:.1f} TFLOPS; step 5 reaches "
            f"{r5['tflops'] / wide_ceiling:.0%} of it.\n"
            f"* **Step 4 was not at its shared-memory ceiling to begin with**: it was bound by issuing "
            f"{old['instructions_per_fma']:.2f} instructions per FMA. Step 5 issues "
            f"{new['instructions_per_fma']:.2f}, {old['instructions_per_fma'] / new['instructions_per_fma']:.1f}× "
            f"fewer: an outer product needs far fewer loads and index computations per FMA — and step 5's indices "
            "are unsigned (below).\n\n")
    lines = []
    for m, n, k in common_sizes(results, [step4.name, step5.name]):
        blocks = ceil_div(m, c["BLOCK_M"]) * ceil_div(n, c["BLOCK_N"])
        before_ms, after_ms = (record(results, s.name, (m, n, k))["median_ms"] for s in (step4, step5))
        ratio = before_ms / after_ms
        lines.append(f"* {size_label((m, n, k))}: step 5 is {ratio:.2f}× step 4; its grid has {blocks} blocks for "
                     f"{sms} SMs" + (f" — **{sms - blocks} SMs get no block at all**" if blocks < sms else ""))
    idle = any(ceil_div(m, c["BLOCK_M"]) * ceil_div(n, c["BLOCK_N"]) < sms
               for m, n, _ in common_sizes(results, [step4.name, step5.name]))
    return text + "Size by size:\n\n" + "\n".join(lines) + (
        f"\n\nAt small sizes, {c['BLOCK_M']}×{c['BLOCK_N']} tiles make so few blocks that SMs sit idle: plain lack of "
        "parallelism (lesson 10 gives it a name, wave quantization)." if idle else "")


def waiting(after) -> str:
    """What step 5's profile says it waits for: occupancy, issue rate, how busy shared memory is."""
    new = profile_counts(after)
    if new is None:
        return ""
    p = new["profile"]
    return (f"Step 5 now issues only {new['issue']:.2f} instructions per cycle per scheduler: in "
            f"{p.value('No Eligible'):.0f} % of cycles no warp is ready. With {new['registers']:.0f} registers per "
            f"thread, only {p.value('Block Limit Registers'):.0f} blocks fit on an SM ({new['warps_per_sm']:.1f} "
            f"warps on average, of 64), and shared memory is {new['l1_busy']:.0f} % busy, "
            f"{new['conflicts'] / new['wavefronts']:.0%} of its wavefronts spent on bank conflicts.")


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


def experiment_record(experiment: dict, name: str, size) -> dict | None:
    """The experiment's successful record of one variant (its own name: 'signed', 'unsigned', …) at one size."""
    return next((r for r in experiment["records"] if r["step"] == name and (r["M"], r["N"], r["K"]) == tuple(size)
                 and "error" not in r), None)


def experiment_sizes(experiment: dict) -> list:
    return sorted({(r["M"], r["N"], r["K"]) for r in experiment["records"]}, key=lambda s: s[0] * s[1] * s[2])


def variants_table(experiment: dict, names) -> str:
    """% of cuBLAS of the named variants at every size of the experiment, and TFLOPS at the largest."""
    sizes = experiment_sizes(experiment)
    lines = ["| variant | what it is | " + " | ".join(f"% of cuBLAS at {size_label(s)}" for s in sizes)
             + f" | TFLOPS at {size_label(sizes[-1])} |", "|:--|:--|" + "--:|" * (len(sizes) + 1)]
    for name in names:
        recs = [experiment_record(experiment, name, s) for s in sizes]
        lines.append(f"| `{name}` | {VARIANTS[name]} | "
                     + " | ".join(f"{r['pct_of_cublas']:.1f} %" if r else "—" for r in recs)
                     + (f" | {recs[-1]['tflops']:.2f} |" if recs[-1] else " | — |"))
    return "\n".join(lines)


def variants_figure(experiment: dict, names):
    """Bars: % of cuBLAS of the named variants at the experiment's largest size."""
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    big = experiment_sizes(experiment)[-1]
    shown = [n for n in names if experiment_record(experiment, n, big)]
    fig = Figure(figsize=(7.5, 4), layout="constrained")
    ax = fig.subplots()
    colours = {"signed": "tab:red", "unsigned": "tab:blue", "shared_memory": "tab:gray", "register_1d": "tab:gray"}
    bars = ax.bar([VARIANTS[n].replace(": ", ":\n").replace(", ", ",\n") for n in shown],
                  [experiment_record(experiment, n, big)["pct_of_cublas"] for n in shown],
                  color=[colours.get(n, "tab:cyan") for n in shown])
    ax.bar_label(bars, fmt="%.1f %%", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set(ylabel="% of cuBLAS (same run)",
           title=f"Step 5 and variants, {size_label(big)}\n{short_label(experiment['environment'])}")
    ax.title.set_fontsize(10)
    return fig


def runs_agree(results: dict, experiment: dict) -> str:
    """Step 5 in the course's benchmark and as the experiment's ``unsigned`` variant, at their largest common size
    (a check that the benchmark timed the kernel as shipped, not the signed first attempt)."""
    both = [s for s in experiment_sizes(experiment)
            if record(results, "register_2d", s) and experiment_record(experiment, "unsigned", s)]
    if not both:
        return "The benchmark and the experiment have no size in common."
    size = both[-1]
    bench = record(results, "register_2d", size)["pct_of_cublas"]
    shipped = experiment_record(experiment, "unsigned", size)["pct_of_cublas"]
    signed = experiment_record(experiment, "signed", size)["pct_of_cublas"]
    gpus = results["environment"].get("gpu"), experiment["environment"].get("gpu")
    where = "" if gpus[0] == gpus[1] else f" (the benchmark on the {gpus[0]}, the experiment on the {gpus[1]})"
    same = abs(bench - shipped) < abs(bench - signed)
    return (f"At {size_label(size)} step 5 ran at {bench:.1f} % of cuBLAS in the course's benchmark (the shipped run "
            f"from `{shown_path(results['path'])}`) and "
            f"{shipped:.1f} % as the experiment's `unsigned`{where}: "
            + ("the two runs agree." if same else
               f"**the benchmark is closer to the signed first attempt ({signed:.1f} %): it timed an older step 5.**"))


def side_experiments(experiment: dict) -> str:
    """The lesson's summary of the two side experiments, at the experiment's largest size."""
    big = experiment_sizes(experiment)[-1]
    pct = {name: experiment_record(experiment, name, big)["pct_of_cublas"] for name in VARIANTS}
    ms = {name: experiment_record(experiment, name, big)["median_ms"] for name in VARIANTS}
    return (
        f"In one run on the {experiment['environment']['gpu']} at {size_label(big)}: the first attempt, with signed "
        f"indices, reached **{pct['signed']:.1f} %** of cuBLAS — "
        f"{'below' if ms['signed'] > ms['shared_memory'] else 'above'} step 3 ({pct['shared_memory']:.1f} %) and "
        f"{'below' if ms['signed'] > ms['register_1d'] else 'above'} step 4 ({pct['register_1d']:.1f} %). "
        "The same kernel with unsigned indices, step 5 as shipped, reached "
        f"**{pct['unsigned']:.1f} %**: {ms['signed'] / ms['unsigned']:.2f}× faster from the types of its indices "
        f"alone. A strided thread map on top reached {pct['unsigned_strided']:.1f} %.")


def signed_story(experiment: dict) -> str:
    """The first attempt against the step as shipped and steps 3 and 4, at the experiment's largest size."""
    big = experiment_sizes(experiment)[-1]
    signed, shipped = experiment_record(experiment, "signed", big), experiment_record(experiment, "unsigned", big)
    old3, old4 = experiment_record(experiment, "shared_memory", big), experiment_record(experiment, "register_1d", big)
    below3 = "below" if signed["tflops"] < old3["tflops"] else "above"
    below4 = "below" if signed["tflops"] < old4["tflops"] else "above"
    return (
        f"At {size_label(big)}, in one run: the first attempt reached **{signed['pct_of_cublas']:.1f} %** of "
        f"cuBLAS — {below3} step 3 ({old3['pct_of_cublas']:.1f} %) and {below4} step 4 "
        f"({old4['pct_of_cublas']:.1f} %). "
        + (f"With signed indices the 2-D tiling made the kernel *slower* than step 4 "
           f"({old4['median_ms'] / signed['median_ms']:.2f}× its speed). " if signed["tflops"] < old4["tflops"] else
           f"With signed indices the 2-D tiling bought {old4['median_ms'] / signed['median_ms']:.2f}× over step 4. ")
        + f"The same kernel with unsigned indices reached **{shipped['pct_of_cublas']:.1f} %**: "
        f"**{signed['median_ms'] / shipped['median_ms']:.2f}× faster** than the first attempt, from nothing but the "
        "types of its indices.")


def earlier_experiment(earlier: dict, experiment: dict) -> str:
    """The first, signed-only version of the experiment against the current one, at their common size."""
    names = {"A_shipped": "signed", "B_strided": "unsigned_strided", "C_strided_transposedA":
             "unsigned_strided_transposed_a", "shared_memory": "shared_memory"}
    size = experiment_sizes(earlier)[-1]
    old = {name: experiment_record(earlier, name, size) for name in names}
    new = {name: experiment_record(experiment, name, size) for name in ("signed", "unsigned", "unsigned_strided")}
    lines = ["| variant | signed indices (earlier run) | unsigned indices (current run) |", "|:--|--:|--:|",
             f"| contiguous map (step 5) | {old['A_shipped']['pct_of_cublas']:.1f} % "
             f"| {new['unsigned']['pct_of_cublas']:.1f} % |",
             f"| strided map | {old['B_strided']['pct_of_cublas']:.1f} % "
             f"| {new['unsigned_strided']['pct_of_cublas']:.1f} % |",
             f"| strided map, A transposed | {old['C_strided_transposedA']['pct_of_cublas']:.1f} % | (see the "
             "strided-map deep dive) |",
             f"| step 3 | {old['shared_memory']['pct_of_cublas']:.1f} % | |"]
    gain_signed = old["A_shipped"]["median_ms"] / old["B_strided"]["median_ms"]
    gain_unsigned = new["unsigned"]["median_ms"] / new["unsigned_strided"]["median_ms"]
    drift = new["signed"]["median_ms"] / old["A_shipped"]["median_ms"] - 1
    return ("\n".join(lines) + "\n\n"
            f"At {size_label(size)}, in % of cuBLAS of each run. With signed indices every variant sat near step 3, "
            f"and the strided map was worth {gain_signed:.2f}×; with unsigned indices it is worth "
            f"{gain_unsigned:.2f}×. The index arithmetic hid what the thread map was worth. (The signed kernel timed "
            f"in both runs differs by {drift:+.1%} between them.)")


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


def k_steps_in_ptx(compiled: dict, step) -> str:
    """How many FMAs the PTX of each kernel holds, against one k-step's THREAD_M × THREAD_N: whether the ``kk`` loop
    was unrolled before ``ptxas``."""
    config = as_step(step).config
    per_k_step = _tm(config) * _tn(config)
    out = []
    for label, entry in compiled.items():
        if as_step(entry["step"]).name != as_step(step).name:
            continue
        fmas = len(re.findall(r"\bfma\.rn\.f32\b", entry["ptx"]))
        out.append(f"`{label}`: {fmas} `fma.rn.f32` in all, " + (
            f"one k-step's {per_k_step}: the {config['BLOCK_K']}-step `kk` loop reaches `ptxas` as a loop, with "
            "its counter, compare and branch" if fmas == per_k_step else f"{fmas / per_k_step:g} k-steps' worth"))
    return "; ".join(out) + "."


def ceilings(experiment: dict, compiled: dict, step):
    """Both kernels against their ceilings in the experiment's run: the shared-memory ceiling (the first attempt
    with its loads as written, step 5 with B's two 128-bit loads that its profile shows) and the issue ceiling
    (the FP32 peak over the PTX instructions per FMA of the k-loop). A figure and a paragraph."""
    step = as_step(step)
    config = step.config
    big = experiment_sizes(experiment)[-1]
    signed, shipped = experiment_record(experiment, "signed", big), experiment_record(experiment, "unsigned", big)
    peak = fp32_peak_tflops(experiment)
    rows = _model_rows(config)
    fmas = fmas_per_warp_k_step(config)
    issue = {label: peak / sum(k_loop_mix(compiled[label]["ptx"], fmas_per_k_tile(step)).values())
             for label in (SIGNED, SHIPPED)}
    limits = {
        SIGNED: {"shared-memory ceiling, loads as written": sm_rate_tflops(experiment, fmas / (rows["scalar"]["a"]
                                                                                                + rows["scalar"]["b"])),
                 "issue ceiling": issue[SIGNED]},
        SHIPPED: {"shared-memory ceiling, B in 128-bit loads": min(sm_rate_tflops(experiment, fmas / (
            rows["wide"]["a"] + rows["wide"]["b"])), peak), "issue ceiling": issue[SHIPPED]},
    }
    fig = ceiling_figure([("first attempt\n(signed)", signed["tflops"], limits[SIGNED]),
                          ("step 5\n(unsigned)", shipped["tflops"], limits[SHIPPED])],
                         f"Step 5 and its first attempt at {size_label(big)}", experiment)
    lower = {label: min(c.values()) for label, c in limits.items()}
    occupancy = {label: blocks_per_sm(compiled[label]["registers"], threads_per_block(step),
                                      compiled[label]["shared_bytes"]) for label in limits}
    mix_ratio = issue[SHIPPED] / issue[SIGNED]
    index_speedup = signed["median_ms"] / shipped["median_ms"]
    registers = compiled[SIGNED]["registers"], compiled[SHIPPED]["registers"]
    text = (
        f"The first attempt reached **{signed['tflops'] / lower[SIGNED]:.0%}** of the lower of its ceilings "
        f"({lower[SIGNED]:.1f} TFLOPS, the issue ceiling: it would be the lower one even if `ptxas` had merged its "
        f"B loads too), the shipped kernel **{shipped['tflops'] / lower[SHIPPED]:.0%}** of its own "
        f"({lower[SHIPPED]:.1f} TFLOPS). Unsigned indices cut the PTX instructions per FMA {mix_ratio:.2f}×, but "
        f"the time {index_speedup:.2f}×"
        + (": fewer instructions are not the whole story. " if index_speedup > 1.2 * mix_ratio else ". "))
    if all(registers):
        text += (
            f"The registers fell too, from {registers[0]} to {registers[1]}, and with them the blocks that fit on an "
            f"SM: {occupancy[SIGNED]['blocks']} ({occupancy[SIGNED]['warps']} warps) → "
            f"**{occupancy[SHIPPED]['blocks']} ({occupancy[SHIPPED]['warps']} warps)**. At every k-tile a block's "
            "warps load the next tiles from global memory — hundreds of clock cycles — and wait at the barrier; "
            + ("with a second block on the SM, there is other work to switch to meanwhile. " if
               occupancy[SHIPPED]["blocks"] > occupancy[SIGNED]["blocks"] else ""))
    new = profile_counts(step)
    if new:
        p = new["profile"]
        text += (
            f"Step 5's shipped profile (on an H100) confirms its side: {new['registers']:.0f} registers, "
            f"{p.value('Block Limit Registers'):.0f} blocks per SM by the register limit, "
            f"{new['warps_per_sm']:.1f} warps resident on average. No profile of the first attempt is shipped, so "
            "that the single block's waits are what it lost is consistent with the timings, not shown.")
    return fig, text


# -- the strided map (deep dive 05_strided_map) -----------------------------------------------------------------------
def load_widths(step) -> str:
    """B's fragment in loads of 1, 2 and 4 floats (scalar, 64-bit, 128-bit): the wavefront model of each, beside
    what the profiler measured (its shared wavefronts per warp and k-step, less the model's A loads and stores)."""
    step = as_step(step)
    config, element = step.config, thread_map(step.config)
    counts = profile_counts(step)
    a = k_step_wavefronts(config, element)[0]
    stores = tile_stores_per_k_step(config)
    lines = ["| B's fragment loaded as | loads per k-step | lanes served at a time | B wavefronts (model) "
             "| A + B + stores (model) |", "|:--|--:|--:|--:|--:|"]
    for width, what in ((1, "scalar"), (2, "64-bit"), (4, "128-bit")):
        b = k_step_wavefronts(config, element, b_width=width)[1]
        lines.append(f"| {what} | {_tn(config) // width} | {32 // width} | {b} | {a + b + stores:g} |")
    if counts:
        lines.append(f"| **profiler** (shared wavefronts per warp and k-step) | | | "
                     f"**{counts['wavefronts'] - a - stores:.2f}** | **{counts['wavefronts']:.2f}** |")
    return "\n".join(lines)


def variant_models(config: dict) -> dict:
    """The wavefront model of the experiment's three unsigned variants: name → (A, B, how B is loaded)."""
    contiguous, strided = thread_map(config), thread_map(config, strided=True)
    return {"unsigned": (*k_step_wavefronts(config, contiguous, b_width=4),
                         "B as two 128-bit loads, as the profile shows"),
            "unsigned_strided": (*k_step_wavefronts(config, strided), "scalar loads"),
            "unsigned_strided_transposed_a": (*k_step_wavefronts(config, strided, a_transposed=True), "scalar loads")}


def strided_table(experiment: dict, config: dict) -> str:
    big = experiment_sizes(experiment)[-1]
    fmas = fmas_per_warp_k_step(config)
    lines = ["| variant | wavefronts per k-step (A + B) | FMAs per wavefront | shared-memory ceiling (TFLOPS) "
             "| TFLOPS | % of cuBLAS (same run) |", "|:--|--:|--:|--:|--:|--:|"]
    peak = fp32_peak_tflops(experiment)
    for name, (a, b, how) in variant_models(config).items():
        rec = experiment_record(experiment, name, big)
        ceiling = min(sm_rate_tflops(experiment, fmas / (a + b)), peak)
        lines.append(f"| `{name}` | {a} + {b} ({how}) | {fmas / (a + b):.1f} | {ceiling:.1f} "
                     f"| {rec['tflops']:.2f} | {rec['pct_of_cublas']:.1f} % |")
    return f"At {size_label(big)}:\n\n" + "\n".join(lines)


def strided_text(experiment: dict, config: dict) -> str:
    sizes = experiment_sizes(experiment)
    big = sizes[-1]
    shipped, strided, transposed = (experiment_record(experiment, n, big) for n in
                                    ("unsigned", "unsigned_strided", "unsigned_strided_transposed_a"))
    peak = fp32_peak_tflops(experiment)
    fmas = fmas_per_warp_k_step(config)
    ceilings = {name: min(sm_rate_tflops(experiment, fmas / (a + b)), peak)
                for name, (a, b, _) in variant_models(config).items()}
    near = [name for name, ceiling in ceilings.items()
            if experiment_record(experiment, name, big)["tflops"] > 0.8 * ceiling]

    def pct(name, s):
        return experiment_record(experiment, name, s)["pct_of_cublas"]

    gains = ", ".join(f"{pct('unsigned_strided', s) - pct('unsigned', s):+.1f} points at {size_label(s)}"
                      for s in sizes if experiment_record(experiment, "unsigned_strided", s)
                      and experiment_record(experiment, "unsigned", s))
    return (
        f"The strided map gains **{strided['pct_of_cublas'] - shipped['pct_of_cublas']:.1f} points** of cuBLAS at "
        f"{size_label(big)} ({shipped['median_ms'] / strided['median_ms']:.2f}×; at each size: {gains}). "
        f"Transposing A as well changes nothing in the model and makes the kernel "
        f"{abs(transposed['median_ms'] / strided['median_ms'] - 1):.1%} "
        f"{'slower' if transposed['median_ms'] > strided['median_ms'] else 'faster'}. "
        + ("None of these kernels is near its shared-memory ceiling (80 % of it or more), and the variants differ in "
           "more than wavefronts: the strided map also writes C in coalesced rows. The timings say the strided map "
           "is faster, not why." if not near else
           "The variants differ in more than wavefronts: the strided map also writes C in coalesced rows; the timings "
           "say it is faster, not which of these decides."))


__all__ = ["outer_product_figure", "reuse_table", "thread_map", "served", "k_step_wavefronts",
           "tile_stores_per_k_step", "fmas_per_warp_k_step", "prediction", "profile_counts", "profile_check",
           "verdict", "waiting", "EXPERIMENT", "EARLIER", "VARIANTS", "load_experiment", "experiment_record",
           "experiment_sizes", "variants_table", "variants_figure", "runs_agree", "side_experiments", "signed_story",
           "earlier_experiment", "first_attempt", "compile_step_5", "k_steps_in_ptx", "load_widths", "SIGNED",
           "SHIPPED", "SIGN_BIT", "sign_tests",
           "sign_masks", "sign_table", "sign_test_example", "ceilings", "variant_models", "strided_table",
           "strided_text"]
