"""The one path every step goes through: check the inputs, move them to the GPU, allocate, launch, return.

Rules (the same for every step, :func:`gemm_steps.matmul` and :func:`gemm_steps.cublas_matmul`):

* ``a`` is (M, K), ``b`` is (K, N), both 2-D float32. NumPy arrays of any layout (strided, Fortran order) give a
  NumPy result; C-contiguous Numba device arrays give a device array. Don't mix the two.
* ``out=`` receives the result and is returned. It must have shape (M, N), dtype float32, be of the same kind as
  the inputs (C-contiguous when on the device) and must not overlap ``a`` or ``b``.
* Edges follow NumPy: K = 0 gives zeros, M = 0 or N = 0 an empty (M, N) result.
* Anything else is refused *before* a kernel is launched or ``out`` is touched: ``TypeError`` for a wrong dtype
  or array kind, ``ValueError`` for a wrong shape, layout, overlap or a size past 32-bit indexing.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
from numba import cuda

from ..toolkit.backend import SIMULATOR
from ..toolkit.kept import Kept
from ..toolkit.kernel_tools import device_pointer  # (also part of this module's API)

#: Kernels index with 32-bit integers (faster index math): every matrix must have fewer elements than this.
MAX_ELEMENTS = 2**31 - 1


if SIMULATOR:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _DeviceArray
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _DeviceArray


def is_device_array(x: Any) -> bool:
    """A Numba device array (a simulated one on the simulator)."""
    return isinstance(x, _DeviceArray)




def _describe(x: Any) -> str:
    return f"{type(x).__module__}.{type(x).__qualname__}"


def _check_array(x: Any, what: str) -> None:
    if not (isinstance(x, np.ndarray) or is_device_array(x)):
        raise TypeError(f"{what} must be a NumPy array or a Numba CUDA device array, got {_describe(x)}")
    if x.dtype != np.float32:
        raise TypeError(
            f"{what} has dtype {x.dtype}; gemm-steps kernels are float32 SGEMM. "
            f"Convert first, e.g. {what} = {what}.astype(np.float32)"
        )
    if x.ndim != 2:
        raise ValueError(f"{what} must be 2-D (a matrix), got {x.ndim}-D with shape {tuple(x.shape)}")


def _byte_range(x: Any) -> tuple[int, int]:
    """[start, end) of the device memory an array spans."""
    start = device_pointer(x)
    if x.is_c_contiguous():  # what validate() lets through on the device: no sum over strides needed
        return start, start + x.size * x.dtype.itemsize
    extent = sum((n - 1) * abs(s) for n, s in zip(x.shape, x.strides)) + x.dtype.itemsize if x.size else 0
    return start, start + extent


def _overlaps(x: Any, y: Any) -> bool:
    """Whether two arrays' memory *ranges* intersect (conservative: interleaved views that never touch the same
    element are refused too; proving they don't is an integer program NumPy may take very long to solve)."""
    if isinstance(x, np.ndarray):
        return np.may_share_memory(x, y)
    (x0, x1), (y0, y1) = _byte_range(x), _byte_range(y)
    return x0 < y1 and y0 < x1


