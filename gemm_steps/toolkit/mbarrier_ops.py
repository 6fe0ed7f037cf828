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
``copy_tile(dst, j, map, r, c, bar, i)``   ``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier…``       ``UTMALDG``
``tensor_map_acquire(map)``                ``fence.proxy.tensormap::generic.acquire.sys [map], 128``               ``FENCE``
``tensor_map_2d(x, rows, cols, swizzle)``  host: ``cuTensorMapEncodeTiled`` (cuda-bindings), the 128-byte map in global memory
``tensor_maps_rows_mod_4(x, rows, cols)``  host: four maps, one over each residue mod 4 of ``x``'s rows (a pitch of 16·cols bytes)
``named_barrier_sync(id, count)``          ``bar.sync id, count``: arrive, wait for ``count`` threads             ``BAR.SYNC``
``named_barrier_arrive(id, count)``        ``bar.arrive id, count``: arrive, do not wait                          ``BAR.ARV``
=========================================  =====================================================================  ===============

**Using one.** One thread initialises each barrier (``mbarrier_init``) with the number of arrivals a phase needs;
then ``fence_proxy_async()`` and ``cuda.syncthreads()`` make it visible to every thread and to the copy engine,
before anyone arrives. A producer that starts a bulk copy of ``n`` bytes calls ``mbarrier_arrive_expect_tx(bar, i,
n)`` (one arrival, and ``n`` bytes to wait for) and then ``copy_bulk``, whose completion subtracts the bytes. A
consumer calls ``mbarrier_wait(bar, i, parity)`` and finds the bytes in shared memory.

**Tiles by the tensor-memory accelerator (TMA).** ``copy_bulk`` moves contiguous bytes; ``copy_tile`` moves a whole
``rows × cols`` box of a row-major matrix, described by a *tensor map* made on the host (``tensor_map_2d``: the
matrix's address, shape and row stride, the box, and the layout to write — plain, or the 128-byte swizzle that
``wgmma`` reads, each 128-byte row's 16-byte chunks permuted by address bits 7–9). The copy engine walks the box
itself, fills what lies outside the matrix with zeros, and completes ``rows × cols × 4`` bytes on the barrier —
outside parts included. CUDA C passes the map as a ``__grid_constant__`` kernel parameter; Numba has none, and
PTX accepts a map in global memory, so the map is a 16-element ``uint64`` device array, read by the copy engine
through the tensor-map proxy: a kernel calls ``tensor_map_acquire(map)`` once, in the thread that will issue the
copies, before the first one.

**Rules** (the PTX ISA's): a bulk copy moves a multiple of 16 bytes, between 16-byte-aligned addresses; the
barrier is 8-byte aligned (a ``uint64`` shared array is); the phase a waiter names is the one it expects to complete,
so the k-th time a stage is filled its waiters use parity k % 2.

**A missed arrival must not hang the machine.** ``mbarrier_wait`` gives up after :data:`WAIT_LIMIT_NS` of
``%globaltimer`` and executes ``trap``: the launch fails (``CUDA_ERROR_LAUNCH_FAILED``) instead of spinning forever.
``%globaltimer`` is wall-clock time — it runs on while a debugger holds the kernel or another process's work has the
GPU (time-slicing), and no clock an SM reads pauses for those — so the limit is long (30 s; a real wait lasts
microseconds) and a setting: ``GEMM_STEPS_MBARRIER_TIMEOUT_S`` (seconds; ``0``: no limit, for a debugger session),
read when the toolkit is imported and compiled into the kernels (a kernel kept on disk is compiled again when it
changes). The twin raises :class:`MbarrierTimeout` after :data:`SIMULATOR_WAIT_LIMIT_S`, naming the barrier and the
phase.

**Simulator twins.** A barrier is a Python object keyed by the shared array's buffer and the element index; the
simulated threads of a block are real threads, so a wait blocks on a condition variable. ``copy_bulk`` copies at once
and completes its bytes at once.

**Named barriers** are the SM's sixteen hardware barriers (``cuda.syncthreads()`` is barrier 0 with every thread of
the block). ``named_barrier_sync(id, count)`` arrives at barrier ``id`` and waits until ``count`` threads (a multiple
of 32, whole warps) have arrived at it; ``named_barrier_arrive(id, count)`` arrives and goes on. One warpgroup that
syncs while another arrives, 256 threads in all, is how one warpgroup waits for another's signal — CUTLASS's
ping-pong orders its two math warpgroups' main loops this way (experiments/kernels/pingpong_specialized.py). Every
thread of a warp must execute the same barrier instruction (``bar`` is ``barrier.aligned``). Unlike
``mbarrier_wait``, a ``bar.sync`` has no time limit: on a GPU a missing arrival hangs the launch; the twin raises
:class:`MbarrierTimeout` after :data:`SIMULATOR_WAIT_LIMIT_S` (and a count that differs from the one the phase in
progress started with, a :class:`RuntimeError`), so test a kernel's arrivals on the simulator first.

Needs compute capability 9.0 (``mbarrier.expect_tx``, ``try_wait`` and ``cp.async.bulk`` are sm_90; named barriers
run on every GPU the course supports).
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
from numba import cuda

from .backend import SIMULATOR

__all__ = ["mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_try_wait", "mbarrier_wait",
           "copy_bulk", "copy_tile", "tensor_map_acquire", "tensor_map_2d", "WAIT_LIMIT_NS", "SIMULATOR_WAIT_LIMIT_S",
           "MbarrierTimeout", "named_barrier_sync", "named_barrier_arrive", "NAMED_BARRIERS", "DEFAULT_WAIT_LIMIT_S",
           "wait_limit_ns"]

#: ``mbarrier_wait``'s limit on a GPU, unless ``GEMM_STEPS_MBARRIER_TIMEOUT_S`` says otherwise: far beyond any real
#: wait (microseconds) and beyond a time slice of another process, short enough that a missed arrival ends a test.
DEFAULT_WAIT_LIMIT_S = 30.0


def wait_limit_ns(setting: str | None) -> int:
    """The wait limit in nanoseconds for a ``GEMM_STEPS_MBARRIER_TIMEOUT_S`` value (None: the default; 0: none)."""
    if setting is None or not setting.strip():
        return int(DEFAULT_WAIT_LIMIT_S * 1e9)
    try:
        seconds = float(setting)
    except ValueError:
        raise ValueError(f"GEMM_STEPS_MBARRIER_TIMEOUT_S={setting!r}: give seconds (0 for no limit)") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"GEMM_STEPS_MBARRIER_TIMEOUT_S={setting!r}: give seconds >= 0 (0 for no limit)")
    return int(seconds * 1e9)


