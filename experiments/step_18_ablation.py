"""What does each part of step 18's work cost? An ablation (issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM).

Six experiments on step 18 (experiments/README.md) changed one thing each and moved it by no more than a few
percent; the last, ``prefetch_b.py``, took the ready barrier's wait and the B loads' latency out of the consumers'
stretch and moved nothing. So instead of one more change, take parts of the work *away* and time what is left:
experiments/kernels/step_18_ablation.py is step 18's kernel (the same PTX, all switches on) with three switches —
``SPLIT_A`` (the producer's split of A: its shared loads and stores and its arithmetic), ``SPLIT_B`` (the consumers'
split of B's values) and ``FOLD`` (the consumers' 64 adds of the fresh sum into the total a k-tile). A build with a
part off computes a wrong C (the benchmark records its error and says WRONG); only its time is read. A part whose
removal does not move the time is not what holds the step; the one whose removal moves it most is where the next
change should go.

Timed in one run, both cuBLAS beside them, at 2048³, 4096³ and 8192³: step 18 as shipped, the ablation kernel all on
(the control: the same kernel), and with SPLIT_A off, SPLIT_B off, FOLD off, SPLIT_B and FOLD off (the consumers'
arithmetic), and all three off (the copies and the tensor core alone).

Prediction: predictions/step-18-ablation-before-run.md (committed before this script's first run).

Measured (``experiment-step-18-ablation-nvidia-h200.json``, H200, 2026-11-30, one run; speed over step 18 at
2048³ / 4096³ / 8192³): the control 1.002 / 0.999 / 1.001; SPLIT_A off **1.177 / 1.172 / 1.165**; SPLIT_B off 1.107 /
1.060 / 1.055; FOLD off 1.100 / 1.055 / 1.046; SPLIT_B and FOLD off 1.176 / 1.143 / 1.124; all three off 1.275 /
1.248 / 1.241 (2.82× cuBLAS SGEMM at 4096³: its 144 TFLOPS are three TF32 products of 433, 1.09× cuBLAS TF32's in
the same run). The prediction held for the control, SPLIT_A and all three; the consumers' parts cost more than it
said (above its ranges at 2048³, and SPLIT_B with FOLD at all three). The producer's split is the largest single
part; the consumers' two together come close to it; the three are not additive (1.17 × 1.14 would be 1.34, all
three off gave 1.25: the tensor core's own time is near). experiments/presplit_a.py attacks the first.

    python -m experiments.step_18_ablation [OUT.json]   # default experiments/results/experiment-step-18-ablation-<gpu>.json
"""

from __future__ import annotations

import sys

from experiments import time_against_shipped

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)]
#: The builds: name → the switches turned off.
ABLATIONS = {"all_on": (), "no_split_a": ("SPLIT_A",), "no_split_b": ("SPLIT_B",), "no_fold": ("FOLD",),
             "no_split_b_no_fold": ("SPLIT_B", "FOLD"), "none": ("SPLIT_A", "SPLIT_B", "FOLD")}


def builds() -> dict:
    """The ablation kernel built for each entry of ABLATIONS, from step 18's tuned configuration."""
    from dataclasses import replace

    from experiments.kernels import step_18_ablation as ablation
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = ablation.Config.of(default_config(step18.SEARCH_SPACE))
    return {f"ablation@{name}": ablation.build(replace(config, **{switch: False for switch in off}),
                                               name=f"step_18_ablation_{name}")
            for name, off in ABLATIONS.items()}


def main(argv: list[str] = sys.argv) -> None:
    time_against_shipped("warp_specialized_3xtf32", builds(), SIZES, "step-18-ablation",
                         "step 18 against its kernel with parts of its work switched off: the producer's split of A, "
                         "the consumers' split of B, their add of the fresh sum (experiments/step_18_ablation.py; "
                         "builds with a part off compute a wrong C: only their times mean anything)", argv)


if __name__ == "__main__":
    main()
