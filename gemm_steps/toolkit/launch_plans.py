"""Launch plans: the launches one product shape needs, recorded once through Numba and replayed straight through
``cuda.core`` (GPU only) — how ``matmul``'s repeated calls skip Numba's per-launch typing and marshalling.

A :class:`~.tiles.TiledKernels` asks for a plan on the first launch of a shape (``TiledKernels.launch``) and replays
it afterwards. Recording is the same launch with a list passed down (``launch_through_numba(a, b, c, stream,
launches)``): every method that would make a launch (``TiledKernels.configured``, ``TmaTiles.launch_or_record``)
appends it to ``launches`` instead, when given one.

Several host threads may call ``matmul`` at once. The list is the recording call's own (an argument, never an
attribute), and a plan, with the workspaces it holds, is kept per host thread (``TiledKernels.thread_plans``,
:class:`~.workspaces.Workspaces`): two threads never record into one list, nor replay launches that share scratch
memory.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .kernel_tools import DirectLaunch, device_pointer, flat_array_arguments


#: Replay through the driver's ``cuLaunchKernel`` on arguments packed once (``DirectLaunch.bind_driver``) instead of
#: ``cuda.core.launch`` (``DirectLaunch.bind``), which packs them at every call. Off until a GPU run shows it gives
#: the same results, faster (experiments/call_overhead.py measures both, and compares their results bitwise).
DRIVER_LAUNCHES = False

#: Launch every kernel of a plan after the first that waits for its predecessor in its own code
#: (:func:`waits_for_previous_grid`) as a programmatic dependent launch (PDL, ``DirectLaunch(dependent=True)``): its
#: blocks may be scheduled, and run their set-up, while the kernel before it finishes — steps 17 and 18's kernel after
#: a readable copy, their split-K reduction after the kernel. Not with DRIVER_LAUNCHES (``cuLaunchKernel`` has no
#: launch attributes). Measured in experiments/small_products.py.
PROGRAMMATIC_LAUNCHES = True


def waits_for_previous_grid(dispatcher) -> bool:
    """Whether a kernel calls ``wait_for_previous_grid()`` (``griddepcontrol.wait``) in its own code: only such a
    kernel may be launched before the kernel ahead of it has finished. (A global name the kernel's Python function
    uses; a kernel written with ``unroll`` keeps its calls.)"""
    function = getattr(dispatcher, "py_func", dispatcher)
    code = getattr(function, "__code__", None)
    return code is not None and "wait_for_previous_grid" in code.co_names


def direct_arguments(arguments) -> list:
    """Kernel arguments as Numba passes them to the driver: an integer as a ``uint32`` (the kernels' sizes), a 1-D
    device array as its struct's fields (:func:`~.kernel_tools.flat_array_arguments`)."""
    packed = []
    for argument in arguments:
        if isinstance(argument, (int, np.integer)):
            packed.append(ctypes.c_uint32(int(argument)))
        else:
            packed.extend(flat_array_arguments(device_pointer(argument), argument.size, argument.dtype.itemsize))
    return packed


def recorded_launches(tiles, a, b, c, stream) -> list:
    """The launches ``tiles.launch_through_numba(a, b, c, stream)`` makes — through every build it may launch
    through (itself, the build its edge kernel comes from, a data-parallel fallback) — written down instead of made:
    (dispatcher, signature, grid, threads, shared bytes, stream, arguments, cluster) each (cluster: None, or the
    blocks per cluster of a cluster launch)."""
    launches: list = []
    tiles.launch_through_numba(a, b, c, stream, launches)
    return launches


class LaunchPlan:
    """The launches one shape needs, recorded once and replayed with :class:`~.kernel_tools.DirectLaunch`.

    Recording runs ``TiledKernels.launch_through_numba`` with a list, into which ``TiledKernels.configured`` writes each
    launch (kernel, grid, block, shared memory, stream, arguments) instead of making it. Replaying passes the
    arguments as Numba would: the first three (A, B, C, flat) from the addresses of the call at hand, the others
    (sizes, tile counts, the stream-K workspace and flags) as recorded. The plan holds the workspace arrays and
    the stream it was made for, so neither is freed while it can be used.
    """

    KEPT = 64  # plans kept per TiledKernels (shapes × streams); past that, they are dropped and recorded again

    def __init__(self, launches: list, sizes: tuple[int, int, int]):
        self._launches = launches
        self._sizes = sizes
        #: (the three addresses and DRIVER_LAUNCHES, their launches bound to every argument): a call on the same
        #: arrays as the last only calls those. One attribute, replaced whole, so a thread never sees addresses
        #: with another call's launches.
        self._bound: tuple = ((), ())

    @classmethod
    def record(cls, tiles, a, b, c, stream) -> "LaunchPlan":
        """The launches of ``tiles.launch_through_numba`` (:func:`recorded_launches`), made ready to replay."""
        launches = []
        for i, (dispatcher, signature, grid, threads, shared_bytes, launch_stream, arguments, cluster) in enumerate(
                recorded_launches(tiles, a, b, c, stream)):
            rest = direct_arguments(arguments[3:])  # after A, B and C
            dependent = (PROGRAMMATIC_LAUNCHES and not DRIVER_LAUNCHES and i > 0 and cluster is None
                         and waits_for_previous_grid(dispatcher))
            launches.append((DirectLaunch(dispatcher, signature, grid, threads, shared_bytes, launch_stream,
                                          cluster=cluster, dependent=dependent), tuple(rest), arguments))
        m, k = a.shape
        return cls(launches, (m * k, k * b.shape[1], m * b.shape[1]))

    @property
    def dependent_launches(self) -> int:
        """How many of the plan's launches are programmatic dependent launches (:data:`PROGRAMMATIC_LAUNCHES`)."""
        return sum(launch.dependent for launch, _rest, _recorded in self._launches)

    def __call__(self, a_pointer: int, b_pointer: int, c_pointer: int) -> None:
        pointers = (a_pointer, b_pointer, c_pointer, DRIVER_LAUNCHES)
        bound_to, launches = self._bound
        if bound_to != pointers:
            a_size, b_size, c_size = self._sizes
            matrices = (flat_array_arguments(a_pointer, a_size) + flat_array_arguments(b_pointer, b_size)
                        + flat_array_arguments(c_pointer, c_size))
            launches = tuple((launch.bind_driver if DRIVER_LAUNCHES else launch.bind)(*matrices, *rest)
                             for launch, rest, _recorded in self._launches)
            self._bound = (pointers, launches)
        for launch in launches:
            launch()
