"""Storing a tile of C with the copy engine (TMA store) — each operation with a plain-Python twin.

A load through the copy engine (``mbarrier_ops.copy_tile``) brings a box of a matrix into shared memory. The store
goes the other way: threads write their results into a tile of shared memory, and one thread asks the copy engine to
write that tile into C as a box of the tensor map — the epilogue cuBLAS's TF32 kernel on Hopper uses (``UTMASTG``:
results/reference-*.json, lesson 17's "What cuBLAS runs"). Two things come with it:

* **Clipping.** The copy engine writes only the part of the box that lies inside the matrix: a tile at C's ragged edge
  needs no bounds check in the kernel (issue 37's "a TMA store that clips"). That holds past the matrix's last row
  and column; a box that starts *before* row or column 0 is another matter: on an H200 the first such store (box at
  (−4, −8), plain and swizzled) stopped the kernel with ``CUDA_ERROR_ILLEGAL_INSTRUCTION`` (2026-11-28), where a load
  there is zero-filled. The twin refuses negative coordinates; a kernel's tiles never start there.
* **No mbarrier.** A store is tracked by *bulk async-groups*, as ``cp.async`` copies are by their groups: the thread
  that issued stores commits them as a group, and waits — until the copy engine has *read* the shared tile (then the
  tile may be written again) or until the writes to global memory are done.

=========================================  =========================================================================
function                                   PTX
=========================================  =========================================================================
``store_tile(map, r, c, src, j)``          ``cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [map, {c, r}],
                                           [&src[j]]``
``store_commit()``                         ``cp.async.bulk.commit_group``
``store_wait_read(n)``                     ``cp.async.bulk.wait_group.read n``: at most n groups still reading shared
``store_wait(n)``                          ``cp.async.bulk.wait_group n``: at most n groups not yet complete
=========================================  =========================================================================

**The order around it** (the PTX ISA's proxies): the threads' stores to the shared tile are generic-proxy writes and
the copy engine reads through the async proxy, so every writing thread executes ``fence_proxy_async()``
(``fence.proxy.async.shared::cta``) and the block meets at a barrier before the one thread issues ``store_tile``. The
tile follows the tensor map's layout: a map made with ``swizzle_128`` reads the tile 128-byte-swizzled. The shared
address is 128-byte aligned (1,024 for the swizzle), as for a load.

**Simulator twins.** ``store_tile`` writes the box's inside part into the matrix at once (un-swizzling if the map
says so); the group operations have nothing to wait for.

Needs compute capability 9.0. Step 23 (``steps/cluster_stream_k_tma_store.py``) stores C this way: 16-row chunks
through three buffers per consumer warpgroup, a named barrier per chunk, ``store_wait_read(1)`` before a buffer is
written again. On an H200 (2026-11-28) tests/test_tma_store.py's ``gpu`` tests pass for boxes inside C and past its
far edges, plain and swizzled; step 23's GPU tests pass (2026-11-29).
"""

from __future__ import annotations

import numpy as np

from .backend import SIMULATOR

__all__ = ["store_tile", "store_commit", "store_wait_read", "store_wait"]


if SIMULATOR:
    from . import mbarrier_ops

    def store_tile(tensor_map, row, col, source, start):
        """Write the box at (``row``, ``col``) of the matrix behind ``tensor_map`` from ``source[start:]`` (shared),
        only where the box lies inside the matrix (simulator: at once)."""
        if row < 0 or col < 0:
            raise ValueError(f"store_tile at ({row}, {col}): a TMA store box must start inside the matrix (row and "
                             "column ≥ 0); on an H200 one at a negative coordinate stopped the kernel with an illegal "
                             "instruction")
        target, box_rows, box_cols, swizzle_128 = mbarrier_ops.tensor_map_box(tensor_map)
        box = np.asarray(source)[mbarrier_ops.box_in_shared(source, start, box_rows * box_cols, swizzle_128)]
        in_matrix, in_box = mbarrier_ops.box_inside(row, col, box_rows, box_cols, target.shape)
        target[in_matrix] = box.reshape(box_rows, box_cols)[in_box]

    def store_commit():
        """Close this thread's stores into a bulk async-group (simulator: they are done)."""

    def store_wait_read(count):
        """Wait until at most ``count`` groups are still reading shared memory (simulator: none is)."""

    def store_wait(count):
        """Wait until at most ``count`` groups are incomplete (simulator: none is)."""

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from .mbarrier_ops import _asm, _global_address
    from .warpgroup_ops import shared_address_value as _shared_address

    @intrinsic
    def store_tile(typingctx, tensor_map, row, col, source, start):
        """``cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group``: the copy engine writes the tile at
        ``&source[start]`` (shared) to the box at (``row``, ``col``) of the matrix behind ``tensor_map``, clipped to
        the matrix."""
        if not (isinstance(tensor_map, types.Array) and tensor_map.dtype == types.uint64
                and isinstance(source, types.Array) and all(isinstance(x, types.Integer) for x in (row, col, start))):
            return None

        def codegen(context, builder, sig, args):
            map_address = _global_address(context, builder, sig.args[0], args[0], context.get_constant(types.intp, 0),
                                          types.intp)
            inner = context.cast(builder, args[2], sig.args[2], types.int32)  # the column: the map's first dimension
            outer = context.cast(builder, args[1], sig.args[1], types.int32)
            from_address = _shared_address(context, builder, sig.args[3], args[3], args[4], sig.args[4])
            _asm(builder, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [$0, {$1, $2}], [$3];",
                 "l,r,r,r,~{memory}", ir.VoidType(), [map_address, inner, outer, from_address])
            return context.get_dummy_value()

        return types.void(tensor_map, row, col, source, start), codegen

    @intrinsic
    def store_commit(typingctx):
        """``cp.async.bulk.commit_group``: this thread's bulk stores so far, as one group."""
        def codegen(context, builder, sig, args):
            _asm(builder, "cp.async.bulk.commit_group;", "~{memory}", ir.VoidType(), [])
            return context.get_dummy_value()

        return types.void(), codegen

    def _wait(read: bool):
        suffix = ".read" if read else ""

        @intrinsic
        def wait(typingctx, count):
            if not isinstance(count, types.IntegerLiteral):
                return None  # the group count is an immediate in PTX: a compile-time constant

            def codegen(context, builder, sig, args):
                _asm(builder, f"cp.async.bulk.wait_group{suffix} {count.literal_value};", "~{memory}",
                     ir.VoidType(), [])
                return context.get_dummy_value()

            return types.void(count), codegen

        return wait

    store_wait_read = _wait(True)
    store_wait_read.__doc__ = ("``cp.async.bulk.wait_group.read n``: wait until at most ``n`` (a compile-time "
                               "constant) groups are still reading shared memory.")
    store_wait = _wait(False)
    store_wait.__doc__ = ("``cp.async.bulk.wait_group n``: wait until at most ``n`` (a compile-time constant) "
                          "groups are incomplete.")
