"""Run in the GPU-mode worker (tests/ptx_jobs.py, jobs ``"patches:<step>:<config>"``): the PTX of some
kernels compiled as the course compiles them (:func:`gemm_steps.harness.ptx.compile_kernel_ptx`: its one lowering,
with :mod:`gemm_steps.toolkit.numba_patches`) and as numba-cuda alone does (``cuda.compile``, no patches)."""

from __future__ import annotations

import importlib
import re
import time


def _normalized(ptx: str) -> str:
    """PTX with the per-process counters Numba puts in names (``…B2v3B…``, ``_cudapy_smem_7``) renumbered in order of
    first appearance, so two compiles in one process compare equal when their code is equal."""
    ptx = re.sub(r"B\d+v\d+B", "BvB", ptx)
    seen: dict[str, str] = {}
    return re.sub(r"_cudapy_smem_\d+", lambda m: seen.setdefault(m.group(0), f"_cudapy_smem_#{len(seen)}"), ptx)


def compare(step: str, config: dict | None) -> dict:
    """{kernel label: [same PTX?, seconds the course's way, seconds numba-cuda's]} for one step, built for ``config``
    (a TileConfig's fields) when given, else the shipped build."""
    from numba import cuda

    import gemm_steps
    from gemm_steps.harness.ptx import compile_kernel_ptx, compile_options
    from gemm_steps.toolkit import numba_patches
    from gemm_steps.toolkit.tile_config import TileConfig

    if config:
        built = importlib.import_module(f"gemm_steps.steps.{step}").build(TileConfig(**config))
        kernels = built.ptx_kernels()
    else:
        kernels = gemm_steps.get_step(step).kernels()
    result = {}
    for label, (dispatcher, signature) in kernels.items():
        ptx, seconds = {}, {}
        start = time.perf_counter()
        ptx[True] = compile_kernel_ptx(dispatcher, signature, (9, 0))  # applies the patches
        seconds[True] = time.perf_counter() - start
        numba_patches.remove()
        try:
            start = time.perf_counter()
            ptx[False], _ = cuda.compile(dispatcher.py_func, signature, device=False, abi="numba", cc=(9, 0),
                                         output="ptx", **compile_options(dispatcher))
            seconds[False] = time.perf_counter() - start
        finally:  # the GPU-mode worker compiles on for other callers: with the patches
            numba_patches.apply()
        result[label] = [_normalized(ptx[True]) == _normalized(ptx[False]), seconds[True], seconds[False]]
    return result
