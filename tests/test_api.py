"""The rules of :mod:`gemm_steps.harness.api`, checked on the shared path and for :func:`gemm_steps.matmul`.

* Bad input raises the documented error *before anything happens*: no kernel launch, no host↔device transfer, no
  allocation, and ``out`` (and the inputs) left exactly as they were. ``TypeError`` for a wrong dtype or array
  kind, ``ValueError`` for a wrong shape, layout, overlap or a size past 32-bit indexing.
* Edges follow NumPy: K = 0 gives zeros (no kernel runs), M = 0 or N = 0 an empty (M, N) result.
* NumPy inputs of any layout give a correct NumPy result; device inputs give a device result; ``out`` is returned.
* Launch contract: a step's ``launch`` only ever sees C-contiguous float32 device arrays with M, N, K ≥ 1.

Every step is called through the same code (``Step.__call__`` → ``api.run_step`` → ``api.run``), so the rules are
checked once on that shared path, not for each of the steps: with ``api.run`` around a NumPy launch (the API alone,
no kernel), through ``matmul`` (the last step), and on a few representative steps — step 1 (2-D arrays, one result
per thread), step 5 (the last untiled step) and step 6 (the first with fast and edge kernels on flat arrays).
``test_every_step_goes_through_the_shared_path`` checks that no step takes another way in.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import api
from helpers import assert_close

STEPS = gemm_steps.steps()
#: Steps the rules run on besides the API itself and matmul (see the module docstring).
REPRESENTATIVE = [gemm_steps.get_step(name) for name in ("naive", "register_2d", "vectorized")]


def numpy_launch(a, b, c, stream=0):
    """A launch that computes with NumPy: ``api.run`` with it checks the API's own handling, without a kernel."""
    c.copy_to_device(np.ascontiguousarray(a.copy_to_host() @ b.copy_to_host()), stream=stream)


#: The ways in the rules are checked on: the API alone, representative steps, and matmul (which picks a step).
CALLERS = ["api", *REPRESENTATIVE, None]


def caller_id(caller) -> str:
    if caller == "api":
        return "api"
    return "matmul" if caller is None else f"{caller.number}-{caller.name}"


def call(caller, a, b, out=None):
    if caller == "api":
        return api.run(numpy_launch, a, b, out)
    if caller is None:
        return gemm_steps.matmul(a, b) if out is None else gemm_steps.matmul(a, b, out=out)
    return caller(a, b) if out is None else caller(a, b, out=out)


# -- nothing may happen ------------------------------------------------------------------------------------------

class Forbidden:
    """Make every launch, transfer and device allocation fail loudly, and record any attempt."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.attempts: list[str] = []

    def _trap(self, what):
        def trap(*args, **kwargs):
            self.attempts.append(what)
            raise AssertionError(f"{what} was called for an input that should have been refused first")
        return trap

    @contextlib.contextmanager
    def launches(self):
        """No kernel launch (transfers allowed)."""
        with self.monkeypatch.context() as mp:
            mp.setattr(gemm_steps.Step, "launch", self._trap("Step.launch"))
            for step in STEPS:
                mp.setattr(step, "_launch", self._trap(f"{step.name} launch"))
            mp.setattr(api, "_launch_in_row_chunks", self._trap("api launch"))
            yield

    @contextlib.contextmanager
    def everything(self):
        """No launch, no transfer, no device allocation, no fill."""
        with self.launches(), self.monkeypatch.context() as mp:
            for name in ("to_device", "device_array", "device_array_like", "pinned_array"):
                mp.setattr(cuda, name, self._trap(f"cuda.{name}"))
            mp.setattr(api, "_fill_zero", self._trap("api._fill_zero"))
            yield


@pytest.fixture
def forbid(monkeypatch):
    return Forbidden(monkeypatch)


# -- bad inputs ----------------------------------------------------------------------------------------------------

def f32(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


def dev(x):
    return cuda.to_device(np.ascontiguousarray(x))


def huge(*shape):
    """A float32 array of any size that allocates 4 bytes: every element is the same one (zero strides)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype=np.float32), shape=shape, strides=(0,) * len(shape))


