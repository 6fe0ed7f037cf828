"""Compile-time workarounds for numba-cuda 0.30 (GPU only; the simulator does not compile).

Numba's front end was written for loops, not for straight-line kernels of ~4,000 statements: six of its passes
are quadratic in a block's size or in (variables × statements), one computes eagerly what is seldom read, and one
helper that every pass calls answers the same type question at every node. Each
patch below computes exactly what the pass it replaces computes — same rules, same order, same result — in linear or
near-linear time, or only when it is read:

* ``Lower._find_singly_assigned_variable`` rescanned a block's assignments for each variable defined in it
  (10 of 23 s of compiling step 9, profiled with cProfile on a CPU);
* typing resolved ``acc += a * b`` from scratch at each of its 1,024 uses per k-tile (40 % of a profile);
* SSA reconstruction (``ssa._run_ssa``) rewrites *every* statement of the kernel once per variable that is
  assigned more than once — each ``acc[i][j]``, so 128 × ~10,000 statement visits — although only the blocks that
  mention the variable can change (2.5 of 7.5 s of compiling step 9's edge kernel to PTX);
* stripping the phi nodes (``PreLowerStripPhis._strip_phi_nodes``) searched a block with ``list.index``, which
  compares statements with Python-level ``__eq__`` one by one (1.8 of 7.5 s);
* liveness (``analysis.compute_live_map``, run by each of Numba's nine post-processing passes) swept every block until
  nothing changed, one block further a sweep, unioning thousands of names each time: in step 13's kernel, loops
  around long unrolled bodies, 7.7 of 16.6 s of compiling its fast kernel to PTX (2.4 s now, the compile 12.0 s; timed
  on a 2-core CPU machine, 2026-11-26). Steps without such loops gain little (step 7: nothing measurable);
* each of those nine post-processing runs (``PostProcessor.run``) also computed every variable's lifetime — use/def
  sets, liveness, dead maps and the variables live on entry to each block — at once, although only a generator
  reads the last (``block_entry_vars``) and the rest is read only where a pass asks for it: the run keeps the lazy
  ``VariableLifetime`` it makes (as Numba's own loop-canonicalising passes do) and computes its fields when they are
  first read (step 13's fast kernel: the nine runs took 8.7 of 27.4 s of a profiled lowering);
* making every variable defined in every block's scope (``ir_utils.fixup_var_define_in_scope``) walked all the used
  variables once per *block*, although the blocks share one scope or a few: after the first block of a scope the
  other walks find every name defined (step 13's fast kernel, 278 blocks in one scope: 2.6 s on its blocks, 0.06 s
  once per scope; 2.0 of 24.1 s of a cProfile'd lowering). Now once per scope;
* listing the variables a statement reads or writes (``Inst._rec_list_vars``, called ~200,000 times in step 13's
  lowering, by liveness, SSA, ``del`` placement …) asked ``isinstance`` of two-class tuples at every node of every
  statement: now it asks once per type and keeps the answer (same variables, same order; one sweep over that
  kernel's 14,823 statements 0.072 → 0.039 s).

``tests/test_numba_patches.py`` compiles kernels with and without the patches and asserts byte-identical PTX.
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
    """Install the eight patches (idempotent)."""
    global _APPLIED
    if _APPLIED:
        return
    from numba.cuda import lowering
    from numba.cuda.core import analysis, ir, postproc, ssa, typed_passes, untyped_passes

    _remember_originals()
    lowering.Lower._find_singly_assigned_variable = _find_singly_assigned_variable_linear
    _memoize_call_types()
    ssa._run_ssa = _run_ssa_sparse
    typed_passes.PreLowerStripPhis._strip_phi_nodes = _strip_phi_nodes_indexed
    analysis.compute_live_map = _compute_live_map_sparse
    postproc.PostProcessor.run = _post_process_lazily
    untyped_passes.fixup_var_define_in_scope = _fixup_var_define_once_per_scope
    ir.Inst._rec_list_vars = _rec_list_vars_by_type
    _APPLIED = True


def remove() -> None:
    """Undo :func:`apply` (the byte-identical-PTX test compiles once each way)."""
    global _APPLIED
    if not _APPLIED:
        return
    from numba.core.types.functions import BaseFunction
    from numba.cuda import lowering
    from numba.cuda.core import analysis, ir, postproc, ssa, typed_passes, untyped_passes

    lowering.Lower._find_singly_assigned_variable = _ORIGINALS["singly_assigned"]
    BaseFunction.get_call_type = BaseFunction.get_call_type.__wrapped__
    ssa._run_ssa = _ORIGINALS["run_ssa"]
    typed_passes.PreLowerStripPhis._strip_phi_nodes = _ORIGINALS["strip_phis"]
    analysis.compute_live_map = _ORIGINALS["live_map"]
    postproc.PostProcessor.run = _ORIGINALS["post_process"]
    untyped_passes.fixup_var_define_in_scope = _ORIGINALS["fixup_scope"]
    ir.Inst._rec_list_vars = _ORIGINALS["rec_list_vars"]
    _APPLIED = False


_ORIGINALS: dict = {}


def _remember_originals() -> None:
    from numba.cuda import lowering
    from numba.cuda.core import analysis, ir, postproc, ssa, typed_passes, untyped_passes

    _ORIGINALS.setdefault("singly_assigned", lowering.Lower._find_singly_assigned_variable)
    _ORIGINALS.setdefault("run_ssa", ssa._run_ssa)
    _ORIGINALS.setdefault("strip_phis", typed_passes.PreLowerStripPhis._strip_phi_nodes)
    _ORIGINALS.setdefault("live_map", analysis.compute_live_map)
    _ORIGINALS.setdefault("post_process", postproc.PostProcessor.run)
    _ORIGINALS.setdefault("fixup_scope", untyped_passes.fixup_var_define_in_scope)
    _ORIGINALS.setdefault("rec_list_vars", ir.Inst._rec_list_vars)


# -- every used variable defined in every scope: once per scope, not once per block ------------------------------------
def _fixup_var_define_once_per_scope(blocks):
    """``ir_utils.fixup_var_define_in_scope``: every variable some statement uses, defined (by name) in the scope of
    every block. The original walks the used variables once per block; a second walk over a scope it has already
    walked defines nothing (every name is in it by then), so one walk per distinct scope, in the order the blocks
    first name them, defines the same names in the same order."""
    used = {}
    for block in blocks.values():
        for inst in block.body:
            for var in inst.list_vars():
                used[var] = inst
    walked = set()
    for block in blocks.values():
        scope = block.scope
        if id(scope) in walked:
            continue
        walked.add(id(scope))
        for var in used:
            if var.name not in scope.localvars:
                scope.localvars.define(var.name, var)


# -- the variables of a statement: each node's kind found once per type --------------------------------------------------
#: type → what ``Inst._rec_list_vars`` does with a value of it: 0 a variable, 1 an instruction (its own ``list_vars``),
#: 2 a list or tuple, 3 a dict (their items, in order), 4 nothing.
_LIST_VARS_KIND: dict = {}


def _list_vars_kind(value_type: type) -> int:
    from numba.cuda.core import ir

    if issubclass(value_type, ir.var_types):  # the original's isinstance tests, in its order
        return 0
    if issubclass(value_type, ir.inst_types):
        return 1
    if issubclass(value_type, (list, tuple)):
        return 2
    return 3 if issubclass(value_type, dict) else 4


def _rec_list_vars_by_type(self, val):
    """``ir.Inst._rec_list_vars``: the variables in ``val``, depth first, as the original finds them."""
    found: list = []
    _collect_vars(val, found)
    return found


def _collect_vars(val, found: list) -> None:
    kind = _LIST_VARS_KIND.get(type(val))
    if kind is None:
        kind = _LIST_VARS_KIND[type(val)] = _list_vars_kind(type(val))
    if kind == 0:
        found.append(val)
    elif kind == 1:
        found.extend(val.list_vars())
    elif kind == 2:
        for item in val:
            _collect_vars(item, found)
    elif kind == 3:
        for item in val.values():
            _collect_vars(item, found)


# -- post-processing: a variable's lifetime computed when it is read ----------------------------------------------------
def _post_process_lazily(self, emit_dels: bool = False, extend_lifetimes: bool = False):
    """``PostProcessor.run`` for a kernel (not a generator): canonicalise the CFG, keep a lazy ``VariableLifetime``,
    emit the ``del``s when asked (which reads the lifetimes); a generator runs Numba's own."""
    from numba.cuda.core import postproc, transforms

    if self.func_ir.is_generator:
        return _ORIGINALS["post_process"](self, emit_dels=emit_dels, extend_lifetimes=extend_lifetimes)
    self.func_ir.blocks = transforms.canonicalize_cfg(self.func_ir.blocks)
    self.func_ir.variable_lifetime = postproc.VariableLifetime(self.func_ir.blocks)
    self.func_ir.generator_info = None
    if emit_dels:
        self._insert_var_dels(extend_lifetimes=extend_lifetimes)


