"""Step 11 — stream-K: share the last, part-empty wave out by k-iterations, not by tiles.

Changed from step 10: with T output tiles and G resident blocks, a tile-per-block schedule runs ceil(T / G) waves
and the last one is only (T mod G) / G full — 144 tiles on 132 SMs take two waves for 1.09 waves of work.
Stream-K cuts the *k-loop* instead: the stream-K tiles' k-iterations are split evenly over the G blocks, so a
block may compute k-tiles 0–40 of one tile and 0–12 of the next. Blocks that stop before a tile's last k-tile
write their partial sums to a workspace and raise a flag; the block that computes the tile's last k-tile waits
for the flags of the (lower-numbered) blocks that share the tile, adds their partial sums in a fixed order, and
stores C. Each block walks its share backwards, so the pieces others wait for are computed first (walking
forwards chains every block's wait onto the previous block's: measured 6.7 % of cuBLAS at 4096³ that way).
Hybrid (``tiling.stream_k_split``): if a tile-per-block schedule keeps ≥ 90 % of block slots busy, step 11 simply
runs step 10; otherwise whole waves stay data-parallel and only the remainder (plus one wave, for balance) is
stream-K.
Deterministic: the partial sums are added in a fixed order (nearest block first) for a given grid size, so
repeated runs give bitwise-identical results on one GPU; the order (and so the rounding) differs from step 10's.
Deadlock-free: a block only ever waits for lower-numbered blocks, which are all resident (the grid is
SMs × occupancy) and whose partial sums never wait on anything.
Expect: ≈ step 10 where tiles fill whole waves; up to (waves rounded up)/(waves) faster on wave-boundary and
K-heavy shapes (few tiles, long k-loops), minus the fixup traffic.
"""

from ..tiling import TileConfig, TiledKernels
from . import persistent
from .double_buffered import TEMPLATE
from .warp_tiling import SEARCH_SPACE as WARP_TILING_SPACE
from .warp_tiling import layout

TITLE = "Stream-K: split the last wave's work by k-iterations"
SUMMARY = "Whole waves run data-parallel; the leftover tiles' k-loops are split evenly over all blocks and fixed up."

SEARCH_SPACE = WARP_TILING_SPACE


def build(config: TileConfig, overrides: dict | None = None, data_parallel: TiledKernels | None = None) -> TiledKernels:
    if data_parallel is not None and data_parallel.config != config:
        raise ValueError("the data-parallel fallback must use the same tile configuration (it covers the same tiles)")
    kernels = TiledKernels("stream_k", TEMPLATE, config, {**layout(config), "STREAM_K": True}, overrides)
    kernels.data_parallel_fallback = data_parallel
    return kernels


# Where the tiles fill whole waves, step 11 is step 10 (same configuration, same compiled kernel).
TILED = build(persistent.TILED.config, data_parallel=persistent.TILED)  # launch, source(), KERNELS, CONFIG: see step.py

# The fixup adds barriers, and one scalar ld.global.cg per accumulator (reading another block's partial sums).
PTX_EXPECT = TILED.unrolled_ptx_claims()
PTX_EXPECT["stream_k_fast"]["ld.global.f32"] = TILED.config.THREAD_M * TILED.config.THREAD_N