def _out_overlapping_a(rng):
    buf = f32(rng, 4, 8)
    return buf[:, :4], f32(rng, 4, 4), buf[:, 2:6]


def _device_out_overlapping_a(rng):
    buf = dev(f32(rng, 8, 4))
    return buf[:4], dev(f32(rng, 4, 4)), buf[2:6]


def _read_only_out(rng):
    out = np.full((4, 5), 7.0, dtype=np.float32)
    out.flags.writeable = False
    return f32(rng, 4, 3), f32(rng, 3, 5), out


_DTYPE_FIX = r"Convert first, e\.g\. {0} = {0}\.astype\(np\.float32\)"

#: name → (build(rng) → (a, b, out), exception, message pattern)
BAD = {
    # dtype / kind → TypeError, and the message says how to fix it
    "a_float64": (lambda r: (f32(r, 4, 3).astype(np.float64), f32(r, 3, 5), None), TypeError,
                  "a has dtype float64.*" + _DTYPE_FIX.format("a")),
    "b_float64": (lambda r: (f32(r, 4, 3), f32(r, 3, 5).astype(np.float64), None), TypeError,
                  "b has dtype float64.*" + _DTYPE_FIX.format("b")),
    "a_int32": (lambda r: (np.ones((4, 3), np.int32), f32(r, 3, 5), None), TypeError, "a has dtype int32"),
    "b_float16": (lambda r: (f32(r, 4, 3), f32(r, 3, 5).astype(np.float16), None), TypeError, "b has dtype float16"),
    "a_big_endian": (lambda r: (f32(r, 4, 3).astype(">f4"), f32(r, 3, 5), None), TypeError, "a has dtype"),
    "a_list": (lambda r: ([[1.0, 2.0]], f32(r, 2, 2), None), TypeError, "NumPy array or a Numba CUDA device array"),
    "b_scalar": (lambda r: (f32(r, 1, 1), 2.0, None), TypeError, "NumPy array or a Numba CUDA device array"),
    "out_float64": (lambda r: (f32(r, 4, 3), f32(r, 3, 5), np.full((4, 5), 7.0)), TypeError, "out has dtype float64"),
    "out_list": (lambda r: (f32(r, 2, 2), f32(r, 2, 2), [[0.0, 0.0], [0.0, 0.0]]), TypeError, "out must be"),
    "host_a_device_b": (lambda r: (f32(r, 4, 3), dev(f32(r, 3, 5)), None), TypeError, "both be NumPy arrays"),
    "device_a_host_b": (lambda r: (dev(f32(r, 4, 3)), f32(r, 3, 5), None), TypeError, "both be NumPy arrays"),
    "host_inputs_device_out": (lambda r: (f32(r, 4, 3), f32(r, 3, 5), dev(np.full((4, 5), 7.0, np.float32))),
                               TypeError, "out must be a NumPy array"),
    "device_inputs_host_out": (lambda r: (dev(f32(r, 4, 3)), dev(f32(r, 3, 5)), np.full((4, 5), 7.0, np.float32)),
                               TypeError, "out must be a device array"),
    "device_a_float64": (lambda r: (dev(f32(r, 4, 3).astype(np.float64)), dev(f32(r, 3, 5)), None), TypeError,
                         "a has dtype float64.*" + _DTYPE_FIX.format("a")),
    "device_out_float64": (lambda r: (dev(f32(r, 4, 3)), dev(f32(r, 3, 5)), dev(np.full((4, 5), 7.0))), TypeError,
                           "out has dtype float64"),
    # shapes → ValueError
    "a_1d": (lambda r: (f32(r, 3), f32(r, 3, 5), None), ValueError, "a must be 2-D"),
    "b_3d": (lambda r: (f32(r, 4, 3), f32(r, 1, 3, 5), None), ValueError, "b must be 2-D"),
    "a_0d": (lambda r: (np.array(1.0, np.float32), f32(r, 1, 1), None), ValueError, "a must be 2-D"),
    "device_b_1d": (lambda r: (dev(f32(r, 4, 3)), dev(f32(r, 3)), None), ValueError, "b must be 2-D"),
    "inner_mismatch": (lambda r: (f32(r, 4, 3), f32(r, 2, 5), None), ValueError, "inner dimensions differ"),
    "inner_transposed": (lambda r: (f32(r, 4, 3), f32(r, 5, 3), None), ValueError, "inner dimensions differ"),
    "device_inner_mismatch": (lambda r: (dev(f32(r, 4, 3)), dev(f32(r, 4, 5)), None), ValueError, "inner dimensions"),
    "out_wrong_shape": (lambda r: (f32(r, 4, 3), f32(r, 3, 5), np.full((5, 4), 7.0, np.float32)), ValueError,
                        r"out has shape \(5, 4\), expected \(4, 5\)"),
    "out_too_big": (lambda r: (f32(r, 4, 3), f32(r, 3, 5), np.full((4, 6), 7.0, np.float32)), ValueError, "out has shape"),
    "out_1d": (lambda r: (f32(r, 4, 3), f32(r, 3, 5), np.full(20, 7.0, np.float32)), ValueError, "out must be 2-D"),
    "device_out_wrong_shape": (lambda r: (dev(f32(r, 4, 3)), dev(f32(r, 3, 5)), dev(np.full((4, 4), 7.0, np.float32))),
                               ValueError, "out has shape"),
    # layout → ValueError
    "device_a_strided": (lambda r: (dev(f32(r, 4, 6))[:, ::2], dev(f32(r, 3, 5)), None), ValueError,
                         "device array a is not C-contiguous"),
    # every other column of a device array: a strided view (a device array's .T is one on the simulator, but on a
    # GPU numba-cuda transposes into a new C-contiguous array, which is a fine input)
    "device_b_strided": (lambda r: (dev(f32(r, 4, 3)), dev(f32(r, 3, 10))[:, ::2], None), ValueError,
                         "device array b is not C-contiguous"),
    "device_out_strided": (lambda r: (dev(f32(r, 4, 3)), dev(f32(r, 3, 5)),
                                      dev(np.full((4, 10), 7.0, np.float32))[:, ::2]), ValueError, "C-contiguous"),
    "out_read_only": (_read_only_out, ValueError, "read-only"),
    # overlap → ValueError
    "out_is_a": (lambda r: (lambda a: (a, f32(r, 4, 4), a))(f32(r, 4, 4)), ValueError, "out overlaps a"),
    "out_is_b": (lambda r: (lambda b: (f32(r, 4, 4), b, b))(f32(r, 4, 4)), ValueError, "out overlaps b"),
    "out_overlaps_a": (_out_overlapping_a, ValueError, "out overlaps a"),
    "out_reversed_b": (lambda r: (lambda b: (f32(r, 4, 4), b, b[::-1]))(f32(r, 4, 4)), ValueError, "out overlaps b"),
    "device_out_is_b": (lambda r: (lambda b: (dev(f32(r, 4, 4)), b, b))(dev(f32(r, 4, 4))), ValueError,
                        "out overlaps b"),
    "device_out_overlaps_a": (_device_out_overlapping_a, ValueError, "out overlaps a"),
    # past 32-bit indexing → ValueError, before a single byte moves (these arrays would be 8 GiB if real)
    "huge_a": (lambda r: (huge(2**16, 2**15), huge(2**15, 1), None), ValueError, "a has 2,147,483,648 elements"),
    "huge_b": (lambda r: (huge(1, 2**16), huge(2**16, 2**15), None), ValueError, "b has 2,147,483,648 elements"),
    "huge_result": (lambda r: (huge(2**16, 1), huge(1, 2**15), None), ValueError, "the result has 2,147,483,648"),
    "huge_result_k0": (lambda r: (huge(2**16, 0), huge(0, 2**15), None), ValueError, "the result has"),
}


