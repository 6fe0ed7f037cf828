"""Lesson 12's helpers (tensor cores, TF32): the fragment layout of ``mma.sync.m16n8k8`` drawn from the kernel's own
index formulas and checked on one warp; what TF32 rounding loses, measured in NumPy; the TF32 ceiling, the speed
table and the verdict from the shipped benchmark; the Nsight Compute report of both tensor-core steps; the rounding
variants (deep dive).

Every number a lesson prints comes from a results file or is computed here; our targets are the only constants
typed in (:data:`TARGET_TF32_TFLOPS`, :data:`TARGET_3XTF32_VS_SGEMM`), besides fixed facts of the hardware and the
formats (8× the FP32 units' rate, 2^-11).
"""

from __future__ import annotations

import json
import re

import numpy as np
from numba import cuda

from gemm_steps.harness import results_files
from gemm_steps.harness.verify import U_TF32, relative_error, tf32_tolerance
from gemm_steps.toolkit.tensor_core_ops import TF32_MANTISSA_BITS, mma_tf32, mma_tf32_reference, round_to_tf32

from .display import MarkdownTable
from .timings import fp32_peak_tflops, record, size_label

#: Our targets (not results): step 12 at ≥ 150 TFLOPS, step 13 at ≥ 1.25× cuBLAS SGEMM on an H100.
TARGET_TF32_TFLOPS = 150.0
TARGET_3XTF32_VS_SGEMM = 1.25
#: Hopper's tensor cores do 1,024 dense TF32 multiply-adds per SM per clock, the FP32 units 128 (8×): the datasheet
#: rate, which Hopper's ``wgmma`` instructions can approach. ``mma.sync`` gets less (:func:`mma_sync_clocks`).
TENSOR_TF32_PER_FP32 = 8
#: FP32 multiply-adds per SM per clock (4 schedulers × 32 lanes), and one HMMA.1688's multiply-adds.
FP32_FMA_PER_SM = 128
HMMA_FMAS = 16 * 8 * 8


def clocks_per_hmma() -> float:
    """Clocks a scheduler's share of the tensor pipe (a quarter of the SM's) would need for one HMMA.1688 at the
    datasheet's dense TF32 rate."""
    return HMMA_FMAS / (TENSOR_TF32_PER_FP32 * FP32_FMA_PER_SM / 4)


