"""Step 18's fifth stage, one change at a time (issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM). experiments/deeper_ring.py ran
step 18 with five stages and three buffers of A's small parts and found it 0.79–0.84× step 18 — but that build
changed two things: the copies' lead (a fifth stage) and a wait that ties the producer's split of k-tile u to the
consumers' release of k-tile u − 3 (with fewer small buffers than stages, the buffer is reused). Here each alone, in
one run with step 18 and both cuBLAS (experiments/kernels/small_ring.py, the kernel of that run):

* ``ring_4_4``: four stages, four small buffers — step 18's ring in the small-ring kernel (the code that run had:
  does the kernel alone run as step 18?);
* ``ring_4_3``: four stages, three small buffers — the wait alone;
* ``ring_5_3``: five stages, three small buffers — the wait and the stage (deeper_ring's build); over ``ring_4_3`` it
  is the fifth stage alone.

Shapes: 2048³, 4096³, 8192³ and 5120×2560×4096, whole tiles (the kernel has no partial-tile build).

Prediction: predictions/small-ring-before-run.md (committed before this script's first run).

**Historical.** The run (experiment-small-ring-nvidia-h200.json, H200, both cuBLAS in the run) found every ring
slower than step 18: the small-ring kernel with step 18's own ring (``ring_4_4``) 0.87–0.95× (predicted 0.97–1.03:
missed — its few more index instructions a k-tile cost that much; it also explains step 18's low number in
deeper_ring's run), the reuse wait alone 0.91–0.93× (predicted 0.78–0.97: held), the fifth stage alone 0.87–0.89×
(predicted 0.97–1.10: missed; a ring of five also turns the ring's index arithmetic from masks into divisions, not
separated). So the copies' lead is not shown to matter, and step 18 is sensitive to its loops' instruction counts.
The kernel (experiments/kernels/small_ring.py) and its test were removed in the commit after a5641d1; this script runs
at a5641d1 (``git checkout a5641d1``).

    python -m experiments.small_ring [OUT.json]   # default experiments/results/experiment-small-ring-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096)]
SHIPPED = "warp_specialized_3xtf32"
#: The small-ring builds: (stages, small buffers).
RINGS = {"ring_4_4": (4, 4), "ring_4_3": (4, 3), "ring_5_3": (5, 3)}


def builds():
    """Step 18 as shipped and the small-ring kernel's three rings, from step 18's configuration."""
    from dataclasses import fields

    from experiments.kernels import small_ring
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = step18.Config.of(default_config(step18.SEARCH_SPACE))
    same = {f.name: getattr(config, f.name) for f in fields(step18.Config)}
    return {SHIPPED: step18.build(config),
            **{name: small_ring.build(small_ring.Config(**{**same, "STAGES": stages, "SMALL_STAGES": small}))
               for name, (stages, small) in RINGS.items()}}


def summary(results: dict) -> dict:
    """Per shape: every build's TFLOPS, SM clock and error; each ring over step 18; the wait alone (ring_4_3 over
    ring_4_4) and the fifth stage alone (ring_5_3 over ring_4_3)."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        t = {name: r.get("tflops") for name, r in rows.items()}
        out[shape] = {"tflops": t,
                      "clock_mhz": {name: r.get("sm_clock_mhz_median") for name, r in rows.items()},
                      "error": {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()},
                      "over_step_18": {name: ratio(t.get(name), t.get(SHIPPED)) for name in RINGS},
                      "the_wait_alone": ratio(t.get("ring_4_3"), t.get("ring_4_4")),
                      "the_fifth_stage_alone": ratio(t.get("ring_5_3"), t.get("ring_4_3")),
                      "over_cublas_sgemm": {name: ratio(t.get(name), t.get("cublas")) for name in (SHIPPED, *RINGS)}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/small_ring.py")
    out = output_path("small-ring", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name=name, number=18, arithmetic="3xtf32", launch=kernels.launch, config={})
               for name, kernels in builds().items()]
    results = run_and_save(entries, SIZES, out, "step 18's fifth stage one change at a time: the small-ring kernel "
                           "with 4/4, 4/3 and 5/3 stages/small buffers against step 18 (experiments/small_ring.py)",
                           summary, repeats=30, width=28)
    nan = float("nan")
    for shape, row in results["summary"].items():
        print(f"{shape:16s} over step 18: " + ", ".join(f"{name} {row['over_step_18'][name] or nan:.3f}"
                                                         for name in RINGS)
              + f"; the wait alone {row['the_wait_alone'] or nan:.3f}, the fifth stage alone "
                f"{row['the_fifth_stage_alone'] or nan:.3f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
