"""Lesson 14's helpers (3xTF32 on Hopper's ``wgmma``): the warpgroup's operands drawn from the descriptor formula of
:mod:`gemm_steps.toolkit.warpgroup_ops` and checked against the step's own staging; what truncating A cost the step's
first version (NumPy); the hazards' evidence from the experiment that found them (``experiments/wgmma_swapped.py``);
the prediction, speed and accuracy, verdict values; the builds before step 14 (deep dive). Numbers, tables, figures:
the words are the lesson's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemm_steps.harness import results_files
from gemm_steps.toolkit import warpgroup_ops
from gemm_steps.toolkit.tensor_core_ops import split_tf32_parts, truncate_to_tf32

from .display import MarkdownTable, table
from .gpu_model import owners
from .profiles import prefixed_metric, report_metrics, report_text
from .targets import (TARGET_3XTF32_VS_SGEMM, TARGET_HOPPER_3XTF32_VS_SGEMM, TARGET_TF32_TFLOPS, accuracy_check, slope,
                      square_ratios, sweep_ratios, target_check, wide_ratios)
from .timings import (FLUSH_BUILD, NO_FLUSH_BUILD, OVERLAPPED_BUILD, SERIAL_BUILD, STEP14_BUILD, STEP15_BUILD,
                      TRANSPOSING_BUILD, caption, common_sizes, record, size_label, tflops_table)

# -- the shipped files (experiments/results/; the wgmma experiment's runs and builds are timings') ------------------
#: The 512×512×K accuracy sweep of the wgmma 3xTF32 builds beside step 13 and cuBLAS SGEMM.
WGMMA_ACCURACY_RUN = results_files.EXPERIMENT_WGMMA_3XTF32_ACCURACY_NVIDIA_H100
#: Steps 13 and 14 on wide-exponent inputs at 4096³ and 8192³ beside cuBLAS SGEMM.
WIDE_RUN = results_files.EXPERIMENT_THREE_TF32_WIDE_NVIDIA_H100
#: Nsight Compute on the wgmma experiment's builds at 8192³: the TF32 256×128 build before the swizzle (its L2
#: requests by source, in lines prefixed with the build's name; and the plain report), and after it.
REQUESTS_PROFILE = results_files.NCU_L2_REQUESTS_BY_SOURCE_NVIDIA_H100_TXT
SWAPPED_PROFILE = results_files.NCU_WGMMA_SWAPPED_NVIDIA_H100_TXT
SWIZZLED_PROFILE = results_files.NCU_WGMMA_SWAPPED_SWIZZLED_NVIDIA_H100_TXT

STEP = "warpgroup_mma"
#: The rows of the speed table and figure: (record name, label, colour, marker).
SPEED_ROWS = [("three_tf32", "step 13, 3xTF32 (mma.sync)", "tab:green", "D-"),
              ("warpgroup_mma", "step 14, 3xTF32 (wgmma)", "tab:cyan", "*-"),
              ("cublas", "cuBLAS SGEMM (FP32 units)", "tab:red", "o-"),
              ("cublas_tf32", "cuBLAS TF32", "tab:purple", "s-")]


# -- the picture: one wgmma's operands, and A's tile in the 128-byte swizzle layout -------------------------------------
def _plain(function):
    """A toolkit device function as plain Python (``py_func`` on the GPU backend and on the simulator)."""
    return getattr(function, "py_func", function)


#: The step's copy of A: chunk c (16 bytes, 4 k) of row r of a k-tile goes to this float offset in its stage.
swizzled_offset = _plain(warpgroup_ops.swizzled_offset)
#: The descriptor the step gives wgmma for a swizzled tile at a shared byte address.
swizzled_descriptor = _plain(warpgroup_ops.swizzled_descriptor)


def read_byte(n, k, descriptor: int):
    """Where ``wgmma`` reads element (n, k) (k < 8) of its shared-memory operand through a 128-byte-swizzle
    ``descriptor``, in bytes: the simulator twin's decoding (``warpgroup_ops.operand_byte``) — start and stride
    (SBO) from the descriptor's bits, row n's 128-byte line, then the hardware's permutation of 16-byte chunks,
    physical = linear ^ (((linear >> 7) & 7) << 4) — refusing any other layout."""
    if (int(descriptor) >> 62) & 3 != 1:
        raise ValueError("not a 128-byte-swizzle descriptor (layout type 1 in bits 62–63)")
    return warpgroup_ops.operand_byte(n, k, descriptor)


def staged_byte(row, k, offset=None):
    """Where step 14's copy puts element (row, k) of A's k-tile in its stage, in bytes: the kernel's
    ``swizzled_offset(row, kc)`` (floats) for the chunk kc = k // 4, plus k % 4. ``offset``: another copy formula
    (row, kc) → floats, to test the check itself."""
    offset = offset or swizzled_offset
    return 4 * (offset(row, k // 4) + k % 4)


def fragment_holder(row: int, k: int) -> tuple[int, int, int]:
    """(warp, lane, register) of the warpgroup that holds element (row, k) of ``wgmma``'s 64×8 register operand:
    warp row // 16, then lesson 12's m16n8k8 A layout (:func:`~.gpu_model.owners`)."""
    lane, register = owners("A")[row % 16, k]
    return row // 16, int(lane), int(register)


