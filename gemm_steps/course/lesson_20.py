"""Lesson 20's helpers: step 20 (a cluster of two blocks, A's tile multicast) against step 17, from the files the
runs wrote — the picture of who loads what and who arrives where, the speed on both GPUs, the counters under Nsight
Compute, the verdict against the prediction. Numbers and small dataclasses only: the words are the lesson's."""

from __future__ import annotations

from dataclasses import dataclass

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .predictions import Prediction, Verdict, ratio_range
from .timings import caption, load_run, load_runs, record, tflops_table

#: The runs of experiments/cluster_arrive_scope.py: step 17, step 20 as shipped, the two variants, both cuBLAS.
RUNS = {"H200": results_files.EXPERIMENT_CLUSTER_ARRIVE_SCOPE_NVIDIA_H200,
        "H100": results_files.EXPERIMENT_CLUSTER_ARRIVE_SCOPE_NVIDIA_H100}
#: scripts/reference_kernels.py on step 17, step 20 and both cuBLAS (H200): launch, counters, SASS, clock under load.
REFERENCE = results_files.EXPERIMENT_REFERENCE_STEPS_17_20_NVIDIA_H200
BIG = ((4096, 4096, 4096), (8192, 8192, 8192))
#: The records of a run, in the order the tables show them, with their labels.
KERNELS = {"cublas_tf32": "cuBLAS TF32", "warp_specialized": "step 17", "cluster_multicast": "step 20",
           "release_cluster": "step 20, arrivals released at cluster scope", "cluster_of_1": "step 20, clusters of 1"}


def runs() -> dict[str, dict]:
    """{GPU: run} for the GPUs whose run is shipped."""
    return {gpu: run for gpu, name in RUNS.items() if (run := load_run(name)) is not None}


def reference() -> dict | None:
    return load_run(REFERENCE)


# -- the picture -------------------------------------------------------------------------------------------------------
def gpu_constants(step) -> dict:
    """The step's compile-time constants at its GPU tile (``SEARCH_SPACE[0]``), with BLOCK_M/N/K."""
    config = step.module.SEARCH_SPACE[0]
    return {**step.module.Config.of(config).check().constants(), "BLOCK_M": config.BLOCK_M, "BLOCK_N": config.BLOCK_N,
            "BLOCK_K": config.BLOCK_K}


