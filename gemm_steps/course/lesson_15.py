"""Lesson 15's helpers (TF32 on Hopper's ``wgmma``, step 15): why one truncating accumulator is enough in TF32, the
registers the 256-row tile needs, the prediction from the experiment's swizzled TF32 build, the speed and accuracy
table and figure, and the verdict against the course's TF32 target.

Every number printed comes from a results file or is computed here. Until the course benchmark has step 15, the
timings come from the run that measured it (``experiments/results/warpgroup-tf32-nvidia-h100.json``: step 12 and
both cuBLAS in the same run), and the text says so.
"""

from __future__ import annotations

import numpy as np

from gemm_steps.harness import results_files
from gemm_steps.harness.verify import U_TF32, tf32_tolerance, tolerance

from .display import MarkdownTable
from .lesson_12 import TARGET_TF32_TFLOPS, rec
from .lesson_14 import NO_FLUSH_BUILD, SWIZZLED_TF32_BUILD, find, kernel_table_lines, speed_error_figure
from .timings import size_label

STEP = "warpgroup_tf32"
#: The run that measured step 15 (as experiments/kernels/warpgroup_tf32.py, before it became the step) beside step 12 and both cuBLAS.
STEP_RUN = "warpgroup-tf32-nvidia-h100.json"

#: The rows of the speed table and figure: (record name, label, colour, style).
SPEED_ROWS = [("tensor_cores", "step 12, TF32 (mma.sync)", "tab:blue", "s-"),
              ("warpgroup_tf32", "step 15, TF32 (wgmma)", "tab:cyan", "*-"),
              ("cublas_tf32", "cuBLAS TF32", "tab:purple", "s--"),
              ("cublas", "cuBLAS SGEMM (FP32 units)", "tab:red", "o-")]


def has_step(results: dict | None) -> bool:
    return bool(results) and any(r["step"] == STEP and "error" not in r for r in results["records"])


def squares(results: dict, names=("tensor_cores", "cublas_tf32", "cublas")) -> list[tuple]:
    """The square sizes at which all of ``names`` ran, smallest first."""
    found = {(r["M"], r["N"], r["K"]) for r in results["records"] if r["M"] == r["N"] == r["K"]}
    return sorted((s for s in found if all(rec(results, n, s) for n in names)), key=lambda s: s[0])


def shown_timings(results: dict | None, run: dict | None) -> tuple[dict | None, str]:
    """The results to show and a sentence saying which they are: the course benchmark if it has step 15, else the
    run that measured step 15 (same run as step 12 and both cuBLAS)."""
    if has_step(results):
        return results, ""
    if run is None:
        return None, "Neither the course benchmark nor the step's own run has step 15: no timings to show."
    env = run["environment"]
    return run, (f"**Step 15 is not in the course benchmark yet** (`{results_files.display_path(results['path'])}`)."
                 if results else "**No course benchmark is shipped.**") + (
        f" These timings are the run that measured it, beside step 12 and both cuBLAS in the same run: "
        f"{env.get('gpu')}, {str(env.get('date'))[:10]}, `{results_files.display_path(run['path'])}`.")


