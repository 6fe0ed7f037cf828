"""Lesson 17's helpers (step 17, ``warp_specialized``: a producer warpgroup and ``setmaxnreg``) and its deep dives':
the register hand-off, the verdicts from the course benchmarks, the share of cuBLAS TF32 per clock, what ptxas says of
``setmaxnreg`` assembled as a unit or linked whole, and deep dive 17's experiments — the k-loop with fewer
instructions, a tile's cost besides its k-loop, step 17's and step 20's timelines, one cluster arrival a warpgroup.
Lesson 17 also shows lesson 16's speed table, figure and timeline (:mod:`.lesson_16`). Numbers, tables and figures
only: the words are the lessons'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gemm_steps.harness import results_files

from . import reference
from .display import MarkdownTable, table
from .profiles import profile_sections, report_text
from .targets import HOPPER_SIZES, hopper_tf32_verdict
from .timelines import timeline_medians
from .timings import load_run, record, size_label

# -- the shipped files (experiments/results/) --------------------------------------------------------------------------
#: Step 17's k-loop with fewer instructions, one change a build (experiments/loop_instructions.py), and Nsight Compute
#: on its first and last builds at 4096³.
LOOP_RUN = results_files.EXPERIMENT_LOOP_INSTRUCTIONS_NVIDIA_H200
LOOP_PROFILE = results_files.NCU_LOOP_INSTRUCTIONS_NVIDIA_H200_TXT
#: Step 17, its persistent build and cuBLAS TF32 over K at M = N = 4096 (experiments/per_tile_cost.py).
PER_TILE_RUN = results_files.EXPERIMENT_PER_TILE_COST_NVIDIA_H200
#: Step 17's and step 20's timelines from one run (experiments/timeline.py --only warp_specialized --only
#: cluster_multicast): does multicast make the copies land sooner?
TIMELINE_17_20_RUN = results_files.EXPERIMENT_TIMELINE_WARP_SPECIALIZED_CLUSTER_MULTICAST_NVIDIA_H200
#: … and again after step 20 took one cluster arrival a warpgroup and block (its timeline build too).
TIMELINE_17_20_RUN_2 = results_files.EXPERIMENT_TIMELINE_WARP_SPECIALIZED_CLUSTER_MULTICAST_NVIDIA_H200_2
#: Step 20 with one cluster arrival a warpgroup and block against every warp arriving (experiments/cluster_arrivals.py),
#: two runs; in both, ``cluster_one_arrival`` is the change and ``cluster_multicast`` step 20 as it was.
ARRIVAL_RUNS = (results_files.EXPERIMENT_CLUSTER_ARRIVALS_NVIDIA_H200,
                results_files.EXPERIMENT_CLUSTER_ARRIVALS_NVIDIA_H200_2)
#: Its kernels, as the tables name them.
PER_TILE_KERNELS = [("warp_specialized", "step 17"), ("persistent_specialized", "step 17 persistent"),
                    ("cublas_tf32", "cuBLAS TF32")]
#: The builds of that experiment, each one change more than the one before it, and what each changed.
LOOP_BUILDS = [("before", "step 17 before"), ("ring_32", "+ 32-bit ring arithmetic"),
               ("stage_descriptor", "+ A's descriptor once a stage"), ("rounding_2", "+ rounding in 2 instructions")]
#: The course benchmarks with steps 16–18 beside both cuBLAS: one H100 run and one H200 run.
BENCHMARKS = (results_files.BENCH_NVIDIA_H100_80GB_HBM3_2026_11_26, results_files.BENCH_NVIDIA_H200_2026_11_26_3)


@dataclass(frozen=True)
class BenchmarkVerdict:
    """The Hopper TF32 target in one course benchmark (:func:`benchmark_verdicts`)."""
    gpu: str | None  # the run's GPU
    file: str  # the run's file
    met: bool  # the course's target met at both sizes
    sizes: dict  # size → :func:`~.targets.hopper_tf32_verdict`'s numbers there (a dict: targets.py's)


def benchmark_verdicts(step: str) -> list[BenchmarkVerdict]:
    """:func:`~.targets.hopper_tf32_verdict` of ``step`` in each of :data:`BENCHMARKS` that is shipped, with its GPU
    and file: whether the course's target is met depends on the GPU."""
    out = []
    for name in BENCHMARKS:
        run = load_run(name)
        v = hopper_tf32_verdict(run, step) if run else None
        if v:
            out.append(BenchmarkVerdict(run["environment"].get("gpu"), name, v["met"], v["sizes"]))
    return out


