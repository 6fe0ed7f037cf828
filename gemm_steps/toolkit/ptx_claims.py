"""What a step's PTX must show, stated in its file as ``PTX_EXPECT`` and checked by tests/test_ptx.py (which compiles
every step for the GPUs of ``gpu_requirements.CHECKED_COMPUTE_CAPABILITIES`` on a CPU). This module holds the claims
several steps share; a step with claims of its own writes them out as a dict beside its kernel.
"""

from __future__ import annotations

from .tile_config import TileConfig


def unrolled_k_tile(name: str, config: TileConfig, barriers: int | None = None) -> dict:
    """The claims of a SIMT step (7–11) whose k-loop is unrolled, for its fast kernel ``{name}_fast``.

    One k-tile, unrolled, is BLOCK_K × THREAD_M × THREAD_N FMAs fed by BLOCK_K × (THREAD_M + THREAD_N) / 4 128-bit
    shared loads; global loads and C stores are 128-bit; no register array spills to local memory; ``barriers``
    ``bar.sync`` a k-tile where the step says how many.
    """
    c = config
    claims = {"fma.rn.f32": c.BLOCK_K * c.THREAD_M * c.THREAD_N,
              "ld.shared.v4.f32": c.BLOCK_K * (c.THREAD_M + c.THREAD_N) // 4,
              "ld.global.v4.f32": ">=1", "st.global.v4.f32": ">=1", "ld.global.f32": 0, "local": 0}
    if barriers is not None:
        claims["bar.sync"] = barriers
    return {f"{name}_fast": claims}


__all__ = ["unrolled_k_tile"]
