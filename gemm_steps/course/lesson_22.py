"""Lesson 22's helpers: step 22 (step 18's 3xTF32 k-tile on step 21's stream-K schedule) against step 18, from the
files the runs wrote — the model per shape, the speed against the prediction, the pace of the persistent loop, the
shape suite and the held-out draw. Numbers and small dataclasses only: the words are the lesson's."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gemm_steps.harness import results_files

from . import timings
from .display import MarkdownTable, table
from . import predictions
from .predictions import Prediction, Verdict
from .timings import load_run, tflops_by_shape

#: experiments/stream_k_3xtf32.py: step 18, step 22, step 22's persistent loop alone, both cuBLAS (its prediction);
#: then ``--pace``: step 18, the persistent loop, and the loop with 56 producer registers; then the build whose flag
#: wait polls as a warp (``toolkit.intrinsics.wait_for_flag``), with step 22's own kernel at every shape beside.
RUNS = (results_files.EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200, results_files.EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200_2,
        results_files.EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200_3, results_files.EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200_4)
#: The shape suite that first timed step 22 (the dispatch table was recorded from it), and the first held-out draw run
#: with step 22 in the table.
SUITE = results_files.SHAPES_NVIDIA_H200_2026_11_29_6
HELD_OUT = results_files.HELD_OUT_NVIDIA_H200_2026_11_29_16
STEP_18, STEP_22 = "warp_specialized_3xtf32", "warp_specialized_3xtf32_stream_k"
#: The records of the runs, with their labels.
KERNELS = {STEP_18: "step 18", STEP_22: "step 22", "warp_specialized_3xtf32_persistent": "persistent loop alone",
           "warp_specialized_3xtf32_persistent_producer56": "persistent loop, 56 producer registers",
           "warp_specialized_3xtf32_stream_k_own": "step 22's own kernel",
           "cublas": "cuBLAS SGEMM"}


def runs() -> list[dict]:
    """The shipped runs of :data:`RUNS`, in order (missing ones left out)."""
    return timings.load_runs(RUNS)


def caption(run: dict) -> str:
    return timings.caption(run)


def suite() -> dict | None:
    return load_run(SUITE)


def held_out() -> dict | None:
    return load_run(HELD_OUT)


SMS = 132  # an H100's or H200's SMs: one block of step 18's tile an SM


# -- the model -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Waves:
    shape: tuple[int, int, int]
    tiles: int  # tiles of 128 × 128
    k_tiles: int
    waves: float  # tiles / SMs: the work, in waves
    step18_waves: int  # what step 18 runs: ceil(tiles / SMs)
    runs_own: bool  # step 22 runs its own kernel (else step 18's build: runs_step_18)

    @property
    def model_gain(self) -> float:
        """Step 18's waves over the waves of work: what a perfect split would gain, before the pace."""
        return self.step18_waves / self.waves


def waves(m: int, n: int, k: int, sms: int = SMS) -> Waves:
    from gemm_steps.steps.warp_specialized_3xtf32_stream_k import runs_step_18

    tiles, k_tiles = math.ceil(m / 128) * math.ceil(n / 128), math.ceil(k / 32)
    return Waves((m, n, k), tiles, k_tiles, tiles / sms, math.ceil(tiles / sms), not runs_step_18(tiles, k_tiles, sms))


def waves_table(shapes) -> MarkdownTable:
    from gemm_steps.steps.warp_specialized_3xtf32_stream_k import PACE_OF_STEP_18, SHORT_TILE_K_TILES

    rows = [{"M×N×K": "×".join(map(str, w.shape)), "tiles": w.tiles, "k-tiles a tile": w.k_tiles,
             "waves of work": w.waves, "step 18 runs": w.step18_waves, "waves saved: gain": w.model_gain,
             "× pace": w.model_gain * PACE_OF_STEP_18,
             f"short tiles (≤ {SHORT_TILE_K_TILES} k-tiles)": "yes" if w.k_tiles <= SHORT_TILE_K_TILES else "no",
             "step 22 runs": "its own kernel" if w.runs_own else "step 18"}
            for w in (waves(*shape) for shape in shapes)]
    return table(rows, {"waves of work": "{:.2f}", "waves saved: gain": "{:.2f}×", "× pace": "{:.2f}×"})


