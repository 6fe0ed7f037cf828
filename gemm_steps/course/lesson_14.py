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
from gemm_steps.toolkit import warpgroup_ops

from .display import MarkdownTable
from .lesson_12 import TARGET_3XTF32_VS_SGEMM, TARGET_TF32_TFLOPS, rec
from .timings import size_label

#: The experiment runs (experiments/results/): the first has every build, the second repeats some of them.
SWAPPED_RUNS = ("wgmma-swapped-nvidia-h100.json", "wgmma-swapped-repeat-nvidia-h100.json")
#: Nsight Compute on the experiment's 256×128 TF32 build (serial) at 8192³.
SWAPPED_PROFILE = "ncu-wgmma-swapped-nvidia-h100.txt"
#: The experiment's run that moved A to the 128-byte swizzle layout: every build with and without it, same run.
SWIZZLED_RUN = "wgmma-swapped-swizzled-nvidia-h100.json"
#: Nsight Compute at 8192³ on the TF32 256×128 build: L2 requests by source before the swizzle (lines prefixed with
#: the build's name), and the swizzled build (plain ncu text).
REQUESTS_PROFILE = "ncu-l2-requests-by-source-nvidia-h100.txt"
SWIZZLED_PROFILE = "ncu-wgmma-swapped-swizzled-nvidia-h100.txt"
#: The builds step 14 is (3xTF32, 128×128, big·big flushed per k-tile, A swizzled), and the TF32 build of the same
#: design before and after the swizzle.
STEP_BUILD = "wgmma swapped 3xTF32 128x128, flush big, swizzled"
SWIZZLED_TF32_BUILD = "wgmma swapped 256x128, serial, swizzled"
#: The course's stretch for 3xTF32 (docs/tensor_cores.md): ≥ 2× cuBLAS SGEMM.
STRETCH_3XTF32_VS_SGEMM = 2.0
#: The experiment's builds the lesson reads: the one step 14 was before the swizzle, the same without the flush, the TF32 build with
#: wait_group 1 (next fragments loaded while the wgmma run) and with wait_group 0 first, and the first wgmma GEMM
#: (B transposed on the way in).
FLUSH_BUILD = "wgmma swapped 3xTF32 128x128, flush big"
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
    warp row // 16, then lesson 12's m16n8k8 A layout (a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 =
    A[g+8][t+4])."""
    warp, r = divmod(row, 16)
    return warp, (r % 8) * 4 + k % 4, r // 8 + 2 * (k // 4)


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
            **module.layout(config)}


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


def layout_check(config: dict, offset=None) -> str:
    """Does the step stage A where the descriptors say the tensor core reads it (:func:`staging_matches`), and is
    every element of the register operand held by exactly one (warp, lane, register)?"""
    found, checked = staging_matches(config, offset)
    buffers = len(a_buffers(config))
    holders = {fragment_holder(r, c) for r in range(64) for c in range(8)}
    unswizzled = slots_of_chunk(lambda row, kc: row * 32 + kc * 4)
    return (f"With the step's tiles ({config['BLOCK_M']} rows × BLOCK_K = {config['BLOCK_K']}, {buffers} buffers of A: "
            f"{config['STAGES']} stages and 2 of small parts): **{found} of {checked}** elements ({buffers} × "
            f"{config['BLOCK_M'] * config['BLOCK_K']}) lie where the k-steps' descriptors point the tensor core, "
            f"and the 512 elements of Bᵀ's 64 × 8 are held by **{len(holders)}** different (warp, lane, register). "
            f"The same chunk of 8 consecutive rows lies in {slots_of_chunk(offset)} different 16-byte slots of their "
            f"lines ({unswizzled} without the XOR). (This checks the step's copy formula against our reading of the "
            "descriptor, the simulator twin's; the hardware itself is checked by `tests/test_warpgroup_ops.py` on "
            "the GPU — where unswizzled data must give a wrong product — and by the timing run below.)")


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


def flush_text(run: dict) -> str:
    points = flush_points(run)
    ks, errs = zip(*points[NO_FLUSH_BUILD])
    step = dict(points[FLUSH_BUILD])
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


# -- copies the L2 can serve whole ---------------------------------------------------------------------------------------
_PREFIXED = re.compile(r"^\[(.+?)\]\s+(\S+)\s+(\S+)\s+([\d,]+(?:\.\d+)?)\s*$")


def prefixed_metric(text: str, label: str, name: str) -> float | None:
    """Metric ``name`` of the kernel ``label`` in a file of ncu lines prefixed with their kernel, as
    ``[label]     metric   unit   value``."""
    for line in text.splitlines():
        match = _PREFIXED.match(line)
        if match and match.group(1) == label and match.group(2) == name:
            return float(match.group(4).replace(",", ""))
    return None


def _read(name: str) -> str | None:
    path = results_files.find(name)
    return path.read_text() if path else None


def l2_profiles() -> dict | None:
    """The TF32 256×128 build at 8192³ before and after the swizzle, from Nsight Compute: {"before"/"after":
    {"requests", "read_requests", "read_sectors", "l2_busy"}}; None where a file is not shipped."""
    requests, before_profile, after_profile = map(_read, (REQUESTS_PROFILE, SWAPPED_PROFILE, SWIZZLED_PROFILE))
    if not (requests and before_profile and after_profile):
        return None
    metrics = {"requests": "lts__t_requests.sum", "read_requests": "lts__t_requests_srcunit_tex_op_read.sum",
               "read_sectors": "lts__t_sectors_srcunit_tex_op_read.sum"}
    before = {key: prefixed_metric(requests, SERIAL_BUILD, name) for key, name in metrics.items()}
    after = {key: profile_metric(after_profile, name) for key, name in metrics.items()}
    before["l2_busy"] = profile_metric(before_profile, "L2 Cache Throughput")
    after["l2_busy"] = profile_metric(after_profile, "L2 Cache Throughput")
    return {"before": before, "after": after}


def l2_table(run: dict | None) -> MarkdownTable | str:
    """The experiment's builds without and with the swizzle: L2 requests, sectors per read request and L2 busy
    (Nsight Compute, TF32 build, 8192³), TF32 TFLOPS and 3xTF32's × cuBLAS SGEMM at the two largest sizes (same
    run)."""
    profiles = l2_profiles()
    if run is None or profiles is None:
        return "The swizzle experiment's results files are not shipped; see experiments/README.md."
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in run["records"] if r["step"] == STEP_BUILD},
                   key=lambda s: s[0])[-2:]
    label = " / ".join(size_label(s) for s in sizes)
    b, a = profiles["before"], profiles["after"]

    def speeds(name, key, form):
        return " / ".join(form.format(find(run, name, s)[key] / (100 if key == "pct_of_cublas" else 1))
                          for s in sizes)

    rows = [("L2 requests (8192³)", f"{b['requests'] / 1e9:.2f} G", f"{a['requests'] / 1e9:.2f} G"),
            ("32-byte sectors per read request (8192³)", f"{b['read_sectors'] / b['read_requests']:.2f}",
             f"{a['read_sectors'] / a['read_requests']:.2f}"),
            ("L2 busy (8192³)", f"{b['l2_busy']:.0f} %", f"{a['l2_busy']:.0f} %"),
            (f"TF32 build, TFLOPS at {label}", speeds(SERIAL_BUILD, "tflops", "{:.1f}"),
             speeds(SWIZZLED_TF32_BUILD, "tflops", "{:.1f}")),
            (f"3xTF32 build (step 14's), × cuBLAS SGEMM at {label}", speeds(FLUSH_BUILD, "pct_of_cublas", "{:.2f}×"),
             speeds(STEP_BUILD, "pct_of_cublas", "{:.2f}×"))]
    lines = ["| | A in core matrices (no swizzle) | A in 128-byte swizzled rows |", "|:--|--:|--:|"]
    lines += [f"| {name} | {x} | {y} |" for name, x, y in rows]
    step12 = speeds("tensor_cores", "tflops", "{:.1f}")
    env = run["environment"]
    return MarkdownTable(
        "\n".join(lines) + f"\n\nThe profile is of the TF32 256×128 build; step 12 ran {step12} TFLOPS at {label} in "
        f"the same run. *{env.get('gpu')}, {str(env.get('date'))[:10]}: `{results_files.display_path(run['path'])}`; "
        f"Nsight Compute: `experiments/results/{REQUESTS_PROFILE}` (lines of `[{SERIAL_BUILD}]`), "
        f"`experiments/results/{SWAPPED_PROFILE}` (L2 busy before), `experiments/results/{SWIZZLED_PROFILE}`.*")


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


def _span(low: float, high: float, form: str = "{:.2f}") -> str:
    return form.format(low) if form.format(low) == form.format(high) else f"{form.format(low)}–{form.format(high)}"


def prediction(results: dict, runs: list[dict], n: int = 128) -> str:
    """The prediction from the experiment's runs of the same kernel (A swizzled); ``n``: the wgmma's N (the tile's
    rows)."""
    p = predicted(results, runs)
    if not p:
        return "The experiment has no run at the benchmark's large sizes: no prediction."
    parts = [f"at {size_label(s)} **{_span(q['low'], q['high'])}× cuBLAS SGEMM**, "
             f"{_span(*q['tflops'], form='{:.1f}')} TFLOPS against this benchmark's SGEMM ({q['sgemm']:.1f}), "
             f"{_span(min(q['step13']), max(q['step13']))}× step 13" for s, q in p.items()]
    met = all(q["low"] >= TARGET_3XTF32_VS_SGEMM for q in p.values())
    count = f"the experiment's {len(runs)} runs" if len(runs) > 1 else "the experiment"
    return ("**Prediction.** Step 14 is the experiment's fastest 3xTF32 build (128×128 tiles, big·big flushed per "
            "k-tile, A in 128-byte swizzled rows) made a step: the same kernel, plus a guarded twin for partial tiles, "
            f"which squares of these sizes never run. So it should run as it did in {count} (against cuBLAS in the "
            "same run): " + "; ".join(parts) + ". That is "
            + ("above" if met else "not safely above") + f" our target of {TARGET_3XTF32_VS_SGEMM}× at both sizes. "
            "Why faster than step 13, when it does the same three products? Our reading, not measured here: a wgmma "
            f"is {64 * n * 8 // (16 * 8 * 8)} mma.sync's worth of work per instruction (64·{n}·8 multiply-adds), so "
            "far fewer instructions feed the tensor cores, the previous k-tile's products run while the next "
            "k-tile's copies are issued and A is split, and the whole-line copies keep the L2 from being the limit. "
            "The occupancy is the same as step 13's: 8 warps per SM.")


def kernel_table_lines(results: dict, rows, size_list: list, with_ratio: bool) -> list[str]:
    """A Markdown table, one line per kernel of ``rows`` ((record name, label, …) tuples): TFLOPS at each size (with
    × cuBLAS SGEMM if ``with_ratio``), then the sampled error at the two largest sizes; "—" where a kernel is
    missing. Lessons 14 and 15 show their speed tables with it."""
    big = size_list[-2:]
    lines = ["| kernel | " + " | ".join(size_label(s) for s in size_list) + " | "
             + " | ".join(f"error at {size_label(s)}" for s in big) + " |",
             "|:--|" + "--:|" * (len(size_list) + len(big))]
    for name, label, *_ in rows:
        cells = []
        for s in size_list:
            r = rec(results, name, s)
            cells.append("—" if r is None else f"{r['tflops']:.1f}"
                         + (f" ({r['pct_of_cublas'] / 100:.2f}×)" if with_ratio else ""))
        for s in big:
            r = rec(results, name, s)
            cells.append("—" if r is None or "sampled_rel_error_fp64" not in r else f"{r['sampled_rel_error_fp64']:.1e}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def speed_table(results: dict) -> MarkdownTable:
    """TFLOPS (× cuBLAS SGEMM, same run) of steps 13 and 14 and both cuBLAS at every size step 13 ran, and the
    sampled errors at the two largest."""
    found = {(r["M"], r["N"], r["K"]) for r in results["records"]}
    size_list = sorted((s for s in found if rec(results, "three_tf32", s) and rec(results, "cublas", s)),
                       key=lambda s: s[0] * s[1] * s[2])
    lines = kernel_table_lines(results, SPEED_ROWS, size_list, with_ratio=True)
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
    from ..harness.environment import short_label

    found = {(r["M"], r["N"], r["K"]) for r in results["records"]}
    size_list = sorted((s for s in found if rec(results, "three_tf32", s) and rec(results, "cublas", s)),
                       key=lambda s: s[0] * s[1] * s[2])
    sgemm = np.array([rec(results, "cublas", s)["tflops"] for s in size_list])
    return speed_error_figure(
        results, SPEED_ROWS, size_list,
        lambda ax, x: ax.plot(x, TARGET_3XTF32_VS_SGEMM * sgemm, color="tab:olive", lw=1.5, ls="--",
                              label=f"our target: {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM"),
        "Accuracy: the target asks ≤ cuBLAS SGEMM's",
        f"3xTF32 on mma.sync (step 13) and on wgmma (step 14) against cuBLAS\n{short_label(results['environment'])}")


def speed_error_figure(results: dict, rows, size_list: list, draw_target, accuracy_title: str, title: str):
    """Two panels over ``size_list``: TFLOPS (log) of each of ``rows`` ((record name, label, colour, style); "not in
    this file" where missing) with ``draw_target(axes, x)`` drawing the target, and their sampled errors. Lessons 14
    and 15 draw their speed figures with it."""
    from matplotlib.figure import Figure

    x = np.arange(len(size_list))
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    speed, error = fig.subplots(1, 2)
    for name, label, colour, style in rows:
        got = [rec(results, name, s) or {} for s in size_list]
        if not any(got):
            label += " (not in this file)"
        speed.plot(x, [g.get("tflops", np.nan) for g in got], style, color=colour, label=label)
        error.plot(x, [g.get("sampled_rel_error_fp64", np.nan) for g in got], style, color=colour, label=label)
    draw_target(speed, x)
    for ax in (speed, error):
        ax.set_yscale("log")
        ax.set_xticks(x, [size_label(s) for s in size_list])
        ax.set_xlabel("size")
    speed.set(ylabel="TFLOPS (log scale)", title="Speed")
    error.set(ylabel="relative error (sampled, vs float64)", title=accuracy_title)
    speed.legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=9)
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
        parts = [f"{size_label(s)}: {_span(q['low'], q['high'])}× cuBLAS SGEMM" for s, q in p.items()]
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
                     f" ({'below' if ratio < q['low'] else 'above'} the predicted {_span(q['low'], q['high'])}× by "
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


def what_is_left(run: dict | None, results: dict | None = None) -> str:
    """The swizzled TF32 build of the same design (now step 15) against step 12 and our TF32 target (same run),
    3xTF32's share of its speed, and step 14 against the stretch (≥ 2× cuBLAS SGEMM) in ``results``."""
    if run is None:
        return "The experiment's results file is not shipped; see docs/tensor_cores.md."
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in run["records"] if r["step"] == SWIZZLED_TF32_BUILD},
                   key=lambda s: s[0])[-2:]
    label = " / ".join(size_label(s) for s in sizes)
    tf32 = [find(run, SWIZZLED_TF32_BUILD, s)["tflops"] for s in sizes]
    step12 = [find(run, "tensor_cores", s)["tflops"] for s in sizes]
    cublas_tf32 = [find(run, "cublas_tf32", s)["tflops"] for s in sizes]
    three = [find(run, STEP_BUILD, s)["tflops"] for s in sizes]
    above = all(t >= TARGET_TF32_TFLOPS for t in tf32)
    text = (f"In TF32 alone — the same design with one product per k-step, A swizzled, 256×128 tiles — the "
            f"experiment's build ran **{' / '.join(f'{t:.1f}' for t in tf32)} TFLOPS** at {label}: "
            f"{' / '.join(f'{t / s:.2f}' for t, s in zip(tf32, step12))}× step 12 in the same run "
            f"({' / '.join(f'{s:.1f}' for s in step12)}), "
            + ("above" if above else "not above") + f" the course's TF32 target of {TARGET_TF32_TFLOPS:.0f} TFLOPS, "
            f"{' / '.join(f'{100 * t / c:.0f}' for t, c in zip(tf32, cublas_tf32))} % of cuBLAS TF32 "
            f"(`{results_files.display_path(run['path'])}`). With an edge kernel for ragged sizes it is now **step 15**, "
            "taught in [lesson 15](15_warpgroup_tf32.ipynb). The 3xTF32 build ran at "
            f"{' / '.join(f'{100 * x / t:.0f}' for x, t in zip(three, tf32))} % of its speed — near the third that "
            "three products per product would give if the tensor-core work were the limit (our reading).")
    check = target_check(results) if results else None
    if check:
        ratios = [ratio for ratio, _, _ in check["sizes"].values()]
        names = " / ".join(size_label(s) for s in check["sizes"])
        if all(r >= STRETCH_3XTF32_VS_SGEMM for r in ratios):
            text += (f" Our stretch, 3xTF32 ≥ {STRETCH_3XTF32_VS_SGEMM:.0f}× cuBLAS SGEMM, **is met**: step 14 ran "
                     f"{' / '.join(f'{r:.2f}' for r in ratios)}× at {names}.")
        else:
            text += (f" Our stretch, 3xTF32 ≥ {STRETCH_3XTF32_VS_SGEMM:.0f}× cuBLAS SGEMM, **is not met**: step 14 ran "
                     f"{' / '.join(f'{r:.2f}' for r in ratios)}× at {names} in the benchmark above, and would need to "
                     f"run {' / '.join(f'{max(0.0, 100 * (STRETCH_3XTF32_VS_SGEMM / r - 1)):.0f}' for r in ratios)} % "
                     "faster.")
    return text
