"""experiments/cluster_arrivals.py and its kernel (experiments/kernels/cluster_one_arrival.py): step 20 with one cluster
arrival a warpgroup and block. On the simulator (one cluster of two blocks, its two blocks at the same time with their
own shared memory; 6 k-tiles, so the 4-stage ring's empty barriers complete twice): the product is step 20's bit for
bit — with the arrivals counted wrong the producer would wait forever, and the mbarrier's time limit would end the
launch with a message instead."""

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.steps import cluster_multicast

from experiments import cluster_arrivals
from experiments.kernels import cluster_one_arrival

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the GPU's run is experiments/cluster_arrivals.py")


def _product(built, a, b) -> np.ndarray:
    c = cuda.device_array((a.shape[0], b.shape[1]), np.float32)
    built.launch(cuda.to_device(a), cuda.to_device(b), c)
    return c.copy_to_host()


@simulator_only
def test_one_arrival_a_warpgroup_gives_step_20s_product():
    config = cluster_multicast.SIMULATOR_CONFIG
    m, n, k = config.BLOCK_M, 2 * config.BLOCK_N, 6 * config.BLOCK_K
    rng = np.random.default_rng(36)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    got = _product(cluster_one_arrival.build(config), a, b)
    want = _product(cluster_multicast.build(config), a, b)
    assert np.isfinite(got).all() and (got.view(np.uint32) == want.view(np.uint32)).all()


def test_the_summary_divides_the_variant_by_step_20_and_step_17():
    records = [{"step": name, "M": 4096, "N": 4096, "K": 4096, "tflops": value}
               for name, value in [("warp_specialized", 370.0), ("cluster_multicast", 360.0),
                                   ("cluster_one_arrival", 378.0), ("cublas_tf32", 400.0), ("cublas", 50.0)]]
    row = cluster_arrivals.summary({"records": records})["4096x4096x4096"]
    assert row["variant_over_step20"] == pytest.approx(1.05) and row["variant_over_step17"] == pytest.approx(378 / 370)
    assert row["over_tf32"]["cluster_multicast"] == 0.9 and row["tflops"]["cublas"] == 50.0