# -- why no flush ------------------------------------------------------------------------------------------------------
def error_budget(swapped_run: dict | None, k: int = 8192) -> str:
    """TF32's input error against what the truncating accumulator adds over K: the experiment's 3xTF32 build that
    kept its whole sum in the wgmma accumulator (its inputs are float32-accurate, so its error is the truncation's),
    and verify's two tolerances at ``k``."""
    text = (f"TF32 keeps 10 bits of the mantissa: each input is off by up to **2^-11 = {U_TF32:.1e}** relatively "
            f"(rounded; up to twice that truncated). verify's tolerances at K = {k}: {tolerance(k):.1e} for float32 "
            f"sums, {tf32_tolerance(k):.1e} with TF32 inputs — the inputs are "
            f"{4 * U_TF32 / tolerance(k):.0f}× the sums' share.")
    if swapped_run is None:
        return text
    points = sorted((r["K"], r["sampled_rel_error_fp64"]) for r in swapped_run["records"]
                    if r["step"] == NO_FLUSH_BUILD and r["M"] == r["N"] == r["K"] and "sampled_rel_error_fp64" in r)
    if not points:
        return text
    big, truncation = points[-1]
    step12 = find(swapped_run, "tensor_cores", (big, big, big))
    text += (f" Measured: lesson 14's 3xTF32 build with its whole sum in the truncating accumulator (inputs "
             f"float32-accurate, so its error *is* the truncation's) was off by **{truncation:.1e}** at "
             f"{size_label((big, big, big))}")
    if step12:
        text += (f", while step 12's TF32 error was {step12['sampled_rel_error_fp64']:.1e} in the same run: the "
                 f"truncation is {truncation / step12['sampled_rel_error_fp64']:.2f}× TF32's own error, and adds "
                 f"about {100 * (np.hypot(truncation, step12['sampled_rel_error_fp64']) / step12['sampled_rel_error_fp64'] - 1):.0f} % "
                 "to it if the two are independent")
    return text + f" (`{results_files.display_path(swapped_run['path'])}`). So step 15 keeps one accumulator over all of K."


# -- registers ---------------------------------------------------------------------------------------------------------
def accumulator_sets(step) -> int:
    """How many accumulator arrays the step's kernel keeps (its ``zero_accumulators(ACCUMULATORS)`` calls)."""
    return step.kernel_source().count("zero_accumulators(ACCUMULATORS)")


def registers_text(step14, step15) -> str:
    """Accumulator floats per thread of steps 14 and 15 at their GPU tiles (search space's first), from the configs."""
    rows = []
    for step in (step14, step15):
        config = step.module.SEARCH_SPACE[0]
        per_set = step.module.layout(config)["ACCUMULATORS"]
        rows.append((step, config, accumulator_sets(step), per_set))
    (s14, c14, n14, a14), (s15, c15, n15, a15) = rows
    return (f"Each thread of a warpgroup holds BLOCK_M / 2 accumulators of its wgmma (N = BLOCK_M rows of A, 64 × N "
            f"values over 128 threads). Step 14 ({c14.BLOCK_M}×{c14.BLOCK_N} tiles) keeps **{n14} sets of {a14}** "
            f"(the float32 total, the small products, one k-tile's big·big): {n14 * a14} floats per thread. Step 15 "
            f"keeps **{n15} set of {a15}** at {c15.BLOCK_M}×{c15.BLOCK_N}: {n15 * a15} floats — "
            f"{'fewer' if n15 * a15 < n14 * a14 else 'no fewer'} registers, for a tile {c15.BLOCK_M // c14.BLOCK_M}× "
            f"as tall, which reads {c15.BLOCK_M * c15.BLOCK_N / (c15.BLOCK_M + c15.BLOCK_N):.0f} multiply-adds per "
            f"float of A and B staged against {c14.BLOCK_M * c14.BLOCK_N / (c14.BLOCK_M + c14.BLOCK_N):.0f}.")


# -- prediction ----------------------------------------------------------------------------------------------------------
def big_squares(shown: dict) -> list[tuple]:
    return squares(shown)[-2:]


def predicted(shown: dict, swizzled_run: dict) -> dict:
    """Per large square of ``shown``: the swizzled TF32 build's TFLOPS in the experiment, its ratio to step 12 there,
    and that ratio applied to step 12 in ``shown``."""
    out = {}
    for size in big_squares(shown):
        build, step12 = find(swizzled_run, SWIZZLED_TF32_BUILD, size), find(swizzled_run, "tensor_cores", size)
        here = rec(shown, "tensor_cores", size)
        if build and step12 and here:
            ratio = build["tflops"] / step12["tflops"]
            out[size] = {"build": build["tflops"], "ratio": ratio, "tflops": ratio * here["tflops"],
                         "step12": here["tflops"]}
    return out


