"""On a real GPU: every step at large and awkward shapes, determinism, the cuBLAS baseline, the benchmark harness.

All tests here are ``@pytest.mark.gpu``: skipped (with the reason) on the simulator, run with
``python -m pytest -m gpu`` on a machine with a CUDA GPU. Float64 references of the big products are computed
once per shape on the host (NumPy, a second or two each) and shared by all steps.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import api
from helpers import assert_close, reference, rel_error, rng_for, tolerance

pytestmark = pytest.mark.gpu

STEPS = gemm_steps.steps()
#: Large, a power of two, one just past multiples of every tile in both directions (4097 = 32·128 + 1), and two
#: that break exactly one condition of the 128-bit fast path: N not a multiple of 4 (rows of B and C not 16-byte
#: aligned: a fast kernel run there faults on the GPU, while the simulator would not notice), and K a multiple of
#: 4 but not of BLOCK_K.
SHAPES = [(1000, 1500, 700), (2048, 2048, 2048), (4097, 4095, 1023), (1024, 1027, 1024), (1024, 1024, 1020)]


def step_id(step) -> str:
    return f"{step.number}-{step.name}"


@pytest.fixture(scope="module")
def problems():
    """{shape: (a, b, float64 reference, a on the device, b on the device)}, built on first use."""
    cache = {}

    def get(shape):
        if shape not in cache:
            m, n, k = shape
            rng = rng_for(f"gpu-{shape}")
            a = rng.standard_normal((m, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            cache[shape] = (a, b, reference(a, b), cuda.to_device(a), cuda.to_device(b))
        return cache[shape]

    return get


def poisoned(m, n):
    return cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_step_large(step, shape, problems):
    a, b, ref, a_dev, b_dev = problems(shape)
    out = poisoned(shape[0], shape[1])
    assert step(a_dev, b_dev, out=out) is out
    assert_close(out.copy_to_host(), a, b, f"step {step.number} {step.name}", ref=ref, step=step)


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_step_deterministic_on_gpu(step, problems):
    """Two launches on the same inputs: bitwise-identical (no atomics, no split-K, fixed summation order)."""
    shape = (2048, 2048, 2048)
    _, _, _, a_dev, b_dev = problems(shape)
    first, second = poisoned(2048, 2048), poisoned(2048, 2048)
    step(a_dev, b_dev, out=first)
    step(a_dev, b_dev, out=second)
    x, y = first.copy_to_host(), second.copy_to_host()
    assert not np.isnan(x).any()
    assert np.array_equal(x.view(np.uint32), y.view(np.uint32)), f"{int((x != y).sum())} elements differ"


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_fast_path_on_unaligned_device_views(step, rng):
    """Views starting 4 bytes into an allocation, at a shape the 128-bit fast path would take if aligned: a step
    must fall back to its guarded kernel (a misaligned 128-bit access is a hard fault on the GPU)."""
    m, n, k = 256, 256, 64
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    flat_a = cuda.to_device(np.concatenate([[np.float32(0)], a.ravel()]))
    flat_b = cuda.to_device(np.concatenate([[np.float32(0)], b.ravel()]))
    flat_c = cuda.to_device(np.full(1 + m * n, np.nan, np.float32))
    c = flat_c[1:].reshape(m, n)
    assert step(flat_a[1:].reshape(m, k), flat_b[1:].reshape(k, n), out=c) is c
    cuda.synchronize()
    assert_close(c.copy_to_host(), a, b, f"step {step.name} on unaligned views", step=step)


@pytest.mark.parametrize("step", [s for s in STEPS if s.tiled is not None], ids=step_id)
def test_launch_plans_give_what_numbas_launches_give(step, rng):
    """From its second launch on, a shape replays the launches recorded on its first (the driver called directly,
    no per-call argument typing). Bitwise the result of Numba's own launches: with new arrays (new addresses) and
    on another stream (stream-K gets that stream's workspace)."""
    # edge kernel only (K % 4 != 0); full tiles with stream-K (133 tiles of 128×256 on 132 SMs); fast + edge tiles
    for m, n, k in [(1000, 1500, 701), (2432, 1792, 1024), (2100, 1800, 512)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
        expected = poisoned(m, n)
        step.tiled.launch_through_numba(a_dev, b_dev, expected)
        expected = expected.copy_to_host()
        assert not np.isnan(expected).any()
        results = []
        for _ in range(2):  # records, then replays
            out = poisoned(m, n)
            step(a_dev, b_dev, out=out)
            results.append(out.copy_to_host())
        other_stream = cuda.stream()
        out = cuda.to_device(np.full((m, n), np.nan, np.float32), stream=other_stream)
        step.launch(cuda.to_device(a, stream=other_stream), cuda.to_device(b, stream=other_stream), out, other_stream)
        results.append(out.copy_to_host(stream=other_stream))
        for result in results:
            assert np.array_equal(result.view(np.uint32), expected.view(np.uint32)), \
                f"{step.name} at {m}×{n}×{k}: {int((result != expected).sum())} elements differ from Numba's launch"
        assert any(key[:3] == (m, n, k) for key in step.tiled.thread_plans()), "no launch plan was kept"


@pytest.mark.parametrize("shape", [(2**22, 1, 1), (1, 2**22, 1)], ids=["tall", "wide"])
@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_extreme_aspect_ratios(step, shape, rng):
    """4,194,304 × 1 and 1 × 4,194,304 results (16 MiB): well inside the 32-bit element limit, so the API accepts
    them — and then the step must compute them, even where a naive grid would need more than 65,535 blocks in y.
    A step that cannot must refuse with ValueError *before* launching, as the API's rules say."""
    m, n, k = shape
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    try:
        c = step(a, b)
    except ValueError:
        return  # refused up front: allowed
    assert_close(c, a, b, f"step {step.name} at {m}×{n}×{k}", step=step)


# -- cuBLAS -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (4097, 4095, 1023), (512, 512, 16384)],
                         ids=lambda s: "x".join(map(str, s)))
def test_cublas_is_strict_fp32(shape, problems):
    """cuBLAS in CUBLAS_DEFAULT_MATH is plain FP32: error ≈ eps32·√K-ish (~1e-6), not TF32's ~1e-4.

    TF32 keeps 10 mantissa bits of each input (rounding error 2⁻¹¹ ≈ 4.9e-4 per product), which gives a relative
    error of ~2e-4 on these products whatever K is. The tolerance here, 4·eps32·√K (≤ 5.4e-5 at K = 16384) and
    at most 2e-5 — 10× below TF32 — can only be met in FP32.
    """
    from gemm_steps.harness.cublas import tf32_override

    assert not tf32_override(), "NVIDIA_TF32_OVERRIDE is set: cuBLAS would use TF32"
    a, b, ref, a_dev, b_dev = problems(shape)
    out = poisoned(shape[0], shape[1])
    assert gemm_steps.cublas_matmul(a_dev, b_dev, out=out) is out
    c = out.copy_to_host()
    assert not np.isnan(c).any()
    err = rel_error(c, a, b, ref)
    assert err <= tolerance(shape[2]), f"cuBLAS relative error {err:.2e} > {tolerance(shape[2]):.2e}"
    assert err < 2e-5, f"cuBLAS relative error {err:.2e}: looks like TF32, not strict FP32"


def test_cublas_api(rng):
    """cublas_matmul follows the same rules as the steps: host in/host out, device in/device out, out returned,
    bad input refused, edges like NumPy."""
    a = rng.standard_normal((33, 17), dtype=np.float32)
    b = rng.standard_normal((17, 45), dtype=np.float32)
    host = gemm_steps.cublas_matmul(np.asfortranarray(a), b[:, ::-1].copy()[:, ::-1])
    assert isinstance(host, np.ndarray)
    assert_close(host, a, b, "cublas host")
    device = gemm_steps.cublas_matmul(cuda.to_device(a), cuda.to_device(b))
    assert api.is_device_array(device)
    assert_close(device.copy_to_host(), a, b, "cublas device")
    out = np.full((33, 45), np.nan, np.float32)
    assert gemm_steps.cublas_matmul(a, b, out=out) is out
    assert_close(out, a, b, "cublas out=")
    with pytest.raises(TypeError, match="astype"):
        gemm_steps.cublas_matmul(a.astype(np.float64), b)
    with pytest.raises(ValueError, match="inner dimensions"):
        gemm_steps.cublas_matmul(a, a)
    with pytest.raises(ValueError, match="overlaps"):
        square = rng.standard_normal((8, 8), dtype=np.float32)
        gemm_steps.cublas_matmul(square, square.copy(), out=square)
    zeros = gemm_steps.cublas_matmul(np.empty((3, 0), np.float32), np.empty((0, 4), np.float32))
    assert np.array_equal(zeros, np.zeros((3, 4), np.float32))
    assert gemm_steps.cublas_matmul(np.empty((0, 5), np.float32), np.ones((5, 4), np.float32)).shape == (0, 4)


def test_device_arrays_in_and_out(rng):
    """Device in → device out for every step, on one stream of work with no host copies in between."""
    m, n, k = 300, 200, 100
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
    for step in STEPS:
        c = step(a_dev, b_dev)
        assert api.is_device_array(c) and tuple(c.shape) == (m, n)
        assert_close(c.copy_to_host(), a, b, f"step {step.name}, device result", step=step)


# -- the benchmark harness ----------------------------------------------------------------------------------------

def test_run_benchmark_smoke():
    from gemm_steps.harness.bench import run_benchmark

    step = STEPS[-1]
    results = run_benchmark([step], [(256, 256, 256)], warmup=1, repeats=3, max_seconds=0.05,
                            progress=lambda message: None)
    env = results["environment"]
    for key in ("gpu", "sm_count", "numba_cuda", "numpy"):
        assert env.get(key), f"environment lacks {key}: {env}"
    assert env.get("driver_cuda_version") or env.get("smi_driver_version"), f"environment lacks the driver: {env}"
    assert env["simulator"] is False
    by_name = {r["step"]: r for r in results["records"]}
    # cuBLAS SGEMM always; cuBLAS TF32 too beside a tensor-core step (run_benchmark's default)
    assert set(by_name) == {"cublas", step.name} | ({"cublas_tf32"} if step.arithmetic != "fp32" else set()), by_name
    record = by_name[step.name]
    assert "error" not in record, record
    assert record["unwritten"] == 0
    assert record["median_ms"] > 0 and record["runs"] >= 3
    assert 0 < record["pct_of_cublas"] < 1000
    # the clock read after the launches: a real SM clock (Hopper: up to 1,980 MHz; any GPU: 100 MHz – 4 GHz)
    assert 100 < record["sm_clock_mhz_min"] <= record["sm_clock_mhz_median"] < 4000, record
    # against cuBLAS SGEMM: float32 steps agree to float32 rounding, a TF32 step only to TF32's (the last step is one)
    from gemm_steps.harness.verify import tolerance_of

    limit = 1e-5 if step.arithmetic != "tf32" else tolerance_of("tf32", 256)
    assert record["rel_error_vs_cublas"] < limit, f"{step.name} ({step.arithmetic}): {record['rel_error_vs_cublas']:.1e}"
    assert by_name["cublas"]["sampled_rel_error_fp64"] < 1e-5


def test_the_clock_under_load_is_sampled_while_the_kernel_runs():
    """gpu_clock.clock_under_load (the one sampler of the reference script and the clock experiments): a second of
    back-to-back launches gives NVML samples after the settling time, a real SM clock and power, the launches it ran."""
    pytest.importorskip("pynvml", reason="NVML's Python binding (nvidia-ml-py) is not installed")
    from gemm_steps.harness.gpu_clock import clock_under_load

    step = gemm_steps.get_step("warp_tiling")
    a, b, c = cuda.to_device(np.ones((1024, 1024), np.float32)), cuda.to_device(np.ones((1024, 1024), np.float32)), \
        cuda.device_array((1024, 1024), np.float32)
    call = lambda: step.launch(a, b, c)  # noqa: E731
    call()
    cuda.synchronize()
    load = clock_under_load(call, seconds=1.0, settle_seconds=0.3)
    assert load["samples"] >= 10 and load["launches"] >= 4 and 0.9 < load["seconds"] < 5, load
    assert 100 < load["sm_clock_mhz_min"] <= load["sm_clock_mhz"] < 4000 and 10 < load["power_w"] < 2000, load
    assert all(reason.startswith("0x") for reason in load["event_reasons"]), load


@pytest.mark.parametrize("step", [s for s in STEPS if getattr(s.module, "PTXAS_EXPECT", None)], ids=step_id)
def test_ptxas_claims_hold_for_the_drivers_compile(step):
    """``PTXAS_EXPECT`` (registers, spill bytes) against the kernel the GPU runs: Numba's own compile for this GPU
    (its local memory per thread is ptxas's stack frame, the spilled bytes here). tests/test_ptx.py checks the same
    claims with the ptxas of the nvJitLink wheel on a CPU."""
    if step.unavailable():
        pytest.skip(step.unavailable())
    from helpers import COMPARE, parse_expectation

    kernels = step.kernels()
    failures = []
    for label, wanted in step.module.PTXAS_EXPECT.items():
        dispatcher, signature = kernels[label]
        compiled = dispatcher.compile(signature)
        measured = {"registers": compiled.regs_per_thread, "spill_bytes": compiled.local_mem_per_thread}
        for key, spec in wanted.items():
            if key not in measured:  # what only ptxas's log says (wgmma_serialized): tests/test_ptx.py checks it
                continue
            op, value = parse_expectation(spec)
            if not COMPARE[op](measured[key], value):
                failures.append(f"{label}: {key} is {measured[key]} on this GPU, expected {op} {value}")
    assert not failures, "\n".join(failures)
