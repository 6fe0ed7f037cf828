"""Wave quantization at the default precision: step 18 against step 22 (step 18's 3xTF32 k-tile on step 21's
stream-K schedule), timed in one run with cuBLAS SGEMM and cuBLAS TF32 (issue 37: the default ``matmul``'s minimums).

The builds (one change from step 18: the schedule; gemm_steps/steps/warp_specialized_3xtf32_stream_k.py):

* ``warp_specialized_3xtf32``: step 18 as ``matmul`` runs it — one block a tile (split-K where the tiles do not fill
  the SMs and K is long);
* ``warp_specialized_3xtf32_stream_k``: step 22 as shipped — a persistent grid of one block an SM, whole waves
  data-parallel, the last part-empty wave plus one by k-tiles (shares of at least ``MIN_SHARE_K_TILES``); step 18
  where step 18 splits K;
* ``warp_specialized_3xtf32_persistent``: step 22's persistent loop alone (every tile data-parallel, no fallback).

Shapes: wave boundaries of 128 × 128 tiles on 132 SMs (144, 169, 158 and 576 tiles: 1.09, 1.28, 1.20 and 4.36
waves), 10077×164×4066 (held-out seed 20261215's default minimum, 0.97× cuBLAS SGEMM on step 18), one K-heavy product
step 18 splits (36 tiles: step 18 runs it in both), 4096³ and 2048³ (97 % of 8 and 2 waves: the controls).

Prediction: predictions/stream-k-3xtf32-before-run.md (written before the run).

    python -m experiments.stream_k_3xtf32 [OUT.json]   # default experiments/results/experiment-stream-k-3xtf32-<gpu>.json
    python -m experiments.stream_k_3xtf32 OUT.json 8192x8192x8192   # other shapes
    python -m experiments.stream_k_3xtf32 OUT.json --pace   # the second run: why step 22's k-tiles are slower

The first run (``…-nvidia-h200.json``) found step 22's persistent loop alone at 0.86–0.92× step 18 where both run
the same waves (step 21's had run 1.03–1.05× step 17's): its k-tiles are slower. ``--pace`` times, at 4096³ and
2048³ (nothing split), step 18, the persistent loop, and the persistent loop with the producer warpgroup given 56
registers instead of 40 (the consumers 224 instead of 232: the same pool) — one change: does the producer, whose loop
now also walks the work units, run short of registers for its split? (Prediction:
predictions/stream-k-3xtf32-pace-before-run.md.)

The third run (``-3.json``, the shapes given on the command line) times the build whose stream-K wait polls as a warp
(``toolkit.intrinsics.wait_for_flag``), with ``warp_specialized_3xtf32_stream_k_own`` (its own kernel at every
shape, no fallback to step 18) beside (predictions/stream-k-warp-wait-before-run.md).

The fourth run (``-4.json``, shapes on the command line: K = 64 … 4096, most of them a few k-tiles a tile) asks
whether the loop hides step 18's cost a tile besides its k-loop where tiles are short
(predictions/short-k-persistent-before-run.md; the shapes and the reason: experiments/short_k.py).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(1152, 2048, 4096), (1664, 1664, 4096), (10077, 164, 4066), (3000, 3000, 3000), (768, 768, 16384),
         (2048, 2048, 2048), (4096, 4096, 4096)]
PACE_SIZES = [(4096, 4096, 4096), (2048, 2048, 2048)]
SHIPPED = "warp_specialized_3xtf32"
STREAM_K = "warp_specialized_3xtf32_stream_k"
PERSISTENT = "warp_specialized_3xtf32_persistent"
PRODUCER_56 = "warp_specialized_3xtf32_persistent_producer56"
OWN = "warp_specialized_3xtf32_stream_k_own"


def entries(pace: bool = False) -> list:
    """Step 18 and step 22 from the course, and step 22's persistent loop alone, as benchmark entries; ``pace``:
    step 18, the persistent loop, and the persistent loop with 56 producer registers."""
    from dataclasses import replace

    import gemm_steps
    from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step
    from gemm_steps.steps.warp_specialized_stream_k import no_stream_k
    from gemm_steps.toolkit.tuned import default_config

    config = default_config(step.SEARCH_SPACE)
    loop = step.build(config, split=no_stream_k, fallback=False)
    shipped = SimpleNamespace(name=SHIPPED, number=18, arithmetic="3xtf32", launch=gemm_steps.get_step(SHIPPED).launch)
    persistent = SimpleNamespace(name=PERSISTENT, number=22, arithmetic="3xtf32", launch=loop.launch)
    if pace:
        wider = step.build(replace(config, PRODUCER_REGISTERS=56, CONSUMER_REGISTERS=224), split=no_stream_k,
                           fallback=False)
        return [shipped, persistent, SimpleNamespace(name=PRODUCER_56, number=22, arithmetic="3xtf32",
                                                     launch=wider.launch)]
    own = step.build(config, fallback=False)  # its own kernel at every shape (runs_step_18 not asked)
    return [shipped, SimpleNamespace(name=STREAM_K, number=22, arithmetic="3xtf32",
                                     launch=gemm_steps.get_step(STREAM_K).launch), persistent,
            SimpleNamespace(name=OWN, number=22, arithmetic="3xtf32", launch=own.launch)]


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', each build over step 18 and over cuBLAS SGEMM."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    names = [SHIPPED, *sorted({r["step"] for r in results["records"]} - {SHIPPED, "cublas", "cublas_tf32"})]
    return {f"{m}x{n}x{k}": {"tflops": {name: by.get(name) for name in (*names, "cublas", "cublas_tf32")},
                             "over_step18": {name: ratio(by.get(name), by.get(SHIPPED)) for name in names[1:]},
                             "over_sgemm": {name: ratio(by.get(name), by.get("cublas")) for name in names}}
            for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/stream_k_3xtf32.py")
    pace = "--pace" in argv
    argv = [arg for arg in argv if arg != "--pace"]
    out = output_path("stream-k-3xtf32", argv[1] if len(argv) > 1 else None)
    sizes = [tuple(int(x) for x in shape.split("x")) for shape in argv[2:]] or (PACE_SIZES if pace else SIZES)
    results = run_and_save(entries(pace), sizes, out, "step 18 against step 22 (its k-tile on step 21's stream-K "
                           "schedule) and step 22's persistent loop alone (experiments/stream_k_3xtf32.py)",
                           summary, width=34)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = ", ".join(f"{name} / step 18 {value or nan:.3f}" for name, value in row["over_step18"].items())
        print(f"{shape}: {over}; / cuBLAS SGEMM: " + ", ".join(f"{v or nan:.2f}" for v in row["over_sgemm"].values()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
