"""Hopper's asynchronous barriers (``mbarrier``) and bulk copies for Numba kernels — each with a plain-Python twin.

``cuda.syncthreads()`` makes *every* thread of a block meet. A producer/consumer pipeline needs something finer: a
consumer waits until *one stage* of shared memory is full, a producer until it is empty again, and the copy engine —
not a thread — says when the bytes have landed. That is an **mbarrier**: 8 bytes of shared memory holding an
expected arrival count, the arrivals still pending, a transaction count of bytes still in flight, and a **phase
bit**. When the pending arrivals reach zero and no bytes are in flight, the phase completes: the bit flips and the
count starts again. A waiter names the phase it waits for by its parity (0 or 1), so a ring of stages is walked with
one bit per stage, flipped each time round.

=========================================  =====================================================================  ===============
function                                   PTX                                                                    SASS
=========================================  =====================================================================  ===============
``mbarrier_init(bar, i, count)``           ``mbarrier.init.shared::cta.b64 [&bar[i]], count``                     ``SYNCS.EXCH``
``mbarrier_arrive(bar, i)``                ``mbarrier.arrive.shared::cta.b64 _, [&bar[i]]``                       ``SYNCS.ARRIVE``
``mbarrier_arrive_expect_tx(bar, i, n)``   ``mbarrier.arrive.expect_tx.shared::cta.b64 _, [&bar[i]], n``          ``SYNCS.ARRIVE``
``mbarrier_try_wait(bar, i, parity)``      ``mbarrier.try_wait.parity.shared::cta.b64 p, [&bar[i]], parity``      ``SYNCS.PHASECHK``
``mbarrier_wait(bar, i, parity)``          ``try_wait`` in a loop, with a time limit (``%globaltimer``, ``trap``)
``copy_bulk(dst, j, src, k, n, bar, i)``   ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes``  ``UBLKCP``
=========================================  =====================================================================  ===============

**Using one.** One thread initialises each barrier (``mbarrier_init``) with the number of arrivals a phase needs;
then ``fence_proxy_async()`` and ``cuda.syncthreads()`` make it visible to every thread and to the copy engine,
before anyone arrives. A producer that starts a bulk copy of ``n`` bytes calls ``mbarrier_arrive_expect_tx(bar, i,
n)`` (one arrival, and ``n`` bytes to wait for) and then ``copy_bulk``, whose completion subtracts the bytes. A
consumer calls ``mbarrier_wait(bar, i, parity)`` and finds the bytes in shared memory.

**Rules** (the PTX ISA's): a bulk copy moves a multiple of 16 bytes, between 16-byte-aligned addresses; the
barrier is 8-byte aligned (a ``uint64`` shared array is); the phase a waiter names is the one it expects to complete,
so the k-th time a stage is filled its waiters use parity k % 2.

**A missed arrival must not hang the machine.** ``mbarrier_wait`` gives up after :data:`WAIT_LIMIT_NS` of
``%globaltimer`` and executes ``trap``: the launch fails (``CUDA_ERROR_LAUNCH_FAILED``) instead of spinning forever.
The twin raises :class:`MbarrierTimeout` after :data:`SIMULATOR_WAIT_LIMIT_S`, naming the barrier and the phase.

**Simulator twins.** A barrier is a Python object keyed by the shared array's buffer and the element index; the
simulated threads of a block are real threads, so a wait blocks on a condition variable. ``copy_bulk`` copies at once
and completes its bytes at once.

Needs compute capability 9.0 (``mbarrier.expect_tx``, ``try_wait`` and ``cp.async.bulk`` are sm_90).
"""

from __future__ import annotations

import threading

import numpy as np
from numba import cuda

from .backend import SIMULATOR

__all__ = ["mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_try_wait", "mbarrier_wait",
           "copy_bulk", "WAIT_LIMIT_NS", "SIMULATOR_WAIT_LIMIT_S", "MbarrierTimeout"]

#: How long ``mbarrier_wait`` spins on a GPU before it traps: far beyond any real wait (microseconds), well inside
#: what a test can afford.
WAIT_LIMIT_NS = 2_000_000_000
#: How long the simulator's twin waits before it raises (its threads are slow, but not this slow).
SIMULATOR_WAIT_LIMIT_S = 20.0


class MbarrierTimeout(RuntimeError):
    """An mbarrier phase never completed on the simulator: an arrival or some bytes were missing."""


