"""One source for GPU and simulator: the few knobs the simulator does not accept, made harmless there.

* :func:`kernel` is ``cuda.jit`` with GPU-only options (``launch_bounds``, ``max_registers``) dropped on the simulator.
* :data:`SHARED_ALIGN` is the ``alignment=`` to give ``cuda.shared.array``: 16 bytes on a GPU (so 128-bit shared-memory
  loads are legal), ``None`` on the simulator (which refuses any alignment, and whose NumPy buffers are aligned anyway).

* :func:`on_one_cpu` runs a simulated launch of a kernel whose threads meet in warp-wide operations on one CPU.

Simulator quirk worth knowing: it tells shared arrays apart by *source line*, so two ``cuda.shared.array`` calls on
one line share memory there. Give each its own line.
"""

from __future__ import annotations

import contextlib
import os
from functools import partial

from numba import cuda

from .backend import SIMULATOR

if SIMULATOR:
    from . import simulator_patches

    simulator_patches.apply()  # syncthreads as a counting barrier (that module says why)
else:
    from . import driver_patches

    driver_patches.apply()  # a kernel's module loaded by one host thread at a time (that module says why)

SHARED_ALIGN = None if SIMULATOR else 16

if not SIMULATOR:
    from numba.cuda.core import config as _numba_config  # read by every launch (quiet_small_grids)


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


def device_pointer(x) -> int:
    """Address of a device array's first element (a host address on the simulator)."""
    if SIMULATOR:
        return x._ary.ctypes.data
    pointer = getattr(x, "device_ctypes_pointer", None)  # a Numba device array: the cheap way
    if pointer is not None:
        return pointer.value or 0
    return x.__cuda_array_interface__["data"][0]


def flat_array_arguments(pointer: int, size: int, itemsize: int = 4) -> tuple:
    """How Numba passes a 1-D C-contiguous array to a kernel: the fields of its array struct, in order (meminfo,
    parent, element count, item size, data pointer, shape, strides) — what ``numba.cuda``'s ``_prepare_args``
    builds at every launch."""
    return (0, 0, size, itemsize, pointer, size, itemsize)


class DirectLaunch:
    """One compiled kernel, its grid, block, shared memory and stream fixed, launched straight through
    ``cuda.core.launch`` (GPU only).

    A call through Numba's dispatcher types every argument, picks the compiled overload and marshals each array,
    tens of µs of Python per launch (experiments/results/experiment-call-overhead-*.json), more than a small product takes on
    the GPU. The launches ``matmul`` repeats are always the same kernels with the same configuration, so they are
    prepared once and called with the raw argument list (:func:`flat_array_arguments` for arrays,
    ``ctypes.c_uint32`` for sizes) — what Numba itself ends up passing to the driver."""

    def __init__(self, dispatcher, signature: str, grid, block, shared_bytes: int, stream, cluster=None,
                 dependent: bool = False):
        from cuda.core import LaunchConfig, launch
        from numba.cuda.cudadrv import driver

        compiled = dispatcher.compile(signature)
        self._kernel = compiled._codelibrary.get_cufunc().kernel
        #: Launched as a programmatic dependent launch (PDL: ``programmatic_stream_serialization``): its blocks may
        #: start before the kernel ahead of it on the stream has finished, and must ``wait_for_previous_grid()``
        #: before touching what that kernel reads or writes. False where asked for but this cuda.core cannot.
        self.dependent = False
        if cluster is None and dependent:
            try:
                self._config = LaunchConfig(grid=grid, block=block, shmem_size=shared_bytes,
                                            programmatic_stream_serialization=True)
                self.dependent = True
            except TypeError:  # a cuda.core without the option: an ordinary launch
                self._config = LaunchConfig(grid=grid, block=block, shmem_size=shared_bytes)
        elif cluster is None:
            self._config = LaunchConfig(grid=grid, block=block, shmem_size=shared_bytes)
        else:  # ``grid`` counts blocks, as CUDA's launch does; cuda.core's LaunchConfig counts clusters
            grid, cluster = _three(grid), _three(cluster)
            if any(g % c for g, c in zip(grid, cluster)):
                raise ValueError(f"a grid of {grid} blocks is not a whole number of clusters of {cluster}")
            self._config = LaunchConfig(grid=tuple(g // c for g, c in zip(grid, cluster)), cluster=cluster,
                                        block=block, shmem_size=shared_bytes)
        self._cluster = cluster
        self._stream = driver._to_core_stream(stream)
        self._numba_stream = stream  # kept alive: the driver stream must outlive this launch
        self._launch = launch
        self._dims = (grid, block, shared_bytes)  # for bind_driver

    def __call__(self, *arguments) -> None:
        self._launch(self._stream, self._config, self._kernel, *arguments)

    def bind(self, *arguments):
        """This launch with its arguments fixed: a callable that takes none (a ``functools.partial`` of
        ``cuda.core.launch``, so a call adds no Python frame of ours)."""
        return partial(self._launch, self._stream, self._config, self._kernel, *arguments)

    def bind_driver(self, *arguments) -> "DriverLaunch":
        """Like :meth:`bind`, but the callable is one call of the driver's ``cuLaunchKernel`` on a parameter array
        packed here, once (:class:`DriverLaunch`) — ``cuda.core.launch`` packs the arguments again at every call."""
        grid, block, shared_bytes = self._dims
        if self._cluster is not None or self.dependent:
            raise ValueError("a cluster or dependent launch goes through cuda.core (cuLaunchKernelEx), not "
                             "cuLaunchKernel")
        return DriverLaunch(int(self._kernel.handle), (*_three(grid), *_three(block), int(shared_bytes)),
                            int(self._stream.handle), arguments)


def _three(dims) -> tuple[int, int, int]:
    """A grid or block (an int or a tuple of up to three) as (x, y, z)."""
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)  # an int, or a NumPy integer
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


