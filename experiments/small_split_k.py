"""Shorter split-K slices for small products (issue 25: ≥ 0.8× cuBLAS SGEMM on every small shape): does step 18 with
slices of fewer than MIN_SLICE_K_TILES (8) k-tiles beat its shipped policy where the tiles are few and K is short?

At 256³ step 18 has 4 tiles of 128×128 and 8 k-tiles: the shipped policy takes no split (a slice must be 8 k-tiles
long), so 4 of 132 SMs run the whole product. Prediction, before the run, from step 18's ≈ 2,400 cycles a k-tile
(lesson 18's timeline) at ≈ 1.9 GHz: one block's 8 k-tiles ≈ 10 µs plus its start (barrier set-up, the first copy's
latency, ≈ 1–2 µs) and store. Four slices of 2 k-tiles would take ≈ 2.5 µs of k-loop + the same start + a reduction
launch over 4 × 256² floats (≈ 2–3 µs: a launch and 1 MB read): ≈ 6–7 µs, about 1.5× faster; at 512³ (16 tiles,
16 k-tiles, shipped: 2 slices) 8 slices of 2 k-tiles: ≈ 1.5×; at 1024³ and up the tiles fill the SMs and nothing
changes. The split costs the reduction kernel's launch and traffic, so very short slices stop paying somewhere.

Times step 18 built with each policy (slices of at least 1, 2, 4 and 8 k-tiles: 8 is the shipped one) on the
suite's small squares and a few held-out small shapes (on zero-padded copies where they are ragged, as ``matmul``'s
``warp_specialized_3xtf32+padded`` runs them), with cuBLAS SGEMM in the same run (``bench.run_benchmark``:
CUDA events, L2 flushed, NaN-poisoned outputs checked). Usage, on a GPU from the repository root:
python -m experiments.small_split_k OUT.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from gemm_steps.harness.bench import run_benchmark, save
from gemm_steps.steps import warp_specialized_3xtf32 as step18
from gemm_steps.toolkit.padded_tiles import PaddedTiles

MIN_K_TILES = (1, 2, 4, 8)
SHAPES = [(256, 256, 256), (512, 512, 512), (640, 640, 640), (768, 768, 768), (1024, 1024, 1024),
          (300, 300, 300), (448, 448, 448), (726, 793, 102), (395, 874, 529)]


def policy(min_k_tiles: int):
    """Step 18's ``slices`` with slices of at least ``min_k_tiles`` k-tiles."""
    def slices(tiles: int, k_tiles: int, sms: int) -> int:
        if tiles >= sms:
            return 1
        return max(1, min(sms // max(tiles, 1), k_tiles // min_k_tiles, 8))  # the cap of that run (removed 2026-11-29)
    return slices


def main() -> None:
    config = step18.SEARCH_SPACE[0]
    entries = []
    for least in MIN_K_TILES:
        built = PaddedTiles(step18.build(config, slices=policy(least)))  # as matmul runs it on the ragged shapes
        entries.append(SimpleNamespace(name=f"step 18, slices ≥ {least} k-tiles", number=18, launch=built.launch,
                                       config={"min_slice_k_tiles": least}, arithmetic="3xtf32"))
    results = run_benchmark(entries, SHAPES, repeats=50, include_cublas_tf32=False)
    results["experiment"] = "step 18's split-K with shorter slices on small products"
    save(results, sys.argv[1] if len(sys.argv) > 1 else "experiment-small-split-k.json")
    rows: dict = {}
    for r in results["records"]:
        rows.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("pct_of_cublas")
    for shape, by in rows.items():
        print(shape, "  ".join(f"{name.split(', ')[-1]}: {pct:.0f} %" for name, pct in by.items() if pct), flush=True)


if __name__ == "__main__":
    main()
