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

    python -m experiments.thread_copies [OUT.json]   # default experiments/results/experiment-thread-copies-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(12941, 112, 7341), (103, 1933, 12403), (14744, 453, 9662), (3742, 3390, 7590), (3001, 2999, 1531),
         (6294, 523, 135), (1016, 77, 2605), (4096, 4096, 4096)]
NEW, OLD, PADDED, FORCED = ("warp_specialized", "warp_specialized@readable-copy", "warp_specialized+padded",
                            "warp_specialized@thread-copies")


def summary(results: dict) -> dict:
    """Per shape: each build's TFLOPS, the new path over the old, over the padded candidate and over cuBLAS TF32,
    and the forced THREAD_COPIES build over step 17."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    return {f"{m}x{n}x{k}": {"tflops": by, "new_over_old": ratio(by.get(NEW), by.get(OLD)),
                             "new_over_padded": ratio(by.get(NEW), by.get(PADDED)),
                             "new_over_cublas_tf32": ratio(by.get(NEW), by.get("cublas_tf32")),
                             "old_over_cublas_tf32": ratio(by.get(OLD), by.get("cublas_tf32")),
                             "forced_over_step_17": ratio(by.get(FORCED), by.get(NEW))}
            for (m, n, k), by in tflops.items()}


def builds():
    """Step 17 without its THREAD_COPIES build, and its THREAD_COPIES build alone (fresh builds of the shipped
    configuration: the step's own stays as it is)."""
    from gemm_steps.steps import warp_specialized
    from gemm_steps.toolkit.tuned import default_config

    old = warp_specialized.build(default_config(warp_specialized.SEARCH_SPACE))
    old.thread_copies = None
    forced = warp_specialized.build(default_config(warp_specialized.SEARCH_SPACE)).thread_copies
    return old, forced


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/thread_copies.py")
    import gemm_steps
    from gemm_steps.harness.dispatch import candidate

    out = output_path("thread-copies", argv[1] if len(argv) > 1 else None)
    old, forced = builds()
    entry = lambda name, launch: SimpleNamespace(name=name, number=17, arithmetic="tf32", launch=launch)  # noqa: E731
    entries = [entry(NEW, gemm_steps.get_step(NEW).launch), entry(OLD, old.launch),
               entry(PADDED, candidate(PADDED).launch), entry(FORCED, forced.launch)]
    results = run_and_save(entries, SIZES, out, "step 17's THREAD_COPIES build (the producer's threads copy with "
                           "4-byte cp.async) against its readable copies and the padded candidate "
                           "(experiments/thread_copies.py)", summary, width=34)
    for shape, row in results["summary"].items():
        print(shape, {key: (None if value is None else round(value, 3)) for key, value in row.items()
                      if key != "tflops"})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