#: How long ``mbarrier_wait`` spins on a GPU before it traps, in ns of ``%globaltimer`` (0: no limit).
WAIT_LIMIT_NS = wait_limit_ns(os.environ.get("GEMM_STEPS_MBARRIER_TIMEOUT_S"))
#: How long the simulator's twin waits before it raises: its threads are slow — a waiting producer may wait for a
#: consumer's several k-tiles of 128-thread wgmma twins, 20–40 s on a loaded 2-core machine — but not this slow.
SIMULATOR_WAIT_LIMIT_S = 60.0


class MbarrierTimeout(RuntimeError):
    """An mbarrier phase never completed on the simulator: an arrival or some bytes were missing."""


#: Hardware barriers per block: ``bar.sync`` / ``bar.arrive`` take ids 0–15 (0 is ``cuda.syncthreads()``'s).
NAMED_BARRIERS = 16


def _check_named_barrier(barrier_id, count) -> None:
    """The PTX ISA's rules for ``bar.sync`` / ``bar.arrive``: id 0–15, a thread count that is a positive multiple
    of the warp size."""
    if not 0 <= int(barrier_id) < NAMED_BARRIERS:
        raise ValueError(f"named barrier id {int(barrier_id)}: the SM has barriers 0–{NAMED_BARRIERS - 1}")
    if int(count) <= 0 or int(count) % 32:
        raise ValueError(f"named barrier count {int(count)}: a positive multiple of 32 (whole warps)")


#: The simulator's tensor maps: what ``tensor_map_2d`` was told, by the key it writes into the map's first word.
_TENSOR_MAPS: dict = {}
#: The simulator's tensor maps of type TFLOAT32 (their loads are rounded to TF32), by key.
_TF32_MAPS: set = set()


