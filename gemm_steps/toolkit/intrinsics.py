"""Low-level operations Numba does not expose, in one place — each with a plain-Python twin for the simulator.

Numba-CUDA compiles ``arr[i]`` to a scalar 32-bit load, and never merges four of them into one 128-bit load
(the compiler cannot prove the address is 16-byte aligned). These intrinsics emit the vector access directly, as
LLVM IR through :func:`numba.cuda.extending.intrinsic`:

============================  =======================================  ==========================
function                      LLVM IR                                  PTX → SASS
============================  =======================================  ==========================
``load_float4(arr, i)``       ``load <4 x float>, align 16``           ``ld.global.v4.f32`` → ``LDG.E.128``
                                                                       ``ld.shared.v4.f32`` → ``LDS.128``
``store_float4(arr, i, ...)`` ``store <4 x float>, align 16``          ``st.global.v4.f32`` → ``STG.E.128``
                                                                       ``st.shared.v4.f32`` → ``STS.128``
``load4_bypassing_l1(arr, i,   four inline PTX ``ld.global.cg.f32`` at    4 × ``LDG.E.STRONG.GPU``
s)``                          ``i, i + s, i + 2s, i + 3s``
``store4(arr, i, s, x0, …,     four stores at ``i, i + s, …``            4 × ``st.global.f32``
x3)``
``copy_async(dst, j, src, i,  inline PTX ``cp.async.cg/.ca``           ``LDGSTS.E.BYPASS.128``
n)``                          ``.shared.global`` (n = 16 or 4 bytes)    / ``LDGSTS.E``
``copy_async_wait_all()``     inline PTX ``cp.async.wait_all``         ``LDGDEPBAR`` + ``DEPBAR``
``load_or_zero(m, r, c, R,    a compare and a branch around a load     ``ld.global.f32`` under a
C)``                                                                   predicate
``store_if_inside(m, r, c,    a compare and a branch around a store    ``st.global.f32`` under a
R, C, x)``                                                             predicate
``store4_if_inside(m, r, c,   the same for (r, c) … (r, c + 3)         four of those
R, C, x0, x1, x2, x3)``
``divide_u32(a, b)``          ``udiv i32`` (both operands truncated)   ``div.u32`` → a short
                                                                       inline sequence (no call)
``wait_for_previous_grid()``  inline PTX ``griddepcontrol.wait``       ``griddepcontrol.wait``
                                                                       (sm_90)
``let_next_grid_start()``     inline PTX ``griddepcontrol.launch_``    ``griddepcontrol.launch_``
                              ``dependents``                           ``dependents`` (sm_90)
``wait_for_flag(flags, i)``   ``vote.sync.any`` around an atomic read   ``VOTE.ANY`` + ``ATOMG``: one
                                                                       loop exit for the warp
============================  =======================================  ==========================

The 128-bit pair take a 1-D float32 array (global or shared) and an element index ``i``; elements ``i .. i+3`` must lie in the
array and ``i`` must be a multiple of 4 from a 16-byte-aligned base — the caller's promise, not checked (that is the
point: no bounds check, no wraparound for negative indices). The address space (global/shared) is inferred by the
compiler from where the array lives. On the simulator the same names are plain Python functions with the same
meaning, so a step's source is identical on both.

``load_or_zero`` and ``store_if_inside`` are the edge kernels' guarded accesses to a flat row-major R×C matrix:
element (r, c) if it lies inside, else 0 (or no store). Written in the kernel as ``x if r < R and c < C else 0``,
each check is a branch in Numba's own IR, and an unrolled edge kernel has hundreds of them: Numba's SSA passes take
quadratic time over so many blocks (step 9's edge kernel compiled in 18 s on an H100 host, its fast kernel in 7 s).
As intrinsics the branch appears only in the LLVM IR, which handles it in linear time; the machine code is the
same compare, branch (or predicate) and load.

``divide_u32`` exists because Numba widens integer arithmetic to 64 bits: ``a // b`` of two ``uint32`` is a
``uint64`` division, ``div.u64`` in PTX, which ptxas makes a call to a division subroutine — and one call anywhere in
a kernel makes ptxas serialise every ``wgmma`` in it (warning C7509). A division by a compile-time constant is a
multiply and shift and needs none of this; ``divide_u32`` is for divisors known only at run time (a grid's size).

``wait_for_flag`` is stream-K's wait for another block's partial sums (steps 21 and 22): until ``flags[i]`` is
non-zero, all 32 lanes of the warp polling together — each lane its own flag, the warp leaving the loop when every
lane's flag is up (``cuda.any_sync``). Written as a plain ``while`` on each lane's atomic read, the loop's exit differs
from lane to lane, and ptxas then keeps every value carried round the persistent loop in per-thread registers: the
``wgmma`` descriptors built from the ring's stage had to be moved to uniform registers (``R2UR``) before each
``HGMMA`` — 22 of them in step 22's k-tile, none in step 18's (ptxas for sm_90a; predictions/
stream-k-warp-wait-before-run.md has the counts, experiments/results/experiment-stream-k-3xtf32-nvidia-h200-3.json the
run after: step 22's persistent loop 0.87× → 0.905× step 18 at 4096³). The whole warp must call it (every consumer
warp does).

``copy_async`` copies global memory straight into shared memory without passing through registers (Ampere and
later): ``n`` floats (1 or 4) from ``src[i]`` to ``dst[j]``, where ``dst`` is a shared array. The copy is in flight
until the thread calls ``copy_async_wait_all()``; a barrier after that makes it visible to the whole block.
"""

