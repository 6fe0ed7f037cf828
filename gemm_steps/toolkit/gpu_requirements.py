"""Which GPUs a kernel exists for: one check, used where a step is asked whether it can run here
(``Step.unavailable``, hence verify, bench and the tests' skips) and where its kernels refuse to launch
(``TiledKernels._refuse_other_gpus``), so the two always agree.
"""

from __future__ import annotations

from .backend import SIMULATOR


#: The compute capabilities the course checks its steps against on a CPU (tests/test_ptx.py): Turing, the
#: Ampere data-centre and gaming chips, Ada, Hopper.
CHECKED_COMPUTE_CAPABILITIES = ((7, 5), (8, 0), (8, 6), (8, 9), (9, 0))


def missing_compute_capability(exactly: tuple[int, int] | None = None, at_least: tuple[int, int] | None = None,
                               have: tuple[int, int] | None = None) -> str | None:
    """Why a kernel cannot run on a GPU of compute capability ``have`` (default: this machine's GPU) — one that
    exists only for ``exactly`` (``wgmma``: (9, 0), the sm_90a instructions) or needs ``at_least`` (``mma.sync`` on
    TF32 and ``cp.async``: (8, 0)) — as ``"needs a GPU of compute capability 9.0; this one is 8.0"``; None where
    it can (and on the simulator, unless ``have`` is given)."""
    if exactly is None and at_least is None:
        return None
    if have is None:
        if SIMULATOR:
            return None
        from numba import cuda

        have = tuple(cuda.get_current_device().compute_capability)
    have = tuple(have)
    if exactly is not None and have != tuple(exactly):
        return f"needs a GPU of compute capability {exactly[0]}.{exactly[1]}; this one is {have[0]}.{have[1]}"
    if at_least is not None and have < tuple(at_least):
        return (f"needs a GPU of compute capability {at_least[0]}.{at_least[1]} or newer; this one is "
                f"{have[0]}.{have[1]}")
    return None
