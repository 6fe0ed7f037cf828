"""Step 20's timeline build (experiments/kernels/cluster_multicast_timeline.py: step 20 with ``%clock64`` writes) on
the simulator: one cluster of two blocks on the simulator's 32 × 64 tile, 6 k-tiles (the 4-stage ring wraps). The
product is step 20's bit for bit, and every event of both blocks is written in order within each role. The clocks of
a simulator run mean nothing: on a GPU, ``python -m experiments.timeline --only cluster_multicast`` records one."""

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.steps import cluster_multicast

from experiments.kernels import cluster_multicast_timeline as debug

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the GPU's run is experiments/timeline.py's")


@simulator_only
@pytest.mark.parametrize("one_arrival", [True, False], ids=["one_arrival_a_warpgroup", "every_warp_as_first_recorded"])
def test_the_step_20_timeline_records_both_blocks_and_keeps_the_product(one_arrival):
    config = cluster_multicast.SIMULATOR_CONFIG
    m, n, k, k_tiles = config.BLOCK_M, 2 * config.BLOCK_N, 6 * config.BLOCK_K, 6
    rng = np.random.default_rng(20)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    kernels = debug.build(config, 2, k_tiles, one_arrival)
    timeline = cuda.to_device(np.zeros(2 * debug.ROLES * k_tiles * debug.EVENTS, np.uint64))
    c = cuda.device_array((m, n), np.float32)
    debug.launch(kernels, cuda.to_device(a), cuda.to_device(b), c, timeline)
    step = cuda.device_array((m, n), np.float32)
    cluster_multicast.build(config).launch(cuda.to_device(a), cuda.to_device(b), step)
    assert (c.copy_to_host().view(np.uint32) == step.copy_to_host().view(np.uint32)).all()
    cycles = timeline.copy_to_host().reshape(2, debug.ROLES, k_tiles, debug.EVENTS).astype(np.int64)
    assert (cycles[:, 0, :, :3] > 0).all(), "a producer event was not written"
    roles = 1 + config.THREADS // 128  # the simulator's tile has one consumer warpgroup
    assert (cycles[:, 1:roles, :, :] > 0).all(), "a consumer event was not written"
    assert (np.diff(cycles[:, 0, :, :3], axis=-1) >= 0).all() and (np.diff(cycles[:, 1:roles], axis=-1) >= 0).all()
