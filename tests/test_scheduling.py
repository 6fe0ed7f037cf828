"""Persistent and stream-K scheduling: every output tile is written exactly once (a skipped or doubled tile fails).

NaN-poisoned outputs catch a skipped tile but not a doubled one: writing a tile twice leaves the same numbers.
So these tests build the real generated kernels with a counting ``store_float4`` (the only way the fast kernels
write C) and check that each element of C was stored once — on the simulator, where the kernels are Python.
"""

from __future__ import annotations

import numpy as np
import pytest

import gemm_steps
from gemm_steps import tiling
from gemm_steps.intrinsics import store_float4

pytestmark = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="counts stores through the simulator's Python kernels")


def _counting_store(c_size: int, counts: np.ndarray):
    """A store_float4 that also counts, per element, the 128-bit stores into the C array (of size c_size)."""

    def store(array, index, x0, x1, x2, x3):
        if array.size == c_size:
            counts[int(index): int(index) + 4] += 1
        store_float4(array, index, x0, x1, x2, x3)

    return store


def _build(step_name, overrides):
    from gemm_steps.steps import persistent, stream_k

    config = gemm_steps.get_step(step_name).tiled.config
    if step_name == "persistent":
        return persistent.build(config, overrides=overrides)
    return stream_k.build(config, overrides=overrides)


@pytest.mark.parametrize("step_name", ["persistent", "stream_k"])
@pytest.mark.parametrize("tiles", [(2, 2), (3, 2), (4, 2), (7, 1)], ids=lambda t: f"{t[0]}x{t[1]}tiles")
def test_every_tile_stored_exactly_once(step_name, tiles, rng):
    config = gemm_steps.get_step(step_name).tiled.config
    m, n = tiles[0] * config.BLOCK_M, tiles[1] * config.BLOCK_N
    k = 3 * config.BLOCK_K  # several k-tiles: stream-K splits them between blocks
    counts = np.zeros(m * n, dtype=np.int64)
    kernels = _build(step_name, {"store_float4": _counting_store(m * n, counts)})
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = gemm_steps.api.run(kernels.launch, a, b, np.full((m, n), np.nan, dtype=np.float32))
    tiles_total = tiles[0] * tiles[1]
    assert tiles_total > tiling.SIMULATED_RESIDENT_BLOCKS or step_name == "stream_k", "the loop must run"
    never, twice = int((counts == 0).sum()), int((counts > 1).sum())
    assert never == 0 and twice == 0, f"{step_name}: {never} elements never stored, {twice} stored more than once"
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - reference) / np.linalg.norm(reference) < 1e-5


def test_counting_store_catches_a_doubled_tile(rng):
    """The check above can fail: a kernel whose grid-stride visits a tile twice is caught."""
    from gemm_steps.steps import persistent

    config = gemm_steps.get_step("persistent").tiled.config
    m, n, k = 2 * config.BLOCK_M, 2 * config.BLOCK_N, config.BLOCK_K
    counts = np.zeros(m * n, dtype=np.int64)
    kernels = persistent.build(config, overrides={"store_float4": _counting_store(m * n, counts)})
    kernels._resident_blocks = 1  # grid = 1 block: it must loop over all 4 tiles
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    gemm_steps.api.run(kernels.launch, a, b)
    assert (counts == 1).all()
    counts[:] = 0
    gemm_steps.api.run(kernels.launch, a, b)
    gemm_steps.api.run(kernels.launch, a, b)  # two launches = every tile written twice: the count shows it
    assert (counts == 2).all()


@pytest.mark.parametrize("tiles,blocks,expected", [
    (132, 132, (132, 0)),  # whole wave: data-parallel
    (128, 132, (128, 0)),  # 97 % of a wave busy: data-parallel
    (144, 132, (0, 144)),  # 1.09 waves: all stream-K
    (66, 132, (0, 66)),  # half a wave: all stream-K
    (300, 132, (132, 168)),  # 2.27 waves: one wave data-parallel, the rest stream-K
    (2048, 132, (2048, 0)),  # 8192² with 128×256 tiles: 15.5 waves, 97 % busy
])
def test_stream_k_split_rule(tiles, blocks, expected):
    data_parallel, stream_k = tiling.stream_k_split(tiles, blocks)
    assert (data_parallel, stream_k) == expected
    assert data_parallel + stream_k == tiles
    assert stream_k == 0 or data_parallel % blocks == 0, "mixed splits keep whole data-parallel waves"


def test_serpentine_fma_order_is_the_same_products():
    """The SERPENTINE experiment (odd rows of FMAs backwards) must compute exactly the same products."""
    import re

    from gemm_steps.steps import warp_tiling
    from gemm_steps.steps.double_buffered import TEMPLATE

    config = warp_tiling.TILED.config
    row_order, backwards = (
        tiling.TiledKernels(f"order_check_{flag}", TEMPLATE, config, {**warp_tiling.layout(config), "SERPENTINE": flag})
        for flag in (False, True))
    fma = re.compile(r"(acc_\d+_\d+) \+= (a_\d+) \* (b_\d+)")
    row_order, backwards = fma.findall(row_order.sources["fast"]), fma.findall(backwards.sources["fast"])
    assert backwards == fma.findall(warp_tiling.TILED.sources["fast"])  # step 9 ships the serpentine order
    assert row_order != backwards  # the order differs…
    assert sorted(row_order) == sorted(backwards)  # …the products do not
    assert all(acc.split("_")[1:] == [a[2:], b[2:]] for acc, a, b in backwards)  # acc_i_j += a_i * b_j
