"""Does step 23 run faster at 8192³ when B's box is read with less padding? (issue 36: TF32 ≥ 100 % of cuBLAS TF32 at
8192³, where step 23 ran 0.98–0.996×.)

Step 23's copy engine brings a k-tile of B as one box of BLOCK_K rows × B_STRIDE = BLOCK_N + 8 columns: the 8 more
columns (6 % more of B's bytes, ~3 % more of a block's bytes a k-tile, A's half being multicast) are there so that a
stage's rows lie 8 banks apart and the consumers' fragment loads of B do not conflict. At 8192³ the H200 runs its
tensor-core kernels at the 700 W limit, where a kernel's speed is its work per joule
(experiments/results/experiment-reference-step-23-nvidia-h200.json: step 23 moved 1.07–1.09× cuBLAS TF32's L2
bytes per FLOP and spent 1.05–1.06× its energy per FLOP; cuBLAS's copies are 128-byte-swizzled boxes with no
padding). One change, three values: B_STRIDE = BLOCK_N + 8 (shipped), + 4 (half the extra bytes; rows 4 banks apart:
2-way conflicts in the fragment loads) and + 0 (none; rows on the same banks: 4-way). The same values reach the
tensor core (tests/test_b_stride.py: the same bits on the simulator).

Timed in one run, both cuBLAS beside them, at 2048³, 4096³ and 8192³.

Prediction: predictions/b-stride-before-run.md (committed before this script's first run).

Measured twice on an H200 (2026-11-30; ``experiment-b-stride-nvidia-h200.json``, ``-2`` with step 23 timed last),
over step 23 at 2048³ / 4096³ / 8192³: pad 4 0.982 / 0.986 / 0.994 and 0.988 / 0.987 / 0.986; pad 0 0.921 / 0.945 /
0.979 and 0.926 / 0.948 / 0.961, the same bits. At 8192³ pad 0 ran at a higher clock (median 1,787 and 1,771 MHz
against step 23's 1,698 and 1,712) and still slower: its conflicts cost more work per clock than its fewer bytes
saved in power. Below the prediction's ranges at 2048³ and 4096³ for pad 4 (0.98–1.02 predicted; 0.982–0.988
measured, just under or at the edge) and inside them elsewhere. Not adopted (the rule asked ≥ 1.01× at 8192³ in both
runs): step 23 keeps 8. The experiment needs nothing removed from the step (its build is a ``Config`` subclass here)
and runs as it is.

    python -m experiments.b_stride [OUT.json] [--shipped-last]   # default experiments/results/experiment-b-stride-<gpu>.json
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from experiments import time_against_shipped

SIZES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)]
PADS = (4, 0)


def padded_config(pad: int):
    """Step 23's tuned configuration with B's rows padded by ``pad`` floats instead of 8."""
    from gemm_steps.steps import cluster_stream_k_tma_store as step23
    from gemm_steps.toolkit.tuned import default_config

    @dataclass(frozen=True)
    class Padded(step23.Config):
        B_PAD: int = 8

        @property
        def B_STRIDE(self) -> int:  # floats per row of a stage of B (the copy's box is that wide)
            return self.BLOCK_N + self.B_PAD

    return Padded.of(default_config(step23.SEARCH_SPACE), B_PAD=pad)


def builds() -> dict:
    from gemm_steps.steps import cluster_stream_k_tma_store as step23

    return {f"cluster_stream_k_tma_store@pad{pad}": step23.build(padded_config(pad)) for pad in PADS}


def main(argv: list[str] = sys.argv) -> None:
    time_against_shipped("cluster_stream_k_tma_store", builds(), SIZES, "b-stride",
                         "step 23 with B's rows padded by 4 and by 0 floats instead of 8 (experiments/b_stride.py)",
                         argv)


if __name__ == "__main__":
    main()