from __future__ import annotations

from .backend import SIMULATOR

if SIMULATOR:

    def load_float4(array, index):
        """Four consecutive floats ``array[index : index + 4]`` (simulator: four scalar reads)."""
        return array[index], array[index + 1], array[index + 2], array[index + 3]

    def store_float4(array, index, x0, x1, x2, x3):
        """Write four consecutive floats at ``array[index : index + 4]`` (simulator: four scalar writes)."""
        array[index] = x0
        array[index + 1] = x1
        array[index + 2] = x2
        array[index + 3] = x3

    def load4_bypassing_l1(array, index, stride):
        """``array[index + q * stride]`` for q = 0 … 3, read from L2 (simulator: four plain reads)."""
        return array[index], array[index + stride], array[index + 2 * stride], array[index + 3 * stride]

    def store4(array, index, stride, x0, x1, x2, x3):
        """Write x0 … x3 to ``array[index + q * stride]`` for q = 0 … 3 (four 32-bit stores)."""
        array[index] = x0
        array[index + stride] = x1
        array[index + 2 * stride] = x2
        array[index + 3 * stride] = x3

    def copy_async(shared, shared_index, array, index, count):
        """Copy ``count`` floats ``array[index:]`` to ``shared[shared_index:]`` (simulator: at once)."""
        for offset in range(count):
            shared[shared_index + offset] = array[index + offset]

    def divide_u32(a, b):
        """``a // b`` of two unsigned 32-bit integers (simulator: Python's ``//``)."""
        return int(a) // int(b)

    def copy_async_wait_all():
        """Wait for this thread's asynchronous copies (simulator: they are already done)."""

    def wait_for_previous_grid():
        """Wait until the kernel launched before this one on the stream has finished and its writes are visible
        (simulator: launches run one after another)."""

    def let_next_grid_start():
        """Let the kernel launched after this one on the stream start its blocks now, if it was launched as a
        programmatic dependent launch (simulator: launches run one after another)."""

    def wait_for_flag(flags, index):
        """Wait until ``flags[index]`` is non-zero (simulator: this thread alone polls its flag)."""
        while flags[index] == 0:
            pass

    def load_or_zero(matrix, row, col, rows, cols):
        """Element (row, col) of a flat row-major rows × cols matrix, or 0 outside it."""
        return matrix[row * cols + col] if row < rows and col < cols else matrix.dtype.type(0)

    def store_if_inside(matrix, row, col, rows, cols, value):
        """Set element (row, col) of a flat row-major rows × cols matrix, if it lies inside."""
        if row < rows and col < cols:
            matrix[row * cols + col] = value

    def store4_if_inside(matrix, row, col, rows, cols, x0, x1, x2, x3):
        """Set elements (row, col) … (row, col + 3) of a flat row-major rows × cols matrix, those that lie inside."""
        for offset, value in enumerate((x0, x1, x2, x3)):
            if row < rows and col + offset < cols:
                matrix[row * cols + col + offset] = value

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    _F32x4 = ir.VectorType(ir.FloatType(), 4)

    def _is_float32_vector(array) -> bool:
        return isinstance(array, types.Array) and array.dtype == types.float32 and array.ndim == 1

    def _element_pointer(context, builder, array_type, array_value, index_type, index_value):
        """Address of ``array[index]`` as ``<4 x float>*`` — no bounds check, no negative wraparound."""
        data = context.make_array(array_type)(context, builder, array_value).data
        wide = ir.IntType(64)
        if index_value.type.width < 64:
            extend = builder.sext if index_type.signed else builder.zext
            index_value = extend(index_value, wide)
        element = builder.gep(data, [index_value], inbounds=True)
        return builder.bitcast(element, _F32x4.as_pointer(element.type.addrspace))

    @intrinsic
    def load_float4(typingctx, array, index):
        """Four consecutive floats from ``array[index]`` as one 128-bit load (``ld.*.v4.f32``)."""
        if not (_is_float32_vector(array) and isinstance(index, types.Integer)):
            return None
        signature = types.UniTuple(types.float32, 4)(array, index)

        def codegen(context, builder, sig, args):
            pointer = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            vector = builder.load(pointer, align=16)
            lanes = [builder.extract_element(vector, ir.Constant(ir.IntType(32), lane)) for lane in range(4)]
            return context.make_tuple(builder, sig.return_type, lanes)

        return signature, codegen

    @intrinsic
    def store_float4(typingctx, array, index, x0, x1, x2, x3):
        """Write four floats (cast to float32) to ``array[index]`` as one 128-bit store (``st.*.v4.f32``)."""
        if not (_is_float32_vector(array) and isinstance(index, types.Integer)):
            return None
        if not all(isinstance(x, (types.Float, types.Integer)) for x in (x0, x1, x2, x3)):
            return None
        signature = types.void(array, index, x0, x1, x2, x3)

        def codegen(context, builder, sig, args):
            pointer = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            vector = ir.Constant(_F32x4, ir.Undefined)
            for lane, (value, value_type) in enumerate(zip(args[2:], sig.args[2:])):
                value = context.cast(builder, value, value_type, types.float32)
                vector = builder.insert_element(vector, value, ir.Constant(ir.IntType(32), lane))
            builder.store(vector, pointer, align=16)
            return context.get_dummy_value()

        return signature, codegen

    def _strided_pointers(context, builder, sig, args):
        """``&array[index + q * stride]`` for q = 0 … 3, as float pointers (no bounds check)."""
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        index, stride = _as_int64(builder, args[1], sig.args[1]), _as_int64(builder, args[2], sig.args[2])
        return [builder.gep(data, [builder.add(index, builder.mul(stride, ir.Constant(ir.IntType(64), q)))],
                            inbounds=True) for q in range(4)]

    @intrinsic
    def load4_bypassing_l1(typingctx, array, index, stride):
        """Four floats ``array[index + q * stride]`` (q = 0 … 3; float32, global), each read with ``ld.global.cg``:
        cached in L2 only, never a stale L1 line.

        For data another block wrote during this launch (stream-K's partial sums). With ``stride`` = the block's
        thread count and ``index`` counting up with the thread, a warp's 32 loads of one q read 128 contiguous bytes.
        Inline PTX, like numba-cuda's own ``ldcg`` — which is a device function and so needs a GPU to compile; this one
        compiles anywhere. One call for four loads: an unrolled fixup has a quarter of the calls to compile.
        """
        if not (_is_float32_vector(array) and isinstance(index, types.Integer) and isinstance(stride, types.Integer)):
            return None
        signature = types.UniTuple(types.float32, 4)(array, index, stride)

        def codegen(context, builder, sig, args):
            lanes = []
            for pointer in _strided_pointers(context, builder, sig, args):
                load = ir.InlineAsm(ir.FunctionType(ir.FloatType(), [pointer.type]), "ld.global.cg.f32 $0, [$1];",
                                    "=f,l")
                lanes.append(builder.call(load, [pointer]))
            return context.make_tuple(builder, sig.return_type, lanes)

        return signature, codegen

    @intrinsic
    def store4(typingctx, array, index, stride, x0, x1, x2, x3):
        """Write x0 … x3 (cast to float32) to ``array[index + q * stride]``, q = 0 … 3: four 32-bit stores, from one
        call (no bounds check). The partner of :func:`load4_bypassing_l1`."""
        values = (x0, x1, x2, x3)
        if not (_is_float32_vector(array) and isinstance(index, types.Integer) and isinstance(stride, types.Integer)
                and all(isinstance(x, (types.Float, types.Integer)) for x in values)):
            return None
        signature = types.void(array, index, stride, *values)

        def codegen(context, builder, sig, args):
            for q, pointer in enumerate(_strided_pointers(context, builder, sig, args)):
                builder.store(context.cast(builder, args[3 + q], sig.args[3 + q], types.float32), pointer)
            return context.get_dummy_value()

        return signature, codegen

    @intrinsic
    def copy_async(typingctx, shared, shared_index, array, index, count):
        """``cp.async``: ``count`` (a literal 1 or 4) floats from global ``array[index]`` to ``shared[shared_index]``,
        skipping the registers. 16-byte copies use ``.cg`` (L2 only); 4-byte ones must use ``.ca``."""
        if not (_is_float32_vector(shared) and _is_float32_vector(array) and isinstance(index, types.Integer)
                and isinstance(shared_index, types.Integer) and isinstance(count, types.IntegerLiteral)
                and count.literal_value in (1, 4)):
            return None
        size = 4 * count.literal_value
        signature = types.void(shared, shared_index, array, index, count)

        def codegen(context, builder, sig, args):
            destination = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            # A shared-memory (address space 3) pointer: the compiler folds the conversion from the array's generic
            # pointer into the address arithmetic, once, instead of a cvta per copy.
            destination = builder.addrspacecast(destination, _F32x4.as_pointer(3))
            source = _element_pointer(context, builder, sig.args[2], args[2], sig.args[3], args[3])
            cache = "cg" if size == 16 else "ca"
            asm = f"cp.async.{cache}.shared.global [$0], [$1], {size};"
            copy = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [destination.type, source.type]), asm, "l,l,~{memory}",
                                side_effect=True)
            builder.call(copy, [destination, source])
            return context.get_dummy_value()

        return signature, codegen

    @intrinsic
    def divide_u32(typingctx, a, b):
        """``a // b`` as a 32-bit unsigned division (``div.u32``); both truncated to 32 bits, a ``uint32`` result."""
        if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
            return None
        signature = types.uint32(a, b)

        def codegen(context, builder, sig, args):
            a32, b32 = (builder.trunc(v, ir.IntType(32)) if v.type.width > 32 else builder.zext(v, ir.IntType(32))
                        if v.type.width < 32 else v for v in args)
            return builder.udiv(a32, b32)

        return signature, codegen

    def _void_asm(text: str, doc: str):
        """An intrinsic of no operands and no result: one inline PTX statement ``text``, kept in place (a side effect)
        and ordered against memory accesses (``~{memory}``) — a wait, a fence, a commit."""
        @intrinsic
        def emit(typingctx):
            def codegen(context, builder, sig, args):
                builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}", side_effect=True), [])
                return context.get_dummy_value()

            return types.void(), codegen

        emit.__doc__ = doc
        return emit

    copy_async_wait_all = _void_asm("cp.async.wait_all;", "``cp.async.wait_all``: this thread's asynchronous copies "
                                                          "have landed (follow with a barrier).")
    wait_for_previous_grid = _void_asm(
        "griddepcontrol.wait;",
        """``griddepcontrol.wait`` (PTX ISA 7.8, sm_90): where this kernel was launched with programmatic stream
        serialization (``LaunchConfig(programmatic_stream_serialization=True)``: programmatic dependent launch), its
        blocks may start while the kernel before it on the stream is still running; this waits until that kernel
        has completed and its memory operations are visible. Everything before it may not read what that kernel
        writes, nor write what it reads. Launched the ordinary way, the kernel before it has finished already and
        this returns at once.""")
    let_next_grid_start = _void_asm(
        "griddepcontrol.launch_dependents;",
        """``griddepcontrol.launch_dependents`` (PTX ISA 7.8, sm_90): the kernel launched after this one as a
        programmatic dependent launch may start its blocks once every block of this one has executed this (or
        exited) — not only once they have all exited. It says nothing of this kernel's writes: the kernel after it
        still reads them only after its own ``griddepcontrol.wait``. Without a dependent launch after it, a no-op.""")

    def _as_int64(builder, value, value_type):
        """An integer argument widened to 64 bits with its own signedness (so comparisons keep Numba's meaning)."""
        if value.type.width == 64:
            return value
        extend = builder.sext if value_type.signed else builder.zext
        return extend(value, ir.IntType(64))

    def _guard(builder, sig, args):
        """(inside, flat index): row < rows and col < cols, and row * cols + col, in 64-bit integers."""
        row, col, rows, cols = (_as_int64(builder, v, t) for v, t in zip(args[1:5], sig.args[1:5]))
        inside = builder.and_(builder.icmp_signed("<", row, rows), builder.icmp_signed("<", col, cols))
        return inside, builder.add(builder.mul(row, cols), col)

    def _is_guarded_call(matrix, *indices) -> bool:
        return _is_float32_vector(matrix) and all(isinstance(i, types.Integer) for i in indices)

    @intrinsic
    def load_or_zero(typingctx, matrix, row, col, rows, cols):
        """Element (row, col) of a flat row-major float32 ``rows × cols`` matrix, or 0 outside it."""
        if not _is_guarded_call(matrix, row, col, rows, cols):
            return None
        signature = types.float32(matrix, row, col, rows, cols)

        def codegen(context, builder, sig, args):
            inside, index = _guard(builder, sig, args)
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            before = builder.basic_block
            with builder.if_then(inside, likely=True):
                loaded = builder.load(builder.gep(data, [index], inbounds=True))
                loaded_in = builder.basic_block
            value = builder.phi(ir.FloatType())
            value.add_incoming(ir.Constant(ir.FloatType(), 0.0), before)
            value.add_incoming(loaded, loaded_in)
            return value

        return signature, codegen

    @intrinsic
    def store_if_inside(typingctx, matrix, row, col, rows, cols, value):
        """Set element (row, col) of a flat row-major float32 ``rows × cols`` matrix to ``value``, if inside."""
        if not (_is_guarded_call(matrix, row, col, rows, cols) and isinstance(value, (types.Float, types.Integer))):
            return None
        signature = types.void(matrix, row, col, rows, cols, value)

        def codegen(context, builder, sig, args):
            inside, index = _guard(builder, sig, args)
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            stored = context.cast(builder, args[5], sig.args[5], types.float32)
            with builder.if_then(inside, likely=True):
                builder.store(stored, builder.gep(data, [index], inbounds=True))
            return context.get_dummy_value()

        return signature, codegen

    @intrinsic
    def store4_if_inside(typingctx, matrix, row, col, rows, cols, x0, x1, x2, x3):
        """Set elements (row, col) … (row, col + 3) of a flat row-major float32 ``rows × cols`` matrix, those inside:
        four guarded scalar stores (the columns need not be 16-byte aligned), from one call."""
        values = (x0, x1, x2, x3)
        if not (_is_guarded_call(matrix, row, col, rows, cols)
                and all(isinstance(x, (types.Float, types.Integer)) for x in values)):
            return None
        signature = types.void(matrix, row, col, rows, cols, *values)

        def codegen(context, builder, sig, args):
            row, col, rows, cols = (_as_int64(builder, v, t) for v, t in zip(args[1:5], sig.args[1:5]))
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            row_inside = builder.icmp_signed("<", row, rows)
            for offset in range(4):
                column = builder.add(col, ir.Constant(ir.IntType(64), offset))
                inside = builder.and_(row_inside, builder.icmp_signed("<", column, cols))
                stored = context.cast(builder, args[5 + offset], sig.args[5 + offset], types.float32)
                with builder.if_then(inside, likely=True):
                    builder.store(stored, builder.gep(data, [builder.add(builder.mul(row, cols), column)], inbounds=True))
            return context.get_dummy_value()

        return signature, codegen

    from numba import cuda as _cuda

    @_cuda.jit(device=True, inline=True)
    def wait_for_flag(flags, index):
        """Wait until ``flags[index]`` is non-zero, the warp's 32 lanes together: each reads its own flag atomically
        (from L2), and the warp loops while any lane's is still 0 (``vote.sync.any``), so the loop's exit is the
        same for every lane (see the module docstring for why that matters). The whole warp must call it."""
        while _cuda.any_sync(0xFFFFFFFF, _cuda.atomic.add(flags, index, 0) == 0):
            pass
