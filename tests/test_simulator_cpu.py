"""The simulator's threads: a launch of a kernel whose threads meet in warp-wide operations (steps 12–19: mma, wgmma,
mbarriers) runs them on one CPU (gemm_steps.toolkit.kernel_tools.on_one_cpu), the FP32 steps' launches do not, and the
caller gets its CPUs back afterwards; ``syncthreads`` is a counting barrier (gemm_steps.toolkit.simulator_patches)
that keeps the simulator's semantics, and a block runs with a longer thread switch interval."""

import os
import sys
import threading

import numpy as np
import pytest

import gemm_steps
from gemm_steps.toolkit.kernel_tools import on_one_cpu
from numba import cuda, float32  # after gemm_steps: it chooses the backend (kernels read `cuda` as a global)

needs_two_cpus = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                    reason="needs Linux's CPU affinity and two CPUs")


@needs_two_cpus
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


@needs_two_cpus
@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the pinning is the simulator's")
@pytest.mark.parametrize("name, pinned", [("tensor_cores", True), ("warp_specialized", True), ("warp_tiling", False)])
def test_a_tensor_core_steps_simulated_launch_is_pinned_and_an_fp32_steps_is_not(name, pinned, monkeypatch):
    step = gemm_steps.get_step(name)
    tiled = step.tiled
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


# -- syncthreads as a counting barrier (gemm_steps.toolkit.simulator_patches) ----------------------------------------
@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="a fix of Numba's simulator")
def test_syncthreads_waits_for_the_threads_still_running_and_counts():
    from gemm_steps.toolkit import simulator_patches
    from gemm_steps.toolkit.kernel_tools import kernel

    assert simulator_patches._APPLIED

    @kernel
    def staged(out, counts):
        tile = cuda.shared.array(64, dtype=np.float32)
        t = cuda.threadIdx.x
        if t >= 48:  # these threads finish before the barrier: the other 48 must still get through it
            return
        tile[t] = t
        cuda.syncthreads()
        out[t] = tile[47 - t]  # another thread's value: right only if every write came before the barrier
        counts[t] = cuda.syncthreads_count(t % 2)

    out, counts = np.zeros(48, np.float32), np.zeros(48, np.int32)
    staged[2, 64](out, counts)
    assert np.array_equal(out, np.arange(47, -1, -1, dtype=np.float32)) and set(counts) == {24}


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="a fix of Numba's simulator")
def test_a_thread_that_raises_stops_the_block_and_the_launch_raises_it():
    from gemm_steps.toolkit.kernel_tools import kernel

    @kernel
    def failing(out):
        t = cuda.threadIdx.x
        cuda.syncthreads()
        if t == 5:
            out[100] = 1.0  # out of bounds: IndexError on the simulator
        cuda.syncthreads()  # the others wait here until the block is aborted
        out[t] = 1.0

    with pytest.raises(IndexError, match="tid=\\[5, 0, 0\\]"):
        failing[1, 32](np.zeros(32, np.float32))


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="a fix of Numba's simulator")
def test_a_blocks_static_shared_arrays_are_one_per_line_shared_by_its_threads():
    """Static shared arrays are told apart by the line that declares them (simulator_patches: the calling frame, not
    the whole stack): two declarations are two arrays, every thread of a block sees the same two, and a dynamic
    array still aliases the launch's dynamic buffer."""
    from gemm_steps.toolkit.kernel_tools import kernel

    @kernel
    def two_tiles(out):
        first = cuda.shared.array(32, dtype=np.float32)
        second = cuda.shared.array(32, dtype=np.float32)
        dynamic = cuda.shared.array(0, dtype=float32)
        t = cuda.threadIdx.x
        first[t], second[t], dynamic[t] = t, 100 + t, 200 + t
        cuda.syncthreads()
        # another thread's values: right only if the block's threads share the arrays and the two lines differ
        out[cuda.blockIdx.x, t, 0] = first[31 - t]
        out[cuda.blockIdx.x, t, 1] = second[31 - t]
        out[cuda.blockIdx.x, t, 2] = dynamic[31 - t]

    out = np.zeros((2, 32, 3), np.float32)
    two_tiles[2, 32, 0, 32 * 4](out)
    expected = np.arange(31, -1, -1, dtype=np.float32)
    for block in range(2):
        assert np.array_equal(out[block, :, 0], expected) and np.array_equal(out[block, :, 1], 100 + expected)
        assert np.array_equal(out[block, :, 2], 200 + expected)


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="a fix of Numba's simulator")
def test_a_block_runs_with_the_longer_switch_interval_and_the_callers_comes_back():
    from gemm_steps.toolkit.kernel_tools import kernel
    from gemm_steps.toolkit.simulator_patches import LAUNCH_SWITCH_INTERVAL_S

    seen = []

    @kernel
    def probe(out):
        seen.append(sys.getswitchinterval())  # plain Python on the simulator
        if cuda.threadIdx.x == 3 and out[0] == 1.0:
            out[100] = 1.0  # out of bounds: the block raises

    before = sys.getswitchinterval()
    probe[2, 4](np.zeros(1, np.float32))
    assert seen == pytest.approx([LAUNCH_SWITCH_INTERVAL_S] * 8) and sys.getswitchinterval() == before
    with pytest.raises(IndexError):
        probe[1, 4](np.ones(1, np.float32))
    assert sys.getswitchinterval() == before, "a block that raised left the interval changed"
