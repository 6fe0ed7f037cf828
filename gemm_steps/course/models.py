"""The small throughput models the lessons' predictions use, and a figure that sets them against a measurement."""

from __future__ import annotations

from typing import Iterable

from gemm_steps.harness.environment import short_label

from .timings import fp32_peak_tflops

#: Shared-memory banks (4 bytes each) and warp size on every GPU this course targets (Volta to Hopper).
BANKS = 32


def wavefronts(words_per_lane: Iterable[Iterable[int]]) -> int:
    """Shared-memory wavefronts one warp-wide load needs: the most distinct 4-byte words any one bank must serve.

    ``words_per_lane`` gives, for each lane of the warp, the word addresses (indices of floats in the shared array)
    it reads: one for a scalar load, four consecutive ones for a 128-bit load. A bank serves one word per wavefront,
    and a word wanted by several lanes is sent to all of them at once (a broadcast). So 32 lanes reading 32
    neighbouring floats take 1 wavefront, 32 lanes reading one float take 1, and 32 lanes reading floats 32 apart
    (all in one bank) take 32. This is the model NVIDIA documents for bank conflicts; a profiler counts the real ones.
    """
    per_bank: dict[int, set[int]] = {}
    for words in words_per_lane:
        for word in words:
            per_bank.setdefault(word % BANKS, set()).add(word)
    return max(len(words) for words in per_bank.values())


def served(words_per_lane: list, width: int) -> int:
    """Wavefronts of one warp-wide load of ``width`` neighbouring floats per lane, served 32 / ``width`` lanes at a
    time (a quarter-warp for 128-bit loads), each phase at least one wavefront. For a scalar load this is
    :func:`wavefronts`; for a wide one, it is the rule that reproduces the profiler's counts (lessons 5 and 9)."""
    phase = 32 // width
    return sum(wavefronts(words_per_lane[p:p + phase]) for p in range(0, len(words_per_lane), phase))


def sm_rate_tflops(results: dict, per_clock_per_sm: float, flops_each: float = 2) -> float:
    """TFLOPS if every SM of the results' GPU did ``per_clock_per_sm`` operations (FMAs) of ``flops_each`` FLOPs
    per clock at its maximum clock: the ceiling a throughput model puts on a kernel."""
    env = results["environment"]
    return env["sm_count"] * env["sm_clock_max_mhz"] * 1e6 * per_clock_per_sm * flops_each / 1e12


def ceiling_figure(rows: list[tuple[str, float | None, dict[str, float]]], title: str, results: dict):
    """Bars of measured TFLOPS, one per kernel, with each model's ceiling drawn over its bar.

    ``rows``: ``(label, measured TFLOPS or None, {model name: ceiling TFLOPS})``. The lowest ceiling of a bar is
    what its models predict; the bar shows how close the kernel came.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.subplots()
    markers = {}
    styles = ["_", "x", "d", "^"]
    for i, (label, measured, ceilings) in enumerate(rows):
        if measured is not None:
            ax.bar(i, measured, color="tab:blue", width=0.6, label="measured" if i == 0 else None)
            ax.annotate(f"{measured:.1f}", (i, measured / 2), ha="center", va="center", fontsize=9, color="white",
                        fontweight="bold")
        for name, value in ceilings.items():
            style = markers.setdefault(name, styles[len(markers) % len(styles)])
            ax.plot([i], [value], style, color="tab:red" if style == "_" else "k", ms=28 if style == "_" else 9,
                    mew=2.5, label=name if name not in ax.get_legend_handles_labels()[1] else None)
    peak = fp32_peak_tflops(results)
    if peak:
        ax.axhline(peak, color="gray", ls=":", label="FP32 peak (estimate)")
    ax.set_xticks(range(len(rows)), [row[0] for row in rows])
    ax.set(ylabel="TFLOPS", ylim=(0, None), title=f"{title}\n{short_label(results['environment'])}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig
