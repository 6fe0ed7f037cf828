"""A register-tiled kernel's tile sizes: :class:`TileConfig` — the same names in every step (steps 6 onward), its
checks, and the compile-time constants derived from it. A step lists its candidates in ``SEARCH_SPACE``;
:mod:`gemm_steps.toolkit.tuned` picks the one a machine builds with.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TileConfig:
    """Tile sizes of a register-tiled kernel (the same names in every step)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 8  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 0  # launch_bounds occupancy hint (0 = none)

    @property
    def THREADS(self) -> int:
        return (self.BLOCK_M // self.THREAD_M) * (self.BLOCK_N // self.THREAD_N)

    def check(self) -> "TileConfig":
        """This configuration, if a tiled kernel can be built from it; a ValueError naming every problem if not."""
        c = self
        problems = []
        if c.THREAD_M % 4 or c.THREAD_N % 4:
            problems.append("THREAD_M and THREAD_N must be multiples of 4 (128-bit fragments)")
        if c.BLOCK_M % c.THREAD_M or c.BLOCK_N % c.THREAD_N:
            problems.append("BLOCK_M/BLOCK_N must be multiples of THREAD_M/THREAD_N")
        if c.BLOCK_K % 4:
            problems.append("BLOCK_K must be a multiple of 4 (128-bit loads along K)")
        threads = c.THREADS
        if threads > 1024 or threads % 32:
            problems.append(f"{threads} threads per block: must be a multiple of 32 and at most 1024")
        elif (c.BLOCK_M * c.BLOCK_K // 4) % threads or (c.BLOCK_K * c.BLOCK_N // 4) % threads:
            problems.append("each tile must split into whole 128-bit loads per thread")
        if problems:
            raise ValueError(f"bad tile configuration {asdict(c)}: " + "; ".join(problems))
        return c

    def constants(self) -> dict[str, int]:
        """The compile-time constants a kernel built for this configuration may declare as parameters."""
        c = self
        values = asdict(c)
        values["THREADS"] = c.THREADS
        values["THREADS_N"] = c.BLOCK_N // c.THREAD_N  # threads along a row of the block tile
        values["A_LOADS"] = c.BLOCK_M * c.BLOCK_K // 4 // c.THREADS  # 128-bit loads of A per thread per tile
        values["B_LOADS"] = c.BLOCK_K * c.BLOCK_N // 4 // c.THREADS
        values["A_VECTORS_PER_ROW"] = c.BLOCK_K // 4
        values["B_VECTORS_PER_ROW"] = c.BLOCK_N // 4
        return values


__all__ = ["TileConfig"]
