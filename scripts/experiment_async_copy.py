"""cp.async (global → shared without registers) and cheaper stage arithmetic in step 9, timed in one run.

Variants of step 9's tile kernel (same 128×256×8 tiles, 8×16 per thread), all from step 8's template:
* ``ASYNC_B``: B's k-tile is copied with 16-byte ``cp.async`` straight into the next shared stage (``LDGSTS.128``);
* ``ASYNC_A`` too: A's four floats per thread with 4-byte ``cp.async`` into their transposed places (``LDGSTS``);
* ``uint32 stage``: the stage index ``k_tile % 2`` in unsigned 32-bit arithmetic (the template computes it from the
  signed 64-bit loop counter, which ``ptxas`` turns into a sign test and 64-bit adds every k-tile).
Prediction: the k-loop is bound by instruction issue (lesson 9), so each variant moves time by about its change in
instructions per k-tile; ``ptxas`` 13.0 for sm_90 counts 1,164 (shipped), 1,152 (uint32 stage), 1,193 (both
copies async; their address arithmetic costs more than the loads and stores they replace): within ±3 %, and the
async copies a little slower unless fewer registers (229 vs 253) or the missing STS/barrier waits matter more.
The shipped kernel runs first and again last. Writes JSON to argv[1].
"""
import sys

from gemm_steps import bench
from gemm_steps.steps import warp_tiling
from gemm_steps.steps.double_buffered import TEMPLATE
from gemm_steps.tiling import TiledKernels

SIGNED = ("uint32((k_tile - 1) % 2)", "uint32(k_tile % 2)")
UNSIGNED = ("((uint32(k_tile) + uint32(1)) % uint32(2))", "(uint32(k_tile) % uint32(2))")


def with_stage_math(template: str, new: tuple, old: tuple) -> str:
    for before, after in zip(old, new):
        template = template.replace(before, after)
    return template


config = warp_tiling.TILED.config
layout = warp_tiling.layout(config)
signed_template = with_stage_math(TEMPLATE, SIGNED, UNSIGNED)
unsigned_template = with_stage_math(TEMPLATE, UNSIGNED, SIGNED)
specs = [
    ("step9 shipped", TEMPLATE, {}),
    ("uint32 stage", unsigned_template, {}),
    ("async B", signed_template, {"ASYNC_B": True}),
    ("async A+B", signed_template, {"ASYNC_A": True, "ASYNC_B": True}),
    ("async A+B, uint32 stage", unsigned_template, {"ASYNC_A": True, "ASYNC_B": True}),
    ("step9 shipped again", TEMPLATE, {}),
]
variants = [(label, TiledKernels("x_" + "".join(ch if ch.isalnum() else "_" for ch in label), template, config,
                                 {**layout, **flags}))
            for label, template, flags in specs]
bench.time_variants(variants, (4096, 8192), sys.argv[1])
