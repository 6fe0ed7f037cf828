"""Step 22 on clusters of two (experiments/kernels/cluster_3xtf32_stream_k.py): step 22's 3xTF32 stream-K kernel with
its schedule over pairs of tiles, each pair's A tile loaded half by each block of a cluster and multicast to both, each
block's producer splitting all of it.

On the simulator (step 22's simulator tiles, 32 × 64, a grid of two clusters): one pair whose 7 k-tiles both clusters
share (the fixup from block r to block r) and the persistent loop — each
within float32's tolerance against float64, and the persistent loop bit for bit step 22's own kernel (same tiles,
same k-loop, no partial sums). On a GPU of compute capability 9.0, at the GPU's tiles: the same three kinds of
launch, right and the same bits twice (``python -m pytest tests/test_cluster_3xtf32.py`` there checks the variant
before experiments/cluster_3xtf32.py times it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.steps import warp_specialized_3xtf32_stream_k as step_22
from gemm_steps.steps import warp_specialized_stream_k as step_21
from helpers import (nan_c_with_margin, only_c_written, random_matrices, record_schedule_launches, rel_error, rng_for,
                     tolerance)

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments.kernels import cluster_3xtf32_stream_k as variant  # noqa: E402

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR,
                                    reason="sizes chosen for the simulator's 32×64 tiles and a grid of 2 clusters")


def _product(built, m, n, k, name) -> np.ndarray:
    """C = A·B by ``built`` into NaN inside a NaN margin: nothing written outside C, all of C, within float32's
    tolerance against float64 (3xTF32's promise)."""
    a, b = random_matrices(rng_for(name), m, n, k)
    buffer, c = nan_c_with_margin(m, n)
    built.launch(cuda.to_device(a), cuda.to_device(b), c)
    result = only_c_written(buffer, m, n)
    assert not np.isnan(result).any(), f"{int(np.isnan(result).sum())} elements unwritten"
    error = rel_error(result, a, b)
    assert error <= tolerance(k), f"error {error:.2e} > float32 tolerance {tolerance(k):.2e}"
    return result


def test_the_variant_is_step_22s_constants_and_step_20s_cluster():
    ours, step22 = variant.CONFIG.constants(), step_22.SEARCH_SPACE[0].constants()
    assert {name: value for name, value in ours.items() if name in step22} == step22
    assert ours["CLUSTER"] == 2 and ours["A_HALF_ROWS"] * 2 == ours["BLOCK_M"]
    assert variant.build().cluster == (2, 1, 1)


@simulator_only
@pytest.mark.parametrize("pairs, k_tiles, split, expected", [(1, 7, "all", (0, 1))], ids=["one-pair-split"])
def test_a_split_is_fixed_up_from_block_r_to_block_r(pairs, k_tiles, split, expected):
    built = variant.build(variant.SIMULATOR_CONFIG, min_share=1,
                          **({"split": step_21.all_stream_k} if split == "all" else {}))
    launches = record_schedule_launches(built, [], None, 4)
    config = built.config
    m, n, k = pairs * config.BLOCK_M, 2 * config.BLOCK_N, k_tiles * config.BLOCK_K
    first = _product(built, m, n, k, f"3xtf32 cluster {pairs}")
    assert launches == [("fast", 4, *expected)]
    if pairs == 1:  # (the simulator is slow: one repeat)
        again = _product(built, m, n, k, f"3xtf32 cluster {pairs}")
        assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


@simulator_only
def test_whole_waves_run_the_persistent_loop_with_step_22s_bits():
    config = variant.SIMULATOR_CONFIG
    m, n, k = 2 * config.BLOCK_M, 2 * config.BLOCK_N, 2 * config.BLOCK_K  # 2 pairs on 2 clusters: one each
    ours = _product(variant.build(config), m, n, k, "3xtf32 persistent")
    theirs = _product(step_22.build(step_22.SIMULATOR_CONFIG, split=step_21.no_stream_k, fallback=False), m, n, k,
                      "3xtf32 persistent")
    assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), "not step 22's bits"


#: On a GPU (132 SMs, 66 clusters of two, 256 × 128 tiles): one pair over every cluster; 256 pairs (one wave
#: data-parallel, the rest by k-tiles); 132 pairs (whole waves: the persistent loop).
GPU_SHAPES = [(256, 256, 4096), (8192, 8192, 512), (4096, 8448, 1024)]


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in GPU_SHAPES])
def test_on_the_gpu_every_split_is_right_and_the_same_bits_twice(m, n, k):
    if tuple(cuda.get_current_device().compute_capability) != (9, 0):
        pytest.skip("wgmma, clusters and the copy engine's tensor copies need compute capability 9.0")
    built = variant.build(variant.CONFIG, min_share=1)
    first = _product(built, m, n, k, f"gpu 3xtf32 cluster {m}x{n}x{k}")
    again = _product(built, m, n, k, f"gpu 3xtf32 cluster {m}x{n}x{k}")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"
