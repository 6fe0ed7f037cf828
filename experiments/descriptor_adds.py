"""Does step 18 run faster with fewer instructions making its consumers' wgmma descriptors? (issue 36: 3xTF32 ≥ 2.5×
cuBLAS SGEMM.)

experiments/step_18_stalls.py counted step 18's consumer loop at 279 SASS instructions a warp a k-tile, ~85 of them on
the uniform datapath, most of it making the twelve ``wgmma``'s descriptors of A's big and small parts; and
experiments/small_ring.py found a few more index instructions in the loops costing the step 5–13 %. The change
(``Config.DESCRIPTOR_ADDS``, one thing): a stage's two descriptors are encoded once a k-tile and k-step s's made by
adding 2·s (its 32 bytes in the descriptor's 16-byte units) — the same descriptors (tests/test_descriptor_adds.py:
the same bits), 18 fewer PTX instructions a k-tile (6 and.b64, 6 or.b64, 6 shr.u64).

Timed in one run, both cuBLAS beside them: step 18 and its DESCRIPTOR_ADDS build at 2048³, 4096³, 8192³,
5120×2560×4096 (two slices of K) and 3001×2999×1531 (the partial-tile build, A and B copied).

Prediction: predictions/descriptor-adds-before-run.md (committed before this script's first run).

**Historical.** The run (experiment-descriptor-adds-nvidia-h200.json, H200, both cuBLAS in the run): 1.049× step 18 at
2048³, 1.014× at 4096³, 1.009× at 8192³, 1.007× and 1.005× at the other two (every range held), the same error. Not
adopted (the rule asked ≥ 1.02× at 4096³ and 8192³; below 3 % a single run does not settle it). ``Config.DESCRIPTOR_ADDS``
and its test were removed in the commit after 1fa1eaa; this script runs at 1fa1eaa (``git checkout 1fa1eaa``).

    python -m experiments.descriptor_adds [OUT.json]   # default experiments/results/experiment-descriptor-adds-<gpu>.json
"""

from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096), (3001, 2999, 1531)]
SHIPPED, ADDS = "warp_specialized_3xtf32", "warp_specialized_3xtf32@descriptor_adds"


def builds():
    """Step 18 as shipped and its DESCRIPTOR_ADDS build, from the step's own configuration."""
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = step18.Config.of(default_config(step18.SEARCH_SPACE))
    return {SHIPPED: step18.build(config), ADDS: step18.build(replace(config, DESCRIPTOR_ADDS=True))}


def summary(results: dict) -> dict:
    """Per shape: both builds' TFLOPS, SM clocks and errors; the new build's speed and error over the shipped build's,
    and each over cuBLAS SGEMM (speed) and cuBLAS SGEMM's error."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        t = {name: r.get("tflops") for name, r in rows.items()}
        err = {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()}
        out[shape] = {"tflops": t,
                      "clock_mhz": {name: r.get("sm_clock_mhz_median") for name, r in rows.items()},
                      "error": err,
                      "adds_over_shipped": ratio(t.get(ADDS), t.get(SHIPPED)),
                      "error_over_shipped": ratio(err.get(ADDS), err.get(SHIPPED)),
                      "error_over_cublas_sgemm": {name: ratio(err.get(name), err.get("cublas"))
                                                  for name in (SHIPPED, ADDS)},
                      "over_cublas_sgemm": {name: ratio(t.get(name), t.get("cublas")) for name in (SHIPPED, ADDS)}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/descriptor_adds.py")
    out = output_path("descriptor-adds", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=kernels.launch, config={})
               for name, kernels in builds().items()]
    results = run_and_save(entries, SIZES, out, "step 18 with its consumers' A descriptors made by adds "
                           "(Config.DESCRIPTOR_ADDS), against step 18 as shipped (experiments/descriptor_adds.py)",
                           summary, repeats=30, width=40)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = row["over_cublas_sgemm"]
        print(f"{shape:16s} adds/shipped {row['adds_over_shipped'] or nan:.3f} (error "
              f"{row['error_over_shipped'] or nan:.2f}×)  over cuBLAS SGEMM: shipped {over[SHIPPED] or nan:.2f}, "
              f"adds {over[ADDS] or nan:.2f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