# -- SSA reconstruction: visit only the statements that mention the variable ----------------------------------------
def _run_ssa_sparse(blocks):
    """``numba.cuda.core.ssa._run_ssa`` with each variable's two rewrite passes limited to the statements that mention
    it. Both handlers return any other statement unchanged (they act only on assignments *to* the variable and on
    statements that *read* it), so skipping those changes nothing but the time taken.

    Positions are kept as distances from the end of their block: a rewrite replaces statements in place, and the
    phi nodes it adds go to the front, so those distances never change."""
    from numba.cuda.core import errors, ssa
    from numba.cuda.core.analysis import compute_cfg_from_blocks

    if not blocks:
        return {}
    cfg = compute_cfg_from_blocks(blocks)
    df_plus = ssa._iterated_domfronts(cfg)
    violators = ssa._find_defs_violators(blocks, cfg)
    cache_list_vars = ssa._CacheListVars()
    from_end: dict = {}  # id(statement) → its distance from the end of its block
    mentions = defaultdict(lambda: defaultdict(list))  # name → label → distances of the statements naming it
    for label, block in blocks.items():
        size = len(block.body)
        for i, stmt in enumerate(block.body):
            from_end.setdefault(id(stmt), size - i)
            for name in {var.name for var in stmt.list_vars()}:
                mentions[name][label].append(size - i)
    keep_alive = [list(block.body) for block in blocks.values()]  # ids in from_end stay unique while this lives
    for varname in violators:
        where = mentions[varname]
        states = ssa._make_states(blocks)
        states["varname"] = varname
        states["defmap"] = defmap = defaultdict(list)
        blocks = _rewrite_blocks(blocks, where, states, ssa._FreshVarHandler(), from_end, keep_alive)
        states = ssa._make_states(blocks)
        states["varname"] = varname
        states["defmap"] = defmap
        states["phimap"] = phimap = defaultdict(list)
        states["cfg"] = cfg
        states["phi_locations"] = ssa._compute_phi_locations(df_plus, defmap)
        handler = _fix_ssa_vars_handler(cache_list_vars, from_end)
        blocks = _rewrite_blocks(blocks, where, states, handler, from_end, keep_alive)
        for label, philist in phimap.items():  # prepend the phi nodes, in a new block as ssa._fix_ssa_vars does
            blocks[label] = _new_block(blocks[label], philist + blocks[label].body)
            size = len(blocks[label].body)
            for i, phi in enumerate(philist):
                from_end[id(phi)] = size - i
            keep_alive.append(philist)
    if compute_cfg_from_blocks(blocks) != cfg:
        raise errors.CompilerError("CFG mutated in SSA pass")
    return blocks