# -- the speed, against the prediction -------------------------------------------------------------------------------
def verdicts(run: dict, prediction: Prediction) -> list[Verdict]:
    """The compared record over its baseline at each predicted shape, against the predicted range, and over cuBLAS
    SGEMM in the same run."""
    return predictions.verdicts(run, prediction, "cublas")


def verdict_table(found: list[Verdict], what: str = "step 22") -> MarkdownTable:
    return predictions.verdict_table(found, what, "step 18", "cuBLAS SGEMM")


def pace_table(run: dict) -> MarkdownTable:
    """Each record over step 18 at each shape of a run (the persistent loops: the pace of step 22's k-tiles)."""
    rows = []
    for shape, t in tflops_by_shape(run).items():
        row = {"M×N×K": shape.replace("x", "×")}
        for name, label in KERNELS.items():
            if name in t and name not in (STEP_18, "cublas"):
                row[f"{label} / step 18"] = t[name] / t[STEP_18]
        rows.append(row)
    return table(rows, {key: "{:.3f}" for row in rows for key in row if key != "M×N×K"})


#: Nsight Compute's reports of one 4096³ launch of step 18 and of step 22's persistent loop (the run of --pace).
PROFILES = {STEP_18: results_files.NCU_STEP_18_NVIDIA_H200_TXT, STEP_22: results_files.NCU_STEP_22_PERSISTENT_NVIDIA_H200_TXT}
#: The report lines the lesson's table shows, and how it names them.
PROFILE_LINES = {"Duration": "duration (ms)", "dram__bytes.sum": "DRAM (MB)", "lts__t_bytes.sum": "L2 (GB)",
                 "smsp__inst_executed.sum": "warp instructions", "Warp Cycles Per Issued Instruction":
                 "cycles an issued instruction", "Issued Warp Per Scheduler": "issued a cycle (per scheduler)",
                 "SM Frequency": "SM clock (GHz)"}


def profile(name: str) -> dict[str, float] | None:
    """The :data:`PROFILE_LINES` values of one report (the first of each), or None where the report is missing."""
    path = results_files.find(PROFILES[name])
    if path is None:
        return None
    found: dict[str, float] = {}
    for line in path.read_text().splitlines():
        for key, label in PROFILE_LINES.items():
            if label not in found and line.strip().startswith(key):
                found[label] = float(line.split()[-1].replace(",", ""))
    return found


def profile_table() -> MarkdownTable | None:
    a, b = profile(STEP_18), profile(STEP_22)
    if a is None or b is None:
        return None
    return table([{"": label, "step 18": a.get(label), "step 22, persistent loop": b.get(label),
                   "step 22 / step 18": b[label] / a[label] if a.get(label) else None} for label in PROFILE_LINES.values()],
                 {"step 18": "{:,.4g}", "step 22, persistent loop": "{:,.4g}", "step 22 / step 18": "{:.3f}"})


# -- the suite --------------------------------------------------------------------------------------------------------
def suite_rows(run: dict) -> list[dict]:
    """Per suite shape: whether step 22 runs its own kernel there, step 22 over step 18 and over cuBLAS SGEMM."""
    rows = []
    for shape, t in tflops_by_shape(run).items():
        if STEP_22 in t and STEP_18 in t and "cublas" in t:
            m, n, k = map(int, shape.split("x"))
            rows.append({"M×N×K": shape.replace("x", "×"), "runs": "own" if waves(m, n, k).runs_own else "step 18",
                         "step 22 / step 18": t[STEP_22] / t[STEP_18], "step 22 / cuBLAS SGEMM": t[STEP_22] / t["cublas"]})
    return rows


def suite_table(rows: list[dict], own_only: bool = False) -> MarkdownTable:
    return table([r for r in rows if r["runs"] == "own" or not own_only],
                 {"step 22 / step 18": "{:.3f}", "step 22 / cuBLAS SGEMM": "{:.2f}"})