def mma_sync_clocks(metrics: dict) -> float:
    """Clocks the tensor pipe of one scheduler was busy per ``mma.sync`` m16n8k8 TF32 (HMMA.1688), inferred from an
    Nsight Compute profile: the pipe's active cycles (its % of the SM's active cycles) over the HMMAs each scheduler
    executed (schedulers = instructions executed / the average per scheduler). An inference from the counters, not
    a documented rate."""
    schedulers = metrics["smsp__inst_executed.sum"] / metrics["Avg. Executed Instructions Per Scheduler"]
    hmma_per_scheduler = metrics["smsp__inst_executed_pipe_tensor_op_hmma.sum"] / schedulers
    busy = metrics["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] / 100
    return busy * metrics["SM Active Cycles"] / hmma_per_scheduler


def mma_sync_ceiling_tflops(results: dict, metrics: dict) -> float:
    """The TF32 ceiling with ``mma.sync``: :func:`tf32_peak_tflops` scaled by the datasheet's clocks per HMMA over
    the profile's (:func:`mma_sync_clocks`), at the same clock."""
    return tf32_peak_tflops(results) * clocks_per_hmma() / mma_sync_clocks(metrics)


#: The shipped experiment files these lessons read (experiments/results/).
TENSOR_CORES_RUN = "tensor-cores-nvidia-h100.json"
FIRST_TRY_RUN = "tensor-cores-first-try-nvidia-h100.json"
ROUNDING_RUN = "tf32-conversion-nvidia-h100.json"
PROFILE_REPORT = "ncu-tensor-cores-nvidia-h100.txt"
#: The rows of the speed tables, in order: (record name, label).
SPEED_ROWS = [("stream_k", "step 11, stream-K (FP32 units)"), ("tensor_cores", "step 12, TF32"),
              ("three_tf32", "step 13, 3xTF32"), ("cublas", "cuBLAS SGEMM (FP32 units)"),
              ("cublas_tf32", "cuBLAS TF32")]


# -- the fragment layout ---------------------------------------------------------------------------------------------
# One lane's elements of one mma, as the kernels index them (steps 12 and 13, `group = lane // 4`, `pair = lane % 4`;
# register r of a lane's A fragment is step 13's `i * 16 + r % 2 * 8` row and `kk + r // 2 * 4` k, of C the
# epilogue's `r // 2 * 8` row and `pair * 2 + r % 2` column). tests/test_lesson_12.py checks these against the
# kernels' source and against the mma itself.
def a_element(lane: int, r: int) -> tuple[int, int]:
    """(row, k) of A (16×8) that lane ``lane`` passes as its register a_r."""
    group, pair = lane // 4, lane % 4
    return group + r % 2 * 8, pair + r // 2 * 4


def b_element(lane: int, r: int) -> tuple[int, int]:
    """(k, column) of B (8×8) that lane ``lane`` passes as its register b_r."""
    group, pair = lane // 4, lane % 4
    return pair + r * 4, group


def c_element(lane: int, r: int) -> tuple[int, int]:
    """(row, column) of C and D (16×8) that lane ``lane`` holds in its register c_r (d_r)."""
    group, pair = lane // 4, lane % 4
    return group + r // 2 * 8, 2 * pair + r % 2


LAYOUT = {"A": ((16, 8), 4, a_element), "B": ((8, 8), 2, b_element), "C": ((16, 8), 4, c_element)}


def owners(matrix: str) -> np.ndarray:
    """For every element of ``matrix`` ("A", "B" or "C"), the (lane, register) that holds it: an int array of shape
    (rows, cols, 2), -1 where no lane does (there is none: each element belongs to exactly one lane)."""
    shape, registers, element = LAYOUT[matrix]
    out = np.full(shape + (2,), -1, dtype=int)
    for lane in range(32):
        for r in range(registers):
            row, col = element(lane, r)
            assert out[row, col, 0] == -1, f"{matrix}[{row}][{col}] held twice"
            out[row, col] = lane, r
    return out


def fragment_figure():
    """A, B and C of one mma, each element labelled with the lane that holds it and the register (a0…a3, b0, b1,
    c0…c3), coloured by the lane's group (lane // 4)."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    colours = plt.get_cmap("tab10").colors
    fig = Figure(figsize=(15, 8), layout="constrained")
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [8, 8, 8]})
    titles = {"A": "A: 16 rows (m) × 8 (k)", "B": "B: 8 (k) × 8 columns (n)", "C": "C and D: 16 (m) × 8 (n)"}
    labels = {"A": ("k", "row (m)"), "B": ("column (n)", "k"), "C": ("column (n)", "row (m)")}
    for ax, name in zip(axes, "ABC"):
        held = owners(name)
        rows, cols = held.shape[:2]
        for i in range(rows):
            for j in range(cols):
                lane, r = held[i, j]
                ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colours[lane // 4], alpha=0.35 + 0.15 * (lane % 4),
                                           edgecolor="white"))
                ax.text(j + 0.5, i + 0.5, f"{lane}\n{name.lower()}{r}", ha="center", va="center", fontsize=8)
        ax.set(xlim=(0, cols), ylim=(rows, 0), aspect="equal")
        ax.set_title(titles[name], fontsize=11)
        ax.set_xticks(np.arange(cols) + 0.5, range(cols), fontsize=9)
        ax.set_yticks(np.arange(rows) + 0.5, range(rows), fontsize=9)
        ax.set_xlabel(labels[name][0], fontsize=10)
        ax.set_ylabel(labels[name][1], fontsize=10)
    fig.suptitle("One mma.sync.m16n8k8: which lane (number) holds which element in which register; colour = the "
                 "lane's group, lane // 4 (shade: pair, lane % 4)", fontsize=11)
    return fig


def index_tables():
    """The layout as arrays a kernel can read: (a_rows, a_cols) of shape (32, 4), (b_rows, b_cols) (32, 2),
    (c_rows, c_cols) (32, 4)."""
    tables = []
    for name in "ABC":
        _, registers, element = LAYOUT[name]
        cells = np.array([[element(lane, r) for r in range(registers)] for lane in range(32)], dtype=np.int32)
        tables += [np.ascontiguousarray(cells[..., 0]), np.ascontiguousarray(cells[..., 1])]
    return tables


_ONE_WARP = None


def _one_warp(a, b, c, d, ar, ac, br, bc, cr, cc):
    """One warp, one mma: lane ``lane`` passes A[ar[lane, r], ac[lane, r]] as a_r (and so on) and stores its d_r."""
    lane = cuda.threadIdx.x
    d0, d1, d2, d3 = mma_tf32(a[ar[lane, 0], ac[lane, 0]], a[ar[lane, 1], ac[lane, 1]],
                              a[ar[lane, 2], ac[lane, 2]], a[ar[lane, 3], ac[lane, 3]],
                              b[br[lane, 0], bc[lane, 0]], b[br[lane, 1], bc[lane, 1]],
                              c[cr[lane, 0], cc[lane, 0]], c[cr[lane, 1], cc[lane, 1]],
                              c[cr[lane, 2], cc[lane, 2]], c[cr[lane, 3], cc[lane, 3]])
    d[cr[lane, 0], cc[lane, 0]] = d0
    d[cr[lane, 1], cc[lane, 1]] = d1
    d[cr[lane, 2], cc[lane, 2]] = d2
    d[cr[lane, 3], cc[lane, 3]] = d3


def one_warp_product(a: np.ndarray, b: np.ndarray, c: np.ndarray, tables=None) -> np.ndarray:
    """D of one ``mma_tf32`` by one warp whose lanes pass the elements the layout above says (``tables``: another
    layout, as :func:`index_tables` returns it). On the simulator the 32 lanes are Python threads that meet in
    ``mma_tf32``'s twin; on a GPU it is one HMMA."""
    global _ONE_WARP
    if _ONE_WARP is None:
        _ONE_WARP = cuda.jit(_one_warp)
    tables = index_tables() if tables is None else tables
    d = cuda.to_device(np.full((16, 8), np.nan, dtype=np.float32))
    _ONE_WARP[1, 32](cuda.to_device(a), cuda.to_device(b), cuda.to_device(c), d, *map(cuda.to_device, tables))
    return d.copy_to_host()


def _one_warp_inputs(seed: int):
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal(shape).astype(np.float32) for shape in ((16, 8), (8, 8), (16, 8)))
    expected = mma_tf32_reference(a, b, c)
    return a, b, c, lambda d: float(np.abs(d - expected).max() / np.abs(expected).max())