def _snapshot(x):
    """A host copy of a small array (NumPy or device), to compare after the call; None for anything else."""
    if isinstance(x, np.ndarray):
        return x.copy() if x.size < 10**6 else None
    if api.is_device_array(x):
        return x.copy_to_host()
    return None


def _same(before, x) -> bool:
    after = x.copy_to_host() if api.is_device_array(x) else np.asarray(x)
    return before.dtype == after.dtype and before.shape == after.shape and before.tobytes() == after.tobytes()


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_bad_input_is_refused_before_anything_happens(caller, case, rng, forbid):
    build, error, pattern = BAD[case]
    a, b, out = build(rng)
    before = {name: _snapshot(x) for name, x in (("a", a), ("b", b), ("out", out))}
    with forbid.everything(), pytest.raises(error, match=pattern):
        call(caller, a, b, out)
    assert forbid.attempts == [], f"{case}: {forbid.attempts} happened before the error"
    for name, x in (("a", a), ("b", b), ("out", out)):
        if before[name] is not None:
            assert _same(before[name], x), f"{case}: {name} was modified by a refused call"


@pytest.mark.parametrize("step", STEPS, ids=caller_id)
def test_every_step_goes_through_the_shared_path(step, rng, forbid, monkeypatch):
    """Calling any step is ``api.run_step(step, a, b, out)``: the rules checked above hold for every step. And a bad
    input to each step is refused before anything happens (the end-to-end evidence, one case per step)."""
    calls = []
    sentinel = object()

    def spy(called_step, a, b, out=None, stream=0):
        calls.append((called_step, a, b, out))
        return sentinel

    a, b, out = f32(rng, 4, 3), f32(rng, 3, 5), np.full((4, 5), 7.0, np.float32)
    with monkeypatch.context() as mp:
        mp.setattr(api, "run_step", spy)
        assert step(a, b, out=out) is sentinel
        assert gemm_steps.matmul(a, b, step=step.number) is sentinel
    assert len(calls) == 2 and all(c[0] is step and c[1] is a and c[2] is b for c in calls)
    assert calls[0][3] is out and calls[1][3] is None
    with forbid.everything(), pytest.raises(TypeError, match="a has dtype float64"):
        step(a.astype(np.float64), b, out=out)
    assert forbid.attempts == [] and np.all(out == 7.0)