@dataclass(frozen=True)
class ClockShare:
    """A step against cuBLAS TF32 at one size, per clock (:func:`clock_share`)."""
    mhz: float  # the step's SM clock, median
    cublas_tf32_mhz: float  # cuBLAS TF32's
    share: float  # the step's TFLOPS over cuBLAS TF32's
    share_per_clock: float  # the same, per clock
    energy_per_flop_at_equal_power: float  # the step's energy per FLOP over cuBLAS's if both drew the same power


def clock_share(run: dict, step: str, size: tuple = HOPPER_SIZES[1]) -> ClockShare:
    """At ``size``, ``step`` against cuBLAS TF32 in one run: both SM clocks (medians), the share of cuBLAS TF32's
    throughput, the share per clock, and the energy per FLOP of the step over cuBLAS's *if both drew the same
    power* (the board's limit): cuBLAS's TFLOPS over the step's."""
    r, tf32 = record(run, step, size), record(run, "cublas_tf32", size)
    share = r["tflops"] / tf32["tflops"]
    mhz, tf32_mhz = r["sm_clock_mhz_median"], tf32["sm_clock_mhz_median"]
    return ClockShare(mhz, tf32_mhz, share, share * tf32_mhz / mhz, 1 / share)


def clocks_under_load_power(clocks_run: dict, kernel: str = "cublas_tf32", size: int = 8192) -> float | None:
    """The board power (median, W) while ``kernel`` ran back to back at ``size`` in the clocks-under-load run
    (:data:`gemm_steps.course.lesson_16.CLOCKS_RUN`)."""
    got = [r["power_w_median"] for r in clocks_run["records"] if r["kernel"] == kernel and r["size"] == size]
    return got[0] if got else None


@dataclass(frozen=True)
class RegisterBudget:
    """Step 17's register arithmetic (:func:`register_budget`)."""
    registers: int  # the SM's register file
    threads: int  # threads launched a block: the consumers and the producer warpgroup
    at_entry: int  # the cap each thread gets at entry: registers / threads, down to a multiple of 8
    producer: int  # registers a producer thread keeps after setmaxnreg
    consumer: int  # registers a consumer thread gets
    after: int  # registers the block holds after the hand-off


def register_budget(step) -> RegisterBudget:
    """Step 17's register arithmetic: the SM's registers, the threads launched, the cap each thread gets at entry
    (registers / threads, rounded down to a multiple of 8), and the registers the roles keep after the hand-off."""
    from .compiled import SM90_LIMITS

    config = step.module.SEARCH_SPACE[0]
    c = step.module.Config.of(config).check().constants()
    threads = config.THREADS + c["PRODUCER_THREADS"]
    total = SM90_LIMITS["registers"]
    after = c["PRODUCER_THREADS"] * c["PRODUCER_REGISTERS"] + config.THREADS * c["CONSUMER_REGISTERS"]
    return RegisterBudget(total, threads, total // threads // 8 * 8, c["PRODUCER_REGISTERS"], c["CONSUMER_REGISTERS"],
                          after)


# -- setmaxnreg: what ptxas says, assembled as a unit or linked whole (deep dive 17) -----------------------------------
def ptxas_reports(kernel_sources: list[str]) -> dict:
    """For every kernel of each source — ``"step:NAME"`` (the step's fast kernel) or ``"MODULE:FUNCTION"`` (a
    function returning ``{label: (dispatcher, signature)}``) — what ptxas reports assembled as relocatable PTX
    (:func:`gemm_steps.harness.ptx.ptxas_info`) and linked whole with LTO (``kernel_ptxas_info``), and how many
    ``setmaxnreg`` its PTX has. Compiled in the GPU-mode worker (:mod:`gemm_steps.harness.gpu_mode`; no GPU needed),
    once for the same code and compilers (``remembered_in_gpu_mode``: the folders of the modules named are part of its
    key)."""
    import importlib.util

    from gemm_steps.harness.ptx import remembered_in_gpu_mode

    specs = [importlib.util.find_spec(source.split(":")[0]) for source in kernel_sources
             if not source.startswith("step:")]
    folders = {Path(spec.origin).parent for spec in specs if spec and spec.origin}  # a missing one fails in the child
    return remembered_in_gpu_mode("gemm_steps.course.lesson_17:ptxas_reports_here", list(kernel_sources),
                                  also_hash=sorted(folders))


