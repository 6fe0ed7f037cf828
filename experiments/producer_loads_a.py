"""Step 18 with its producer loading A from global memory, not reading back what the copy engine wrote (issue 36:
3xTF32 ≥ 2.5× cuBLAS SGEMM).

The ablation (``step_18_ablation.py``) found the producer's split of A the largest single part of step 18's time
(1.17× faster without it at 2048³–8192³), and ``presplit_a.py`` found that splitting A once beforehand, so that the
producer only has both parts copied, runs its main kernel faster but pays for the first kernel (and, at 8192³, for
the clock). Per k-tile step 18's producer reads back the 16 KB the copy engine wrote into the stage and writes 32 KB
of parts: with the copy's own 16 KB, 64 KB of shared-memory traffic for A before the tensor core reads it. Here
(experiments/kernels/producer_loads_a.py) the producer's 128 threads load A's k-tile from global memory one k-tile
ahead into registers and write only the two parts (32 KB); the copy engine brings B alone. One change: who brings A
(the hand-off's register split moves with it, 88/208 instead of 40/232, for the vectors a k-tile ahead).

Timed in one run with both cuBLAS, at 2048³, 4096³, 8192³ and 5120×2560×4096 (whole tiles: the variant has no
partial-tile build); run twice, the second with step 18 timed last (``--shipped-last``).

Prediction: predictions/producer-loads-a-before-run.md (committed before this script's first run).

    python -m experiments.producer_loads_a [OUT.json] [--shipped-last] [--ablation]
    # default experiments/results/experiment-producer-loads-a[-ablation]-<gpu>.json
"""

from __future__ import annotations

import sys

from experiments import time_against_shipped

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096)]


#: ``--ablation``: the variant with parts of its producer's work switched off (a wrong C, times only), at two sizes.
ABLATION_SIZES = [(4096, 4096, 4096), (8192, 8192, 8192)]
ABLATIONS = {"no_split_arithmetic": ("SPLIT_ARITHMETIC",), "no_fence": ("FENCE",),
             "neither": ("SPLIT_ARITHMETIC", "FENCE")}


def builds(ablation: bool = False) -> dict:
    """The variant built from step 18's tuned configuration; with ``ablation``, also its ablation builds."""
    from dataclasses import replace

    from experiments.kernels import producer_loads_a as variant
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = variant.Config.of(default_config(step18.SEARCH_SPACE))
    out = {"producer_loads_a": variant.build(config)}
    if ablation:
        out.update({f"producer_loads_a@{name}": variant.build(replace(config, **{s: False for s in off}),
                                                              name=f"producer_loads_a_{name}")
                    for name, off in ABLATIONS.items()})
    return out


def main(argv: list[str] = sys.argv) -> None:
    if "--ablation" in argv:
        time_against_shipped("warp_specialized_3xtf32", builds(ablation=True), ABLATION_SIZES,
                             "producer-loads-a-ablation",
                             "step 18 against the producer-loads-A variant and its builds without the split's "
                             "arithmetic and/or the proxy fence (wrong C: times only; experiments/producer_loads_a.py "
                             "--ablation)", [arg for arg in argv if arg != "--ablation"])
        return
    time_against_shipped("warp_specialized_3xtf32", builds(), SIZES, "producer-loads-a",
                         "step 18 against its kernel with the producer loading A from global memory into registers "
                         "(the copy engine brings B alone; experiments/producer_loads_a.py)", argv)


if __name__ == "__main__":
    main()