def warpgroup_figure(n: int = 128, rows_shown: int = 16, k_step: int = 1, block_k: int = 32):
    """Left: one ``wgmma`` of step 14, Cᵀ (64 × N) += Bᵀ (64 × 8, registers, one band per warp) · Aᵀ (8 × N, shared
    memory). Right: the first ``rows_shown`` rows of A's staged k-tile as 128-byte lines of eight 16-byte slots,
    each labelled with the k range the step's copy put there (:func:`staged_byte`), and outlined where k-step
    ``k_step``'s descriptor (start + 32·k_step bytes) makes the tensor core read (:func:`read_byte`)."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    warp_colours = plt.get_cmap("tab10").colors[:4]
    fig = Figure(figsize=(15, 6.4), layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2]})
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
    # Right: A's staged rows, slot by slot, from the step's copy formula.
    slots = block_k // 4
    chunk_colours = plt.get_cmap("tab20").colors
    for row in range(rows_shown):
        for kc in range(slots):
            line, slot = divmod(int(staged_byte(row, 4 * kc)) // 16, 8)
            right.add_patch(plt.Rectangle((slot, line), 1, 1, facecolor=chunk_colours[2 * (kc // 2) + kc % 2],
                                          alpha=0.55, edgecolor="white"))
            right.text(slot + 0.5, line + 0.5, f"k {4 * kc}–{4 * kc + 3}", ha="center", va="center", fontsize=6.5)
    descriptor = swizzled_descriptor(32 * k_step)
    for row in range(rows_shown):
        for k in range(0, 8, 4):
            line, slot = divmod(int(read_byte(row, k, descriptor)) // 16, 8)
            right.add_patch(plt.Rectangle((slot, line), 1, 1, fill=False, edgecolor="k", lw=1.6))
    for group in range(8, rows_shown, 8):
        right.axhline(group, color="tab:red", lw=1.2)
    right.text(slots + 0.2, 4, "row r: one 128-byte\nline, bytes 128r …;\nchunk c (k 4c … 4c+3)\nat slot c XOR r % 8",
               va="center", fontsize=8)
    right.text(slots + 0.2, 11.5, f"next 8 rows:\n+ 1,024 bytes (SBO)\n\noutlined: what k-step\n{k_step}'s descriptor\n"
               f"(start + {32 * k_step} bytes)\nreads: k {8 * k_step}–{8 * k_step + 7}", va="center", fontsize=8)
    right.set(xlim=(0, slots + 4.5), ylim=(rows_shown, 0), aspect="equal")
    right.set_xticks(np.arange(slots) + 0.5, [f"{16 * s}" for s in range(slots)], fontsize=7)
    right.set_yticks(np.arange(rows_shown) + 0.5, range(rows_shown), fontsize=7)
    right.set_xlabel("byte within the row's 128-byte line (16-byte slots)", fontsize=9)
    right.set_ylabel("row of A's tile (n: a column of Aᵀ)", fontsize=9)
    right.set_title(f"A's k-tile in shared memory, first {rows_shown} of {n} rows × {block_k} k: the 128-byte swizzle",
                    fontsize=9)
    return fig


def gpu_layout(step, results: dict | None = None) -> dict:
    """The tile sizes and shared-memory layout (stages, buffers, …) of the step as it runs on the GPU: the
    configuration of its record at the largest size in ``results`` if there is one, else its search space's first (on
    the simulator the step itself runs a smaller configuration)."""
    from dataclasses import fields

    module = step.module
    config = module.SEARCH_SPACE[0]
    if results is not None:
        records = [r for r in results["records"] if r["step"] == step.name and r.get("config")]
        if records:
            found = max(records, key=lambda r: r["M"] * r["N"] * r["K"])["config"]
            config = type(config)(**{f.name: found[f.name] for f in fields(config) if f.name in found})
    return {**{f.name: getattr(config, f.name) for f in fields(config)}, "THREADS": config.THREADS,
            **module.Config.of(config).check().constants()}


def a_buffers(config: dict) -> list[int]:
    """The byte offsets of the shared buffers that hold A's k-tiles in the step's layout: its stages, then its two
    buffers of small parts."""
    size = 4 * config["A_STAGE_FLOATS"]
    return ([s * size for s in range(config["STAGES"])]
            + [4 * config["SMALL_BASE"] + i * size for i in range(2)])


def staging_matches(config: dict, offset=None) -> tuple[int, int]:
    """(elements found, elements checked): for every buffer of :func:`a_buffers`, every k-step s and every element
    (row, k) of A's k-tile, does the step's copy (thread chunk → row = chunk // (BLOCK_K / 4), kc = chunk %
    (BLOCK_K / 4), at ``swizzled_offset(row, kc)``, or ``offset``) put it where the k-step's descriptor,
    ``swizzled_descriptor(buffer + 32·s)``, makes the tensor core read it (:func:`read_byte`)?"""
    rows, block_k = config["BLOCK_M"], config["BLOCK_K"]
    per_row = block_k // 4
    chunk = np.arange(rows * per_row)  # every thread's every load: tid + load · THREADS covers them once
    row, kc = chunk // per_row, chunk % per_row
    row, k = np.repeat(row, 4), np.repeat(kc, 4) * 4 + np.tile(np.arange(4), len(chunk))
    found = checked = 0
    for buffer in a_buffers(config):
        staged = buffer + staged_byte(row, k, offset)
        for s in range(block_k // 8):
            mine = k // 8 == s
            read = read_byte(row[mine], k[mine] % 8, swizzled_descriptor(buffer + 32 * s))
            found += int((staged[mine] == read).sum())
            checked += int(mine.sum())
    return found, checked


def slots_of_chunk(offset=None, chunk: int = 0) -> int:
    """How many different 16-byte slots (of the 8 in a 128-byte line) chunk ``chunk`` of 8 consecutive rows lies
    in: 8 means the eight rows' chunks cover all 32 banks; 1, that they share 4 banks."""
    return len({int(staged_byte(row, 4 * chunk, offset)) % 128 // 16 for row in range(8)})


@dataclass(frozen=True)
class LayoutCheck:
    """The step's staging of A against the descriptors, and Bᵀ's holders (:func:`layout_check`)."""
    found: int  # elements of A staged where the descriptors make the tensor core read them
    checked: int  # elements checked
    buffers: int  # A's buffers checked (stages and small-part buffers)
    holders: int  # different (warp, lane, register) holding the 512 elements of Bᵀ's 64 × 8
    slots: int  # 16-byte slots chunk 0 of 8 consecutive rows lies in
    slots_unswizzled: int  # the same without the XOR


def layout_check(config: dict, offset=None) -> LayoutCheck:
    """Does the step stage A where the descriptors say the tensor core reads it (:func:`staging_matches`: elements
    found and checked, over ``buffers`` buffers), how many (warp, lane, register) hold the 512 elements of Bᵀ's
    64 × 8, and in how many 16-byte slots chunk 0 of 8 consecutive rows lies, with and without the XOR."""
    found, checked = staging_matches(config, offset)
    return LayoutCheck(found, checked, len(a_buffers(config)),
                       len({fragment_holder(r, c) for r in range(64) for c in range(8)}),
                       slots_of_chunk(offset), slots_of_chunk(lambda row, kc: row * 32 + kc * 4))


# -- what truncating A cost (the first version) -----------------------------------------------------------------------
@dataclass(frozen=True)
class SplitErrors:
    """One way of taking A's big part, over standard-normal floats (:func:`a_split_errors`)."""
    small: float  # the largest |small| / |a|
    mean: float  # the mean error of big + small as the tensor core reads them
    largest: float  # the largest such error


def a_split_errors(seed: int = 0, count: int = 200_000) -> dict:
    """Step 14's first version took A's big part as the tensor core reads the staged float (truncated to TF32) and
    small = a − that; step 13, and step 14 since the FP32 contract, round big to nearest. In NumPy, over
    standard-normal floats: the largest |small| / |a| of each, and the mean and largest error of big + small as the
    tensor core reads them (small truncated too; the 2^11 scaling of today's split changes none of these for normal
    floats). {"truncated" or "rounded": :class:`SplitErrors`}."""
    a = np.random.default_rng(seed).standard_normal(count).astype(np.float32)
    a64 = a.astype(np.float64)
    big_t = truncate_to_tf32(a)
    small_t = (a - big_t).astype(np.float32)
    big_r, small_r = split_tf32_parts(a)
    out = {}
    for name, big, small in (("truncated", big_t, small_t), ("rounded", big_r, small_r)):
        err = np.abs(a64 - big.astype(np.float64) - truncate_to_tf32(small).astype(np.float64)) / np.abs(a64)
        out[name] = SplitErrors(float(np.max(np.abs(small.astype(np.float64)) / np.abs(a64))), float(err.mean()),
                                float(err.max()))
    return out


# -- the truncating accumulator --------------------------------------------------------------------------------------
def flush_points(run: dict) -> dict:
    """Sampled error against K (squares) of the build without the flush, the build with it (step 14's) and cuBLAS
    SGEMM, from one experiment run: {name: [(K, error), …]}."""
    out = {}
    for name in (NO_FLUSH_BUILD, FLUSH_BUILD, "cublas"):
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
              FLUSH_BUILD: ("big·big flushed per k-tile into rounded float32 adds (step 14's way)", "tab:cyan", "*-"),
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


@dataclass(frozen=True)
class Flush:
    """The build without the flush against the build with it and cuBLAS SGEMM (:func:`flush`)."""
    slope: float  # without the flush: its error's growth, the exponent of K
    k: tuple  # the K measured, smallest first
    first: float  # its error at the smallest K
    last: float  # at the largest
    flushed: float  # the build with the flush (step 14's), at the largest K
    sgemm: float  # cuBLAS SGEMM's, at the largest K


def flush(run: dict) -> Flush:
    """Without the flush: error growth (exponent of K), its error at the smallest and largest K; with it, and
    cuBLAS SGEMM's, at the largest."""
    points = flush_points(run)
    ks, errs = zip(*points[NO_FLUSH_BUILD])
    return Flush(slope(ks, errs), ks, errs[0], errs[-1], dict(points[FLUSH_BUILD])[ks[-1]],
                 dict(points["cublas"])[ks[-1]])


# -- the builds before step 14 (deep dive) -------------------------------------------------------------------------------
@dataclass(frozen=True)
class WhySwap:
    """The first wgmma GEMM against step 12 (:func:`why_swap`)."""
    size: tuple  # the run's largest size
    transposing: float  # the build that transposed B on the way in: TFLOPS there
    step12: float  # step 12's TFLOPS there, same run


def why_swap(run: dict) -> WhySwap:
    """The first wgmma GEMM (B transposed on the way in) and step 12 at the largest size of ``run`` (same run)."""
    big = max((r["M"], r["N"], r["K"]) for r in run["records"])
    return WhySwap(big, record(run, TRANSPOSING_BUILD, big)["tflops"], record(run, "tensor_cores", big)["tflops"])


def overlap_table(run: dict) -> MarkdownTable:
    """The TF32 build with ``wait_group 1`` (next k-tile's fragments loaded while this one's wgmma run) against the
    same build waiting first (``wait_group 0``): the experiment's checks."""
    rows = [(OVERLAPPED_BUILD, "`wait_group 1`: load the next fragments while the wgmma run"),
            (SERIAL_BUILD, "`wait_group 0` first, then load (what step 14 does)")]
    checks = [(label, run["checks"][name]) for name, label in rows]
    shown = table([{"the 256×128 TF32 build": label, "shape": size_label(tuple(c["shape"])),
                    "largest error vs its own TF32 inputs (float64)": f"{c['max_rel_error_vs_fed_inputs']:.1e}"}
                   for label, c in checks], align="llr")
    return MarkdownTable(shown + "\n\n" + caption(run).replace(".*", " (`checks`).*"))


@dataclass(frozen=True)
class L2Counters:
    """One build's L2 traffic at 8192³ (Nsight Compute; None where the report lacks a metric)."""
    requests: float | None  # L2 requests
    read_requests: float | None  # of them, reads from the SMs' loads
    read_sectors: float | None  # 32-byte sectors those reads asked for
    l2_busy: float | None  # L2 cache throughput, %


@dataclass(frozen=True)
class L2Profiles:
    """The TF32 256×128 build before and after the swizzle (:func:`l2_profiles`)."""
    before: L2Counters  # A in core matrices (no swizzle)
    after: L2Counters  # A in 128-byte swizzled rows


def l2_profiles() -> L2Profiles | None:
    """The TF32 256×128 build at 8192³ before and after the swizzle, from Nsight Compute: requests, read requests,
    read sectors and L2 busy; None where a file is not shipped."""
    requests, before_profile, after_profile = map(report_text, (REQUESTS_PROFILE, SWAPPED_PROFILE, SWIZZLED_PROFILE))
    if not (requests and before_profile and after_profile):
        return None
    metrics = ("lts__t_requests.sum", "lts__t_requests_srcunit_tex_op_read.sum",
               "lts__t_sectors_srcunit_tex_op_read.sum")
    before = [prefixed_metric(requests, SERIAL_BUILD, name) for name in metrics]
    after = [report_metrics(after_profile).get(name) for name in metrics]
    return L2Profiles(L2Counters(*before, report_metrics(before_profile).get("L2 Cache Throughput")),
                      L2Counters(*after, report_metrics(after_profile).get("L2 Cache Throughput")))


@dataclass(frozen=True)
class L2Table:
    """The swizzle's effect (:func:`l2_table`)."""
    table: MarkdownTable  # L2 traffic (Nsight Compute) and speed of the builds without and with the swizzle
    step12: dict  # size → step 12's TFLOPS in that run


def l2_table(run: dict | None) -> L2Table | None:
    """The experiment's builds without and with the swizzle (``table``): L2 requests, sectors per read request and L2
    busy (Nsight Compute, TF32 build, 8192³), TF32 TFLOPS and 3xTF32's × cuBLAS SGEMM at the two largest sizes (same
    run); ``step12``: step 12's TFLOPS in that run. None where a file is not shipped."""
    profiles = l2_profiles()
    if run is None or profiles is None:
        return None
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in run["records"] if r["step"] == STEP14_BUILD},
                   key=lambda s: s[0])[-2:]
    label = " / ".join(size_label(s) for s in sizes)
    b, a = profiles.before, profiles.after

    def speeds(name, key, form):
        return " / ".join(form.format(record(run, name, s)[key] / (100 if key == "pct_of_cublas" else 1))
                          for s in sizes)

    rows = [("L2 requests (8192³)", f"{b.requests / 1e9:.2f} G", f"{a.requests / 1e9:.2f} G"),
            ("32-byte sectors per read request (8192³)", f"{b.read_sectors / b.read_requests:.2f}",
             f"{a.read_sectors / a.read_requests:.2f}"),
            ("L2 busy (8192³)", f"{b.l2_busy:.0f} %", f"{a.l2_busy:.0f} %"),
            (f"TF32 build, TFLOPS at {label}", speeds(SERIAL_BUILD, "tflops", "{:.1f}"),
             speeds(STEP15_BUILD, "tflops", "{:.1f}")),
            (f"3xTF32 build (step 14's), × cuBLAS SGEMM at {label}", speeds(FLUSH_BUILD, "pct_of_cublas", "{:.2f}×"),
             speeds(STEP14_BUILD, "pct_of_cublas", "{:.2f}×"))]
    shown = table([dict(zip(("", "A in core matrices (no swizzle)", "A in 128-byte swizzled rows"), r)) for r in rows],
                  align="lrr", tight_blanks=True)
    env = run["environment"]
    return L2Table(MarkdownTable(
        shown + f"\n\n*{env.get('gpu')}, {str(env.get('date'))[:10]}: "
        f"`{results_files.display_path(run['path'])}`; Nsight Compute: `experiments/results/{REQUESTS_PROFILE}` (lines "
        f"of `[{SERIAL_BUILD}]`), `experiments/results/{SWAPPED_PROFILE}` (L2 busy before), "
        f"`experiments/results/{SWIZZLED_PROFILE}`.*"), {s: record(run, "tensor_cores", s)["tflops"] for s in sizes})


