"""A run-time fix for numba-cuda 0.30 on a GPU: a kernel's module loaded by one host thread at a time.

Numba loads a compiled kernel's module into a context on its first launch there (``CUDACodeLibrary.get_cufunc``):
look in the library's cache, and on a miss load the cubin (``cuLibraryLoadData``), file the module in the context's
``modules`` — a dict that refuses a key it already holds — and cache the function. Nothing guards the miss: two host
threads launching a kernel for the first time at once both load it. On an H200 (2026-11-28, four threads calling
``matmul`` on mixed shapes) one of them then failed with ``AssertionError: key already in dictionary: <CUlibrary …>``.
:func:`apply` makes the whole lookup-or-load one step under a lock; a launch that finds its module cached holds the
lock for a dictionary lookup.
"""

from __future__ import annotations

import functools
import threading

_APPLIED = False
_LOADING = threading.Lock()


def apply() -> None:
    """Serialise ``CUDACodeLibrary.get_cufunc`` (idempotent; GPU only: the simulator loads nothing)."""
    global _APPLIED
    if _APPLIED:
        return
    from numba.cuda.codegen import CUDACodeLibrary

    original = CUDACodeLibrary.get_cufunc

    @functools.wraps(original)
    def get_cufunc(self):
        with _LOADING:
            return original(self)

    CUDACodeLibrary.get_cufunc = get_cufunc
    _APPLIED = True


__all__ = ["apply"]
