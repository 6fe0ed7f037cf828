"""Lesson 14's helpers (3xTF32 on Hopper's ``wgmma``): the warpgroup's operands drawn from the descriptor formula of
:mod:`gemm_steps.toolkit.warpgroup_ops` and the step's own staging; the two hazards the kernel respects, from the
experiment that found them (``experiments/wgmma_swapped.py``); the prediction, speed and accuracy table, figure and
verdict against our target, read from the shipped benchmark — each saying so, and not failing, where the
benchmark has no step 14 yet.

Every number printed comes from a results file or is computed here; the target is lesson 12's constant.
"""

from __future__ import annotations

import re

import numpy as np

from gemm_steps.harness import results_files

from .display import MarkdownTable
from .lesson_12 import TARGET_3XTF32_VS_SGEMM, load_run, rec
from .timings import size_label

#: The experiment runs (experiments/results/): the first has every build, the second repeats some of them.
SWAPPED_RUNS = ("wgmma-swapped-nvidia-h100.json", "wgmma-swapped-repeat-nvidia-h100.json")
#: Nsight Compute on the experiment's 256×128 TF32 build (serial) at 8192³.
SWAPPED_PROFILE = "ncu-wgmma-swapped-nvidia-h100.txt"
#: The experiment's builds the lesson reads: the one step 14 is, the same without the flush, the TF32 build with
#: wait_group 1 (next fragments loaded while the wgmma run) and with wait_group 0 first, and the first wgmma GEMM
#: (B transposed on the way in).
STEP_BUILD = "wgmma swapped 3xTF32 128x128, flush big"
NO_FLUSH_BUILD = "wgmma swapped 3xTF32 128x128"
OVERLAPPED_BUILD = "wgmma swapped 256x128"
SERIAL_BUILD = "wgmma swapped 256x128, serial"
TRANSPOSING_BUILD = "wgmma_tf32 128x256 (wgmma_gemm.py), pipelined"
TF32_BUILDS = ("wgmma swapped 256x128, serial", "wgmma swapped 128x128, serial")

#: The rows of the speed table and figure: (record name, label, colour, marker).
SPEED_ROWS = [("three_tf32", "step 13, 3xTF32 (mma.sync)", "tab:green", "D-"),
              ("warpgroup_mma", "step 14, 3xTF32 (wgmma)", "tab:cyan", "*-"),
              ("cublas", "cuBLAS SGEMM (FP32 units)", "tab:red", "o-"),
              ("cublas_tf32", "cuBLAS TF32", "tab:purple", "s-")]
STEP = "warpgroup_mma"


def find(run: dict, name: str, size: tuple) -> dict | None:
    """The successful record called ``name`` (a step, a baseline or an experiment's build) at ``size`` in ``run``."""
    return next((r for r in run["records"] if r["step"] == name and (r["M"], r["N"], r["K"]) == tuple(size)
                 and "error" not in r and r.get("tflops")), None)