# -- prediction, speed, verdict ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PredictedAtSize:
    """The prediction at one size (:func:`predicted`)."""
    low: float  # the experiment build's × cuBLAS SGEMM, lowest over the runs
    high: float  # highest
    tflops: tuple  # (low, high) × this benchmark's SGEMM
    ms: float  # the build's shortest time (ms)


def predicted(results: dict, runs: list[dict]) -> dict:
    """{size: :class:`PredictedAtSize`} per target size (the two largest where step 13 and cuBLAS SGEMM ran): the
    experiment build's × cuBLAS SGEMM in each run (low, high), the TFLOPS that gives at this benchmark's SGEMM, and
    the build's time in ms."""
    out = {}
    for size in common_sizes(results, ["three_tf32"])[-2:]:
        found = [record(run, STEP14_BUILD, size) for run in runs]
        found = [r for r in found if r]
        if not found:
            continue
        ratios = [r["pct_of_cublas"] / 100 for r in found]
        sgemm = record(results, "cublas", size)["tflops"]
        out[size] = PredictedAtSize(min(ratios), max(ratios), (min(ratios) * sgemm, max(ratios) * sgemm),
                                    min(r["median_ms"] for r in found))
    return out


def speed_table(results: dict) -> MarkdownTable:
    """TFLOPS (× cuBLAS SGEMM, same run) of steps 13 and 14 and both cuBLAS, and the sampled errors at the two largest
    sizes."""
    return tflops_table(results, SPEED_ROWS, common_sizes(results, ["three_tf32"]),
                        lambda r, size: f"{r['tflops']:.1f} ({r['pct_of_cublas'] / 100:.2f}×)", errors=True)


