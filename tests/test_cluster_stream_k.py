"""Step 23 (``gemm_steps/steps/cluster_stream_k_tma_store.py``) and the experiment it grew from: step 21 on clusters
of two (experiments/kernels/cluster_stream_k.py) — step 21's stream-K schedule over pairs of tiles, each pair's A tile
loaded half by each block of a cluster and multicast to both (step 20's sharing) — and step 23, the same with C stored
through shared memory and the copy engine (cuBLAS's epilogue), for every shape.

On the simulator (the twins of the copy engine, the barriers, the flags and the cluster; step 21's simulator tiles,
32 × 64 with one consumer warpgroup), on grids of two clusters — each launch's (data-parallel, stream-K) split over
the pairs recorded and checked, not assumed:

* one pair of tiles whose 7 k-tiles are shared by both clusters (each block of the finishing cluster adds the partial
  sums of block r of the other), and five pairs (two data-parallel, three split by k-tiles, the ring running on from
  unit to unit): the experiment's and step 23's bits the same;
* whole waves of pairs: the persistent loop alone, the same bits as step 21's persistent loop (same tiles, same
  k-loop, no partial sums);
* the experiment's ragged product: the fast kernel takes the pairs of full tiles, the edge kernel the rest;
* step 23: the experiment's bits (only the way out changed), a ragged product split over both clusters on its partial
  build (the last pair half past C), whole tiles in an odd number of tile-columns on the partial build too, and a
  product whose C the copy engine cannot write (N not a multiple of 4) on step 21's build.

On a GPU of compute capability 9.0, at the GPU's tiles (256 × 128): one pair over every cluster, one wave
data-parallel and the rest split, whole waves, ragged products (an odd tile-column, K off a k-tile) — each right and
the same bits twice, and step 23's bits the experiment's.

Every product is checked against float64 with the TF32 tolerance and, sharper, against float64 on TF32 inputs (A
truncated, B rounded: what the kernel multiplies) with the float32 tolerance.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.steps import warp_specialized_stream_k as step_21
from gemm_steps.steps.stream_k import stream_k_split
from helpers import checked_tf32_product, random_matrices, record_schedule_launches, rng_for

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments.kernels import cluster_stream_k as variant  # noqa: E402

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR,
                                    reason="sizes chosen for the simulator's 32×64 tiles and a grid of 2 clusters")


def _product(built, m, n, k, name):
    """C = A·B by ``built``, checked (``helpers.checked_tf32_product``: nothing outside C, all of C, both tolerances)."""
    return checked_tf32_product(built, m, n, k, name, step_21)


def _recorded(built, blocks: int = 4) -> list:
    return record_schedule_launches(built, [], None, blocks)


def test_the_variant_is_step_21s_constants_and_step_20s_cluster():
    from gemm_steps.steps import cluster_multicast

    ours, step21, step20 = variant.CONFIG.constants(), step_21.SEARCH_SPACE[0].constants(), \
        cluster_multicast.SEARCH_SPACE[0].constants()
    assert {name: value for name, value in ours.items() if name in step21 and name != "TF32_COPIES"} == \
        {name: value for name, value in step21.items() if name != "TF32_COPIES"}
    assert not ours["TF32_COPIES"]  # float32 maps, as the experiment ran
    assert {name: ours[name] for name in ("CLUSTER", "A_HALF_ROWS", "A_BOX_ROWS", "CLUSTER_MASK")} == \
        {name: step20[name] for name in ("CLUSTER", "A_HALF_ROWS", "A_BOX_ROWS", "CLUSTER_MASK")}
    assert variant.build().cluster == (2, 1, 1)


@simulator_only
def test_whole_waves_run_the_persistent_loop_with_step_21s_bits():
    built = variant.build(variant.SIMULATOR_CONFIG)
    launches = _recorded(built)
    config = built.config
    m, n, k = 4 * config.BLOCK_M, 2 * config.BLOCK_N, 3 * config.BLOCK_K  # 4 pairs on 2 clusters: two each
    ours = _product(built, m, n, k, "four pairs, persistent")
    assert launches == [("fast", 4, 4, 0)]
    loop = step_21.build(replace(step_21.SIMULATOR_CONFIG, TF32_COPIES=False), split=step_21.no_stream_k,
                         fallback=False)  # float32 maps, as the variant's
    a, b = random_matrices(rng_for("four pairs, persistent"), m, n, k)
    c = cuda.to_device(np.full((m, n), np.nan, np.float32))
    loop.launch(cuda.to_device(a), cuda.to_device(b), c)
    assert np.array_equal(ours.view(np.uint32), c.copy_to_host().view(np.uint32)), "not step 21's bits"


@simulator_only
def test_a_ragged_product_runs_pairs_of_full_tiles_and_the_edge_kernel():
    built = variant.build(variant.SIMULATOR_CONFIG, split=step_21.all_stream_k, min_share=1)
    launches = _recorded(built)
    config = built.config
    # 2 × 3 full tiles and ragged edges: the fast kernel takes 2 pairs (tile-columns 0–1), the edge kernel the rest
    _product(built, 2 * config.BLOCK_M + 5, 3 * config.BLOCK_N + 4, 3 * config.BLOCK_K, "ragged pairs")
    # (the edge launch's last two arguments are the full tile-rows and tile-columns it leaves out: 2 and 2)
    assert launches == [("fast", 4, 0, 2), ("edge", (4, 3), 2, 2)], launches


#: On a GPU (132 SMs, 66 clusters of two, 256 × 128 tiles): one pair over every cluster; 256 pairs (one wave
#: data-parallel, the rest by k-tiles); 132 pairs (whole waves: the persistent loop); a ragged product with an odd
#: tile-column (the edge kernel beside it).
GPU_SHAPES = [(256, 256, 4096), (8192, 8192, 512), (4096, 8448, 1024), (1100, 2400, 2048)]


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in GPU_SHAPES])
def test_on_the_gpu_every_split_is_right_and_the_same_bits_twice(m, n, k):
    if tuple(cuda.get_current_device().compute_capability) != (9, 0):
        pytest.skip("wgmma, clusters and the copy engine's tensor copies need compute capability 9.0")
    built = variant.build(variant.CONFIG, min_share=1)
    first = _product(built, m, n, k, f"gpu {m}x{n}x{k}")
    again = _product(built, m, n, k, f"gpu {m}x{n}x{k}")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


# -- step 23: the same kernel with cuBLAS's epilogue (C through shared memory and the copy engine), every shape --------
from gemm_steps.steps import cluster_stream_k_tma_store as step_23  # noqa: E402
from helpers import record_stream_k_launches  # noqa: E402


def _same_bits_as_the_plain_variant(m, n, k, name, config, launches: list | None = None, **build):
    """Step 23's C (nothing written around it) has the plain variant's bits — built with the variant's float32 copies
    and B's rounding instructions (``TF32_COPIES=False``, ``ROUND_B=True``): the same k-loop and fixup, only the way out
    changed. ``launches``: record both builds' launches there (on a grid of two clusters)."""
    as_the_variant = replace(step_23.Config.of(config), TF32_COPIES=False, ROUND_B=True)
    plain_build = variant.build(config.tiles(), **build)
    ours_build = step_23.build(as_the_variant, fallback=False, **build)
    if launches is not None:
        record_schedule_launches(plain_build, launches, "plain", 4)
        record_schedule_launches(ours_build, launches, "step 23", 4)
    plain = _product(plain_build, m, n, k, name)
    ours = _product(ours_build, m, n, k, name)
    differ = ours.view(np.uint32) != plain.view(np.uint32)
    assert not differ.any(), f"{int(differ.sum())} elements differ, first at {tuple(np.argwhere(differ)[0])}"


