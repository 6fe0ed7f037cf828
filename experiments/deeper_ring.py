"""Does step 18 keep the tensor pipe busier with a fifth stage in its ring? (issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM;
step 18 ran 2.21× at 4096³ and 2.08× at 8192³ in experiment-take-turns-nvidia-h200.json.)

experiments/step_18_stalls.py found the tensor pipe busy 75 % of step 18's active cycles at 4096³ (step 23: 94 %);
experiments/take_turns.py then showed that the consumers' waits falling together is not why. The same profile has
the producer's warps waiting for a stage's bytes (the full barrier's ``try_wait`` loop: the top stall of the
producer's code, ~23 % of its samples) and the consumers waiting for a split stage (~19 % of the consumer loop's):
the copies land late. Step 18's ring is four stages (A, B and A's small parts: 49 KB each, 197 KB), and the split
holds one of them, so a copy is issued about three consumer k-tiles before the split needs it, where step 23 (no
split, 1,024-cycle k-tiles) keeps up at 94 %.

The change: five stages of A and B, and three buffers of A's small parts instead of one a stage (``Config.STAGES`` 5,
``SMALL_STAGES`` 3: 219 KB), so each copy is issued one consumer k-tile earlier; k-tile u's small parts go to
buffer u % 3, and the split of u first waits until the consumers released k-tile u − 3 (tests/test_deeper_ring.py:
the same bits). The split stays 2 k-tiles behind its copies (``SPLIT_BEHIND`` 2); a third build splits 3 behind
(the copy one more k-tile ahead of the split, the split one less ahead of the consumers).

Timed in one run, both cuBLAS beside them: step 18 as shipped and both builds at 2048³, 4096³, 8192³,
5120×2560×4096 (two slices of K) and 3001×2999×1531 (the partial-tile build, A and B copied). ``--profile``: one
launch of step 18 and of the five-stage build at 4096³ after a warm-up, for Nsight Compute's tensor-pipe metric::

    ncu --profile-from-start off --clock-control none --csv --metrics \\
        sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,\\
gpu__time_duration.sum python -m experiments.deeper_ring --profile

Prediction: predictions/deeper-ring-before-run.md (committed before this script's first run).

**Historical.** The run (experiment-deeper-ring-nvidia-h200.json, H200, both cuBLAS in the run; ncu-deeper-ring-
nvidia-h200.txt) found both five-stage builds slower: 0.79–0.84× step 18 at every shape (split 2 behind: 0.807×,
0.791×, 0.837×, 0.799×, 0.830× at 2048³, 4096³, 8192³, 5120×2560×4096, 3001×2999×1531; split 3 behind within 0.005
of it; predicted 0.98–1.15: every range missed), the same error; the tensor pipe busy 52.5 % of the five-stage build's
active cycles against 66.5 % of step 18's in the same profile (predicted 78–88 %). The build changed two things, not
one: the copies' lead, and a wait that ties the split of k-tile u to the consumers' release of k-tile u − 3 (the
shipped split waits only for its copy) — so the run does not say whether the copies land late. Step 18 as shipped
also ran slower than in the run before (104.0 TFLOPS at 4096³ against 113.3 in experiment-take-turns-nvidia-h200.json,
a fresh machine; this run's step 18 had the SMALL_STAGES code, whose PTX has 13 more instructions; separated by
experiments/small_ring.py: that code alone ran 0.87–0.95× step 18). SMALL_STAGES and its test were removed in the commit after b406c59 (step 18's file as at
e32083b); this script runs at b406c59 (``git checkout b406c59``).

    python -m experiments.deeper_ring [OUT.json]   # default experiments/results/experiment-deeper-ring-<gpu>.json
"""

from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096), (3001, 2999, 1531)]
SHIPPED, DEEPER, DEEPER_3 = ("warp_specialized_3xtf32", "warp_specialized_3xtf32@5_stages",
                             "warp_specialized_3xtf32@5_stages_split_3_behind")
#: The builds' changes to step 18's configuration.
BUILDS = {DEEPER: dict(STAGES=5, SMALL_STAGES=3, SPLIT_BEHIND=2),
          DEEPER_3: dict(STAGES=5, SMALL_STAGES=3, SPLIT_BEHIND=3)}


def builds():
    """Step 18 as shipped and the two five-stage builds, from the step's own configuration."""
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = step18.Config.of(default_config(step18.SEARCH_SPACE))
    return {SHIPPED: step18.build(config),
            **{name: step18.build(replace(config, **fields)) for name, fields in BUILDS.items()}}


def summary(results: dict) -> dict:
    """Per shape: every build's TFLOPS, SM clock and error; each five-stage build's speed over the shipped build's,
    and each over cuBLAS SGEMM."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        t = {name: r.get("tflops") for name, r in rows.items()}
        out[shape] = {"tflops": t,
                      "clock_mhz": {name: r.get("sm_clock_mhz_median") for name, r in rows.items()},
                      "error": {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()},
                      "over_shipped": {name: ratio(t.get(name), t.get(SHIPPED)) for name in BUILDS},
                      "over_cublas_sgemm": {name: ratio(t.get(name), t.get("cublas")) for name in (SHIPPED, *BUILDS)}}
    return out


def profile() -> None:
    import numpy as np
    from numba import cuda

    n = 4096
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    c = cuda.device_array((n, n), dtype=np.float32)
    built = {name: kernels for name, kernels in builds().items() if name != DEEPER_3}
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
    require_gpu("experiments/deeper_ring.py")
    if "--profile" in argv:
        profile()
        return
    out = output_path("deeper-ring", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=kernels.launch, config={})
               for name, kernels in builds().items()]
    results = run_and_save(entries, SIZES, out, "step 18 with five stages and three buffers of A's small parts, the "
                           "split 2 or 3 k-tiles behind, against step 18 as shipped (experiments/deeper_ring.py)",
                           summary, repeats=30, width=48)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = row["over_cublas_sgemm"]
        print(f"{shape:16s} over shipped: " + ", ".join(f"{name.split('@')[1]} {row['over_shipped'][name] or nan:.3f}"
                                                        for name in BUILDS)
              + "; over cuBLAS SGEMM: " + ", ".join(f"{over[name] or nan:.2f}" for name in (SHIPPED, *BUILDS)))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
