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

Prediction: predictions/producer-loads-a-before-run.md (committed before this script's first run); for
``--ablation`` (the variant without the split's arithmetic and/or the proxy fence: a wrong C, times only),
predictions/producer-loads-a-ablation-before-run.md, written after the two runs and before that one; for ``--stores``
(the variant without its shared stores of A's parts, with and without the fence: a wrong C, times only),
predictions/producer-loads-a-stores-before-run.md, written before both of its runs.

**Historical.** Measured on an H200 (2026-11-30; ``experiment-producer-loads-a-nvidia-h200.json`` and ``…-2.json``,
the second with step 18 timed last), over step 18, the same bits: 2048³ **1.060 / 1.057**, 4096³ **1.009 / 1.016**,
8192³ 0.994 / 0.996, 5120×2560×4096 0.988 / 0.986, at the same clocks as step 18 (within 7 MHz; at 8192³ both near
1,770 MHz at the start of their launches). Against the prediction: 2048³ and 8192³ held; 4096³ (1.03–1.10) and
5120×2560×4096 (1.03–1.10) missed, and 2.28× cuBLAS SGEMM at 4096³ just under its 2.3–2.5×. 32 KB a k-tile less
shared-memory traffic for A bought 1–2 % where the clock holds: the bytes on A's path are not what the producer's
split costs (presplit_a's product kernel, with a one-thread producer and more bytes copied, ran ~1.11×). The
ablation (``experiment-producer-loads-a-ablation-nvidia-h200.json``), over the variant at 4096³ / 8192³: without
the split's arithmetic 1.004 / 1.000, without the proxy fence 1.023 / 1.038 (its results happened to be right; the
fence is required), without both 1.025 / 1.020 — every range of its prediction held: what the producer costs lies in
its threads' loads, stores and waits themselves, with the fence a few percent of it. Not adopted (the rule asked
≥ 1.03× at 4096³ and 8192³ in both runs). ``--stores`` then took the producer's shared stores away
(``experiment-producer-loads-a-stores-nvidia-h200.json``; its first run left stale shared memory in A's buffers, whose
NaN sent every tile down the specials' slow path — 0.02–0.05× step 18, not a measurement — and was repeated with the
buffers zero-filled once, ``d466e21``): over the variant at 4096³ **1.047** without the stores, 1.047 without the
stores and the fence (predicted 1.04–1.12 and 1.05–1.13: one held, one just below); at 8192³ 1.175 / 1.176 — but
there the clock stayed at 1,981 MHz where step 18 and the variant ran at 1,757: the tensor core multiplying zeros
draws less power, so that ratio measures the data, not the stores (predicted 1.00–1.10: missed). At 4096³, where
the clock holds: the stores ~5 %, the fence ~2 %, the split's arithmetic nothing. The kernel and its test were
removed in the next commit; to run it, ``git checkout d466e21``.

    python -m experiments.producer_loads_a [OUT.json] [--shipped-last] [--ablation | --stores]
    # default experiments/results/experiment-producer-loads-a[-ablation|-stores]-<gpu>.json
"""

from __future__ import annotations

import sys

from experiments import time_against_shipped

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096)]


#: ``--ablation``: the variant with parts of its producer's work switched off (a wrong C, times only), at two sizes.
ABLATION_SIZES = [(4096, 4096, 4096), (8192, 8192, 8192)]
ABLATIONS = {"no_split_arithmetic": ("SPLIT_ARITHMETIC",), "no_fence": ("FENCE",),
             "neither": ("SPLIT_ARITHMETIC", "FENCE")}
#: ``--stores``: the variant without its shared stores of A's parts, with and without the fence (a wrong C).
STORE_ABLATIONS = {"no_stores": ("STORES",), "no_stores_no_fence": ("STORES", "FENCE")}


def builds(ablation: bool = False, stores: bool = False) -> dict:
    """The variant built from step 18's tuned configuration; with ``ablation`` or ``stores``, also those builds."""
    from dataclasses import replace

    from experiments.kernels import producer_loads_a as variant
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = variant.Config.of(default_config(step18.SEARCH_SPACE))
    out = {"producer_loads_a": variant.build(config)}
    chosen = {**(ABLATIONS if ablation else {}), **(STORE_ABLATIONS if stores else {})}
    out.update({f"producer_loads_a@{name}": variant.build(replace(config, **{s: False for s in off}),
                                                          name=f"producer_loads_a_{name}")
                for name, off in chosen.items()})
    return out


def main(argv: list[str] = sys.argv) -> None:
    if "--stores" in argv:
        time_against_shipped("warp_specialized_3xtf32", builds(stores=True), ABLATION_SIZES,
                             "producer-loads-a-stores",
                             "step 18 against the producer-loads-A variant and its builds without the shared stores "
                             "of A's parts, with and without the proxy fence (wrong C: times only; "
                             "experiments/producer_loads_a.py --stores)", [arg for arg in argv if arg != "--stores"])
        return
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
