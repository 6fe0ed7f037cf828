"""The mbarrier wait with a suspend-time hint (issue 36: TF32 ≥ 100 % of cuBLAS TF32 at 8192³ — step 23 ran 0.98× in the
last benchmark, at a 2.5 % lower SM clock than cuBLAS under the H200's power limit; 3xTF32 ≥ 2.5× cuBLAS SGEMM).

Every Hopper step waits on its mbarriers in ``mbarrier_wait``'s loop: ``try_wait``, and if the phase has not completed,
read ``%globaltimer`` (for the time limit) and try again. Nsight Compute at 4096×4096×4095 counted one such loop of a
step-18 build run 22.9 million times in one launch (experiments/a_rows_mod_4.py --profile): waiting warps keep issuing
instructions, which take issue slots from the warps that compute and burn power — and at 8192³ power sets the clock.
PTX's ``try_wait`` takes an optional ``suspendTimeHint``: the thread may be suspended until the phase completes or
the hint runs out, instead of returning at once; CUTLASS's ``ClusterBarrier::wait`` passes 0x989680 (10 ms). The one
change (``mbarrier_ops.SUSPEND_HINT_NS``, read when a kernel is compiled): every ``try_wait`` of the wait loop with a
hint of 10 ms.

Timed in one run, both cuBLAS beside them, at 4096³ and 8192³: steps 18 and 23 as shipped (no hint) and the same
steps built with the hint (fresh builds, compiled while ``SUSPEND_HINT_NS`` is set; the hint is part of a kept
kernel's key, so neither is the other's cached kernel). The benchmark records each entry's SM clock after its launches.

Prediction: predictions/suspend-hint-before-run.md (committed before this script's first run).

**Historical.** The run (experiment-suspend-hint-nvidia-h200.json) found no gain — 0.994–1.003× at both sizes — and
the hint was taken out of the toolkit again in the commit after 80401b3; this script runs at 80401b3
(``git checkout 80401b3``): ``mbarrier_ops.SUSPEND_HINT_NS`` is gone.

    python -m experiments.suspend_hint [OUT.json]   # default experiments/results/experiment-suspend-hint-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, records_by_shape, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192)]
STEPS = ("warp_specialized_3xtf32", "cluster_stream_k_tma_store")
HINT_NS = 10_000_000


def with_the_hint(launch):
    """``launch`` with ``mbarrier_ops.SUSPEND_HINT_NS`` set to HINT_NS around every call: the build compiles its
    kernels on its first calls, with the hint."""
    from gemm_steps.toolkit import mbarrier_ops

    def hinted(a, b, c, stream=0):
        mbarrier_ops.SUSPEND_HINT_NS = HINT_NS
        try:
            launch(a, b, c, stream)
        finally:
            mbarrier_ops.SUSPEND_HINT_NS = 0
    return hinted


def entries() -> list:
    from gemm_steps.harness import dispatch
    from gemm_steps.harness.step import get_step
    from gemm_steps.toolkit.tuned import default_config

    found = []
    for name in STEPS:
        shipped, module = dispatch.candidate(name), get_step(name).module
        fresh = module.build(default_config(module.SEARCH_SPACE))
        found += [SimpleNamespace(name=name, number=shipped.number, arithmetic=shipped.arithmetic,
                                  launch=shipped.launch, config={}),
                  SimpleNamespace(name=f"{name}@suspend_hint", number=shipped.number, arithmetic=shipped.arithmetic,
                                  launch=with_the_hint(fresh.launch), config={})]
    return found


def summary(results: dict) -> dict:
    """Per size: each step's speed with the hint over without, and both SM clocks (median MHz after its launches);
    each over its cuBLAS (SGEMM for step 18, TF32 for step 23)."""
    out = {}
    for shape, rows in records_by_shape(results).items():
        row = {}
        for name in STEPS:
            plain, hinted = rows.get(name, {}), rows.get(f"{name}@suspend_hint", {})
            baseline = rows.get("cublas" if "3xtf32" in name else "cublas_tf32", {})
            row[name] = {"hint_speed_over_none": ratio(plain.get("median_ms"), hinted.get("median_ms")),
                         "clock_mhz": {"none": plain.get("sm_clock_mhz_median"),
                                       "hint": hinted.get("sm_clock_mhz_median"),
                                       "cublas": baseline.get("sm_clock_mhz_median")},
                         "over_cublas": {"none": ratio(baseline.get("median_ms"), plain.get("median_ms")),
                                         "hint": ratio(baseline.get("median_ms"), hinted.get("median_ms"))}}
        out[shape] = row
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/suspend_hint.py")
    out = output_path("suspend-hint", argv[1] if len(argv) > 1 else None)
    results = run_and_save(entries(), SIZES, out, "steps 18 and 23 with a suspend-time hint in every mbarrier "
                           "try_wait, against none (experiments/suspend_hint.py)", summary, width=40)
    for shape, row in results["summary"].items():
        for name, x in row.items():
            print(f"{shape} {name:28s} hint/none {x['hint_speed_over_none'] or float('nan'):.3f} clocks "
                  f"{x['clock_mhz']} over cuBLAS {x['over_cublas']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
