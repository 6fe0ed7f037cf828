"""Thread-block clusters and TMA multicast for Numba kernels (Hopper) — each with a plain-Python twin.

A **cluster** is a group of blocks (here 2) that the GPU runs at the same time on SMs of one GPC. The blocks of a
cluster can reach each other's shared memory (*distributed shared memory*), arrive on each other's mbarriers, and
wait for each other at one barrier. What the course uses it for is **TMA multicast**: one copy-engine load, issued
by one block, that writes the same box into the shared memory of several blocks of its cluster and completes its
bytes on the mbarrier at the same offset in each. Two blocks that need the same tile each load half of it and
multicast it: that tile is read from L2 once per cluster instead of once per block (step 20 shares A's). cuBLAS's
TF32 kernel on Hopper does this (``UTMALDG.4D.MULTICAST``, cluster of 2: results/reference-*.json, lesson 17's
"What cuBLAS runs").

==========================================  ======================================================================
function                                    PTX
==========================================  ======================================================================
``cluster_rank()``                          ``mov.u32 r, %cluster_ctarank``
``cluster_sync()``                          ``barrier.cluster.arrive.release``, ``barrier.cluster.wait.acquire``
``fence_mbarrier_init()``                   ``fence.mbarrier_init.release.cluster``
``mbarrier_arrive_cluster(bar, i, rank)``   ``mapa.shared::cluster.u32 a, &bar[i], rank``, then
                                            ``mbarrier.arrive.shared::cluster.b64 _, [a]``
``copy_tile_multicast(dst, j, map, r, c,    ``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::``
bar, i, mask)``                             ``complete_tx::bytes.multicast::cluster [&dst[j]], [map, {c, r}],``
                                            ``[&bar[i]], mask``
==========================================  ======================================================================

**In SASS** (Nsight Compute's source page of step 20 on an H200,
experiments/results/experiment-reference-steps-17-20-nvidia-h200.json, against step 17's): the multicast copies are
``UTMALDG`` in their ``MULTICAST`` form (5 in the code, 0 in step 17), and the cluster barriers ``UCGABAR`` instructions
(10, 0 in step 17); the other rows' SASS is not checked here.

**The rules** (the PTX ISA's): a block's rank in its cluster is ``%cluster_ctarank`` (0 … size − 1; for a cluster
along x, ``blockIdx.x % size``). A multicast writes the box at the *same shared-memory offset* in every block whose
bit is set in the 16-bit ``mask`` (bit r: rank r), and completes the box's bytes on the mbarrier at the same offset
in each of them — so every block of a cluster must lay out its shared memory the same way. ``mapa`` turns the
address of a variable in this block's shared memory into the address of the same variable in block ``rank``'s. A
block may not read or write another's shared memory before that block has started (a ``cluster_sync()`` after the
barriers are initialised, with ``fence_mbarrier_init()`` before it), nor after it has ended: a block whose peers may
still arrive on its barriers or multicast into it waits at a last ``cluster_sync()`` before it exits. Every thread of
every block must execute each ``cluster_sync()``.

**A remote arrival without a cluster-scope release.** ``mbarrier.arrive`` takes a memory order and a scope; the
default is ``.release`` at ``.cta`` scope, and that is what ``mbarrier_arrive_cluster`` uses, as CUTLASS's
``ClusterBarrier::arrive(cta_id)`` does. A consumer arrives on an *empty* barrier to say "my wgmma have read this
stage" — the ``wgmma.wait_group`` before the arrival already says the reads are done; no data of the consumer's is
published by it. Written with ``.release.cluster``, the arrival asked for every earlier memory access of the thread to
be visible across the cluster first, and step 20 ran at 211 TFLOPS instead of 371 at 4096³ on an H200 (same run,
experiments/cluster_arrive_scope.py).

**Not ``.aligned``.** ``barrier.cluster`` (like ``bar.sync``) has an ``.aligned`` form that promises every thread of
a warp executes it together, at the same instruction. A warp-specialized kernel breaks that promise at its end: one
lane of the producer warp is still issuing copies when its 31 idle lanes reach the last barrier. On an H200 step 20
with ``.aligned`` cluster barriers hung at that last barrier (cluster of 1 and of 2 alike, and with ``bar.sync``
there too); without ``.aligned`` it completed (its first GPU runs, 2026-11-28). So ``cluster_sync`` uses the
unaligned form, which lets each thread arrive when it gets there.

**The launch.** Numba's ``kernel[grid, block, stream, shared]`` has no cluster: :func:`launch_cluster` launches
through ``cuda.core`` (``LaunchConfig(cluster=…)``, the driver's ``cuLaunchKernelEx`` with a cluster-dimension
attribute) on a GPU, and inside :class:`~.simulator_patches.simulated_cluster` on the simulator.

**A missing arrival.** A missing arrival on an mbarrier ends as every mbarrier wait does (``mbarrier_wait``'s time
limit and ``trap`` on a GPU, :class:`~.mbarrier_ops.MbarrierTimeout` on the simulator). ``barrier.cluster.wait`` has
no time limit on a GPU: a thread that skips a ``cluster_sync()`` hangs the launch there; the twin raises after twice
:data:`~.mbarrier_ops.SIMULATOR_WAIT_LIMIT_S` with the count of threads that arrived (twice: a thread stuck on an
mbarrier names its missing arrival first) — test a kernel's cluster barriers on the simulator first.

**Simulator twins.** The blocks of a cluster run together, each with its own shared memory
(:class:`~.simulator_patches.simulated_cluster`); ``mapa``'s twin, :func:`peer_array`, finds the same array in the
other block's shared memory, so a remote arrival or a multicast lands where it would on the GPU.

Needs compute capability 9.0.
"""

