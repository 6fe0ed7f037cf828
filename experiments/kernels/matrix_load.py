"""``load_matrix_x4``: PTX ``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` (SASS ``LDSM.16.M88.4``) for the
tensor-core variants, with a simulator twin. Not in gemm_steps.toolkit: only experiments use it so far.

One warp instruction reads four 8×8 matrices of 16-bit values, each row 16 bytes, from shared memory: lanes
8q … 8q + 7 give the addresses of matrix q's rows 0 … 7, and lane t receives, from each matrix q, the 32 bits at
bytes 4·(t % 4) … 4·(t % 4) + 3 of row t // 4. Read as float32, a matrix is 8 rows × 4 floats, and lane
(group, pair) gets element [group][pair] of each: exactly the ``mma.m16n8k8`` TF32 A fragment when the four
matrices are rows 0–7 / 8–15 at k 0–3 (a0, a1) and at k 4–7 (a2, a3). So one ``load_matrix_x4`` replaces four
scalar shared loads and puts the four values in the consecutive registers the HMMA reads.
"""

from __future__ import annotations

from gemm_steps.toolkit.backend import SIMULATOR

if SIMULATOR:
    import threading

    import numpy as np

    from gemm_steps.toolkit import tensor_core_ops

    def load_matrix_x4(shared, index):
        """This lane's (x0, x1, x2, x3): ``shared[row address of lane 8q + group + pair]`` for q = 0 … 3, where
        every lane passes ``index``, the float index of one row (simulator: the lanes meet, as in ``mma_tf32``)."""
        thread = threading.current_thread()
        lane = thread.thread_id % 32
        slots = tensor_core_ops._exchange(thread).deposit_and_wait(thread, lane, int(index))
        group, pair = lane // 4, lane % 4
        return tuple(np.float32(shared[slots[8 * q + group] + pair]) for q in range(4))

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from gemm_steps.toolkit.intrinsics import _element_pointer, _is_float32_vector

    _I32, _F32 = ir.IntType(32), ir.FloatType()

    @intrinsic
    def load_matrix_x4(typingctx, shared, index):
        """``ldmatrix.sync.aligned.m8n8.x4.shared.b16``: this lane passes the address of ``shared[index]`` (one
        16-byte row) and gets four 32-bit values back, as float32."""
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
