"""experiments/cluster_arrivals.py and its kernel (experiments/kernels/cluster_every_warp_arrives.py: step 20 as it
was, every consumer warp arriving on every block's empty barrier). On the simulator (one cluster of two blocks, run at
the same time with their own shared memory; 6 k-tiles, so the 4-stage ring's empty barriers complete twice): step 20
as shipped, one arrival a warpgroup and block, computes the old way's product bit for bit — with the arrivals counted
wrong a producer would wait forever, and the mbarrier's time limit would end the launch with a message instead."""

import numpy as np
import pytest

import gemm_steps
from gemm_steps.steps import cluster_multicast

from helpers import run_in_nan_margin

from experiments import cluster_arrivals
from experiments.kernels import cluster_every_warp_arrives

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the GPU's run is experiments/cluster_arrivals.py")


@simulator_only
def test_one_arrival_a_warpgroup_gives_the_old_product():
    config = cluster_multicast.SIMULATOR_CONFIG
    m, n, k = config.BLOCK_M, 2 * config.BLOCK_N, 6 * config.BLOCK_K
    rng = np.random.default_rng(36)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    got = run_in_nan_margin(cluster_multicast.build(config), a, b)
    want = run_in_nan_margin(cluster_every_warp_arrives.build(config), a, b)
    assert np.isfinite(got).all() and (got.view(np.uint32) == want.view(np.uint32)).all()


@pytest.mark.parametrize("names", cluster_arrivals.PAIRS, ids=["now", "first_runs"])
def test_the_summary_divides_one_arrival_by_every_warp_and_step_17(names):
    """On made-up records named as a run now names them, and as the first two runs did (before step 20 took it)."""
    one, every = names
    records = [{"step": name, "M": 4096, "N": 4096, "K": 4096, "tflops": value}
               for name, value in [("warp_specialized", 370.0), (every, 360.0), (one, 378.0),
                                   ("cublas_tf32", 400.0), ("cublas", 50.0)]]
    row = cluster_arrivals.summary({"records": records})["4096x4096x4096"]
    assert row["one_over_every"] == pytest.approx(1.05) and row["one_over_step17"] == pytest.approx(378 / 370)
    assert row["over_tf32"][every] == 0.9 and row["tflops"]["cublas"] == 50.0