def speed_figure(results: dict):
    """Left: TFLOPS against size of :data:`SPEED_ROWS`, with our target; right: their sampled errors."""
    from ..harness.environment import short_label
    from .plots import speed_error_figure  # here: importing the helper loads no pyplot

    size_list = common_sizes(results, ["three_tf32"])
    sgemm = np.array([record(results, "cublas", s)["tflops"] for s in size_list])
    return speed_error_figure(
        results, SPEED_ROWS, size_list,
        lambda ax, x: ax.plot(x, TARGET_3XTF32_VS_SGEMM * sgemm, color="tab:olive", lw=1.5, ls="--",
                              label=f"our target: {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM"),
        f"3xTF32 on mma.sync (step 13) and on wgmma (step 14) against cuBLAS\n{short_label(results['environment'])}")


def accuracy(results: dict, sweep: dict | None, wide_run: dict | None) -> dict:
    """The 3xTF32 accuracy rule (lesson 13's) for step 14: the experiment's 512×512×K sweep of its build (before the
    swizzle, which moves no arithmetic), the wide-exponent run at 4096³–8192³, and the benchmark's two largest
    squares."""
    ratios = square_ratios(results, STEP)
    if sweep:
        ratios += sweep_ratios(sweep["sweep"], FLUSH_BUILD)
    if wide_run:
        ratios += wide_ratios(wide_run, STEP)
    return accuracy_check(ratios)