def prediction(shown: dict | None, swizzled_run: dict | None) -> str:
    if not shown or swizzled_run is None:
        return "No prediction: the experiment's run or the timings are missing."
    p = predicted(shown, swizzled_run)
    if not p:
        return "The experiment has no run at these sizes: no prediction."
    parts = [f"at {size_label(s)} **{q['ratio']:.2f}× step 12**, {q['tflops']:.0f} TFLOPS against step 12's "
             f"{q['step12']:.0f} in the timings below (the build ran {q['build']:.1f})" for s, q in p.items()]
    above = all(q["tflops"] >= TARGET_TF32_TFLOPS for q in p.values())
    return ("**Prediction.** Step 15 is the experiment's swizzled TF32 build (`" + SWIZZLED_TF32_BUILD + "`, "
            "lesson 14's table) made a step: the same fast kernel, plus an edge kernel that squares of these sizes "
            "never run. So it should keep that build's ratio to step 12 in the same run: " + "; ".join(parts)
            + " — " + ("above" if above else "not above")
            + f" the course's TF32 target of {TARGET_TF32_TFLOPS:.0f} TFLOPS at both sizes.")


# -- speed and accuracy ----------------------------------------------------------------------------------------------
def speed_table(shown: dict) -> MarkdownTable:
    lines = kernel_table_lines(shown, SPEED_ROWS, squares(shown), with_ratio=False)
    env = shown["environment"]
    return MarkdownTable("TFLOPS, and the relative error of 512 sampled elements against float64:\n\n"
                         + "\n".join(lines) + f"\n\n*{env.get('gpu')}, {str(env.get('date'))[:10]}, "
                         f"`{results_files.display_path(shown['path'])}`.*")


def speed_figure(shown: dict):
    """Left: TFLOPS against square size of :data:`SPEED_ROWS` with the TF32 target; right: their sampled errors."""
    env = shown["environment"]
    return speed_error_figure(
        shown, SPEED_ROWS, squares(shown),
        lambda ax, x: ax.axhline(TARGET_TF32_TFLOPS, color="tab:olive", lw=1.5, ls="--",
                                 label=f"the course's TF32 target: {TARGET_TF32_TFLOPS:.0f} TFLOPS"),
        "Accuracy",
        f"TF32 on mma.sync (step 12) and on wgmma (step 15) against cuBLAS\n{env.get('gpu')}, "
        f"{str(env.get('date'))[:10]}, {results_files.display_path(shown['path'])}")


def target_check(shown: dict) -> dict | None:
    """Step 15 at the two largest squares against the TF32 target: {"sizes": {size: TFLOPS}, "met": bool}; None if
    it is missing at either."""
    out = {}
    for size in big_squares(shown):
        r = rec(shown, STEP, size)
        if r is None:
            return None
        out[size] = r["tflops"]
    if not out:
        return None
    return {"sizes": out, "met": all(t >= TARGET_TF32_TFLOPS for t in out.values())}


def verdict(shown: dict, swizzled_run: dict | None) -> str:
    check = target_check(shown)
    if check is None:
        return "**No verdict: these timings have no step 15 at the two largest sizes.**"
    p = predicted(shown, swizzled_run) if swizzled_run else {}
    parts = []
    for size, tflops in check["sizes"].items():
        step12, tf32 = rec(shown, "tensor_cores", size), rec(shown, "cublas_tf32", size)
        where = ""
        if size in p:
            # within 3 % counts as "as predicted": the same kernel moves that much between processes
            q = p[size]["tflops"]
            where = (" (as predicted)" if 0.97 * q <= tflops <= 1.03 * q else
                     f" ({'above' if tflops > q else 'below'} the predicted {q:.0f} by {100 * abs(tflops / q - 1):.0f} %, more "
                     "than run-to-run noise, which we have not explained)")
        parts.append(f"at {size_label(size)} **{tflops:.1f} TFLOPS**{where}, {tflops / step12['tflops']:.2f}× step 12, "
                     f"{100 * tflops / tf32['tflops']:.0f} % of cuBLAS TF32")
    return ("Step 15 ran " + "; ".join(parts) + ". "
            + (f"**The course's TF32 target — ≥ {TARGET_TF32_TFLOPS:.0f} TFLOPS at both sizes — is met**"
               if check["met"] else
               f"**The course's TF32 target — ≥ {TARGET_TF32_TFLOPS:.0f} TFLOPS at both sizes — is not met**")
            + (", as step 12 alone did not quite do." if check["met"] and any(
                rec(shown, "tensor_cores", s)["tflops"] < TARGET_TF32_TFLOPS for s in check["sizes"]) else "."))


