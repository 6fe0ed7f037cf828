"""Step 11 — stream-K: share the last, part-empty wave out by k-iterations, not by tiles.

Changed from step 10: with T output tiles and G resident blocks, a tile-per-block schedule runs ceil(T / G) waves
and the last one is only (T mod G) / G full — 144 tiles on 132 SMs take two waves for 1.09 waves of work.
Stream-K cuts the *k-loop* instead: the stream-K tiles' k-iterations are split evenly over the G blocks, so a
block may compute k-tiles 0–40 of one tile and 0–12 of the next. Blocks that stop before a tile's last k-tile
write their partial sums to a workspace and raise a flag; the block that computes the tile's last k-tile waits
for the flags of the (lower-numbered) blocks that share the tile, adds their partial sums in a fixed order, and
stores C. Hybrid (``tiling.stream_k_split``): whole waves stay data-parallel and only the remainder (plus one
wave, for balance) is stream-K; shapes whose tiles fill whole waves run purely data-parallel.
Deterministic: the partial sums are added in a fixed order (nearest block first) for a given grid size, so
repeated runs give bitwise-identical results on one GPU; the order (and so the rounding) differs from step 10's.
Deadlock-free: a block only ever waits for lower-numbered blocks, which are all resident (the grid is
SMs × occupancy) and whose partial sums never wait on anything.
Expect: ≈ step 10 where tiles fill whole waves; up to (waves rounded up)/(waves) faster on wave-boundary and
K-heavy shapes (few tiles, long k-loops), minus the fixup traffic.
"""

from ..tiling import TileConfig, TiledKernels
from ..tuning import tuned_config
from .double_buffered import TEMPLATE
from .warp_tiling import SEARCH_SPACE as WARP_TILING_SPACE
from .warp_tiling import layout

TITLE = "Stream-K: split the last wave's work by k-iterations"
SUMMARY = "Whole waves run data-parallel; the leftover tiles' k-loops are split evenly over all blocks and fixed up."

SEARCH_SPACE = WARP_TILING_SPACE


def build(config: TileConfig, overrides: dict | None = None) -> TiledKernels:
    return TiledKernels("stream_k", TEMPLATE, config, {**layout(config), "STREAM_K": True}, overrides)


_kernels = build(tuned_config("warp_tiling", SEARCH_SPACE))
CONFIG = _kernels.constants
KERNELS = _kernels.ptx_kernels()


def launch(a, b, c, stream=0):
    _kernels.launch(a, b, c, stream)


def source() -> str:
    return _kernels.source()