def cluster_figure(step):
    """Two blocks of a cluster at one k-tile: rank r loads rows r·A_HALF_ROWS… of the shared A tile and the copy engine
    writes them into both blocks (arrows), each loads its own B tile; below, who arrives on which empty barrier."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, Rectangle

    c = gpu_constants(step)
    half = c["A_HALF_ROWS"]
    fig = Figure(figsize=(12, 5.2), layout="constrained")
    ax = fig.subplots()
    ax.set(xlim=(0, 12), ylim=(0, 7.2), xticks=[], yticks=[])
    ax.set_frame_on(False)
    colours = ("tab:blue", "tab:orange")
    ax.add_patch(Rectangle((4.6, 5.6), 2.8, 1.2, fill=False, lw=1.2))
    ax.text(6.0, 6.95, f"L2 / global memory: A's tile ({c['BLOCK_M']} rows × {c['BLOCK_K']}) is "
                       "read once per cluster", ha="center", fontsize=8)
    for r in range(2):
        ax.add_patch(Rectangle((4.7 + 1.35 * r, 5.7), 1.25, 1.0, color=colours[r], alpha=0.5))
        ax.text(5.32 + 1.35 * r, 6.2, f"rows {r * half}–{(r + 1) * half - 1}\nloaded by rank {r}", ha="center",
                va="center", fontsize=7)
    for b, x0 in enumerate((0.4, 7.0)):
        ax.add_patch(Rectangle((x0, 0.3), 4.6, 4.6, fill=False, lw=1.5))
        ax.text(x0 + 2.3, 4.65, f"block rank {b}: tile (row, {b} + 2j) of C", ha="center", fontsize=9,
                weight="bold")
        for r in range(2):
            ax.add_patch(Rectangle((x0 + 0.2, 3.2 - 0.9 * r), 2.0, 0.8, color=colours[r], alpha=0.5))
            ax.text(x0 + 1.2, 3.6 - 0.9 * r, f"A rows {r * half}–{(r + 1) * half - 1}", ha="center", va="center",
                    fontsize=7)
            ax.add_patch(FancyArrowPatch((5.32 + 1.35 * r, 5.7), (x0 + 1.2, 4.0 - 0.9 * r), arrowstyle="-|>",
                                         mutation_scale=10, color=colours[r], lw=1.2))
        ax.add_patch(Rectangle((x0 + 2.5, 2.3), 1.9, 1.7, color="tab:green", alpha=0.35))
        ax.text(x0 + 3.45, 3.15, "its own B tile\n(no multicast)", ha="center", va="center", fontsize=7)
        ax.text(x0 + 2.3, 1.65, f"full[s]: 1 arrival (own producer) + {c['STAGE_BYTES']:,} bytes\n"
                                f"(half of A from each block, B from itself)", ha="center", fontsize=7)
        ax.text(x0 + 2.3, 0.6, f"empty[s]: {c['CLUSTER'] * c['CONSUMERS']} arrivals — one from each consumer "
                               "warpgroup of both blocks", ha="center", fontsize=7)
    for start, end, bend in (((3.0, 0.3), (9.2, 0.3), -0.2), ((9.6, 0.3), (3.4, 0.3), -0.2)):
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=9, color="tab:red", lw=0.9,
                                     connectionstyle=f"arc3,rad={bend}"))
    ax.set_ylim(-1.0, 7.2)
    ax.text(6.0, -0.9, "a consumer warpgroup frees stage s in both blocks — its warp r arrives on block r's empty[s], "
                       "remotely on the peer's: the peer's producer multicasts into it too", ha="center", fontsize=7,
            color="tab:red")
    return fig


# -- speed ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Speed:
    """One kernel at one size in a run (:func:`speed`)."""
    tflops: float  # its TFLOPS
    of_step17: float  # over step 17's, same run
    of_cublas_tf32: float  # over cuBLAS TF32's, same run
    mhz: float | None  # its SM clock, median of the launches (None: not recorded)


def speed(run: dict, kernel: str, size: tuple) -> Speed:
    """``kernel`` at ``size`` in ``run``, against step 17 and cuBLAS TF32 of the same run."""
    r, s17, tf32 = (record(run, k, size) for k in (kernel, "warp_specialized", "cublas_tf32"))
    return Speed(r["tflops"], r["tflops"] / s17["tflops"], r["tflops"] / tf32["tflops"], r.get("sm_clock_mhz_median"))


def speed_table(run: dict) -> MarkdownTable:
    """TFLOPS (× step 17, share of cuBLAS TF32, median SM clock) of each kernel of a run at 4096³ and 8192³."""
    def cell(r, size):
        q = speed(run, r["step"], size)
        return f"{q.tflops:.1f} ({q.of_step17:.2f}× step 17, {q.of_cublas_tf32:.0%} of cuBLAS TF32, {q.mhz:,.0f} MHz)"

    return tflops_table(run, list(KERNELS.items()), BIG, cell, align="lll")


# -- the verdict ---------------------------------------------------------------------------------------------------------
def verdicts(run: dict, prediction: Prediction) -> list[Verdict]:
    """Step 20 / step 17 in ``run`` at each size, against the predicted range, and step 20 over cuBLAS TF32."""
    out = []
    for size in BIG:
        q = speed(run, "cluster_multicast", size)
        out.append(Verdict("x".join(map(str, size)), q.of_step17, *ratio_range(prediction, size[0]), q.of_cublas_tf32))
    return out


# -- what moved: the counters ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Counters:
    """One kernel at one size in the reference file (:func:`counters`)."""
    kernel: str  # its record's name
    size: int  # the square
    grid: int  # blocks launched
    cluster: int  # blocks a cluster (1: no clusters)
    l2_bytes_per_flop: float  # L2 bytes per FLOP (Nsight Compute)
    dram_bytes_per_flop: float  # DRAM bytes per FLOP
    instructions_per_kflop: float  # warp instructions per 1,000 FLOP
    cycles: int  # the profiled launch's cycles
    mhz_under_load: float  # SM clock while it runs back to back (NVML)
    watts_under_load: float  # board power meanwhile


def counters(ref: dict) -> list[Counters]:
    """Per kernel and size: the launch, L2 and DRAM bytes and warp instructions per FLOP, the profiled launch's cycles
    (Nsight Compute), and the SM clock and board power while it runs back to back (NVML)."""
    out = []
    for kernel in ("cublas_tf32", "warp_specialized", "cluster_multicast"):
        for size, entry in ref["kernels"][kernel].items():
            flop = 2 * int(size) ** 3
            load = ref["under_load"][size][kernel]
            launch, c = entry["launch"], entry["counters"]
            out.append(Counters(kernel, int(size), int(launch["Grid Size"]), int(launch.get("Cluster Size") or 1),
                                c["l2_bytes"] / flop, c["dram_bytes"] / flop, c["instructions"] / flop * 1e3,
                                int(c["cycles"]), float(load["sm_clock_mhz"]), float(load["power_w"])))
    return out


def _counters_by(ref: dict) -> dict:
    """:func:`counters` by (kernel, size)."""
    return {(q.kernel, q.size): q for q in counters(ref)}


def counters_table(ref: dict) -> MarkdownTable:
    rows = [{"kernel": KERNELS[q.kernel], "size": f"{q.size}³", "grid": q.grid, "cluster": q.cluster,
             "L2 bytes / FLOP": q.l2_bytes_per_flop, "DRAM bytes / FLOP": q.dram_bytes_per_flop,
             "warp instructions / kFLOP": q.instructions_per_kflop, "cycles (one launch)": q.cycles,
             "MHz under load": q.mhz_under_load, "W under load": q.watts_under_load} for q in counters(ref)]
    formats = {"L2 bytes / FLOP": "{:.4f}", "DRAM bytes / FLOP": "{:.4f}", "warp instructions / kFLOP": "{:.3f}",
               "MHz under load": "{:,.0f}", "W under load": "{:.0f}"}
    return MarkdownTable(table(rows, formats) + "\n\n" + caption(ref))


def change(ref: dict, field: str, size: int) -> float:
    """Step 20's ``field`` over step 17's at ``size`` (a ratio)."""
    by = _counters_by(ref)
    return getattr(by[("cluster_multicast", size)], field) / getattr(by[("warp_specialized", size)], field)


def multicast_loads(ref: dict, kernel: str = "cluster_multicast", size: str = "4096") -> int:
    """SASS tensor loads in the multicast form (``UTMALDG…MULTICAST``) in a kernel's code."""
    return int(ref["kernels"][kernel][size]["sass"].get("multicast_loads", 0))


