"""Hopper's warpgroup MMA (``wgmma``) for Numba kernels — each operation with a plain-Python twin for the simulator.

A **warpgroup** is four consecutive warps (128 threads, warp 4q … 4q + 3). ``wgmma.mma_async`` is one operation of
the whole warpgroup: it multiplies a 64×8 TF32 tile A by an 8×N tile B and adds the product into a 64×N float32
accumulator spread over the warpgroup's registers — 64·N·8 multiply-adds in one instruction (N = 128: 65,536, the
work of 64 ``mma.sync`` of step 12). It is *asynchronous*: the instruction is issued, the warps go on, and a later
``warpgroup_wait_all`` waits for it.

==========================================  ===============================================================  ========
function                                    PTX                                                              SASS
==========================================  ===============================================================  ========
``wgmma_tf32(s, a0..a3, desc, acc, acc?)``  ``wgmma.mma_async.sync.aligned.m64n<N>k8.f32.tf32.tf32``          ``HGMMA``
``warpgroup_fence()``                       ``wgmma.fence.sync.aligned``                                     ``WARPGROUP.ARRIVE``
``warpgroup_commit()``                      ``wgmma.commit_group.sync.aligned``                              (on the HGMMA)
``warpgroup_wait_all(acc)``                 ``wgmma.wait_group.sync.aligned 0``                              ``WARPGROUP.DEPBAR``
``warpgroup_wait_but_one(acc)``             ``wgmma.wait_group.sync.aligned 1``: the newest group may still run  ``WARPGROUP.DEPBAR``
``fence_proxy_async()``                     ``fence.proxy.async.shared::cta``                                ``FENCE``
``shared_address(s, i)``                    ``cvta.to.shared`` of ``&s[i]`` (a 32-bit shared-window address)  —
``first_aligned(s, bytes)``                 the first ``j`` whose shared address ``&s[j]`` is a multiple of ``bytes``      —
``operand_bits(x)``                         ``mov.b32`` (volatile): a float's bits in a 32-bit register, for wgmma  ``MOV``
``rounded_operand_bits(x)``                 the same, rounded to TF32: ``setp.num``, ``@p add.u32`` (half a unit)  ``FSETP``, ``IADD``
``matrix_descriptor(addr, lbo, sbo)``       plain integer arithmetic: the 64-bit shared-memory matrix descriptor
``swizzled_descriptor(addr)``               the same for the 128-byte swizzle layout (``swizzled_offset``: where a chunk lies)
``zero_accumulators(n)``, ``add_accumulators(x, y)``  a tuple of n float32 zeros; x + y element by element (``add.f32``)
==========================================  ===============================================================  ========

**The operands.** A comes from *registers*: each warp w of the warpgroup holds rows 16w … 16w + 15 of the 64×8 A,
in exactly the ``mma.m16n8k8`` A layout of :mod:`.tensor_core_ops` (lane (g, t): a0 = A[g][t], a1 = A[g+8][t],
a2 = A[g][t+4], a3 = A[g+8][t+4]). B comes from *shared memory*, read by the tensor core itself and described by a
64-bit descriptor: its start address, and two strides. For TF32 the tile must be **K-major** (for each of the N
columns, its 8 k values contiguous) in "core matrices" of 8 columns × 16 bytes (4 k), 128 contiguous bytes each;
``lbo`` is the distance in bytes between core matrices adjacent in K, ``sbo`` between those adjacent in N
(experiments/wgmma_probe.py established which is which). Element (n, k) of B lies at byte
``start + (n // 8)·sbo + (k // 4)·lbo + (n % 8)·16 + (k % 4)·4``.

**The 128-byte swizzle layout** (``swizzled_descriptor``) is what step 14 uses: each row's 32 k values are one
contiguous 128-byte line, so a warp's 16-byte copies cover whole rows in global *and* in shared memory, and the
hardware permutes the 16-byte chunks of each row (byte address bits 4–6 XOR bits 7–9) so that the tensor core's
reads do not collide in banks. With the no-swizzle layout the copies' shared destinations could not follow their
global sources, and the L2 received about one 32-byte request per copy: 1.18 G requests at 8192³ against 0.30 G
swizzled, and a TF32 build ran 123 TFLOPS instead of 269 (experiments/wgmma_swapped.py).

**The accumulator** is a tuple of N / 2 float32 per thread (``zero_accumulators(N // 2)``). Thread (warp w, lane
(g, t)) holds, as its value 4j + r, element [16w + g + 8·(r // 2)][8j + 2t + r % 2] of the 64×N result.
It passes through every ``wgmma`` and through the wait, so nothing reads it before the asynchronous product has
landed. ``accumulate`` = 0 starts it afresh (the instruction's ``scale-d`` false: D = A·B).

**Rules the kernel must keep** (the PTX ISA's, and one we measured):

* ``warpgroup_fence()`` between writing registers a ``wgmma`` reads (its A fragments, the accumulator) and the
  ``wgmma`` — and *no* write to them after the fence. A float handed to ``wgmma_tf32`` needs a ``mov.b32`` into an
  integer register, which the compiler is free to place after the fence (step 14's did: the PTX ISA forbids
  it). So a kernel turns its fragments into bits with ``operand_bits`` *before* ``warpgroup_fence()``: that
  ``mov`` is a volatile instruction, kept in program order with the fence. :func:`gemm_steps.harness.ptx.\
  wgmma_fence_violations` checks every kernel's PTX for such writes;
* a swizzled tile starts at a **1,024-byte-aligned** shared address: the hardware XORs address bits 4–6 with bits
  7–9, so the pattern repeats every 1,024 bytes *of address*, not of offset into an array. Numba declares the
  dynamic shared array ``.align 16``, and any static shared array (an ``mbarrier``, say) is placed before it and moves
  it (0x400 → 0x410 for one 8-byte array). ``tiles[first_aligned(tiles, 1024):]`` is the view of ``tiles`` that
  starts at the first aligned address; the kernel allocates 1,024 bytes of slack for it;
* ``fence_proxy_async()`` after ordinary stores to shared memory that a ``wgmma`` will read (``cp.async`` copies
  included), before the barrier that makes them visible;
* the A fragment registers must not change until a wait has retired the ``wgmma`` reading them — and ptxas does
  not see to it: loading the next k-tile's fragments while this one's ``wgmma`` ran gave wrong results
  (experiments/wgmma_swapped.py: the next ``LDS`` wrote the registers an in-flight ``HGMMA`` read). So a kernel
  never loads into registers an unretired ``wgmma`` reads: steps 14–15 and 18 wait for all their ``wgmma``
  (``warpgroup_wait_all``) before loading the next k-tile's fragments; steps 16, 17 and 19 keep two fragment sets,
  load k-tile u into set u % 2 and, after issuing it, wait for all groups but the newest
  (``warpgroup_wait_but_one``), which retires k-tile u − 1's ``wgmma`` before k-tile u + 1 loads into its set.

**TF32.** The tensor core reads the top 19 bits of each float32 it is given (sign, exponent, 10 mantissa bits):
truncation. The twin does the same (:func:`.tensor_core_ops.truncate_to_tf32`).

**Simulator twins.** ``wgmma_tf32``'s twin is a warpgroup collective like ``mma_tf32``'s: the 128 threads deposit
their fragments and accumulators, the last to arrive assembles A from the fragments, reads B from the shared array
through the descriptor (``shared_address`` is the byte offset into the array there), computes the product once in
float64 and hands every thread its values back. The fences, the commit and the wait are no-ops: the twin's product
is done when it returns. Kernels pass the shared array ``s`` to ``wgmma_tf32`` for the twin's sake; on a GPU the
argument is unused. The twin models shared addresses as the hardware has them: an array starts at
``simulated_shared_base()`` (0x400 unless a test moves it, as static shared memory would on a GPU), so a swizzled
tile that is not 1,024-byte aligned is read wrong there too. Like the mma twin, the twin rounds once per product where the hardware truncates its running
sum (lesson 13): it checks layouts and descriptors, not the hardware's rounding.

Needs compute capability 9.0 (``sm_90a``): numba-cuda 0.30 compiles for ``sm_90a`` on an H100/H200.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import cuda, uint32, uint64

from .backend import SIMULATOR
from .tensor_core_ops import round_to_tf32, truncate_to_tf32

__all__ = ["wgmma_tf32", "warpgroup_fence", "warpgroup_commit", "warpgroup_wait_all", "warpgroup_wait_but_one",
           "fence_proxy_async", "registers_raise_to", "registers_lower_to",
           "shared_address", "first_aligned", "operand_bits", "matrix_descriptor", "swizzled_descriptor",
           "swizzled_offset", "operand_byte", "zero_accumulators", "add_accumulators", "WARPGROUP_THREADS",
           "SWIZZLE_ALIGN", "wgmma_tf32_reference", "simulated_shared_base", "check_register_handoff",
           "registers_at_entry"]

#: Threads in a warpgroup: four warps.
WARPGROUP_THREADS = 128


#: Registers an SM holds, and the granularity a thread's count comes in (a warp gets them in 256s).
SM_REGISTERS, REGISTER_STEP = 65536, 8


def registers_at_entry(threads: int, blocks_per_sm: int = 1) -> int:
    """The registers per thread ptxas gives a kernel launched with ``launch_bounds(threads, blocks_per_sm)`` when
    it uses ``setmaxnreg`` (the cap: 65,536 / 384 → 168 for three warpgroups; CUTLASS's and cuBLAS's warp-specialized
    kernels show the same 168 at entry)."""
    return min(255, SM_REGISTERS // (threads * blocks_per_sm) // REGISTER_STEP * REGISTER_STEP)


def check_register_handoff(threads: int, roles: list[tuple[int, int]], at_entry: int) -> None:
    """Raise unless the registers the roles ask for fit the block's pool.

    ``setmaxnreg.inc`` draws from a pool kept *per CTA* — the block's ``threads × at_entry`` registers at launch, plus
    what ``setmaxnreg.dec`` gave back — and "blocks the execution until enough registers are available in the CTA's
    register pool" (PTX ISA, setmaxnreg). Asking for more than the pool holds is no error and no trap: the raising
    warpgroups wait forever. So the check is against the pool the launch really gets, not the SM's 65,536: with 384
    threads at 168 a thread the pool is 64,512, and 128 × 32 + 256 × 240 = 65,536 would hang. ``roles``: (threads,
    registers per thread after the hand-off) for each role."""
    pool = threads * at_entry
    asked = sum(role_threads * registers for role_threads, registers in roles)
    if sum(role_threads for role_threads, _ in roles) != threads:
        raise ValueError(f"the roles have {sum(t for t, _ in roles)} threads, the block {threads}")
    if asked > pool:
        shares = " + ".join(f"{t} × {r}" for t, r in roles)
        raise ValueError(f"setmaxnreg: the roles ask for {shares} = {asked:,} registers, but the block's pool holds "
                         f"{threads} × {at_entry} = {pool:,} (registers at entry); setmaxnreg.inc would wait for the "
                         f"missing {asked - pool:,} forever")


def _check_register_count(count) -> None:
    """``setmaxnreg`` takes 24 to 256 registers per thread, in steps of 8 (PTX ISA)."""
    if not (isinstance(count, int) and 24 <= count <= 256 and count % 8 == 0):
        raise ValueError(f"setmaxnreg needs a register count from 24 to 256, a multiple of 8, not {count!r}")

#: Where a 128-byte-swizzled tile must start: the swizzle pattern repeats every 8 rows of 128 bytes of *address*.
SWIZZLE_ALIGN = 1024

#: Where the simulator's twins place a shared array's first byte (:func:`simulated_shared_base`). On an H100 the
#: dynamic shared array of a kernel with no static shared memory starts at 0x400, after 1 KB the system reserves.
_simulated_base = [0x400]


class simulated_shared_base:
    """The shared address at which the simulator's twins place every shared array: ``simulated_shared_base()`` reads
    it; ``with simulated_shared_base(0x410): …`` moves it for a block of code (as an 8-byte static array before the
    dynamic one moves it on a GPU) and puts it back after."""

    def __init__(self, base: int | None = None):
        self._base = base
        self._saved = None

    def __enter__(self):
        self._saved = _simulated_base[0]
        _simulated_base[0] = int(self._base)
        return self

    def __exit__(self, *exc):
        _simulated_base[0] = self._saved
        return False

    def __int__(self) -> int:
        return _simulated_base[0]

    def __index__(self) -> int:
        return _simulated_base[0]


@cuda.jit(device=True, inline=True)
def matrix_descriptor(address, leading_bytes, stride_bytes):
    """The 64-bit ``wgmma`` descriptor of a no-swizzle shared-memory tile at 32-bit shared ``address``: address,
    ``leading_bytes`` (between core matrices adjacent in K) and ``stride_bytes`` (adjacent in N), each in 16-byte
    units, in bits 0–13, 16–29 and 32–45."""
    return ((uint64(address & 0x3FFFF) >> uint64(4)) | (uint64(leading_bytes >> 4) << uint64(16))
            | (uint64(stride_bytes >> 4) << uint64(32)))


@cuda.jit(device=True, inline=True)
def swizzled_descriptor(address):
    """The descriptor of a K-major tile in the **128-byte swizzle** layout at 32-bit shared ``address``: each row (n)
    128 contiguous bytes of k (32 TF32 values), its eight 16-byte chunks permuted — chunk c of row n lies at slot
    c XOR (n % 8) — and groups of 8 rows 1,024 bytes apart (the stride, bits 32–45; the leading offset is unused
    there); layout type 1 in bits 62–63. The tile must start 1,024-byte aligned; a k-step's slice starts 32 bytes
    (8 values) further along the row, swizzled by the hardware like every other address."""
    return ((uint64(address & 0x3FFFF) >> uint64(4)) | (uint64(1) << uint64(16)) | (uint64(1024 >> 4) << uint64(32))
            | (uint64(1) << uint64(62)))


@cuda.jit(device=True, inline=True)
def swizzled_offset(row, chunk):
    """Where chunk ``chunk`` (16 bytes: 4 TF32 values along k) of row ``row`` lies in a 128-byte-swizzled tile, in
    floats from the tile's start: row·32 + (chunk XOR row % 8)·4 — what the tensor core reads through
    :func:`swizzled_descriptor`."""
    return row * 32 + (chunk ^ (row % 8)) * 4


@cuda.jit(device=True, inline=True)
def first_aligned(array, alignment):
    """The index of the first element of shared float32 ``array`` whose shared address is a multiple of
    ``alignment`` bytes (a power of two): fewer than alignment / 4. ``tiles[first_aligned(tiles, 1024):]`` is the
    view that starts there; leave that much slack."""
    address = shared_address(array, 0)
    return (uint32(alignment) - address % uint32(alignment)) % uint32(alignment) // uint32(4)


def operand_byte(n, k, descriptor: int):
    """Where ``wgmma`` reads element (n, k) (k < 8) of its shared-memory operand through ``descriptor``, in bytes
    (ints or NumPy arrays): no swizzle — core matrices, ``start + (n // 8)·sbo + (k // 4)·lbo + (n % 8)·16 +
    (k % 4)·4``; 128-byte swizzle — row n's 128-byte line, ``start + (n // 8)·sbo + (n % 8)·128 + k·4``, with
    address bits 4–6 XOR bits 7–9. What the twin reads, and what lesson 14 draws."""
    descriptor = int(descriptor)
    start = (descriptor & 0x3FFF) << 4
    leading, stride = ((descriptor >> 16) & 0x3FFF) << 4, ((descriptor >> 32) & 0x3FFF) << 4
    layout = (descriptor >> 62) & 3
    if layout == 0:
        return start + n // 8 * stride + k // 4 * leading + n % 8 * 16 + k % 4 * 4
    if layout == 1:
        linear = start + n // 8 * stride + n % 8 * 128 + k * 4
        return linear ^ (((linear >> 7) & 7) << 4)
    raise NotImplementedError(f"no-swizzle and 128-byte-swizzle tiles only, not layout type {layout}")


def wgmma_tf32_reference(fragments: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy: the 64×N product one ``wgmma_tf32`` computes, from the 128 threads' (a0, a1, a2, a3) (a 128×4 array,
    thread order) and B (8×N), both read as TF32 (truncated), summed in float64."""
    thread = np.arange(WARPGROUP_THREADS)
    rows, group, pair = thread // 32 * 16 + thread % 32 // 4, thread % 32 // 4, thread % 4
    del group
    a = np.zeros((64, 8), np.float32)
    a[rows, pair], a[rows + 8, pair] = fragments[:, 0], fragments[:, 1]
    a[rows, pair + 4], a[rows + 8, pair + 4] = fragments[:, 2], fragments[:, 3]
    return truncate_to_tf32(a).astype(np.float64) @ truncate_to_tf32(np.asarray(b, np.float32)).astype(np.float64)


def _accumulator_positions(count: int):
    """(row, col) in the 64 × 2·count result of each thread's accumulator value 4j + r, as two 128 × count arrays."""
    thread = np.arange(WARPGROUP_THREADS)[:, None]
    value = np.arange(count)[None, :]
    j, r = value // 4, value % 4
    rows = thread // 32 * 16 + thread % 32 // 4 + 8 * (r // 2)
    cols = 8 * j + 2 * (thread % 4) + r % 2
    return rows, cols


if SIMULATOR:
    from .tensor_core_ops import _group_exchange

    def warpgroup_fence():
        """Order register writes before the ``wgmma`` that read them (simulator: nothing to order)."""

    def warpgroup_commit():
        """Close a group of ``wgmma`` (simulator: they are done already)."""

    def warpgroup_wait_all(acc):
        """Wait for every ``wgmma`` of this warpgroup; the accumulators pass through (simulator: done already)."""
        return acc

    def warpgroup_wait_but_one(acc):
        """Wait for all but the newest group of ``wgmma``; the accumulators pass through (simulator: done)."""
        return acc

    def fence_proxy_async():
        """Make shared-memory stores visible to the tensor core's reads (simulator: they are)."""

    def registers_raise_to(count):
        """This warpgroup's registers per thread rise to ``count`` (simulator: nothing to allocate)."""
        _check_register_count(count)

    def registers_lower_to(count):
        """This warpgroup's registers per thread fall to ``count`` (simulator: nothing to free)."""
        _check_register_count(count)

    def _byte_offset(array) -> int:
        """Where ``array`` (a shared array, or a view of one) starts in the buffer it views, in bytes."""
        buffer = np.asarray(array)
        while isinstance(buffer.base, np.ndarray):
            buffer = buffer.base
        return np.asarray(array).__array_interface__["data"][0] - buffer.__array_interface__["data"][0]

    def shared_address(array, index):
        """The shared address of ``array[index]`` (simulator: the array's buffer starts at
        ``simulated_shared_base()``; the descriptors' addresses index into the array the kernel passes to
        ``wgmma_tf32``)."""
        return np.uint32(_simulated_base[0] + _byte_offset(array) + int(index) * np.asarray(array).itemsize)

    def operand_bits(x):
        """The bits of float32 ``x`` as a uint32, for a ``wgmma`` operand register (simulator: a NumPy view)."""
        return np.float32(x).view(np.uint32)

    def rounded_operand_bits(x):
        """``x`` rounded to TF32 as the tensor core will read it, as a uint32 operand register (simulator: the
        bits of ``to_tf32(x)``: the GPU leaves the low 13 bits for the tensor core to drop, the twin clears them)."""
        return round_to_tf32(np.float32(x)).view(np.uint32)[()]

    def zero_accumulators(count):
        """A tuple of ``count`` float32 zeros."""
        return (np.float32(0.0),) * int(count)

    def add_accumulators(x, y):
        """x + y element by element, in float32."""
        return tuple(np.float32(p + q) for p, q in zip(x, y))

    def _warpgroup_product(slots) -> list:
        fragments = np.array([[np.asarray(x).view(np.float32) if np.asarray(x).dtype == np.uint32 else x
                               for x in slot[0]] for slot in slots], dtype=np.float32)  # 128 × 4, bits or floats
        shared, descriptor, accumulate = slots[0][1], int(slots[0][2]), slots[0][4]
        count = len(slots[0][3])
        byte = operand_byte(np.arange(2 * count)[:, None], np.arange(8)[None, :], descriptor)  # N × 8
        start = int(shared_address(shared, 0))  # the array's first byte, as the descriptor's address counts
        if (byte < start).any() or ((byte - start) // 4 >= np.asarray(shared).size).any():
            raise IndexError("wgmma_tf32: the descriptor points outside the shared array passed to it")
        b = np.asarray(shared)[(byte - start) // 4].astype(np.float32).T  # 8 × N
        product = wgmma_tf32_reference(fragments, b)
        rows, cols = _accumulator_positions(count)
        if accumulate:
            product[rows, cols] += np.array([slot[3] for slot in slots], dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            return [tuple(np.float32(v) for v in row) for row in product[rows, cols].astype(np.float32)]

    def wgmma_tf32(shared, a0, a1, a2, a3, descriptor, acc, accumulate):
        """The warpgroup's acc (+)= A·B, A from the fragments a0 … a3, B from ``shared`` through ``descriptor``
        (simulator: the 128 threads meet, and the product is computed once in float64). Returns this thread's
        accumulator."""
        thread = threading.current_thread()
        if not hasattr(thread, "thread_id"):
            raise RuntimeError("wgmma_tf32 is a warpgroup operation: call it from inside a kernel")
        member = thread.thread_id % WARPGROUP_THREADS
        results = _group_exchange(thread, WARPGROUP_THREADS).deposit_and_wait(
            thread, member, ((a0, a1, a2, a3), shared, descriptor, tuple(acc), int(accumulate)), _warpgroup_product)
        return results[member]


else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from .intrinsics import _void_asm

    _F32, _I32, _I64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)

    def _set_max_registers(action: str, doc: str):
        """``setmaxnreg.{inc,dec}.sync.aligned.u32 count``: ``count`` a compile-time integer, 24–256, a multiple of 8."""
        @intrinsic
        def set_max(typingctx, count):
            if not isinstance(count, types.IntegerLiteral):
                return None
            _check_register_count(count.literal_value)
            text = f"setmaxnreg.{action}.sync.aligned.u32 {count.literal_value};"

            def codegen(context, builder, sig, args):
                builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}", side_effect=True), [])
                return context.get_dummy_value()

            return types.void(count), codegen

        set_max.__doc__ = doc
        return set_max

    registers_raise_to = _set_max_registers("inc", "``setmaxnreg.inc``: this warpgroup's registers rise to count.")
    registers_lower_to = _set_max_registers("dec", "``setmaxnreg.dec``: this warpgroup's registers fall to count.")

    warpgroup_fence = _void_asm("wgmma.fence.sync.aligned;", "``wgmma.fence``: order register writes before wgmma.")
    warpgroup_commit = _void_asm("wgmma.commit_group.sync.aligned;", "``wgmma.commit_group``: close a group.")
    fence_proxy_async = _void_asm("fence.proxy.async.shared::cta;",
                                  "``fence.proxy.async``: shared-memory stores → visible to the tensor core.")

    def _is_accumulator(value) -> bool:
        return isinstance(value, types.UniTuple) and value.dtype == types.float32

    def _tied_asm(text: str, count: int, extra_types: list, extra_constraints: str):
        """Inline asm whose ``count`` accumulators go in and come out in the same registers (tied operands)."""
        result = ir.LiteralStructType([_F32] * count)
        outputs = ",".join(["=f"] * count)
        tied = ",".join(str(i) for i in range(count))
        constraints = ",".join(filter(None, [outputs, extra_constraints, tied, "~{memory}"]))
        return result, ir.InlineAsm(ir.FunctionType(result, extra_types + [_F32] * count), text, constraints,
                                    side_effect=True)

    def _unpack(builder, value, count):
        return [builder.extract_value(value, i) for i in range(count)]

    def _wait_group(pending: int, doc: str):
        """The intrinsic ``wgmma.wait_group.sync.aligned pending``, the accumulators passing through it (tied)."""
        @intrinsic
        def wait(typingctx, acc):
            if not _is_accumulator(acc):
                return None
            count = acc.count

            def codegen(context, builder, sig, args):
                _, call = _tied_asm(f"wgmma.wait_group.sync.aligned {pending};", count, [], "")
                out = builder.call(call, _unpack(builder, args[0], count))
                return context.make_tuple(builder, sig.return_type, _unpack(builder, out, count))

            return acc(acc), codegen

        wait.__doc__ = doc
        return wait

    warpgroup_wait_all = _wait_group(0, "``wgmma.wait_group.sync.aligned 0``: every wgmma of this warpgroup is done; "
                                        "``acc`` passes through it.")
    warpgroup_wait_but_one = _wait_group(1, "``wgmma.wait_group.sync.aligned 1``: every group of this warpgroup but the "
                                            "newest is done (the registers those read are free again); ``acc`` passes "
                                            "through, still being written by the newest group.")

    @intrinsic
    def wgmma_tf32(typingctx, shared, a0, a1, a2, a3, descriptor, acc, accumulate):
        """``wgmma.mma_async.sync.aligned.m64n<N>k8.f32.tf32.tf32`` with A from registers (four float32, or their
        ``operand_bits``), B through ``descriptor``, N = 2 · len(acc); ``accumulate`` 0: acc = A·B. ``shared`` is
        unused here (the simulator's twin reads it)."""
        if not (_is_accumulator(acc) and isinstance(descriptor, types.Integer) and isinstance(accumulate, types.Integer)
                and (all(isinstance(x, types.Float) for x in (a0, a1, a2, a3))
                     or all(isinstance(x, types.Integer) and x.bitwidth == 32 for x in (a0, a1, a2, a3)))):
            return None
        count = acc.count
        registers = ", ".join(f"${i}" for i in range(count))
        text = ("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, $" + str(count + 5) + ", 0;\n\t"  # one instruction a line
                f"wgmma.mma_async.sync.aligned.m64n{2 * count}k8.f32.tf32.tf32 {{{registers}}}, "
                f"{{${count}, ${count + 1}, ${count + 2}, ${count + 3}}}, ${count + 4}, p, 1, 1;\n\t}}")

        def codegen(context, builder, sig, args):
            _, call = _tied_asm(text, count, [_I32] * 4 + [_I64, _I32], "r,r,r,r,l,r")
            # Fragments as bits (operand_bits: already in integer registers) or as floats (bitcast here, which the
            # compiler may place after the fence: prefer operand_bits before warpgroup_fence()).
            bits = [v if isinstance(t, types.Integer) else builder.bitcast(context.cast(builder, v, t, types.float32), _I32)
                    for v, t in zip(args[1:5], sig.args[1:5])]
            descriptor_value = context.cast(builder, args[5], sig.args[5], types.uint64)
            flag = context.cast(builder, args[7], sig.args[7], types.int32)
            out = builder.call(call, [*bits, descriptor_value, flag, *_unpack(builder, args[6], count)])
            return context.make_tuple(builder, sig.return_type, _unpack(builder, out, count))

        return acc(shared, a0, a1, a2, a3, descriptor, acc, accumulate), codegen

    @intrinsic
    def operand_bits(typingctx, x):
        """``mov.b32 r, f`` as a volatile instruction: float32 ``x``'s bits in a 32-bit register, written where the
        kernel says (before ``wgmma.fence``), not where the compiler would sink a plain bitcast (after it)."""
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[0], sig.args[0], types.float32)
            move = ir.InlineAsm(ir.FunctionType(_I32, [_F32]), "mov.b32 $0, $1;", "=r,f", side_effect=True)
            return builder.call(move, [value])

        return types.uint32(x), codegen

    @intrinsic
    def rounded_operand_bits(typingctx, x):
        """float32 ``x`` rounded to TF32 in a 32-bit operand register, in two instructions: half a TF32 unit added to
        its bits unless it is NaN (``setp.num``, ``@p add.u32``: ``FSETP`` and a predicated ``IADD``), the low 13 bits
        left as they are — the tensor core drops them, so it reads what ``cvt.rna.tf32.f32`` would have given
        (which also clears them: ``cvt.rna`` is three SASS instructions before a ``wgmma``). Volatile, like
        :func:`operand_bits`, so it stays before ``wgmma.fence``."""
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[0], sig.args[0], types.float32)
            text = ("{\n\t.reg .pred number;\n\tmov.b32 $0, $1;\n\tsetp.num.f32 number, $1, $1;\n\t"
                    "@number add.u32 $0, $0, 4096;\n\t}")
            rounding = ir.InlineAsm(ir.FunctionType(_I32, [_F32]), text, "=r,f", side_effect=True)
            return builder.call(rounding, [value])

        return types.uint32(x), codegen

    def shared_address_value(context, builder, array_type, array, index, index_type):
        """Code for the 32-bit shared-window address of ``array[index]`` (``cvta.to.shared``), inside an intrinsic's
        codegen (the toolkit's other intrinsics that take shared addresses use it too)."""
        data = context.make_array(array_type)(context, builder, array).data
        offset = context.cast(builder, index, index_type, types.int64)
        generic = builder.ptrtoint(builder.gep(data, [offset], inbounds=True), _I64)
        convert = ir.InlineAsm(ir.FunctionType(_I64, [_I64]), "cvta.to.shared.u64 $0, $1;", "=l,l")
        return builder.trunc(builder.call(convert, [generic]), _I32)

    @intrinsic
    def shared_address(typingctx, array, index):
        """The 32-bit shared-window address of ``array[index]`` (``cvta.to.shared``)."""
        if not isinstance(index, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            return shared_address_value(context, builder, sig.args[0], args[0], args[1], sig.args[1])

        return types.uint32(array, index), codegen

    @intrinsic
    def zero_accumulators(typingctx, count):
        """A tuple of ``count`` float32 zeros (``count`` a compile-time constant)."""
        if not isinstance(count, types.IntegerLiteral):
            return None
        tuple_type = types.UniTuple(types.float32, count.literal_value)

        def codegen(context, builder, sig, args):
            return context.make_tuple(builder, sig.return_type, [ir.Constant(_F32, 0.0)] * tuple_type.count)

        return tuple_type(count), codegen

    @intrinsic
    def add_accumulators(typingctx, x, y):
        """x + y element by element (``add.f32``, rounded to nearest)."""
        if not (_is_accumulator(x) and x == y):
            return None

        def codegen(context, builder, sig, args):
            return context.make_tuple(builder, sig.return_type, [
                builder.fadd(p, q) for p, q in zip(_unpack(builder, args[0], x.count), _unpack(builder, args[1], x.count))])

        return x(x, y), codegen
