"""Lesson 5's helpers (2-D register tiling), shared with its deep dives (``lessons/deep_dives/05_*.py``): the
picture, the wavefront model of one warp's k-step and its ceilings against the profiler, the measurement, the step-5
experiment (the signed first attempt, strided maps) and the sign tests in the PTX. Numbers, tables and figures; the
words are the lessons'."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gemm_steps.toolkit.kernel_tools import ceil_div
from gemm_steps.harness import results_files

from . import profiles
from .compiled import blocks_per_sm, compile_kernels, fmas_per_k_tile, k_loop_mix, threads_per_block
from .display import MarkdownTable, as_step, facts, table
from .models import ceiling_figure, served, sm_rate_tflops, wavefronts
from .timings import common_sizes, fp32_peak_tflops, headline_size, load_shipped, record, size_label

WARP = range(32)  # the first warp of a block: threads 0 … 31
KK = 0  # the k-step the model looks at (every k-step costs the same)


def _t(c: dict) -> tuple[int, int]:
    """(THREAD_M, THREAD_N), 1 where a step does not give them."""
    return c.get("THREAD_M", 1), c.get("THREAD_N", 1)


# -- the picture -------------------------------------------------------------------------------------------------
def outer_product_figure(config: dict, thread: int = 37, kk: int = 3):
    """The block tile of C with its grid of threads, one thread's THREAD_M × THREAD_N block, and the column ``kk``
    of A's tile and row ``kk`` of B's tile that feed it (left); the outer product itself (right)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    (bm, bn, bk), (tm, tn) = (config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")), _t(config)
    rows, cols = bm // tm, bn // tn
    row0, col0, off = (thread // cols) * tm, (thread % cols) * tn, -2 * bk  # A's tile left of C, B's above it
    fig = Figure(figsize=(11, 5.6), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.6, 1])

    def box(ax, x, y, w, h, **style):
        ax.add_patch(Rectangle((x, y), w, h, **{"fill": False, "lw": 0.6, "ec": "0.4", **style}))

    def note(ax, text, xy, **style):
        ax.annotate(text, xy, **{"ha": "center", "va": "top", "fontsize": 8, **style})

    for k in range(1, bk):  # the BLOCK_K columns of A's tile and rows of B's
        left.plot([off + k] * 2, [0, bm], color="0.85", lw=0.4)
        left.plot([0, bn], [off + k] * 2, color="0.85", lw=0.4)
    for t in WARP:  # the first warp's blocks, lightly
        box(left, (t % cols) * tn, (t // cols) * tm, tn, tm, fill=True, fc="0.9", ec="none")
    for r in range(rows + 1):
        left.plot([0, bn], [r * tm] * 2, color="0.75", lw=0.4)
    for c in range(cols + 1):
        left.plot([c * tn] * 2, [0, bm], color="0.75", lw=0.4)
    for x, y, w, h in ((off, 0, bk, bm), (0, off, bn, bk), (0, 0, bn, bm)):
        box(left, x, y, w, h, lw=1.2, ec="k")
    for x, y, w, h, colour in ((col0, row0, tn, tm, "tab:orange"), (off + kk, row0, 1, tm, "tab:blue"),
                               (col0, off + kk, tn, 1, "tab:green")):
        box(left, x, y, w, h, fill=True, fc=colour, ec="k", lw=1)
    note(left, f"a_tile ({bm} × {bk})", (off + bk / 2, bm + 3))
    note(left, f"b_tile ({bk} × {bn})", (bn + 2, off + bk / 2), ha="left", va="center")
    note(left, f"C tile ({bm} × {bn}): {rows} × {cols} threads,\nlight grey: the first warp (threads 0–31)",
         (bn / 2, bm + 3))
    note(left, f"column kk = {kk}:\n{tm} floats → a_frag", (off - 1, row0 + tm / 2), ha="right", va="center",
         color="tab:blue")
    note(left, f"row kk = {kk}: {tn} floats → b_frag", (col0 + tn + 2, off - 2), ha="left", va="bottom",
         color="tab:green")
    note(left, f"thread {thread}", (col0 + tn / 2, row0 + tm + 1), color="tab:orange", fontweight="bold")
    left.set(xlim=(off - 34, bn + 30), ylim=(bm + 14, off - 10), aspect="equal",
             title=f"One block: BLOCK_M × BLOCK_N = {bm} × {bn}, BLOCK_K = {bk}, {rows * cols} threads")
    for i in range(-1, tm):  # the outer product of one k-step, enlarged: a_frag left, b_frag above, acc
        for j in range(-1, tn):
            if i >= 0 or j >= 0:
                box(right, j - (j < 0), i - (i < 0), 1, 1, fill=True, ec="w", lw=1.5,
                    fc="tab:blue" if j < 0 else "tab:green" if i < 0 else "tab:orange")
    note(right, f"a_frag[i] = a_tile[row + i, kk]\n{tm} shared loads", (-2.5, tm / 2), ha="right", va="center",
         rotation=90)
    note(right, f"b_frag[j] = b_tile[kk, col + j]: {tn} shared loads", (tn / 2, -2.6), va="bottom")
    note(right, f"acc[i, j] += a_frag[i] * b_frag[j]\n{tm} × {tn} = {tm * tn} FMAs, in registers", (tn / 2, tm + 0.6))
    right.set(xlim=(-4, tn + 0.5), ylim=(tm + 2.2, -3.6), aspect="equal",
              title=f"Thread {thread}, one k-step: an outer product")
    for ax in (left, right):
        ax.title.set_fontsize(10)
        ax.axis("off")
    return fig


# -- the prediction ----------------------------------------------------------------------------------------------
def reuse_table(steps) -> MarkdownTable:
    """Per k, what one thread loads from shared memory and how many FMAs it does with it; per k-tile, what a block
    loads from global memory per FMA — from each step's tile constants."""
    rows = []
    for step in map(as_step, steps):
        c, (tm, tn) = step.config, _t(step.config)
        rows.append({"step": f"{step.number} {step.name}", "results per thread": f"{tm} × {tn}",
                     "per k: shared loads → FMAs": f"{tm + tn} → {tm * tn}", "FMAs per shared load": tm * tn / (tm + tn),
                     "global loads per FMA": f"1/{c['BLOCK_M'] * c['BLOCK_N'] / (c['BLOCK_M'] + c['BLOCK_N']):.0f}"})
    return table(rows)


def thread_map(config: dict, strided: bool = False):
    """``element(t, i, j) -> (row, col)`` in the block tile: the element of C that result (i, j) of thread t is.
    Contiguous (steps 4 and 5): thread t owns a THREAD_M × THREAD_N block. Strided (the experiment's variants): rows
    t // 16 + 16·i and columns t % 16 + 16·j, for step 5's 16 × 16 threads."""
    tm, tn = _t(config)
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

    a = sum(wavefronts([[a_word(element(t, i, 0)[0])] for t in WARP]) for i in range(_t(config)[0]))
    b = sum(served([range(KK * bn + element(t, 0, q)[1], KK * bn + element(t, 0, q)[1] + b_width) for t in WARP],
                   b_width) for q in range(0, _t(config)[1], b_width))
    return a, b


def tile_stores_per_k_step(config: dict) -> float:
    """Shared stores per warp and k-step when the block copies its tiles (one wavefront per warp-wide store)."""
    return (config["BLOCK_M"] + config["BLOCK_N"]) / config["THREADS"]


def fmas_per_warp_k_step(config: dict) -> int:
    return len(WARP) * _t(config)[0] * _t(config)[1]


@dataclass(frozen=True)
class Prediction:
    """The shared-memory model of steps 4 and 5 (:func:`prediction`)."""
    model: dict  # step name → {the table's row label: number}: wavefronts, FMAs, ceiling (TFLOPS)
    ratio: float  # the ceilings' ratio, after ÷ before
    table: MarkdownTable  # the model, a column per step, and the ratio


def prediction(results: dict, before, after) -> Prediction:
    """The shared-memory model of ``before`` and ``after`` (steps 4 and 5), scalar loads as written: per step the
    wavefronts of A's and B's fragments per warp and k-step, FMAs per wavefront and the ceiling in TFLOPS on the
    results' GPU; the ceilings' ratio."""
    model = {}
    for step in map(as_step, (before, after)):
        a, b = k_step_wavefronts(step.config, thread_map(step.config))
        per = fmas_per_warp_k_step(step.config) / (a + b)
        model[step.name] = {"A wavefronts": a, "B wavefronts": b, "FMAs": fmas_per_warp_k_step(step.config),
                            "FMAs per wavefront": per, "ceiling (TFLOPS)": sm_rate_tflops(results, per)}
    first, second = model
    ratio = model[second]["ceiling (TFLOPS)"] / model[first]["ceiling (TFLOPS)"]
    rows = [{"per warp and k-step": key, first: model[first][key], second: model[second][key]} for key in model[first]]
    return Prediction(model, ratio,
                      table(rows + [{"per warp and k-step": "**ceiling ratio**", first: None, second: ratio}]))


# -- what the profiler says ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProfileCounts:
    """A step's shipped Nsight Compute report, per warp and k-step where it says so (:func:`profile_counts`)."""
    profile: profiles.Profile  # the report
    k_steps: float  # the warps' k-steps in the launch (its FFMAs ÷ one warp's FMAs per k-step)
    wavefronts: float  # shared-memory wavefronts per warp and k-step
    conflicts: float  # of them bank conflicts
    fmas_per_wavefront: float  # one warp's FMAs per k-step ÷ its wavefronts
    instructions_per_fma: float  # warp-instructions executed per warp-wide FMA
    global_requests: float  # global load requests in the launch
    issue: float  # warp-instructions issued per cycle per scheduler
    registers: float  # per thread, as the driver compiled it
    warps_per_sm: float  # achieved active warps per SM
    l1_busy: float  # L1/TEX cache throughput (%)


def profile_counts(step) -> ProfileCounts | None:
    """The shipped Nsight Compute report of ``step`` (one 2048³ launch), per warp and k-step: shared-memory
    wavefronts, bank conflicts; and FMAs per wavefront, executed instructions per FMA, global load requests, issue
    rate, registers, warps per SM, how busy L1 is. ``None`` if not shipped."""
    step = as_step(step)
    fmas = fmas_per_warp_k_step(step.config)
    found = profiles.per_warp_k_step(step.name, fmas)
    if found is None:
        return None
    p = found["profile"]
    return ProfileCounts(
        p, found["k_steps"], found["wavefronts"], found["conflicts"], fmas / found["wavefronts"],
        instructions_per_fma=p.value("smsp__inst_executed.sum") / (found["k_steps"] * fmas / 32),
        global_requests=p.value("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
        issue=p.value("Issued Warp Per Scheduler"), registers=p.value("Registers Per Thread"),
        warps_per_sm=p.value("Achieved Active Warps Per SM"), l1_busy=p.value("L1/TEX Cache Throughput"))


@dataclass(frozen=True)
class Wavefronts:
    """The model's count per warp and k-step, for one way of loading B's fragment."""
    a: int  # wavefronts of A's fragment loads
    b: int  # wavefronts of B's fragment loads
    total: float  # A + B + the tile stores
    conflicts: int  # bank conflicts: the fragment loads' wavefronts beyond one per phase


@dataclass(frozen=True)
class ByLoadWidth:
    """:class:`Wavefronts` with B's fragment in scalar loads (as written) and in 128-bit loads (as ``ptxas`` makes
    them)."""
    scalar: Wavefronts  # B as THREAD_N scalar loads
    wide: Wavefronts  # B as 128-bit loads


def _model_rows(config: dict) -> ByLoadWidth:
    """The model's wavefronts per warp and k-step with the tile stores, and its bank conflicts (wavefronts beyond
    one per phase), for B's fragment as scalar loads and as 128-bit loads."""
    element, stores, (tm, tn) = thread_map(config), tile_stores_per_k_step(config), _t(config)
    a, b1 = k_step_wavefronts(config, element)
    b4 = k_step_wavefronts(config, element, b_width=4)[1]
    return ByLoadWidth(*(Wavefronts(a, b, a + b + stores, a - tm + b - tn) for b in (b1, b4)))


def profile_check(before, after) -> MarkdownTable | None:
    """The wavefront model of ``before`` and ``after`` (loads as written, and B as two 128-bit loads) against their
    profiles, per warp and k-step; and the profiles' FMAs per wavefront, global load requests and instructions per
    FMA. ``None`` where a report is not shipped."""
    old, new = profile_counts(before), profile_counts(after)
    if old is None or new is None:
        return None
    m4, m5 = _model_rows(as_step(before).config).scalar, _model_rows(as_step(after).config)
    f5 = fmas_per_warp_k_step(as_step(after).config)
    rows = [("step 4: shared wavefronts", m4.total, None, old.wavefronts),
            ("step 5: shared wavefronts", m5.scalar.total, m5.wide.total, new.wavefronts),
            ("step 5: of them bank conflicts", m5.scalar.conflicts, m5.wide.conflicts, new.conflicts),
            ("step 5: FMAs per wavefront (fragments)", *(f5 / (m.a + m.b) for m in (m5.scalar, m5.wide)),
             new.fmas_per_wavefront),
            *((f"{what}, step 4 → 5", None, None, f"{was / scale:.2f} → {now / scale:.2f}")
              for what, was, now, scale in (
                  ("global load requests (M)", old.global_requests, new.global_requests, 1e6),
                  ("instructions per FMA", old.instructions_per_fma, new.instructions_per_fma, 1)))]
    return table([dict(zip(("per warp and k-step", "model, loads as written", "model, B as two 128-bit loads",
                            "profiler"), row)) for row in rows])


# -- the measurement -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """Step 5's measurement against the prediction (:func:`verdict`)."""
    numbers: dict  # label → number at the headline size, as ``table`` shows them
    table: MarkdownTable  # ``numbers``
    sizes: MarkdownTable  # size by size: step 5 ÷ step 4, the grid's blocks against the SMs
    beats_model: bool  # step 5 ÷ step 4 is above the predicted ceiling ratio
    idle_sms: bool  # some size leaves SMs without a block


def verdict(results: dict, steps, pred: Prediction) -> Verdict:
    """Step 5 against steps 3 and 4 and the prediction at the headline size (``numbers``: TFLOPS, speedups, the
    predicted ratio, the ceilings as written and with B's 128-bit loads); and size by size (``sizes``, a table:
    step 5 over step 4 and the blocks of its grid against the SMs). ``beats_model``: faster than the model
    allowed; ``idle_sms``: some size leaves SMs without a block."""
    step3, step4, step5 = map(as_step, steps)
    size = headline_size(results, [s.name for s in steps])
    r3, r4, r5 = (record(results, s.name, size) for s in (step3, step4, step5))
    c, sms, wide = step5.config, results["environment"]["sm_count"], _model_rows(step5.config).wide
    numbers = {"size": size_label(size), "step 5 TFLOPS": r5["tflops"], "step 5 % of cuBLAS": r5["pct_of_cublas"],
               "step 5 / step 4": r4["median_ms"] / r5["median_ms"],
               "step 5 / step 3": r3["median_ms"] / r5["median_ms"],
               "predicted at most (ceiling ratio)": pred.ratio,
               "ceiling, loads as written (TFLOPS)": pred.model[step5.name]["ceiling (TFLOPS)"],
               "ceiling, B in 128-bit loads (TFLOPS)": sm_rate_tflops(results, fmas_per_warp_k_step(c)
                                                                      / (wide.a + wide.b))}
    rows = [{"size": size_label(s), "step 5 / step 4": record(results, step4.name, s)["median_ms"]
             / record(results, step5.name, s)["median_ms"], "blocks in the grid": blocks, "SMs": sms,
             "SMs idle": blocks < sms}
            for s in common_sizes(results, [step4.name, step5.name])
            for blocks in [ceil_div(s[0], c["BLOCK_M"]) * ceil_div(s[1], c["BLOCK_N"])]]
    return Verdict(numbers, facts(numbers), table(rows, {"step 5 / step 4": "{:.2f}×"}),
                   beats_model=numbers["step 5 / step 4"] > pred.ratio, idle_sms=any(r["SMs idle"] for r in rows))


def waiting(after) -> MarkdownTable | None:
    """What step 5's profile says it waits for: issue rate, cycles with no warp ready, registers, blocks and warps
    per SM, how busy shared memory is and how much of it goes to bank conflicts."""
    new = profile_counts(after)
    if new is None:
        return None
    p = new.profile
    return facts({"instructions issued per cycle per scheduler": new.issue,
                  "cycles with no warp ready (%)": p.value("No Eligible"), "registers per thread": new.registers,
                  "blocks per SM (register limit)": p.value("Block Limit Registers"),
                  "warps per SM, on average (of 64)": new.warps_per_sm, "L1/shared busy (%)": new.l1_busy,
                  "wavefronts spent on bank conflicts (%)": 100 * new.conflicts / new.wavefronts})


# -- the step-5 experiment: signed first attempt, strided variants ------------------------------------------------
EXPERIMENT = results_files.EXPERIMENT_REGISTER_2D_UNSIGNED_ANY
EARLIER = results_files.EXPERIMENT_REGISTER_2D_NVIDIA_H200


def load_experiment() -> dict | None:
    return load_shipped(EXPERIMENT, "step 5, its first attempt with signed indices and two variants, with steps 3 "
                                    "and 4, timed in one run")


def experiment_sizes(experiment: dict) -> list:
    return sorted({(r["M"], r["N"], r["K"]) for r in experiment["records"]}, key=lambda s: s[0] * s[1] * s[2])


def variants_figure(experiment: dict, names):
    """Bars: % of cuBLAS of the named variants at the experiment's largest size."""
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    big = experiment_sizes(experiment)[-1]
    shown = [n for n in names if record(experiment, n, big)]
    fig = Figure(figsize=(7.5, 4), layout="constrained")
    ax = fig.subplots()
    colours = {"signed": "tab:red", "unsigned": "tab:blue", "shared_memory": "tab:gray", "register_1d": "tab:gray"}
    bars = ax.bar(shown, [record(experiment, n, big)["pct_of_cublas"] for n in shown],
                  color=[colours.get(n, "tab:cyan") for n in shown])
    ax.bar_label(bars, fmt="%.1f %%", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.set(ylabel="% of cuBLAS (same run)",
           title=f"Step 5 and variants, {size_label(big)}\n{short_label(experiment['environment'])}")
    ax.title.set_fontsize(10)
    return fig


def runs_agree(results: dict, experiment: dict) -> dict | None:
    """Step 5's % of cuBLAS in the course's benchmark and as the experiment's ``unsigned`` and ``signed`` variants at
    their largest common size; ``agree``: the benchmark is closer to ``unsigned`` (it timed step 5 as shipped)."""
    size = next((s for s in reversed(experiment_sizes(experiment))
                 if record(results, "register_2d", s) and record(experiment, "unsigned", s)), None)
    if size is None:
        return None
    out = {"size": size_label(size), "benchmark": record(results, "register_2d", size)["pct_of_cublas"],
           **{f"experiment, {v}": record(experiment, v, size)["pct_of_cublas"] for v in ("unsigned", "signed")},
           "benchmark GPU": results["environment"].get("gpu"), "experiment GPU": experiment["environment"].get("gpu")}
    out["agree"] = (abs(out["benchmark"] - out["experiment, unsigned"])
                    < abs(out["benchmark"] - out["experiment, signed"]))
    return out


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


SIGNED, SHIPPED = "register_2d_signed (first attempt)", "register_2d (step 5)"
SIGN_BIT = "-9223372036854775808"  # 0x8000000000000000, the sign bit of a 64-bit integer, as PTX prints it


def compile_step_5(register_1d, register_2d) -> dict:
    """Steps 4 and 5 and the first attempt, compiled to PTX on the CPU, labelled for the tables."""
    compiled = compile_kernels([register_1d, register_2d], counter_examples=[register_2d])
    return {"register_1d (step 4)": compiled["register_1d"], SIGNED: compiled["register_2d_signed"],
            SHIPPED: compiled["register_2d"]}


def sign_tests(ptx: str) -> dict:
    """How often the PTX isolates the sign bit of a 64-bit value, by the power of two the next shift makes of it."""
    lines, found = ptx.splitlines(), {}
    for at, line in enumerate(lines):
        if SIGN_BIT in line:
            shift = re.search(r"shr\.u64\s+%rd\d+, %rd\d+, (\d+);", lines[at + 1]) if at + 1 < len(lines) else None
            added = 2 ** (63 - int(shift.group(1))) if shift else None
            found[added] = found.get(added, 0) + 1
    return found


def sign_masks(ptx: str) -> int:
    """How often the PTX spreads the sign bit of a 64-bit value over all 64 bits (``shr.s64 x, 63``)."""
    return len(re.findall(r"shr\.s64\s+%rd\d+, %rd\d+, 63;", ptx))


def sign_table(compiled: dict) -> MarkdownTable:
    """A row per kernel: its sign-bit tests (and how many add what), and its sign masks."""
    return table([{"kernel": label, "sign-bit tests": sum(tests.values()), "of them adding": ", ".join(
        f"{added}: {n}" for added, n in sorted(tests.items(), key=lambda x: -x[1]) if added) or None,
        "sign masks": sign_masks(entry["ptx"])} for label, entry in compiled.items()
        for tests in [sign_tests(entry["ptx"])]])


def sign_test_example(ptx: str, shift: int = 56) -> str:
    """The four PTX lines around the first sign-bit test followed by a right shift of ``shift``."""
    lines = ptx.splitlines()
    at = next(i for i, line in enumerate(lines)
              if SIGN_BIT in line and re.search(rf"shr\.u64.*, {shift};", lines[i + 1]))
    return "\n".join(line.strip() for line in lines[at - 1:at + 3])


def fmas_in_ptx(compiled: dict, step) -> dict:
    """``fma.rn.f32`` in the PTX of each of ``step``'s kernels, in k-steps' worth (THREAD_M × THREAD_N FMAs each):
    1 means the ``kk`` loop reached ``ptxas`` as a loop."""
    step = as_step(step)
    tm, tn = _t(step.config)
    return {label: len(re.findall(r"\bfma\.rn\.f32\b", entry["ptx"])) / (tm * tn)
            for label, entry in compiled.items() if as_step(entry["step"]).name == step.name}


def ceilings(experiment: dict, compiled: dict, step):
    """Both kernels against their ceilings in the experiment's run: the shared-memory ceiling (the first attempt
    with its loads as written, step 5 with B's two 128-bit loads that its profile shows) and the issue ceiling
    (the FP32 peak over the PTX instructions per FMA of the k-loop). A figure, and a table: TFLOPS, the lower
    ceiling and the share of it reached, registers, blocks and warps per SM."""
    step = as_step(step)
    big = experiment_sizes(experiment)[-1]
    peak, rows, fmas = fp32_peak_tflops(experiment), _model_rows(step.config), fmas_per_warp_k_step(step.config)
    issue = {label: peak / sum(k_loop_mix(compiled[label]["ptx"], fmas_per_k_tile(step)).values())
             for label in (SIGNED, SHIPPED)}
    limits = {SIGNED: {"shared-memory ceiling, loads as written":
                       sm_rate_tflops(experiment, fmas / (rows.scalar.a + rows.scalar.b)),
                       "issue ceiling": issue[SIGNED]},
              SHIPPED: {"shared-memory ceiling, B in 128-bit loads":
                        min(sm_rate_tflops(experiment, fmas / (rows.wide.a + rows.wide.b)), peak),
                        "issue ceiling": issue[SHIPPED]}}
    measured = {SIGNED: record(experiment, "signed", big), SHIPPED: record(experiment, "unsigned", big)}
    fig = ceiling_figure([("first attempt\n(signed)", measured[SIGNED]["tflops"], limits[SIGNED]),
                          ("step 5\n(unsigned)", measured[SHIPPED]["tflops"], limits[SHIPPED])],
                         f"Step 5 and its first attempt at {size_label(big)}", experiment)
    out = []
    for label in (SIGNED, SHIPPED):
        low, entry = min(limits[label].values()), compiled[label]
        fit = blocks_per_sm(entry["registers"], threads_per_block(step), entry["shared_bytes"])
        out.append({"kernel": label, "TFLOPS": measured[label]["tflops"], "lower ceiling (TFLOPS)": low,
                    "share of it": measured[label]["tflops"] / low, "issue ceiling (TFLOPS)": issue[label],
                    "registers": entry["registers"], "blocks per SM": fit["blocks"], "warps per SM": fit["warps"]})
    out.append({"kernel": "**step 5 / first attempt**",
                "TFLOPS": f"{measured[SIGNED]['median_ms'] / measured[SHIPPED]['median_ms']:.2f}×",
                "issue ceiling (TFLOPS)": f"{issue[SHIPPED] / issue[SIGNED]:.2f}×"})
    return fig, table(out, {"share of it": "{:.0%}", "lower ceiling (TFLOPS)": "{:.1f}",
                            "issue ceiling (TFLOPS)": "{:.1f}"})


# -- the strided map (deep dive 05_strided_map) -----------------------------------------------------------------------
def load_widths(step) -> MarkdownTable:
    """B's fragment in loads of 1, 2 and 4 floats (scalar, 64-bit, 128-bit): the wavefront model of each, beside
    what the profiler measured (its shared wavefronts per warp and k-step, less the model's A loads and stores)."""
    config = as_step(step).config
    counts, element = profile_counts(step), thread_map(config)
    a, stores = k_step_wavefronts(config, element)[0], tile_stores_per_k_step(config)
    rows = [{"B's fragment loaded as": what, "loads per k-step": _t(config)[1] // width,
             "lanes served at a time": 32 // width, "B wavefronts (model)": b, "A + B + stores (model)": a + b + stores}
            for width, what in ((1, "scalar"), (2, "64-bit"), (4, "128-bit"))
            for b in [k_step_wavefronts(config, element, b_width=width)[1]]]
    if counts:
        rows.append({"B's fragment loaded as": "**profiler** (shared wavefronts per warp and k-step)",
                     "B wavefronts (model)": counts.wavefronts - a - stores,
                     "A + B + stores (model)": counts.wavefronts})
    return table(rows)


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
    return table([{f"variant, at {size_label(big)}": f"`{name}`", "wavefronts per k-step (A + B)": f"{a} + {b} ({how})",
                   "FMAs per wavefront": fmas / (a + b),
                   "shared-memory ceiling (TFLOPS)": min(sm_rate_tflops(experiment, fmas / (a + b)), peak),
                   "TFLOPS": rec["tflops"], "% of cuBLAS (same run)": rec["pct_of_cublas"],
                   "× step 5": shipped["median_ms"] / rec["median_ms"]}
                  for name, (a, b, how) in models.items() for rec in [record(experiment, name, big)]],
                 {"FMAs per wavefront": "{:.1f}", "shared-memory ceiling (TFLOPS)": "{:.1f}",
                  "% of cuBLAS (same run)": "{:.1f} %", "× step 5": "{:.2f}×"})
