"""Persistent and stream-K scheduling: every output tile is written exactly once (a skipped or doubled tile fails).

NaN-poisoned outputs catch a skipped tile but not a doubled one: writing a tile twice leaves the same numbers.
So these tests build the real generated kernels with a counting ``store_float4`` (the only way the fast kernels
write C) and check that each element of C was stored once — on the simulator, where the kernels are Python. They
build them for a small tile configuration (``SMALL``, one warp per block): which block takes which tile, the
grouped tile order and stream-K's split and fixups depend on the numbers of tiles, k-tiles and blocks, not on the
tile size, and a shipped 128×256 tile costs the simulator ~16 times as much. The shipped configuration's schedule
is run by tests/test_steps.py (2×2 tiles and 2×2 tiles plus an edge, NaN-poisoned, twice bit for bit).
Also here: step 11's rule for splitting tiles between data-parallel and stream-K, and the order in which the
generated kernels of steps 7–11 issue their FMAs (step 9's serpentine order).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gemm_steps
from gemm_steps.harness import api
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.toolkit.tiles import SIMULATED_RESIDENT_BLOCKS
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.intrinsics import store_float4

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="counts stores through the simulator's Python kernels")


def _counting_store(c_size: int, counts: np.ndarray):
    """A store_float4 that also counts, per element, the 128-bit stores into the C array (of size c_size)."""

    def store(array, index, x0, x1, x2, x3):
        if array.size == c_size:
            counts[int(index): int(index) + 4] += 1
        store_float4(array, index, x0, x1, x2, x3)

    return store


#: One warp per block (warp tiling's 8×4 lanes), the shipped THREAD_M and BLOCK_K: see the module docstring.
SMALL = TileConfig(BLOCK_M=64, BLOCK_N=32, BLOCK_K=8, THREAD_M=8, THREAD_N=8)


def _build(step_name, overrides, config=SMALL):
    from gemm_steps.steps import persistent, stream_k

    if step_name == "persistent":
        return persistent.build(config, overrides=overrides)
    return stream_k.build(config, overrides=overrides)


@simulator_only
@pytest.mark.parametrize("step_name", ["persistent", "stream_k"])
@pytest.mark.parametrize("tiles", [(2, 2), (3, 2), (4, 2), (7, 1)], ids=lambda t: f"{t[0]}x{t[1]}tiles")
def test_every_tile_stored_exactly_once(step_name, tiles, rng):
    config = SMALL
    m, n = tiles[0] * config.BLOCK_M, tiles[1] * config.BLOCK_N
    k = 3 * config.BLOCK_K  # several k-tiles: stream-K splits them between blocks
    counts = np.zeros(m * n, dtype=np.int64)
    kernels = _build(step_name, {"store_float4": _counting_store(m * n, counts)})
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = api.run(kernels.launch, a, b, np.full((m, n), np.nan, dtype=np.float32))
    tiles_total = tiles[0] * tiles[1]
    assert tiles_total > SIMULATED_RESIDENT_BLOCKS or step_name == "stream_k", "the loop must run"
    never, twice = int((counts == 0).sum()), int((counts > 1).sum())
    assert never == 0 and twice == 0, f"{step_name}: {never} elements never stored, {twice} stored more than once"
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - reference) / np.linalg.norm(reference) < 1e-5


@simulator_only
def test_counting_store_catches_a_doubled_tile(rng):
    """The check above can fail: a kernel whose grid-stride visits a tile twice is caught."""
    from gemm_steps.steps import persistent

    config = SMALL
    m, n, k = 2 * config.BLOCK_M, 2 * config.BLOCK_N, config.BLOCK_K
    counts = np.zeros(m * n, dtype=np.int64)
    kernels = persistent.build(config, overrides={"store_float4": _counting_store(m * n, counts)})
    kernels._resident_blocks = {"fast": 1}  # grid = 1 block: it must loop over all 4 tiles
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    api.run(kernels.launch, a, b)
    assert (counts == 1).all()
    counts[:] = 0
    api.run(kernels.launch, a, b)
    api.run(kernels.launch, a, b)  # two launches = every tile written twice: the count shows it
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
    data_parallel, stream_k = stream_k_split(tiles, blocks)
    assert (data_parallel, stream_k) == expected
    assert data_parallel + stream_k == tiles
    assert stream_k == 0 or data_parallel % blocks == 0, "mixed splits keep whole data-parallel waves"


#: Which steps run the FMAs of a k-column in serpentine order (step 9 introduced it; 10 and 11 keep step 9's loop).
FMA_ORDER = {"unrolled": "rows", "double_buffered": "rows", "warp_tiling": "serpentine", "persistent": "serpentine",
             "stream_k": "serpentine"}
_FMA = re.compile(r"\bacc_(\d+)_(\d+) \+= a_frag_(\d+) \* b_frag_(\d+)\b")


def fma_order(thread_m: int, thread_n: int, order: str) -> list[tuple[int, int]]:
    """(i, j) of the outer product's FMAs for one k-column: row by row, odd rows backwards if serpentine."""
    return [(i, thread_n - 1 - jj if order == "serpentine" and i % 2 else jj)
            for i in range(thread_m) for jj in range(thread_n)]


@pytest.mark.parametrize("step_name", list(FMA_ORDER))
def test_fma_order_of_the_shipped_kernels(step_name):
    """The generated fast kernel does every product of the register tile once per k-column, ``acc_i_j += a_i·b_j``,
    in the step's order: step 9 (and 10, 11 after it) in serpentine order — row i left to right for even i,
    right to left for odd i, so consecutive FMAs share an operand — and steps 7, 8 row by row. Same products,
    another order: the diff of steps 8 and 9 that lesson 9 measures."""
    step = gemm_steps.get_step(step_name)
    config = step.tiled.config
    fmas = [tuple(map(int, match)) for match in _FMA.findall(step.tiled.generated("fast"))]
    assert fmas, f"no `acc_i_j += a_frag_i * b_frag_j` in {step_name}'s generated kernel"
    assert all(acc_i == a_i and acc_j == b_j for acc_i, acc_j, a_i, b_j in fmas), "an FMA pairs the wrong fragments"
    per_column = fma_order(config.THREAD_M, config.THREAD_N, FMA_ORDER[step_name])
    assert [(i, j) for i, j, _, _ in fmas] == per_column * config.BLOCK_K, (
        f"{step_name}: the FMAs are not in {FMA_ORDER[step_name]} order, {config.BLOCK_K} k-columns")
    assert sorted(per_column) == sorted(fma_order(config.THREAD_M, config.THREAD_N, "rows"))  # the same products


def test_the_fma_order_check_tells_the_orders_apart():
    rows, serpentine = fma_order(8, 16, "rows"), fma_order(8, 16, "serpentine")
    assert rows != serpentine and sorted(rows) == sorted(serpentine)
    assert serpentine[15:18] == [(0, 15), (1, 15), (1, 14)]  # a row's end shares b_15 with the next row's start
