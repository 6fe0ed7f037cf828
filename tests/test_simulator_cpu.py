"""On the simulator, a launch of a kernel whose threads meet in warp-wide operations (steps 12–19: mma, wgmma,
mbarriers) runs its threads on one CPU (gemm_steps.toolkit.kernel_tools.on_one_cpu); the FP32 steps' launches do
not; the caller gets its CPUs back afterwards."""

import os
import threading

import numpy as np
import pytest

import gemm_steps
from gemm_steps.toolkit.kernel_tools import on_one_cpu

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="needs Linux's CPU affinity and two CPUs")


def test_threads_started_inside_run_on_the_callers_cpu_and_the_cpus_come_back():
    before = os.sched_getaffinity(0)
    seen = []
    with on_one_cpu():
        inside = os.sched_getaffinity(0)
        thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        thread.start()
        thread.join()
    assert len(inside) == 1 and inside <= before and seen == [inside], "a thread started inside inherits the CPU"
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the pinning is the simulator's")
@pytest.mark.parametrize("name, pinned", [("tensor_cores", True), ("warp_specialized", True), ("warp_tiling", False)])
def test_a_tensor_core_steps_simulated_launch_is_pinned_and_an_fp32_steps_is_not(name, pinned, monkeypatch):
    step = gemm_steps.get_step(name)
    tiled = step.tiled.built if hasattr(step.tiled, "built") else step.tiled
    assert tiled.meets_in_warps == pinned
    seen = []
    original = tiled.launch_through_numba

    def launch(*args):
        seen.append(len(os.sched_getaffinity(0)))
        original(*args)

    monkeypatch.setattr(tiled, "launch_through_numba", launch)
    a, b = np.ones((5, 8), np.float32), np.ones((8, 6), np.float32)
    assert np.allclose(step(a, b), 8)
    assert seen == [1 if pinned else len(os.sched_getaffinity(0))]