def ptxas_reports_here(kernel_sources: list[str]) -> dict:
    """:func:`ptxas_reports` in this process (GPU mode)."""
    import importlib

    from gemm_steps.harness.ptx import compiled_kernel, ptx_stats, ptxas_info
    from gemm_steps.harness.step import get_step

    out = {}
    for source in kernel_sources:
        where, name = source.split(":")
        if where == "step":
            kernels = {label: entry for label, entry in get_step(name).kernels().items() if label == f"{name}_fast"}
        else:
            kernels = getattr(importlib.import_module(where), name)()
        for label, (dispatcher, signature) in kernels.items():
            kept = compiled_kernel(dispatcher, signature, lto=True)  # one lowering, NVVM twice; once on this machine
            ptx = kept["ptx"]
            out[label] = {"setmaxnreg": ptx_stats(ptx)["setmaxnreg"], "relocatable": ptxas_info(ptx),
                          "lto": kept["lto_ptxas"]}
    return out


def ptxas_table(reports: dict) -> MarkdownTable:
    """One row per kernel of :func:`ptxas_reports`, assembled as a unit and linked whole: registers, spill bytes,
    wgmma serialised, ptxas's performance warnings."""
    return table([{"kernel": f"`{label}`", "setmaxnreg in its PTX": str(r["setmaxnreg"]), "ptxas": str(q.get("ptxas")),
                   "registers": str(q.get("registers")), "spill bytes": str(q.get("spill_bytes")),
                   "wgmma serialised": str(q.get("wgmma_serialized")), "warnings": ", ".join(q.get("warnings") or [])
                   or "—"} for label, r in reports.items() for q in (r["relocatable"], r["lto"])], align="lrlrrrl")


# -- fewer instructions in step 17's k-loop (experiments/loop_instructions.py) -----------------------------------------
_BUILD_HEADER = re.compile(r"^=== build (\w+)", re.M)


@dataclass(frozen=True)
class ProfiledBuild:
    """One build of the loop experiment under Nsight Compute, one launch at 4096³ (:func:`loop_profile`)."""
    instructions: float  # warp instructions executed
    l2_gb: float  # L2 bytes, GB
    uniform: float  # instructions on the uniform pipe
    cycles: float  # SM cycles elapsed (the slowest SM)


def loop_profile() -> dict:
    """Nsight Compute on the ``before`` and ``rounding_2`` builds at 4096³ (:data:`LOOP_PROFILE`): {build:
    :class:`ProfiledBuild`}; {} if the report is not shipped."""
    text = report_text(LOOP_PROFILE)
    if text is None:
        return {}
    return {head.group(1): ProfiledBuild(m["smsp__inst_executed.sum"], m["lts__t_bytes.sum"] / 1e9,
                                         m["sm__inst_executed_pipe_uniform.sum"], m["sm__cycles_elapsed.max"])
            for head, m in profile_sections(text, _BUILD_HEADER)}


def loop_table(run: dict) -> MarkdownTable:
    """Each build of the loop experiment (:data:`LOOP_BUILDS`, each one change more than the one above it) over
    ``before`` and over cuBLAS TF32, at 4096³ and 8192³."""
    rows = []
    for name, label in LOOP_BUILDS:
        row = {"build": label}
        for size in HOPPER_SIZES:
            r, base, tf32 = record(run, name, size), record(run, "before", size), record(run, "cublas_tf32", size)
            row[f"{size_label(size)} / before"] = f"{r['tflops'] / base['tflops']:.3f}"
            row[f"{size_label(size)} / cuBLAS TF32"] = f"{r['tflops'] / tf32['tflops']:.0%}"
        rows.append(row)
    return table(rows)