from __future__ import annotations

import threading

import numpy as np

from .backend import SIMULATOR

__all__ = ["cluster_rank", "cluster_sync", "fence_mbarrier_init", "mbarrier_arrive_cluster", "copy_tile_multicast",
           "launch_cluster", "peer_array", "MAX_PORTABLE_CLUSTER"]

#: The largest cluster every Hopper GPU accepts without an opt-in (``cudaFuncAttributeNonPortableClusterSizeAllowed``).
MAX_PORTABLE_CLUSTER = 8


def _check_mask(mask: int, size: int) -> None:
    if not 0 < int(mask) < (1 << size):
        raise ValueError(f"multicast mask {int(mask):#x}: set bits only for ranks 0–{size - 1} of this cluster of "
                         f"{size}, at least one")


if SIMULATOR:
    from . import mbarrier_ops

    def _thread():
        thread = threading.current_thread()
        if not hasattr(thread, "thread_id"):
            raise RuntimeError("cluster operations belong to a kernel: call them from inside one")
        return thread

    def _cluster_of(thread):
        cluster = getattr(thread, "_cluster", None)
        if cluster is None:
            raise RuntimeError("a cluster operation in a launch without a cluster: launch the kernel with "
                               "launch_cluster (on the simulator: inside simulated_cluster)")
        return cluster

    def cluster_rank():
        """This block's rank in its cluster (simulator: from its block index; 0 outside a cluster launch)."""
        return np.uint32(getattr(_thread(), "_cluster_rank", 0))

    def cluster_sync():
        """Every thread of every block of the cluster arrives, then waits for all (simulator: a barrier of the
        cluster's threads that raises with a count after twice SIMULATOR_WAIT_LIMIT_S — a thread the barrier waits
        for may itself be stuck on an mbarrier, whose own timeout names the missing arrival, the better message, so
        it gets to speak first; a block barrier outside a cluster launch, where the cluster is the block)."""
        thread = _thread()
        cluster = getattr(thread, "_cluster", None)
        if cluster is None:
            thread.syncthreads()
            return
        try:
            cluster.barrier.wait(thread, 2 * mbarrier_ops.SIMULATOR_WAIT_LIMIT_S)
        except TimeoutError as error:
            raise mbarrier_ops.MbarrierTimeout(str(error)) from None

    def fence_mbarrier_init():
        """Make this thread's ``mbarrier_init`` visible to the cluster (simulator: it is)."""

    def peer_array(array, rank):
        """``array`` — a shared array of this block, or a view of one — as the same bytes of block ``rank``'s shared
        memory in this cluster (``mapa``'s twin)."""
        from numba.cuda.simulator import kernelapi

        thread = _thread()
        cluster = _cluster_of(thread)
        rank = int(rank)
        if not 0 <= rank < cluster.size:
            raise ValueError(f"rank {rank}: this cluster has ranks 0–{cluster.size - 1}")
        own = cluster.shared_memory(thread._cluster_rank, lambda: None)
        peer = cluster.shared_memory(rank, lambda: kernelapi.FakeCUDAShared(own._dynshared_size))
        view = np.asarray(array)
        root = view
        while isinstance(root.base, np.ndarray):
            root = root.base
        address = view.__array_interface__["data"][0]
        dynamic = own._dynshared
        start = dynamic.__array_interface__["data"][0]
        if start <= address < start + max(dynamic.nbytes, 1):
            peer_root, offset = peer._dynshared, address - start
        else:
            for key, allocation in list(own._allocations.items()):
                if allocation is root:
                    peer_root = peer._allocations.setdefault(key, np.zeros_like(root))
                    offset = address - root.__array_interface__["data"][0]
                    break
            else:
                raise ValueError("peer_array: not an array in this block's shared memory")
        flat = peer_root.reshape(-1).view(np.uint8)
        return flat[offset: offset + view.nbytes].view(view.dtype).reshape(view.shape)

    def mbarrier_arrive_cluster(array, index, rank):
        """One arrival on barrier ``array[index]`` of block ``rank`` of this cluster (this block's own if ``rank`` is
        its own)."""
        mbarrier_ops.mbarrier_arrive(peer_array(array, rank), index)

    def copy_tile_multicast(destination, to, tensor_map, row, col, array, index, mask):
        """``copy_tile`` into every block of the cluster whose bit is set in ``mask``: the box at (``row``, ``col``)
        to ``destination[to:]`` of each, its bytes completed on barrier ``array[index]`` of each."""
        thread = _thread()
        cluster = _cluster_of(thread)
        _check_mask(mask, cluster.size)
        for rank in range(cluster.size):
            if int(mask) >> rank & 1:
                mbarrier_ops.copy_tile(peer_array(destination, rank), to, tensor_map, row, col,
                                       peer_array(array, rank), index)

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from .mbarrier_ops import _asm, _barrier_ok, _global_address
    from .warpgroup_ops import shared_address_value as _shared_address

    _I16, _I32 = ir.IntType(16), ir.IntType(32)

    @intrinsic
    def cluster_rank(typingctx):
        """``%cluster_ctarank``: this block's rank in its cluster (0 where the launch has no cluster)."""
        def codegen(context, builder, sig, args):
            return _asm(builder, "mov.u32 $0, %cluster_ctarank;", "=r", _I32, [])

        return types.uint32(), codegen

    @intrinsic
    def cluster_sync(typingctx):
        """``barrier.cluster.arrive.release`` and ``barrier.cluster.wait.acquire``: every thread of every block of
        the cluster meets here (no time limit). Not ``.aligned``: a thread may come alone (the module says why)."""
        def codegen(context, builder, sig, args):
            _asm(builder, "barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;",
                 "~{memory}", ir.VoidType(), [])
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def fence_mbarrier_init(typingctx):
        """``fence.mbarrier_init.release.cluster``: this thread's ``mbarrier.init`` visible to the whole cluster."""
        def codegen(context, builder, sig, args):
            _asm(builder, "fence.mbarrier_init.release.cluster;", "~{memory}", ir.VoidType(), [])
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def mbarrier_arrive_cluster(typingctx, array, index, rank):
        """``mapa`` + ``mbarrier.arrive.shared::cluster.b64`` (release at CTA scope, the default: the module says
        why): one arrival on barrier ``array[index]`` of block ``rank`` of this cluster."""
        if not (_barrier_ok(array, index) and isinstance(rank, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            peer = context.cast(builder, args[2], sig.args[2], types.uint32)
            _asm(builder, "{\n\t.reg .b32 remote;\n\tmapa.shared::cluster.u32 remote, $0, $1;\n\t"
                          "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}",
                 "r,r,~{memory}", ir.VoidType(), [address, peer])
            return context.get_dummy_value()

        return types.void(array, index, rank), codegen

    @intrinsic
    def copy_tile_multicast(typingctx, destination, to, tensor_map, row, col, array, index, mask):
        """``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster``:
        the box at (``row``, ``col``) of the matrix behind ``tensor_map`` to ``&destination[to]`` of every block of
        the cluster whose bit is set in ``mask``, its bytes completed on barrier ``array[index]`` of each."""
        if not (isinstance(destination, types.Array) and isinstance(tensor_map, types.Array)
                and tensor_map.dtype == types.uint64 and _barrier_ok(array, index)
                and all(isinstance(x, types.Integer) for x in (to, row, col, mask))):
            return None

        def codegen(context, builder, sig, args):
            to_address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            map_address = _global_address(context, builder, sig.args[2], args[2], context.get_constant(types.intp, 0),
                                          types.intp)
            inner = context.cast(builder, args[4], sig.args[4], types.int32)  # the column: the map's first dimension
            outer = context.cast(builder, args[3], sig.args[3], types.int32)
            barrier = _shared_address(context, builder, sig.args[5], args[5], args[6], sig.args[6])
            ctas = builder.trunc(context.cast(builder, args[7], sig.args[7], types.uint32), _I16)
            _asm(builder, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                          ".multicast::cluster [$0], [$1, {$2, $3}], [$4], $5;", "r,l,r,r,r,h,~{memory}",
                 ir.VoidType(), [to_address, map_address, inner, outer, barrier, ctas])
            return context.get_dummy_value()

        return types.void(destination, to, tensor_map, row, col, array, index, mask), codegen

    def peer_array(array, rank):  # pragma: no cover - the simulator's twin; a kernel uses the intrinsics above
        raise RuntimeError("peer_array is the simulator's twin of mapa: on a GPU use mbarrier_arrive_cluster or "
                           "copy_tile_multicast")


def launch_cluster(dispatcher, signature: str, grid, threads: int, shared_bytes: int, stream, cluster, arguments):
    """Launch ``dispatcher`` (compiled for ``signature``) on ``grid`` blocks in clusters of ``cluster`` blocks —
    through ``cuda.core`` on a GPU (the arguments passed as Numba would: :func:`~.launch_plans.direct_arguments`),
    inside :class:`~.simulator_patches.simulated_cluster` on the simulator."""
    if SIMULATOR:
        from .simulator_patches import simulated_cluster

        with simulated_cluster(cluster):
            configured = (dispatcher[grid, threads, stream, shared_bytes] if shared_bytes
                          else dispatcher[grid, threads, stream])
            configured(*arguments)
        return
    from .kernel_tools import DirectLaunch
    from .launch_plans import direct_arguments

    launch = DirectLaunch(dispatcher, signature, grid, threads, shared_bytes, stream, cluster=cluster)
    launch(*direct_arguments(arguments))