if SIMULATOR:
    _LOCK = threading.Lock()
    _BARRIERS: dict = {}

    class _Mbarrier:
        def __init__(self, count: int):
            self.expected = self.pending = int(count)
            self.bytes_pending = 0
            self.phase = 0
            self.changed = threading.Condition()

        def _complete_if_done(self):
            if self.pending == 0 and self.bytes_pending == 0:
                self.phase ^= 1
                self.pending = self.expected
                self.changed.notify_all()

        def arrive(self, expect_bytes: int = 0):
            with self.changed:
                if self.pending == 0:
                    raise RuntimeError("mbarrier: more arrivals than its count in one phase")
                self.bytes_pending += int(expect_bytes)
                self.pending -= 1
                self._complete_if_done()

        def complete_bytes(self, count: int):
            with self.changed:
                self.bytes_pending -= int(count)
                self._complete_if_done()

    def _key(array, index):
        buffer = np.asarray(array)
        while isinstance(buffer.base, np.ndarray):
            buffer = buffer.base
        return (id(buffer), np.asarray(array).__array_interface__["data"][0] + int(index) * buffer.itemsize)

    def _barrier(array, index) -> _Mbarrier:
        with _LOCK:
            found = _BARRIERS.get(_key(array, index))
        if found is None:
            raise RuntimeError("mbarrier used before mbarrier_init (or after its block ended)")
        return found

    def mbarrier_init(array, index, count):
        """Barrier ``array[index]`` expects ``count`` arrivals per phase, phase 0 (simulator: a Python object)."""
        with _LOCK:
            _BARRIERS[_key(array, index)] = _Mbarrier(count)

    def mbarrier_arrive(array, index):
        """One arrival on barrier ``array[index]``."""
        _barrier(array, index).arrive()

    def mbarrier_arrive_expect_tx(array, index, count):
        """One arrival on ``array[index]``, and ``count`` more bytes its phase waits for."""
        _barrier(array, index).arrive(expect_bytes=count)

    def mbarrier_try_wait(array, index, parity):
        """Whether the phase of parity ``parity`` of barrier ``array[index]`` has completed (1) or not (0)."""
        return np.uint32(_barrier(array, index).phase != int(parity) & 1)

    def mbarrier_wait(array, index, parity):
        """Wait until the phase of parity ``parity`` of barrier ``array[index]`` completes; raise
        :class:`MbarrierTimeout` after :data:`SIMULATOR_WAIT_LIMIT_S`."""
        barrier = _barrier(array, index)
        with barrier.changed:
            if not barrier.changed.wait_for(lambda: barrier.phase != int(parity) & 1, SIMULATOR_WAIT_LIMIT_S):
                raise MbarrierTimeout(
                    f"mbarrier {index}: phase of parity {int(parity) & 1} did not complete in "
                    f"{SIMULATOR_WAIT_LIMIT_S:g} s ({barrier.pending} of {barrier.expected} arrivals and "
                    f"{barrier.bytes_pending} bytes still missing) — a missed arrival or a wrong parity")

    def copy_bulk(destination, to, source, start, count, array, index):
        """Copy ``count`` bytes from ``source[start:]`` (global) to ``destination[to:]`` (shared), then complete
        them on barrier ``array[index]`` (simulator: at once)."""
        itemsize = np.asarray(destination).itemsize
        if int(count) % 16 or int(count) % itemsize:
            raise ValueError(f"copy_bulk: {int(count)} bytes is not a multiple of 16")
        elements = int(count) // itemsize
        np.asarray(destination)[int(to): int(to) + elements] = np.asarray(source)[int(start): int(start) + elements]
        _barrier(array, index).complete_bytes(count)

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    _I32, _I64 = ir.IntType(32), ir.IntType(64)

    def _shared_address(context, builder, array_type, array, index, index_type):
        """The 32-bit shared-window address of ``array[index]`` (``cvta.to.shared``)."""
        data = context.make_array(array_type)(context, builder, array).data
        offset = context.cast(builder, index, index_type, types.int64)
        generic = builder.ptrtoint(builder.gep(data, [offset], inbounds=True), _I64)
        convert = ir.InlineAsm(ir.FunctionType(_I64, [_I64]), "cvta.to.shared.u64 $0, $1;", "=l,l")
        return builder.trunc(builder.call(convert, [generic]), _I32)

    def _global_address(context, builder, array_type, array, index, index_type):
        data = context.make_array(array_type)(context, builder, array).data
        offset = context.cast(builder, index, index_type, types.int64)
        return builder.ptrtoint(builder.gep(data, [offset], inbounds=True), _I64)

    def _asm(builder, text, constraints, result, arguments):
        function_type = ir.FunctionType(result, [a.type for a in arguments])
        return builder.call(ir.InlineAsm(function_type, text, constraints, side_effect=True), arguments)

    def _barrier_ok(array, index) -> bool:
        return isinstance(array, types.Array) and array.dtype == types.uint64 and isinstance(index, types.Integer)

    @intrinsic
    def mbarrier_init(typingctx, array, index, count):
        """``mbarrier.init.shared::cta.b64``: barrier ``array[index]`` (uint64) expects ``count`` arrivals."""
        if not (_barrier_ok(array, index) and isinstance(count, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            arrivals = context.cast(builder, args[2], sig.args[2], types.uint32)
            _asm(builder, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", ir.VoidType(),
                 [address, arrivals])
            return context.get_dummy_value()

        return types.void(array, index, count), codegen

    @intrinsic
    def mbarrier_arrive(typingctx, array, index):
        """``mbarrier.arrive.shared::cta.b64``: one arrival on barrier ``array[index]``."""
        if not _barrier_ok(array, index):
            return None

        def codegen(context, builder, sig, args):
            address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            _asm(builder, "{\n\t.reg .b64 state;\n\tmbarrier.arrive.shared::cta.b64 state, [$0];\n\t}",
                 "r,~{memory}", ir.VoidType(), [address])
            return context.get_dummy_value()

        return types.void(array, index), codegen

    @intrinsic
    def mbarrier_arrive_expect_tx(typingctx, array, index, count):
        """``mbarrier.arrive.expect_tx.shared::cta.b64``: one arrival, and ``count`` bytes to wait for."""
        if not (_barrier_ok(array, index) and isinstance(count, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            count_value = context.cast(builder, args[2], sig.args[2], types.uint32)
            _asm(builder, "{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [$0], $1;\n\t}",
                 "r,r,~{memory}", ir.VoidType(), [address, count_value])
            return context.get_dummy_value()

        return types.void(array, index, count), codegen

    @intrinsic
    def mbarrier_try_wait(typingctx, array, index, parity):
        """``mbarrier.try_wait.parity.shared::cta.b64``: 1 once the phase of parity ``parity`` has completed (the
        instruction may wait a while first), else 0."""
        if not (_barrier_ok(array, index) and isinstance(parity, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            bit = context.cast(builder, args[2], sig.args[2], types.uint32)
            return _asm(builder, "{\n\t.reg .pred done;\n\tmbarrier.try_wait.parity.shared::cta.b64 done, [$1], $2;"
                                 "\n\tselp.u32 $0, 1, 0, done;\n\t}", "=r,r,r,~{memory}", _I32, [address, bit])

        return types.uint32(array, index, parity), codegen

    @intrinsic
    def _global_timer(typingctx):
        """``%globaltimer``: nanoseconds, from a clock shared by the whole GPU."""
        def codegen(context, builder, sig, args):
            return _asm(builder, "mov.u64 $0, %globaltimer;", "=l", _I64, [])

        return types.uint64(), codegen

    @intrinsic
    def _trap(typingctx):
        """``trap``: abort the launch (the host sees CUDA_ERROR_LAUNCH_FAILED)."""
        def codegen(context, builder, sig, args):
            _asm(builder, "trap;", "~{memory}", ir.VoidType(), [])
            return context.get_dummy_value()

        return types.void(), codegen

    @cuda.jit(device=True, inline=True)
    def mbarrier_wait(array, index, parity):
        """Wait until the phase of parity ``parity`` of barrier ``array[index]`` completes; after
        :data:`WAIT_LIMIT_NS` of waiting, ``trap`` (a missed arrival fails the launch instead of hanging it)."""
        if mbarrier_try_wait(array, index, parity):
            return
        start = _global_timer()
        while not mbarrier_try_wait(array, index, parity):
            if _global_timer() - start > WAIT_LIMIT_NS:
                _trap()

    @intrinsic
    def copy_bulk(typingctx, destination, to, source, start, count, array, index):
        """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes``: the copy engine moves ``count``
        bytes from ``&source[start]`` (global) to ``&destination[to]`` (shared) and completes them on barrier
        ``array[index]``. Both addresses 16-byte aligned, ``count`` a multiple of 16."""
        if not (isinstance(destination, types.Array) and isinstance(source, types.Array)
                and destination.dtype == source.dtype and _barrier_ok(array, index)
                and all(isinstance(x, types.Integer) for x in (to, start, count))):
            return None

        def codegen(context, builder, sig, args):
            to_address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            from_address = _global_address(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            size = context.cast(builder, args[4], sig.args[4], types.uint32)
            barrier = _shared_address(context, builder, sig.args[5], args[5], args[6], sig.args[6])
            _asm(builder, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
                 "r,l,r,r,~{memory}", ir.VoidType(), [to_address, from_address, size, barrier])
            return context.get_dummy_value()

        return types.void(destination, to, source, start, count, array, index), codegen