# -- the picture: one wgmma's operands ---------------------------------------------------------------------------------
def descriptor_byte(n, k, lbo: int, sbo: int, start: int = 0):
    """Where ``wgmma`` reads element (n, k) of its shared-memory operand, in bytes: the no-swizzle, K-major layout of
    core matrices (8 rows × 16 bytes) that toolkit/warpgroup_ops.py documents (and its simulator twin reads)."""
    return start + (n // 8) * sbo + (k // 4) * lbo + (n % 8) * 16 + (k % 4) * 4


def staged_byte(row, k, block_k: int):
    """Where step 14's copy puts element (row, k) of A's k-tile in its stage, in bytes: the kernel's index
    ``row // 8 * (BLOCK_K * 8) + kc * 32 + row % 8 * 4 + q`` (floats) with kc = k // 4, q = k % 4."""
    return 4 * ((row // 8) * (block_k * 8) + (k // 4) * 32 + (row % 8) * 4 + k % 4)


def fragment_holder(row: int, k: int) -> tuple[int, int, int]:
    """(warp, lane, register) of the warpgroup that holds element (row, k) of ``wgmma``'s 64×8 register operand:
    warp row // 16, then lesson 12's m16n8k8 A layout (a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 =
    A[g+8][t+4])."""
    warp, r = divmod(row, 16)
    return warp, (r % 8) * 4 + k % 4, r // 8 + 2 * (k // 4)


def warpgroup_figure(lbo: int, sbo: int, shown_n: int = 16, n: int = 128):
    """Left: one ``wgmma`` of step 14, Cᵀ (64 × N) += Bᵀ (64 × 8, registers, one band per warp) · Aᵀ (8 × N, shared
    memory). Right: the first ``shown_n`` columns of Aᵀ as the tensor core finds them, each element labelled with its
    byte offset from :func:`descriptor_byte`, coloured by core matrix."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    warp_colours = plt.get_cmap("tab10").colors[:4]
    fig = Figure(figsize=(15, 6.2), layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.25]})
    # Left: the three tiles to scale (A 8 wide, B N wide, D N wide; 64 rows).
    x_a, x_b = 0, 18
    for w in range(4):
        for x0, width in ((x_a, 8), (x_b, n)):
            left.add_patch(plt.Rectangle((x0, 16 * w), width, 16, facecolor=warp_colours[w], alpha=0.45,
                                         edgecolor="k", lw=0.6))
        left.text(x_a + 4, 16 * w + 8, f"warp {w}\nrows\n{16 * w}–{16 * w + 15}", ha="center", va="center", fontsize=8)
        left.text(x_b + n / 2, 16 * w + 8, f"warp {w}: rows {16 * w}–{16 * w + 15}, {n // 2} accumulators per thread",
                  ha="center", va="center", fontsize=8)
    left.add_patch(plt.Rectangle((x_b, -22), n, 8, facecolor="0.85", edgecolor="k", lw=0.6))
    for c in range(0, n, 8):
        left.plot([x_b + c, x_b + c], [-22, -14], color="0.6", lw=0.4)
    left.text(x_b + n / 2, -18, f"Aᵀ: 8 (k) × N = {n}, read from shared memory through a descriptor", ha="center",
              va="center", fontsize=8)
    left.text(x_a + 4, -9, "Bᵀ: 64 × 8 (k)\nfrom registers:\neach warp's 16 × 8\nin lesson 12's\nA layout",
              ha="center", va="center", fontsize=7.5)
    left.text(x_b + n / 2, -6, f"Cᵀ: 64 × N = {n} (accumulators in registers)", ha="center", va="center", fontsize=8)
    left.set(xlim=(-2, x_b + n + 2), ylim=(66, -25), aspect="auto")
    left.axis("off")
    left.set_title(f"One wgmma.m64n{n}k8 of a warpgroup (4 warps, 128 threads): Cᵀ += Bᵀ · Aᵀ\n(Bᵀ's row r times "
                   "Aᵀ's column n gives Cᵀ[r][n], as in the drawing's rows and columns)", fontsize=10)
    # Right: the byte map.
    cell_colours = plt.get_cmap("Pastel1").colors
    for k in range(8):
        for col in range(shown_n):
            core = (col // 8) * 2 + k // 4
            right.add_patch(plt.Rectangle((col, k), 1, 1, facecolor=cell_colours[core % len(cell_colours)],
                                          edgecolor="white"))
            right.text(col + 0.5, k + 0.5, str(descriptor_byte(col, k, lbo, sbo)), ha="center", va="center",
                       fontsize=6.5)
    for col in range(0, shown_n, 8):
        for k in (0, 4):
            right.add_patch(plt.Rectangle((col, k), 8, 4, fill=False, edgecolor="k", lw=1.2))
    right.text(shown_n + 0.3, 2, f"core matrix\n(n // 8, k // 4):\n8 columns × 16 bytes,\n128 contiguous bytes",
               va="center", fontsize=8)
    right.text(shown_n + 0.3, 6, f"next in k:\n+ LBO = {lbo} bytes\n\nnext 8 columns:\n+ SBO = {sbo} bytes",
               va="center", fontsize=8)
    right.set(xlim=(0, shown_n + 5.5), ylim=(8, 0), aspect="equal")
    right.set_xticks(np.arange(shown_n) + 0.5, range(shown_n), fontsize=7)
    right.set_yticks(np.arange(8) + 0.5, range(8), fontsize=8)
    right.set_xlabel("n: a row of A (a column of Aᵀ)", fontsize=9)
    right.set_ylabel("k", fontsize=9)
    right.set_title(f"Aᵀ in shared memory, first {shown_n} of {n} columns: byte of (n, k) = start + (n // 8)·SBO + "
                    "(k // 4)·LBO + (n % 8)·16 + (k % 4)·4", fontsize=9)
    return fig


def gpu_layout(step, results: dict | None = None) -> dict:
    """The tile sizes and shared-memory layout (LBO, SBO, …) of the step as it runs on the GPU: the configuration of
    its record at the largest size in ``results`` if there is one, else its search space's first (on the simulator
    the step itself runs a smaller configuration)."""
    from dataclasses import fields

    module = step.module
    config = module.SEARCH_SPACE[0]
    if results is not None:
        records = [r for r in results["records"] if r["step"] == step.name and r.get("config")]
        if records:
            found = max(records, key=lambda r: r["M"] * r["N"] * r["K"])["config"]
            config = type(config)(**{f.name: found[f.name] for f in fields(config) if f.name in found})
    return {**{f.name: getattr(config, f.name) for f in fields(config)}, "THREADS": config.THREADS,
            **module.layout(config)}


def layout_check(config: dict) -> str:
    """Does the step stage A where the descriptors say the tensor core reads it? For every element of a k-tile,
    :func:`staged_byte` against :func:`descriptor_byte` with the k-step's start (s · 2 · LBO), from the step's own
    constants; and every element of the register operand held by exactly one (warp, lane, register)."""
    rows, block_k, lbo, sbo = config["BLOCK_M"], config["BLOCK_K"], config["LBO"], config["SBO"]
    row, k = np.meshgrid(np.arange(rows), np.arange(block_k), indexing="ij")
    staged = staged_byte(row, k, block_k)
    read = descriptor_byte(row, k % 8, lbo, sbo, start=(k // 8) * 2 * lbo)
    same = int((staged == read).sum())
    holders = {fragment_holder(r, c) for r in range(64) for c in range(8)}
    return (f"With the step's constants ({rows} rows × BLOCK_K = {block_k}, LBO = {lbo}, SBO = {sbo} bytes): **{same} "
            f"of {staged.size}** elements of A's k-tile lie where the k-steps' descriptors point the tensor core, "
            f"and the 512 elements of Bᵀ's 64 × 8 are held by **{len(holders)}** different (warp, lane, register). "
            "(This checks the step's staging against our descriptor formula, which `experiments/wgmma_probe.py` "
            "matched to the H100; the hardware itself is checked by the GPU tests and the timing run below.)")


def why_swap_text(run: dict | None) -> str:
    """The first wgmma GEMM (B transposed on the way in) against step 12, at the largest size of ``run``."""
    if run is None:
        return "The experiment's results file is not shipped; nothing to compare."
    big = max((r["M"], r["N"], r["K"]) for r in run["records"])
    first, step12 = find(run, TRANSPOSING_BUILD, big), find(run, "tensor_cores", big)
    return (f"The first wgmma GEMM (`experiments/wgmma_gemm.py`) copied B into K-major order 4 bytes at a time: in "
            f"the same run at {size_label(big)} it ran at **{first['tflops']:.0f} TFLOPS in TF32, below step 12's "
            f"{step12['tflops']:.0f}** (`{results_files.display_path(run['path'])}`). Swapping the operands removes "
            "the transposition: Aᵀ is K-major as A lies in memory, and Bᵀ goes through registers, where the layout is "
            "ours to choose.")


# -- the two hazards -----------------------------------------------------------------------------------------------------
def slope(ks, errors) -> float:
    """The exponent p of error ∝ K^p, fitted on log-log axes."""
    return float(np.polyfit(np.log(ks), np.log(errors), 1)[0])


def flush_points(run: dict) -> dict:
    """Sampled error against K (squares) of the build without the flush, the build with it (step 14's) and cuBLAS
    SGEMM, from one experiment run: {name: [(K, error), …]}."""
    out = {}
    for name in (NO_FLUSH_BUILD, STEP_BUILD, "cublas"):
        out[name] = sorted((r["K"], r["sampled_rel_error_fp64"]) for r in run["records"]
                           if r["step"] == name and r["M"] == r["N"] == r["K"] and "sampled_rel_error_fp64" in r)
    return out


def flush_figure(run: dict):
    """The error of the no-flush build growing with K, against step 14's build and cuBLAS SGEMM (same run)."""
    from matplotlib.figure import Figure

    points = flush_points(run)
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    labels = {NO_FLUSH_BUILD: ("running sum in the wgmma accumulator over all of K", "tab:orange", "s-"),
              STEP_BUILD: ("big·big flushed per k-tile into rounded float32 adds (step 14)", "tab:cyan", "*-"),
              "cublas": ("cuBLAS SGEMM", "tab:red", "o-")}
    for name, (label, colour, style) in labels.items():
        ks, errs = zip(*points[name])
        ax.loglog(ks, errs, style, color=colour, label=label)
    ax.set_xticks(ks, [size_label(k) for k in ks])
    ax.minorticks_off()
    env = run["environment"]
    ax.set(xlabel="size (M = N = K)", ylabel="relative error (sampled elements, vs float64)",
           title=f"3xTF32 on wgmma: the truncating accumulator\n{env.get('gpu')}, {str(env.get('date'))[:10]}, "
                 f"{results_files.display_path(run['path'])}")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    return fig


def flush_text(run: dict) -> str:
    points = flush_points(run)
    ks, errs = zip(*points[NO_FLUSH_BUILD])
    step = dict(points[STEP_BUILD])
    sgemm = dict(points["cublas"])
    big = ks[-1]
    return (f"Without the flush the error grew like **K^{slope(ks, errs):.2f}** ({errs[0]:.1e} at {size_label(ks[0])}, "
            f"{errs[-1]:.1e} at {size_label(big)}: {errs[-1] / sgemm[big]:.0f}× cuBLAS SGEMM's {sgemm[big]:.1e}) — "
            f"lesson 13's truncation again. With it: {step[big]:.1e} at {size_label(big)}, "
            f"{step[big] / sgemm[big]:.2f}× SGEMM's.")


def overlap_table(run: dict) -> MarkdownTable:
    """The TF32 build with ``wait_group 1`` (next k-tile's fragments loaded while this one's wgmma run) against the
    same build waiting first (``wait_group 0``): the experiment's checks (``checks``)."""
    checks = run["checks"]
    rows = [(OVERLAPPED_BUILD, "`wait_group 1`: load the next fragments while the wgmma run"),
            (SERIAL_BUILD, "`wait_group 0` first, then load (what step 14 does)")]
    lines = ["| the 256×128 TF32 build | shape | largest error vs its own TF32 inputs (float64) |", "|:--|:--|--:|"]
    for name, label in rows:
        c = checks[name]
        lines.append(f"| {label} | {size_label(tuple(c['shape']))} | {c['max_rel_error_vs_fed_inputs']:.1e} |")
    wrong, right = (checks[n]["max_rel_error_vs_fed_inputs"] for n, _ in rows)
    env = run["environment"]
    return MarkdownTable("\n".join(lines) + f"\n\nThe overlapped build is wrong: an error of {wrong:.2f}, where "
                         f"the serial one's {right:.1e} is float32 rounding. Nothing stopped the next `LDS` from "
                         "writing the registers an in-flight `HGMMA` still read (the experiment's SASS). "
                         f"*{env.get('gpu')}, {str(env.get('date'))[:10]}, "
                         f"`{results_files.display_path(run['path'])}` (`checks`).*")


# -- prediction, speed, verdict ----------------------------------------------------------------------------------------
def has_step(results: dict | None) -> bool:
    return bool(results) and any(r["step"] == STEP and "error" not in r for r in results["records"])


def big_sizes(results: dict) -> list[tuple]:
    """The two largest sizes at which step 13 and cuBLAS SGEMM ran (the target's sizes, 4096³ and 8192³)."""
    found = {(r["M"], r["N"], r["K"]) for r in results["records"]}
    both = [s for s in found if rec(results, "three_tf32", s) and rec(results, "cublas", s)]
    return sorted(both, key=lambda s: s[0] * s[1] * s[2])[-2:]


def experiment_ratios(runs: list[dict]) -> dict:
    """Per size, the step's build over cuBLAS SGEMM (same run) and over step 13 (same run), in every run given:
    {size: {"sgemm": [...], "step13": [...]}}."""
    out = {}
    for run in runs:
        for r in run["records"]:
            if r["step"] != STEP_BUILD:
                continue
            size = (r["M"], r["N"], r["K"])
            step13 = find(run, "three_tf32", size)
            entry = out.setdefault(size, {"sgemm": [], "step13": []})
            entry["sgemm"].append(r["pct_of_cublas"] / 100)
            if step13:
                entry["step13"].append(r["tflops"] / step13["tflops"])
    return out


def predicted(results: dict, runs: list[dict]) -> dict:
    """Per target size: the experiment's ratios to SGEMM (low, high) and the TFLOPS they give at this benchmark's
    cuBLAS SGEMM."""
    ratios = experiment_ratios(runs)
    out = {}
    for size in big_sizes(results):
        if size not in ratios:
            continue
        low, high = min(ratios[size]["sgemm"]), max(ratios[size]["sgemm"])
        sgemm = rec(results, "cublas", size)["tflops"]
        out[size] = {"low": low, "high": high, "tflops": (low * sgemm, high * sgemm), "sgemm": sgemm,
                     "step13": ratios[size]["step13"]}
    return out


def prediction(results: dict, runs: list[dict], n: int = 128) -> str:
    """The prediction from the experiment's runs of the same kernel; ``n``: the wgmma's N (the tile's rows)."""
    p = predicted(results, runs)
    if not p:
        return "The experiment has no run at the benchmark's large sizes: no prediction."
    parts = [f"at {size_label(s)} **{q['low']:.2f}–{q['high']:.2f}× cuBLAS SGEMM**, {q['tflops'][0]:.1f}–"
             f"{q['tflops'][1]:.1f} TFLOPS against this benchmark's SGEMM ({q['sgemm']:.1f}), "
             f"{min(q['step13']):.2f}–{max(q['step13']):.2f}× step 13" for s, q in p.items()]
    met = all(q["low"] >= TARGET_3XTF32_VS_SGEMM for q in p.values())
    return ("**Prediction.** Step 14 is the experiment's fastest 3xTF32 build (128×128 tiles, big·big flushed per "
            f"k-tile) made a step: the same kernel, plus a guarded twin for partial tiles, which squares of these sizes "
            f"never run. So it should run as it did in the experiment's {len(runs)} runs (each against cuBLAS in the "
            "same run): " + "; ".join(parts) + ". That is "
            + ("above" if met else "not safely above") + f" our target of {TARGET_3XTF32_VS_SGEMM}× at both sizes. "
            "Why faster than step 13, when it does the same three products? Our reading, not measured here: a wgmma "
            f"is {64 * n * 8 // (16 * 8 * 8)} mma.sync's worth of work per instruction (64·{n}·8 multiply-adds), so "
            "far fewer instructions feed the tensor cores, and the previous k-tile's products run while the next "
            "k-tile's copies are issued and A is split. The occupancy is the same as step 13's: 8 warps per SM.")


def speed_table(results: dict) -> MarkdownTable:
    """TFLOPS (× cuBLAS SGEMM, same run) of steps 13 and 14 and both cuBLAS at every size step 13 ran, and the
    sampled errors at the two largest."""
    found = {(r["M"], r["N"], r["K"]) for r in results["records"]}
    size_list = sorted((s for s in found if rec(results, "three_tf32", s) and rec(results, "cublas", s)),
                       key=lambda s: s[0] * s[1] * s[2])
    big = size_list[-2:]
    lines = ["| kernel | " + " | ".join(size_label(s) for s in size_list) + " | "
             + " | ".join(f"error at {size_label(s)}" for s in big) + " |",
             "|:--|" + "--:|" * (len(size_list) + len(big))]
    for name, label, _, _ in SPEED_ROWS:
        cells = []
        for s in size_list:
            r = rec(results, name, s)
            cells.append("—" if r is None else f"{r['tflops']:.1f} ({r['pct_of_cublas'] / 100:.2f}×)")
        for s in big:
            r = rec(results, name, s)
            cells.append("—" if r is None or "sampled_rel_error_fp64" not in r else f"{r['sampled_rel_error_fp64']:.1e}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    env = results["environment"]
    text = ("TFLOPS (× cuBLAS SGEMM in the same run), and the relative error of 512 sampled elements against float64:"
            "\n\n" + "\n".join(lines) + f"\n\n*{env.get('gpu')}, {str(env.get('date'))[:10]}, "
            f"`{results_files.display_path(results['path'])}`.*")
    if not has_step(results):
        text += ("\n\n**Step 14 is not in this results file yet** (it was measured before the step existed): its row "
                 "shows —, and the verdict below has only the experiment's numbers.")
    return MarkdownTable(text)


def speed_figure(results: dict):
    """Left: TFLOPS against size of the rows of :data:`SPEED_ROWS`, with our target (1.25× SGEMM). Right: their
    sampled errors."""
    from matplotlib.figure import Figure

    from ..harness.environment import short_label

    found = {(r["M"], r["N"], r["K"]) for r in results["records"]}
    size_list = sorted((s for s in found if rec(results, "three_tf32", s) and rec(results, "cublas", s)),
                       key=lambda s: s[0] * s[1] * s[2])
    x = np.arange(len(size_list))
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    speed, error = fig.subplots(1, 2)
    for name, label, colour, style in SPEED_ROWS:
        got = [rec(results, name, s) or {} for s in size_list]
        if not any(got):
            label += " (not in this file)"
        speed.plot(x, [g.get("tflops", np.nan) for g in got], style, color=colour, label=label)
        error.plot(x, [g.get("sampled_rel_error_fp64", np.nan) for g in got], style, color=colour, label=label)
    sgemm = np.array([rec(results, "cublas", s)["tflops"] for s in size_list])
    speed.plot(x, TARGET_3XTF32_VS_SGEMM * sgemm, color="tab:olive", lw=1.5, ls="--",
               label=f"our target: {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM")
    for ax in (speed, error):
        ax.set_yscale("log")
        ax.set_xticks(x, [size_label(s) for s in size_list])
        ax.set_xlabel("size")
    speed.set(ylabel="TFLOPS (log scale)", title="Speed")
    error.set(ylabel="relative error (sampled, vs float64)", title="Accuracy: the target asks ≤ cuBLAS SGEMM's")
    speed.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"3xTF32 on mma.sync (step 13) and on wgmma (step 14) against cuBLAS\n"
                 f"{short_label(results['environment'])}", fontsize=9)
    return fig


def target_check(results: dict, step: str = STEP) -> dict | None:
    """``step`` against our 3xTF32 target at the two largest sizes: {size: (× SGEMM, error, SGEMM's error)} and
    ``met`` (≥ the target in speed and ≤ SGEMM in error at both); None if the step is missing at either."""
    out = {}
    for size in big_sizes(results):
        r, sgemm = rec(results, step, size), rec(results, "cublas", size)
        if r is None or "sampled_rel_error_fp64" not in r:
            return None
        out[size] = (r["pct_of_cublas"] / 100, r["sampled_rel_error_fp64"], sgemm["sampled_rel_error_fp64"])
    if not out:
        return None
    met = all(ratio >= TARGET_3XTF32_VS_SGEMM and err <= err_sgemm for ratio, err, err_sgemm in out.values())
    return {"sizes": out, "met": met}


def verdict(results: dict, runs: list[dict]) -> str:
    """Step 14 against the prediction and our target (≥ 1.25× cuBLAS SGEMM at the two largest sizes, error ≤
    SGEMM's), or, without step 14 in the file, what the experiment measured."""
    p = predicted(results, runs)
    check = target_check(results)
    if check is None:
        parts = [f"{size_label(s)}: {q['low']:.2f}–{q['high']:.2f}× cuBLAS SGEMM" for s, q in p.items()]
        return ("**No verdict from this benchmark: it has no step 14 yet.** What the same kernel measured in the "
                "experiment (`experiments/wgmma_swapped.py`, same runs as cuBLAS): " + "; ".join(parts)
                + f"; our target is {TARGET_3XTF32_VS_SGEMM}×. Rebuild this notebook once a benchmark with step 14 "
                "is shipped.")
    parts = []
    for size, (ratio, err, err_sgemm) in check["sizes"].items():
        t14, t13 = rec(results, STEP, size), rec(results, "three_tf32", size)
        q = p.get(size)
        where = ""
        if q:
            # Within 3 % of the predicted range counts as "as predicted": the same kernel moves that much between
            # processes (docs/measurement.md), and two runs give no better noise estimate.
            inside = q["low"] * 0.97 <= ratio <= q["high"] * 1.03
            where = (" (as predicted)" if inside else
                     f" ({'below' if ratio < q['low'] else 'above'} the predicted {q['low']:.2f}–{q['high']:.2f}× by "
                     f"more than run-to-run noise, which we have not explained)")
        parts.append(f"at {size_label(size)} **{t14['tflops']:.1f} TFLOPS, {ratio:.2f}× cuBLAS SGEMM**{where}, "
                     f"{t14['tflops'] / t13['tflops']:.2f}× step 13, at an error of {err:.1e} against SGEMM's "
                     f"{err_sgemm:.1e}")
    return ("Step 14 ran " + "; ".join(parts) + ". "
            + (f"**Our 3xTF32 target — ≥ {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM at both sizes, at an error no larger "
               "than SGEMM's — is met.**" if check["met"] else
               f"**Our 3xTF32 target — ≥ {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM at both sizes, at an error no larger "
               "than SGEMM's — is not met.**"))


# -- what is left -------------------------------------------------------------------------------------------------------
_METRIC = re.compile(r"^\s{4}(\S.*?\S)\s{2,}(\S+)?\s+([\d,]+(?:\.\d+)?)\s*$")


def profile_metric(text: str, name: str) -> float | None:
    """The first value of metric ``name`` in an Nsight Compute text report."""
    for line in text.splitlines():
        match = _METRIC.match(line)
        if match and match.group(1) == name:
            return float(match.group(3).replace(",", ""))
    return None


def what_is_left(run: dict | None) -> str:
    """The TF32 builds of the same kernel against step 12 (same run), and the L2's share of the profile."""
    if run is None:
        return "The experiment's results file is not shipped; see docs/tensor_cores.md."
    big = max((r["M"], r["N"], r["K"]) for r in run["records"])
    tf32 = [find(run, name, big)["tflops"] for name in TF32_BUILDS if find(run, name, big)]
    step12 = find(run, "tensor_cores", big)["tflops"]
    path = results_files.find(SWAPPED_PROFILE)
    l2 = profile_metric(path.read_text(), "L2 Cache Throughput") if path else None
    text = (f"In TF32 alone — the same design with one product per k-step — the experiment's builds were *slower* "
            f"than step 12: {min(tf32):.0f}–{max(tf32):.0f} TFLOPS at "
            f"{size_label(big)} against step 12's {step12:.0f} in the same run")
    if l2 is not None:
        text += (f", and Nsight Compute finds the L2 busy **{l2:.0f} %** of the time "
                 f"(`experiments/results/{SWAPPED_PROFILE}`)")
    three = find(run, STEP_BUILD, big)
    if three and tf32:
        text += (f". If the tensor cores were the limit, three products would run at a third of one product's speed; "
                 f"3xTF32 ran at {100 * three['tflops'] / max(tf32):.0f} % of the fastest TF32 build's, so the TF32 "
                 "build waits on something else — memory, in our reading of the L2 figure")
    return text + "."
