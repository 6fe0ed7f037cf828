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

**Historical.** Two runs on an H200 (2026-11-30; the second, ``--shipped-last``, timed the presplit build before step
18, prediction ``predictions/presplit-a-order-before-run.md``), over step 18: 4096³ **1.055 / 1.047**,
5120×2560×4096 1.063 / 1.068, 2048³ 0.942 / 0.945 (the first kernel is 10 % of step 18's time there), 8192³
**0.997 / 0.995** — where the presplit build's SM clock fell to a median of 1,517 / 1,494 MHz against step 18's
1,786 / 1,802 and cuBLAS TF32's 1,786 / 1,802, in either order: per clock it did ~1.17× step 18's work, and the
700 W limit took that back (the prediction's "the clock is the kernel's" case). Its first kernel took 4.5 % of step
18's time at 4096³ and 2 % at 8192³ (predicted 3–6 and 1.5–3). The product's kernel alone, at 4096³, ~1.11× step 18:
of the ablation's 1.17× (no split, 33 KB copied a k-tile), the 16 KB more it copies took about 5 %. Not a step
(the rule asked ≥ 1.05× at 4096³ and 8192³ and nothing below 0.98×). The kernel and its test were removed in the
next commit; to run it, ``git checkout 7b4154a``.

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
