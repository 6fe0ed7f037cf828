"""Step 23 with the copy engine rounding A and B to TF32 (tensor maps of type TFLOAT32), as cuBLAS TF32 reads them —
then without B's two rounding instructions a fragment element. Two changes, each timed alone, in one run with
step 21, step 23 and both cuBLAS (issue 36: the TF32 target, the clock under load, the error against cuBLAS's).

Why: experiments/tf32_operand_rounding.py found cuBLAS TF32 reading both operands rounded to nearest (ties to even)
and steps 15–23 reading A truncated (the tensor core drops the low 13 bits of the shared-memory operand) — all of
their 1.6× error against cuBLAS's. cuBLAS's loop has no rounding instruction (4 ``LDS`` an ``HGMMA`` and nothing to
round them: experiments/results/experiment-reference-step-23-nvidia-h200.json) where step 23 spends two on each of
B's fragment elements (``FSETP`` + ``IMAD.IADD``, 8 an ``HGMMA`` of its 34.5 instructions) — so something before its
loop rounds. A copy can: a tensor map of type ``TFLOAT32`` (``mbarrier_ops.tensor_map_2d(…, tf32=True)``) asks the copy
engine to.

The builds (``Config`` fields of step 23):

* ``step_23_float32_copies``: step 23 as it was before this run (float32 maps, B rounded by
  ``rounded_operand_bits``; the run in experiment-tf32-copies-nvidia-h200.json names it ``cluster_stream_k_tma_store``,
  step 23 then);
* ``tf32_copies``: ``TF32_COPIES=True`` — A and B rounded by the copy engine; B's instructions still there (they
  change nothing on a value already TF32). Only the maps change: the accuracy, and what the rounding costs the copy;
* ``tf32_copies_plain_b``: also ``ROUND_B=False`` — B's fragments passed as loaded: 8 instructions fewer an ``HGMMA``
  (step 23 as shipped since).

Shapes: 4096³ and 8192³ (the targets; 8192³ runs at the power limit, where fewer instructions may show as clock),
2048³, 5120×2560×4096 (stream-K splits). Then the probe of experiments/tf32_operand_rounding.py on both new builds.
Prediction: predictions/tf32-copies-before-run.md (written before the run).

``--steps 17 21``: the first change alone on steps 17 and 21 (``TF32_COPIES``, shipped True since this run), each
with float32 maps (``TF32_COPIES=False``, as before) and TFLOAT32 maps, at the shapes above and two ragged products
(A and B copied; B read by its rows mod 4). Prediction: predictions/tf32-copies-steps-17-21-before-run.md.

    python -m experiments.tf32_copies [OUT.json] [--steps 17 21]
    # default experiments/results/experiment-tf32-copies[-steps-17-21]-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (5120, 2560, 4096)]
SHIPPED, COPIES, PLAIN_B = "step_23_float32_copies", "tf32_copies", "tf32_copies_plain_b"
BUILDS = {COPIES: dict(TF32_COPIES=True, ROUND_B=True), PLAIN_B: dict(TF32_COPIES=True, ROUND_B=False)}
BEFORE = dict(TF32_COPIES=False, ROUND_B=True)


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: TFLOPS, median SM clock and error of each entry; each build over step 23 as shipped
    and over cuBLAS TF32; ``tf32_copies_plain_b`` over ``tf32_copies`` (B's instructions alone)."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        t = {name: r.get("tflops") for name, r in rows.items()}
        out[shape] = {"tflops": t,
                      "clock_mhz": {name: r.get("sm_clock_mhz_median") for name, r in rows.items()},
                      "error": {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()},
                      "over_step_23": {name: ratio(t.get(name), t.get(SHIPPED)) for name in BUILDS},
                      "over_cublas_tf32": {name: ratio(t.get(name), t.get("cublas_tf32"))
                                           for name in (SHIPPED, *BUILDS)},
                      "plain_b_over_copies": ratio(t.get(PLAIN_B), t.get(COPIES))}
    return out


#: ``--steps 17 21``: the shapes above and two ragged ones (A and B copied into readable rows; B read by rows mod 4).
STEPS_SIZES = SIZES + [(3001, 2999, 1531), (69, 1001, 700)]


def steps_summary(results: dict) -> dict:
    """Per shape: each entry's TFLOPS and error; per step, the TFLOAT32 maps' speed over the float32 maps', and each
    entry's error over cuBLAS TF32's."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        t = {name: r.get("tflops") for name, r in rows.items()}
        err = {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()}
        out[shape] = {"tflops": t, "error": err,
                      "tf32_over_float32_maps": {step: ratio(t.get(f"{step}_tf32_maps"), t.get(f"{step}_float32_maps"))
                                                 for step in ("step17", "step21")},
                      "error_over_cublas_tf32": {name: ratio(e, err.get("cublas_tf32")) for name, e in err.items()}}
    return out


