"""A fair ping-pong: step 19's schedule with step 17's work per consumer, beside step 17, its persistent form, step 19
and both cuBLAS in one run (issue 36, Deliver 4).

    python -m experiments.pingpong_fair [OUT.json]   # default: experiments/results/experiment-pingpong-fair-<gpu>.json

Step 19 (gemm_steps/steps/pingpong.py) changed two things at once from step 17: the schedule (persistent, each
consumer warpgroup owns whole tiles in turn, main loops ordered by named barriers) and the tile per consumer (128×128,
two m64n128k8 a k-step: twice step 17's B-fragment loads per multiply-add), and ran at 0.59–0.61× step 17. This run
separates the two. Builds, at 4096³ and 8192³ (20 repeats, as experiments/pingpong_bench.py):

1. ``warp_specialized`` — step 17 as shipped (256×128 tiles shared by two consumers, one block per tile, 4 stages);
2. ``persistent_specialized`` — step 17 persistent, 4 stages (experiments/kernels/persistent_specialized.py);
3. ``pingpong_wide_4`` — step 19's schedule with each consumer on a whole 256×64 tile, one m64n256k8 a k-step,
   4 stages (experiments/kernels/pingpong_wide.py): the same tile work per consumer, stages and registers
   (40 / 232) as 2;
4. ``pingpong_wide_max`` — the same with as many stages as fit a block's shared memory (5 stages of 41,984 bytes);
5. ``pingpong`` — step 19 as shipped (128×128 a consumer, 4 stages);
6. ``pingpong_6`` — step 19 with 6 stages, the most that fit.

Records: ``experiment-pingpong-fair-nvidia-h200.json`` (step 19's ring in 64-bit arithmetic) and ``…-2.json`` (in
32-bit: ``ring_place``) were made when step 19 shipped 6 stages: there ``pingpong`` is the 6-stage build and
``pingpong_4`` the 4-stage one, and the pairs were named after them; those two runs moved step 19 to 4 stages.

What each pair isolates:

* 2 vs 3 — **the schedule alone**: the same work per consumer warpgroup (256 rows × 64 columns, one m64n256k8 a
  k-step, 128 accumulators, 32 fragment registers), the same persistent grid, ring of 4 stages and register split;
  only who owns a tile (both consumers share it / each owns its own in turn, ordered by named barriers) differs.
  (Their stages differ in bytes, not count: 2's B box is 136 floats wide for the shared 128-column tile, 3's 72.)
* 3 vs 5 — **the tile per consumer under ping-pong**: 256×64 (one n256 wgmma) against 128×128 (two n128 wgmma and
  twice the B fragments per multiply-add), at 4 stages each; 4 vs 6 at the most stages each tile fits (5 and 6).
* 6 vs 5 — **the stage count** of step 19 (6 against 4); 4 vs 3 the same for the wide tile (5 against 4).
* 1 vs 2 — persistence alone (measured before: experiments/persistent_specialized_bench.py).

Prediction: predictions/pingpong-fair-before-run.md (written before the run).

Measured (two H200 runs, experiment-pingpong-fair-nvidia-h200.json and -2.json; Nsight Compute in
experiment-pingpong-fair-ncu-nvidia-h200.json): the schedule alone 0.63 / 0.68 and 0.62 / 0.65 of step 17
persistent at 4096³ / 8192³, the wide ping-pong asking 1.44× the L2 bytes per FLOP and taking 1.44× the cycles at
the same L2 rate; lesson 19 reads both runs.

The run's ratios are stored with it (``summary``: at each shape every build's TFLOPS, its ratio over
persistent_specialized's, over step 17's and over cuBLAS TF32's, and the pairs above as named ratios) and printed;
``builds`` records each build's tile, stages and registers.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192)]
#: The builds compared, in the docstring's order; the first two and cuBLAS TF32 are the baselines.
BUILDS = ["warp_specialized", "persistent_specialized", "pingpong_wide_4", "pingpong_wide_max", "pingpong",
          "pingpong_6"]
BASELINES = ["persistent_specialized", "warp_specialized", "cublas_tf32"]
#: The pairs of the docstring: name → (build, the build it is divided by).
PAIRS = {"schedule": ("pingpong_wide_4", "persistent_specialized"),
         "tile_per_consumer": ("pingpong", "pingpong_wide_4"),
         "tile_per_consumer_most_stages": ("pingpong_6", "pingpong_wide_max"),
         "stages_step_19": ("pingpong_6", "pingpong"),
         "stages_wide": ("pingpong_wide_max", "pingpong_wide_4"),
         "persistence": ("persistent_specialized", "warp_specialized")}


def builds() -> dict:
    """Every build but the two shipped steps', by name: ``{name: TmaTiles}`` (step 19 with 6 stages built from the
    shipped step's own configuration, its STAGES replaced)."""
    import gemm_steps
    from gemm_steps.steps import pingpong

    from experiments.kernels import persistent_specialized, pingpong_wide

    return {"persistent_specialized": persistent_specialized.build(),
            "pingpong_wide_4": pingpong_wide.build(stages=4, name="pingpong_wide_4"),
            "pingpong_wide_max": pingpong_wide.build(name="pingpong_wide_max"),
            "pingpong_6": pingpong.build(gemm_steps.get_step("pingpong").tiled.config, stages=6)}