def one_warp_check(seed: int = 0) -> tuple[str, float]:
    """(Markdown, largest relative difference): one warp's mma with the layout drawn above against NumPy
    (``mma_tf32_reference``: A and B rounded to TF32, products and sums in float64), on A and B already rounded to
    TF32 as the kernels round them (``to_tf32``); and with A's rows 0–7 and 8–15 swapped in the layout, which must
    be wrong. Only the layout: what happens to unrounded inputs is :func:`truncation_check`, after TF32 is
    introduced."""
    a, b, c, worst = _one_warp_inputs(seed)
    a_tf32, b_tf32 = round_to_tf32(a), round_to_tf32(b)
    right = worst(one_warp_product(a_tf32, b_tf32, c))
    tables = index_tables()
    tables[0] = (tables[0] + 8) % 16  # a lane passes row group + 8 where row group belongs, and back
    wrong = worst(one_warp_product(a_tf32, b_tf32, c, tables))
    text = (f"One warp, one `mma_tf32`, each lane passing the elements drawn above: largest difference from NumPy's "
            f"D = A·B + C on the same inputs **{right:.1e}** (relative to the largest element of D). With A's rows "
            f"0–7 and 8–15 swapped in the layout: {wrong:.2f} — a wrong layout does not go unnoticed, on the "
            "simulator either. (The inputs were rounded to TF32 first, as the kernel rounds them; the next section "
            "says what that is.)")
    return text, right


def truncation_check(seed: int = 0) -> str:
    """The warp of :func:`one_warp_check` on A and B *not* rounded to TF32 first, against the same NumPy D of
    rounded inputs: the tensor core drops their low 13 bits (truncation)."""
    a, b, c, worst = _one_warp_inputs(seed)
    truncated = worst(one_warp_product(a, b, c))
    return (f"The warp of the layout check, on A and B *not* rounded to TF32 first: {truncated:.1e} away from D of "
            f"the rounded inputs. The tensor core reads only the sign, the exponent and the top "
            f"{TF32_MANTISSA_BITS} mantissa bits of an operand: it *truncates* what it is given (the simulator's "
            "twin too). Rounding to nearest first (`to_tf32`, PTX `cvt.rna`: **r**ound to **n**earest, ties "
            "**a**way from zero) makes each input's error at most half as large.")


