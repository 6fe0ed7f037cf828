"""Shapes the copy engine cannot read as they are, on step 17's THREAD_COPIES build — the producer warpgroup's 128
threads copy each stage with 4-byte ``cp.async`` (zeros outside A and B) — against step 17 as it was (A or B copied
into rows the copy engine can read, then its partial build: ``TmaTiles.readable_copy``) and the padded candidate, in
one run with both cuBLAS (issue 37, Deliver 1: "the padded copies (or a ``cp.async`` path) only where they do not
[meet TMA's rule]").

Builds:

* ``warp_specialized``: step 17 as shipped (its THREAD_COPIES build where K or N is not a multiple of 4);
* ``warp_specialized@readable-copy``: the same step without its THREAD_COPIES build (the copy, then the partial
  build);
* ``warp_specialized+padded``: ``matmul``'s padded candidate (whole-tile copies of A, B and C);
* ``warp_specialized@thread-copies``: the THREAD_COPIES build launched on its own — at 4096³, whole tiles the copy
  engine could read, it prices the producer's threads against the copy engine (elsewhere it runs its full tiles and
  leaves the rest to step 15's edge kernel, unsplit: ``forced_over_step_17`` there compares nothing useful).

Shapes: the held-out run's slowest odd-pitch ones (results/held-out-nvidia-h200-2026-11-28-6.json), a compute-bound
odd one, the suite's 3001×2999×1531, two small ones, and 4096³.

Prediction: predictions/thread-copies-before-run.md (written before the first run). Seven H200 runs, one a build
(experiments/results/experiment-thread-copies-nvidia-h200.json, then -2 … -7): the first build computed each copy's
address in 64-bit arithmetic and spilled 5,460 bytes; the second (32-bit indices) waited for its copies, fenced and
arrived; the third arrived with ``cp.async.mbarrier.arrive.noinc`` instead (as fast; racecheck then reported the
consumers' reads of B against the copies), from which ``warp_specialized.copies_by_threads`` was set; the fourth ran
with that policy; the fifth went back to the second's signal, the sixth added a warp barrier before each lane-0
release (racecheck still reported), and the seventh — shipped — has every consumer thread release a stage (racecheck
clean; docs/sanitizer-report.md).

    python -m experiments.thread_copies [OUT.json] [--step warp_specialized_3xtf32]   # step 18's: retired (below)
    # default experiments/results/experiment-thread-copies[-3xtf32]-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(12941, 112, 7341), (103, 1933, 12403), (14744, 453, 9662), (3742, 3390, 7590), (3001, 2999, 1531),
         (6294, 523, 135), (1016, 77, 2605), (4096, 4096, 4096)]
#: The step timed (``--step``: step 18's THREAD_COPIES build the same way, against cuBLAS SGEMM) and its cuBLAS.
STEPS = {"warp_specialized": "cublas_tf32", "warp_specialized_3xtf32": "cublas"}


def names(step: str = "warp_specialized") -> tuple[str, str, str, str]:
    """The four entries' names for ``step``: as shipped, without THREAD_COPIES, padded, THREAD_COPIES alone."""
    return step, f"{step}@readable-copy", f"{step}+padded", f"{step}@thread-copies"


NEW, OLD, PADDED, FORCED = names()


def summary(results: dict) -> dict:
    """Per shape: each build's TFLOPS, the new path over the old, over the padded candidate and over its cuBLAS
    (TF32 for step 17, SGEMM for step 18: the keys say ``cublas_tf32`` for both, as step 17's first runs did), and
    the THREAD_COPIES build alone over the step as shipped."""
    tflops: dict = {}
    step = "warp_specialized"
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
        step = r["step"] if r["step"] in STEPS else step
    new, old, padded, forced = names(step)
    cublas = STEPS[step]
    return {f"{m}x{n}x{k}": {"tflops": by, "new_over_old": ratio(by.get(new), by.get(old)),
                             "new_over_padded": ratio(by.get(new), by.get(padded)),
                             "new_over_cublas_tf32": ratio(by.get(new), by.get(cublas)),
                             "old_over_cublas_tf32": ratio(by.get(old), by.get(cublas)),
                             "forced_over_step_17": ratio(by.get(forced), by.get(new))}
            for (m, n, k), by in tflops.items()}


def builds(step: str = "warp_specialized"):
    """The step without its THREAD_COPIES build, and its THREAD_COPIES build alone (fresh builds of the shipped
    configuration: the step's own stays as it is)."""
    from gemm_steps.harness.step import get_step
    from gemm_steps.toolkit.tuned import default_config

    module = get_step(step).module
    old = module.build(default_config(module.SEARCH_SPACE))
    old.thread_copies = None
    forced = module.build(default_config(module.SEARCH_SPACE)).thread_copies
    return old, forced


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/thread_copies.py")
    import gemm_steps
    from gemm_steps.harness.dispatch import candidate

    args = list(argv[1:])
    step = "warp_specialized"
    if "--step" in args:
        step = args.pop(args.index("--step") + 1)
        args.remove("--step")
    if step == "warp_specialized_3xtf32":
        raise SystemExit("step 18's THREAD_COPIES build was retired on 2026-11-30 (its B_ROWS_MOD_4 build took its "
                         "place); its runs are experiments/results/experiment-thread-copies-3xtf32-*.json. To run "
                         "them again: git checkout d9561ab~1 (experiments/README.md)")
    out = output_path("thread-copies" if step == "warp_specialized" else "thread-copies-3xtf32",
                      args[0] if args else None)
    new, old_name, padded, forced_name = names(step)
    old, forced = builds(step)
    module = gemm_steps.get_step(step)
    entry = lambda name, launch: SimpleNamespace(name=name, number=module.number,  # noqa: E731
                                                 arithmetic=module.arithmetic, launch=launch)
    entries = [entry(new, module.launch), entry(old_name, old.launch), entry(padded, candidate(padded).launch),
               entry(forced_name, forced.launch)]
    results = run_and_save(entries, SIZES, out, f"{step}'s THREAD_COPIES build (the producer's threads copy with "
                           "4-byte cp.async) against its readable copies and the padded candidate "
                           "(experiments/thread_copies.py)", summary, width=42)
    for shape, row in results["summary"].items():
        print(shape, {key: (None if value is None else round(value, 3)) for key, value in row.items()
                      if key != "tflops"})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