def tensor_map_2d(matrix, box_rows: int, box_cols: int, swizzle_128: bool = False, tf32: bool = False,
                  pitch_bytes: int | None = None, offset_bytes: int = 0, shape: tuple | None = None):
    """The tensor map of row-major float32 device ``matrix`` (rows × cols) for ``copy_tile``: boxes of ``box_rows`` ×
    ``box_cols`` (each at most 256; ``box_cols`` × 4 bytes a multiple of 16, and exactly 128 with ``swizzle_128``),
    written to shared memory plainly or in the 128-byte swizzle layout; zeros outside the matrix. ``tf32``: the
    map's element type is ``TFLOAT32`` instead of ``FLOAT32`` — the copy engine rounds every float it loads to TF32,
    to nearest with ties to even (:func:`~.tensor_core_ops.round_to_tf32_even`, the twin's rounding), so a ``wgmma``
    reads the operand rounded, not truncated — as cuBLAS TF32 reads its operands (experiments/tf32_copies.py: the
    same reading and the same error). Returns a 16-element ``uint64`` device array holding it (keep it alive as long as
    ``matrix``). ``pitch_bytes``, ``offset_bytes``, ``shape``: a map over part of ``matrix`` — rows ``pitch_bytes``
    apart from ``offset_bytes`` on, ``shape`` rows × columns (``tensor_maps_rows_mod_4``)."""
    rows, cols = shape or matrix.shape
    pitch = pitch_bytes or cols * 4
    if not (0 < box_rows <= 256 and 0 < box_cols <= 256 and box_cols * 4 % 16 == 0):
        raise ValueError(f"box {box_rows}×{box_cols}: each side 1–256 elements, a row a multiple of 16 bytes")
    if swizzle_128 and box_cols * 4 != 128:
        raise ValueError(f"the 128-byte swizzle needs box rows of 128 bytes, not {box_cols * 4}")
    if pitch % 16:
        raise ValueError(f"a tensor map needs rows whose stride is a multiple of 16 bytes, not {pitch}")
    if SIMULATOR:
        key = len(_TENSOR_MAPS) + 1
        _TENSOR_MAPS[key] = (matrix, box_rows, box_cols, swizzle_128)
        if tf32:
            _TF32_MAPS.add(key)
        words = np.zeros(16, np.uint64)
        words[0] = key
        return cuda.to_device(words)
    from cuda.bindings import driver

    from .kernel_tools import device_pointer

    address = device_pointer(matrix) + offset_bytes
    if address % 16:
        raise ValueError("a tensor map needs a 16-byte-aligned matrix")
    swizzle = (driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B if swizzle_128
               else driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE)
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t  # cuda-bindings wants its own integer types here
    error, encoded = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 if tf32
        else driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, address, [u64(cols), u64(rows)],
        [u64(pitch)], [u32(box_cols), u32(box_rows)], [u32(1), u32(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed: {error!r} (matrix {rows}×{cols}, "
                           f"box {box_rows}×{box_cols})")
    return cuda.to_device(np.array([int(word) for word in encoded.opaque], dtype=np.uint64))


def tensor_maps_rows_mod_4(matrix, box_rows: int, box_cols: int, tf32: bool = False):
    """Four tensor maps of row-major float32 device ``matrix`` (rows × cols, cols not a multiple of 4: a row pitch the
    copy engine cannot read), one over each residue r of its rows mod 4: rows r, r + 4, r + 8, … lie 16·cols bytes
    apart — a pitch it can read. Map r starts (r · cols) % 4 floats before row r, the nearest 16-byte boundary, so
    column j of its row i is the matrix's element (r + 4i, j) at the map's column j + (r · cols) % 4; past the matrix,
    zeros. Boxes of ``box_rows`` × ``box_cols``, written plainly. Returns a 64-element ``uint64`` device array: map r
    at words 16r … 16r + 15 (each 128 bytes, as ``tensor_map_2d``'s)."""
    rows, cols = matrix.shape
    if rows < 4:
        raise ValueError(f"four residues of rows need at least 4 rows, not {rows}")
    words = []
    for r in range(4):
        shift = r * cols % 4
        residue_rows = (rows - r + 3) // 4
        if SIMULATOR:
            flat = np.asarray(matrix._ary if hasattr(matrix, "_ary") else matrix).reshape(-1)
            view = np.lib.stride_tricks.as_strided(flat[r * cols - shift:], shape=(residue_rows, cols + shift),
                                                   strides=(16 * cols, 4), writeable=False)
            words.append(tensor_map_2d(view, box_rows, box_cols, tf32=tf32, pitch_bytes=16 * cols).copy_to_host())
        else:
            words.append(tensor_map_2d(matrix, box_rows, box_cols, tf32=tf32, pitch_bytes=16 * cols,
                                       offset_bytes=4 * (r * cols - shift),
                                       shape=(residue_rows, cols + shift)).copy_to_host())
    return cuda.to_device(np.concatenate(words))


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

    def tensor_map_acquire(tensor_map):
        """Make the tensor map in global memory visible to the copy engine (simulator: it is)."""

    class _NamedBarrier:
        """One hardware barrier of one simulated block: arrivals counted per phase, a generation per completion."""

        def __init__(self):
            self.count = None  # the phase in progress's thread count (None: no phase in progress)
            self.arrived = 0
            self.generation = 0
            self.changed = threading.Condition()

        def arrive(self, barrier_id: int, count: int) -> int:
            """Count one thread in; returns the generation it arrived in (completing it if it was the last)."""
            with self.changed:
                if self.count is not None and self.count != count:
                    raise RuntimeError(f"named barrier {barrier_id}: a thread arrived with count {count} while the "
                                       f"phase in progress counts {self.count}")
                self.count = count
                self.arrived += 1
                generation = self.generation
                if self.arrived == count:
                    self.count, self.arrived = None, 0
                    self.generation += 1
                    self.changed.notify_all()
                return generation

    def _named_barrier(barrier_id, count) -> tuple:
        thread = threading.current_thread()
        if not hasattr(thread, "thread_id"):
            raise RuntimeError("named barriers belong to a block: call them from inside a kernel")
        _check_named_barrier(barrier_id, count)
        key = (tuple(thread.blockIdx), int(barrier_id))
        with _LOCK:  # one set per launch (its manager), one barrier per block and id
            barriers = thread._manager.__dict__.setdefault("_gemm_steps_named_barriers", {})
            return thread, barriers.setdefault(key, _NamedBarrier())

    def named_barrier_arrive(barrier_id, count):
        """Arrive at hardware barrier ``barrier_id`` of this block, whose phase completes at ``count`` threads; do
        not wait (simulator: a counter per block and id)."""
        _, barrier = _named_barrier(barrier_id, count)
        barrier.arrive(int(barrier_id), int(count))

    def named_barrier_sync(barrier_id, count):
        """Arrive at hardware barrier ``barrier_id`` and wait until ``count`` threads have arrived (simulator: raises
        :class:`MbarrierTimeout` after :data:`SIMULATOR_WAIT_LIMIT_S`)."""
        thread, barrier = _named_barrier(barrier_id, count)
        generation = barrier.arrive(int(barrier_id), int(count))
        deadline = time.monotonic() + SIMULATOR_WAIT_LIMIT_S
        with barrier.changed:
            while barrier.generation == generation:
                if getattr(thread, "abort", False):  # another simulated thread raised: stop waiting
                    raise RuntimeError("a simulated thread failed while this one waited at a named barrier")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise MbarrierTimeout(
                        f"named barrier {int(barrier_id)}: {barrier.arrived} of {int(count)} threads arrived in "
                        f"{SIMULATOR_WAIT_LIMIT_S:g} s — a missed bar.arrive/bar.sync or a wrong count")
                barrier.changed.wait(min(left, 0.2))

    def tensor_map_box(tensor_map):
        """What the simulator's ``tensor_map`` describes: (the matrix as a NumPy array, box rows, box columns,
        whether the box is 128-byte-swizzled in shared memory)."""
        matrix, box_rows, box_cols, swizzle_128 = _TENSOR_MAPS[int(np.asarray(tensor_map)[0])]
        return np.asarray(matrix._ary if hasattr(matrix, "_ary") else matrix), box_rows, box_cols, swizzle_128

    def box_in_shared(shared, to, elements, swizzle_128):
        """The indices into ``shared`` of a box's ``elements`` floats, row-major, from ``shared[to]`` on — through
        the 128-byte swizzle by shared address if asked (address bits 4–6 XOR bits 7–9): where the copy engine writes
        a loaded box and reads a stored one."""
        from .warpgroup_ops import shared_address

        start = int(shared_address(shared, 0))
        linear = int(shared_address(shared, to)) + np.arange(elements) * 4  # each float's address, row-major
        if swizzle_128:
            linear = linear ^ (((linear >> 7) & 7) << 4)
        return (linear - start) // 4

    def box_inside(row, col, box_rows, box_cols, shape):
        """The part of the box at (``row``, ``col``) that lies inside a matrix of ``shape``: (its rows and columns
        in the matrix, the same in the box), as slices (empty where nothing is inside)."""
        r0, c0 = int(row), int(col)
        rows = slice(max(r0, 0), max(max(r0, 0), min(r0 + box_rows, shape[0])))
        cols = slice(max(c0, 0), max(max(c0, 0), min(c0 + box_cols, shape[1])))
        return (rows, cols), (slice(rows.start - r0, rows.stop - r0), slice(cols.start - c0, cols.stop - c0))

    def copy_tile(destination, to, tensor_map, row, col, array, index):
        """Copy the box at (``row``, ``col``) of the matrix behind ``tensor_map`` to ``destination[to:]`` — zeros
        outside the matrix, 128-byte-swizzled by shared address if the map says so — and complete its bytes on
        barrier ``array[index]`` (simulator: at once)."""
        source, box_rows, box_cols, swizzle_128 = tensor_map_box(tensor_map)
        if int(col) % 4:  # the copy engine's rule, measured: an H200 stopped a box at an 8-byte column
            raise ValueError(f"a box must start on 16 bytes of its row: column {int(col)} is {int(col) * 4 % 16} "
                             "bytes past (the GPU stops the copy with CUDA_ERROR_ILLEGAL_INSTRUCTION)")
        box = np.zeros((box_rows, box_cols), np.float32)
        in_matrix, in_box = box_inside(row, col, box_rows, box_cols, source.shape)
        box[in_box] = source[in_matrix]
        if int(np.asarray(tensor_map)[0]) in _TF32_MAPS:  # a TFLOAT32 map: the copy engine rounds what it loads
            from .tensor_core_ops import round_to_tf32_even

            box = round_to_tf32_even(box)
        np.asarray(destination)[box_in_shared(destination, to, box.size, swizzle_128)] = box.ravel()
        _barrier(array, index).complete_bytes(box.size * 4)

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from .warpgroup_ops import shared_address_value as _shared_address

    _I32, _I64 = ir.IntType(32), ir.IntType(64)

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

    #: The wait loop, one inline-assembly block: a first try, then tries until the phase completes or
    #: WAIT_LIMIT_NS of %globaltimer have passed (then ``trap``). Its branches are ``bra.uni``: every thread of a warp
    #: waits on the same phase, so ptxas may treat the loop as uniform. Written as a Python loop, the branches were
    #: divergent for ptxas, and in a kernel with ``wgmma`` it serialised the products around them (C7518).
    _WAIT_LOOP = ("{\n\t.reg .pred done;\n\t.reg .u64 start, now;\n\t"
                  "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n\t"
                  "@done bra.uni DONE_${:uid};\n\t"
                  "mov.u64 start, %globaltimer;\n"
                  "WAIT_${:uid}:\n\t"
                  "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n\t"
                  "@done bra.uni DONE_${:uid};\n\t"
                  "mov.u64 now, %globaltimer;\n\t"
                  "sub.u64 now, now, start;\n\t"
                  f"setp.lt.u64 done, now, {WAIT_LIMIT_NS};\n\t"
                  "@done bra.uni WAIT_${:uid};\n\t"
                  "trap;\n"
                  "DONE_${:uid}:\n\t}") if WAIT_LIMIT_NS else (  # no limit: try until the phase completes
                  "{\n\t.reg .pred done;\n"
                  "WAIT_${:uid}:\n\t"
                  "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n\t"
                  "@!done bra.uni WAIT_${:uid};\n\t}")

    @intrinsic
    def mbarrier_wait(typingctx, array, index, parity):
        """Wait until the phase of parity ``parity`` of barrier ``array[index]`` completes; after
        :data:`WAIT_LIMIT_NS` of waiting, ``trap`` (a missed arrival fails the launch instead of hanging it)."""
        if not (_barrier_ok(array, index) and isinstance(parity, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            bit = context.cast(builder, args[2], sig.args[2], types.uint32)
            _asm(builder, _WAIT_LOOP, "r,r,~{memory}", ir.VoidType(), [address, bit])
            return context.get_dummy_value()

        return types.void(array, index, parity), codegen

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

    def _named_barrier_intrinsic(instruction: str, doc: str):
        """``bar.sync`` / ``bar.arrive`` with the barrier id and the thread count in registers (or literals, checked
        against the ISA's rules when the kernel is compiled)."""
        @intrinsic
        def barrier(typingctx, barrier_id, count):
            if not (isinstance(barrier_id, types.Integer) and isinstance(count, types.Integer)):
                return None
            if isinstance(barrier_id, types.IntegerLiteral) and isinstance(count, types.IntegerLiteral):
                _check_named_barrier(barrier_id.literal_value, count.literal_value)

            def codegen(context, builder, sig, args):
                values = [context.cast(builder, v, t, types.uint32) for v, t in zip(args, sig.args)]
                _asm(builder, f"{instruction} $0, $1;", "r,r,~{memory}", ir.VoidType(), values)
                return context.get_dummy_value()

            return types.void(barrier_id, count), codegen

        barrier.__doc__ = doc
        return barrier

    named_barrier_sync = _named_barrier_intrinsic(
        "bar.sync", "``bar.sync id, count``: arrive at hardware barrier ``id`` and wait until ``count`` threads have "
                    "arrived (no time limit: a missing arrival hangs the launch).")
    named_barrier_arrive = _named_barrier_intrinsic(
        "bar.arrive", "``bar.arrive id, count``: arrive at hardware barrier ``id`` (whose phase completes at "
                      "``count`` threads) without waiting.")

    @intrinsic
    def tensor_map_acquire(typingctx, tensor_map):
        """``fence.proxy.tensormap::generic.acquire.sys``: the map in global memory, made visible to the copy engine's
        tensor-map reads. ``.sys``, not ``.gpu``: the map was written by the host (a copy from host memory), and the
        CUDA Programming Guide's example for a map copied from the host acquires at system scope."""
        if not (isinstance(tensor_map, types.Array) and tensor_map.dtype == types.uint64):
            return None

        def codegen(context, builder, sig, args):
            address = _global_address(context, builder, sig.args[0], args[0], context.get_constant(types.intp, 0),
                                      types.intp)
            _asm(builder, "fence.proxy.tensormap::generic.acquire.sys [$0], 128;", "l,~{memory}", ir.VoidType(),
                 [address])
            return context.get_dummy_value()

        return types.void(tensor_map), codegen

    @intrinsic
    def copy_tile(typingctx, destination, to, tensor_map, row, col, array, index):
        """``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes``: the copy engine
        moves the box at (``row``, ``col``) of the matrix behind ``tensor_map`` to ``&destination[to]`` (128-byte
        aligned; 1,024 for the swizzle) and completes the box's bytes on barrier ``array[index]``."""
        if not (isinstance(destination, types.Array) and isinstance(tensor_map, types.Array)
                and tensor_map.dtype == types.uint64 and _barrier_ok(array, index)
                and all(isinstance(x, types.Integer) for x in (to, row, col))):
            return None

        def codegen(context, builder, sig, args):
            to_address = _shared_address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            map_address = _global_address(context, builder, sig.args[2], args[2], context.get_constant(types.intp, 0),
                                          types.intp)
            inner = context.cast(builder, args[4], sig.args[4], types.int32)  # the column: the map's first dimension
            outer = context.cast(builder, args[3], sig.args[3], types.int32)
            barrier = _shared_address(context, builder, sig.args[5], args[5], args[6], sig.args[6])
            _asm(builder, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                          "[$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}", ir.VoidType(),
                 [to_address, map_address, inner, outer, barrier])
            return context.get_dummy_value()

        return types.void(destination, to, tensor_map, row, col, array, index), codegen