def _new_block(old, body):
    from numba.cuda.core import ir

    block = ir.Block(scope=old.scope, loc=old.loc)
    block.body = body
    return block


def _rewrite_blocks(blocks, where, states, handler, from_end, keep_alive):
    """``ssa._run_block_rewrite``, calling the handler only on the statements that name the variable (``where``:
    label → their distances from the block's end), in block order; every other block is kept as it is."""
    from numba.cuda.core import ir

    rewritten = {}
    for label, block in blocks.items():
        distances = where.get(label)
        if not distances:
            rewritten[label] = block
            continue
        states["label"] = label
        states["block"] = block
        body = list(block.body)
        size = len(body)
        for distance in distances:
            stmt = body[size - distance]
            new = handler.on_assign(states, stmt) if isinstance(stmt, ir.assign_types) else \
                handler.on_other(states, stmt)
            assert new is not None
            if new is not stmt:
                body[size - distance] = new
                from_end[id(new)] = distance
                keep_alive.append(new)
        rewritten[label] = _new_block(block, body)
    return rewritten


def _fix_ssa_vars_handler(cache_list_vars, from_end):
    """``ssa._FixSSAVars`` whose statement-position lookups use the table instead of a scan of the block."""
    from numba.cuda.core import ssa

    class FixSSAVarsIndexed(ssa._FixSSAVars):
        def _stmt_index(self, defstmt, block, stop=-1):
            body = block.body
            distance = from_end.get(id(defstmt))
            position = len(body) - distance if distance is not None else -1
            if not (0 <= position < len(body) and body[position] is defstmt):
                return super()._stmt_index(defstmt, block, stop)  # not where the table says: scan, as Numba does
            searched = len(range(len(body))[:stop])  # the scan looks at positions below this
            return position if position < searched else len(body)

    return FixSSAVarsIndexed(cache_list_vars)


# -- phi stripping: find statements by a cheap key before comparing them --------------------------------------------
def _index_of(body, stmt) -> int:
    """``body.index(stmt)`` (the first statement *equal* to ``stmt``), comparing only statements of the same type
    that assign the same name: the only ones ``__eq__`` can find equal."""
    name = stmt.target.name
    for i, other in enumerate(body):
        if type(other) is type(stmt) and other.target.name == name and other == stmt:
            return i
    raise ValueError("statement not in block")