def test_validate_accepts_exactly_up_to_the_32_bit_limit():
    """The limit is on elements: 2³¹ − 1 passes validation (nothing is allocated by validate), 2³¹ does not."""
    limit = api.MAX_ELEMENTS
    assert limit == 2**31 - 1
    assert api.validate(huge(limit, 1), huge(1, 1)) == (limit, 1, 1, False)
    with pytest.raises(ValueError, match="32-bit"):
        api.validate(huge(limit + 1, 1), huge(1, 1))


# -- edges follow NumPy --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("on_device", [False, True], ids=["host", "device"])
@pytest.mark.parametrize("with_out", [False, True], ids=["new", "out"])
@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_k_zero_gives_zeros_without_a_launch(caller, with_out, on_device, forbid):
    a, b = np.empty((3, 0), np.float32), np.empty((0, 4), np.float32)
    out = np.full((3, 4), np.nan, np.float32) if with_out else None
    if on_device:
        a, b = cuda.to_device(a), cuda.to_device(b)
        out = cuda.to_device(out) if with_out else None
    with forbid.launches():
        result = call(caller, a, b, out)
    assert forbid.attempts == []
    assert api.is_device_array(result) == on_device
    if with_out:
        assert result is out
    host = result.copy_to_host() if on_device else result
    assert host.shape == (3, 4) and host.dtype == np.float32
    assert np.array_equal(host, np.zeros((3, 4), np.float32)), "K = 0 must give zeros (NumPy: a @ b)"


