"""Ragged shapes on step 17's fast kernel through the copy engine's out-of-bounds zeros: one change, timed in one run
with step 17 and cuBLAS (issue 37, Deliver 1).

Step 17 (gemm_steps/steps/warp_specialized.py) ran its fast kernel on full 256 × 128 tiles only, and only where K
is a multiple of 32; the border tiles — and, where K % 32 ≠ 0, the whole product — ran on step 15's edge kernel. The
builds, at step 17's tile:

* ``warp_specialized``: step 17 as it was — its full-tile build, step 15's edge kernel on the rest
  (:func:`step_17_before`);
* ``warp_specialized_tma_edges``: step 17's kernel over every tile of C and ⌈K / 32⌉ k-tiles in one launch, the
  copy engine filling whatever of a box lies outside A or B with zeros, the store guarded by row < M and column < N.
  It ran as a copy of step 17's kernel (experiments/kernels/warp_specialized_tma_edges.py at 6108cad, which the
  record below timed); step 17 took it as its ``PARTIAL_TILES`` build (2035c7a), and the copy was retired: this is
  step 17 as shipped now.

cuBLAS SGEMM and cuBLAS TF32 are timed in the same run (``run_benchmark`` adds TF32 for TF32 entries). Shapes: four
seven ragged ones on which the variant takes one launch (K and N multiples of 4): three with M or N ragged and K a
multiple of 32 (1152 × 3840 × 2048, 6784 × 1280 × 3072, 896 × 640 × 14336: step 17 runs their border on the edge
kernel), four with K % 32 ≠ 0 (3001 × 3000 × 1532, 4100³, 2500 × 6000 × 2000, 8000 × 8000 × 1000: step 17 runs them
wholly on the edge kernel) — and 4096³ (full tiles, K a multiple of 32: both builds run one launch of the same main loop; the variant's guarded
store is the difference). The run's ratios are stored with it (``summary``: per shape each build's TFLOPS, the
variant over step 17 and over cuBLAS TF32, step 17 over cuBLAS TF32, and which kernels step 17 launched) and printed.

Prediction: predictions/tma-edges-before-run.md (written before the run).

Measured (experiment-tma-edges-nvidia-h200.json, one H200 run): the variant ran 1.6–4.2× step 17 on the seven
ragged shapes and 0.83–1.06× cuBLAS TF32 on six of them; at 896 × 640 × 14336 (20 tiles: one wave on 20 SMs) 0.27×;
on full tiles 0.98× step 17. Its tests (tests/test_tma_edges.py) pass on the H200 at the GPU's tiles.

    python -m experiments.tma_edges [OUT.json]   # default experiments/results/experiment-tma-edges-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save, without_partial_build

#: (M, N, K): the ragged shapes (the variant's one launch; step 17's edge kernel on the border or, K % 32 ≠ 0, on all
#: of it), then a full-tile control.
SIZES = [(1152, 3840, 2048), (6784, 1280, 3072), (896, 640, 14336), (3001, 3000, 1532), (4100, 4100, 4100),
         (2500, 6000, 2000), (8000, 8000, 1000), (4096, 4096, 4096)]
VARIANT = "warp_specialized_tma_edges"
BUILDS = ["warp_specialized", VARIANT]
#: Step 17's tile and k-tile (its only configuration).
BLOCK_M, BLOCK_N, BLOCK_K = 256, 128, 32


def step_17_before():
    """Step 17 as it was before its partial-tile build: the same kernel built for full tiles (``PARTIAL_TILES``
    False), step 15's edge kernel for every other tile."""
    return without_partial_build("warp_specialized", "warp_specialized")


def ptx_kernels() -> dict:
    """Step 17's partial-tile build's kernel at the GPU's tiles (tests/test_tma_edges.py compiles it to PTX and
    through ptxas)."""
    from gemm_steps.steps import warp_specialized
    from gemm_steps.toolkit.tuned import default_config

    built = warp_specialized.build(default_config(warp_specialized.SEARCH_SPACE)).partial
    return {"warp_specialized_partial_fast": (built.kernel("fast"), built.signature("fast"))}


def step_17_launches(m: int, n: int, k: int) -> list[str]:
    """The kernels step 17 before its partial-tile build (:func:`step_17_before`) launches for a shape (its rule,
    ``TiledKernels.launch_through_numba``, for aligned matrices): ``fast`` on the full tiles where K % 32 == 0 and
    N % 4 == 0, ``edge`` where any tile is left."""
    fast = k % BLOCK_K == 0 and n % 4 == 0 and m >= BLOCK_M and n >= BLOCK_N
    whole = fast and m % BLOCK_M == 0 and n % BLOCK_N == 0
    return (["fast"] if fast else []) + ([] if whole else ["edge"])


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS (and both cuBLAS'), the variant over step 17 and over cuBLAS TF32,
    step 17 over cuBLAS TF32 (None where an entry is missing or failed), and step 17's launches."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    out = {}
    for (m, n, k), by in tflops.items():
        out[f"{m}x{n}x{k}"] = {"tflops": {name: by.get(name) for name in [*BUILDS, "cublas_tf32", "cublas"]},
                               "variant_over_step_17": ratio(by.get(VARIANT), by.get("warp_specialized")),
                               "variant_over_cublas_tf32": ratio(by.get(VARIANT), by.get("cublas_tf32")),
                               "step_17_over_cublas_tf32": ratio(by.get("warp_specialized"), by.get("cublas_tf32")),
                               "step_17_launches": step_17_launches(m, n, k)}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/tma_edges.py")
    import gemm_steps

    out = output_path("tma-edges", argv[1] if len(argv) > 1 else None)
    entries = [SimpleNamespace(name="warp_specialized", number=17, arithmetic="tf32", launch=step_17_before().launch),
               SimpleNamespace(name=VARIANT, number=17, arithmetic="tf32",
                               launch=gemm_steps.get_step("warp_specialized").launch)]
    assert [entry.name for entry in entries] == BUILDS
    results = run_and_save(entries, SIZES, out, "step 17's fast kernel over every tile of C and a partial last k-tile "
                           "(the copy engine's out-of-bounds zeros, a guarded store) against step 17 with step 15's "
                           "edge kernel (experiments/tma_edges.py)", summary, width=28)
    for shape, row in results["summary"].items():
        print(f"{shape}: variant / step 17 {row['variant_over_step_17'] or float('nan'):.3f}, "
              f"variant / cuBLAS TF32 {row['variant_over_cublas_tf32'] or float('nan'):.3f}, "
              f"step 17 / cuBLAS TF32 {row['step_17_over_cublas_tf32'] or float('nan'):.3f} "
              f"(step 17 ran {' + '.join(row['step_17_launches'])})")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
