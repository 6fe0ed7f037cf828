"""Lesson 7's helpers (unrolling at compile time, autotuning), shared with its deep dive
(``lessons/deep_dives/07_compile_time.py``): the k-loop's instructions per FMA (a figure, the issue model and the
verdict), the tuning sweep (a figure and its findings), registers with and without the occupancy hint, and the
shipped first-call and compile-time runs. Numbers, tables and figures; the words are the lessons'."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from gemm_steps.harness import tuning
from gemm_steps.harness.environment import short_label
from gemm_steps.harness.ptx import remembered_in_gpu_mode
from gemm_steps.harness.step import get_step
from gemm_steps.harness import results_files
from gemm_steps.toolkit.tile_config import tile_fields

from .compiled import MIX_CLASSES, blocks_per_sm, compile_with_registers as compile_steps, compiled_entry
from .compiled import fmas_per_k_tile, k_loop_mix, local_ptxas, threads_per_block
from .display import MarkdownTable, as_step, facts, table
from .sweeps import config_label, same_config, sweep_records
from .timings import fp32_peak_tflops, headline_size, record, shipped_file, shown_path, size_label


def _per_fma(entry: dict) -> dict[str, float] | None:
    return k_loop_mix(entry["ptx"], fmas_per_k_tile(get_step(entry["step"])))


def mix_figure(compiled: dict):
    """The k-loop of each compiled kernel as one bar: PTX instructions per FMA, stacked by kind."""
    from matplotlib.figure import Figure

    mixes = {label: mix for label, entry in compiled.items() if (mix := _per_fma(entry)) is not None}
    fig = Figure(figsize=(8, 0.7 * len(mixes) + 1.6), layout="constrained")
    ax = fig.subplots()
    left = [0.0] * len(mixes)
    for kind in MIX_CLASSES:
        widths = [mix.get(kind, 0.0) for mix in mixes.values()]
        if any(widths):
            ax.barh(list(mixes), widths, left=left, label=kind)
            left = [a + b for a, b in zip(left, widths)]
    for y, total in enumerate(left):
        ax.annotate(f"{total:.2f}", (total, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=9)
    ax.invert_yaxis()
    ax.set(xlabel="PTX instructions per FMA in the k-loop (1.00 = nothing but FMAs)",
           title="What the k-loop issues per FMA, from the compiled PTX")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    return fig


# -- the prediction and the verdict --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prediction:
    """The issue model of two steps (:func:`prediction`)."""
    per_fma: dict  # step name → PTX instructions per FMA in its k-loop
    issue: dict  # step name → issue ceiling (TFLOPS): the FP32 peak ÷ ``per_fma``
    size: tuple  # (M, N, K): the headline size
    before: dict  # the earlier step's record at ``size``
    share: float  # the earlier step's TFLOPS ÷ its issue ceiling
    ratio: float  # the expected speedup: the later step's ceiling ÷ the earlier's
    names: tuple  # (earlier step, later step)
    table: MarkdownTable  # the model's numbers


def prediction(results: dict, compiled: dict, before, after) -> Prediction:
    """The issue model: PTX instructions per FMA in the k-loop → an issue ceiling (the FP32 peak over them);
    ``before``'s share of its own ceiling carried over to ``after``: the expected TFLOPS and ``ratio``. With
    ``table``."""
    before, after = as_step(before), as_step(after)
    per_fma = {e["step"]: sum(_per_fma(e).values()) for e in compiled.values()}
    issue = {name: fp32_peak_tflops(results) / x for name, x in per_fma.items()}
    size = headline_size(results, [before.name, after.name])
    first = record(results, before.name, size)
    share, ratio = first["tflops"] / issue[before.name], issue[after.name] / issue[before.name]
    b, a = before.number, after.number
    numbers = {f"instructions per FMA, step {b}": per_fma[before.name],
               f"instructions per FMA, step {a}": per_fma[after.name],
               f"issue ceiling, step {b} (TFLOPS)": issue[before.name],
               f"issue ceiling, step {a} (TFLOPS)": issue[after.name],
               f"step {b}'s share of its ceiling at {size_label(size)}": share,
               f"**expected: step {a} (TFLOPS)**": share * issue[after.name], f"**expected: step {a} / step {b}**": ratio,
               f"BLOCK_K, step {b} → {a}": f"{before.config['BLOCK_K']} → {after.config['BLOCK_K']}",
               f"MIN_BLOCKS_PER_SM, step {a}": after.config.get("MIN_BLOCKS_PER_SM", 0)}
    return Prediction(per_fma, issue, size, first, share, ratio, (before.name, after.name), facts(numbers))


@dataclass(frozen=True)
class Verdict:
    """The measurement against the issue model (:func:`verdict`)."""
    numbers: dict  # label → number, as ``table`` shows them
    table: MarkdownTable  # ``numbers``
    config_recorded: bool  # the results file says which tiles ran
    outcome: str  # "as predicted" (≥ 95 % of the predicted speedup), "most of it" (≥ 85 %) or "less"


def verdict(results: dict, predicted: Prediction) -> Verdict:
    """The measurement against the issue model: TFLOPS, speedup against the predicted ratio, and the share of its
    issue ceiling ``after`` reaches against ``before``'s. ``outcome``: ``"as predicted"`` (≥ 95 % of the predicted
    speedup), ``"most of it"`` (≥ 85 %) or ``"less"``; ``config_recorded``: the file says which tiles ran."""
    after = predicted.names[1]
    now = record(results, after, predicted.size)
    speedup = predicted.before["median_ms"] / now["median_ms"]
    numbers = {"size": size_label(predicted.size), "TFLOPS": now["tflops"], "% of cuBLAS": now["pct_of_cublas"],
               "speedup": speedup, "predicted speedup": predicted.ratio,
               "share of its issue ceiling": now["tflops"] / predicted.issue[after],
               "the step before: share of its own": predicted.share}
    ratio = speedup / predicted.ratio
    return Verdict(numbers, facts(numbers), "config" in now,
                   "as predicted" if ratio >= 0.95 else "most of it" if ratio >= 0.85 else "less")


# -- the tuning sweep ------------------------------------------------------------------------------------------------
def sweep_figure(sweep: dict):
    """Every configuration of a sweep as % of cuBLAS (same run), the chosen one in green, the noise band dotted."""
    from matplotlib.figure import Figure

    records = sweep_records(sweep)
    best, ordered = tuning.choose_best(records), sorted(records, key=lambda r: r["median_ms"])
    fig = Figure(figsize=(8, 0.45 * len(ordered) + 1.5), layout="constrained")
    ax = fig.subplots()
    ax.barh([config_label(r["config"]) for r in ordered], [r["pct_of_cublas"] for r in ordered],
            color=["tab:green" if r is best else "tab:blue" for r in ordered])
    ax.axvline(100 * ordered[0]["cublas_median_ms"] / (ordered[0]["median_ms"] * (1 + tuning.NOISE)), color="k",
               ls=":", label=f"{tuning.NOISE:.0%} slower than the fastest: the noise band")
    ax.invert_yaxis()
    ax.set(xlabel="% of cuBLAS (same run)", title=f"Autotuning step 7 at {size_label(tuple(best[d] for d in 'MNK'))}"
                                                  f"\n{short_label(sweep['environment'])}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def _find(records: list[dict], **fields) -> dict | None:
    """The record whose configuration has these fields (an absent hint counts as 0)."""
    return next((r for r in records if all(r["config"].get(key, 0) == value for key, value in fields.items())), None)


@dataclass(frozen=True)
class Findings:
    """Named numbers and the table that shows them."""
    numbers: dict  # label → number; the labels are the table's
    table: MarkdownTable  # ``numbers``


def sweep_findings(sweep: dict, step) -> Findings:
    """What the sweep says (ms): ``BLOCK_K`` 8 against 16 with no hint, and the occupancy hint at ``BLOCK_K = 16``,
    each with everything else as in ``step``'s tiles, and whether each difference is beyond ``tuning.NOISE``; the
    fastest, how many are within the noise band of it, the rule's pick, and whether it is the first of the step's
    ``SEARCH_SPACE`` (what a GPU without a tuning table of its own runs)."""
    step = as_step(step)
    records = sweep_records(sweep)
    best, fastest = tuning.choose_best(records), min(records, key=lambda r: r["median_ms"])
    base = {key: step.config[key] for key in ("BLOCK_M", "BLOCK_N", "THREAD_M", "THREAD_N")}
    hint, first = step.config.get("MIN_BLOCKS_PER_SM", 0), tile_fields(step.module.SEARCH_SPACE[0])
    k8, k16 = (_find(records, **base, BLOCK_K=k, MIN_BLOCKS_PER_SM=0) for k in (8, 16))
    hinted = _find(records, **base, BLOCK_K=16, MIN_BLOCKS_PER_SM=hint) if hint else None
    gain = k16["median_ms"] / hinted["median_ms"] - 1 if k16 and hinted else None
    out = {"BLOCK_K 8, no hint (ms)": k8 and k8["median_ms"], "BLOCK_K 16, no hint (ms)": k16 and k16["median_ms"],
           "BLOCK_K 8 against 16: beyond the noise band": bool(k8 and k16) and abs(
               k8["median_ms"] / k16["median_ms"] - 1) > tuning.NOISE,
           f"BLOCK_K 16 with MIN_BLOCKS_PER_SM = {hint} (ms)": hinted and hinted["median_ms"],
           "the hint's gain": gain, "the hint's gain: beyond the noise band": gain is not None and gain > tuning.NOISE,
           "fastest": config_label(fastest["config"]), "fastest (ms)": fastest["median_ms"],
           f"within {tuning.NOISE:.0%} of it": sum(r["median_ms"] <= fastest["median_ms"] * (1 + tuning.NOISE)
                                                   for r in records),
           "**the rule picks**": config_label(best["config"]),
           "slowest / fastest": max(r["median_ms"] for r in records) / fastest["median_ms"],
           "this notebook's kernels (the search space's first)": config_label(first),
           "the search space's first is the rule's pick": same_config(first, best["config"])}
    return Findings(out, facts(out))


# -- registers, by compiler ------------------------------------------------------------------------------------------
def compile_without_hint(after: str) -> dict:
    """In a GPU-mode process: ``after``'s fast kernel built without its occupancy hint, as
    :func:`gemm_steps.course.compiled.compile_kernels` reports a kernel (:func:`~.compiled.compiled_entry`)."""
    from gemm_steps.harness.ptx import compile_kernel_ptx
    from gemm_steps.toolkit.tile_config import TileConfig

    step = get_step(after)
    fields = {key: value for key, value in step.config.items() if key in TileConfig.__dataclass_fields__}
    dispatcher, signature = step.module.build(replace(TileConfig(**fields), MIN_BLOCKS_PER_SM=0)).ptx_kernels()[
        f"{after}_fast"]
    return {**compiled_entry(after, compile_kernel_ptx(dispatcher, signature)), "no_hint": True}


def compile_with_registers(before, after) -> dict:
    """The fast kernels of ``before`` and ``after`` (:func:`gemm_steps.course.compiled.compile_with_registers`), plus
    ``after``'s built without its occupancy hint (``<after>_fast_no_hint``), each with ``"local_ptxas"``
    (registers from the ``ptxas`` on this machine). Compiled in a GPU-mode child (no GPU needed), once for the same
    code and compilers."""
    after = as_step(after).name
    out = compile_steps([before, after])
    plain = remembered_in_gpu_mode("gemm_steps.course.lesson_07:compile_without_hint", after, timeout=900)
    out[f"{after}_fast_no_hint"] = {**plain, "local_ptxas": local_ptxas(plain["ptx"])}
    return out


@dataclass(frozen=True)
class HintRegisters:
    """What the occupancy hint does to registers and blocks per SM (:func:`hint_registers`)."""
    numbers: dict  # label → value: the launch bounds, the register cap, per compiler with the hint / without
    same_blocks: bool  # the hint changes no compiler's blocks per SM
    table: MarkdownTable  # ``numbers``


def hint_registers(compiled: dict, after) -> HintRegisters:
    """What the occupancy hint does: the register cap it sets (65,536 / (threads × blocks)), and by each compiler
    here the registers and blocks per SM with the hint and without; ``same_blocks``: the hint changes no block
    count."""
    step = as_step(after)
    hinted, plain = compiled[f"{step.name}_fast"], compiled[f"{step.name}_fast_no_hint"]
    threads, wanted = threads_per_block(step), step.config.get("MIN_BLOCKS_PER_SM", 0)
    out = {"launch_bounds": f"({threads}, {wanted})", "register cap": 65536 // (threads * wanted) if wanted else None}
    same = True
    for label, get in ((hinted.get("ptxas"), lambda e: e.get("registers")),
                       ((hinted.get("local_ptxas") or {}).get("version"),
                        lambda e: (e.get("local_ptxas") or {}).get("registers"))):
        if get(hinted) and get(plain):
            blocks = [blocks_per_sm(get(e), threads, e["shared_bytes"])["blocks"] for e in (hinted, plain)]
            same &= blocks[0] == blocks[1]
            out[f"{label}: registers with the hint / without"] = f"{get(hinted)} / {get(plain)}"
            out[f"{label}: blocks per SM with the hint / without"] = f"{blocks[0]} / {blocks[1]}"
    return HintRegisters(out, same, facts(out))


# -- compile time (deep dive; the compile profiler is gemm_steps/course/compile_profile.py) -------------------------
FIRST_CALL_FILE = results_files.EXPERIMENT_FIRST_CALL_NVIDIA_H100
_READY = re.compile(r"compiling the (\w+) (\w+) kernel.*?ready in ([\d.]+) s", re.S)


def load_first_calls(name: str = FIRST_CALL_FILE) -> tuple[str, list[dict]] | None:
    """The shipped first-call run (``experiments/first_call.py``; a list of records) and its path, or None (said)."""
    path = shipped_file(name)
    return None if path is None else (shown_path(path), json.loads(path.read_text()))


def first_call_table(runs: list[dict], steps: list[str]) -> MarkdownTable:
    """Per step and size of the first-call run: a fresh process's first call with empty caches and with Numba's
    on-disk cache (seconds)."""
    by = {(r["what"], r["n"], r["cache"]): r["first_s"] for r in runs}
    return table([{"what": what, "size": f"{n}³", "first call, empty caches": by.get((what, n, "cold")),
                   "first call, on-disk cache": by.get((what, n, "warm"))}
                  for what, n in dict.fromkeys((r["what"], r["n"]) for r in runs if r["what"] in steps)],
                 {"first call, empty caches": "{:.1f} s", "first call, on-disk cache": "{:.1f} s"})


def first_call(step: str, name: str = FIRST_CALL_FILE) -> dict | None:
    """One step's first call in a fresh process from the shipped first-call run: size, seconds with empty caches
    and with Numba's on-disk cache, the second call (ms), and the kernel it compiled with its compile seconds (from
    the run's own log lines). ``None`` if the file or the step's run is missing."""
    found = load_first_calls(name)
    runs = {r["cache"]: r for r in found[1] if r["what"] == step} if found else {}
    if "cold" not in runs:
        return None
    cold, ready = runs["cold"], _READY.search(runs["cold"].get("stderr", ""))
    return {"file": found[0], "size": f"{cold['n']}³", "first call, empty caches (s)": cold["first_s"],
            "first call, on-disk cache (s)": runs.get("warm", {}).get("first_s"),
            "second call (ms)": cold["second_s"] * 1e3,
            "kernel compiled": ready and ready.group(2), "its compile (s)": ready and float(ready.group(3))}


@dataclass(frozen=True)
class CompileTimes:
    """The older per-step first-call run (:func:`shipped_compile_times`)."""
    table: MarkdownTable  # a row per step: seconds with empty caches (256³, 257³) and with the on-disk cache
    measured: MarkdownTable  # the file, GPU, date and numba-cuda version


def shipped_compile_times(name: str = results_files.COMPILE_TIMES_NVIDIA_H200) -> CompileTimes | None:
    """The older per-step first-call run (``scripts/compile_times.py``): every step in a fresh process at 256³ (fast
    kernel) and 257³ (edge kernel too), then with the cache (``table``); where and when (``measured``)."""
    path = shipped_file(name)
    if path is None:
        return None
    data = json.loads(path.read_text())
    env = data["environment"]
    seconds = {k: "{:.2f} s" for k in ("first call, empty caches", "edge kernel, first 257³ call",
                                       "first call, on-disk cache")}
    return CompileTimes(table([{"step": step, **dict(zip(seconds, (r["cold_s"], r["cold_edge_s"], r["warm_s"])))}
                               for step, r in data["compile_times"].items()], seconds),
                        facts({"file": shown_path(path), "GPU": env["gpu"], "date": env["date"][:10],
                               "numba-cuda": env["numba_cuda"]}))
