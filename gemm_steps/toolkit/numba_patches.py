"""A compile-time workaround for numba-cuda 0.30 (GPU only; the simulator does not compile).

``Lower._find_singly_assigned_variable`` rescans every assignment of a block for each variable defined in it:
quadratic in the block's size. Our unrolled kernels are one block of ~4,000 statements, so that one pass took
10 of 23 seconds of compiling a kernel (profiled with cProfile on a CPU). This replacement computes the same set
in one pass over each block. It changes what is computed nowhere: same rules, same result; the PTX of every step
is byte-identical with and without it (tests/test_ptx.py compiles with it applied).
"""

from __future__ import annotations

from collections import Counter, defaultdict

_APPLIED = False


def _find_singly_assigned_variable_linear(self):
    from numba.cuda.core import ir
    from numba.cuda.core.analysis import compute_use_defs, must_use_alloca

    blocks = self.func_ir.blocks
    singly_assigned = set()
    if not self.func_ir.func_id.is_generator:
        use_defs = compute_use_defs(blocks)
        alloca_vars = must_use_alloca(blocks)
        defined_in = defaultdict(set)
        for block, names in use_defs.defmap.items():
            for name in names:
                defined_in[name].add(block)
        used_in = defaultdict(set)
        for block, names in use_defs.usemap.items():
            for name in names:
                used_in[name].add(block)
        assignments_per_block: dict = {}
        for name, where in defined_in.items():
            if name in alloca_vars or len(where) != 1 or used_in[name]:
                continue
            [block] = where
            if block not in assignments_per_block:  # one pass per block, not one per variable
                assignments_per_block[block] = Counter(
                    stmt.target.name for stmt in self.blocks[block].find_insts(ir.assign_types))
            if assignments_per_block[block][name] == 1:
                singly_assigned.add(name)
    self._singly_assigned_vars = singly_assigned
    self._blk_local_varmap = {}


def apply() -> None:
    """Install both patches (idempotent)."""
    global _APPLIED
    if _APPLIED:
        return
    from numba.cuda import lowering

    lowering.Lower._find_singly_assigned_variable = _find_singly_assigned_variable_linear
    _memoize_call_types()
    _APPLIED = True


# -- typing: resolve each (function, argument types) once per kernel, not once per use ---------------------------
# An unrolled kernel asks Numba to type the same operation thousands of times: `acc += a * b` on (float32, float32)
# 1,024 times per k-tile. Each time, `BaseFunction.get_call_type` tries every typing template of the operator in
# turn (with and without literal arguments), about ten template applications per call: 40 % of a kernel's compile
# time in a cProfile of step 9. The answer depends only on the function, the typing context, its target and the
# argument types, so the first answer is kept and reused; `_impl_keys` (which lowering reads) was recorded by that
# first resolution. Failures are not cached (they raise again, with Numba's own message).
_TYPING_APPLIED = False


def _memoize_call_types() -> None:
    from numba.core.types.functions import BaseFunction

    resolve = BaseFunction.get_call_type

    def get_call_type(self, context, args, kws):
        if kws:
            return resolve(self, context, args, kws)
        try:
            key = (id(context), tuple(args))
            hash(key)
        except TypeError:  # an unhashable argument type: resolve as Numba would
            return resolve(self, context, args, kws)
        memo = self.__dict__.setdefault("_gemm_steps_call_types", {})
        found = memo.get(key)
        if found is None:
            found = resolve(self, context, args, kws)
            if found is not None:
                memo[key] = found
        return found

    get_call_type.__wrapped__ = resolve
    BaseFunction.get_call_type = get_call_type
