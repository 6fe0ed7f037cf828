"""Does step 18 run faster with A split once, by a first kernel, instead of by every block's producer warpgroup?
(issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM.)

experiments/step_18_ablation.py took parts of step 18's work away (a wrong C, times only) and found the producer's
split of A the most expensive: without it the step ran 1.17× at 4096³ and 8192³; without the consumers' split of B
and their adds into the total 1.14×; without all three 1.24×. A block's producer splits its tile-row of A although
every block of that tile-row splits the same A: N / 128 times over at N = 4096. experiments/kernels/presplit_a.py
splits A once, into a 2M × K workspace (big parts, then small parts·2^11), and runs step 18's kernel with its
producer reduced to one copying thread that also copies each k-tile's small parts (the one change: where A is
split). The same bits (tests/test_presplit_a.py). What it costs: one pass over A before the product (read 4·M·K
bytes, write 8·M·K), 16 KB more copied a k-tile (49 KB instead of 33), 2·M·K floats of workspace.

Timed in one run, both cuBLAS beside them, at 2048³, 4096³, 8192³ and 5120×2560×4096: step 18, the presplit build,
and the split kernel alone (``presplit_a@split_only``: its C is never written; only its time is read).

Prediction: predictions/presplit-a-before-run.md (committed before this script's first run).

    python -m experiments.presplit_a [OUT.json] [--shipped-last]   # default experiments/results/experiment-presplit-a-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import time_against_shipped

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096)]


def builds() -> dict:
    """The presplit build, and its first kernel alone."""
    from experiments.kernels import presplit_a
    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    built = presplit_a.build(default_config(step18.SEARCH_SPACE))
    return {"presplit_a": built, "presplit_a@split_only": SimpleNamespace(launch=built.launch_split_only)}


def main(argv: list[str] = sys.argv) -> None:
    time_against_shipped("warp_specialized_3xtf32", builds(), SIZES, "presplit-a",
                         "step 18 against its kernel with A split once by a first kernel (experiments/presplit_a.py); "
                         "presplit_a@split_only is that first kernel alone (C unwritten: its time only)", argv)


if __name__ == "__main__":
    main()
