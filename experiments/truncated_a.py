"""Does step 18 run faster when its producer writes only A's small parts? (issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM.)

Per 128 × 128 k-tile step 18's block moves about 193 KB through shared memory for 1.57 M multiply-adds — the tensor
core's reads of A (96 KB), the copies (33 KB), the producer's split (16 KB read, 32 KB written: A's big parts over the
stage, its small parts beside it) and the consumers' fragments (16 KB): at the tensor core's full rate that is close
to the 128 bytes a clock an SM's shared memory serves (lesson 18's count), and the tensor pipe is busy 75 % of the
time (experiments/step_18_stalls.py). experiments/small_ring.py found step 18 sensitive to a few more instructions in
its loops as well.

The change (``Config.TRUNCATED_A``, one thing): A's big part is the float32 the copy engine left in the stage, which
the tensor core reads truncated to TF32, so the producer no longer writes it; it writes only the small parts, x minus
x truncated (``below_tf32``, exact), scaled by 2^11 as before: 16 KB a k-tile less written, and fewer instructions a
vector. The small parts are up to twice as large as with a rounded big part, so what the tensor core's truncation of
them drops doubles: on the simulator the normwise error was 1.6× the shipped build's, 0.43× SGEMM's model
(tests/test_truncated_a.py checks the FP32 contract's bound).

Timed in one run, both cuBLAS beside them: step 18 and its TRUNCATED_A build at 2048³, 4096³, 8192³,
5120×2560×4096 (two slices of K) and 3001×2999×1531 (the partial-tile build, A and B copied).

Prediction: predictions/truncated-a-before-run.md (committed before this script's first run).

**Historical.** The run (experiment-truncated-a-nvidia-h200.json, H200, both cuBLAS in the run): 1.021–1.035× step 18
at 2048³, 4096³, 5120×2560×4096 and 3001×2999×1531 (predicted 1.00–1.10: held), 0.997× at 8192³ (predicted 1.00–1.08:
missed; it ran at 1,741 MHz against step 18's 1,802 under the power limit — about 1.03× per clock); its error 1.08–1.43×
step 18's (predicted 1.2–2.0: one below), 0.23–0.50× cuBLAS SGEMM's (0.504 at 5120×2560×4096, just over the 0.5 asked).
Not adopted (the rule asked ≥ 1.03× at 4096³ and 8192³). ``Config.TRUNCATED_A`` and its test were removed in the
commit after 4f28378; this script runs at 4f28378 (``git checkout 4f28378``).

    python -m experiments.truncated_a [OUT.json]   # default experiments/results/experiment-truncated-a-<gpu>.json
"""

from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096), (3001, 2999, 1531)]
SHIPPED, TRUNCATED = "warp_specialized_3xtf32", "warp_specialized_3xtf32@truncated_a"


def builds():
    """Step 18 as shipped and its TRUNCATED_A build, from the step's own configuration."""
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = step18.Config.of(default_config(step18.SEARCH_SPACE))
    return {SHIPPED: step18.build(config), TRUNCATED: step18.build(replace(config, TRUNCATED_A=True))}


def summary(results: dict) -> dict:
    """Per shape: both builds' TFLOPS, SM clocks and errors; the truncated build's speed and error over the shipped
    build's, and each over cuBLAS SGEMM (speed) and cuBLAS SGEMM's error."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        t = {name: r.get("tflops") for name, r in rows.items()}
        err = {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()}
        out[shape] = {"tflops": t,
                      "clock_mhz": {name: r.get("sm_clock_mhz_median") for name, r in rows.items()},
                      "error": err,
                      "truncated_over_shipped": ratio(t.get(TRUNCATED), t.get(SHIPPED)),
                      "error_over_shipped": ratio(err.get(TRUNCATED), err.get(SHIPPED)),
                      "error_over_cublas_sgemm": {name: ratio(err.get(name), err.get("cublas"))
                                                  for name in (SHIPPED, TRUNCATED)},
                      "over_cublas_sgemm": {name: ratio(t.get(name), t.get("cublas")) for name in (SHIPPED, TRUNCATED)}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/truncated_a.py")
    out = output_path("truncated-a", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=kernels.launch, config={})
               for name, kernels in builds().items()]
    results = run_and_save(entries, SIZES, out, "step 18 with A's big part truncated by the tensor core, the "
                           "producer writing only the small parts (Config.TRUNCATED_A), against step 18 as shipped "
                           "(experiments/truncated_a.py)", summary, repeats=30, width=36)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = row["over_cublas_sgemm"]
        print(f"{shape:16s} truncated/shipped {row['truncated_over_shipped'] or nan:.3f} (error "
              f"{row['error_over_shipped'] or nan:.2f}×)  over cuBLAS SGEMM: shipped {over[SHIPPED] or nan:.2f}, "
              f"truncated {over[TRUNCATED] or nan:.2f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
