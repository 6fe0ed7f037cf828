"""Step 9's FMA order: row by row vs serpentine (odd rows backwards; shipped since), timed in one run, with SASS.

Hypothesis from Nsight Compute (step 9 vs cuBLAS at 4096³, same instruction count): step 9 issues about 0.8 warp-
instructions per cycle per scheduler against cuBLAS's 0.90 (0.81 in the shipped report,
``experiments/results/ncu-step9-pipelined-cublas-nvidia-h200.txt``), losing the difference to "dispatch" and "wait" stalls,
which register-bank conflicts could cause (how Hopper's register banks work is not documented; lesson 9's deep dive). In a serpentine order each FMA shares an operand with the one before it,
also where a row ends, which gives ptxas more chances to read an operand from the reuse cache.
Both kernels come from ``experiments/kernels/warp_tiling_fma_order.py`` (its ``"serpentine"`` is step 9's k-column,
which tests/test_variants.py checks). Writes the results and prints SASS summaries (``loop_mix`` from
``gemm_steps.course.sass``; needs a GPU machine with nvdisasm). (A first run of this experiment had a template bug
that wrote one FMA per odd row twice; the benchmark's error check caught it, and tests/test_variants.py now checks
that every order computes the same products.)

    python -m experiments.fma_order [OUT.json]     # default: experiments/results/experiment-fma-order-<gpu>.json
"""
import sys
from types import SimpleNamespace

from experiments import output_path, require_gpu
from experiments.kernels import warp_tiling_fma_order
from gemm_steps.course.sass import loop_mix
from gemm_steps.harness import bench
from gemm_steps.steps import warp_tiling

SIZES = (4096, 8192)


def variants() -> list:
    """The two orders as benchmark entries (their record names are ``row_order`` and ``serpentine``)."""
    config = warp_tiling.TUNING.kernels().config
    kernels = {"row_order": warp_tiling_fma_order.build(config, "row", name="warp_tiling_row_order"),
               "serpentine": warp_tiling_fma_order.build(config, "serpentine", name="warp_tiling_serpentine")}
    return [SimpleNamespace(name=name, number=i + 1, launch=tiled.launch, tiled=tiled)
            for i, (name, tiled) in enumerate(kernels.items())]


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/fma_order.py")
    out = output_path("fma-order", argv[1] if len(argv) > 1 else None)
    entries = variants()
    for entry in entries:
        compiled = entry.tiled.kernels["fast"].compile(entry.tiled.signature("fast"))
        mix, size = loop_mix(compiled.inspect_sass())
        print(f"{entry.name:12s} regs {compiled.regs_per_thread} loop {size}: FFMA {mix.get('FFMA')} with .reuse "
              f"{mix.get('FFMA.reuse')}; " + ", ".join(f"{k} {v}" for k, v in list(mix.items())[1:8]), flush=True)
    res = bench.run_benchmark(entries, [(s,) * 3 for s in SIZES], repeats=30, progress=print)
    bench.save(res, out)
    for r in res["records"]:
        print(f"{r['step']:12s} {r.get('M')} {r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF "
              f"{r.get('pct_of_cublas') or 0:5.1f}% nan={r.get('unwritten')} err={r.get('sampled_rel_error_fp64'):.1e}")


if __name__ == "__main__":
    main()
