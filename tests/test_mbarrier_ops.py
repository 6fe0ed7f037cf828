"""The mbarrier toolkit (gemm_steps/toolkit/mbarrier_ops.py) that the Hopper pipeline steps will be built on, on the
simulator (its twins) and on an H100 (the instructions): bulk copies completing on a barrier, phases and their
parity over several rounds, arrival counting, a missed arrival that ends in an error instead of a hang, and tiles
copied by the tensor-memory accelerator (plain and 128-byte swizzled, zeros past the matrix's edges)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from numba import cuda, float32, uint32, uint64

import gemm_steps  # noqa: F401  (GPU or simulator first)
from gemm_steps.toolkit import mbarrier_ops
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.mbarrier_ops import (copy_bulk, copy_tile, mbarrier_arrive, mbarrier_arrive_expect_tx,
                                             mbarrier_init, mbarrier_try_wait, mbarrier_wait, tensor_map_2d,
                                             tensor_map_acquire)
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async, first_aligned, swizzled_offset

CHUNK = 128  # floats a round copies: 512 bytes
ROUNDS = 5

pytestmark = pytest.mark.skipif(not SIMULATOR and tuple(cuda.get_current_device().compute_capability) != (9, 0),
                                reason="mbarrier.expect_tx and cp.async.bulk need compute capability 9.0")


@cuda.jit
def bulk_rounds(source, out):
    """Round r: thread 0 starts a bulk copy of chunk r into one shared buffer and says how many bytes to expect;
    every thread waits for phase r (parity r % 2), reads its element, and the block meets before the buffer is
    reused."""
    tile = cuda.shared.array(CHUNK, float32)
    full = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        mbarrier_init(full, 0, 1)  # one arrival (thread 0's) per phase, plus the copy's bytes
    fence_proxy_async()
    cuda.syncthreads()
    for r in range(ROUNDS):
        if t == 0:
            mbarrier_arrive_expect_tx(full, 0, CHUNK * 4)
            copy_bulk(tile, 0, source, r * CHUNK, CHUNK * 4, full, 0)
        mbarrier_wait(full, 0, uint32(r % 2))
        out[r * CHUNK + t] = tile[t] * float32(2.0)
        cuda.syncthreads()  # nobody still reads the buffer when round r + 1 overwrites it


def test_bulk_copies_complete_on_the_barrier_round_after_round():
    source = np.random.default_rng(3).standard_normal(ROUNDS * CHUNK).astype(np.float32)
    out = cuda.to_device(np.full(ROUNDS * CHUNK, np.nan, np.float32))
    bulk_rounds[1, CHUNK](cuda.to_device(source), out)
    np.testing.assert_array_equal(out.copy_to_host(), source * 2)


@cuda.jit
def count_arrivals(out):
    """Every thread arrives once on a barrier that expects them all; then: did phase 0 complete (parity 0), and is
    phase 1 still open (parity 1)?"""
    bar = cuda.shared.array(1, uint64)
    t = cuda.threadIdx.x
    if t == 0:
        mbarrier_init(bar, 0, cuda.blockDim.x)
    cuda.syncthreads()
    mbarrier_arrive(bar, 0)
    mbarrier_wait(bar, 0, uint32(0))
    out[t, 0] = mbarrier_try_wait(bar, 0, uint32(0))
    out[t, 1] = mbarrier_try_wait(bar, 0, uint32(1))


def test_a_phase_completes_when_every_arrival_is_in_and_the_next_stays_open():
    out = cuda.to_device(np.full((64, 2), 7, np.uint32))
    count_arrivals[1, 64](out)
    got = out.copy_to_host()
    assert (got[:, 0] == 1).all(), "phase 0 must have completed once all 64 threads arrived"
    assert (got[:, 1] == 0).all(), "phase 1 must still be open: nobody arrived in it"


@cuda.jit
def missed_arrival(out):
    bar = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        mbarrier_init(bar, 0, 2)  # expects two arrivals …
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        mbarrier_arrive(bar, 0)  # … gets one
    mbarrier_wait(bar, 0, uint32(0))
    out[0] = 1.0


@pytest.mark.skipif(not SIMULATOR, reason="the twin's time limit (the GPU's: test_a_missed_arrival_fails_the_launch)")
def test_a_missed_arrival_raises_on_the_simulator(monkeypatch):
    monkeypatch.setattr(mbarrier_ops, "SIMULATOR_WAIT_LIMIT_S", 0.5)
    with pytest.raises(Exception, match=r"did not complete.*\(1 of 2 arrivals"):
        missed_arrival[1, 32](np.zeros(1, np.float32))


GPU_DEADLOCK = textwrap.dedent("""
    import numpy as np, sys
    sys.path.insert(0, "tests")
    from test_mbarrier_ops import missed_arrival
    from numba import cuda
    out = cuda.to_device(np.zeros(1, np.float32))
    missed_arrival[1, 32](out)
    cuda.synchronize()
