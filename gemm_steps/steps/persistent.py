"""Step 10 — persistent kernel: launch only what the GPU runs at once, and loop over tiles in L2-friendly order.

Changed from step 9: the same warp-tiled, double-buffered tile computation (step 8's template with
``PERSISTENT = True``), but the grid is ``SMs × resident blocks per SM`` (the occupancy the driver reports for
this kernel), and block b computes tiles b, b + gridDim.x, … (grid-stride over tiles). Tiles are numbered by
column within groups of GROUP_M tile-rows, column by column, so the tiles in flight together reuse the same
rows of A and columns of B from L2 (GROUP_M = 1 is plain row-major order: swizzle off).
Why it can be faster: no block launch/retire per tile, and a deliberate L2-friendly order. Why it may not be:
with 1 block/SM a non-persistent grid already runs in waves of 132 tiles, and the hardware scheduler is fast;
the last wave is just as partial either way (wave quantization: see the stream-K discussion in the lesson).
Measure both; the lesson shows where it wins, where it is flat, and why.
Edges: the persistent loop covers the full tiles; edge tiles run on the (non-persistent) guarded kernel.
"""

from ..tiling import TileConfig, TiledKernels
from ..tuning import tuned_config
from .double_buffered import TEMPLATE
from .warp_tiling import SEARCH_SPACE as WARP_TILING_SPACE
from .warp_tiling import layout

TITLE = "Persistent: one resident wave of blocks loops over L2-grouped tiles"
SUMMARY = "Launch SMs × occupancy blocks that grid-stride over tiles in grouped (swizzled) order for L2 reuse."

GROUP_M = 8  # tile-rows per group in the tile order; 1 = row-major (no swizzle)

SEARCH_SPACE = WARP_TILING_SPACE


def build(config: TileConfig, group_m: int = GROUP_M, overrides: dict | None = None) -> TiledKernels:
    return TiledKernels("persistent", TEMPLATE, config, {**layout(config), "PERSISTENT": True, "GROUP_M": group_m},
                        overrides)


TILED = build(tuned_config("warp_tiling", SEARCH_SPACE))  # launch, source(), KERNELS, CONFIG: see step.py

PTX_EXPECT = TILED.unrolled_ptx_claims(barriers=1)
