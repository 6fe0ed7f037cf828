"""Step 9's k-column in other, equivalent shapes: FMA orders and shared-load placement, timed in one run.

Lessons 9's experiments showed that small PTX changes move step 9 by ±6 % through the schedule and register
allocation `ptxas` picks, in directions no instruction count predicts. So instead of predicting, search: every
variant here computes exactly the same products in the same k order for each element of C (bit-identical results;
only the order of independent FMAs within one k-column, or where the fragment loads sit, differs):
* FMA orders: ``serpentine`` (shipped), ``row`` (row by row), ``column`` (column by column), ``column serpentine``,
  ``quad`` (for each group of 4 columns, rows serpentine — the order ptxas itself picks for the shipped kernel);
* ``just in time``: A's fragments first, then each group of 4 B values loaded right before its FMAs.
Prediction: a spread of a few percent, as in the earlier runs, with the shipped order neither best nor worst by
design; anything over +1 % at both sizes, and over the shipped kernel's first-vs-last spread, is worth adopting.
The shipped kernel runs first and again last. Writes JSON to argv[1].
"""
import sys

from gemm_steps import bench
from gemm_steps.steps import warp_tiling
from gemm_steps.steps.double_buffered import TEMPLATE
from gemm_steps.tiling import TiledKernels

SHIPPED_FMAS = """# @for i in range(THREAD_M)
# @for jj in range(THREAD_N)
            acc_{{i}}_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}} += a_{{i}} * b_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}}
# @end
# @end
"""
B_LOADS_THEN_FMAS = """# @for q in range(0, THREAD_N, 4)
            b_{{q}}, b_{{q+1}}, b_{{q+2}}, b_{{q+3}} = load_float4(b_tile, stage_b + thread_col + {{kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE}})
# @end
""" + SHIPPED_FMAS
ORDERED_FMAS = """# @for p in range(THREAD_M * THREAD_N)
            acc_{{ORDER[p][0]}}_{{ORDER[p][1]}} += a_{{ORDER[p][0]}} * b_{{ORDER[p][1]}}
# @end
"""
JUST_IN_TIME = """# @for q in range(0, THREAD_N, 4)
            b_{{q}}, b_{{q+1}}, b_{{q+2}}, b_{{q+3}} = load_float4(b_tile, stage_b + thread_col + {{kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE}})
# @for i in range(THREAD_M)
# @for jj in range(4)
            acc_{{i}}_{{q + (3 - jj if i % 2 else jj)}} += a_{{i}} * b_{{q + (3 - jj if i % 2 else jj)}}
# @end
# @end
# @end
"""
assert TEMPLATE.count(B_LOADS_THEN_FMAS) == 1, "step 8's template changed: update this experiment"


def order(kind: str, rows: int, cols: int) -> tuple:
    if kind == "row":
        return tuple((i, j) for i in range(rows) for j in range(cols))
    if kind == "column":
        return tuple((i, j) for j in range(cols) for i in range(rows))
    if kind == "column serpentine":
        return tuple((i if j % 2 == 0 else rows - 1 - i, j) for j in range(cols) for i in range(rows))
    if kind == "quad":
        return tuple((i, q + (3 - jj if i % 2 else jj)) for q in range(0, cols, 4) for i in range(rows) for jj in range(4))
    raise ValueError(kind)


config = warp_tiling.TILED.config
layout = warp_tiling.layout(config)
specs = [("step9 shipped", TEMPLATE, {})]
for kind in ("row", "column", "column serpentine", "quad"):
    specs.append((kind, TEMPLATE.replace(SHIPPED_FMAS, ORDERED_FMAS, 1),
                   {"ORDER": order(kind, config.THREAD_M, config.THREAD_N)}))
specs.append(("just in time", TEMPLATE.replace(B_LOADS_THEN_FMAS, JUST_IN_TIME, 1), {}))
specs.append(("step9 shipped again", TEMPLATE, {}))
variants = [(label, TiledKernels("shape_" + "".join(ch if ch.isalnum() else "_" for ch in label), template, config,
                                 {**layout, **extra}))
            for label, template, extra in specs]
bench.time_variants(variants, (4096, 8192), sys.argv[1])
