"""Do step 18's consumers keep the tensor pipe busier when they take turns issuing a k-tile's products? (issue 36:
3xTF32 ≥ 2.5× cuBLAS SGEMM; step 18 runs 2.27× at 4096³.)

experiments/step_18_stalls.py found the tensor pipe busy 75 % of step 18's active cycles (step 23: 94 %) and a quarter
of its stall samples on ``WARPGROUP.DEPBAR.LE gsb0, 0x0``: each consumer waits, once a k-tile, for all twelve of its
``wgmma`` before it adds the fresh sum to ``total``. Both consumers wait for the same stage's ready barrier, so they
tend to issue together and wait together, and while both wait the pipe has nothing queued.

The change (``Config.TAKE_TURNS``, one thing): consumer 1 issues k-tile u's products only after consumer 0 has issued
them, and consumer 0 issues k-tile u + 1's only after consumer 1 has issued u's (two named barriers, step 19's
device at the k-tile instead of the tile). Then one consumer's products are queued behind the other's: while it waits
for its own and adds them, the other's run. Each thread's arithmetic is untouched, so C is the same bits
(tests/test_take_turns.py).

Timed in one run, both cuBLAS beside them: step 18 as shipped and its TAKE_TURNS build at 2048³, 4096³, 8192³,
5120×2560×4096 (two slices of K) and 3001×2999×1531 (the partial-tile build, A and B copied). ``--profile``: one
launch of each at 4096³ after a warm-up, between ``cuda.profile_start`` and ``profile_stop``, for Nsight Compute's
tensor-pipe metric::

    ncu --profile-from-start off --clock-control none --csv --metrics \\
        sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,\\
gpu__time_duration.sum python -m experiments.take_turns --profile

Prediction: predictions/take-turns-before-run.md (committed before this script's first run).

**Historical.** The run (experiment-take-turns-nvidia-h200.json, H200, both cuBLAS in the run; ncu-take-turns-
nvidia-h200.txt) found no gain: the turns ran 1.033× step 18 at 2048³, 0.992× at 4096³, 0.990× at 8192³, 0.987× at
5120×2560×4096 and 0.970× at 3001×2999×1531 (predicted 1.00–1.20: held at 2048³ only), at the same error, and the
tensor pipe was busy 74.0 % of the turns' active cycles against 75.1 % of step 18's in the same profile (predicted
83–93 %). So the two consumers' waits falling together is not what leaves the pipe idle. ``Config.TAKE_TURNS`` and
its test were removed in the commit after 84056f2; this script runs at 84056f2 (``git checkout 84056f2``).

    python -m experiments.take_turns [OUT.json]   # default experiments/results/experiment-take-turns-<gpu>.json
"""

from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096), (3001, 2999, 1531)]
SHIPPED, TURNS = "warp_specialized_3xtf32", "warp_specialized_3xtf32@take_turns"


def builds():
    """Step 18 as shipped and its TAKE_TURNS build, from the step's own configuration."""
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = step18.Config.of(default_config(step18.SEARCH_SPACE))
    return {SHIPPED: step18.build(config), TURNS: step18.build(replace(config, TAKE_TURNS=True))}


def summary(results: dict) -> dict:
    """Per shape: both builds' TFLOPS, SM clocks and errors; the turns' speed over the shipped build's, and each over
    cuBLAS SGEMM."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        t = {name: r.get("tflops") for name, r in rows.items()}
        out[shape] = {"tflops": t,
                      "clock_mhz": {name: r.get("sm_clock_mhz_median") for name, r in rows.items()},
                      "error": {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()},
                      "turns_over_shipped": ratio(t.get(TURNS), t.get(SHIPPED)),
                      "over_cublas_sgemm": {name: ratio(t.get(name), t.get("cublas")) for name in (SHIPPED, TURNS)}}
    return out


def profile() -> None:
    import numpy as np
    from numba import cuda

    n = 4096
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    c = cuda.device_array((n, n), dtype=np.float32)
    built = builds()
    for kernels in built.values():  # warm-up: compiles
        kernels.launch(a, b, c)
    cuda.synchronize()
    cuda.profile_start()
    for kernels in built.values():
        kernels.launch(a, b, c)
    cuda.synchronize()
    cuda.profile_stop()
    print("profiled", ", ".join(built))


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/take_turns.py")
    if "--profile" in argv:
        profile()
        return
    out = output_path("take-turns", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=kernels.launch, config={})
               for name, kernels in builds().items()]
    results = run_and_save(entries, SIZES, out, "step 18's consumers taking turns issuing a k-tile's products "
                           "(Config.TAKE_TURNS) against step 18 as shipped (experiments/take_turns.py)", summary,
                           repeats=30, width=36)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = row["over_cublas_sgemm"]
        print(f"{shape:16s} turns/shipped {row['turns_over_shipped'] or nan:.3f}  over cuBLAS SGEMM: shipped "
              f"{over[SHIPPED] or nan:.2f}, turns {over[TURNS] or nan:.2f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