def described(built) -> dict:
    """What a record's build ran with: tiles, stages, consumers, registers (from its compile-time constants)."""
    names = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "ACCUMULATORS", "B_STRIDE", "GROUP_M", "PRODUCER_REGISTERS",
             "CONSUMER_REGISTERS")
    return {"kind": type(built).__name__,  # TmaTiles: one block per tile; PersistentTmaTiles: one per SM
            "threads": built.threads, **{name: built.constants[name] for name in names if name in built.constants}}


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS, its ratio to each baseline's, and the named pairs (None where a
    record is missing or failed)."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = r.get("tflops")
    out = {}
    for shape, by_build in tflops.items():
        out[shape] = {"tflops": {name: by_build.get(name) for name in [*BUILDS, "cublas_tf32", "cublas"]}}
        for base in BASELINES:
            ref = by_build.get(base)
            out[shape][f"over_{base}"] = {name: (by_build[name] / ref if by_build.get(name) and ref else None)
                                          for name in BUILDS if name != base}
        out[shape]["pairs"] = {pair: (by_build[x] / by_build[y] if by_build.get(x) and by_build.get(y) else None)
                               for pair, (x, y) in PAIRS.items()}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/pingpong_fair.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    out = output_path("pingpong-fair", argv[1] if len(argv) > 1 else None)
    step_17, step_19 = gemm_steps.get_step("warp_specialized"), gemm_steps.get_step("pingpong")
    built = builds()
    entries = [step_17, SimpleNamespace(name="persistent_specialized", number=17, arithmetic="tf32",
                                        launch=built["persistent_specialized"].launch)]
    entries += [SimpleNamespace(name=name, number=19, arithmetic="tf32", launch=built[name].launch)
                for name in ("pingpong_wide_4", "pingpong_wide_max")]
    entries += [step_19, SimpleNamespace(name="pingpong_6", number=19, arithmetic="tf32",
                                         launch=built["pingpong_6"].launch)]
    assert [entry.name for entry in entries] == BUILDS
    results = run_benchmark(entries, SIZES, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = ("a fair ping-pong: step 19's schedule with step 17's work per consumer, against step 17, "
                             "its persistent form and step 19 at 4 (shipped) and 6 stages (experiments/pingpong_fair.py)")
    results["builds"] = {"warp_specialized": described(step_17.tiled), "pingpong": described(step_19.tiled),
                         **{name: described(b) for name, b in built.items()}}
    results["summary"] = summary(results)
    save(results, out)
    print_records(results, width=24)
    for shape, row in results["summary"].items():
        for base in BASELINES:
            ratios = ", ".join(f"{name} {x:.3f}" for name, x in row[f"over_{base}"].items() if x)
            print(f"{shape}: over {base}: {ratios}")
        print(f"{shape}: pairs: " + ", ".join(f"{pair} {x:.3f}" for pair, x in row["pairs"].items() if x))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
