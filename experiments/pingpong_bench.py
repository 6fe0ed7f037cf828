"""Step 17 against its persistent form and its persistent ping-pong form, with and without the order of the two
consumers' main loops, beside both cuBLAS in one run (issue: Hopper's own GEMM design, "persistent + ping-pong").

    python -m experiments.pingpong_bench [OUT.json]   # default: experiments/results/experiment-pingpong-<gpu>.json

Builds:
* ``warp_specialized`` — step 17 (256×128 tiles shared by two consumer warpgroups, one block per tile);
* ``persistent_specialized`` — step 17 persistent (experiments/kernels/persistent_specialized.py);
* ``pingpong_specialized`` — persistent, each consumer warpgroup a whole 128×128 tile, the block's tiles in turn,
  the main loops ordered by named barriers (experiments/kernels/pingpong_specialized.py);
* ``pingpong_unordered`` — the same without the named barriers — is not timed: on an H100 (2026-11-26) its first
  launch at 4096³ failed (CUDA_ERROR_LAUNCH_FAILED: a wait on an mbarrier outlived the toolkit's 2 s limit and
  trapped). Without the order, consumer 1 starts on the block's second tile at once and waits on a *full* barrier
  for the ring's fill number g // STAGES = 128 // 6 = 21, while that stage has completed none: a parity wait only
  tells the phase in progress from the one before it, so asking for an odd phase of a barrier in phase 0 returns at
  once — the consumer reads a stage that has not landed and releases it, and the ring's counts come apart. The
  order barrier keeps each consumer at most one lap of the ring ahead of the producer's fills, which the parity
  needs. (On the simulator's short K the consumers never get two laps apart, so its tests pass.)

The prediction is written in experiments/kernels/pingpong_specialized.py's docstring (before any run): against
persistent_specialized + 1 to 1.5 % at 4096³, + 0.5 % at 8192³, + 2 to 3 % at 6144×6144×2048 if the 128×128 main
loop keeps step 17's rate per multiply-add; lower if the smaller tile's extra
bytes (L2 → shared memory +35 % per multiply-add, the shared-memory pipe +20 %) or the one-issuer main loop bind.
The run's ratios are stored with it (``summary``: each build's TFLOPS over step 17's and over persistent_specialized's
at every shape) and printed.

"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (6144, 6144, 2048)]
#: The builds compared, and the two each is measured against.
BUILDS = ["warp_specialized", "persistent_specialized", "pingpong_specialized"]
BASELINES = ["warp_specialized", "persistent_specialized"]


def builds() -> dict:
    """The experiment's builds beside step 17, by name: ``{name: TmaTiles}``."""
    from experiments.kernels import persistent_specialized, pingpong_specialized

    return {"persistent_specialized": persistent_specialized.build(),
            "pingpong_specialized": pingpong_specialized.build(ordered=True)}


def ptx_kernels() -> dict:
    """Every build's fast kernel but step 17's (tests/test_ptx.py compiles that one), for a compile check on a
    machine without a GPU: ``{label: (dispatcher, signature)}``."""
    return {f"{name}_fast": (built.kernel("fast"), built.signature("fast")) for name, built in builds().items()}


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and its ratio to each baseline's (None where one is missing)."""
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
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/pingpong_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    out = output_path("pingpong", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step("warp_specialized")]
    entries += [SimpleNamespace(name=name, number=17, arithmetic="tf32", launch=built.launch)
                for name, built in builds().items()]
    results = run_benchmark(entries, SIZES, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = ("step 17, persistent, and persistent ping-pong with and without the named-barrier "
                             "order (experiments/pingpong_bench.py)")
    results["summary"] = summary(results)
    save(results, out)
    print_records(results, width=24)
    for shape, row in results["summary"].items():
        ratios = ", ".join(f"{name} {x:.3f}" for name, x in row["over_warp_specialized"].items() if x)
        print(f"{shape}: over step 17: {ratios}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
