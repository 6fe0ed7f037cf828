"""PTX for the tests, compiled by NVVM in the GPU-mode worker (gemm_steps.harness.gpu_mode).

Compiling every kernel of the course to PTX takes minutes on a CI machine (the unrolled kernels of steps 7–11 are
thousands of lines each), and Numba must run in GPU mode to do it (``NUMBA_ENABLE_CUDASIM=0``; no GPU needed), which
a simulator test process cannot switch to. So the ``ptx`` fixture (``conftest.py``), the first time a test asks for
PTX, queues the jobs of every selected test (they carry ``@pytest.mark.ptx(job, …)``) on the package's GPU-mode
worker — the child process that also compiles for the exercise grader and the lessons — one call of
:func:`compile_job` a job, in order. A test asks :meth:`PTXJobs.stats` for its kernel and waits only for its job.
Under pytest-xdist the PTX tests are one unit of work (``conftest.py``), so one worker runs them all and the compile
happens once; the other worker runs other tests meanwhile.

Jobs (strings, so they can be marker arguments):

* ``"<step name>"`` — every kernel of the step, labelled as in ``step.kernels()``;
* ``"warp_tiling:<config JSON>"`` — step 9's fast kernel built for another :class:`TileConfig`, labelled ``fast``;
* ``"kernels:<module>:<function>"`` — whatever ``function()`` returns, ``{label: (dispatcher, signature)}`` like
  ``step.kernels()`` (for kernels built elsewhere, e.g. ``experiments/``);
* ``"patches:<step>:<config JSON or null>"`` — not PTX stats but :func:`numba_patch_check.compare`: the step's
  kernels compiled with and without the compile-time patches, one record labelled ``patches``. These jobs run
  after all others (they switch the patches off and on again), and their tests run after the other PTX tests
  (``conftest.py``).

Each kernel's stats are :func:`gemm_steps.harness.ptx.ptx_stats`' plus ``extern_shared`` (whether the PTX declares
dynamic shared memory) and, for a kernel its step names in ``PTXAS_EXPECT`` (and every kernel of a ``kernels:``
job), ``ptxas`` (what :func:`gemm_steps.harness.ptx.kernel_ptxas_info` reports: the kernel linked with ``-lto`` as
numba-cuda builds it on a GPU), or ``{"error": …}`` if it failed to compile.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future
from dataclasses import asdict

import pytest

from gemm_steps.harness import gpu_mode

#: How long one job may compile in the worker before its tests fail (the whole compile takes ~4 minutes on a CI core).
TIMEOUT_S = 600


# -- in the GPU-mode worker -----------------------------------------------------------------------------------------
def identity(dispatcher, signature) -> str:
    """What a kernel's PTX depends on, within this process (:func:`gemm_steps.harness.ptx.kernel_identity`). Steps
    16-18 take their edge kernels from builds of steps 15 and 14 with the same tiles: those compile once."""
    from gemm_steps.harness.ptx import kernel_identity

    return json.dumps(kernel_identity(dispatcher, signature), default=str)


#: identity → {"ptx": …, "ptxas": …}: what the worker has compiled for earlier jobs.
_COMPILED: dict = {}


def compile_job(job: str) -> dict:
    """One job, compiled in this process (GPU mode): ``{"kernels": {label: stats}}``, or ``{"unavailable": why}``
    where NVVM cannot be loaded. A kernel that fails to compile gets ``{"error": …}`` as its stats."""
    from gemm_steps.harness.ptx import compiled_kernel, nvvm_version, ptx_stats, ptxas_info
    from gemm_steps.toolkit.gpu_requirements import CHECKED_COMPUTE_CAPABILITIES

    if nvvm_version() is None:
        return {"unavailable": "NVVM unavailable: libNVVM cannot be loaded, so no kernel compiles to PTX "
                               "(pip install 'numba-cuda[cu13]')"}
    import gemm_steps

    if job.startswith("patches:"):
        from numba_patch_check import compare

        _, step, config = job.split(":", 2)
        start = time.perf_counter()
        try:
            stats = compare(step, json.loads(config))
        except Exception as exc:  # reported: the test of that job fails with it
            stats = {"error": f"{type(exc).__name__}: {exc}"}
        return {"kernels": {"patches": stats}, "seconds": round(time.perf_counter() - start, 1)}
    if job.startswith("warp_tiling:"):
        from gemm_steps.steps import warp_tiling
        from gemm_steps.toolkit.tile_config import TileConfig

        built = warp_tiling.build(TileConfig(**json.loads(job.split(":", 1)[1])))
        kernels = {"fast": (built.kernel("fast"), built.signature("fast"))}
    elif job.startswith("kernels:"):
        import importlib

        module, function = job.split(":")[1:]
        kernels = getattr(importlib.import_module(module), function)()
    else:
        kernels = gemm_steps.get_step(job).kernels()
    # ptxas's report for the kernels a step makes claims about, and for every kernel built outside the steps
    assembled = set(getattr(gemm_steps.get_step(job).module, "PTXAS_EXPECT", {})) if ":" not in job else set(kernels)
    # which GPUs a step's kernels assemble for (its fast kernel stands for a tiled step; the edge kernel uses the
    # same instructions): NVVM's PTX, its .target set to each compute capability, through nvJitLink's ptxas
    portable = {label for label in kernels if ":" not in job and (label.endswith("_fast")
                                                                  or gemm_steps.get_step(job).tiled is None)}
    found = {}
    for label, (dispatcher, signature) in kernels.items():
        try:
            done = _COMPILED.setdefault(identity(dispatcher, signature), {})
            # the step makes claims about ptxas's register allocation: build it as on a GPU, from the same lowering
            # (compiled_kernel: once on this machine — a lesson's worker that compiled it first is read back)
            if "ptx" not in done or (label in assembled and "lto_ptxas" not in done):
                done.update(compiled_kernel(dispatcher, signature, lto=label in assembled))
            ptx = done["ptx"]
            stats = ptx_stats(ptx)
            stats["extern_shared"] = ".extern .shared" in ptx
            if label in assembled:
                stats["ptxas"] = done["lto_ptxas"]
            if label in portable:
                stats["assembles"] = {f"{cc[0]}.{cc[1]}": bool(ptxas_info(ptx, cc))
                                      for cc in CHECKED_COMPUTE_CAPABILITIES}
        except Exception as exc:  # reported per kernel: the test of that kernel fails with it
            stats = {"error": f"{type(exc).__name__}: {exc}"}
        found[label] = stats
    return {"kernels": found}


# -- in the test process --------------------------------------------------------------------------------------------
def coalesced_kernels() -> dict:
    """Step 2's kernels, for the test of ``kernels:`` jobs (tests/test_ptx.py)."""
    import gemm_steps

    return gemm_steps.get_step("coalesced").kernels()