def validate(a: Any, b: Any, out: Any = None) -> tuple[int, int, int, bool]:
    """Check a matmul's arguments; return (M, N, K, on_device). Raises before anything is touched."""
    _check_array(a, "a")
    _check_array(b, "b")
    on_device = is_device_array(a)
    if on_device != is_device_array(b):
        raise TypeError(
            "a and b must both be NumPy arrays or both be device arrays "
            f"(got {_describe(a)} and {_describe(b)}); move one with numba.cuda.to_device() or .copy_to_host()"
        )
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: a is {m}×{k}, b is {k2}×{n} (a.shape[1] must equal b.shape[0])")
    if on_device:
        for x, what in ((a, "a"), (b, "b")):
            if not x.is_c_contiguous():
                raise ValueError(
                    f"device array {what} is not C-contiguous; make a contiguous copy on the host "
                    "(np.ascontiguousarray) or pass NumPy arrays and let gemm-steps copy them"
                )
    for what, count in (("a", m * k), ("b", k * n), ("the result", m * n)):
        if count > MAX_ELEMENTS:
            raise ValueError(
                f"{what} has {count:,} elements, more than the kernels' 32-bit index math allows "
                f"({MAX_ELEMENTS:,}); split the product into blocks"
            )
    if out is not None:
        _check_array(out, "out")
        if is_device_array(out) != on_device:
            raise TypeError(
                f"out must be a {'device' if on_device else 'NumPy'} array like the inputs, got {_describe(out)}"
            )
        if tuple(out.shape) != (m, n):
            raise ValueError(f"out has shape {tuple(out.shape)}, expected {(m, n)} for a {m}×{k} @ {k}×{n} product")
        if on_device and not out.is_c_contiguous():
            raise ValueError("device array out must be C-contiguous")
        if not on_device and not out.flags.writeable:
            raise ValueError("out is read-only")
        for x, what in ((a, "a"), (b, "b")):
            if _overlaps(out, x):
                raise ValueError(f"out overlaps {what} (their memory ranges intersect), so the kernels could overwrite "
                                 "their own input. Pass a new array")
    return m, n, k, on_device


LaunchFn = Callable[[Any, Any, Any, Any], None]

#: Rows of C per launch. A grid has at most 65,535 blocks along y, and the steps put tiles of 32 to 256 rows
#: there: 65,504 × 32 rows is within every step's limit and a multiple of every tile height, so each chunk's
#: full tiles stay full. Taller products run as several launches on row slices (contiguous views).
ROWS_PER_LAUNCH = 65_504 * 32


def _launch_in_row_chunks(launch: LaunchFn, a, b, c, stream) -> None:
    m = a.shape[0]
    if m <= ROWS_PER_LAUNCH:  # the usual case: no slicing (a device-array view costs tens of µs in Numba)
        launch(a, b, c, stream)
        return
    for first in range(0, m, ROWS_PER_LAUNCH):
        last = min(first + ROWS_PER_LAUNCH, m)
        launch(a[first:last], b, c[first:last], stream)


def run(launch: LaunchFn, a: Any, b: Any, out: Any = None, stream: Any = 0,
        before_launch: Callable[[int, int, int], None] | None = None):
    """Validate, handle the empty/K=0 edges, move host inputs to the GPU, call ``launch(a, b, c, stream)``.

    ``before_launch(m, n, k)`` runs after validation, before anything is transferred or launched (the simulator's
    time check)."""
    m, n, k, on_device = validate(a, b, out)
    if before_launch is not None and m and n and k:
        before_launch(m, n, k)
    if on_device:
        c = out if out is not None else cuda.device_array((m, n), dtype=np.float32, stream=stream)
        if m and n:
            if k == 0:
                _fill_zero(c, stream)
            else:
                _launch_in_row_chunks(launch, a, b, c, stream)
        return c

    result = out if out is not None else np.empty((m, n), dtype=np.float32)
    if m == 0 or n == 0:
        return result
    if k == 0:
        result[...] = 0.0
        return result
    a_dev = cuda.to_device(_c_order(a), stream=stream)
    b_dev = cuda.to_device(_c_order(b), stream=stream)
    c_dev = cuda.device_array((m, n), dtype=np.float32, stream=stream)
    _launch_in_row_chunks(launch, a_dev, b_dev, c_dev, stream)
    if result.flags.c_contiguous:
        c_dev.copy_to_host(result, stream=stream)
    else:
        result[...] = c_dev.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    return result


def _c_order(x: np.ndarray) -> np.ndarray:
    """``x`` in C order with no negative stride. NumPy calls a view taken backwards along a dimension of length 1
    (a 1×1 matrix reversed, ``x[::-1]`` of one row) C-contiguous and ``np.ascontiguousarray`` returns it as it is;
    numba-cuda's ``to_device`` then fails on a GPU ("incompatible shape: (0, 0) vs. (1, 1)", numba-cuda 0.30.4 on an
    H100, 2026-11-26; the simulator copies it)."""
    x = np.ascontiguousarray(x)
    return x if min(x.strides, default=0) >= 0 else x.copy()


