"""Choose where kernels run — a real GPU or Numba's CUDA simulator — before Numba is imported.

Numba reads ``NUMBA_ENABLE_CUDASIM`` once, at import. So ``gemm_steps`` decides first:

* ``NUMBA_ENABLE_CUDASIM=1`` already set      → simulator (your choice).
* ``NUMBA_ENABLE_CUDASIM=0`` already set      → real GPU, even if none is found (you get Numba's own error).
* unset, and the CUDA driver reports a device → real GPU.
* unset, and no driver or no device           → simulator, and :func:`describe` says so.

Nothing here is silent: ``gemm-steps info`` and every benchmark record say which backend ran.
"""

from __future__ import annotations

import ctypes
import os
import sys

_REASON = ""


def _driver_device_count() -> int:
    """Ask the CUDA driver directly (no Numba) how many GPUs it sees; 0 if there is no driver."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        if lib.cuInit(0) != 0:
            return 0
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    return 0


def _select() -> None:
    global _REASON
    if "numba" in sys.modules:
        from numba import config

        _REASON = "numba was imported before gemm_steps; using its choice"
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1" if config.ENABLE_CUDASIM else "0")
        return
    chosen = os.environ.get("NUMBA_ENABLE_CUDASIM")
    if chosen is not None:
        _REASON = f"NUMBA_ENABLE_CUDASIM={chosen} was set"
        return
    if _driver_device_count() > 0:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
        _REASON = "a CUDA GPU was found"
    else:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        _REASON = "no CUDA GPU was found, so kernels run on Numba's CUDA simulator (slow; small sizes only)"


_select()

SIMULATOR: bool = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def describe() -> str:
    """One line saying which backend runs the kernels, and why."""
    where = "Numba CUDA simulator" if SIMULATOR else "CUDA GPU"
    return f"{where} ({_REASON})"
