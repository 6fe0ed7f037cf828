"""Where step 18's time goes at 4096³: the tensor pipe's busy share and the warps' stall samples by SASS instruction,
step 23 and cuBLAS TF32 beside it (issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM; step 18 runs 2.27× at 4096³).

experiments/README.md's row for step 18's builds said what limits it "is not identified (no unit saturated under
ncu)": that profile (ncu-step-18-nvidia-h200.txt) had neither the tensor pipe's metrics nor stall samples by
instruction. This one has both: Nsight Compute's full set on one launch each of step 18, step 23 and cuBLAS TF32 at
4096³ after a warm-up (``scripts/profile_steps.py``), clocks not locked, then its details, raw-metric and SASS source
pages as CSV. The CSVs (~4.5 MB) are summarised into the results file and not kept.

Prediction: predictions/step-18-stalls-before-run.md (committed before the run).

On a GPU (writes the CSVs into DIR)::

    R=$(python scripts/profile_steps.py --kernel-regex warp_specialized_3xtf32 cluster_stream_k_tma_store cublas_tf32)
    ncu --clock-control none --kernel-name "regex:$R" --launch-skip 3 --launch-count 3 --set full --import-source no \\
        -o DIR/p python scripts/profile_steps.py warp_specialized_3xtf32 cluster_stream_k_tma_store cublas_tf32 \\
        --size 4096 --warmup 1
    ncu -i DIR/p.ncu-rep --page raw --csv > DIR/raw.csv
    for k in warp_specialized_3xtf32 cluster_stream_k_tma_store gemm; do
        ncu -i DIR/p.ncu-rep --kernel-name regex:$k --page source --csv --print-source sass > DIR/source-$k.csv; done

Anywhere (reads them)::

    python -m experiments.step_18_stalls DIR [OUT.json]
    # default experiments/results/experiment-step-18-stalls-nvidia-h200.json

Measured (H200, 2026-11-30; worked out after the run, from the file): the tensor pipe was busy 75 % of step 18's
active cycles against 94 % of step 23's and 92 % of cuBLAS TF32's; a quarter of step 18's stall samples sit on one
instruction (38 % of the consumer loop's), ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` — each consumer waiting, once a k-tile, for all twelve of its
``wgmma`` before it adds the fresh sum to ``total`` — where step 23 waits with one group still in flight
(``0x1``) and cuBLAS with two (``0x2``).
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from pathlib import Path

from experiments import output_path

#: The three kernels, in the order they were profiled: the file of each one's SASS source page, and its label.
KERNELS = [("warp_specialized_3xtf32", "step 18"), ("cluster_stream_k_tma_store", "step 23"),
           ("gemm", "cuBLAS TF32")]
#: The raw metrics kept, by what they say.
METRICS = {"duration_ms": "gpu__time_duration.sum",
           "sm_clock_ghz": "sm__cycles_elapsed.avg.per_second",
           "tensor_pipe_active_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
           "tf32_ops_per_cycle_per_sm": "sm__ops_path_tensor_src_tf32_dst_fp32.avg.per_cycle_elapsed",
           "lsu_shared_wavefronts_pct": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
           "gmma_instructions": "smsp__sass_inst_executed_op_shared_gmma.sum"}
TOP = 15  # instructions kept per kernel, by stall samples


def _number(text: str) -> float:
    return float(text.replace(",", "")) if text.strip() else 0.0


def raw_metrics(path: Path) -> list[dict]:
    """:data:`METRICS` of each profiled kernel, in profile order, from the raw page's CSV."""
    rows = list(csv.reader(path.open()))
    header = rows[0]
    return [{key: _number(row[header.index(name)]) for key, name in METRICS.items()} for row in rows[2:]]


def opcode(source: str) -> str:
    """The SASS instruction's opcode with its modifiers (``WARPGROUP.DEPBAR.LE``), without its guard."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


#: Step 18's consumer k-loop at 4096³: its instructions run once a k-tile a consumer warp — 128 k-tiles × 1,024 tiles
#: × 8 warps; the producer's run 524,288 times (4 warps) or fewer, the setup 12,288 (one a warp).
CONSUMER_LOOP_EXECUTIONS = 128 * 1024 * 8


def stalls(path: Path) -> dict:
    """Stall samples of one kernel's SASS source page: the total, by opcode, and the instructions with most; and
    those of the instructions executed :data:`CONSUMER_LOOP_EXECUTIONS` times (step 18's consumer loop)."""
    rows = list(csv.reader(path.open()))
    header, body = rows[1], rows[2:]
    samples, source = header.index("Warp Stall Sampling (All Samples)"), header.index("Source")
    executed = header.index("Instructions Executed")
    total = sum(int(_number(row[samples])) for row in body)
    by_opcode = Counter()
    for row in body:
        by_opcode[opcode(row[source])] += int(_number(row[samples]))
    top = sorted(body, key=lambda row: -_number(row[samples]))[:TOP]
    in_loop = [row for row in body if _number(row[executed]) == CONSUMER_LOOP_EXECUTIONS]
    loop = sum(int(_number(row[samples])) for row in in_loop)
    loop_opcodes = Counter(opcode(row[source]).split(".")[0] for row in in_loop)
    return {"samples": total, "consumer_loop_samples": loop,
            "consumer_loop_instructions": {"count": len(in_loop), "by_opcode": dict(loop_opcodes.most_common())},
            "by_opcode": {op: {"samples": n, "share": n / total} for op, n in by_opcode.most_common(12)},
            "top": [{"sass": row[source].strip(), "samples": int(_number(row[samples])),
                     "share": _number(row[samples]) / total, "executed": int(_number(row[executed]))}
                    for row in top]}


def summarize(folder: Path) -> dict:
    """The results document: per kernel, its metrics and its stall samples; and step 18 against the other two."""
    metrics = raw_metrics(folder / "raw.csv")
    kernels = {label: {**metrics[i], **stalls(folder / f"source-{name}.csv")}
               for i, (name, label) in enumerate(KERNELS)}
    step_18 = kernels["step 18"]
    wait_all = sum(t["samples"] for t in step_18["top"] if t["sass"].startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0"))
    return {"experiment": "where step 18's time goes at 4096³ (experiments/step_18_stalls.py)",
            "environment": {"gpu": "NVIDIA H200", "date": "2026-11-30", "size": 4096,
                            "profiler": "Nsight Compute, --set full, --clock-control none, one launch a kernel "
                                        "after a warm-up launch"},
            "prediction": "predictions/step-18-stalls-before-run.md",
            "kernels": kernels,
            "summary": {"tensor_pipe_active_pct": {k: v["tensor_pipe_active_pct"] for k, v in kernels.items()},
                        "step_18_wait_all_share": wait_all / step_18["samples"],
                        "step_18_wait_all_share_of_consumer_loop": wait_all / step_18["consumer_loop_samples"]}}


def main(argv: list[str] = sys.argv) -> None:
    if len(argv) < 2:
        sys.exit(__doc__)
    out = output_path("step-18-stalls", argv[2] if len(argv) > 2 else None)
    results = summarize(Path(argv[1]))
    out.write_text(json.dumps(results, indent=1) + "\n")
    for label, row in results["kernels"].items():
        print(f"{label:12s} {row['duration_ms']:.3f} ms at {row['sm_clock_ghz']:.3f} GHz, tensor pipe "
              f"{row['tensor_pipe_active_pct']:.1f} % of active cycles; top stall: {row['top'][0]['sass']} "
              f"({100 * row['top'][0]['share']:.1f} % of {row['samples']} samples)")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