def _fill_zero(c: Any, stream: Any) -> None:
    zeros = np.zeros(c.shape, dtype=np.float32)
    c.copy_to_device(zeros, stream=stream)


#: Numba's simulator runs one kernel at a time in a process (it swaps the kernel module's ``cuda`` for a fake one and
#: asserts "concurrent simulated kernel not supported"): host threads calling steps at once take turns here.
_SIMULATED_LAUNCH = threading.Lock()


def _simulated(step) -> LaunchFn:
    """``launch_with_progress(step, …)``, one simulated launch at a time (:data:`_SIMULATED_LAUNCH`)."""
    from .simulator import launch_with_progress

    def launch(a, b, c, stream):
        with _SIMULATED_LAUNCH:
            launch_with_progress(step, a, b, c, stream)
    return launch


def run_step(step, a, b, out=None, stream=0):
    """``a @ b`` with one step; on the simulator, a product too large for it is refused up front."""
    if SIMULATOR:
        from .simulator import check

        return run(_simulated(step), a, b, out, stream, before_launch=lambda m, n, k: check(step, m, n, k))
    return run(step.launch, a, b, out, stream)


# -- repeated calls on device arrays ---------------------------------------------------------------------------------
#
# A program that multiplies on the GPU calls ``matmul`` again and again on the same buffers and shapes. Everything
# :func:`validate` decides about a device call is a function of each array's class, dtype, shape, strides and address
# (the overlap check: addresses and extents), and the step ``matmul`` runs is a function of the shape, the precision
# and the ``step`` argument. So a call whose arrays agree with an earlier *successful* call in all of these needs no
# checking again: :func:`remember` files the earlier call under exactly those values, :func:`replay` finds it and
# launches. Anything else — another class, dtype, shape, layout, address, precision or step; host arrays; M, N or K
# of 0; a product taller than one launch — takes the full path, with its errors.

_FLOAT32 = np.dtype(np.float32)

if SIMULATOR:
    _address = device_pointer
else:
    def _address(x) -> int:
        """``device_pointer(x)`` of a Numba device array, without the ``ctypes`` object its property makes."""
        return int(x.gpu_data.device_pointer)

_thread = threading.get_ident

#: Calls remembered at most; past that the memo is emptied (and refilled by the calls that follow).
CALLS_KEPT = 256
_CALLS = Kept(CALLS_KEPT)
#: ``dispatch.decided``, set by the first :func:`remember` of a dispatched call (the only calls whose entries ask it).
_decided: Callable | None = None


def _call_key(a: Any, b: Any, out: Any, step: Any, precision: Any) -> tuple | None:
    """What validation and the step choice of ``matmul(a, b, step, out, precision)`` depend on, with the three
    addresses and the calling host thread (a remembered launch plan holds its thread's workspaces); None for a call
    :func:`replay` never takes (not all device arrays of this class, or not float32).
    The dtype is compared by identity: NumPy's float32 is one object; an equal dtype that is another object
    (metadata, say) takes the full path."""
    device = _DeviceArray
    if type(a) is not device or type(b) is not device or a.dtype is not _FLOAT32 or b.dtype is not _FLOAT32:
        return None
    if out is None:
        out_key = None
    elif type(out) is device and out.dtype is _FLOAT32:
        out_key = (out.shape, out.strides, _address(out))
    else:
        return None
    return (a.shape, a.strides, _address(a), b.shape, b.strides, _address(b), out_key, step, precision, _thread())


def is_remembered(a: Any, b: Any, out: Any, step: Any, precision: Any) -> bool:
    """Whether ``matmul(a, b, step, out, precision)`` from this thread would be replayed from the call memo (without
    its checks): experiments/call_overhead.py records it beside each timing."""
    key = _call_key(a, b, out, step, precision)
    return key is not None and key in _CALLS