def test_step_23_is_the_variants_constants_and_the_epilogues():
    ours, plain = step_23.SEARCH_SPACE[0].constants(), variant.CONFIG.constants()
    mine = ("SHARED_BYTES", "TF32_COPIES")  # step 23's holds the chunk buffers; the variant keeps float32 maps
    assert {name: value for name, value in ours.items() if name in plain and name not in mine} == \
        {name: value for name, value in plain.items() if name not in mine}
    config = step_23.SEARCH_SPACE[0].check()
    assert config.SHARED_BYTES == plain["SHARED_BYTES"] + config.CONSUMERS * config.C_BUFFERS * 4096 <= 232_448
    assert config.C_STAGING * 4 % 1024 == 0
    assert config.C_CHUNKS * config.C_CHUNK_FLOATS == config.BLOCK_M * 64 and config.C_BUFFERS >= 3
    assert step_23.build(step_23.SEARCH_SPACE[0]).cluster == (2, 1, 1)


@simulator_only
@pytest.mark.parametrize("pairs, k_tiles, split", [(1, 7, "all"), (5, 5, "default")],
                         ids=["one-pair-split", "waves-and-split"])
def test_step_23_has_the_plain_variants_bits(pairs, k_tiles, split):
    """One pair whose 7 k-tiles both clusters share (3 and 4: each block of the finishing cluster adds block r's
    partial sums of the other), and five pairs on two clusters: 2 data-parallel (one a cluster), then 3 × 5 k-tiles
    split [0, 7) and [7, 15) — cluster 1 finishes pair 1 with cluster 0's sums, four units and 12 k-tiles, three times
    round its ring of 4. Both builds' launches are recorded; the plain variant's and step 23's bits are the same."""
    config = step_23.SIMULATOR_CONFIG
    build = dict(split=step_21.all_stream_k, min_share=1) if split == "all" else dict(min_share=1)
    launches = []
    _same_bits_as_the_plain_variant(pairs * config.BLOCK_M, 2 * config.BLOCK_N, k_tiles * config.BLOCK_K,
                                    f"tma store {pairs} pairs", config, launches=launches, **build)
    expected = (0, 1) if split == "all" else (2, 3)
    assert stream_k_split(5, 2) == (2, 3)
    assert launches == [("plain", 4, *expected), ("step 23", 4, *expected)], launches