@dataclass(frozen=True)
class AtSize:
    """Step 14 at one size (:attr:`Verdict.sizes`)."""
    tflops: float  # its TFLOPS
    vs_sgemm: float  # × cuBLAS SGEMM, same run
    vs_step13: float  # × step 13
    error: float  # its sampled error
    sgemm_error: float  # cuBLAS SGEMM's
    predicted: tuple  # the predicted range of × SGEMM, (low, high); (None, None) without a prediction
    build_minus_step_ms: float | None  # the experiment build's time minus the step's (ms)


@dataclass(frozen=True)
class Verdict:
    """Step 14's speed against our target and the prediction (:func:`verdict`)."""
    sizes: dict  # size → :class:`AtSize`, at the two largest sizes
    speed_met: bool  # the speed target met at both


def verdict(results: dict, runs: list[dict]) -> Verdict | None:
    """Step 14 at the two largest sizes: TFLOPS, × SGEMM, × step 13, error and SGEMM's, the predicted range, and the
    experiment build's time minus the step's (ms); ``speed_met``; None without step 14 in ``results``."""
    check = target_check(results, STEP)
    if check is None:
        return None
    p = predicted(results, runs)
    rows = {}
    for size, (ratio, err, err_sgemm) in check["sizes"].items():
        t14 = record(results, STEP, size)
        q = p.get(size)
        rows[size] = AtSize(t14["tflops"], ratio, t14["tflops"] / record(results, "three_tf32", size)["tflops"], err,
                            err_sgemm, (q.low, q.high) if q else (None, None),
                            q.ms - t14["median_ms"] if q else None)
    return Verdict(rows, check["speed_met"])


