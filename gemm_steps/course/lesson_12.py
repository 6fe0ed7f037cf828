"""Lesson 12's helpers: the course's roofline with every step placed on it.

Each step's block tiling fixes how often it must fetch A and B from DRAM: a block computing a BLOCK_M × BLOCK_N
tile of C reads BLOCK_M + BLOCK_N floats per k for BLOCK_M·BLOCK_N multiply-adds, so with no help from the caches
its intensity is 2·BM·BN / (4·(BM + BN)) = BM·BN / (2·(BM + BN)) FLOP per byte. Steps 1–2 tile nothing (two loads
per multiply-add: 0.25 FLOP/byte). That is the x of each step; its y is its measured TFLOPS.
"""

from __future__ import annotations

import numpy as np

from .. import steps as course_steps
from .timings import datasheet_bandwidth_tbs, fp32_peak_tflops, record, size_label


def tiling_intensity(step) -> float:
    """FLOP per DRAM byte that the step's block tile guarantees with no cache (see the module docstring)."""
    config = step.config or {}
    if "BLOCK_M" not in config:
        return 2 / 8  # one multiply-add (2 FLOP) per two 4-byte loads
    bm, bn = config["BLOCK_M"], config["BLOCK_N"]
    return bm * bn / (2 * (bm + bn))


def roofline_figure(results: dict, size):
    """The FP32 roofline of the results' GPU with every step at its tiling intensity and measured TFLOPS."""
    from matplotlib.figure import Figure

    from ..harness.environment import short_label
    from .plots import step_colour

    peak, bandwidth = fp32_peak_tflops(results), datasheet_bandwidth_tbs(results)
    intensity = np.logspace(-1.2, 2.5, 300)
    fig = Figure(figsize=(9, 5), layout="constrained")
    ax = fig.subplots()
    ax.loglog(intensity, np.minimum(peak, bandwidth * intensity), "k-", label="roofline: min(peak, bandwidth × I)")
    for step in course_steps():
        measured = record(results, step.name, size)
        if measured is None:
            continue
        x = tiling_intensity(step)
        ax.plot(x, measured["tflops"], "o", ms=8, color=step_colour(step.number),
                label=f"{step.number} {step.name}")
        # Steps with the same tile share an x: their numbers go left and right by turns, so none hides another.
        ax.annotate(str(step.number), (x, measured["tflops"]), fontsize=8, xytext=(7 if step.number % 2 else -13, -3),
                    textcoords="offset points")
    cublas = record(results, "cublas", size)
    ax.axhline(cublas["tflops"], color="tab:red", ls="--", lw=1, label=f"cuBLAS at {size_label(size)}")
    ax.set(xlabel="FLOP per DRAM byte that the block tile guarantees (no cache)", ylabel="TFLOPS",
           title=f"Every step on the roofline, at {size_label(size)}\n{short_label(results['environment'])}")
    ax.legend(loc="lower right", fontsize=7, ncols=2)
    return fig
