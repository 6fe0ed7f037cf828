"""Lesson 23's helpers: step 23 (step 21 on clusters of two, A's tile multicast, C stored by the copy engine, A and B
rounded by the copy engine) — the one-change experiments it was built from (experiments/cluster_stream_k.py: the
cluster, then the TMA store; experiments/tf32_copies.py: the rounding copies), its benchmarks and shape suite beside
step 21 and both cuBLAS, each against the prediction written before it.
Numbers and small dataclasses only: the words are the lesson's."""

from __future__ import annotations

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .predictions import Prediction, range_text, ratio_range, where
from . import timings
from .timings import load_run, load_runs, record

#: The whole-wave squares (the course benchmark's largest sizes).
BIG = ((4096, 4096, 4096), (8192, 8192, 8192))


# -- the two experiments: step 21 on clusters of two, then its TMA store (experiments/cluster_stream_k.py, H200) -----
#: Two runs of step 17, step 20, step 21, step 21 on clusters of two (``cluster_stream_k``) and both cuBLAS.
CLUSTER_STREAM_K_RUNS = (results_files.EXPERIMENT_CLUSTER_STREAM_K_NVIDIA_H200,
                         results_files.EXPERIMENT_CLUSTER_STREAM_K_NVIDIA_H200_2)
#: The whole-wave squares and two shapes where stream-K splits (whole tiles in whole pairs, a part-empty last wave).
CLUSTER_STREAM_K_SHAPES = (*BIG, (5120, 2560, 4096), (2304, 4096, 8192))


def caption(run: dict) -> str:
    """Where a run's numbers come from: its file, GPU and date (``timings.caption``)."""
    return timings.caption(run)


def cluster_stream_k_runs() -> list[dict]:
    return load_runs(CLUSTER_STREAM_K_RUNS)


def _shape_key(shape: tuple[int, int, int]) -> str:
    """The key a prediction's ranges use: ``"4096"`` for a square, ``"MxNxK"`` otherwise."""
    m, n, k = shape
    return str(m) if m == n == k else f"{m}x{n}x{k}"


def cluster_stream_k_table(runs: list[dict], prediction: Prediction) -> MarkdownTable:
    """Per shape: the predicted range of the variant over step 21, the ratio in each run, and the variant and step 21
    over cuBLAS TF32, and their median SM clocks while timed (run 1)."""
    rows = []
    for shape in CLUSTER_STREAM_K_SHAPES:
        low, high = ratio_range(prediction, _shape_key(shape))
        row = {"shape": "×".join(map(str, shape)), "predicted": range_text(low, high)}
        for i, run in enumerate(runs, 1):
            row[f"run {i}"] = (record(run, "cluster_stream_k", shape)["tflops"]
                               / record(run, "warp_specialized_stream_k", shape)["tflops"])
        first = runs[0]
        cublas = record(first, "cublas_tf32", shape)
        for name, label in (("cluster_stream_k", "variant"), ("warp_specialized_stream_k", "step 21")):
            row[f"{label} / cuBLAS TF32"] = record(first, name, shape)["tflops"] / cublas["tflops"]
        row["clock MHz (variant, step 21, cuBLAS TF32)"] = ", ".join(
            str(round(record(first, name, shape)["sm_clock_mhz_median"]))
            for name in ("cluster_stream_k", "warp_specialized_stream_k", "cublas_tf32"))
        rows.append(row)
    return table(rows, {key: "{:.3f}" for key in rows[0] if key.startswith("run") or "/" in key})


#: Two runs of the same with the variant's TMA-store build beside it (``cluster_stream_k_tma_store``).
TMA_STORE_PERSISTENT_RUNS = (results_files.EXPERIMENT_CLUSTER_STREAM_K_TMA_STORE_NVIDIA_H200,
                             results_files.EXPERIMENT_CLUSTER_STREAM_K_TMA_STORE_NVIDIA_H200_2)


