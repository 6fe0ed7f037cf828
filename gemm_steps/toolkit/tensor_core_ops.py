"""Tensor-core operations for Numba kernels — each with a plain-Python twin, so one kernel source runs on the simulator.

Numba has no tensor-core API. These functions emit the PTX instructions as inline assembly through
:func:`numba.cuda.extending.intrinsic`, the same way as :mod:`gemm_steps.toolkit.intrinsics`:

==========================================  ===========================================================  ==========
function                                    PTX                                                          SASS
==========================================  ===========================================================  ==========
``to_tf32(x)``                              ``cvt.rna.tf32.f32`` (round to nearest, ties away from 0)    2–3 ALU ops
``split_tf32(x)``                           ``add``, ``and`` (big), ``sub.f32`` (small = x − big)        3 ops
``split_tf32_scaled(x)``                    the same, then ``mul.f32``: small·2^11 (exact)               4 ops
``mma_tf32(a0..a3, b0, b1, c0..c3)``        ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``        ``HMMA.1688``
``load_matrix_x4(shared, i)``               ``ldmatrix.sync.aligned.m8n8.x4.shared.b16``                  ``LDSM.16.M88.4``
``copy_async_commit()``                     ``cp.async.commit_group``                                    ``LDGDEPBAR``
``copy_async_wait(n)``                      ``cp.async.wait_group n`` (n a literal)                      ``DEPBAR``
``copy_async_or_zero(s, j, m, r, c, R, C)`` ``cp.async.ca.shared.global [s+j], [m+r*C+c], 4, size``       ``LDGSTS``
``copy_async_at_or_zero(s, j, m, i, inside)``  the same for element ``m[i]`` (a 32-bit index) where ``inside``   ``LDGSTS``
==========================================  ===========================================================  ==========

**What one ``mma_tf32`` computes.** A *warp* — 32 threads — multiplies a 16×8 tile of A by an 8×8 tile of B and
adds a 16×8 tile of C: D = A·B + C, 16·8·8 = 1,024 multiply-adds (2,048 FLOPs) in one instruction. No thread
holds a whole matrix: each lane passes 4 elements of A, 2 of B and 4 of C and gets back 4 of D. Which ones is
fixed by the hardware (the PTX ISA's "matrix fragments for mma.m16n8k8", .tf32). With ``group = lane // 4`` and
``pair = lane % 4``:

* A (16×8, row-major): ``a0 = A[group][pair]``, ``a1 = A[group + 8][pair]``, ``a2 = A[group][pair + 4]``,
  ``a3 = A[group + 8][pair + 4]``;
* B (8×8, K×N): ``b0 = B[pair][group]``, ``b1 = B[pair + 4][group]``;
* C and D (16×8): ``c0 = C[group][2·pair]``, ``c1 = C[group][2·pair + 1]``, ``c2 = C[group + 8][2·pair]``,
  ``c3 = C[group + 8][2·pair + 1]``.

Every lane of the warp must call it together (``.sync.aligned``), with the same instruction: it is one operation
of the warp, not 32 of threads.

**Loading an A fragment in one instruction.** ``load_matrix_x4`` is ``ldmatrix``: a warp reads four 8×8 matrices of
16-bit values from shared memory, each row 16 bytes. Lanes 8q … 8q + 7 give the addresses of matrix q's rows 0 … 7
(every lane passes one row address), and lane t gets back, from each matrix q, the 32 bits at bytes
4·(t % 4) … 4·(t % 4) + 3 of row t // 4. Read as float32, a matrix is 8 rows × 4 floats and lane (group, pair)
gets its element [group][pair] — so with rows 0–7 / 8–15 of an A piece at k 0–3 / 4–7 as the four matrices, one
call returns exactly a0, a1, a2, a3, in the four consecutive registers the ``mma`` reads, for one instruction
instead of four scalar loads.

**TF32** is float32 with the mantissa cut from 23 bits to 10 (8 exponent bits, like float32: the same range). The
tensor core reads only the sign, the exponent and the top 10 mantissa bits of each A and B element (it
truncates); ``to_tf32`` rounds a float32 to the nearest TF32 value first (PTX's ``.rna``: round to
nearest, ties away from zero), which halves the error of simply dropping the bits. A TF32 product has
at most 22 significant bits, so it is exact in float32; the products are summed in float32.

**A cheaper split for 3xTF32.** Alone, ``cvt.rna.tf32.f32`` is three SASS instructions on an H100 (an inf/NaN
test, a predicated add of half a TF32 unit to the bits, an AND that clears the 13 low bits). The tensor core ignores
those 13 bits: one warp's mma gave bit-identical results on raw float32 operands and on the same operands with the
low bits cleared (50 of 50 random tiles, experiments/results/experiment-tf32-conversion-first-nvidia-h100.json), and ptxas
knows it — before an mma it drops the AND, so step 12's roundings are two instructions each. 3xTF32 needs more:
``big`` must be an exact TF32 value, since ``small = x − big`` is computed from it, and ``small`` goes to the mma.
``split_tf32(x)`` does it in three instructions instead of seven: ``big`` = the bits plus half a TF32 unit, low 13
bits cleared (``cvt.rna``'s rounding for finite x, without its inf/NaN test), ``small = x − big`` (exact), left
for the tensor core to truncate. Without the test, a NaN whose top mantissa bits are all 1 (the GPU's own NaN is
0x7FFFFFFF) carries into the sign and ``big`` comes out ±0 — but then ``small = NaN − big`` is NaN, and the NaN
still reaches every output through the small·big product.

**Keeping float32's range: ``split_tf32_scaled``.** ``small`` is at most 2^-11·|x| (big is x rounded to nearest),
so for |x| below about 2^-115 it falls under float32's (and TF32's) smallest normal number, 2^-126, where the
tensor core reads it to a fixed 2^-136 instead of to 11 bits: a whole matrix scaled by 2^-120 lost up to ~60× in
accuracy against SGEMM (issue 25). ``split_tf32_scaled`` returns ``small·2^11`` instead — exact (a power of two),
never larger than |x|, so normal whenever x is, down to |x| = 2^-124 — and the kernel multiplies the sum of the
small products by 2^-11 once (``SMALL_SCALE``; docs/fp32_contract.md). One ``mul.f32`` per split element.

**Simulator twins.** On Numba's simulator each thread is a Python thread. ``mma_tf32``'s twin is a real warp
collective: every lane deposits its fragments and waits for the other 31 lanes of its warp; the last to arrive
assembles the warp's 16×8 and 8×8 tiles from the fragments laid out as above, computes the product once, and every
lane takes its four outputs — so a kernel whose lanes pass the wrong elements
gives wrong answers on the simulator too, and the fragment layout is checked on both. ``to_tf32``'s twin rounds
the bits exactly as ``cvt.rna.tf32.f32`` does. The asynchronous copies happen at once there (commit and wait are
no-ops), which is why a missing wait or barrier shows up only on a GPU (compute-sanitizer's racecheck finds it).
"""

