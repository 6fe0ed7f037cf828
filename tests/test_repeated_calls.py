"""``matmul`` called again on device arrays it has already checked (``harness/api.py``: ``replay`` / ``remember``).

A repeated call skips validation and the step choice only where neither could come out differently: the same class,
dtype, shape, strides and address of every array, the same precision and ``step``, and a dispatch decision that is
still the one remembered. Everything else takes the full path, with its errors. The launches here are replaced by a
NumPy product that records which step it was asked of (no kernel runs), except in the last test, which runs a kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import api, dispatch
from helpers import assert_close

#: At 8³ the fastest FP32 step is naive, the fastest of all (TF32 included) tensor_cores; at 64³ coalesced.
TABLE = {"gpu": None, "shapes": [[8, 8, 8, {"naive": 0.01, "coalesced": 0.02, "tensor_cores": 0.005}, 0.01],
                                 [64, 64, 64, {"naive": 0.05, "coalesced": 0.02}, 0.01]]}


@pytest.fixture
def recorded(monkeypatch):
    """Launches replaced by a NumPy product; returns (the names of the steps launched, the number of validations)."""
    launched, validations = [], []

    def numpy_step_launch(self, a, b, c, stream=0):
        launched.append(self.name)
        c.copy_to_device(np.ascontiguousarray(a.copy_to_host() @ b.copy_to_host()), stream=stream)

    original_validate = api.validate

    def counted_validate(*args, **kwargs):
        validations.append(1)
        return original_validate(*args, **kwargs)

    monkeypatch.setattr(gemm_steps.Step, "launch", numpy_step_launch)
    monkeypatch.setattr(api, "validate", counted_validate)
    monkeypatch.setattr(dispatch, "table", lambda gpu: TABLE)
    dispatch.forget()
    api.forget_calls()
    yield launched, validations
    dispatch.forget()
    api.forget_calls()


def operands(rng, m, n, k):
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    return a, b, cuda.to_device(a), cuda.to_device(b), cuda.to_device(np.full((m, n), np.nan, np.float32))


def test_a_repeated_call_skips_the_checks_and_gives_the_same_product(recorded, rng):
    launched, validations = recorded
    a, b, a_dev, b_dev, out = operands(rng, 8, 8, 8)
    for _ in range(3):
        assert gemm_steps.matmul(a_dev, b_dev, out=out) is out
        assert_close(out, a, b, "a repeated matmul into out")
    assert launched == ["naive"] * 3 and len(validations) == 1
    for _ in range(2):  # without out: a new array each time
        c = gemm_steps.matmul(a_dev, b_dev)
        assert api.is_device_array(c) and c is not out
        assert_close(c, a, b, "a repeated matmul without out")
    assert launched == ["naive"] * 5 and len(validations) == 2


def test_a_remembered_choice_is_not_reused_for_another_shape_or_precision(recorded, rng):
    launched, validations = recorded
    _, _, a8, b8, c8 = operands(rng, 8, 8, 8)
    _, _, a64, b64, c64 = operands(rng, 64, 64, 64)
    gemm_steps.matmul(a8, b8, out=c8)
    gemm_steps.matmul(a8, b8, out=c8, precision="tf32")
    gemm_steps.matmul(a8, b8, out=c8, precision="ieee")
    gemm_steps.matmul(a64, b64, out=c64)
    assert launched == ["naive", "tensor_cores", "naive", "coalesced"] and len(validations) == 4
    # The same buffers, another shape: a 4×16 @ 16×4 product over the same memory is checked and chosen anew
    a_flat, b_flat = a8.reshape(64), b8.reshape(64)
    gemm_steps.matmul(a_flat.reshape(4, 16), b_flat.reshape(16, 4), out=c8.reshape(64)[:16].reshape(4, 4))
    assert len(validations) == 5
    # Each remembered call still replays with its own choice
    gemm_steps.matmul(a8, b8, out=c8, precision="tf32")
    gemm_steps.matmul(a64, b64, out=c64)
    gemm_steps.matmul(a8, b8, out=c8)
    assert launched[-3:] == ["tensor_cores", "coalesced", "naive"] and len(validations) == 5
    # A named step is its own key: not the choice made for the same arrays without one
    gemm_steps.matmul(a8, b8, out=c8, step="coalesced")
    gemm_steps.matmul(a8, b8, out=c8, step="coalesced")
    assert launched[-2:] == ["coalesced", "coalesced"] and len(validations) == 6


def test_a_forgotten_dispatch_decision_is_made_again(recorded, rng, monkeypatch):
    """A new table (``dispatch.record`` empties the memo of decisions; so does a test) is read by the next call, even
    on arrays whose call was remembered."""
    launched, _ = recorded
    _, _, a8, b8, c8 = operands(rng, 8, 8, 8)
    gemm_steps.matmul(a8, b8, out=c8)
    monkeypatch.setattr(dispatch, "table", lambda gpu: {"gpu": None, "shapes": [[8, 8, 8, {"coalesced": 0.01}, 0.01]]})
    dispatch.forget()
    gemm_steps.matmul(a8, b8, out=c8)
    assert launched == ["naive", "coalesced"]


@pytest.mark.parametrize("case", ["out_wrong_shape", "a_strided", "out_strided", "out_is_a", "b_float64"])
def test_arrays_at_a_remembered_address_are_still_checked(recorded, rng, case):
    """After a good call is remembered, arrays that start at the same addresses but differ in shape, strides or dtype
    (or overlap) are refused as on a first call, before anything is launched."""
    launched, _ = recorded
    a_buffer, out_buffer = (cuda.to_device(rng.standard_normal((8, 16), dtype=np.float32)) for _ in range(2))
    a, out = (x.reshape(128)[:64].reshape(8, 8) for x in (a_buffer, out_buffer))  # C-contiguous, at the buffers' start
    b = cuda.to_device(rng.standard_normal((8, 8), dtype=np.float32))
    gemm_steps.matmul(a, b, out=out)
    assert launched == ["naive"]
    bad = {
        "out_wrong_shape": lambda: gemm_steps.matmul(a, b, out=out.reshape(64)[:32].reshape(4, 8)),
        "a_strided": lambda: gemm_steps.matmul(a_buffer[:, ::2], b, out=out),  # 8×8, a's address, every other column
        "out_strided": lambda: gemm_steps.matmul(a, b, out=out_buffer[:, ::2]),
        "out_is_a": lambda: gemm_steps.matmul(a, b, out=a),
        "b_float64": lambda: gemm_steps.matmul(a, cuda.to_device(np.zeros((8, 8))), out=out),
    }[case]
    with pytest.raises((ValueError, TypeError), match="shape|C-contiguous|overlaps|dtype"):
        bad()
    assert launched == ["naive"], "a refused call launched"
    gemm_steps.matmul(a, b, out=out)  # the good call still replays
    assert launched == ["naive", "naive"]


def test_replayed_launches_read_the_arrays_as_they_are_now(rng):
    """A replay skips checks, not work: new contents of the same buffers give the new product (a real kernel)."""
    dispatch.forget()
    api.forget_calls()
    m, n, k = 24, 20, 16
    a, b, a_dev, b_dev, out = operands(rng, m, n, k)
    gemm_steps.matmul(a_dev, b_dev, out=out)
    assert_close(out, a, b, "first call")
    for _ in range(2):
        a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
        a_dev.copy_to_device(a)
        b_dev.copy_to_device(b)
        assert gemm_steps.matmul(a_dev, b_dev, out=out) is out
        assert_close(out, a, b, "a replayed call on new contents")
    assert len(api._CALLS) == 1
    api.forget_calls()


def test_a_driver_launch_passes_each_argument_as_cuda_core_would(monkeypatch):
    """``DriverLaunch`` (``launch_plans.DRIVER_LAUNCHES``) packs a launch's parameters once: Python ints as 8-byte
    ``intptr_t`` (an array's fields), ``ctypes`` scalars as their own type. Checked here against a stand-in for the
    driver call that reads the parameter array back (the launch itself needs a GPU: tests/test_gpu.py)."""
    import ctypes

    driver = pytest.importorskip("cuda.bindings.driver")
    from gemm_steps.toolkit.kernel_tools import DriverLaunch, _three, flat_array_arguments

    seen = []

    def cu_launch_kernel(function, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra):
        array = (ctypes.c_void_p * 9).from_address(parameters)
        seen.append((function, (gx, gy, gz), (bx, by, bz), shared, stream, extra,
                     [ctypes.c_int64.from_address(array[i]).value for i in range(7)],
                     [ctypes.c_uint32.from_address(array[i]).value for i in (7, 8)]))
        return (driver.CUresult.CUDA_SUCCESS if len(seen) == 1 else driver.CUresult.CUDA_ERROR_INVALID_VALUE,)

    monkeypatch.setattr(driver, "cuLaunchKernel", cu_launch_kernel)
    arguments = flat_array_arguments(0x7F00_0000_1230, 4096) + (ctypes.c_uint32(64), ctypes.c_uint32(2**32 - 1))
    launch = DriverLaunch(0xBEEF, (*_three((3, 2)), *_three(256), 1024), 0, arguments)
    launch()
    assert seen == [(0xBEEF, (3, 2, 1), (256, 1, 1), 1024, 0, 0, [0, 0, 4096, 4, 0x7F00_0000_1230, 4096, 4],
                     [64, 2**32 - 1])]
    with pytest.raises(RuntimeError, match="cuLaunchKernel failed"):
        launch()
    with pytest.raises(TypeError, match="only int and ctypes scalars"):
        DriverLaunch(0xBEEF, (1, 1, 1, 1, 1, 1, 0), 0, (1.5,))


#: Steps and shapes for the GPU check below: stream-K (step 11) on its edge kernel only (K % 4 != 0) and on full
#: tiles with stream-K; step 9 on fast and edge tiles (two launches); step 14 (TMA tensor maps, Hopper only) on full
#: tiles and ragged ones.
DRIVER_CASES = [("stream_k", (1000, 1500, 701)), ("stream_k", (2432, 1792, 1024)), ("warp_tiling", (2100, 1800, 512)),
                ("warpgroup_mma", (2048, 2048, 2048)), ("warpgroup_mma", (1000, 1500, 704))]


@pytest.mark.gpu
@pytest.mark.parametrize("name, shape", DRIVER_CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in DRIVER_CASES])
def test_driver_launches_give_what_cuda_core_launches_give(name, shape, rng, monkeypatch):
    """Replayed through ``cuLaunchKernel`` (``launch_plans.DRIVER_LAUNCHES``), a matmul gives bitwise what the replay
    through ``cuda.core.launch`` gives, on the arrays it was recorded for and on new ones."""
    from gemm_steps.toolkit import launch_plans

    step = gemm_steps.get_step(name)
    if step.unavailable():
        pytest.skip(step.unavailable())
    m, n, k = shape
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
    results = {}
    for driver in (False, True):
        monkeypatch.setattr(launch_plans, "DRIVER_LAUNCHES", driver)
        for buffers in ("same", "new"):
            x, y = (a_dev, b_dev) if buffers == "same" else (cuda.to_device(a), cuda.to_device(b))
            out = cuda.to_device(np.full((m, n), np.nan, np.float32))
            for _ in range(2):  # the first call of new buffers records or binds, the second replays
                assert gemm_steps.matmul(x, y, step=step, out=out) is out
            results[driver, buffers] = out.copy_to_host()
    assert_close(results[False, "same"], a, b, f"{name} through cuda.core", step=step)
    for key, result in results.items():
        assert np.array_equal(result.view(np.uint32), results[False, "same"].view(np.uint32)), \
            f"{name} at {m}×{n}×{k}, {key}: {int((result != results[False, 'same']).sum())} elements differ"


def test_is_remembered_says_whether_a_call_would_be_replayed(rng):
    """The public question experiments/call_overhead.py asks of the memo (it read the private dict before)."""
    a, b = (cuda.to_device(rng.standard_normal((8, 8)).astype(np.float32)) for _ in range(2))
    c = cuda.device_array((8, 8), np.float32)
    api.forget_calls()
    assert not api.is_remembered(a, b, c, None, dispatch.DEFAULT_PRECISION)
    gemm_steps.matmul(a, b, out=c)
    assert api.is_remembered(a, b, c, None, dispatch.DEFAULT_PRECISION)
    assert not api.is_remembered(a, b, c, None, "tf32") and not api.is_remembered(a, b, None, None, "tf32x3")
    api.forget_calls()
    assert not api.is_remembered(a, b, c, None, dispatch.DEFAULT_PRECISION)