def tma_store_persistent_runs() -> list[dict]:
    return load_runs(TMA_STORE_PERSISTENT_RUNS)


def tma_store_persistent_table(runs: list[dict], prediction: Prediction) -> MarkdownTable:
    """Per shape: the predicted range of the TMA-store build over the plain variant, the ratio in each run, and in
    each run the TMA-store build over step 21 and over cuBLAS TF32."""
    rows = []
    for shape in CLUSTER_STREAM_K_SHAPES:
        low, high = ratio_range(prediction, _shape_key(shape))
        row = {"shape": "×".join(map(str, shape)), "predicted": range_text(low, high)}
        for label, over in (("", "cluster_stream_k"), (" / step 21", "warp_specialized_stream_k"),
                            (" / cuBLAS TF32", "cublas_tf32")):
            for i, run in enumerate(runs, 1):
                row[f"run {i}{label}"] = (record(run, "cluster_stream_k_tma_store", shape)["tflops"]
                                          / record(run, over, shape)["tflops"])
        rows.append(row)
    return table(rows, {key: "{:.3f}" for key in rows[0] if key.startswith("run")})


# -- step 23 in the course benchmark and the shape suite (H200) ----------------------------------------------------
#: The first course benchmark with step 23 (every step, 512–8192 squares, both cuBLAS; H200) …
BENCH = results_files.BENCH_NVIDIA_H200_2026_11_29_2
#: … and the first shape suite with it (recorded as the H200's dispatch table).
SUITE = results_files.SHAPES_NVIDIA_H200_2026_11_29_8
STEP_21, STEP_23 = "warp_specialized_stream_k", "cluster_stream_k_tma_store"


def bench() -> dict | None:
    return load_run(BENCH)


def suite() -> dict | None:
    return load_run(SUITE)


def bench_table(run: dict, prediction: Prediction) -> MarkdownTable:
    """Per square: step 23 over step 21 with its predicted range, step 23 over cuBLAS TF32 with its range (4096³ and
    8192³ only), and the three kernels' median SM clocks while timed."""
    rows = []
    for size in (512, 1024, 2048, 4096, 8192):
        ours = record(run, STEP_23, size)
        low, high = ratio_range(prediction, size)
        row = {"size": f"{size}³", "predicted / step 21": range_text(low, high),
               "step 23 / step 21": ours["tflops"] / record(run, STEP_21, size)["tflops"]}
        cublas = prediction.predicted["over_cublas_tf32"].get(str(size))
        row["predicted / cuBLAS TF32"] = f"{cublas[0]:.2f}–{cublas[1]:.2f}" if cublas else "—"
        row["step 23 / cuBLAS TF32"] = ours["tflops"] / record(run, "cublas_tf32", size)["tflops"]
        row["clock MHz (step 23, step 21, cuBLAS TF32)"] = ", ".join(
            str(round(record(run, name, size)["sm_clock_mhz_median"])) for name in (STEP_23, STEP_21, "cublas_tf32"))
        rows.append(row)
    return table(rows, {"step 23 / step 21": "{:.3f}", "step 23 / cuBLAS TF32": "{:.3f}"})


def suite_rows(run: dict, prediction: Prediction) -> list[dict]:
    """Per shape the prediction names (its classes in order): the predicted range of step 23 over step 21, the ratio,
    whether it is inside, and step 23 over cuBLAS TF32."""
    rows = []
    for key, (low, high) in prediction.predicted["ratio_by_shape"].items():
        shape = tuple(int(x) for x in key.split("x"))
        ratio = record(run, STEP_23, shape)["tflops"] / record(run, STEP_21, shape)["tflops"]
        rows.append({"shape": "×".join(map(str, shape)), "predicted": range_text(low, high),
                     "step 23 / step 21": ratio, "against the range": where(ratio, low, high),
                     "step 23 / cuBLAS TF32": record(run, STEP_23, shape)["tflops"]
                     / record(run, "cublas_tf32", shape)["tflops"]})
    return rows


