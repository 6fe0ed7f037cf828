"""Shared test setup: the ``gpu`` marker, the PTX compile, the order of the tests, and reproducible per-test random
inputs, the reference and the tolerance.

* ``@pytest.mark.gpu`` tests need a real CUDA GPU. On Numba's CUDA simulator (no GPU: chosen automatically by
  :mod:`gemm_steps.toolkit.backend`) they are *skipped, with the reason shown* — never silently passed. Run them on
  a GPU with ``python -m pytest -m gpu``.
* Everything else runs anywhere; on the simulator it is what CI runs (see ``.ci/run``): ``python -m pytest -n auto``,
  pytest-xdist workers one a core and one more (:func:`pytest_xdist_auto_num_workers`), each taking the next test
  when it is free. Without ``-n`` the same tests run one
  after the other in this process.
* ``@pytest.mark.ptx(job, …)`` tests read compiled PTX through the ``ptx`` fixture: the package's GPU-mode worker
  (:mod:`gemm_steps.harness.gpu_mode`, a child process; ``tests/`` is on its path) compiles the jobs of all selected
  tests, queued by the first test that asks (``tests/ptx_jobs.py``). Under pytest-xdist they
  are one unit of work (:func:`pytest_xdist_make_scheduler`), so one worker runs them all and the compile happens
  once. (Not ``--dist loadgroup``: pytest-xdist 3.8 groups by rewriting ``item._nodeid``, which pytest 9.2 no
  longer reads, so its ``xdist_group`` marks grouped nothing and each worker compiled everything.)
* The slowest tests go first (the PTX group, then the lessons executed on the simulator), so that no worker is left
  with a long test when the other has finished.
* Python's thread switch interval stays at its default, 5 ms; a simulated block raises it to 0.2 s while it runs
  (``simulator_patches.LAUNCH_SWITCH_INTERVAL_S``, for learners too). (Until 2026-11-26 the tests set 1 ms, which
  helped while the simulator's ``syncthreads`` polled every thread and the tensor-core steps' threads were spread
  over the cores; with the counting barrier and one-CPU launches (``kernel_tools.on_one_cpu``) 5 ms was 5-13 %
  faster a call, and 0.2 s faster still.)

The helpers themselves live in ``tests/helpers.py`` (importable by test modules and by Hypothesis tests, which
cannot use function-scoped fixtures); the fixtures below hand them to ordinary tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: NUMBA_ENABLE_CUDASIM as the person running the tests left it ("" if unset), recorded by the run's first process:
#: gemm_steps sets the variable when it chooses the backend itself, and pytest-xdist's workers inherit it, so a worker
#: would report "NUMBA_ENABLE_CUDASIM=1 was set" when nobody set it.
CUDASIM_AS_GIVEN = "GEMM_STEPS_TESTS_CUDASIM_AS_GIVEN"
os.environ.setdefault(CUDASIM_AS_GIVEN, os.environ.get("NUMBA_ENABLE_CUDASIM", ""))
#: tests/ on the path of every child Python (the GPU-mode worker imports ptx_jobs and numba_patch_check from it).
TESTS = str(Path(__file__).resolve().parent)
if TESTS not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join([TESTS, *filter(None, [os.environ.get("PYTHONPATH")])])

import gemm_steps  # noqa: E402  first of the package: chooses GPU or simulator before anything imports Numba
import numpy as np
import pytest

import helpers
import ptx_jobs

#: Under pytest-xdist, the folder where each worker writes the node ids of the PTX tests it collected, for the
#: controller's scheduler (set by the controller, inherited by its workers).
PTX_GROUP_DIR = "GEMM_STEPS_PTX_GROUP_DIR"
#: Where gemm_steps keeps a user's files (gemm_steps.toolkit.backend.user_cache); a folder of the run in the tests.
USER_CACHE = "GEMM_STEPS_CACHE"
#: The test that executes a lesson on the simulator (tests/test_notebooks.py).
LESSON_TEST = "test_lesson_runs_on_the_simulator"


def _ptx_jobs(item) -> list[str]:
    return [job for mark in item.iter_markers("ptx") for job in mark.args]


def _order(item) -> int:
    """0: a PTX test; 1: a compile-time patch comparison (the GPU-mode worker does those last); 2: a lesson; 3: the
    rest."""
    jobs = _ptx_jobs(item)
    if jobs:
        return 1 if any(job.startswith("patches:") for job in jobs) else 0
    return 2 if getattr(item, "originalname", None) == LESSON_TEST else 3


def pytest_configure(config):
    if "PYTEST_XDIST_WORKER" not in os.environ:
        # The package's files for a user (tuned and dispatch tables, generated sources, compiled kernels' reports)
        # go to a folder of this run, shared by its workers and the lessons they execute: a run starts as cold as on
        # a fresh CI machine and leaves the user's ~/.cache/gemm-steps alone.
        os.environ[USER_CACHE] = tempfile.mkdtemp(prefix="gemm-steps-test-cache-")
    if getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        os.environ[PTX_GROUP_DIR] = tempfile.mkdtemp(prefix="gemm-steps-ptx-group-")
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU (skipped on the simulator)")
    config.addinivalue_line("markers", "slow: long simulator tests")
    config.addinivalue_line("markers", "ptx(*jobs): needs the PTX of these jobs (tests/ptx_jobs.py)")


def simulator_reason() -> str:
    """Why the kernels run on the simulator, true in every process of the run (see :data:`CUDASIM_AS_GIVEN`)."""
    given = os.environ.get(CUDASIM_AS_GIVEN, "")
    if given not in ("", "0"):
        return f"NUMBA_ENABLE_CUDASIM={given} was set: the simulator runs the kernels"
    return "no GPU: the simulator runs the kernels"


def pytest_report_header(config):
    return f"gemm-steps backend: {gemm_steps.backend()}"


def pytest_unconfigure(config):
    if "PYTEST_XDIST_WORKER" not in os.environ:
        for name in (PTX_GROUP_DIR, USER_CACHE):
            if name in os.environ:
                shutil.rmtree(os.environ.pop(name), ignore_errors=True)


#: ``-n auto``'s workers beyond one a core. A worker is often idle — waiting for its GPU-mode compile child, for a
#: lesson's Jupyter kernel, or for an exercise's deadlock limit to run out on purpose — so on the 2-core CI machine a
#: third worker filled those gaps: clean-clone runs of one tree took 454 s of tests with 3 workers against 545 s
#: with 2 (2026-11-28; later runs with 3 took 533–603 s: this machine varies that much between runs; README).
EXTRA_WORKERS = 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """How many workers ``-n auto`` starts: one a core (the cores this process may run on) and
    :data:`EXTRA_WORKERS` more. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` set: pytest-xdist's own answer (that number)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + EXTRA_WORKERS


#: Test modules whose tests share an expensive module-scoped fixture, each run as one unit of work so that one worker
#: makes it: test_wheel builds the wheel and installs it in a fresh venv (~9 s; spread over three workers, three times).
TOGETHER = ("tests/test_wheel.py",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler: each test is a unit of work of its own, given to whichever worker is free, except the
    PTX tests, which are one unit (they share one compile), and each module of :data:`TOGETHER`; the largest unit
    (the PTX tests) goes first."""
    from xdist.scheduler import LoadScopeScheduling

    folder = Path(os.environ[PTX_GROUP_DIR])

    class PTXTestsTogether(LoadScopeScheduling):
        ptx_tests: set[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.ptx_tests is None:  # every worker has collected by now: their lists are written
                self.ptx_tests = {line for path in folder.iterdir() for line in path.read_text().splitlines()}
            if nodeid in self.ptx_tests:
                return "ptx"
            return next((module for module in TOGETHER if nodeid.startswith(module + "::")), nodeid)

    return PTXTestsTogether(config, log)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_order)  # stable: order kept otherwise
    worker, folder = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(PTX_GROUP_DIR)
    if worker and folder:
        Path(folder, worker).write_text("\n".join(item.nodeid for item in items if _ptx_jobs(item)))
    if not gemm_steps.SIMULATOR:
        # On a GPU, a test of a step this GPU cannot run (steps 14–15 need wgmma: compute capability 9.0) is skipped,
        # with the step's own reason.
        for item in items:
            step = getattr(item, "callspec", None) and item.callspec.params.get("step")
            reason = step.unavailable() if hasattr(step, "unavailable") else None
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
        return
    skip = pytest.mark.skip(reason=f"needs a real CUDA GPU; {simulator_reason()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def ptx(request) -> ptx_jobs.PTXJobs:
    """The PTX compile of every selected test's jobs: ``ptx.stats(job, label)`` → that kernel's PTX stats (waits for
    it). Started by the first test that asks for it."""
    jobs = []
    for item in request.session.items:
        jobs += [job for job in _ptx_jobs(item) if job not in jobs]
    compile_ = ptx_jobs.PTXJobs(jobs)
    yield compile_
    compile_.close()


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A fresh generator for each test, seeded from the test's id (so a failure reproduces exactly)."""
    return helpers.rng_for(request.node.nodeid)


@pytest.fixture
def random_matrices(rng):
    """``random_matrices(m, n, k)`` → standard-normal float32 A (m×k), B (k×n), drawn from this test's ``rng``."""
    return lambda m, n, k: helpers.random_matrices(rng, m, n, k)


@pytest.fixture
def reference():
    """``reference(a, b)`` → ``a @ b`` in float64."""
    return helpers.reference


@pytest.fixture
def rel_error():
    """``rel_error(c, a, b)`` → relative error of ``c`` against float64 ``a @ b`` (see tests/helpers.py)."""
    return helpers.rel_error


@pytest.fixture
def tolerance():
    """``tolerance(k)`` → the largest relative error a correct float32 kernel may show (4·eps32·√k)."""
    return helpers.tolerance