from __future__ import annotations

import threading

import numpy as np

from .backend import SIMULATOR

__all__ = ["to_tf32", "split_tf32", "split_tf32_scaled", "split_tf32_scaled_parts", "SMALL_SCALE", "below_tf32",
           "mma_tf32", "load_matrix_x4", "copy_async_commit", "copy_async_wait",
           "copy_async_or_zero", "copy_async_at_or_zero", "truncate_to_tf32",
           "round_to_tf32", "mma_tf32_reference", "TF32_MANTISSA_BITS"]

#: Explicit mantissa bits of TF32 (float32 has 23).
TF32_MANTISSA_BITS = 10
#: What ``split_tf32_scaled`` multiplies the small part by: |small| <= 2^-11·|x|, so small·2^11 never exceeds |x|.
SMALL_SCALE = np.float32(2.0 ** 11)
_DROPPED = 23 - TF32_MANTISSA_BITS  # 13 low bits of a float32 that TF32 does not keep


def round_to_tf32(x):
    """NumPy: float32 values (array or scalar) rounded to TF32, as ``cvt.rna.tf32.f32`` does (ties away from 0).

    Adding half a TF32 unit to the bit pattern and clearing the dropped bits rounds the *magnitude* half away from
    zero (float32 is sign-magnitude); a carry into the exponent is the correct rounding up to the next binade (or
    to infinity past the largest float). NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32)
    rounded = ((bits + np.uint32(1 << (_DROPPED - 1))) & np.uint32(~((1 << _DROPPED) - 1) & 0xFFFFFFFF))
    out = np.where(np.isnan(x), x, rounded.view(np.float32))
    return out.astype(np.float32)


_HALF_UNIT = np.uint32(1 << (_DROPPED - 1))  # half a TF32 unit, in the bits
_KEPT_BITS = np.uint32(~((1 << _DROPPED) - 1) & 0xFFFFFFFF)  # sign, exponent and the 10 TF32 mantissa bits


def round_to_tf32_even(x):
    """NumPy: float32 values (array or scalar) rounded to TF32 to nearest, ties to even — what the copy engine writes
    into shared memory through a tensor map of type ``TFLOAT32`` (``mbarrier_ops.tensor_map_2d(…, tf32=True)``;
    measured on an H200: experiments/results/experiment-tf32-copies-nvidia-h200.json). NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    odd = (bits >> _DROPPED) & 1  # the last kept bit: a tie rounds to the value whose last bit is 0
    rounded = ((bits + (1 << (_DROPPED - 1)) - 1 + odd) & (~((1 << _DROPPED) - 1) & 0xFFFFFFFF)).astype(np.uint32)
    out = np.where(np.isnan(x), x, rounded.view(np.float32))
    return out.astype(np.float32)