# -- what TF32 loses ---------------------------------------------------------------------------------------------------
def tf32_loss_table(seed: int = 0, size: int = 64, ks=(64, 1024, 4096)) -> MarkdownTable:
    """Measured in NumPy on standard-normal float32 inputs: how far rounding to TF32 moves one input, one product
    and a whole product C = A·B (sums in float64, so only TF32's rounding shows), in units of u = 2^-11 (half a
    TF32 unit in the last place), beside :func:`tf32_tolerance`."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(200_000).astype(np.float32)
    y = rng.standard_normal(200_000).astype(np.float32)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    input_err = np.abs(round_to_tf32(x).astype(np.float64) - x64) / np.abs(x64)
    product = x64 * y64
    product_err = np.abs(round_to_tf32(x).astype(np.float64) * round_to_tf32(y) - product) / np.abs(product)
    lines = [f"Standard-normal float32 inputs, u = 2^-{TF32_MANTISSA_BITS + 1} = {U_TF32:.2e} (half a TF32 unit "
             "in the last place, relative to the number):", "",
             "| what | mean | largest | tolerance used by the checks |", "|:--|--:|--:|--:|",
             f"| one input, rounded to TF32 ({len(x):,} values) | {input_err.mean():.2e} ({input_err.mean() / U_TF32:.2f} u) "
             f"| {input_err.max():.2e} ({input_err.max() / U_TF32:.2f} u) | |",
             f"| one product, both inputs rounded | {product_err.mean():.2e} ({product_err.mean() / U_TF32:.2f} u) "
             f"| {product_err.max():.2e} ({product_err.max() / U_TF32:.2f} u) | |"]
    for k in ks:
        a = rng.standard_normal((size, k)).astype(np.float32)
        b = rng.standard_normal((k, size)).astype(np.float32)
        c = round_to_tf32(a).astype(np.float64) @ round_to_tf32(b).astype(np.float64)
        err = relative_error(c, a, b)
        lines.append(f"| C = A·B, {size}×{size}×{k}, sums in float64 | {err:.2e} ({err / U_TF32:.2f} u) | | "
                     f"`tf32_tolerance({k})` = {tf32_tolerance(k):.2e} |")
    return MarkdownTable("\n".join(lines))


# -- the shipped benchmark -------------------------------------------------------------------------------------------
#: The successful record of a step name, ``cublas`` or ``cublas_tf32`` at a square size or (M, N, K); None if none.
rec = record


def sizes(results: dict, names=("stream_k", "tensor_cores", "three_tf32", "cublas")) -> list[tuple]:
    """Every size at which all of ``names`` ran, smallest first."""
    found = {(r["M"], r["N"], r["K"]) for r in results["records"]}
    return sorted((s for s in found if all(rec(results, n, s) for n in names)), key=lambda s: s[0] * s[1] * s[2])


def tf32_peak_tflops(results: dict) -> float:
    """The tensor cores' dense TF32 ceiling at the run's max SM clock: 8 × the FP32 peak estimate of the results
    (SMs × 1,024 multiply-adds × 2 FLOP × clock). NVIDIA's H100 SXM datasheet quotes ~495 TFLOPS, at a lower
    clock."""
    return TENSOR_TF32_PER_FP32 * fp32_peak_tflops(results)


def shipped_config(results: dict, name: str = "tensor_cores") -> dict:
    """The tile configuration the benchmark ran ``name`` with (from its largest record)."""
    return rec(results, name, sizes(results)[-1])["config"]


def k_step_instructions(config: dict) -> dict:
    """Per warp and per k-step of 8, in the k-loop as written: HMMAs, fragment elements loaded and rounded, and the
    instructions per HMMA that follow: one ``ldmatrix`` per A piece (its four elements), one LDS per B element, and
    a two-instruction rounding per element (ptxas drops ``cvt.rna``'s third instruction before an mma,
    docs/tensor_cores.md)."""
    mma_m, mma_n = 8 * config["THREAD_M"] // 16, 4 * config["THREAD_N"] // 8
    hmma, elements = mma_m * mma_n, 4 * mma_m + 2 * mma_n
    loads = mma_m + 2 * mma_n
    return {"warp_tile": (8 * config["THREAD_M"], 4 * config["THREAD_N"]), "hmma": hmma, "elements": elements,
            "loads": loads, "per_hmma": (hmma + loads + 2 * elements) / hmma}


def predicted(results: dict) -> dict:
    """The prediction's numbers, from step 11's timing, the ceilings and the shipped configuration (nothing of step
    12's timing): the TF32 ceiling, step 11's efficiency carried over to it, and the instruction budget."""
    big = sizes(results)[-1]
    step11 = rec(results, "stream_k", big)["tflops"]
    fp32, tf32 = fp32_peak_tflops(results), tf32_peak_tflops(results)
    count = k_step_instructions(shipped_config(results))
    return {"size": big, "step11": step11, "fp32": fp32, "tf32": tf32, "carried": step11 / fp32 * tf32,
            "low": TARGET_TF32_TFLOPS, "count": count, "budget": clocks_per_hmma()}


def prediction(results: dict) -> str:
    """The prediction, made before looking at step 12's timing: the new ceiling, step 11's efficiency carried over,
    and the instruction budget per HMMA at the datasheet rate."""
    p = predicted(results)
    count = p["count"]
    return (f"**The ceiling moves.** The FP32 units of this GPU peak at {p['fp32']:.1f} TFLOPS; its tensor cores do "
            f"{TENSOR_TF32_PER_FP32}× as many multiply-adds per clock in TF32 (the datasheet's dense TF32 rate): "
            f"**{p['tf32']:.0f} TFLOPS**. Step 11 reached {p['step11']:.1f} TFLOPS at {size_label(p['size'])}, "
            f"{p['step11'] / p['fp32']:.0%} of its ceiling; the same share of the new one would be "
            f"**{p['carried']:.0f} TFLOPS**.\n\n"
            f"**The instruction budget.** A scheduler issues at most one instruction per clock. At the datasheet rate the "
            f"tensor pipe of a scheduler (a quarter of the SM) finishes one 16×8×8 HMMA — {HMMA_FMAS:,} "
            f"multiply-adds — every {p['budget']:.0f} clocks, so it stays busy only if a warp issues at most "
            f"{p['budget']:.0f} instructions per HMMA, the HMMA included. Step 12's "
            f"{count['warp_tile'][0]}×{count['warp_tile'][1]} warp tile (the kernel section shows it) does "
            f"{count['hmma']} HMMAs per k-step of 8 and loads and rounds {count['elements']} fragment elements for "
            f"them ({count['loads']} loads — one `ldmatrix` per A piece, one load per B element — and two "
            f"instructions per rounding): **{count['per_hmma']:.1f} instructions per HMMA**, leaving "
            f"{p['budget'] - count['per_hmma']:.1f} for all the addressing, copying, barriers and loop control.\n\n"
            f"**Prediction:** between our target of {p['low']:.0f} TFLOPS ({p['low'] / p['step11']:.1f}× step 11) "
            f"and the {p['carried']:.0f} of step 11's efficiency — nearer the target, since the budget is nearly "
            "spent before the rest of the loop.")


def speed_table(results: dict, size_list=None) -> MarkdownTable:
    """TFLOPS (and % of cuBLAS SGEMM, same run) of step 11, the two tensor-core steps, cuBLAS SGEMM and cuBLAS TF32
    at every common size."""
    size_list = sizes(results) if size_list is None else size_list
    lines = ["| kernel | arithmetic | " + " | ".join(size_label(s) for s in size_list) + " |",
             "|:--|:--|" + "--:|" * len(size_list)]
    for name, label in SPEED_ROWS:
        cells = []
        for s in size_list:
            r = rec(results, name, s)
            cells.append("—" if r is None else f"{r['tflops']:.1f} ({r['pct_of_cublas']:.0f} %)")
        found = next((r for r in (rec(results, name, s) for s in size_list) if r), {})
        arithmetic = found.get("arithmetic", "tf32" if name == "cublas_tf32" else "fp32").upper().replace("X", "x")
        lines.append(f"| {label} | {arithmetic} | " + " | ".join(cells) + " |")
    env = results["environment"]
    return MarkdownTable("TFLOPS (% of cuBLAS SGEMM in the same run):\n\n" + "\n".join(lines)
                         + f"\n\n*{env.get('gpu')}, {str(env.get('date'))[:10]}, "
                         f"`{results_files.display_path(results['path'])}`.*")


def speed_figure(results: dict):
    """TFLOPS against size for the rows of :func:`speed_table`, with the TF32 ceiling (and what ``mma.sync`` reaches
    of it, from the shipped profile) and our targets."""
    from matplotlib.figure import Figure

    from ..harness.environment import short_label

    size_list = sizes(results)
    x = np.arange(len(size_list))
    fig = Figure(figsize=(9, 5.2), layout="constrained")
    ax = fig.subplots()
    styles = {"stream_k": ("tab:blue", "o-"), "tensor_cores": ("tab:orange", "s-"), "three_tf32": ("tab:green", "D-"),
              "cublas": ("tab:red", "o-"), "cublas_tf32": ("tab:purple", "s-")}
    for name, label in SPEED_ROWS:
        colour, style = styles[name]
        ax.plot(x, [(rec(results, name, s) or {}).get("tflops", np.nan) for s in size_list], style, color=colour,
                label=label)
    sgemm = np.array([rec(results, "cublas", s)["tflops"] for s in size_list])
    ax.plot(x, TARGET_3XTF32_VS_SGEMM * sgemm, color="tab:olive", lw=1.5, ls="--",
            label=f"our target for step 13: {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM")
    ax.axhline(TARGET_TF32_TFLOPS, color="tab:brown", lw=1.5, ls="--",
               label=f"our target for step 12: {TARGET_TF32_TFLOPS:.0f} TFLOPS")
    peak = tf32_peak_tflops(results)
    profiles = tensor_core_profiles(results)
    reach = (f" (mma.sync reaches ≈ {mma_sync_ceiling_tflops(results, profiles['tensor_cores']):.0f})"
             if profiles and "tensor_cores" in profiles else "")
    ax.axhline(peak, color="k", lw=1, ls="-.", label=f"TF32 ceiling, {peak:.0f} TFLOPS{reach}")
    ax.set_yscale("log")
    ax.set_xticks(x, [size_label(s) for s in size_list])
    ax.set(xlabel="size", ylabel="TFLOPS (log scale)",
           title=f"The tensor-core steps against step 11 and cuBLAS\n{short_label(results['environment'])}")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=9, loc="lower right")
    return fig


def verdict(results: dict) -> str:
    """Step 12 against the prediction (:func:`predicted`) and our target, at the two largest common sizes."""
    p = predicted(results)
    parts = []
    for s in sizes(results)[-2:]:
        t12, t11 = rec(results, "tensor_cores", s), rec(results, "stream_k", s)
        cublas_tf32 = rec(results, "cublas_tf32", s) or {"tflops": float("nan")}
        parts.append(f"at {size_label(s)} **{t12['tflops']:.1f} TFLOPS**: {t12['tflops'] / t11['tflops']:.2f}× step 11, "
                     f"{t12['pct_of_cublas']:.0f} % of cuBLAS SGEMM, {t12['tflops'] / cublas_tf32['tflops']:.0%} of "
                     f"cuBLAS TF32 ({cublas_tf32['tflops']:.0f} TFLOPS) and {t12['tflops'] / p['tf32']:.0%} of the TF32 "
                     "ceiling")
    best = max(rec(results, "tensor_cores", s)["tflops"] for s in sizes(results))
    met = best >= TARGET_TF32_TFLOPS
    t12 = rec(results, "tensor_cores", p["size"])["tflops"]
    inside = p["low"] <= t12 <= p["carried"]
    return ("Step 12 ran " + "; ".join(parts) + ". "
            + (f"**Our target of {TARGET_TF32_TFLOPS:.0f} TFLOPS is met.** " if met else
               f"**Our target of {TARGET_TF32_TFLOPS:.0f} TFLOPS is not met** (best: {best:.1f}). ")
            + f"The prediction was {p['low']:.0f}–{p['carried']:.0f} TFLOPS at {size_label(p['size'])}: "
            + (f"{t12:.1f} is inside it, at {t12 / p['carried']:.0%} of its top. " if inside else
               f"{t12:.1f} is {'below' if t12 < p['low'] else 'above'} it — "
               + (f"{1 - t12 / p['low']:.0%} under its bottom and {t12 / p['carried']:.0%} of its top. "
                  if t12 < p["low"] else f"{t12 / p['carried'] - 1:.0%} over its top. "))
            + "Step 11's efficiency did not carry over. The profile below shows why: `mma.sync` cannot reach the "
            "datasheet's TF32 rate at all, and step 12's warps spend most cycles waiting.")


# -- what limits it: Nsight Compute ------------------------------------------------------------------------------------
_KERNEL_HEADER = re.compile(r"^  (\w+)::\w+\[", re.M)
_ROW = re.compile(r"^\s{4}(\S.*?\S)\s{2,}(\S+(?:/\S+)?)?\s+([\d,]+(?:\.\d+)?)\s*$")


def config_label(name: str, config: dict) -> str:
    """How the experiment files name a step built with ``config``: ``tensor_cores 128x256x32 8x16/1``."""
    return (f"{name} {config['BLOCK_M']}x{config['BLOCK_N']}x{config['BLOCK_K']} "
            f"{config['THREAD_M']}x{config['THREAD_N']}/{config['MIN_BLOCKS_PER_SM']}")


def tensor_core_profiles(results: dict) -> dict | None:
    """The Nsight Compute report of one 4096³ launch of each tensor-core step (``PROFILE_REPORT``), as
    {step: {metric: value}}, or None if it is not shipped. ``Registers Per Thread`` comes from the report's launch
    statistics; a report without them gets it from the tensor-core experiment (``TENSOR_CORES_RUN``'s
    ``registers``: ptxas on the GPU), for the configuration the benchmark ``results`` ran."""
    path = results_files.find(PROFILE_REPORT)
    if path is None:
        return None
    text = path.read_text()
    starts = [(m.start(), m.group(1)) for m in _KERNEL_HEADER.finditer(text)]
    out = {}
    for (start, step), (end, _) in zip(starts, starts[1:] + [(len(text), None)]):
        metrics = {}
        for line in text[start:end].splitlines():
            match = _ROW.match(line)
            if match and match.group(1) not in metrics:
                metrics[match.group(1)] = float(match.group(3).replace(",", ""))
        out[step] = metrics
    run = load_run(TENSOR_CORES_RUN)
    for step, metrics in out.items():
        if "Registers Per Thread" in metrics:  # the report's own launch statistics (re-profiled 2026-11-25)
            continue
        found = (run or {}).get("registers", {}).get(config_label(step, shipped_config(results, step)))
        metrics["Registers Per Thread"] = found["registers"] if found else float("nan")
    return out


def limits(metrics: dict) -> dict:
    """What one profile says, in the lesson's words."""
    hmma = metrics["smsp__inst_executed_pipe_tensor_op_hmma.sum"]
    return {"tensor_pipe": metrics["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"],
            "issue_busy": metrics["Issue Slots Busy"], "no_eligible": metrics["No Eligible"],
            "cycles_per_issue": metrics["Warp Cycles Per Issued Instruction"],
            "per_hmma": metrics["smsp__inst_executed.sum"] / hmma, "registers": metrics["Registers Per Thread"],
            "warps_per_sm": metrics["Theoretical Active Warps per SM"],
            "warps_per_scheduler": metrics["Active Warps Per Scheduler"],
            "occupancy": metrics["Achieved Occupancy"],
            "bank_conflicts": metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]}


