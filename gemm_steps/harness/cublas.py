"""The baseline: cuBLAS SGEMM in strict FP32, called through nvmath-python on Numba's device arrays (no CuPy).

cuBLAS is column-major; our matrices are row-major. A row-major (M, N) matrix is the same memory as a
column-major (N, M) one — its transpose. So ``C = A·B`` (row-major) is ``Cᵀ = Bᵀ·Aᵀ`` (column-major), which is one
column-major SGEMM with the operands swapped: ``m = N, n = M, k = K``, first operand B (ld N), second A (ld K).

Strict FP32: the handle is set to ``CUBLAS_DEFAULT_MATH``, which does not use TF32 tensor cores (unless the
environment variable ``NVIDIA_TF32_OVERRIDE=1`` forces it: :func:`tf32_override` reports that, and the benchmark
records it). The benchmark also checks cuBLAS's error against float64, which would show TF32 (~1e-4 relative).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..toolkit.backend import SIMULATOR
from .api import run

_HANDLES: dict[tuple[int, bool], int] = {}


def _cublas():
    if SIMULATOR:
        raise RuntimeError(
            "cuBLAS needs a real CUDA GPU, but gemm-steps is running on Numba's CUDA simulator. "
            "Without a GPU, compare against the shipped results in results/ (gemm-steps plot)."
        )
    try:
        from nvmath.bindings import cublas
    except ImportError as exc:
        raise RuntimeError(
            "the cuBLAS baseline needs nvmath-python: pip install 'gemm-steps[cu13]' (or [cu12] for CUDA 12 drivers)"
        ) from exc
    return cublas


def tf32_override() -> bool:
    return os.environ.get("NVIDIA_TF32_OVERRIDE", "") not in ("", "0")


def _handle(cublas, tf32: bool = False) -> int:
    """One cuBLAS handle per context and arithmetic: strict FP32 (``CUBLAS_DEFAULT_MATH``), or the handle the TF32
    baseline uses (its compute type, given per call, selects the tensor cores)."""
    from numba import cuda

    key = (id(cuda.current_context()), tf32)
    if key not in _HANDLES:
        handle = cublas.create()
        if not tf32:
            cublas.set_math_mode(handle, cublas.Math.DEFAULT_MATH)  # strict FP32: no TF32 tensor cores
        cublas.set_pointer_mode(handle, cublas.PointerMode.HOST)
        _HANDLES[key] = handle
    return _HANDLES[key]


_ONE = np.ones(1, dtype=np.float32)
_ZERO = np.zeros(1, dtype=np.float32)


def _pointer(x: Any) -> int:
    return x.__cuda_array_interface__["data"][0]


def _stream_handle(stream: Any) -> int:
    if not stream:
        return 0
    handle = stream.handle
    return int(getattr(handle, "value", handle) or 0)


def launch_cublas(a, b, c, stream=0) -> None:
    """SGEMM on validated C-contiguous float32 device arrays, on ``stream`` (the same stream as the kernels)."""
    cublas = _cublas()
    handle = _handle(cublas)
    m, k = a.shape
    n = b.shape[1]
    cublas.set_stream(handle, _stream_handle(stream))
    op_n = cublas.Operation.N
    # Column-major Cᵀ(N×M) = Bᵀ(N×K) · Aᵀ(K×M): operands swapped, leading dimensions are the row lengths.
    cublas.sgemm(handle, op_n, op_n, n, m, k, _ONE.ctypes.data, _pointer(b), n, _pointer(a), k,
                 _ZERO.ctypes.data, _pointer(c), n)


def launch_cublas_tf32(a, b, c, stream=0) -> None:
    """cuBLAS on the TF32 tensor cores: ``cublasGemmEx`` with ``CUBLAS_COMPUTE_32F_FAST_TF32`` (float32 in and out,
    operands rounded to TF32 inside). The baseline of the tensor-core steps; never the default."""
    cublas = _cublas()
    from nvmath import CudaDataType

    handle = _handle(cublas, tf32=True)
    m, k = a.shape
    n = b.shape[1]
    cublas.set_stream(handle, _stream_handle(stream))
    op_n = cublas.Operation.N
    f32 = CudaDataType.CUDA_R_32F
    cublas.gemm_ex(handle, op_n, op_n, n, m, k, _ONE.ctypes.data, _pointer(b), f32, n, _pointer(a), f32, k,
                   _ZERO.ctypes.data, _pointer(c), f32, n, cublas.ComputeType.COMPUTE_32F_FAST_TF32,
                   cublas.GemmAlgo.DEFAULT)


def cublas_matmul(a: Any, b: Any, out: Any = None):
    """``a @ b`` by cuBLAS SGEMM (strict FP32). Same inputs, outputs and errors as :func:`gemm_steps.matmul`."""
    _cublas()  # fail with a clear message before any transfer
    return run(launch_cublas, a, b, out)


def version() -> str | None:
    """cuBLAS's version number, or None where it cannot be loaded."""
    try:
        return str(_cublas().get_version(_handle(_cublas())))
    except Exception:
        return None
