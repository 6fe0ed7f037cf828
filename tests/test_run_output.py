"""What a test run itself says: a skip reason that is true in every pytest-xdist worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from gemm_steps.toolkit.backend import _driver_device_count

REPO = Path(__file__).resolve().parent.parent


def test_a_gpu_tests_skip_reason_is_true_in_the_workers():
    """With NUMBA_ENABLE_CUDASIM unset on a machine without a GPU, a worker's skip reason says there is no GPU — not
    "NUMBA_ENABLE_CUDASIM=1 was set" (the variable the first process's gemm_steps set, inherited by the workers)."""
    if _driver_device_count() > 0:
        pytest.skip("this machine has a GPU: the gpu tests run")
    pytest.importorskip("xdist", reason="pytest-xdist is in the dev extras")
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_ENABLE_CUDASIM", conftest.CUDASIM_AS_GIVEN, "PYTEST_XDIST_WORKER",
                        conftest.PTX_GROUP_DIR, "PYTEST_CURRENT_TEST")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "1", "-rs", "-p", "no:cacheprovider",
                           "tests/test_gpu.py::test_cublas_is_strict_fp32"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert done.returncode == 0 and skipped, done.stdout + done.stderr
    for line in skipped:
        assert "no GPU: the simulator runs the kernels" in line and "was set" not in line, line