def truncation_check(seed: int = 0, m: int = 64, k: int = 1024) -> dict:
    """Relative error of a product whose A is truncated to TF32 and B rounded (what step 15's tensor core sees),
    against both rounded (cuBLAS TF32's inputs), in float64 sums so that only the inputs differ."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, m)).astype(np.float32)

    def truncated(x):
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)

    def rounded(x):
        bits = x.view(np.uint32).astype(np.uint64)
        return ((bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000).astype(np.uint32).view(np.float32)

    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))

    def err(x, y):
        return float(np.median(np.abs(x.astype(np.float64) @ y.astype(np.float64) - exact) / scale))

    return {"truncated": err(truncated(a), rounded(b)), "rounded": err(rounded(a), rounded(b)), "k": k}


def accuracy_text(shown: dict, check: dict | None = None) -> str:
    """Step 15's sampled error against cuBLAS TF32's and step 12's at the largest squares, and the input-only
    comparison of :func:`truncation_check`."""
    check = check or truncation_check()
    parts = []
    for size in big_squares(shown):
        r15, r12, tf32 = (rec(shown, n, size) for n in (STEP, "tensor_cores", "cublas_tf32"))
        if r15 is None:
            continue
        parts.append(f"at {size_label(size)} {r15['sampled_rel_error_fp64']:.1e} against cuBLAS TF32's "
                     f"{tf32['sampled_rel_error_fp64']:.1e} ({r15['sampled_rel_error_fp64'] / tf32['sampled_rel_error_fp64']:.2f}×)"
                     f" and step 12's {r12['sampled_rel_error_fp64']:.1e}")
    text = ("Step 15's error: " + "; ".join(parts) + "." if parts else "These timings have no error of step 15.")
    return text + (f" Why larger: the tensor core *truncates* A as it reads it from shared memory, where step 12 and "
                   f"cuBLAS round. On the CPU, the same product at K = {check['k']} with float64 sums, so that only "
                   f"the inputs differ (error of each element over Σ|a·b|, the median): A truncated, B rounded gives "
                   f"{check['truncated']:.1e}, both "
                   f"rounded {check['rounded']:.1e} — {check['truncated'] / check['rounded']:.2f}×. Rounding A "
                   "would cost a pass over shared memory (or registers) per k-tile; the step does not pay it, and "
                   "stays within verify's TF32 tolerance.")


def what_is_left(shown: dict) -> str:
    check = target_check(shown)
    if check is None:
        return "Without step 15 in these timings there is nothing to compare with cuBLAS TF32."
    ratios = [rec(shown, "cublas_tf32", s)["tflops"] / t for s, t in check["sizes"].items()]
    names = " / ".join(size_label(s) for s in check["sizes"])
    return (f"cuBLAS TF32 is still **{' / '.join(f'{r:.2f}' for r in ratios)}×** faster at {names}. Its Hopper "
            "kernels copy whole tiles with the Tensor Memory Accelerator (TMA: one request per tile, not one per 16 "
            "bytes), let dedicated producer warps do the copying while the others only issue `wgmma`, and wait on "
            "mbarriers instead of block barriers. None of that is reachable from Numba without more inline PTX; "
            "docs/tensor_cores.md (\"What is left\") lists it.")
