"""Shared test setup: the ``gpu`` marker, reproducible per-test random inputs, the reference and the tolerance.

* ``@pytest.mark.gpu`` tests need a real CUDA GPU. On Numba's CUDA simulator (no GPU: chosen automatically by
  :mod:`gemm_steps._backend`) they are *skipped, with the reason shown* — never silently passed. Run them on a GPU
  with ``python -m pytest -m gpu``.
* Everything else runs anywhere; on the simulator it is what CI runs (see ``.ci/run``).

The helpers themselves live in ``tests/helpers.py`` (importable by test modules and by Hypothesis tests, which
cannot use function-scoped fixtures); the fixtures below hand them to ordinary tests.
"""

from __future__ import annotations

import gemm_steps  # first: chooses GPU or simulator before anything imports Numba
import numpy as np
import pytest

import helpers


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU (skipped on the simulator)")
    config.addinivalue_line("markers", "slow: long simulator tests")


def pytest_report_header(config):
    return f"gemm-steps backend: {gemm_steps.backend()}"


def pytest_collection_modifyitems(config, items):
    if not gemm_steps.SIMULATOR:
        return
    skip = pytest.mark.skip(reason=f"needs a real CUDA GPU; kernels run on {gemm_steps.backend()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


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
