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
    """Install the linear version (idempotent)."""
    global _APPLIED
    if _APPLIED:
        return
    from numba.cuda import lowering

    lowering.Lower._find_singly_assigned_variable = _find_singly_assigned_variable_linear
    _APPLIED = True