def replay(a: Any, b: Any, out: Any, step: Any, precision: Any):
    """The result of ``matmul(a, b, step, out, precision)`` if an earlier successful call agreed with this one in
    everything its checks and its step choice depend on (:func:`remember`): launched without checking again. None
    otherwise (nothing is launched: the caller takes the full path). A remembered choice of step counts only while
    :mod:`~gemm_steps.harness.dispatch` still holds it (a new table, ``record()``, empties its memo)."""
    key = _call_key(a, b, out, step, precision)
    if key is None:
        return None
    try:
        entry = _CALLS.get(key)
    except TypeError:  # an unhashable step or precision: the full path says what is wrong with it
        return None
    if entry is None:
        return None
    decided_for, choice, m, n, plan, launch = entry
    if (decided_for is not None and _decided(*decided_for) is not choice) or m > ROWS_PER_LAUNCH:
        return None
    if out is None:
        out = cuda.device_array((m, n), dtype=np.float32)
        launch(a, b, out, 0)
    elif plan is not None:  # the step's recorded launches, given the three addresses the key holds
        plan(key[2], key[5], key[6][2])
    else:
        launch(a, b, out, 0)
    return out


def remember(a: Any, b: Any, out: Any, step: Any, precision: Any, chosen, decided_for: tuple | None = None) -> None:
    """File a call that has just succeeded — ``chosen`` (a :class:`~gemm_steps.harness.step.Step`) computed
    ``matmul(a, b, step, out, precision)`` — for :func:`replay`. ``decided_for``: the (M, N, K, precision) whose
    dispatch decision chose the step (``dispatch.decided``), so the call counts only while that decision is kept;
    None when ``step`` named the step. Calls replay never takes are not filed."""
    global _decided
    key = _call_key(a, b, out, step, precision)
    if key is None:
        return
    (m, k), n = a.shape, b.shape[1]
    if not (m and n and k) or m > ROWS_PER_LAUNCH:
        return
    if any(_address(x) != device_pointer(x) for x in (a, b, out) if x is not None):  # a memory class unlike Numba's
        return
    choice = None
    if decided_for is not None:
        from . import dispatch

        _decided = dispatch.decided  # what replay asks (dispatch imports the steps: not at this module's import)
        choice = _decided(*decided_for)
        if choice is None:
            return
    plan, launch = None, _step_launch(chosen, m, n, k)
    tiled = chosen.tiled
    if out is not None and not SIMULATOR and tiled is not None and not chosen.pads and _replays_plans(tiled):
        pointers = (key[2], key[5], key[6][2])
        plan = tiled.thread_plans().get(tiled.plan_key(a, b, pointers, 0))
    try:
        _CALLS.keep(key, (decided_for, choice, m, n, plan, launch))
    except TypeError:  # an unhashable step or precision (it ran, but cannot be a key): not remembered
        pass


def _step_launch(step, m: int, n: int, k: int) -> LaunchFn:
    """What :func:`run_step` launches for ``step`` on validated arrays (the simulator's time check included)."""
    if SIMULATOR:
        from .simulator import check

        simulated = _simulated(step)

        def launch(a, b, c, stream):
            check(step, m, n, k)
            simulated(a, b, c, stream)
        return launch
    return lambda a, b, c, stream: step.launch(a, b, c, stream)  # looked up at each call, as run_step does


def _replays_plans(tiled) -> bool:
    """Whether a launch of ``tiled`` is its launch plan's replay (``TiledKernels.launch``, not overridden, and no
    ``overrides``): then :func:`replay` may call the plan itself."""
    from ..toolkit.tiles import TiledKernels

    return type(tiled).launch is TiledKernels.launch and not tiled.overrides


def forget_calls() -> None:
    """Empty the memo of :func:`replay` (the next call of every kind takes the full path)."""
    _CALLS.clear()
