"""Can steps 12 (TF32) and 13 (3xTF32) issue fewer instructions per HMMA? Variants against the shipped kernels and
cuBLAS SGEMM in one run (issue: tensor cores; targets TF32 ≥ 150 TFLOPS, 3xTF32 ≥ 1.25× cuBLAS SGEMM).

The shipped kernels' SASS (ptxas 13.0 on a CPU, nvdisasm) issues ~767 instructions per warp and k-tile for step 12's
128 HMMA: 128 LDS, 256 for the roundings, and ~190 that recompute the 12 copies' addresses every k-tile in 64-bit
arithmetic (with a division by STAGES). The variants (``experiments/kernels/tensor_cores_vector.py``,
``three_tf32_vector.py``, built for the shipped 128×256×32 tiles; every one launches like the shipped kernels, through
a launch plan):

* ``lean``: copy addresses worked out once, advanced by a k-tile after each copy, 32-bit stage counters;
* ``ldmatrix A``: lean + A's four fragment values of a piece from one ``ldmatrix.x4`` (16 instead of 64 loads of A
  per warp and k-tile, already in the four consecutive registers an HMMA reads);
* ``rounded in shared`` (step 12): lean + each thread rounds its own 16-byte chunks in shared memory before the
  barrier, once per element and k-tile, and fragments go to the mma raw;
* ``vector`` (k and columns permuted: 128-bit fragment reads of A and B, 128-bit C stores): to see what the earlier
  64-bit-pair variant lost to;
* ``pairs`` (step 13): lean + two k-steps (six products) summed by the tensor core per FP32 add.

For each: registers and SASS counts of the fast kernel, the time at 4096³ and 8192³ (``run_benchmark``: CUDA
events, L2 flushed, NaN-poisoned output, sampled error against float64), the shipped kernels timed again last (drift),
a NaN of A reaching its row of C (1024³), the 3xTF32 variants' sampled error at 4096³ on wide-exponent inputs
(each entry × 2^u, u uniform in −20…20) and their accuracy sweep over K = 64 … 16384 at M = N = 512.

Run 2 added: ``rounded late`` (step 12: each thread rounds its own chunks of the next k-tile in shared memory at the
end of an iteration, after its mma, instead of before the barrier), 4 pipeline stages instead of 3, and step 13 on
128×128 tiles (64×32 warp tiles leave registers for ``pairs`` without spills).

Usage, on a GPU from the repository root: python -m experiments.tensor_core_speed OUT.json [--run N] [--no-sweep]

``--profile N …`` instead of OUT.json: one warm-up and one 4096³ launch of variants N … (indices into
``variants()``), for Nsight Compute, e.g.
``ncu -k regex:fast_kernel --launch-skip 0 --section WarpStateStats --section SchedulerStats \
--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio python -m experiments.tensor_core_speed
--profile 0 4``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
from numba import cuda

from experiments.tensor_cores import whole_product_errors
from gemm_steps.harness.bench import run_benchmark, sampled_fp64_error, save
from gemm_steps.harness.cublas import launch_cublas
from gemm_steps.steps import tensor_cores, three_tf32

from experiments.kernels import tensor_cores_vector, three_tf32_vector


class FromHistory:
    """A kernel run 3 timed that is git history now: steps 12 and 13 as they were at 0b35bf2, kept in
    experiments/kernels/ from commit 34dda03 until they were removed (restore one with ``git show
    34dda03:experiments/kernels/tensor_cores_previous.py > experiments/kernels/tensor_cores_previous.py``)."""

    def __init__(self, path: str):
        self.path = path

    def __getattr__(self, name):
        raise SystemExit(f"{self.path} is in git history: `git show 34dda03:{self.path} > {self.path}` restores it "
                         "for --run 3")

CONFIG = tensor_cores.TUNING.kernels().config  # 128×256×32 tiles, 8 warps of 64×64
SQUARE = tensor_cores.SEARCH_SPACE[1]  # 128×128×32 tiles, 8 warps of 64×32


def variants() -> list:
    """(label, step module it is a variant of, TiledKernels), in the order they are timed."""
    tv, t3 = tensor_cores_vector.build, three_tf32_vector.build
    return [("step 12 shipped", tensor_cores, tensor_cores.TUNING.kernels()),
            ("step 12 lean", tensor_cores, tv(CONFIG)),
            ("step 12 lean + ldmatrix A", tensor_cores, tv(CONFIG, matrix_load_a=True)),
            ("step 12 lean + rounded in shared", tensor_cores, tv(CONFIG, round_in_shared=True)),
            ("step 12 lean + ldmatrix A + rounded in shared", tensor_cores,
             tv(CONFIG, round_in_shared=True, matrix_load_a=True)),
            ("step 12 lean + vector (k, columns permuted)", tensor_cores, tv(CONFIG, vector_fragments=True)),
            ("step 12 lean + vector + rounded in shared", tensor_cores,
             tv(CONFIG, vector_fragments=True, round_in_shared=True)),
            ("step 12 lean + rounded late", tensor_cores, tv(CONFIG, round_late=True)),
            ("step 12 lean + ldmatrix A + rounded late", tensor_cores, tv(CONFIG, round_late=True, matrix_load_a=True)),
            ("step 12 lean, 4 stages", tensor_cores, tv(CONFIG, stages=4)),
            ("step 12 lean + ldmatrix A, 4 stages", tensor_cores, tv(CONFIG, matrix_load_a=True, stages=4)),
            ("step 12 lean + ldmatrix A + rounded late, 4 stages", tensor_cores,
             tv(CONFIG, round_late=True, matrix_load_a=True, stages=4)),
            ("step 13 shipped", three_tf32, three_tf32.TUNING.kernels()),
            ("step 13 lean", three_tf32, t3(CONFIG)),
            ("step 13 lean + ldmatrix A", three_tf32, t3(CONFIG, matrix_load_a=True)),
            ("step 13 lean + pairs of k-steps per FADD", three_tf32, t3(CONFIG, flush_pairs=True)),
            ("step 13 lean + vector (k, columns permuted)", three_tf32, t3(CONFIG, vector_fragments=True)),
            ("step 13 lean, 4 stages", three_tf32, t3(CONFIG, stages=4)),
            ("step 13 shipped, 128x128 tiles", three_tf32, three_tf32.build(SQUARE)),
            ("step 13 lean, 128x128 tiles", three_tf32, t3(SQUARE)),
            ("step 13 lean + pairs, 128x128 tiles", three_tf32, t3(SQUARE, flush_pairs=True)),
            ("step 13 lean + ldmatrix A + pairs, 128x128 tiles", three_tf32,
             t3(SQUARE, flush_pairs=True, matrix_load_a=True)),
            ("step 12 before (0b35bf2)", tensor_cores, FromHistory("experiments/kernels/tensor_cores_previous.py")),
            ("step 13 before (0b35bf2)", three_tf32, FromHistory("experiments/kernels/three_tf32_previous.py")),
            ("step 13 lean + k-tile per FADD, 128x128 tiles", three_tf32, t3(SQUARE, flush_steps=4)),
            ("step 13 lean + ldmatrix A + k-tile per FADD, 128x128 tiles", three_tf32,
             t3(SQUARE, flush_steps=4, matrix_load_a=True))]


#: What each run timed (``--run N``): the first run's twelve, then the second's (shipped and lean again, for the
#: same-run comparison, and the variants added after the first run).
#: Run 4: step 13 on 128×128 tiles with a whole k-tile per FADD (+3.0 % in run 3, at the noise bar) against step 13
#: as shipped, forwards and backwards.
#: Run 3, after steps 12 and 13 adopted the lean copies: the steps as they were (0b35bf2) against the steps now
#: ("shipped"), with the best variants and step 13 with a whole k-tile per FADD.
RUNS = {1: [0, 1, 2, 3, 4, 5, 6, 12, 13, 14, 15, 16], 2: [0, 1, 2, 7, 8, 9, 10, 11, 12, 13, 17, 18, 19, 20, 21],
        3: [22, 0, 2, 23, 12, 21, 24, 25],
        4: [12, 24, 25, 21, 0, 2]}
#: Runs that time their list twice, forwards and then backwards, so that no variant always runs before another.
BOTH_ORDERS = {4}


def sass_counts(compiled) -> dict:
    try:
        lines = [line for line in compiled.inspect_sass().splitlines() if "/*" in line and ";" in line]
    except Exception as exc:  # nvdisasm missing: say so
        return {"unavailable": str(exc)}
    mnemonics = []
    for line in lines:
        words = line.split("*/", 1)[1].split()
        words = words[1:] if words and words[0].startswith("@") else words
        mnemonics.append(words[0].split(".")[0] if words else "")
    counts = {"instructions": len(mnemonics)}
    for op in ("HMMA", "LDS", "LDSM", "STS", "FSETP", "FADD", "IMAD", "MOV", "IADD3", "LOP3", "LDL", "STL", "STG"):
        counts[op] = mnemonics.count(op)
    return counts


def nan_check(launch, size=1024) -> dict:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    a[7, 100] = np.float32(np.nan)
    c = cuda.to_device(np.full((size, size), np.nan, dtype=np.float32))
    launch(cuda.to_device(a), cuda.to_device(b), c)
    host = c.copy_to_host()
    rest = np.delete(host, 7, axis=0)
    return {"nan_row_all_nan": bool(np.isnan(host[7]).all()), "other_rows_nan": int(np.isnan(rest).sum())}


def wide_inputs(rng, m, n, k):
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    a = (a * np.exp2(rng.uniform(-20, 20, a.shape))).astype(np.float32)
    b = (b * np.exp2(rng.uniform(-20, 20, b.shape))).astype(np.float32)
    return a, b


def wide_error(launches: dict, size=4096) -> dict:
    a, b = wide_inputs(np.random.default_rng(13), size, size, size)
    a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
    out = {}
    for name, launch in launches.items():
        c = cuda.to_device(np.full((size, size), np.nan, dtype=np.float32))
        launch(a_dev, b_dev, c)
        out[name] = sampled_fp64_error(a, b, c.copy_to_host())
    print("wide exponent, sampled error at 4096³:", json.dumps(out), flush=True)
    return out


def accuracy_sweep(launches: dict) -> list:
    rng = np.random.default_rng(11)
    rows = []
    for inputs in ("standard normal", "wide exponent (x 2^u, u in -20..20)"):
        for k in (64, 1024, 4096, 16384):
            if inputs.startswith("wide"):
                a, b = wide_inputs(rng, 512, 512, k)
            else:
                a = rng.standard_normal((512, k), dtype=np.float32)
                b = rng.standard_normal((k, 512), dtype=np.float32)
            row = {"inputs": inputs, "K": k, **whole_product_errors(launches, a, b)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def profile(indices: list[int], size: int = 4096) -> None:
    """One warm-up and one launch of each chosen variant (indices into ``variants()``), for Nsight Compute."""
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), dtype=np.float32)
    built = variants()
    for index in indices:
        label, _, tiled = built[index]
        print(f"profiling {label} ({tiled.name})", flush=True)
        tiled.launch(a, b, c)  # compile (or load from the disk cache) and warm up
        tiled.launch(a, b, c)
        cuda.synchronize()


def main() -> None:
    if sys.argv[1] == "--profile":
        profile([int(x) for x in sys.argv[2:]])
        return
    path = sys.argv[1]
    run = int(sys.argv[sys.argv.index("--run") + 1]) if "--run" in sys.argv else 1
    entries, kernels, nan = [], {}, {}
    built = [variant for index, variant in enumerate(variants()) if index in RUNS[run]]
    for label, module, tiled in built:
        start = time.perf_counter()
        compiled = tiled.kernels["fast"].compile(tiled.signature("fast"))
        kernels[label] = {"name": tiled.name, "registers": compiled.regs_per_thread,
                          "compile_s": round(time.perf_counter() - start, 1), "sass": sass_counts(compiled)}
        nan[label] = nan_check(tiled.launch)
        print(f"{label:48s} {kernels[label]} {nan[label]}", flush=True)
        entries.append(SimpleNamespace(name=label, number=12 if module is tensor_cores else 13, module=module,
                                       launch=tiled.launch, config=asdict(tiled.config)))
    if run in BOTH_ORDERS:
        entries += [SimpleNamespace(**{**vars(entry), "name": entry.name + " (backwards)"}) for entry in entries[::-1]]
    for label, module, tiled in built:  # the shipped kernels once more, last: how far the timer drifts in a run
        if run not in BOTH_ORDERS and (label.endswith("shipped") or "before" in label):
            entries.append(SimpleNamespace(name=label + " (again)", number=12 if module is tensor_cores else 13,
                                           module=module, launch=tiled.launch, config=asdict(tiled.config)))
    results = run_benchmark(entries, [(4096,) * 3, (8192,) * 3], repeats=20, include_cublas_tf32=True,
                            progress=lambda message: print(message, flush=True))
    three = {"cublas": launch_cublas, **{label: tiled.launch for label, module, tiled in built if module is three_tf32}}
    found = {"kernels": kernels, "nan_in_a": nan, "wide_exponent_4096": wide_error(three)}
    if "--no-sweep" not in sys.argv:
        found["accuracy"] = accuracy_sweep(three)
    results.update(experiment=f"tensor-core speed variants, run {run}", **found)
    save(results, path)
    for r in results["records"]:
        print(f"{r['M']:5d} {r['step']:48s} {r.get('tflops', 0):7.1f} TFLOPS {r.get('pct_of_cublas') or 0:6.1f} % "
              f"error {r.get('sampled_rel_error_fp64', float('nan')):.2e} unwritten {r.get('unwritten')}", flush=True)


if __name__ == "__main__":
    main()
