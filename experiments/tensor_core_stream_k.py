"""Wave quantization on the tensor cores: step 17 against its kernel on step 11's schedule (persistent, stream-K),
timed in one run with cuBLAS TF32 (issue 37, Deliver 3).

The builds (first written as experiments/kernels/warp_specialized_stream_k.py, now step 21,
gemm_steps/steps/warp_specialized_stream_k.py; one change from step 17: the schedule):

* ``warp_specialized``: step 17 as ``matmul(precision="tf32")`` runs it — one block a tile (split-K where the tiles
  do not fill the SMs and K is long);
* ``warp_specialized_stream_k``: the same k-tile on a persistent grid of one block an SM, step 11's hybrid split —
  whole waves data-parallel, the last part-empty wave plus one by k-tiles, fixed up through a workspace; step 17
  itself where one block a tile keeps ≥ 90 % of the SMs busy (the first run, ``…-nvidia-h200.json``, timed this
  build with that one fallback; step 21 also leaves to step 17 the products step 17 splits K on, from that run);
* ``warp_specialized_persistent``: the persistent loop alone (every tile data-parallel, no fallback): what the
  persistent grid costs or gives where there is nothing to balance.

cuBLAS SGEMM and cuBLAS TF32 are timed in the same run. Shapes: wave boundaries (150, 144, 270, 288 and 576 tiles of
256 × 128 on 132 SMs), one K-heavy product of 32 tiles, and 4096³ (512 tiles, 97 % of four waves: the control).

Prediction: predictions/warp-specialized-stream-k-before-run.md (written before the run).

    python -m experiments.tensor_core_stream_k [OUT.json]   # default experiments/results/experiment-tensor-core-stream-k-<gpu>.json
    python -m experiments.tensor_core_stream_k OUT.json 8192x8192x8192 2048x2048x2048   # other shapes

Runs: ``…-nvidia-h200.json`` (the prediction above; step 21 then fell back to step 17 only where nothing was split)
and ``-2`` (predictions/warp-specialized-stream-k-second-run.md: the same builds, step 21 leaving split-K products to
step 17); ``-3``, whole waves only (predictions/persistent-loop-before-run.md: does the persistent loop alone beat
step 17 where nothing is split?); ``-4``, one shape class with and without the readable copies
(predictions/stream-k-copies-before-run.md).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(1152, 3840, 2048), (2304, 2048, 8192), (6784, 1280, 3072), (3000, 3000, 3000), (4096, 4608, 4096),
         (1024, 1024, 8192), (4096, 4096, 4096)]
SHIPPED = "warp_specialized"
STREAM_K = "warp_specialized_stream_k"
PERSISTENT = "warp_specialized_persistent"


def variants() -> list:
    """The two builds of the variant kernel, as benchmark entries (step 17 itself is taken from the course)."""
    from gemm_steps.steps import warp_specialized_stream_k as step
    from gemm_steps.toolkit.tuned import default_config

    config = default_config(step.SEARCH_SPACE)
    return [SimpleNamespace(name=STREAM_K, number=21, arithmetic="tf32", built=step.build(config), launch=None),
            SimpleNamespace(name=PERSISTENT, number=21, arithmetic="tf32",
                            built=step.build(config, split=step.no_stream_k, fallback=False), launch=None)]


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', each build over step 17 and over cuBLAS TF32."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    names = [SHIPPED, STREAM_K, PERSISTENT]
    return {f"{m}x{n}x{k}": {"tflops": {name: by.get(name) for name in (*names, "cublas_tf32", "cublas")},
                             "over_step17": {name: ratio(by.get(name), by.get(SHIPPED)) for name in names[1:]},
                             "over_tf32": {name: ratio(by.get(name), by.get("cublas_tf32")) for name in names}}
            for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/tensor_core_stream_k.py")
    import gemm_steps

    out = output_path("tensor-core-stream-k", argv[1] if len(argv) > 1 else None)
    sizes = [tuple(int(x) for x in shape.split("x")) for shape in argv[2:]] or SIZES
    entries = [SimpleNamespace(name=SHIPPED, number=17, arithmetic="tf32", launch=gemm_steps.get_step(SHIPPED).launch)]
    for entry in variants():
        entry.launch = entry.built.launch
        entries.append(entry)
    results = run_and_save(entries, sizes, out, "step 17 against its kernel on a persistent grid with step 11's "
                           "stream-K split, and the persistent loop alone (experiments/tensor_core_stream_k.py)",
                           summary, width=28)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = ", ".join(f"{name} / step 17 {value or nan:.3f}" for name, value in row["over_step17"].items())
        print(f"{shape}: {over}; / cuBLAS TF32: " + ", ".join(f"{v or nan:.2f}" for v in row["over_tf32"].values()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