def clock_gap(ref: dict, kernel: str, size: int) -> float:
    """A kernel's SM clock under load over cuBLAS TF32's at ``size``, minus 1 (−0.05: 5 % slower)."""
    by = _counters_by(ref)
    return by[(kernel, size)].mhz_under_load / by[("cublas_tf32", size)].mhz_under_load - 1


def over_cublas(ref: dict, field: str, kernel: str, size: int) -> float:
    """A kernel's ``field`` over cuBLAS TF32's at ``size`` (a ratio)."""
    by = _counters_by(ref)
    return getattr(by[(kernel, size)], field) / getattr(by[("cublas_tf32", size)], field)


# -- the TMA-store epilogue, alone (experiments/tma_store_epilogue.py, H200) -------------------------------------------
#: Step 17, step 20 and step 20 with a TMA-store epilogue (experiments/kernels/cluster_multicast_tma_store.py), one run.
TMA_STORE_RUN = results_files.EXPERIMENT_TMA_STORE_EPILOGUE_NVIDIA_H200


def tma_store_run() -> dict | None:
    return load_run(TMA_STORE_RUN)


def tma_store_ratios(run: dict) -> dict[int, float]:
    """{size: the variant's TFLOPS over step 20's} at 4096³ and 8192³."""
    return {s[0]: (record(run, "cluster_multicast_tma_store", s)["tflops"]
                   / record(run, "cluster_multicast", s)["tflops"])
            for s in BIG}


# -- one change from step 17 --------------------------------------------------------------------------------------------
#: Two runs of ``gemm-steps bench --steps 17 20`` after step 20's consumer loop became step 17's as it is now.
LEAN_LOOP_RUNS = (results_files.EXPERIMENT_STEP_20_LEAN_LOOP_NVIDIA_H200,
                  results_files.EXPERIMENT_STEP_20_LEAN_LOOP_NVIDIA_H200_2)


def lean_loop_runs() -> list[dict]:
    return load_runs(LEAN_LOOP_RUNS)


def over_step17(run: dict) -> dict[int, float]:
    """{size: step 20's TFLOPS over step 17's} at 4096³ and 8192³ in one run."""
    return {s[0]: record(run, "cluster_multicast", s)["tflops"] / record(run, "warp_specialized", s)["tflops"]
            for s in BIG}