def _strip_phi_nodes_indexed(self, func_ir):
    """``PreLowerStripPhis._strip_phi_nodes``, statement for statement, without its quadratic searches."""
    from copy import copy

    from numba.cuda.core import ir

    exporters = defaultdict(list)
    phis = set()
    for block in func_ir.blocks.values():
        for assign in block.find_insts(ir.assign_types):
            if isinstance(assign.value, ir.expr_types) and assign.value.op == "phi":
                phis.add(assign)
                phi = assign.value
                for ib, iv in zip(phi.incoming_blocks, phi.incoming_values):
                    exporters[ib].append((assign.target, iv))
    newblocks = {}
    for label, block in func_ir.blocks.items():
        newblk = copy(block)
        newblocks[label] = newblk
        newblk.body = [stmt for stmt in block.body if stmt not in phis]
        term_loc = block.terminator.loc if block.is_terminated else block.loc
        for target, rhs in exporters[label]:
            if rhs is ir.UNDEFINED:
                rhs = ir.Expr.null(loc=func_ir.loc)
            # The last assignment to rhs: Var equality is type and name (loc and scope are ignored).
            last_assignment = None
            if isinstance(rhs, ir.var_types):
                for stmt in reversed(newblk.body):
                    if isinstance(stmt, ir.assign_types) and stmt.target.name == rhs.name and stmt.target == rhs:
                        last_assignment = stmt
                        break
            if last_assignment is not None:
                newblk.body.insert(_index_of(newblk.body, last_assignment) + 1,
                                   ir.Assign(target=target, value=rhs, loc=rhs.loc))
            else:
                newblk.body.insert(0, ir.Assign(target=target, value=rhs, loc=term_loc))
    func_ir.blocks = newblocks
    return func_ir


# -- typing: resolve each (function, argument types) once per kernel, not once per use ---------------------------
# An unrolled kernel asks Numba to type the same operation thousands of times: `acc += a * b` on (float32, float32)
# 1,024 times per k-tile. Each time, `BaseFunction.get_call_type` tries every typing template of the operator in
# turn (with and without literal arguments), about ten template applications per call: 40 % of a kernel's compile
# time in a cProfile of step 9. The answer depends only on the function, the typing context, its target and the
# argument types, so the first answer is kept and reused; `_impl_keys` (which lowering reads) was recorded by that
# first resolution. Failures are not cached (they raise again, with Numba's own message).


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


# -- variable liveness: solve the two data-flow problems once, not by repeated sweeps ---------------------------------
def _compute_live_map_sparse(cfg, blocks, var_use_map, var_def_map):
    """``numba.cuda.core.analysis.compute_live_map``: the variables live at the entry of each block. The original
    sweeps every block until nothing changes, twice: forwards for the variables that *reach* a block (used or defined
    in it or in a block before it), then backwards for the live ones, one block further per sweep — on a kernel with
    loops around long unrolled bodies, ~140 sweeps that each union thousands of names per block. Both are least fixed
    points of monotone equations, so any order of updates reaches the same sets:

    * reaching: one pass over the strongly connected components of the control-flow graph in topological order (the
      blocks of a loop reach each other, so they share one set: theirs and what reaches the loop from outside);
    * live: a worklist — a block is visited again only when a successor's live set grew.
    """
    order = list(blocks)
    reach = defaultdict(set)
    for component in _components_in_topological_order(order, lambda b: [s for s, _ in cfg.successors(b)]):
        inside = set(component)
        reached = set()
        for label in component:
            reached |= var_def_map[label]
            reached |= var_use_map[label]
            for pred, _ in cfg.predecessors(label):
                if pred not in inside:
                    reached |= reach[pred]
        for label in component:
            reach[label] = reached
    live = {label: set(var_use_map[label]) for label in order}
    pending = list(order)  # popped from the end: the last blocks first, as a backward problem wants
    queued = set(pending)
    while pending:
        label = pending.pop()
        queued.discard(label)
        for pred, _ in cfg.predecessors(label):
            grown = ((live[label] & reach[pred]) - var_def_map[pred]) - live[pred]
            if grown:
                live[pred] |= grown
                if pred not in queued:
                    queued.add(pred)
                    pending.append(pred)
    return live


def _components_in_topological_order(nodes, successors) -> list[list]:
    """The strongly connected components of a directed graph, each before every component it has an edge to
    (Tarjan's algorithm, iterative: a kernel's graph is deeper than Python's recursion limit allows)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(successors(root)))]
        while work:
            node, edges = work[-1]
            for succ in edges:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(successors(succ))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(component)
    return found[::-1]  # Tarjan finds a component after all it leads to