""")


@pytest.mark.skipif(SIMULATOR, reason="the GPU's trap (the simulator's: test_a_missed_arrival_raises_on_the_simulator)")
def test_a_missed_arrival_fails_the_launch_instead_of_hanging():
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", GPU_DEADLOCK], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GEMM_STEPS_MBARRIER_TIMEOUT_S": "2"})
    seconds = time.perf_counter() - start
    assert done.returncode != 0, "a wait that can never complete returned normally"
    assert "LAUNCH_FAILED" in done.stderr or "launch failed" in done.stderr.lower(), done.stderr[-2000:]
    assert seconds < 60, f"the trap came after {seconds:.0f} s"


def test_the_wait_limit_is_a_setting():
    """%globaltimer is wall-clock time (a debugger's pause and another process's time slice count), so the limit is
    long by default and may be changed or switched off; nonsense is refused with the variable's name."""
    assert mbarrier_ops.wait_limit_ns(None) == 30_000_000_000
    assert mbarrier_ops.wait_limit_ns("2") == 2_000_000_000
    assert mbarrier_ops.wait_limit_ns("0") == 0
    for bad in ("-1", "soon", "nan", "inf"):
        with pytest.raises(ValueError, match="GEMM_STEPS_MBARRIER_TIMEOUT_S"):
            mbarrier_ops.wait_limit_ns(bad)


def test_the_wait_limit_is_part_of_a_kept_kernels_key(tmp_path, monkeypatch):
    """A kernel kept on disk (Numba's cache, keyed by its generated file) is compiled again when the limit changes."""
    from gemm_steps.toolkit import unroll

    names = []
    monkeypatch.setattr(unroll, "define", lambda source, name, namespace, key="", directory=None: names.append(key)
                        or namespace.__setitem__(name, lambda *a: None))
    from gemm_steps.steps import warp_specialized
    from gemm_steps.toolkit.tile_config import TileConfig

    config = TileConfig(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)
    for limit in (2_000_000_000, 0):
        monkeypatch.setattr(mbarrier_ops, "WAIT_LIMIT_NS", limit)
        warp_specialized.build(config)._define("fast")
    assert names[0] != names[1] and "wait_limit_ns=0" in names[1]


# -- tiles by the tensor-memory accelerator -----------------------------------------------------------------------

BOX_ROWS, BOX_COLS = 16, 32  # a box of 16 rows of 128 bytes: what the 128-byte swizzle takes
ROWS, COLS = 40, 72  # the matrix: boxes at its far corner reach past both edges
RAW_FLOATS = BOX_ROWS * BOX_COLS + 256  # + 1 KB: room to align (a shared array's size must be one constant)


@cuda.jit
def one_tile(tensor_map, row, col, out):
    """Thread 0 asks the copy engine for the box at (row, col) into a 1,024-byte-aligned buffer; everyone waits for
    its bytes and copies the buffer out as it lies in shared memory."""
    raw = cuda.shared.array(RAW_FLOATS, float32)
    full = cuda.shared.array(1, uint64)
    tiles = raw[first_aligned(raw, 1024):]
    t = cuda.threadIdx.x
    if t == 0:
        mbarrier_init(full, 0, 1)
    fence_proxy_async()
    cuda.syncthreads()
    if t == 0:
        tensor_map_acquire(tensor_map)
        mbarrier_arrive_expect_tx(full, 0, BOX_ROWS * BOX_COLS * 4)  # the whole box, outside parts included
        copy_tile(tiles, 0, tensor_map, row, col, full, 0)
    mbarrier_wait(full, 0, uint32(0))
    for i in range(t, BOX_ROWS * BOX_COLS, cuda.blockDim.x):
        out[i] = tiles[i]


def _box(matrix, row, col):
    """The box at (row, col) with zeros outside the matrix, as NumPy would cut it."""
    box = np.zeros((BOX_ROWS, BOX_COLS), np.float32)
    inside = matrix[row: row + BOX_ROWS, col: col + BOX_COLS]
    box[: inside.shape[0], : inside.shape[1]] = inside
    return box


@pytest.mark.parametrize("swizzle", [False, True], ids=["plain", "swizzle128"])
@pytest.mark.parametrize("corner", [(8, 16), (32, 64)], ids=["inside", "past-both-edges"])
def test_a_tile_lands_as_the_tensor_map_describes(swizzle, corner):
    """Plain: the box row-major. Swizzled: row r's 16-byte chunk c at slot c XOR r % 8 — exactly
    ``swizzled_offset(r, c)``, the layout steps 14–15 copy A into and ``wgmma`` reads. Outside the matrix: zeros."""
    offset_in_swizzle = getattr(swizzled_offset, "py_func", swizzled_offset)  # the kernels' formula, on the host
    matrix = np.random.default_rng(4).standard_normal((ROWS, COLS)).astype(np.float32)
    device_matrix = cuda.to_device(matrix)
    tensor_map = tensor_map_2d(device_matrix, BOX_ROWS, BOX_COLS, swizzle_128=swizzle)
    out = cuda.to_device(np.full(BOX_ROWS * BOX_COLS, np.nan, np.float32))
    one_tile[1, 128](tensor_map, corner[0], corner[1], out)
    got = out.copy_to_host()
    box = _box(matrix, *corner)
    want = np.empty(BOX_ROWS * BOX_COLS, np.float32)
    for r in range(BOX_ROWS):
        for c in range(BOX_COLS // 4):
            at = offset_in_swizzle(r, c) if swizzle else r * BOX_COLS + c * 4
            want[at: at + 4] = box[r, c * 4: c * 4 + 4]
    np.testing.assert_array_equal(got, want)


def test_tensor_map_2d_refuses_what_the_copy_engine_cannot_do():
    matrix = cuda.to_device(np.zeros((ROWS, COLS), np.float32))
    with pytest.raises(ValueError, match="128 bytes"):
        tensor_map_2d(matrix, 16, 16, swizzle_128=True)
    with pytest.raises(ValueError, match="1–256"):
        tensor_map_2d(matrix, 300, 32)
    with pytest.raises(ValueError, match="stride"):
        tensor_map_2d(cuda.to_device(np.zeros((8, 6), np.float32)), 8, 4)