@dataclass(frozen=True)
class LoopNumbers:
    """What the loop experiment's verdict reads (:func:`loop_numbers`)."""
    instructions_before: float  # warp instructions at 4096³, millions: ``before``
    instructions_after: float  # … ``rounding_2``
    cycles_ratio: float  # ``rounding_2``'s cycles over ``before``'s
    instructions_cublas: float | None  # cuBLAS TF32's, millions, from the reference file (None: none shipped)
    mhz_before: float  # SM clock under load at 8192³: ``before``
    mhz_after: float  # … ``rounding_2``
    mhz_cublas: float  # … cuBLAS TF32
    identical: bool  # every C of every build the same bit for bit as ``before``'s


def loop_numbers(run: dict) -> LoopNumbers:
    """What the loop experiment's verdict reads: warp instructions executed at 4096³ (millions, ``before`` and
    ``rounding_2``), cuBLAS TF32's from the reference file of the same GPU, and the SM clock under load at 8192³."""
    profile, load = loop_profile(), run["under_load_8192"]
    ref = reference.load(run["environment"]["gpu"])
    before, after = profile["before"], profile["rounding_2"]
    return LoopNumbers(
        before.instructions / 1e6, after.instructions / 1e6, after.cycles / before.cycles,
        ref.kernel("cublas_tf32", 4096).warp_instructions_per_flop * 2 * 4096 ** 3 / 1e6 if ref else None,
        load["before"]["sm_clock_mhz"], load["rounding_2"]["sm_clock_mhz"], load["cublas_tf32"]["sm_clock_mhz"],
        all(v for shape in run["bit_identical_to_before"].values() for k, v in shape.items() if k != "nan_elements"))


# -- a tile's cost besides its k-loop (experiments/per_tile_cost.py) ---------------------------------------------------
def per_tile_table(run: dict) -> MarkdownTable:
    """At each K (M = N = 4096): each kernel's TFLOPS and SM clock, and step 17's and its persistent build's TFLOPS
    per clock over cuBLAS TF32's; the last rows, each kernel's line fit (µs, fixed and per 1,024 of K)."""
    per_k, lines = run["summary"]["per_k"], run["summary"]["lines"]
    rows = []
    for k, row in per_k.items():
        entry = {"K": k}
        for name, label in PER_TILE_KERNELS:
            r = row.get(name) or {}
            entry[f"{label} TFLOPS (MHz)"] = f"{r['tflops']:.0f} ({r['mhz']:.0f})" if r else "—"
            if name != "cublas_tf32":
                entry[f"{label} / cuBLAS TF32 per clock"] = f"{r['over_tf32_per_clock']:.3f}" if r else "—"
        rows.append(entry)
    fits = {"K": "line: fixed µs + µs per 1,024 of K"}
    for name, label in PER_TILE_KERNELS:
        line = lines.get(name)
        fits[f"{label} TFLOPS (MHz)"] = f"{line['intercept_us']:.1f} + {line['us_per_1024_k']:.1f}" if line else "—"
        if name != "cublas_tf32":
            fits[f"{label} / cuBLAS TF32 per clock"] = ""
    return table(rows + [fits])


@dataclass(frozen=True)
class PerTileNumbers:
    """What the per-tile experiment's verdict reads (:func:`per_tile_numbers`)."""
    ratio_at: dict  # K → step 17's TFLOPS per clock over cuBLAS TF32's
    fixed_us: dict  # kernel → its line's fixed µs
    per_1024_us: dict  # kernel → its line's µs per 1,024 of K
    loop_pace: float  # cuBLAS TF32's µs per 1,024 of K over step 17's


def per_tile_numbers(run: dict) -> PerTileNumbers:
    """What the verdict reads: step 17's per-clock ratio to cuBLAS TF32 at each K, each kernel's fixed µs and µs per
    1,024 of K, and cuBLAS's µs per 1,024 of K over step 17's (``loop_pace``)."""
    per_k, lines = run["summary"]["per_k"], run["summary"]["lines"]
    ratio_at = {int(k): row["warp_specialized"]["over_tf32_per_clock"] for k, row in per_k.items()}
    return PerTileNumbers(ratio_at, {name: line["intercept_us"] for name, line in lines.items()},
                          {name: line["us_per_1024_k"] for name, line in lines.items()},
                          lines["cublas_tf32"]["us_per_1024_k"] / lines["warp_specialized"]["us_per_1024_k"])


