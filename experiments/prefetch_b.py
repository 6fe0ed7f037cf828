"""Does step 18 run faster when its consumers read the next k-tile's B values while this k-tile's products run?
(issue 36: 3xTF32 ≥ 2.5× cuBLAS SGEMM.)

experiments/step_18_stalls.py found the tensor pipe idle a quarter of step 18's active cycles at 4096³ and a consumer
waiting once a k-tile for all twelve of its ``wgmma`` (``WARPGROUP.DEPBAR.LE gsb0, 0x0``). After that wait a consumer
adds the fresh sum to ``total``, releases the stage, waits for the next stage's ready barrier, reads its 16 B values
(``LDS``) and splits them; only then can its next products start. Both consumers' products end at about the same time
(the pipe takes their ``wgmma`` in turn), so that stretch is the pipe's idle time, and two of its parts are waits:
the ready barrier (the consumer's ``@P0 BRA`` spin, ~10 % of the consumer loop's samples) and the loads' latency (their
first use, ``VIADD …, 0x1000``, among the top stalls). The change (``Config.PREFETCH_B``, one thing): read k-tile
u + 1's 16 B values, after waiting for its ready barrier, between issuing k-tile u's products and waiting for them —
16 more registers a consumer thread (no spills: the fragments stay as they are, since they are the ``wgmma``'s
operands until the wait), the same arithmetic (tests/test_prefetch_b.py: the same bits), the flag-off PTX the
shipped one.

Timed in one run, both cuBLAS beside them: step 18 and its PREFETCH_B build at 2048³, 4096³, 8192³,
5120×2560×4096 (two slices of K) and 3001×2999×1531 (the partial-tile build, A and B copied).

Prediction: predictions/prefetch-b-before-run.md (committed before this script's first run).

**Historical.** Run once on an H200 (``experiment-prefetch-b-nvidia-h200.json``, 2026-11-30): 1.037× step 18 at
2048³, **1.002× at 4096³, 0.994× at 8192³**, 0.983× at 5120×2560×4096, 0.976× at 3001×2999×1531, the same bits
(the SASS, disassembled from the LTO build: the 16 ``LDS`` and the ready barrier's wait sit between the last
``HGMMA`` and ``WARPGROUP.DEPBAR.LE gsb0, 0x0``, as intended). The prediction's "moves nothing" case (0.98–1.02):
the ready barrier's wait and the loads' latency are not where the pipe idles. Not adopted (the rule asked ≥ 1.03× at
4096³ and 8192³); ``Config.PREFETCH_B`` and its test were removed in the next commit. To run it,
``git checkout ee93a49``.

    python -m experiments.prefetch_b [OUT.json]   # default experiments/results/experiment-prefetch-b-<gpu>.json
"""

from __future__ import annotations

import sys

from experiments import time_against_shipped

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (5120, 2560, 4096), (3001, 2999, 1531)]


def main(argv: list[str] = sys.argv) -> None:
    from dataclasses import replace

    from gemm_steps.steps import warp_specialized_3xtf32 as step18
    from gemm_steps.toolkit.tuned import default_config

    config = step18.Config.of(default_config(step18.SEARCH_SPACE))
    time_against_shipped("warp_specialized_3xtf32",
                         {"warp_specialized_3xtf32@prefetch_b": step18.build(replace(config, PREFETCH_B=True))},
                         SIZES, "prefetch-b", "step 18 with its consumers reading the next k-tile's B values while "
                         "this k-tile's products run (Config.PREFETCH_B), against step 18 as shipped "
                         "(experiments/prefetch_b.py)", argv)


if __name__ == "__main__":
    main()