def suite_table(rows: list[dict]) -> MarkdownTable:
    return table(rows, {"step 23 / step 21": "{:.3f}", "step 23 / cuBLAS TF32": "{:.2f}"})


# -- step 23 under Nsight Compute beside step 21 and cuBLAS TF32 (scripts/reference_kernels.py, H200) -------------------
#: One launch of each under Nsight Compute (launch, SASS, counters) and each back to back for 3 s (clock, power).
REFERENCE = results_files.EXPERIMENT_REFERENCE_STEP_23_NVIDIA_H200
REFERENCE_KERNELS = {"cublas_tf32": "cuBLAS TF32", STEP_21: "step 21", STEP_23: "step 23"}


def reference() -> dict | None:
    return load_run(REFERENCE)


def reference_rows(run: dict, size: int) -> list[dict]:
    """Per kernel at ``size``³: its launch, warp instructions per GFLOP and L2 bytes per FLOP of one launch (and cycles
    of that launch, under Nsight Compute's fixed clock), and back to back its SM clock, board power and energy per
    FLOP over cuBLAS TF32's."""
    flops = 2 * size ** 3
    load = run["under_load"][str(size)]
    joules = {name: load[name]["power_w"] / load[name]["tflops_back_to_back"] for name in REFERENCE_KERNELS}
    rows = []
    for name, label in REFERENCE_KERNELS.items():
        entry, launch = run["kernels"][name][str(size)], run["kernels"][name][str(size)]["launch"]
        counters = entry["counters"]
        rows.append({"kernel": label,
                     "launch": f"grid {launch['Grid Size']}, {launch['Block Size']} threads, "
                               + (f"clusters of {launch['Cluster Size']}" if int(launch.get("Cluster Size") or 0) > 1
                                  else "no cluster")
                               + f", {launch['Registers Per Thread [register/thread]']} registers",
                     "k instructions / GFLOP": counters["instructions"] / flops * 1e6,
                     "L2 bytes / FLOP": counters["l2_bytes"] / flops,
                     "cycles (one launch)": counters["cycles"],
                     "clock MHz under load": load[name]["sm_clock_mhz"], "power W": load[name]["power_w"],
                     "energy / FLOP over cuBLAS TF32": joules[name] / joules["cublas_tf32"]})
    return rows


def reference_table(rows: list[dict]) -> MarkdownTable:
    return table(rows, {"k instructions / GFLOP": "{:.0f}", "L2 bytes / FLOP": "{:.4f}", "cycles (one launch)": "{:,}",
                        "power W": "{:.0f}", "energy / FLOP over cuBLAS TF32": "{:.3f}"})


# -- step 22's 3xTF32 kernel on clusters of two (experiments/cluster_3xtf32.py at 525e52b, H200) ------------------
CLUSTER_3XTF32 = results_files.EXPERIMENT_CLUSTER_3XTF32_NVIDIA_H200


def cluster_3xtf32_ratios() -> dict[str, dict[str, float]] | None:
    """Per shape ``"MxNxK"``: the variant over step 22's own kernel, and step 22's own kernel over step 18 (what step
    22 hands the squares to), from the run's summary and records."""
    run = load_run(CLUSTER_3XTF32)
    if run is None:
        return None
    out = {}
    for shape, row in run["summary"].items():
        size = tuple(int(x) for x in shape.split("x"))
        out[shape] = {"variant / step 22's kernel": row["variant_over_own_kernel"],
                      "step 22's kernel / step 18": record(run, "step_22_own_kernel", size)["tflops"]
                      / record(run, "warp_specialized_3xtf32", size)["tflops"]}
    return out


