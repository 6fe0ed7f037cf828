"""Step 5 on the GPU: what the index types and the thread→element map cost. Variants timed in one run.

signed:            lesson 5's first attempt (``register_2d_signed_kernel`` in step 5's module): Python-int index
                   math, so Numba emits a negative-index check on every array access.
unsigned:          step 5 as shipped: the same kernel with all index math in uint32/uint64.
unsigned_strided:  + a strided thread→element map (rows r + 16·i, cols c + 16·j): a warp's B-fragment reads hit
                   16 consecutive floats (no bank conflicts) and its C stores are coalesced
                   (``experiments/kernels/register_2d_strided.py``).
unsigned_strided_transposed_a: + the A tile stored transposed ([k][row]), so A-fragment reads are consecutive too.
Steps 3 and 4 are timed alongside.

    python -m experiments.register_2d [OUT.json] [--sizes 4096 8192]
    # default OUT: experiments/results/experiment-register-2d-<gpu>.json

(The earlier, signed-only version of this experiment is experiments/results/experiment-register-2d-nvidia-h200.json; the
current one wrote experiment-register-2d-unsigned-nvidia-h200.json.)
"""
import argparse
import sys
from types import SimpleNamespace

from experiments import output_path, require_gpu
from experiments.kernels import register_2d_strided
from gemm_steps import get_step
from gemm_steps.harness import bench
from gemm_steps.steps import register_2d as step5


def variants() -> list:
    return [
        SimpleNamespace(name="signed", number=1, launch=step5.launch_signed),
        SimpleNamespace(name="unsigned", number=2, launch=step5.launch),
        SimpleNamespace(name="unsigned_strided", number=3, launch=register_2d_strided.launch_strided),
        SimpleNamespace(name="unsigned_strided_transposed_a", number=4,
                        launch=register_2d_strided.launch_strided_transposed_a),
        SimpleNamespace(name="shared_memory", number=5, launch=get_step("shared_memory").launch),
        SimpleNamespace(name="register_1d", number=6, launch=get_step("register_1d").launch),
    ]


def main(argv: list[str] = sys.argv) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", help="where to write the JSON")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    args = parser.parse_args(argv[1:])
    require_gpu("experiments/register_2d.py")
    out = output_path("register-2d", args.out)
    res = bench.run_benchmark(variants(), [(s,) * 3 for s in args.sizes], repeats=20, progress=print)
    bench.save(res, out)
    for r in res["records"]:
        print(f"{r['step']:32s} {r.get('M')} {r.get('median_ms', 0):8.3f} ms {r.get('tflops', 0):6.2f} TF "
              f"{r.get('pct_of_cublas') or 0:5.1f}% nan={r.get('unwritten')} "
              f"err={r.get('rel_error_vs_cublas') or 0:.1e}")


if __name__ == "__main__":
    main()