def profile_table(profiles: dict) -> MarkdownTable:
    """Both steps' profiles side by side."""
    rows = [("tensor pipe active (of its peak)", "tensor_pipe", "{:.0f} %"),
            ("issue slots busy", "issue_busy", "{:.0f} %"), ("cycles with no warp ready to issue", "no_eligible",
                                                              "{:.0f} %"),
            ("clocks between two instructions of one warp", "cycles_per_issue", "{:.1f}"),
            ("instructions per HMMA (executed)", "per_hmma", "{:.1f}"), ("registers per thread", "registers", "{:.0f}"),
            ("warps per SM (of 64)", "warps_per_sm", "{:.0f}"),
            ("shared-memory bank conflicts", "bank_conflicts", "{:.0f}")]
    steps = [s for s in ("tensor_cores", "three_tf32") if s in profiles]
    found = {s: limits(profiles[s]) for s in steps}
    lines = ["| | " + " | ".join(f"step {12 if s == 'tensor_cores' else 13}, `{s}`" for s in steps) + " |",
             "|:--|" + "--:|" * len(steps)]
    lines += [f"| {label} | " + " | ".join(fmt.format(found[s][key]) for s in steps) + " |" for label, key, fmt in rows]
    return MarkdownTable("\n".join(lines) + f"\n\n*Nsight Compute, one 4096³ launch each, "
                         f"`experiments/results/{PROFILE_REPORT}` (`scripts/profile_tensor_cores.py`).*")