@dataclass(frozen=True)
class TF32BuildAtSize:
    """The swizzled TF32 build at one size (:attr:`WhatIsLeft.sizes`)."""
    tflops: float  # its TFLOPS
    vs_step12: float  # × step 12, same run
    of_cublas_tf32: float  # share of cuBLAS TF32, same run
    three_share: float  # the 3xTF32 build's (step 14's) share of its speed


@dataclass(frozen=True)
class WhatIsLeft:
    """The TF32 build of the same design and step 14 against the Hopper target (:func:`what_is_left`)."""
    sizes: dict  # size → :class:`TF32BuildAtSize`, at the run's two largest sizes
    tf32_met: bool  # the TF32 build reaches the TF32 target at both
    hopper: dict  # size → step 14's × cuBLAS SGEMM in the benchmark (empty without step 14)
    hopper_target: float  # the Hopper chapter's 3xTF32 target, × SGEMM


def what_is_left(run: dict, results: dict) -> WhatIsLeft:
    """The swizzled TF32 build of the same design (now step 15) at the two largest sizes of ``run``: TFLOPS, × step 12
    and share of cuBLAS TF32 (same run), against the TF32 target; step 14's share of that build's speed; and step 14
    against the Hopper chapter's 3xTF32 target in ``results``."""
    size_list = sorted({(r["M"], r["N"], r["K"]) for r in run["records"] if r["step"] == STEP15_BUILD})[-2:]
    rows = {}
    for s in size_list:
        tf32 = record(run, STEP15_BUILD, s)["tflops"]
        rows[s] = TF32BuildAtSize(tf32, tf32 / record(run, "tensor_cores", s)["tflops"],
                                  tf32 / record(run, "cublas_tf32", s)["tflops"],
                                  record(run, STEP14_BUILD, s)["tflops"] / tf32)
    check = target_check(results, STEP)
    hopper = {s: r for s, (r, _, _) in check["sizes"].items()} if check else {}
    return WhatIsLeft(rows, all(r.tflops >= TARGET_TF32_TFLOPS for r in rows.values()), hopper,
                      TARGET_HOPPER_3XTF32_VS_SGEMM)
