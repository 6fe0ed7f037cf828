"""Thread-block clusters and TMA multicast (toolkit/cluster_ops.py): the twins on the simulator — a cluster's blocks run
together, each with its own shared memory; a remote arrival and a multicast land in the peer — and wrong uses that
end in a message, not a hang. The same kernels run on a GPU in the ``gpu``-marked tests."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from numba import cuda, float32, uint32, uint64

from gemm_steps.toolkit import mbarrier_ops
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.cluster_ops import (cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init,
                                            launch_cluster, mbarrier_arrive_cluster)
from gemm_steps.toolkit.mbarrier_ops import (MbarrierTimeout, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
                                             tensor_map_2d, tensor_map_acquire)
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async, first_aligned

THREADS = 64
U32 = "void(uint32[::1])"
HOPPER = SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)


@cuda.jit
def ranks_kernel(out):
    """Each block writes its cluster rank and block index between two cluster barriers."""
    cluster_sync()
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x * 2] = cluster_rank()
        out[cuda.blockIdx.x * 2 + 1] = cuda.blockIdx.x
    cluster_sync()


@cuda.jit
def remote_arrival_kernel(out, arrivals):
    """A barrier per block that needs one arrival from each block of the cluster of 2: thread 0 arrives on rank 0's
    and (if ``arrivals`` is 2) on rank 1's; every thread waits for its own block's barrier."""
    bar = cuda.shared.array(1, uint64)
    if cuda.threadIdx.x == 0:
        mbarrier_init(bar, 0, 2)
        fence_mbarrier_init()
    cluster_sync()
    if cuda.threadIdx.x == 0:
        for r in range(arrivals[0]):
            mbarrier_arrive_cluster(bar, 0, r)
    mbarrier_wait(bar, 0, uint32(0))
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = 1 + cluster_rank()
    cluster_sync()


@cuda.jit
def multicast_kernel(out, a_map):
    """Block r of a cluster of 2 loads rows 8r … 8r + 7 of a 16 × 32 matrix and multicasts them to both blocks; each
    block copies the whole matrix it received to its part of ``out``."""
    bar = cuda.shared.array(1, uint64)
    tile = cuda.shared.array(0, float32)
    tile = tile[first_aligned(tile, 1024):]
    rank = cluster_rank()
    if cuda.threadIdx.x == 0:
        mbarrier_init(bar, 0, 1)
        tensor_map_acquire(a_map)
        fence_mbarrier_init()
    fence_proxy_async()
    cluster_sync()
    if cuda.threadIdx.x == 0:
        mbarrier_arrive_expect_tx(bar, 0, 16 * 32 * 4)  # both halves land here: one from each block
        copy_tile_multicast(tile, rank * 8 * 32, a_map, rank * 8, 0, bar, 0, 3)
    mbarrier_wait(bar, 0, uint32(0))
    for i in range(cuda.threadIdx.x, 16 * 32, cuda.blockDim.x):
        out[cuda.blockIdx.x * 512 + i] = tile[i]
    cluster_sync()


@cuda.jit
def skipped_barrier_kernel(out):
    """Thread 0 of block 1 does something else (sleeps: a simulator-only kernel) instead of the cluster barrier's
    second meeting: the others wait for it."""
    cluster_sync()
    if cuda.blockIdx.x == 1 and cuda.threadIdx.x == 0:
        time.sleep(4.0)
    else:
        cluster_sync()
    out[cuda.blockIdx.x] = 1


def _ranks(blocks: int, cluster: int) -> np.ndarray:
    out = cuda.to_device(np.zeros(2 * blocks, np.uint32))
    launch_cluster(ranks_kernel, U32, blocks, THREADS, 0, 0, (cluster, 1, 1), (out,))
    return out.copy_to_host().reshape(blocks, 2)


def _multicast() -> tuple[np.ndarray, np.ndarray]:
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    a_map = tensor_map_2d(cuda.to_device(a), 8, 32)
    out = cuda.to_device(np.zeros(2 * 512, np.float32))
    launch_cluster(multicast_kernel, "void(float32[::1], uint64[::1])", 2, THREADS, 16 * 32 * 4 + 1024, 0,
                   (2, 1, 1), (out, a_map))
    return a, out.copy_to_host().reshape(2, 512)


# -- the twins ------------------------------------------------------------------------------------------------------
@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twins")
def test_blocks_know_their_rank_and_meet_at_the_cluster_barrier():
    got = _ranks(4, 2)
    assert got[:, 1].tolist() == [0, 1, 2, 3]
    assert got[:, 0].tolist() == [0, 1, 0, 1]  # %cluster_ctarank: blockIdx.x % 2 for clusters along x


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twins")
def test_a_remote_arrival_lands_on_the_peers_barrier():
    out = cuda.to_device(np.zeros(4, np.uint32))
    launch_cluster(remote_arrival_kernel, "void(uint32[::1], uint32[::1])", 4, THREADS, 0, 0, (2, 1, 1),
                   (out, cuda.to_device(np.array([2], np.uint32))))
    assert out.copy_to_host().tolist() == [1, 2, 1, 2]


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twins")
def test_a_multicast_writes_the_same_offset_of_every_block_in_the_mask():
    a, got = _multicast()
    assert (got[0] == a.ravel()).all() and (got[1] == a.ravel()).all()


# -- wrong uses: a message, never a hang ------------------------------------------------------------------------------
@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twins")
def test_a_missing_remote_arrival_ends_in_a_message(monkeypatch):
    monkeypatch.setattr(mbarrier_ops, "SIMULATOR_WAIT_LIMIT_S", 2.0)
    out = cuda.to_device(np.zeros(2, np.uint32))
    # both blocks arrive on rank 0's barrier only: rank 1's waits for its two, and the message names its block
    with pytest.raises(MbarrierTimeout, match=r"ctaid=\[1, 0, 0\].*mbarrier 0: .*2 of 2 arrivals .* still missing"):
        launch_cluster(remote_arrival_kernel, "void(uint32[::1], uint32[::1])", 2, THREADS, 0, 0, (2, 1, 1),
                       (out, cuda.to_device(np.array([1], np.uint32))))


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twins")
def test_a_thread_that_skips_the_cluster_barrier_is_counted(monkeypatch):
    monkeypatch.setattr(mbarrier_ops, "SIMULATOR_WAIT_LIMIT_S", 1.5)
    out = cuda.to_device(np.zeros(2, np.uint32))
    with pytest.raises(MbarrierTimeout, match=r"cluster barrier: \d+ of \d+ threads") as raised:
        launch_cluster(skipped_barrier_kernel, U32, 2, THREADS, 0, 0, (2, 1, 1), (out,))
    # one thread short (the count: threads still running; a waiter that already gave up has left it)
    arrived, live = map(int, re.search(r"(\d+) of (\d+) threads", str(raised.value)).groups())
    assert live - arrived == 1 and live <= 2 * THREADS


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's twins")
def test_a_cluster_operation_outside_a_cluster_launch_says_so():
    out = cuda.to_device(np.zeros(2, np.uint32))
    with pytest.raises(RuntimeError, match="launch without a cluster"):
        remote_arrival_kernel[2, THREADS](out, cuda.to_device(np.array([2], np.uint32)))


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's launch")
def test_a_grid_that_is_not_whole_clusters_is_refused():
    with pytest.raises(ValueError, match="multiple of the cluster"):
        _ranks(3, 2)


def test_a_mask_outside_the_cluster_is_refused():
    from gemm_steps.toolkit.cluster_ops import _check_mask

    _check_mask(3, 2)
    for mask in (0, 4, 7):
        with pytest.raises(ValueError, match="multicast mask"):
            _check_mask(mask, 2)


# -- the same kernels on a GPU ----------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR or not HOPPER, reason="clusters and TMA multicast need a GPU of compute capability 9.0")
def test_clusters_on_a_gpu():
    """Rank, cluster barrier, remote arrival and multicast through cuda.core's cluster launch (compute capability
    9.0), as on the simulator."""
    got = _ranks(4, 2)
    assert got[:, 0].tolist() == [0, 1, 0, 1] and got[:, 1].tolist() == [0, 1, 2, 3]
    out = cuda.to_device(np.zeros(4, np.uint32))
    launch_cluster(remote_arrival_kernel, "void(uint32[::1], uint32[::1])", 4, THREADS, 0, 0, (2, 1, 1),
                   (out, cuda.to_device(np.array([2], np.uint32))))
    cuda.synchronize()
    assert out.copy_to_host().tolist() == [1, 2, 1, 2]
    a, got = _multicast()
    assert (got[0] == a.ravel()).all() and (got[1] == a.ravel()).all()