def pipe_rate(profiles: dict, results: dict, step: str = "tensor_cores") -> dict:
    """What the profile of ``step`` says about ``mma.sync``'s rate: clocks of tensor pipe per HMMA
    (:func:`mma_sync_clocks`), the TF32 ceiling with ``mma.sync`` at that rate, and, as a cross-check, the
    benchmark's TFLOPS of ``step`` at the profiled size (4096³) over the share of the pipe it kept busy."""
    f = limits(profiles[step])
    clocks = mma_sync_clocks(profiles[step])
    measured = rec(results, step, 4096) if results else None
    return {"clocks": clocks, "ceiling": tf32_peak_tflops(results) * clocks_per_hmma() / clocks,
            "tflops_4096": measured["tflops"] if measured else float("nan"),
            "full_pipe": measured["tflops"] / (f["tensor_pipe"] / 100) if measured else float("nan")}


def limits_text(profiles: dict, step: str = "tensor_cores", results: dict | None = None) -> str:
    """Why the step is slow, from its profile (and, with ``results``, what the profile says of ``mma.sync``'s
    rate against the benchmark)."""
    f = limits(profiles[step])
    clocks = mma_sync_clocks(profiles[step])
    label = f"step {12 if step == 'tensor_cores' else 13}"
    others = [f"step {12 if s == 'tensor_cores' else 13}'s profile gives {mma_sync_clocks(profiles[s]):.1f}"
              for s in profiles if s != step]
    text = (f"**The pipe's real rate.** In {label}'s profile the tensor pipe was busy {f['tensor_pipe']:.0f} % of "
            f"the cycles, for **{clocks:.1f} clocks per HMMA**{' (' + '; '.join(others) + ')' if others else ''} — "
            f"not the {clocks_per_hmma():.0f} of the datasheet rate. Our inference from the counters, not a "
            f"documented number: on this H100, `mma.sync` m16n8k8 TF32 occupies a scheduler's tensor pipe about "
            f"{clocks:.0f} clocks. ")
    if results:
        r = pipe_rate(profiles, results, step)
        text += (f"So with `mma.sync` the TF32 ceiling is about {clocks_per_hmma():.0f}/{clocks:.1f} of "
                 f"{tf32_peak_tflops(results):.0f}: **≈ {r['ceiling']:.0f} TFLOPS** (the benchmark's "
                 f"{r['tflops_4096']:.1f} TFLOPS at 4096³ over a {f['tensor_pipe']:.0f} % busy pipe points a little "
                 f"lower, {r['full_pipe']:.0f}: the ceilings assume the maximum clock, which the benchmark need not "
                 f"hold — not checked). cuBLAS TF32 goes above that, so it cannot be using `mma.sync`: on Hopper the "
                 "full rate takes `wgmma`. ")
    text += (f"\n\n**The budget, restated.** With about {clocks:.0f} clocks per HMMA, a warp may issue about "
             f"{clocks:.0f} instructions per HMMA and the pipe still stays busy. {label.capitalize()} executes **{f['per_hmma']:.1f}** "
             f"per HMMA: within that budget, and the issue slots are only {f['issue_busy']:.0f} % busy. So neither "
             "the pipe nor the issue logic is the limit.\n\n"
             f"**Latency.** At {f['registers']:.0f} registers per thread only one block of 8 warps fits an SM "
             f"({f['warps_per_sm']:.0f} of 64 warps, {f['warps_per_scheduler']:.0f} per scheduler), and a warp issues "
             f"only every {f['cycles_per_issue']:.1f} clocks, waiting on its own chain: load a fragment, round it, "
             f"feed the HMMA. In **{f['no_eligible']:.0f} % of the cycles no warp is ready** to issue: the kernel is "
             f"**latency-bound**. (No bank conflicts: {f['bank_conflicts']:.0f}; the padding works.)")
    return text


