"""Shared test setup: the ``gpu`` marker, reproducible per-test random inputs, the reference and the tolerance.

* ``@pytest.mark.gpu`` tests need a real CUDA GPU. On Numba's CUDA simulator (no GPU: chosen automatically by
  :mod:`gemm_steps.toolkit.backend`) they are *skipped, with the reason shown* — never silently passed. Run them on
  a GPU with ``python -m pytest -m gpu``.
* Everything else runs anywhere; on the simulator it is what CI runs (see ``.ci/run``).
* ``@pytest.mark.ptx(job, …)`` tests read compiled PTX through the ``ptx`` fixture. The jobs of all selected tests
  are compiled in one background process, started when collection ends, while the other tests run
  (``tests/ptx_jobs.py``).
* The lessons are executed by a second background process, once the PTX compile is done (``tests/lesson_runs.py``);
  the tests that wait for them run last, so the pytest process is busy with the simulator tests meanwhile. When
  those tests begin, a second lesson runner starts on this process's core, sharing the list with the first.

The helpers themselves live in ``tests/helpers.py`` (importable by test modules and by Hypothesis tests, which
cannot use function-scoped fixtures); the fixtures below hand them to ordinary tests.
"""

from __future__ import annotations

import json
import time

import gemm_steps  # first: chooses GPU or simulator before anything imports Numba
import numpy as np
import pytest

import helpers
import lesson_runs as lesson_runner  # (the fixture below is called lesson_runs)
import ptx_jobs

PTX_JOBS = pytest.StashKey[ptx_jobs.PTXJobs]()
LESSON_RUNS = pytest.StashKey[lesson_runner.LessonRuns]()
#: The test that waits for a lesson executed in the background (tests/test_notebooks.py).
LESSON_TEST = "test_lesson_runs_on_the_simulator"
#: When the session started, and when the first test that waits for late background work started (monotonic).
STARTED = pytest.StashKey[float]()
LATE_TESTS_FROM = pytest.StashKey[float]()


def _waits_for(item) -> int:
    """2: waits for a lesson; 1: for a compile-time patch comparison (both late background work); 0: neither."""
    if getattr(item, "originalname", None) == LESSON_TEST:
        return 2
    return int(any(job.startswith("patches:") for mark in item.iter_markers("ptx") for job in mark.args))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU (skipped on the simulator)")
    config.addinivalue_line("markers", "slow: long simulator tests")
    config.addinivalue_line("markers", "ptx(*jobs): needs the PTX of these jobs (tests/ptx_jobs.py)")


def pytest_sessionstart(session):
    session.config.stash[STARTED] = time.monotonic()


def pytest_runtest_setup(item):
    """At the first test that waits for late background work, this process has nothing else to run: a second lesson
    runner takes its core (tests/lesson_runs.py)."""
    if _waits_for(item) and LATE_TESTS_FROM not in item.config.stash:
        item.config.stash[LATE_TESTS_FROM] = time.monotonic()
        runs = item.config.stash.get(LESSON_RUNS, None)
        if runs is not None:
            runs.help()


def pytest_terminal_summary(terminalreporter, config):
    """Where the time went: when the tests that wait for background work began (the other tests were done), and
    when each background child started and ended (docs/hardening.md, section 7, reads these lines)."""
    started = config.stash.get(STARTED, None)
    children = [config.stash.get(key, None) for key in (PTX_JOBS, LESSON_RUNS)]
    if started is None or not any(children):
        return
    terminalreporter.section("background work")
    late = config.stash.get(LATE_TESTS_FROM, None)
    if late is not None:
        terminalreporter.write_line(f"tests not waiting for background work done at {late - started:.0f} s")
    for child in children:
        if child is not None:
            terminalreporter.write_line(child.timing(started))


def pytest_report_header(config):
    return f"gemm-steps backend: {gemm_steps.backend()}"


def pytest_collection_modifyitems(config, items):
    # Tests that wait for late background work go last, so the simulator tests keep this process busy first: the
    # compile-time patch comparisons (the background PTX process does them after the PTX), then the lessons.
    items.sort(key=_waits_for)  # stable: order kept otherwise
    if not gemm_steps.SIMULATOR:
        # On a GPU, a test of a step this GPU cannot run (steps 14–15 need wgmma: compute capability 9.0) is skipped,
        # with the step's own reason.
        for item in items:
            step = getattr(item, "callspec", None) and item.callspec.params.get("step")
            reason = step.unavailable() if hasattr(step, "unavailable") else None
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
        return
    skip = pytest.mark.skip(reason=f"needs a real CUDA GPU; kernels run on {gemm_steps.backend()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_collection_finish(session):
    """Start the background work the selected tests need: the PTX compile, then the lessons (tests/background.py)."""
    if session.config.option.collectonly:
        return
    say = _terminal_writer(session.config)
    jobs, stems = [], []
    for item in session.items:
        for mark in item.iter_markers("ptx"):
            jobs += [job for job in mark.args if job not in jobs]
        if getattr(item, "originalname", None) == LESSON_TEST and "skip" not in item.keywords:
            stems.append(item.callspec.params["path"].relative_to(helpers.REPO / "lessons").with_suffix("").as_posix())
    ptx = None
    if jobs:
        ptx = session.config.stash[PTX_JOBS] = ptx_jobs.PTXJobs(jobs, say=say)
    if stems:
        from gemm_steps.course import lesson

        synthetic = "" if lesson.load_results(steps=()) is not None else json.dumps(helpers.synthetic_results())
        session.config.stash[LESSON_RUNS] = lesson_runner.LessonRuns(stems, helpers.REPO, synthetic, say=say, after=ptx)


def pytest_unconfigure(config):
    for key in (LESSON_RUNS, PTX_JOBS):
        child = config.stash.get(key, None)
        if child is not None:
            child.close()


def _terminal_writer(config):
    """A function that writes a line on the terminal, also while a test runs with its output captured."""
    def say(message: str) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if reporter is None:
            return
        if capture is None:
            reporter.write_line(message)
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line(message)

    return say


@pytest.fixture(scope="session")
def say(request):
    """``say(line)``: a line on the terminal now, even while the test's output is captured (for long tests)."""
    return _terminal_writer(request.config)


@pytest.fixture(scope="session")
def ptx(request) -> ptx_jobs.PTXJobs:
    """The background PTX compile: ``ptx.stats(job, label)`` → that kernel's PTX stats (waits for it)."""
    jobs = request.config.stash.get(PTX_JOBS, None)
    if jobs is None:
        pytest.fail("no PTX jobs were started: mark the test with @pytest.mark.ptx(job)")
    return jobs


@pytest.fixture(scope="session")
def lesson_runs(request) -> lesson_runner.LessonRuns:
    """The lessons executing in the background: ``lesson_runs.result(stem)`` waits for one."""
    runs = request.config.stash.get(LESSON_RUNS, None)
    if runs is None:
        pytest.fail("the background lesson runner was not started (see tests/lesson_runs.py)")
    return runs


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