def truncate_to_tf32(x):
    """NumPy: what the tensor core reads of float32 values (array or scalar) it is handed: sign, exponent and the top
    10 mantissa bits, the low 13 dropped (toward zero, not rounded)."""
    x = np.asarray(x, dtype=np.float32)
    return (x.view(np.uint32) & _KEPT_BITS).view(np.float32)


def split_tf32_parts(x):
    """NumPy: :func:`split_tf32`'s ``(big, small)``: ``big`` = the bits plus half a TF32 unit with the low 13 bits
    cleared (for finite x, x rounded to TF32 as ``cvt.rna`` rounds it), ``small = x − big`` in float32."""
    x = np.asarray(x, dtype=np.float32)
    big = ((x.view(np.uint32) + _HALF_UNIT) & _KEPT_BITS).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        small = (x - big).astype(np.float32)
    return big, small


def split_tf32_scaled_parts(x):
    """NumPy: :func:`split_tf32_scaled`'s ``(big, small·2^11)``: :func:`split_tf32_parts`, small scaled (exactly)."""
    big, small = split_tf32_parts(x)
    with np.errstate(invalid="ignore", over="ignore"):
        return big, (small * SMALL_SCALE).astype(np.float32)


def mma_tf32_reference(a, b, c):
    """NumPy: D = A·B + C for a 16×8 A, 8×8 B, 16×8 C, with A and B rounded to TF32 — what one ``mma_tf32`` does."""
    a64 = round_to_tf32(a).astype(np.float64)
    b64 = round_to_tf32(b).astype(np.float64)
    return (a64 @ b64 + np.asarray(c, dtype=np.float64)).astype(np.float32)