# -- the rounding variants (deep dive) ---------------------------------------------------------------------------------
def load_run(name: str) -> dict | None:
    """A shipped experiment file of experiments/results/ by name, with ``path`` added; None if missing."""
    path = results_files.find(name)
    if path is None:
        return None
    return {**json.loads(path.read_text()), "path": str(path)}


def rounding_table(run: dict) -> MarkdownTable:
    """The rounding variants of both steps: SASS instructions, TFLOPS and % of cuBLAS SGEMM, and the error."""
    names = list(dict.fromkeys(r["step"] for r in run["records"] if r["step"].startswith("step ")))
    size_list = sorted({r["M"] for r in run["records"]})
    lines = ["| variant | SASS instructions (HMMA) | " + " | ".join(f"{s}³ TFLOPS" for s in size_list)
             + " | error at " + " / ".join(f"{s}³" for s in size_list) + " |",
             "|:--|--:|" + "--:|" * len(size_list) + "--:|"]
    for name in names:
        by_size = {r["M"]: r for r in run["records"] if r["step"] == name}
        sass = run.get("registers", {}).get(name, {}).get("sass", {})
        lines.append(f"| {name} | {sass.get('instructions', '—')} ({sass.get('HMMA', '—')}) | "
                     + " | ".join(f"{by_size[s]['tflops']:.1f} ({by_size[s]['pct_of_cublas']:.0f} %)" for s in size_list)
                     + " | " + " / ".join(f"{by_size[s]['sampled_rel_error_fp64']:.1e}" for s in size_list) + " |")
    env = run["environment"]
    return MarkdownTable("\n".join(lines) + f"\n\n*{env.get('gpu')}, measured {str(env.get('date'))[:10]}, before "
                         "the copy-address and ldmatrix changes to step 12 of 2026-11-25 (the kernels here are "
                         "slower than the shipped ones), one run, "
                         f"`{results_files.display_path(run['path'])}`; each variant launched through Numba's "
                         "dispatcher, which costs ~10 % at 4096³ against the benchmark: compare them with each other.*")


def rounding_gap(run: dict, shipped: str = "step 13 split_tf32 (shipped)",
                 other: str = "step 13 cvt.rna (previous)") -> str:
    """How much slower ``other`` ran than ``shipped`` in the rounding run, at each size, in words."""
    by = {(r["step"], r["M"]): r["tflops"] for r in run["records"]}
    size_list = sorted({r["M"] for r in run["records"]})
    gaps = [1 - by[(other, s)] / by[(shipped, s)] for s in size_list]
    return (f"Step 13's split by two `cvt.rna` ran {min(gaps):.0%}–{max(gaps):.0%} slower than `split_tf32` in this run "
            "(" + ", ".join(f"{by[(other, s)]:.1f} against {by[(shipped, s)]:.1f} TFLOPS at {s}³" for s in size_list)
            + "), at the same accuracy.")
