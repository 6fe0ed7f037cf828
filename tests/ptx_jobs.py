"""PTX for the tests, compiled by NVVM in one background process while the simulator tests run.

Compiling every kernel of the course to PTX takes minutes on a CI machine (the unrolled kernels of steps 7–11 are
thousands of lines each), and Numba must run in GPU mode to do it (``NUMBA_ENABLE_CUDASIM=0``; no GPU needed).
Waiting for that in a fixture would hold the test run silent for minutes, and the simulator tests use one core.
So, when the selected tests need PTX (they carry ``@pytest.mark.ptx(job, …)``), ``conftest.py`` starts one child
process at the end of collection that compiles exactly those jobs, kernel by kernel, printing one JSON line per
kernel as it finishes. A test asks :meth:`PTXJobs.stats` for its kernel and waits only for that one, with a
progress line on the terminal if the wait is long.

Jobs (strings, so they can be marker arguments):

* ``"<step name>"`` — every kernel of the step, labelled as in ``step.kernels()``;
* ``"warp_tiling:<config JSON>"`` — step 9's fast kernel built for another :class:`TileConfig`, labelled ``fast``;
* ``"kernels:<module>:<function>"`` — whatever ``function()`` returns, ``{label: (dispatcher, signature)}`` like
  ``step.kernels()`` (for kernels built elsewhere, e.g. ``experiments/``).

Each kernel's stats are :func:`gemm_steps.harness.ptx.ptx_stats`' plus ``extern_shared`` (whether the PTX declares
dynamic shared memory), or ``{"error": …}`` if it failed to compile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import pytest

#: How long a test waits for its kernel before it fails (the whole compile takes ~4 minutes on 2 cores).
TIMEOUT_S = 1800
#: A waiting test prints a progress line this often.
PROGRESS_EVERY_S = 15

CHILD = r"""
import json, sys, time

from gemm_steps.harness.ptx import compile_kernel_ptx, nvvm_version, ptx_stats


def emit(**record):
    print(json.dumps(record), flush=True)


if nvvm_version() is None:
    emit(unavailable="NVVM unavailable: libNVVM cannot be loaded, so no kernel compiles to PTX "
                     "(pip install 'numba-cuda[cu13]')")
    sys.exit(0)

import gemm_steps

for job in json.loads(sys.argv[1]):
    if job.startswith("warp_tiling:"):
        from gemm_steps.steps import warp_tiling
        from gemm_steps.toolkit.tiles import TileConfig

        built = warp_tiling.build(TileConfig(**json.loads(job.split(":", 1)[1])))
        kernels = {"fast": (built.kernel("fast"), built.signature("fast"))}
    elif job.startswith("kernels:"):
        import importlib

        module, function = job.split(":")[1:]
        kernels = getattr(importlib.import_module(module), function)()
    else:
        kernels = gemm_steps.get_step(job).kernels()
    for label, (dispatcher, signature) in kernels.items():
        start = time.perf_counter()
        try:
            ptx = compile_kernel_ptx(dispatcher, signature)
            stats = ptx_stats(ptx)
            stats["extern_shared"] = ".extern .shared" in ptx
        except Exception as exc:  # reported per kernel: the test of that kernel fails with it
            stats = {"error": f"{type(exc).__name__}: {exc}"}
        emit(job=job, label=label, stats=stats, seconds=round(time.perf_counter() - start, 1))
emit(done=True)
"""


def _gpu_mode_env() -> dict[str, str]:
    """This environment with Numba in GPU mode, and this checkout's gemm_steps and tests/ first on the path."""
    import gemm_steps

    checkout = Path(gemm_steps.__file__).resolve().parents[1]
    path = os.pathsep.join([str(checkout), str(Path(__file__).resolve().parent),
                            *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": path}


def coalesced_kernels() -> dict:
    """Step 2's kernels, for the test of ``kernels:`` jobs (tests/test_ptx.py)."""
    import gemm_steps

    return gemm_steps.get_step("coalesced").kernels()


def warp_tiling_job(config) -> str:
    """The job compiling step 9's fast kernel for ``config`` (a TileConfig)."""
    return "warp_tiling:" + json.dumps(asdict(config), sort_keys=True)


class PTXJobs:
    """The background compile of some jobs; :meth:`stats` waits for one kernel."""

    def __init__(self, jobs: list[str], say: Callable[[str], None] = print):
        self.jobs = list(jobs)
        self.say = say
        self.results: dict[tuple[str, str], dict] = {}
        self.unavailable: str | None = None
        self.finished = False
        self.started = time.monotonic()
        self._changed = threading.Condition()
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(self.jobs)], env=_gpu_mode_env(),
                                        stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        self._reader = threading.Thread(target=self._read, name="ptx-jobs", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # something else printed to stdout
            with self._changed:
                if "unavailable" in record:
                    self.unavailable = record["unavailable"]
                elif "label" in record:
                    self.results[(record["job"], record["label"])] = record["stats"]
                self._changed.notify_all()
        self.process.wait()
        with self._changed:
            self.finished = True
            self._changed.notify_all()

    def stderr_tail(self, chars: int = 3000) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()[-chars:]

    def stats(self, job: str, label: str) -> dict:
        """The PTX stats of one kernel of a job, once compiled (skips the test if NVVM is unavailable)."""
        if job not in self.jobs:
            pytest.fail(f"PTX job {job!r} was not started: mark the test with @pytest.mark.ptx({job!r})")
        deadline = time.monotonic() + TIMEOUT_S
        next_report = time.monotonic() + PROGRESS_EVERY_S
        with self._changed:
            while (job, label) not in self.results and self.unavailable is None and not self.finished:
                now = time.monotonic()
                if now > deadline:
                    pytest.fail(f"PTX of {label} not compiled after {TIMEOUT_S} s")
                if now >= next_report:
                    self.say(f"[ptx] waiting for {label}: {len(self.results)} kernels compiled in "
                             f"{now - self.started:.0f} s so far (jobs: {', '.join(self.jobs)})")
                    next_report = now + PROGRESS_EVERY_S
                self._changed.wait(timeout=1.0)
            if (job, label) in self.results:
                return self.results[(job, label)]
        if self.unavailable is not None:
            pytest.skip(self.unavailable)
        pytest.fail(f"the PTX compile process ended (exit {self.process.returncode}) without kernel {label} of "
                    f"job {job!r}:\n{self.stderr_tail()}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._stderr.close()
