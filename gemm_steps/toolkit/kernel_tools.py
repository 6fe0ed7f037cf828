"""One source for GPU and simulator: the few knobs the simulator does not accept, made harmless there.

* :func:`kernel` is ``cuda.jit`` with GPU-only options (``launch_bounds``, ``max_registers``) dropped on the simulator.
* :data:`SHARED_ALIGN` is the ``alignment=`` to give ``cuda.shared.array``: 16 bytes on a GPU (so 128-bit shared-memory
  loads are legal), ``None`` on the simulator (which refuses any alignment, and whose NumPy buffers are aligned anyway).

Simulator quirk worth knowing: it tells shared arrays apart by *source line*, so two ``cuda.shared.array`` calls on
one line share memory there. Give each its own line.
"""

from __future__ import annotations

from numba import cuda

from .backend import SIMULATOR

SHARED_ALIGN = None if SIMULATOR else 16


def kernel(func=None, *, launch_bounds=None, max_registers=None, **jit_options):
    """``@cuda.jit`` for a kernel, accepting GPU-only tuning options that the simulator would reject."""
    if not SIMULATOR:
        if launch_bounds is not None:
            jit_options["launch_bounds"] = launch_bounds
        if max_registers is not None:
            jit_options["max_registers"] = max_registers
    decorate = cuda.jit(**jit_options)
    return decorate(func) if func is not None else decorate


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
