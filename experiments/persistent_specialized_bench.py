"""Step 17 against its persistent form (experiments/kernels/persistent_specialized.py: one block per SM walks the
tiles, the ring runs on across them), beside step 16 and both cuBLAS in one run (issue: Hopper's own GEMM design).

    python -m experiments.persistent_specialized_bench [OUT.json]   # default: experiments/results/experiment-persistent-specialized-<gpu>.json

Prediction, written before the run, from step 17's timeline (experiment-timeline-nvidia-h200.json) and a count of
what a tile costs beside its k-loop: at 4096³ a tile is 128 k-tiles of ≈ 1,336 cycles (≈ 171,000 cycles); before
its first product a block initialises its barriers, acquires the tensor maps and waits one copy's latency
(≈ 2,600 cycles from issue to landing in the timeline), and after its last it stores 128 values a thread. Persistent,
the next tile's first copies are issued during this tile's last k-tiles and store, so ≈ 3,000–5,000 cycles a tile
come off: +2 to +3 % at 4096³, half that at 8192³ (twice the k-tiles a tile). The wave count does not change
(512 tiles on 132 SMs is 3.9 waves either way), and at 3001×2999×1531 most of the time is step 15's edge kernel.

Measured (H200, ``experiment-persistent-specialized-nvidia-h200.json``, one run; TFLOPS, step 17 → persistent):
4096³ 370.6 → 360.1 (−2.8 %), 8192³ 358.4 → 356.0 (−0.7 %), 6144×6144×2048 345.8 → 347.2 (+0.4 %), the ragged shape
85.5 → 85.3; cuBLAS TF32 398.3 / 398.5 / 333.4 / 93.5. The prediction missed: persistence bought nothing here and
cost a little at 4096³. What it gives up is the hardware's own balancing — with one block per tile, an SM that
finishes early takes the next tile, while the persistent grid's stride fixes every SM's tiles in advance; the
per-tile start it saves (a copy's latency, ≈ 1–2 % of a 4096³ tile) is about what the lost balance costs. Not
taken into the course; the other half of the idea — two consumer warpgroups on alternate tiles, one storing while
the other multiplies (ping-pong) — needs each warpgroup to own a whole tile and is not built.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/persistent_specialized_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    from experiments.kernels import persistent_specialized

    out = output_path("persistent-specialized", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step("tma_pipeline"), gemm_steps.get_step("warp_specialized"),
               SimpleNamespace(name="persistent_specialized", number=18, arithmetic="tf32",
                               launch=persistent_specialized.build().launch)]
    sizes = [(4096, 4096, 4096), (8192, 8192, 8192), (6144, 6144, 2048), (3001, 2999, 1531)]
    results = run_benchmark(entries, sizes, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = "step 17 and its persistent form (experiments/persistent_specialized_bench.py)"
    save(results, out)
    print_records(results, width=24)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