@simulator_only
def test_step_23_runs_a_ragged_product_on_its_partial_build_split_over_both_clusters():
    built = step_23.build(step_23.SIMULATOR_CONFIG, split=step_21.all_stream_k, min_share=1)
    launches = record_stream_k_launches(built, blocks=4)
    config = built.config
    # 2 tile-rows (the second of 5 rows), 3 tile-columns (the third of 4 columns: its pair's second tile lies past C),
    # 4 k-tiles (the last of 5 columns of A): 4 pairs, all split over 2 clusters
    first = _product(built, config.BLOCK_M + 5, 2 * config.BLOCK_N + 4, 3 * config.BLOCK_K + 5, "ragged partial")
    assert launches == [("partial", 4, 0, 4)], launches
    again = _product(built, config.BLOCK_M + 5, 2 * config.BLOCK_N + 4, 3 * config.BLOCK_K + 5, "ragged partial")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


@simulator_only
def test_step_23_runs_whole_tiles_in_an_odd_number_of_columns_on_its_partial_build():
    built = step_23.build(step_23.SIMULATOR_CONFIG, min_share=1)
    launches = record_stream_k_launches(built, blocks=4)
    config = built.config
    _product(built, 2 * config.BLOCK_M, 3 * config.BLOCK_N, 2 * config.BLOCK_K, "odd tile-columns")
    assert [launch[0] for launch in launches] == ["partial"], "the edge kernel ran beside the fast one"


@simulator_only
def test_step_23_leaves_a_c_the_copy_engine_cannot_write_to_step_21(monkeypatch):
    built = step_23.build(step_23.SIMULATOR_CONFIG)
    ours = record_stream_k_launches(built, blocks=4)
    ran = []
    monkeypatch.setattr(type(built.scalar_stores), "launch_through_numba",
                        lambda self, *arguments, **keywords: ran.append(self.name))
    m, n, k = step_23.SIMULATOR_CONFIG.BLOCK_M, 2 * step_23.SIMULATOR_CONFIG.BLOCK_N + 2, 32  # N = 130: 520-byte rows
    a, b = random_matrices(rng_for("unwritable"), m, n, k)
    built.launch(cuda.to_device(a), cuda.to_device(b), cuda.device_array((m, n), np.float32))
    assert ran == ["warp_specialized_stream_k"] and ours == []


@simulator_only
def test_step_23_reads_a_and_b_as_its_copies_round_them():
    """TF32_COPIES: the copy engine's twin rounds A and B to nearest, ties to even — C is float64's product of those
    inputs to the float32 tolerance, and not of A truncated; B's two rounding instructions then change no bit; and
    ROUND_B = False without TF32_COPIES (B truncated) is refused."""
    from helpers import rel_error, tf32_inputs, tolerance

    config = step_23.SIMULATOR_CONFIG
    assert config.TF32_COPIES and not config.ROUND_B
    m, n, k = config.BLOCK_M, 2 * config.BLOCK_N, 3 * config.BLOCK_K
    shipped = _product(step_23.build(config, fallback=False), m, n, k, "tf32 copies")
    a, b = random_matrices(rng_for("tf32 copies"), m, n, k)  # _product's inputs
    assert rel_error(shipped, *tf32_inputs(a, b, True)) <= tolerance(k)
    assert rel_error(shipped, *tf32_inputs(a, b, False)) > 100 * tolerance(k)
    rounded_b = _product(step_23.build(replace(config, ROUND_B=True), fallback=False), m, n, k, "tf32 copies")
    assert np.array_equal(shipped.view(np.uint32), rounded_b.view(np.uint32))
    with pytest.raises(ValueError, match="ROUND_B = False"):
        replace(config, TF32_COPIES=False).check()


#: Ragged products on a GPU: an odd number of tile-columns (the partial build's last pair half past C) and K off a
#: k-tile; N a multiple of 4 (the copy engine writes C).
GPU_RAGGED = [(500, 1300, 300), (1000, 4100, 4100)]


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES + GPU_RAGGED, ids=[f"{m}x{n}x{k}" for m, n, k in GPU_SHAPES + GPU_RAGGED])
def test_on_the_gpu_step_23_is_right_and_the_same_bits_twice(m, n, k):
    if tuple(cuda.get_current_device().compute_capability) != (9, 0):
        pytest.skip("wgmma, clusters and the copy engine's tensor copies need compute capability 9.0")
    built = step_23.build(step_23.SEARCH_SPACE[0], min_share=1)
    first = _product(built, m, n, k, f"gpu step 23 {m}x{n}x{k}")
    again = _product(built, m, n, k, f"gpu step 23 {m}x{n}x{k}")
    assert np.array_equal(first.view(np.uint32), again.view(np.uint32)), "not the same bits on a second launch"


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES[:3], ids=[f"{m}x{n}x{k}" for m, n, k in GPU_SHAPES[:3]])
def test_on_the_gpu_step_23_has_the_plain_variants_bits(m, n, k):
    if tuple(cuda.get_current_device().compute_capability) != (9, 0):
        pytest.skip("wgmma, clusters and the copy engine's tensor copies need compute capability 9.0")
    _same_bits_as_the_plain_variant(m, n, k, f"gpu tma store {m}x{n}x{k}", step_23.SEARCH_SPACE[0], min_share=1)