@pytest.mark.parametrize("shape", [(0, 4, 5), (3, 0, 5), (0, 0, 5), (0, 4, 0), (0, 0, 0)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("on_device", [False, True], ids=["host", "device"])
@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_empty_result(caller, on_device, shape, forbid):
    m, n, k = shape
    a, b = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
    if on_device:
        a, b = cuda.to_device(a), cuda.to_device(b)
    with forbid.launches():
        result = call(caller, a, b)
        out = cuda.device_array((m, n), np.float32) if on_device else np.empty((m, n), np.float32)
        assert call(caller, a, b, out) is out
    assert forbid.attempts == []
    assert api.is_device_array(result) == on_device
    assert tuple(result.shape) == (m, n) and result.dtype == np.float32


# -- layouts, kinds, out= ----------------------------------------------------------------------------------------

def _layouts(rng, m, n, k):
    """Host inputs in every layout NumPy can give, each with the product they must produce."""
    big_a = f32(rng, 2 * m + 1, 3 * k + 2)
    big_b = f32(rng, 2 * k, 2 * n + 3)
    return {
        "C": (f32(rng, m, k), f32(rng, k, n)),
        "fortran": (np.asfortranarray(f32(rng, m, k)), np.asfortranarray(f32(rng, k, n))),
        "transposed_views": (f32(rng, k, m).T, f32(rng, n, k).T),
        "strided": (big_a[::2, 1::3][:m, :k], big_b[::2, 1::2][:k, :n]),
        "negative_strides": (big_a[::-2, ::-3][:m, :k], big_b[::-2, ::-1][:k, :n]),
    }


LAYOUTS = ["C", "fortran", "transposed_views", "strided", "negative_strides"]


def _check_launch_arguments(a, b, c) -> None:
    for name, x in (("a", a), ("b", b), ("c", c)):
        assert api.is_device_array(x), f"launch got a non-device {name}: {type(x)}"
        assert x.dtype == np.float32 and x.is_c_contiguous(), f"launch got {name} {x.dtype}, not C-contiguous"
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2 and tuple(c.shape) == (m, n) and min(m, n, k) >= 1, f"launch got {a.shape} {b.shape} {c.shape}"


@pytest.fixture
def launch_contract(monkeypatch):
    """Check on every launch (a step's, or the API caller's NumPy launch) that it gets C-contiguous float32 device
    arrays with consistent M, N, K ≥ 1; the list of launches is returned."""
    seen = []
    original_step_launch, original_numpy_launch = gemm_steps.Step.launch, numpy_launch

    def checked(self, a, b, c, stream=0):
        _check_launch_arguments(a, b, c)
        seen.append(self.name)
        return original_step_launch(self, a, b, c, stream)

    def checked_numpy(a, b, c, stream=0):
        _check_launch_arguments(a, b, c)
        seen.append("api")
        return original_numpy_launch(a, b, c, stream)

    monkeypatch.setattr(gemm_steps.Step, "launch", checked)
    monkeypatch.setitem(globals(), "numpy_launch", checked_numpy)
    return seen


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_host_inputs_of_any_layout(caller, layout, rng, launch_contract):
    m, n, k = 7, 6, 5
    a, b = _layouts(rng, m, n, k)[layout]
    assert a.shape == (m, k) and b.shape == (k, n)
    result = call(caller, a, b)
    assert isinstance(result, np.ndarray) and not api.is_device_array(result)
    assert_close(result, np.array(a), np.array(b), f"{caller_id(caller)} with {layout} inputs")
    assert len(launch_contract) == 1


@pytest.mark.parametrize("out_layout", ["C", "fortran", "strided_view"])
@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_host_out_is_filled_and_returned(caller, out_layout, rng, launch_contract):
    m, n, k = 5, 6, 7
    a, b = f32(rng, m, k), f32(rng, k, n)
    backing = np.full((m, 2 * n), np.nan, np.float32)
    out = {"C": np.full((m, n), np.nan, np.float32), "fortran": np.full((m, n), np.nan, np.float32, order="F"),
           "strided_view": backing[:, ::2]}[out_layout]
    assert call(caller, a, b, out) is out
    assert_close(out, a, b, f"{caller_id(caller)} into a {out_layout} out")
    if out_layout == "strided_view":
        assert np.isnan(backing[:, 1::2]).all(), "elements of the backing array outside out were written"


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_device_inputs_give_device_result(caller, rng, launch_contract):
    m, n, k = 6, 5, 9
    a, b = f32(rng, m, k), f32(rng, k, n)
    result = call(caller, dev(a), dev(b))
    assert api.is_device_array(result), f"device inputs gave {type(result)}"
    assert tuple(result.shape) == (m, n) and result.dtype == np.float32
    assert_close(result.copy_to_host(), a, b, caller_id(caller))
    out = cuda.to_device(np.full((m, n), np.nan, np.float32))
    assert call(caller, dev(a), dev(b), out) is out
    assert_close(out.copy_to_host(), a, b, f"{caller_id(caller)} into a device out")


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_device_inputs_at_unaligned_offsets(caller, rng, launch_contract):
    """C-contiguous device views that start 4 bytes into an allocation (not 16-byte aligned) are still right.

    On a GPU this guards the 128-bit fast path, which must not run on misaligned bases (see tests/test_gpu.py for a
    shape where the fast path would otherwise apply).
    """
    m, n, k = 9, 8, 16
    a, b = f32(rng, m, k), f32(rng, k, n)
    flat_a = cuda.to_device(np.concatenate([[np.float32(1)], a.ravel()]))
    flat_b = cuda.to_device(np.concatenate([[np.float32(1)], b.ravel()]))
    flat_c = cuda.to_device(np.full(1 + m * n, np.nan, np.float32))
    a_view, b_view, c_view = flat_a[1:].reshape(m, k), flat_b[1:].reshape(k, n), flat_c[1:].reshape(m, n)
    assert call(caller, a_view, b_view, c_view) is c_view
    assert_close(c_view.copy_to_host(), a, b, f"{caller_id(caller)} on unaligned views")
    assert np.isnan(flat_c.copy_to_host()[0]), "the element before out was written"


def test_cublas_on_the_simulator_is_a_clear_error(rng, forbid):
    if not gemm_steps.SIMULATOR:
        pytest.skip("on a GPU cuBLAS runs: tests/test_gpu.py checks it")
    a, b = f32(rng, 4, 3), f32(rng, 3, 5)
    with forbid.everything(), pytest.raises(RuntimeError, match="cuBLAS needs a real CUDA GPU.*simulator"):
        gemm_steps.cublas_matmul(a, b)
    assert forbid.attempts == []


@pytest.mark.parametrize("rows_per_launch", [128, 70], ids=["tile_multiple", "not_tile_multiple"])
@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
def test_tall_products_run_in_row_chunks(caller, rows_per_launch, rng, monkeypatch, launch_contract):
    """Products taller than one launch's grid allows (65,535 blocks along y) run as several launches on row slices.

    The real limit (``api.ROWS_PER_LAUNCH``, ~2 million rows) is far beyond the simulator, so it is lowered here;
    the result must be the same whether or not a chunk boundary falls on a tile boundary. Host inputs chunk the same
    way, on the shared path (``api.run``, which every caller goes through): checked once there, with its NumPy
    launch.
    """
    monkeypatch.setattr(api, "ROWS_PER_LAUNCH", rows_per_launch)
    m, n, k = 150, 5, 12  # 2 launches of 128 rows (the second partial), or 3 of 70 (chunk edges inside tiles)
    a, b = f32(rng, m, k), f32(rng, k, n)
    out = cuda.to_device(np.full((m, n), np.nan, np.float32))
    assert call(caller, dev(a), dev(b), out) is out
    assert_close(out.copy_to_host(), a, b, f"{caller_id(caller)} in chunks of {rows_per_launch} rows")
    assert len(launch_contract) == -(-m // rows_per_launch), f"launches: {launch_contract}"
    if caller == "api":  # the host path chunks the same way (on the shared path: see the docstring)
        launch_contract.clear()
        assert_close(call(caller, a, b), a, b, f"{caller_id(caller)} (host) in chunks of {rows_per_launch} rows")
        assert len(launch_contract) == -(-m // rows_per_launch), f"host launches: {launch_contract}"


def test_host_inputs_reach_the_device_in_c_order_without_negative_strides():
    """A 1×1 matrix or a one-row view taken backwards is C-contiguous to NumPy with a negative stride, and
    np.ascontiguousarray keeps it so; numba-cuda's to_device fails on such an array on a GPU (api._c_order)."""
    from gemm_steps.harness.api import _c_order

    for view in (np.arange(1, dtype=np.float32).reshape(1, 1)[::-1, ::-1],
                 np.arange(6, dtype=np.float32).reshape(1, 6)[::-1, :], np.arange(6, dtype=np.float32).reshape(2, 3).T):
        assert min(np.ascontiguousarray(view).strides) < 0 or not view.flags.c_contiguous
        fixed = _c_order(view)
        assert fixed.flags.c_contiguous and min(fixed.strides) >= 0 and np.array_equal(fixed, view)