def warp_tiling_job(config) -> str:
    """The job compiling step 9's fast kernel for ``config`` (a TileConfig)."""
    return "warp_tiling:" + json.dumps(asdict(config), sort_keys=True)


def patches_job(step: str, config: dict | None) -> str:
    """The job comparing one step's PTX with and without the compile-time patches (``config``: TileConfig fields)."""
    return f"patches:{step}:{json.dumps(config, sort_keys=True)}"


class PTXJobs:
    """Some jobs, queued on the GPU-mode worker in order (the comparisons last); :meth:`stats` waits for one."""

    def __init__(self, jobs: list[str]):
        self.jobs = sorted(jobs, key=lambda job: job.startswith("patches:"))  # stable: the comparisons come last
        self.answers: dict[str, Future] = {job: gpu_mode.submit("ptx_jobs:compile_job", job, timeout=TIMEOUT_S)
                                           for job in self.jobs}

    def _answer(self, job: str) -> dict:
        if job not in self.answers:
            pytest.fail(f"PTX job {job!r} was not started: mark the test with @pytest.mark.ptx({job!r})")
        try:
            answer = self.answers[job].result()
        except gpu_mode.GPUModeError as error:
            pytest.fail(f"[ptx] job {job} failed: {error}")
        if "unavailable" in answer:
            pytest.skip(answer["unavailable"])
        return answer

    def labels(self, job: str) -> list[str]:
        """The labels of the kernels a job compiled, in the order it built them."""
        return list(self._answer(job)["kernels"])

    def stats(self, job: str, label: str) -> dict:
        """The PTX stats of one kernel of a job, once compiled (skips the test if NVVM is unavailable)."""
        answer = self._answer(job)
        if label not in answer["kernels"]:
            pytest.fail(f"[ptx] job {job} has no kernel {label!r} (it has {sorted(answer['kernels'])})")
        return answer["kernels"][label]

    def close(self) -> None:
        """Cancel the jobs not started yet (a run stopped early)."""
        for answer in self.answers.values():
            answer.cancel()


#: The tile configuration of the cp.async variant's PTX check (tests/test_variants.py's SMALL).
ASYNC_VARIANT_CONFIG = dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=8, THREAD_M=8, THREAD_N=8)


def async_copy_variant_kernels() -> dict:
    """experiments/kernels/warp_tiling_async.py with both copies asynchronous, fast kernel, labelled ``fast``
    (tests/test_variants.py)."""
    from experiments.kernels import warp_tiling_async
    from gemm_steps.toolkit.tile_config import TileConfig

    kernels = warp_tiling_async.build(TileConfig(**ASYNC_VARIANT_CONFIG), async_a=True, async_b=True,
                                      name="variant_async_ptx")
    return {"fast": (kernels.kernels["fast"], kernels.signature("fast"))}


def readable_copy_kernels() -> dict:
    """``toolkit/tma_tiles.copy_rows_kernel`` (steps 17 and 18's readable copy), labelled ``copy``
    (tests/test_tma_edges.py)."""
    from gemm_steps.toolkit.tma_tiles import TmaTiles, copy_rows_kernel

    return {"copy": (copy_rows_kernel, TmaTiles.rows_signature)}


def split_k_reduce_kernels() -> dict:
    """Steps 17 and 18's split-K reductions (``add_slices_kernel``), labelled ``17`` and ``18``, and the readable copy
    (``copy``): kernels launched as programmatic dependent launches (tests/test_tma_edges.py)."""
    from gemm_steps.steps import warp_specialized, warp_specialized_3xtf32
    from gemm_steps.toolkit.tma_tiles import TmaTiles

    from gemm_steps.toolkit.tma_tiles import copy_rows_kernel

    return {"17": (warp_specialized.add_slices_kernel, TmaTiles.rows_signature),
            "18": (warp_specialized_3xtf32.add_slices_kernel, TmaTiles.rows_signature),
            "copy": (copy_rows_kernel, TmaTiles.rows_signature)}