# -- step 17's and step 20's timelines in one run ----------------------------------------------------------------------
#: The medians the comparison shows, per consumer warpgroup: (key, what it is).
TIMELINE_PARTS = [("period", "period (turn to turn)"), ("wait_data", "waits for data"),
                  ("issue", "loads fragments, issues wgmma"), ("wait_previous", "waits for the previous wgmma"),
                  ("rest", "releases the stage, loops"), ("copy", "copies issued → data there (landing)"),
                  ("lead", "copies issued → the warpgroup turns to it (lead)")]


def timeline_compare_table(run: dict) -> MarkdownTable:
    """Median cycles a k-tile of each consumer warpgroup, step 17 and step 20, the two recorded blocks side by side
    (blocks 0 and 1: step 20's first cluster), and step 20 over step 17 (the blocks' mean)."""
    medians = {name: [timeline_medians(run, name, block) for block in (0, 1)]
               for name in ("warp_specialized", "cluster_multicast")}
    rows = []
    for key, label in TIMELINE_PARTS:
        for w in (0, 1):
            row = {"median cycles": f"warpgroup {w}: {label}"}
            values = {}
            for name, step in (("warp_specialized", "step 17"), ("cluster_multicast", "step 20")):
                v = [m["warpgroups"][w][key] for m in medians[name]]
                values[name] = sum(v) / len(v)
                row[f"{step}, blocks 0 / 1"] = f"{v[0]:,.0f} / {v[1]:,.0f}"
            row["step 20 / step 17"] = f"{values['cluster_multicast'] / values['warp_specialized']:.2f}"
            rows.append(row)
    return table(rows)


@dataclass(frozen=True)
class TimelineRatios:
    """Step 20 over step 17, the warpgroups' and blocks' mean of each part of :data:`TIMELINE_PARTS`
    (:func:`timeline_compare`)."""
    period: float  # turn to turn
    wait_data: float  # waits for data
    issue: float  # loads fragments, issues wgmma
    wait_previous: float  # waits for the previous wgmma
    rest: float  # releases the stage, loops
    copy: float  # copies issued → data there (landing)
    lead: float  # copies issued → the warpgroup turns to it


def timeline_compare(run: dict) -> TimelineRatios:
    """Step 20 over step 17, the warpgroups' and blocks' mean of each part of :data:`TIMELINE_PARTS`."""
    medians = {name: [timeline_medians(run, name, block) for block in (0, 1)]
               for name in ("warp_specialized", "cluster_multicast")}
    out = {}
    for key, _ in TIMELINE_PARTS:
        mean = {name: np.mean([m["warpgroups"][w][key] for m in blocks for w in (0, 1)])
                for name, blocks in medians.items()}
        out[key] = mean["cluster_multicast"] / mean["warp_specialized"]
    return TimelineRatios(**out)


# -- one cluster arrival a warpgroup (experiments/cluster_arrivals.py) -------------------------------------------------
def arrivals_table() -> MarkdownTable:
    """Each run of :data:`ARRIVAL_RUNS`: at each shape, one arrival a warpgroup over every warp arriving, and both over
    step 17."""
    rows = []
    for i, name in enumerate(ARRIVAL_RUNS):
        run = load_run(name)
        if run is None:
            continue
        for size in sorted({(r["M"], r["N"], r["K"]) for r in run["records"]}):
            one, every, s17 = (record(run, k, size)["tflops"] for k in ("cluster_one_arrival", "cluster_multicast",
                                                                      "warp_specialized"))
            rows.append({"run": str(i + 1), "shape": size_label(size), "one arrival / every warp": f"{one / every:.3f}",
                         "one arrival / step 17": f"{one / s17:.3f}", "every warp / step 17": f"{every / s17:.3f}"})
    return table(rows)