# -- the third change: copies that round to TF32 (experiments/tf32_operand_rounding.py, tf32_copies.py; H200) --------
#: How each kernel reads its float32 operands (one 4096³ call each on probe values), and its error on normal inputs …
OPERAND_ROUNDING = results_files.EXPERIMENT_TF32_OPERAND_ROUNDING_NVIDIA_H200
#: … step 23 with TFLOAT32 tensor maps, then without B's rounding instructions (one run, step 21 and both cuBLAS) …
TF32_COPIES = results_files.EXPERIMENT_TF32_COPIES_NVIDIA_H200
#: … and the course benchmark with step 23 so built.
BENCH_TF32_COPIES = results_files.BENCH_NVIDIA_H200_2026_11_29_3
PROBED = {"cublas_tf32": "cuBLAS TF32", "tensor_cores": "step 12 (`cvt.rna` on both)",
          "warpgroup_tf32": "step 15", "warp_specialized": "step 17", "warp_specialized_stream_k": "step 21",
          "cluster_stream_k_tma_store": "step 23 with float32 copies"}


def operand_rounding() -> dict | None:
    return load_run(OPERAND_ROUNDING)


def read_as(probe: dict) -> str:
    """What a kernel did to one operand, from the probe's names for 1 + 3·2⁻¹² (truncated or rounded) and for the tie
    1 + 2⁻¹¹ (which way a tie went)."""
    value = next(v for key, v in probe.items() if "1.0007324" in key and "-" not in key)
    tie = next(v for key, v in probe.items() if "1.0004883" in key and "-" not in key)
    if value == "nearest":
        return "rounded, ties to even" if "ties even" in tie else "rounded, ties away"
    return value


def operand_rounding_table(run: dict) -> MarkdownTable:
    """Per kernel: how it reads A and B, and its relative error against float64 on standard-normal 4096³ inputs."""
    probes = run["probes"]
    rows = [{"kernel": label, "A read": read_as(probes["A"][name]), "B read": read_as(probes["B"][name]),
             "error at 4096³": probes["error"][name]["relative_error"]} for name, label in PROBED.items()]
    return table(rows, {"error at 4096³": "{:.2e}"})


def tf32_copies_run() -> dict | None:
    return load_run(TF32_COPIES)


def tf32_copies_table(run: dict, maps: Prediction, plain_b: Prediction) -> MarkdownTable:
    """Per shape: the TFLOAT32 maps over step 23 as it was, then B passed as loaded over the maps (each against its
    predicted range), the two together over cuBLAS TF32, and the errors and median clocks (as it was, now, cuBLAS)."""
    rows = []
    for shape, row in run["summary"].items():
        m, n, k = (int(x) for x in shape.split("x"))
        key = str(m) if m == n == k else shape
        label = f"{m}³" if m == n == k else shape.replace("x", "×")
        first, second = row["over_step_23"]["tf32_copies"], row["plain_b_over_copies"]
        before, now, cublas = "cluster_stream_k_tma_store", "tf32_copies_plain_b", "cublas_tf32"
        rows.append({"shape": label,
                     "TFLOAT32 maps / float32": first,
                     "maps predicted": f"{range_text(*ratio_range(maps, key))}: {where(first, *ratio_range(maps, key))}",
                     "then B as loaded": second,
                     "B predicted": f"{range_text(*ratio_range(plain_b, key))}: "
                                   f"{where(second, *ratio_range(plain_b, key))}",
                     "both / cuBLAS TF32": row["over_cublas_tf32"][now],
                     "error (as it was, now, cuBLAS)": ", ".join(f"{row['error'][x]:.2e}" for x in (before, now, cublas)),
                     "clock MHz (as it was, now, cuBLAS)": ", ".join(str(round(row["clock_mhz"][x]))
                                                                      for x in (before, now, cublas))})
    return table(rows, {"TFLOAT32 maps / float32": "{:.3f}", "then B as loaded": "{:.3f}", "both / cuBLAS TF32": "{:.3f}"})


def bench_tf32_copies() -> dict | None:
    return load_run(BENCH_TF32_COPIES)
