"""Step 9's k-column in other, equivalent shapes: FMA orders and shared-load placement, timed in one run.

Lesson 9's experiments showed that small PTX changes move step 9 by ±6 % through the schedule and register
allocation ``ptxas`` picks, in directions no instruction count predicts. So instead of predicting, search: every
variant here (``experiments/kernels/warp_tiling_fma_order.py``) computes exactly the same products in the same k
order for each element of C (bit-identical results; only the order of independent FMAs within one k-column, or
where the fragment loads sit, differs):
* FMA orders: ``serpentine`` (shipped), ``row`` (row by row), ``column`` (column by column), ``column serpentine``,
  ``quad`` (for each group of 4 columns, rows serpentine — the order ptxas itself picks for the shipped kernel);
* ``just in time``: A's fragments first, then each group of 4 B values loaded right before its FMAs.
Prediction: a spread of a few percent, as in the earlier runs, with the shipped order neither best nor worst by
design; anything over +1 % at both sizes, and over the shipped kernel's first-vs-last spread, is worth adopting.
The shipped kernel runs first and again last.

    python -m experiments.code_shapes [OUT.json]   # default: experiments/results/experiment-code-shapes-<gpu>.json
"""
import sys

from experiments import kernel_name, output_path, require_gpu
from experiments.kernels import warp_tiling_fma_order
from gemm_steps.harness import bench
from gemm_steps.steps import warp_tiling

SIZES = (4096, 8192)


def variants() -> list:
    """``(label, TiledKernels)`` pairs, in the order they are timed."""
    config = warp_tiling.TUNING.kernels().config
    shapes = ("row", "column", "column serpentine", "quad", "just in time")
    return ([("step9 shipped", warp_tiling.build(config))]
            + [(shape, warp_tiling_fma_order.build(config, shape, name=kernel_name("shape", shape)))
               for shape in shapes]
            + [("step9 shipped again", warp_tiling.build(config))])


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/code_shapes.py")
    bench.time_variants(variants(), SIZES, output_path("code-shapes", argv[1] if len(argv) > 1 else None))


if __name__ == "__main__":
    main()
