"""How many slices of K may a small-C, long-K product take? Steps 17 and 18 split K (``SplitKTmaTiles``) into as many
slices as fill the SMs once, but at most ``MAX_SLICES`` = 8: a product of one or two tiles runs on 8–16 of 132 SMs
(issue 37, Deliver 3: "split-K for small-M·N, long-K products").

Held-out seed 20261207 (results/held-out-nvidia-h200-2026-11-29-4.json) found the class: at 101×116×13918 the default
``matmul`` ran at 0.09× cuBLAS SGEMM and ``precision="tf32"`` at 0.25× cuBLAS TF32. Those shapes are not tuned on;
this experiment uses others of the class (C of one to a few tiles, K of 8,192–16,384), a ragged one, and controls
whose slice count the cap does not change.

One change: the cap. Builds of each step, its shipped tile, differing only in the ``slices`` policy:

* step 17 (``warp_specialized``): shipped (slices ≥ 16 k-tiles, ≤ 8), no cap (≥ 16 k-tiles, up to the SMs), and no
  cap with slices ≥ 4 k-tiles (a second change, named apart);
* step 18 (``warp_specialized_3xtf32``): shipped (slices ≥ 2 k-tiles, ≤ 8), at most 32, no cap.

Prediction: predictions/split-k-slices-before-run.md (committed before the first run).

    python -m experiments.split_k_slices [OUT.json]   # default experiments/results/experiment-split-k-slices-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

#: Small C, long K (four), a ragged one of the class (K and N odd: A and B copied, or read by the producer's threads),
#: two wider ones, then controls where every policy launches the same slices (1024×1024×16384, 4096³).
SIZES = [(128, 128, 16384), (96, 200, 12000), (200, 160, 8192), (64, 256, 16384), (150, 181, 10001),
         (256, 256, 8192), (384, 256, 16384), (1024, 1024, 16384), (4096, 4096, 4096)]

#: (step, label, least k-tiles a slice, most slices or None for no cap): the first of each step is its shipped policy.
POLICIES = [("warp_specialized", "shipped", 16, 8), ("warp_specialized", "no cap", 16, None),
            ("warp_specialized", "no cap, slices >= 4", 4, None),
            ("warp_specialized_3xtf32", "shipped", 2, 8), ("warp_specialized_3xtf32", "cap 32", 2, 32),
            ("warp_specialized_3xtf32", "no cap", 2, None)]
NUMBERS = {"warp_specialized": 17, "warp_specialized_3xtf32": 18}
ARITHMETIC = {"warp_specialized": "tf32", "warp_specialized_3xtf32": "3xtf32"}
BASELINE = {"warp_specialized": "cublas_tf32", "warp_specialized_3xtf32": "cublas"}


def policy(least: int, most: int | None, min_split_k_tiles: int):
    """A ``slices`` policy of the steps' form: one slice where the tiles fill the SMs or K is short, else as many as
    fill the SMs once, each at least ``least`` k-tiles, at most ``most`` (None: no cap)."""
    def slices(tiles: int, k_tiles: int, sms: int) -> int:
        if tiles >= sms or k_tiles < min_split_k_tiles:
            return 1
        cap = most if most is not None else sms
        return max(1, min(sms // max(tiles, 1), k_tiles // least, cap))
    return slices


def entry_name(step: str, label: str) -> str:
    return f"{step}@{label}"


def summary(results: dict) -> dict:
    """Per shape: each build's time over its step's shipped build (below 1: faster) and each step's best build over
    its cuBLAS (TF32 for step 17, SGEMM for step 18), by speed."""
    ms: dict = {}
    for r in results["records"]:
        ms.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = r.get("median_ms")
    out = {}
    for shape, by in ms.items():
        row = {"ms": by, "time_over_shipped": {}, "best_over_cublas": {}}
        for step in NUMBERS:
            shipped = by.get(entry_name(step, "shipped"))
            names = [entry_name(s, label) for s, label, *_ in POLICIES if s == step]
            for name in names:
                row["time_over_shipped"][name] = ratio(by.get(name), shipped)
            times = [by[name] for name in names if by.get(name)]
            row["best_over_cublas"][step] = ratio(by.get(BASELINE[step]), min(times)) if times else None
        out[shape] = row
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/split_k_slices.py")
    from gemm_steps.harness.step import get_step
    from gemm_steps.toolkit.tuned import default_config

    out = output_path("split-k-slices", argv[1] if len(argv) > 1 else None)
    entries = []
    for step, label, least, most in POLICIES:
        module = get_step(step).module
        built = module.build(default_config(module.SEARCH_SPACE),
                             slices=policy(least, most, module.MIN_SPLIT_K_TILES))
        entries.append(SimpleNamespace(name=entry_name(step, label), number=NUMBERS[step], arithmetic=ARITHMETIC[step],
                                       launch=built.launch, config={"min_slice_k_tiles": least, "max_slices": most}))
    results = run_and_save(entries, SIZES, out, "steps 17 and 18 with split-K's cap on slices (8) raised or removed, "
                           "small-C long-K products (experiments/split_k_slices.py)", summary, width=40)
    for shape, row in results["summary"].items():
        times = "  ".join(f"{name.split('@')[1]} ({NUMBERS[name.split('@')[0]]}) {value:.2f}"
                          for name, value in row["time_over_shipped"].items() if value)
        best = "  ".join(f"step {NUMBERS[s]} {v:.2f}" for s, v in row["best_over_cublas"].items() if v)
        print(f"{shape}: time / shipped: {times}; best / cuBLAS: {best}", flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
