"""What Nsight Compute says about each step: the shipped reports, read into numbers the lessons can show.

``experiments/results/ncu-steps-<gpu>/ncu-<step>.txt`` are Nsight Compute's text reports of one 2048³ launch of
each step and of cuBLAS, made by ``scripts/profile_steps.sh`` (the exact command is in
``scripts/profile_steps.py``, the one Nsight Compute driver). They are shipped, so a lesson reads the same without a GPU. Nsight Compute locks
the SM clock to its base frequency while profiling (1.59 GHz on the H100 here, against 1.98 GHz in the benchmark),
so its durations are longer than the benchmark's; ratios between steps and the percentages hold.

The quantities the lessons use:

* **Duration** of the kernel;
* **L1/TEX throughput %** — how busy the SM's L1 cache / shared-memory unit is, in its busiest sub-unit: near 100 %
  the kernel waits on L1 *wavefronts* (passes of data through the unit; a warp's load that touches 32 different
  32-byte sectors takes many more of them than one that touches 4);
* **DRAM throughput %** — how much of the memory bandwidth is used;
* **Compute (SM) throughput %** — how busy the busiest SM pipeline (FMA, load/store, …) or the issue logic is;
* **issue rate** — warp instructions issued per cycle per scheduler (each SM has 4 schedulers, each can issue 1);
* **registers per thread** and **achieved occupancy** (resident warps as a share of the 64 an SM can hold);
* the **top stall reasons** — what a warp was waiting for between two of its instructions, with their shares.

It is also the one reader of Nsight Compute's text format for every lesson helper: :func:`read_metrics` (name →
value and unit), :func:`report_metrics` (name → value), :func:`kernel_sections` (one part per profiled kernel),
:func:`base_units` and :func:`prefixed_metric` (the ``[label] metric unit value`` lines some experiments print);
:func:`report_text` (a shipped report by file name) and :func:`profile_sections` (the parts of a report that an
experiment's own header lines start); :func:`per_warp_k_step` (a report's shared-memory counts per warp and k-step, for
the wavefront models).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..harness import results_files

#: The shipped reports (one folder per GPU).
REPORTS = results_files.NCU_STEPS_NVIDIA_H100
#: How they were made (one line per step; see scripts/profile_steps.py for the metric list).
COMMAND = ('ncu --kernel-name regex:"<kernel>" --launch-count 1 --section SpeedOfLight --section '
           'MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section LaunchStats '
           '--section Occupancy --metrics … python scripts/profile_steps.py <step> --size 2048')

#: One metric of a report: four spaces, the name, two or more spaces, the unit (if any), the value.
_ROW = re.compile(r"^\s{4}(\S.*?\S)\s{2,}(\S+(?:/\S+)?)?\s+([\d,]+(?:\.\d+)?)\s*$")
#: A line ``[label]  metric  unit  value`` (experiments that print several kernels' metrics, one per line).
_PREFIXED = re.compile(r"^\[(.+?)\]\s+(\S+)\s+(\S+)\s+([\d,]+(?:\.\d+)?)\s*$")
#: The line that opens one profiled kernel's part of a report: two spaces, the kernel, its launch, ``Context …``.
_KERNEL = re.compile(r"^  (\S.*?), Context \d+.*$", re.M)
_STALL = re.compile(r"spends ([\d.]+) cycles being stalled (.+?)\. .*?represents about ([\d.]+)% of the total",
                    re.S)
#: Units in bytes, seconds and hertz (Nsight Compute's sizes are powers of 1000); others (%, inst, cycle) as printed.
_UNITS = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6,
          "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0, "hz": 1.0, "khz": 1e3, "mhz": 1e6,
          "ghz": 1e9}


def read_metrics(text: str) -> dict[str, tuple[float, str]]:
    """Every metric of an Nsight Compute text report (or of one kernel's part of it): name → (value, unit). The first
    value of a name counts (Speed of Light comes before the sections that repeat a metric)."""
    metrics: dict[str, tuple[float, str]] = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match and match.group(1) not in metrics:
            metrics[match.group(1)] = (float(match.group(3).replace(",", "")), match.group(2) or "")
    return metrics


def report_metrics(text: str) -> dict[str, float]:
    """:func:`read_metrics` without the units."""
    return {name: value for name, (value, _) in read_metrics(text).items()}


def base_units(value: float, unit: str) -> float:
    """A value in bytes, seconds or hertz where ``unit`` is one of those scaled; otherwise as printed."""
    return value * _UNITS.get(unit.split("/")[0].lower(), 1)


def kernel_sections(text: str) -> list[tuple[str, str]]:
    """(kernel, its part of the report) for each profiled kernel, in order; ``kernel`` as Nsight names it
    (``module::function`` for a Numba kernel), without its template arguments and launch."""
    starts = list(_KERNEL.finditer(text))
    return [(match.group(1).split("(")[0].split("[")[0].strip(), text[match.start():end.start() if end else len(text)])
            for match, end in zip(starts, starts[1:] + [None])]


def report_text(name: str) -> str | None:
    """The text of a shipped Nsight Compute report, by its file name (a constant of
    :mod:`~gemm_steps.harness.results_files`); None if it is not shipped."""
    path = results_files.find(name)
    return path.read_text() if path else None


def profile_sections(text: str, header: re.Pattern) -> list[tuple[re.Match, dict]]:
    """The sections of an Nsight Compute text that ``header`` (a line pattern) starts: (the header's match, the
    section's metrics in base units: bytes, seconds, hertz)."""
    heads = list(header.finditer(text))
    return [(head, {name: base_units(value, unit) for name, (value, unit)
                    in read_metrics(text[head.end():nxt.start() if nxt else len(text)]).items()})
            for head, nxt in zip(heads, heads[1:] + [None])]


def prefixed_metric(text: str, label: str, name: str) -> float | None:
    """Metric ``name`` of kernel ``label`` in a file of lines ``[label]  metric  unit  value``."""
    for line in text.splitlines():
        match = _PREFIXED.match(line)
        if match and match.group(1) == label and match.group(2) == name:
            return float(match.group(4).replace(",", ""))
    return None


@dataclass
class Profile:
    step: str
    kernel: str
    path: Path
    metrics: dict[str, tuple[float, str]] = field(default_factory=dict)
    stalls: list[tuple[str, float, float]] = field(default_factory=list)  # (reason, cycles, % of all)

    def value(self, name: str) -> float | None:
        found = self.metrics.get(name)
        return None if found is None else found[0]

    def bytes(self, name: str) -> float | None:
        """A size metric in bytes (Nsight Compute reports them in byte, Kbyte, Mbyte: powers of 1000)."""
        found = self.metrics.get(name)
        return None if found is None else base_units(*found)

    @property
    def duration_ms(self) -> float | None:
        found = self.metrics.get("Duration")
        return None if found is None else base_units(*found) * 1e3


#: Nsight's wording → what it means for the reader.
_STALL_NAMES = {"the micro scheduler to select the warp to issue":
                "ready, but another warp was picked (\"not selected\": the scheduler is busy)"}


def _short_stall(text: str) -> str:
    text = " ".join(text.split())
    for nsight, meaning in _STALL_NAMES.items():
        if text.endswith(nsight):
            return meaning
    text = re.sub(r"^(waiting )?(for|on) (the )?", "", text)
    return text.replace(" to be not full", " full").replace("(local, global, surface, texture) ", "")


def load(step: str, folder: str = REPORTS) -> Profile | None:
    """The shipped report of ``step`` (a step name or ``"cublas"``), or None if there is none."""
    path = results_files.find(results_files.ncu_step_report(step, folder))
    if path is None:
        return None
    text = path.read_text()
    kernels = kernel_sections(text)
    profile = Profile(step, kernels[0][0] if kernels else "?", path, read_metrics(text))
    for cycles, reason, share in _STALL.findall(text):
        profile.stalls.append((_short_stall(reason), float(cycles), float(share)))
    profile.stalls.sort(key=lambda stall: -stall[2])
    return profile


def per_warp_k_step(step: str, fmas: int, folder: str = REPORTS) -> dict | None:
    """The shipped report of ``step`` per warp and k-step (``fmas``: one warp's FMAs in a k-step, so the warps'
    k-steps are its thread-level FFMAs over ``fmas``): shared-memory wavefronts and bank conflicts, with ``k_steps``
    and the report (``profile``); ``None`` if there is none."""
    p = load(step, folder)
    if p is None:
        return None
    k_steps = p.value("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") / fmas
    return {"profile": p, "k_steps": k_steps,
            "wavefronts": p.value("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") / k_steps,
            "conflicts": p.value("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum") / k_steps}


def table(steps: list[str], folder: str = REPORTS) -> str:
    """A Markdown table of the reports of ``steps`` (missing reports are left out, and say so)."""

    header = ("| kernel | duration (ms) | L1/TEX busy | DRAM busy | SM busy | issue rate | registers | "
              "occupancy | top stall (share of a warp's cycles) |\n|:--|--:|--:|--:|--:|--:|--:|--:|:--|")
    rows, missing = [], []
    for step in steps:
        profile = load(step, folder)
        if profile is None:
            missing.append(step)
            continue

        def pct(name):
            value = profile.value(name)
            return "—" if value is None else f"{value:.0f} %"

        stall = profile.stalls[0] if profile.stalls else None
        rows.append(
            f"| {'cuBLAS' if step == 'cublas' else step} | {profile.duration_ms:.2f} | {pct('L1/TEX Cache Throughput')} | "
            f"{pct('DRAM Throughput')} | {pct('Compute (SM) Throughput')} | "
            f"{profile.value('Issued Warp Per Scheduler'):.2f} | {profile.value('Registers Per Thread'):.0f} | "
            f"{pct('Achieved Occupancy')} | "
            + (f"{stall[0]} ({stall[2]:.0f} %)" if stall else "—") + " |")
    note = f"\n\n(no shipped report for {', '.join(missing)})" if missing else ""
    return header + "\n" + "\n".join(rows) + note


def show(*steps: str, folder: str = REPORTS) -> None:
    """Show the table of these steps' reports, where they are, and the command that made them."""
    from .display import say

    first = load(steps[0], folder)
    if first is None:
        say(f"No shipped Nsight Compute report for {steps[0]} (expected in experiments/results/{folder}/).")
        return
    clock = first.value("SM Frequency")
    say(table(list(steps), folder) + "\n\n"
        f"*Nsight Compute, one 2048³ launch each, SM clock locked at {clock:.2f} GHz while profiling; reports in "
        f"`{results_files.display_path(first.path.parent)}/`, made with `{COMMAND}` "
        "(`scripts/profile_steps.sh` runs them all).*")