if SIMULATOR:

    def to_tf32(x):
        """``x`` rounded to TF32 (simulator: the same bit arithmetic as the hardware)."""
        return np.float32(round_to_tf32(np.float32(x))[()])

    def below_tf32(x):
        """The part of ``x`` the tensor core drops: x minus x truncated to TF32 (simulator: the same bits)."""
        x = np.float32(x)
        return np.float32(x - truncate_to_tf32(x)[()])

    def split_tf32(x):
        """``(big, small)`` with ``big`` = ``x`` rounded to TF32 and ``small = x − big`` (simulator: the same bits)."""
        big, small = split_tf32_parts(np.float32(x))
        return np.float32(big[()]), np.float32(small[()])

    def split_tf32_scaled(x):
        """``(big, small·2^11)``: :func:`split_tf32`'s parts, small scaled into TF32's normal range (simulator: the
        same bits)."""
        big, small = split_tf32_scaled_parts(np.float32(x))
        return np.float32(big[()]), np.float32(small[()])

    class _GroupExchange:
        """Where the ``size`` threads of one simulated warp (32) or warpgroup (128) meet. A call deposits into one of
        two slot lists (alternating call by call) and waits until all members have deposited; the last to arrive
        computes the group's result for every member. One barrier per call is enough, because a member can only
        deposit into a list (or find its result there) again two calls later, after every member has passed the
        barrier in between — that is, after every member has read what it needed."""

        def __init__(self, size: int = 32):
            self.size = size
            self.slots = ([None] * size, [None] * size)
            self.results = [None, None]
            self.calls = [0] * size  # per member: how many group operations it has done
            self._condition = threading.Condition()
            self._arrived = 0
            self._generation = 0

        def deposit_and_wait(self, thread, lane, values, compute) -> list:
            """Deposit this member's ``values``; return ``compute(slots)`` of the whole group (computed once)."""
            parity = self.calls[lane] % 2
            slots = self.slots[parity]
            self.calls[lane] += 1
            slots[lane] = values
            with self._condition:
                generation = self._generation
                self._arrived += 1
                if self._arrived == self.size:
                    self.results[parity] = compute(slots)
                    self._arrived = 0
                    self._generation += 1
                    self._condition.notify_all()
                    return self.results[parity]
                while generation == self._generation:
                    if getattr(thread, "abort", False):  # another simulated thread raised: stop waiting
                        raise RuntimeError("a simulated thread failed while its warp waited in a warp operation")
                    self._condition.wait(0.2)
            return self.results[parity]

    _EXCHANGES_LOCK = threading.Lock()

    def _group_exchange(thread, size: int) -> _GroupExchange:
        manager = thread._manager  # one per launch; its blocks run one after another
        key = (tuple(thread.blockIdx), thread.thread_id // size, size)
        with _EXCHANGES_LOCK:
            exchanges = manager.__dict__.setdefault("_gemm_steps_warps", {})
            if key not in exchanges:
                exchanges[key] = _GroupExchange(size)
            return exchanges[key]

    def _exchange(thread) -> _GroupExchange:
        return _group_exchange(thread, 32)

    _LANES = np.arange(32)
    _GROUP, _PAIR = _LANES // 4, _LANES % 4

    def _warp_mma(slots) -> list:
        """Every lane's (d0, d1, d2, d3), from the 32 lanes' (a0..a3, b0, b1, c0..c3): the tiles are assembled by the
        fragment layout of the module docstring, A and B read as TF32, and D = A·B + C summed in float64."""
        lanes = np.array(slots, dtype=np.float32)  # 32 × 10
        g, p = _GROUP, _PAIR
        a = np.zeros((16, 8), np.float32)
        a[g, p], a[g + 8, p], a[g, p + 4], a[g + 8, p + 4] = lanes[:, 0], lanes[:, 1], lanes[:, 2], lanes[:, 3]
        b = np.zeros((8, 8), np.float32)  # K × N: lane (group, pair) holds column `group`, k = pair and pair + 4
        b[p, g], b[p + 4, g] = lanes[:, 4], lanes[:, 5]
        c = np.zeros((16, 8), np.float32)
        c[g, 2 * p], c[g, 2 * p + 1], c[g + 8, 2 * p], c[g + 8, 2 * p + 1] = (lanes[:, 6], lanes[:, 7], lanes[:, 8],
                                                                                lanes[:, 9])
        with np.errstate(invalid="ignore", over="ignore"):
            d = (truncate_to_tf32(a).astype(np.float64) @ truncate_to_tf32(b).astype(np.float64) + c).astype(np.float32)
        return list(zip(d[g, 2 * p], d[g, 2 * p + 1], d[g + 8, 2 * p], d[g + 8, 2 * p + 1]))

    def mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        """One warp's D = A·B + C on a 16×8×8 tile (simulator: the lanes meet, and the warp's product is computed in
        float64 from the fragments they hold).

        Returns this lane's (d0, d1, d2, d3). A and B elements are read as TF32 (low 13 bits dropped, as the
        tensor core does with what it is given)."""
        thread = threading.current_thread()
        if not hasattr(thread, "thread_id"):
            raise RuntimeError("mma_tf32 is a warp operation: call it from inside a kernel")
        lane = thread.thread_id % 32
        results = _exchange(thread).deposit_and_wait(thread, lane, (a0, a1, a2, a3, b0, b1, c0, c1, c2, c3),
                                                     _warp_mma)
        return results[lane]

    def load_matrix_x4(shared, index):
        """This lane's (x0, x1, x2, x3): element [group][pair] of the four 8×4-float matrices whose rows lanes 0–31
        name, each lane passing ``index``, the float index of one 16-byte row (simulator: the lanes meet, as in
        ``mma_tf32``, to learn each other's row addresses)."""
        thread = threading.current_thread()
        if not hasattr(thread, "thread_id"):
            raise RuntimeError("load_matrix_x4 is a warp operation: call it from inside a kernel")
        lane = thread.thread_id % 32
        rows = _exchange(thread).deposit_and_wait(thread, lane, int(index), list)
        group, pair = lane // 4, lane % 4
        return tuple(np.float32(shared[rows[8 * q + group] + pair]) for q in range(4))

    def copy_async_commit():
        """End a group of asynchronous copies (simulator: nothing to do, copies are already done)."""

    def copy_async_wait(pending):
        """Wait until at most ``pending`` groups are in flight (simulator: none ever are)."""

    def copy_async_or_zero(shared, shared_index, matrix, row, col, rows, cols):
        """``shared[shared_index]`` = element (row, col) of a flat row-major matrix, or 0 outside it."""
        inside = row < rows and col < cols
        shared[shared_index] = matrix[row * cols + col] if inside else 0.0

    def copy_async_at_or_zero(shared, shared_index, matrix, index, inside):
        """``shared[shared_index]`` = ``matrix[index]`` where ``inside``, else 0 (``index`` is then not read)."""
        shared[shared_index] = matrix[index] if inside else 0.0

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from .intrinsics import _as_int64, _element_pointer, _is_float32_vector, _void_asm

    _F32 = ir.FloatType()
    _I32 = ir.IntType(32)

    @intrinsic
    def to_tf32(typingctx, x):
        """``cvt.rna.tf32.f32``: ``x`` rounded to TF32 (a float32 whose low 13 mantissa bits are zero)."""
        if not isinstance(x, types.Float):
            return None
        signature = types.float32(x)

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[0], sig.args[0], types.float32)
            convert = ir.InlineAsm(ir.FunctionType(_I32, [_F32]), "cvt.rna.tf32.f32 $0, $1;", "=r,f")
            return builder.bitcast(builder.call(convert, [value]), _F32)

        return signature, codegen

    @intrinsic
    def split_tf32(typingctx, x):
        """``(big, small)``: ``big`` = the bits of ``x`` plus half a TF32 unit, low 13 bits cleared (``add``,
        ``and``); ``small = x − big`` (``sub.f32``, exact), for the tensor core to truncate."""
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[0], sig.args[0], types.float32)
            bits = builder.add(builder.bitcast(value, _I32), ir.Constant(_I32, 1 << 12))
            big = builder.bitcast(builder.and_(bits, ir.Constant(_I32, ~((1 << 13) - 1) & 0xFFFFFFFF)), _F32)
            small = builder.fsub(value, big)
            return context.make_tuple(builder, sig.return_type, [big, small])

        return types.UniTuple(types.float32, 2)(x), codegen

    @intrinsic
    def split_tf32_scaled(typingctx, x):
        """``(big, small·2^11)``: :func:`split_tf32`'s ``big`` (``add``, ``and``) and ``(x − big)·2^11`` (``sub.f32``,
        ``mul.f32``; both exact), for the tensor core to truncate."""
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[0], sig.args[0], types.float32)
            bits = builder.add(builder.bitcast(value, _I32), ir.Constant(_I32, 1 << 12))
            big = builder.bitcast(builder.and_(bits, ir.Constant(_I32, ~((1 << 13) - 1) & 0xFFFFFFFF)), _F32)
            small = builder.fmul(builder.fsub(value, big), ir.Constant(_F32, float(SMALL_SCALE)))
            return context.make_tuple(builder, sig.return_type, [big, small])

        return types.UniTuple(types.float32, 2)(x), codegen

    @intrinsic
    def below_tf32(typingctx, x):
        """``x − (x with its 13 low mantissa bits cleared)`` (``and``, ``sub.f32``; exact): the part of x the tensor
        core drops when it reads x as TF32 — 3xTF32's small part when the big part is x as the tensor core reads it."""
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[0], sig.args[0], types.float32)
            kept = builder.and_(builder.bitcast(value, _I32), ir.Constant(_I32, ~((1 << 13) - 1) & 0xFFFFFFFF))
            return builder.fsub(value, builder.bitcast(kept, _F32))

        return types.float32(x), codegen

    @intrinsic
    def mma_tf32(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        """``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``: this lane's (d0, d1, d2, d3) of D = A·B + C."""
        operands = (a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)
        if not all(isinstance(x, types.Float) for x in operands):
            return None
        signature = types.UniTuple(types.float32, 4)(*operands)

        def codegen(context, builder, sig, args):
            values = [context.cast(builder, v, t, types.float32) for v, t in zip(args, sig.args)]
            a_and_b = [builder.bitcast(v, _I32) for v in values[:6]]  # TF32 operands live in .b32 registers
            result = ir.LiteralStructType([_F32] * 4)
            asm = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                   "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")
            mma = ir.InlineAsm(ir.FunctionType(result, [_I32] * 6 + [_F32] * 4), asm,
                               "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f")
            out = builder.call(mma, a_and_b + values[6:])
            lanes = [builder.extract_value(out, i) for i in range(4)]
            return context.make_tuple(builder, sig.return_type, lanes)

        return signature, codegen

    @intrinsic
    def load_matrix_x4(typingctx, shared, index):
        """``ldmatrix.sync.aligned.m8n8.x4.shared.b16``: this lane passes the address of ``shared[index]`` (one
        16-byte row of one of the four matrices) and gets four 32-bit values back, as float32."""
        if not (_is_float32_vector(shared) and isinstance(index, types.Integer)):
            return None
        signature = types.UniTuple(types.float32, 4)(shared, index)

        def codegen(context, builder, sig, args):
            pointer = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            pointer = builder.addrspacecast(pointer, pointer.type.pointee.as_pointer(3))
            result = ir.LiteralStructType([_I32] * 4)
            asm = "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];"
            load = ir.InlineAsm(ir.FunctionType(result, [pointer.type]), asm, "=r,=r,=r,=r,l", side_effect=True)
            out = builder.call(load, [pointer])
            values = [builder.bitcast(builder.extract_value(out, q), _F32) for q in range(4)]
            return context.make_tuple(builder, sig.return_type, values)

        return signature, codegen

    copy_async_commit = _void_asm("cp.async.commit_group;", "``cp.async.commit_group``: the copies this thread "
                                                            "issued since the last commit form one group.")

    @intrinsic
    def copy_async_wait(typingctx, pending):
        """``cp.async.wait_group pending``: wait until at most ``pending`` (a literal) of this thread's copy groups
        are still in flight. Follow with a barrier before other threads read what landed."""
        if not isinstance(pending, types.IntegerLiteral):
            return None
        count = pending.literal_value
        signature = types.void(pending)

        def codegen(context, builder, sig, args):
            wait = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), f"cp.async.wait_group {count};", "~{memory}",
                                side_effect=True)
            builder.call(wait, [])
            return context.get_dummy_value()

        return signature, codegen

    def _copy_one_float_or_zero(context, builder, sig, args, index, inside):
        """The ``cp.async.ca`` of the two copies below: float ``index`` (64-bit, 0 where not ``inside``) of the matrix
        ``args[2]`` into ``args[0][args[1]]``, reading 4 bytes where ``inside``, else none (the copy zero-fills)."""
        data = context.make_array(sig.args[2])(context, builder, args[2]).data
        source = builder.gep(data, [index], inbounds=True)
        destination = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        destination = builder.addrspacecast(builder.bitcast(destination, _F32.as_pointer()), _F32.as_pointer(3))
        size = builder.select(inside, ir.Constant(_I32, 4), ir.Constant(_I32, 0))
        copy = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [destination.type, source.type, _I32]),
                            "cp.async.ca.shared.global [$0], [$1], 4, $2;", "l,l,r,~{memory}", side_effect=True)
        builder.call(copy, [destination, source, size])
        return context.get_dummy_value()

    @intrinsic
    def copy_async_or_zero(typingctx, shared, shared_index, matrix, row, col, rows, cols):
        """``cp.async`` of one float: element (row, col) of a flat row-major ``rows × cols`` matrix into
        ``shared[shared_index]``, or 0 when (row, col) lies outside (the copy reads 0 bytes and zero-fills)."""
        if not (_is_float32_vector(shared) and _is_float32_vector(matrix)
                and all(isinstance(i, types.Integer) for i in (shared_index, row, col, rows, cols))):
            return None
        signature = types.void(shared, shared_index, matrix, row, col, rows, cols)

        def codegen(context, builder, sig, args):
            row, col, rows, cols = (_as_int64(builder, v, t) for v, t in zip(args[3:7], sig.args[3:7]))
            inside = builder.and_(builder.icmp_signed("<", row, rows), builder.icmp_signed("<", col, cols))
            index = builder.select(inside, builder.add(builder.mul(row, cols), col), ir.Constant(ir.IntType(64), 0))
            return _copy_one_float_or_zero(context, builder, sig, args, index, inside)

        return signature, codegen

    @intrinsic
    def copy_async_at_or_zero(typingctx, shared, shared_index, matrix, index, inside):
        """``cp.async`` of one float, ``matrix[index]`` (taken as an unsigned 32-bit index: no 64-bit multiply a
        copy, as :func:`copy_async_or_zero` does) into ``shared[shared_index]`` where ``inside``; else the copy reads 0 bytes
        of ``matrix[0]`` and zero-fills. The kernel works out ``index`` and ``inside`` once a row or column and steps
        them on."""
        if not (_is_float32_vector(shared) and _is_float32_vector(matrix) and isinstance(shared_index, types.Integer)
                and isinstance(index, types.Integer) and isinstance(inside, types.Boolean)):
            return None
        signature = types.void(shared, shared_index, matrix, index, inside)

        def codegen(context, builder, sig, args):
            flag = context.cast(builder, args[4], sig.args[4], types.boolean)
            flag = builder.icmp_unsigned("!=", flag, ir.Constant(flag.type, 0))
            index = builder.zext(context.cast(builder, args[3], sig.args[3], types.uint32), ir.IntType(64))
            index = builder.select(flag, index, ir.Constant(ir.IntType(64), 0))
            return _copy_one_float_or_zero(context, builder, sig, args, index, flag)

        return signature, codegen
