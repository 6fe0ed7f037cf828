"""Choose where kernels run — a real GPU or Numba's CUDA simulator — before Numba is imported.

Numba reads ``NUMBA_ENABLE_CUDASIM`` once, at import. So ``gemm_steps`` decides first:

* ``NUMBA_ENABLE_CUDASIM=1`` already set      → simulator (your choice).
* ``NUMBA_ENABLE_CUDASIM=0`` already set      → real GPU, even if none is found (you get Numba's own error).
* unset, and the CUDA driver reports a device → real GPU.
* unset, and no driver or no device           → simulator, and :func:`describe` says so.

Import order does not matter as long as ``numba.cuda`` has not been imported yet: after a plain ``import numba``
the choice is still open (numba-cuda reads ``numba.config.ENABLE_CUDASIM`` when ``numba.cuda`` is imported), so the
same rules apply. Once ``numba.cuda`` is imported its choice stands; if it chose a GPU that is not there,
importing ``gemm_steps`` stops at once with one sentence saying what to do, instead of failing later at a launch.

Nothing here is silent: ``gemm-steps info`` and every benchmark record say which backend ran.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path

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


class BackendError(ImportError):
    """numba.cuda was imported first and chose a backend that cannot work here."""


def _select() -> None:
    global _REASON
    if "numba.cuda" in sys.modules:  # numba.cuda has chosen already; it cannot change its mind
        from numba.cuda.core import config

        simulator = bool(config.ENABLE_CUDASIM)
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if simulator else "0"
        _REASON = "numba.cuda was imported before gemm_steps; using its choice"
        if not simulator and _driver_device_count() == 0:
            raise BackendError(
                "numba.cuda was imported before gemm_steps and chose a CUDA GPU, but this machine has none: restart "
                "Python and import gemm_steps before numba.cuda (or set NUMBA_ENABLE_CUDASIM=1 before importing "
                "numba) to run the kernels on Numba's CUDA simulator.")
        return
    chosen = os.environ.get("NUMBA_ENABLE_CUDASIM")
    if chosen is not None:
        _REASON = f"NUMBA_ENABLE_CUDASIM={chosen} was set"
    elif _driver_device_count() > 0:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
        _REASON = "a CUDA GPU was found"
    else:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        _REASON = "no CUDA GPU was found, so kernels run on Numba's CUDA simulator"
    if "numba" in sys.modules:  # imported, but not numba.cuda: its config was read before we set the variable
        import numba

        numba.config.ENABLE_CUDASIM = int(os.environ["NUMBA_ENABLE_CUDASIM"] not in ("", "0"))
        _REASON += " (numba was imported first; numba.cuda was not yet, so the choice was still open)"


_select()

SIMULATOR: bool = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def describe() -> str:
    """One sentence saying which backend runs the kernels, and why."""
    if SIMULATOR:
        return f"Numba's CUDA simulator: {_REASON}. It is slow: use small matrices (tens to a few hundred rows)."
    return f"CUDA GPU: {_REASON}."


def user_cache() -> Path:
    """The folder where the package keeps files for this user between runs (``$GEMM_STEPS_CACHE``, else
    ``~/.cache/gemm-steps``): generated kernel sources and expansions, tuned and dispatch tables, compiled kernels'
    reports."""
    return Path(os.environ.get("GEMM_STEPS_CACHE") or Path.home() / ".cache" / "gemm-steps")


def kept_text(folder: str, name: str) -> str | None:
    """The file ``name`` that :func:`keep_text` kept in ``folder`` of :func:`user_cache`, or None (never kept, gone,
    unreadable). Read, it becomes one of the newest: kept longest."""
    path = user_cache() / folder / name
    try:
        text = path.read_text()
        os.utime(path)
    except (OSError, UnicodeDecodeError):
        return None
    return text


def keep_text(folder: str, name: str, text: str, most: int) -> None:
    """Write ``text`` as ``name`` in ``folder`` of :func:`user_cache`, whole or not at all (two processes may write
    it at once), then delete the oldest files with ``name``'s suffix past ``most``, each with its ``.lock`` if it has
    one. An unwritable cache is passed over: it only costs the next process the work again."""
    place = user_cache() / folder
    try:
        place.mkdir(parents=True, exist_ok=True)
        partial = place / f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        partial.write_text(text)
        os.replace(partial, place / name)
        kept = sorted(place.glob(f"*{Path(name).suffix}"), key=lambda path: path.stat().st_mtime)
        for old in kept[:-most]:  # a changed input makes a new name: the old ones are never asked again
            old.unlink(missing_ok=True)
            old.with_suffix(".lock").unlink(missing_ok=True)
    except OSError:
        pass
