"""Which GPUs a kernel exists for: one check, used where a step is asked whether it can run here
(``Step.unavailable``, hence verify, bench and the tests' skips) and where its kernels refuse to launch
(``TiledKernels._refuse_other_gpus``), so the two always agree.
"""

from __future__ import annotations

from .backend import SIMULATOR


def missing_compute_capability(need: tuple[int, int] | None) -> str | None:
    """Why a kernel that exists only for compute capability ``need`` (``wgmma``: (9, 0)) cannot run on this GPU —
    ``"needs a GPU of compute capability 9.0; this one is 8.0"`` — or None where it can (and on the simulator)."""
    if need is None or SIMULATOR:
        return None
    from numba import cuda

    have = tuple(cuda.get_current_device().compute_capability)
    if have == tuple(need):
        return None
    return f"needs a GPU of compute capability {need[0]}.{need[1]}; this one is {have[0]}.{have[1]}"