class DriverLaunch:
    """One launch with everything fixed, made by calling the driver's ``cuLaunchKernel`` (``cuda.bindings``) on a
    parameter array packed once (GPU only).

    The arguments are what :class:`DirectLaunch` takes, packed as ``cuda.core.launch`` packs them: a Python ``int``
    as ``intptr_t`` (8 bytes; the array fields of :func:`flat_array_arguments`), a ``ctypes`` scalar as its own type.
    The driver reads each parameter's size from the kernel, from the address the array gives for it."""

    def __init__(self, function: int, dims: tuple, stream: int, arguments: tuple):
        import ctypes

        from cuda.bindings import driver as cu

        values = []
        for argument in arguments:
            if isinstance(argument, ctypes._SimpleCData):
                values.append(type(argument)(argument.value))
            elif isinstance(argument, int) and not isinstance(argument, bool):
                values.append(ctypes.c_int64(argument))
            else:
                raise TypeError(f"a kernel argument of type {type(argument).__name__}: only int and ctypes scalars")
        self._values = values  # the parameter array points into these: kept alive with it
        self._parameters = (ctypes.c_void_p * max(1, len(values)))(*(ctypes.addressof(v) for v in values))
        self._call = partial(cu.cuLaunchKernel, function, *dims, stream, ctypes.addressof(self._parameters), 0)
        self._success = cu.CUresult.CUDA_SUCCESS

    def __call__(self) -> None:
        error = self._call()[0]
        if error != self._success:
            raise RuntimeError(f"cuLaunchKernel failed: {error!r}")


class quiet_small_grids:
    """Silence Numba's "Grid size N will likely result in GPU under-utilization" warning inside the block.

    The course launches small grids on purpose (a 64×64 product, an edge strip of tiles); the warning is for
    launches that are small by mistake, and a learner who sees it for ours learns the wrong thing. Numba reads
    the setting at each launch, so it is switched off only while the course's own kernels are launched.
    """

    def __enter__(self):
        if not SIMULATOR:
            self._saved = _numba_config.CUDA_LOW_OCCUPANCY_WARNINGS
            _numba_config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        return self

    def __exit__(self, *exc):
        if not SIMULATOR:
            _numba_config.CUDA_LOW_OCCUPANCY_WARNINGS = self._saved
        return False


def _current_cpu() -> int | None:
    """The CPU the calling thread runs on now (Linux: field 39 of ``/proc/thread-self/stat``), or None."""
    try:
        with open("/proc/thread-self/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[36])  # after "(comm)": state is field 3, CPU field 39
    except (OSError, IndexError, ValueError):
        return None


@contextlib.contextmanager
def on_one_cpu():
    """Run the block with the calling thread — and so every thread it starts — on one CPU, the one it is on now; the
    thread's CPUs come back afterwards (Linux; elsewhere nothing changes).

    For a simulated launch of the tensor-core steps (12–19). The simulator runs each GPU thread as a Python thread,
    and the twins of ``mma``, ``wgmma`` and the mbarriers make a warp's or warpgroup's threads meet in a
    ``threading.Condition``: spread over cores, every wake-up crosses to another core and waits for the GIL there.
    Measured on the 2-core CI machine (one call, after a warm-up, tiles plus a ragged edge): step 14 30.4 s → 2.0 s,
    steps 15–17 11 s → 1.0–1.2 s, step 19 15.9 s → 2.8 s, step 12 2.0 s → 0.8 s. Not for the FP32 steps: their
    threads meet at ``syncthreads``, a barrier of the whole block, and pinned they were slower — with numba-cuda's
    polling barrier (step 3 2.5 s → 7.9 s, step 9 1.3 s → 1.9 s) and still with the counting one of
    :mod:`.simulator_patches` (step 3 at 64³ 2.9 s → 7.1 s, 2026-11-26)."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    cpu = _current_cpu()
    if len(before) <= 1 or cpu not in before:
        yield
        return
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)