def main_steps(argv: list[str]) -> None:
    from dataclasses import replace

    from gemm_steps.steps import warp_specialized, warp_specialized_stream_k
    from gemm_steps.toolkit.tuned import default_config

    out = output_path("tf32-copies-steps-17-21", argv[1] if len(argv) > 1 else None)
    entries = []
    for label, number, module in (("step17", 17, warp_specialized), ("step21", 21, warp_specialized_stream_k)):
        config = default_config(module.SEARCH_SPACE)
        for maps, tf32 in (("float32_maps", False), ("tf32_maps", True)):
            built = module.build(replace(module.Config.of(config), TF32_COPIES=tf32))
            entries.append(SimpleNamespace(name=f"{label}_{maps}", number=number, arithmetic="tf32",
                                           launch=built.launch))
    results = run_and_save(entries, STEPS_SIZES, out, "steps 17 and 21 with TFLOAT32 tensor maps against float32 "
                           "maps (experiments/tf32_copies.py --steps 17 21)", steps_summary, repeats=30, width=24)
    for shape, row in results["summary"].items():
        print(shape, {k: round(v, 3) for k, v in row["tf32_over_float32_maps"].items() if v},
              {k: round(v, 2) for k, v in row["error_over_cublas_tf32"].items() if v})
    print(f"wrote {out}")


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/tf32_copies.py")
    if "--steps" in argv:
        main_steps(argv[:argv.index("--steps")] + [a for a in argv[argv.index("--steps") + 1:]
                                                     if a not in ("17", "21")])
        return
    import json
    from dataclasses import replace

    import numpy as np
    from numba import cuda

    import gemm_steps
    from gemm_steps.steps import cluster_stream_k_tma_store as step_23
    from gemm_steps.toolkit.tuned import default_config

    from experiments.tf32_operand_rounding import probe_inputs, read_as

    out = output_path("tf32-copies", argv[1] if len(argv) > 1 else None)
    config = step_23.Config.of(default_config(step_23.SEARCH_SPACE))
    builds = {name: step_23.build(replace(config, **fields)) for name, fields in BUILDS.items()}
    before = step_23.build(replace(config, **BEFORE))
    entries = [gemm_steps.get_step("warp_specialized_stream_k"),
               SimpleNamespace(name=SHIPPED, number=23, arithmetic="tf32", launch=before.launch)]
    entries += [SimpleNamespace(name=name, number=23, arithmetic="tf32", launch=build.launch)
                for name, build in builds.items()]
    results = run_and_save(entries, SIZES, out, "step 23 with TFLOAT32 tensor maps (the copy engine rounds A and B), "
                           "then without B's rounding instructions (experiments/tf32_copies.py)", summary, repeats=30,
                           width=28)
    # The probe: how each new build reads A and B (one product of 1.0 and a probe value per element, at 4096³).
    n = 4096
    probe: dict = {}
    for operand in ("A", "B"):
        d_a, d_b = (cuda.to_device(x) for x in probe_inputs(operand, n))
        for name, build in builds.items():
            d_c = cuda.to_device(np.full((n, n), np.nan, np.float32))
            build.launch(d_a, d_b, d_c)
            cuda.synchronize()
            probe.setdefault(name, {})[operand] = read_as(d_c.copy_to_host(), operand)
            print(f"probe {operand} {name}: {probe[name][operand]}")
    results["probe"] = probe
    out.write_text(json.dumps(results, indent=1) + "\n")
    for shape, row in results["summary"].items():
        print(f"{shape}: " + ", ".join(f"{k} / step 23 {v or float('nan'):.3f}" for k, v in row["over_step_23"].items())
              + "; / cuBLAS TF32 " + ", ".join(f"{v or float('nan'):.3f}" for v in row["over_cublas_tf32"].values())
              + f"; clocks {row['clock_mhz']}; errors {row['error']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
