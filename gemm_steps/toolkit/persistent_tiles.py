"""The schedules that loop over tiles: :class:`PersistentTiles` (step 10: as many blocks as the GPU runs at once, each
walking tiles) and :class:`StreamKTiles` (step 11: whole waves data-parallel, the rest split by k-iterations).

The looping kernels do not split a product into fast and edge launches as :class:`~.tiles.TiledKernels` does: their
guarded variant loops over every tile, partial ones included, whenever the fast one cannot take the whole product,
so one kernel runs (and compiles) per product.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numba import cuda

from .backend import SIMULATOR
from .kernel_builds import SIGNATURE_STREAM_K
from .kernel_tools import ceil_div, quiet_small_grids
from .tile_config import tile_fields
from .tiles import SIMULATED_RESIDENT_BLOCKS, TiledKernels, flat_operands
from .workspaces import Workspaces


class PersistentTiles(TiledKernels):
    """Step 10's schedule: as many blocks as the GPU runs at once, each looping over tiles.

    One kernel covers every shape. Where every tile is full and the 128-bit path applies, the fast variant loops over
    the tiles; otherwise the guarded variant (the kernel's ``if EDGE:`` branches: scalar loads zero-filled outside
    the matrices, stores only inside C) loops over *all* tiles, partial ones included, with the same schedule — so
    a ragged product keeps the persistent (and, in step 11, stream-K) balance instead of running its edge tiles as a
    separate, partly empty wave.
    """

    schedule = "persistent grid"
    edge_label = "guarded, every tile (used unless every tile is full and the 128-bit path applies)"

    def launch_through_numba(self, a, b, c, stream=0, launches: list | None = None) -> None:
        cfg = self.config
        (m, n, k), flat = flat_operands(a, b, c)
        rows, cols = ceil_div(m, cfg.BLOCK_M), ceil_div(n, cfg.BLOCK_N)
        whole = m % cfg.BLOCK_M == 0 and n % cfg.BLOCK_N == 0 and self.fast_path_applies(a, b, c)
        sizes = (np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(rows), np.uint32(cols))
        with quiet_small_grids():  # a small product is a small grid on purpose
            self.launch_tiles("fast" if whole else "edge", flat, sizes, rows, cols, stream, launches)

    def launch_tiles(self, variant: str, flat, sizes, rows: int, cols: int, stream,
                     launches: list | None = None) -> None:
        """The ``variant`` kernel over rows × cols tiles (the kernel's ``tile_rows``, ``tile_cols``); ``launches``:
        where to write the launch down instead (or None)."""
        self.configured(variant, min(rows * cols, self.resident_blocks(variant)), stream, launches)(*flat, *sizes)

    def estimated_resident_blocks(self) -> int:
        """Blocks the GPU runs at once, without compiling: SMs × the launch-bounds hint (at least 1 per SM). Used
        only to choose a schedule (step 11's fallback), so that a first call compiles one kernel, not two; a grid
        is always sized from the compiled kernel's occupancy (:meth:`resident_blocks`)."""
        if SIMULATOR:
            return SIMULATED_RESIDENT_BLOCKS
        return max(1, self.config.MIN_BLOCKS_PER_SM) * cuda.get_current_device().MULTIPROCESSOR_COUNT


class StreamKTiles(PersistentTiles):
    """Step 11's schedule: whole waves of tiles data-parallel, the rest split by k-iterations, as ``split`` decides.

    ``data_parallel_fallback``: the kernels that run a whole launch when the split leaves nothing to stream-K.
    """

    schedule = "stream-K"
    signature_fast = SIGNATURE_STREAM_K

    def __init__(self, *args, split: Callable[[int, int], tuple[int, int]],
                 data_parallel_fallback: TiledKernels | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        #: How tiles split into (data-parallel, stream-K) tiles for a grid of so many blocks: step 11's policy
        #: (``steps.stream_k.stream_k_split``), or another (an experiment's "all stream-K").
        self.split = split
        self._workspaces = Workspaces()
        if data_parallel_fallback is not None and tile_fields(data_parallel_fallback.config) != tile_fields(self.config):
            raise ValueError("the data-parallel fallback must use the same tile configuration (it covers the same tiles)")
        self.data_parallel_fallback = data_parallel_fallback

    def signature(self, variant: str) -> str:
        return SIGNATURE_STREAM_K  # both variants take the workspace, flags and split

    def _workspace(self, blocks: int, stream):
        """Partial-sum slots (one tile per block) and their flags, kept per context and per stream: the flags start
        at 0 and every launch leaves them at 0 (each raised flag is reset by the block that consumed it). Launches on
        one stream run one after another; launches on two streams may overlap, so each stream has its own."""
        tile = self.config.BLOCK_M * self.config.BLOCK_N
        return self._workspaces.get(blocks, stream, lambda: (
            cuda.device_array(blocks * tile, dtype=np.float32, stream=stream),
            cuda.to_device(np.zeros(blocks, dtype=np.int32), stream=stream)))

    def launch_tiles(self, variant: str, flat, sizes, rows: int, cols: int, stream,
                     launches: list | None = None) -> None:
        tiles = rows * cols
        fallback = self.data_parallel_fallback
        # Decide before compiling anything (the estimate needs no kernel), so that a shape the fallback runs
        # entirely never compiles the stream-K kernel, and one that needs stream-K never compiles the fallback.
        if fallback is not None and self.split(tiles, self.estimated_resident_blocks())[1] == 0:
            fallback.launch_tiles(variant, flat, sizes, rows, cols, stream, launches)
            return
        blocks = self.resident_blocks(variant)
        data_parallel, stream_k = self.split(tiles, blocks)
        workspace, flags = self._workspace(blocks, stream)
        self.configured(variant, blocks, stream, launches)(*flat, *sizes, workspace, flags, np.uint32(data_parallel),
                                                           np.uint32(stream_k))


__all__ = ["PersistentTiles", "StreamKTiles"]
