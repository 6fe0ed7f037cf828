"""Smaller tiles for step 17 (TF32) where its 256 × 128 tile leaves most of a short side empty: one change — the
tile — timed in one run with step 17 and cuBLAS TF32 (issue 37, Deliver 2: tile shapes for the Hopper design).

Step 17 computes Cᵀ: its tile's BLOCK_M rows of C are ``wgmma``'s N (256) and its BLOCK_N columns are 64 per
consumer warpgroup (two). The same kernel builds for other tiles (``warp_specialized.Config``: BLOCK_M a multiple of 8
up to 256, BLOCK_N 64 per consumer), with everything else as shipped (4 stages, the 40/232 register split,
split-K by step 17's policy over the variant's own tiles). The builds:

* ``warp_specialized``: step 17 as shipped, 256 × 128 (two consumers, ``wgmma`` m64n256k8);
* ``warp_specialized@128x128``: 128 rows (``wgmma`` m64n128k8), two consumers — half the rows a tile: a product
  with M ≤ 128 wastes none of them, and a mid-sized one gets twice the tiles;
* ``warp_specialized@256x64``: 256 rows, one consumer of 64 columns — for N ≤ 64, or twice the tiles where N is
  short.

cuBLAS TF32 (and SGEMM) timed in the same run. Shapes: short M, short N, one mid-sized square and 4096³ (the control);
none in a held-out set.

Prediction: predictions/hopper-tiles-before-run.md (written before the run).

    python -m experiments.hopper_tiles [OUT.json]   # default experiments/results/experiment-hopper-tiles-<gpu>.json
"""

from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(64, 16384, 4096), (128, 8192, 4096), (200, 8000, 3000), (8192, 128, 4096), (4096, 64, 8192),
         (12000, 100, 4000), (2000, 2000, 2000), (4096, 4096, 4096)]
SHIPPED = "warp_specialized"
#: The variants' tile fields (THREAD_M × THREAD_N per thread: 128 threads a consumer warpgroup).
VARIANTS = {"warp_specialized@128x128": dict(BLOCK_M=128, BLOCK_N=128, THREAD_M=8, THREAD_N=8),
            "warp_specialized@256x64": dict(BLOCK_M=256, BLOCK_N=64, THREAD_M=16, THREAD_N=8)}


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', each build over step 17 and over cuBLAS TF32."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    names = [SHIPPED, *VARIANTS]
    return {f"{m}x{n}x{k}": {"tflops": {name: by.get(name) for name in (*names, "cublas_tf32", "cublas")},
                             "over_step17": {name: ratio(by.get(name), by.get(SHIPPED)) for name in VARIANTS},
                             "over_tf32": {name: ratio(by.get(name), by.get("cublas_tf32")) for name in names}}
            for (m, n, k), by in tflops.items()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/hopper_tiles.py")
    import gemm_steps
    from gemm_steps.steps import warp_specialized

    out = output_path("hopper-tiles", argv[1] if len(argv) > 1 else None)
    base = warp_specialized.SEARCH_SPACE[0]
    entries = [SimpleNamespace(name=SHIPPED, number=17, arithmetic="tf32",
                               launch=gemm_steps.get_step(SHIPPED).launch)]
    entries += [SimpleNamespace(name=name, number=17, arithmetic="tf32",
                                launch=warp_specialized.build(replace(base, **fields)).launch)
                for name, fields in VARIANTS.items()]
    results = run_and_save(entries, SIZES, out, "step 17's kernel built for 128 × 128 and 256 × 64 tiles against its "
                           "256 × 128 (experiments/hopper_tiles.py)", summary, width=28)
    nan = float("nan")
    for shape, row in results["summary"].items():
        over = ", ".join(f"{name} / step 17 {value or nan:.3f}" for name, value in row["over_step17"].items())
        print(f"{shape}: {over}, / cuBLAS TF32: " + ", ".join(f"{v or nan:.2f}" for v in row["over_tf32"].values()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
