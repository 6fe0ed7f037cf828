"""Launching a kernel that reads its tiles through the copy engine (TMA): :class:`TmaTiles`.

A TMA kernel does not take A and B only as arrays: the copy engine reads them through *tensor maps*, 128-byte
descriptors made on the host (``mbarrier_ops.tensor_map_2d``: the matrix's address, shape and row pitch, the box
one copy brings, and the swizzle it writes). Numba has no ``__grid_constant__`` parameters, so each map lives in a
small device array and the kernel takes two more arguments, A's map and B's. A map holds its matrix's address: it
is made once per buffer and shape, kept, and a recorded launch plan is keyed by A's and B's addresses.

Everything else is :class:`~gemm_steps.toolkit.tiles.TiledKernels`' (full tiles on the fast kernel, the rest on an
edge kernel that a TMA build takes from another build, ``edge=``).
"""

from __future__ import annotations

from .kernel_tools import device_pointer
from .mbarrier_ops import tensor_map_2d
from .tiles import SIGNATURE, TiledKernels


class TmaTiles(TiledKernels):
    """A tiled build whose fast kernel takes tensor maps of A (``BLOCK_M × BLOCK_K`` boxes, 128-byte swizzled: the
    layout ``wgmma`` reads) and B (``BLOCK_K × B_STRIDE`` boxes: ``B_STRIDE − BLOCK_N`` columns wider than the tile,
    so each row lands padded, zeros past B's last column)."""

    signature_fast = SIGNATURE[:-1] + ", uint64[::1], uint64[::1])"
    #: Maps kept at most (a map holds its matrix's address; old ones are dropped, not freed one by one).
    MAPS_KEPT = 16

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._maps: dict = {}
        self._matrices = None

    def signature(self, variant: str) -> str:
        return self.signature_fast if variant == "fast" else SIGNATURE

    def plan_key(self, a, b, pointers, stream) -> tuple:
        return (*super().plan_key(a, b, pointers, stream), *pointers[:2])  # the plan holds A's and B's tensor maps

    def launch_through_numba(self, a, b, c, stream=0) -> None:
        self._matrices = (a, b)
        super().launch_through_numba(a, b, c, stream)

    def tensor_maps(self, a, b) -> tuple:
        """A's and B's tensor maps (device arrays), made on first use for these buffers and shapes."""
        key = (device_pointer(a), a.shape, device_pointer(b), b.shape)
        if key not in self._maps:
            if len(self._maps) >= self.MAPS_KEPT:
                self._maps.clear()
            config = self.config
            self._maps[key] = (tensor_map_2d(a, config.BLOCK_M, config.BLOCK_K, swizzle_128=True),
                               tensor_map_2d(b, config.BLOCK_K, self.constants["B_STRIDE"]))
        return self._maps[key]

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream) -> None:
        self.configured("fast", (full_cols, full_rows), stream)(*flat, *sizes, *self.tensor_maps(*self._matrices))


__all__ = ["TmaTiles"]
