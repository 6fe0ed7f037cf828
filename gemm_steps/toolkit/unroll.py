"""Compile-time loops for Numba kernels: how the course unrolls without an unroll pragma.

Numba has no ``#pragma unroll``, and the fast steps need their k-loop unrolled and their register tile held in
named registers (an array indexed at run time lands in slow local memory). So a kernel marks what must be
expanded, in ordinary Python, and this module expands it before Numba compiles:

``for i in unroll(N):``  (also ``unroll(start, stop[, step])``)
    A compile-time loop: the body is repeated for i = 0 … N-1, with ``i`` a constant in each copy. Like CUDA C's
    ``#pragma unroll``, Triton's ``tl.static_range`` and numba-cuda-mlir's ``for i in consteval(range(N))``.
``acc = registers(THREAD_M, THREAD_N)``
    A register tile: ``acc[i][j]`` (or ``acc[i, j]``) with compile-time ``i, j`` becomes the scalar ``acc_i_j``.
    Indexing it with a run-time value is an error (say so here rather than fall into local memory).
``if EDGE:`` / ``x if EDGE else y``
    A condition made only of compile-time values keeps one branch, decided when the kernel is compiled.
``j = THREAD_N - 1 - jj if i % 2 else jj``  (inside an ``unroll`` loop)
    A name assigned a compile-time value inside an unrolled loop is a compile-time name for the rest of that copy.

``def kernel(a, b, c, m, n, k, …, *, BLOCK_M, BLOCK_N, EDGE):``
    The parameters after ``*`` are the kernel's **compile-time constants**, as Triton's ``tl.constexpr`` parameters
    and CUTLASS's template parameters are: every constant a kernel reads is named in its signature, so a reader (and
    a linter) finds each one there. The build gives their values (:func:`expand`'s ``constants``); the generated
    kernel has only the run-time parameters.

Compile-time values are the tile constants a kernel is built with (``BLOCK_M``, ``THREAD_N``…, passed to
:func:`expand`), the ``unroll`` loop variables, and arithmetic on them, which is folded into one number
(``kk * BLOCK_M + q`` → ``1040``). The tile constants themselves stay names in the generated code, where Numba
reads them as compile-time globals.

Everything here is plain Python too: ``unroll`` is ``range`` and ``registers`` a nested list, so an unexpanded
kernel still runs, slowly, on Numba's simulator (the tests use that to check the expansion).

``step.source()`` shows the kernel as written; ``step.generated_source()`` shows what :func:`expand` made of it.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import os
import textwrap
import threading
from pathlib import Path
from typing import Any, Callable

from .backend import keep_text, kept_text, user_cache

__all__ = ["unroll", "registers", "expand", "compile_time_parameters", "define", "cache_dir", "UnrollError"]


def unroll(*args: int) -> range:
    """Mark a loop to be unrolled at compile time: ``for kk in unroll(BLOCK_K):``. Takes ``range``'s arguments."""
    return range(*args)


def registers(*shape: int):
    """Declare a register tile: ``acc = registers(THREAD_M, THREAD_N)``, then ``acc[i][j]`` with constant i, j."""
    if len(shape) == 1:
        return [0.0] * shape[0]
    return [registers(*shape[1:]) for _ in range(shape[0])]


class UnrollError(SyntaxError):
    """A kernel uses ``unroll`` or ``registers`` in a way that cannot be expanded at compile time."""


_FOLDABLE = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)
_ALLOWED_CALLS = {"min": min, "max": max, "abs": abs, "int": int, "bool": bool}
_UNKNOWN = object()


_POSITION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _clone(node):
    """A copy of an AST (much faster than copy.deepcopy, which the nested unrolled bodies would spend seconds in)."""
    if isinstance(node, list):
        return [_clone(item) for item in node]
    if isinstance(node, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
        return node  # stateless singletons
    if isinstance(node, ast.AST):
        new = node.__class__()
        for field in node._fields:
            setattr(new, field, _clone(getattr(node, field, None)))
        for attribute in _POSITION:
            if hasattr(node, attribute):
                setattr(new, attribute, getattr(node, attribute))
        return new
    return node


def _is_call_to(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


class _Expander:
    """Expands one kernel. ``constants``: tile constants (kept as names, folded inside expressions);
    ``local``: unroll variables and compile-time assignments (always replaced by their values)."""

    def __init__(self, constants: dict[str, Any], where: str):
        self.constants = dict(constants)
        self.registers: dict[str, tuple[int, ...]] = {}
        self.where = where

    # -- errors ------------------------------------------------------------------------------------------------
    def error(self, node: ast.AST, message: str) -> UnrollError:
        return UnrollError(f"{self.where}, line {getattr(node, 'lineno', '?')}: {message}")

    # -- compile-time values -----------------------------------------------------------------------------------
    def value(self, node: ast.AST, local: dict) -> Any:
        """The compile-time value of an expression, or _UNKNOWN."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            return self.constants.get(node.id, _UNKNOWN)
        if isinstance(node, _FOLDABLE) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                                           and node.func.id in _ALLOWED_CALLS and not node.keywords):
            names = {}
            for child in ast.walk(node):
                if isinstance(child, ast.Name):
                    if isinstance(node, ast.Call) and child is node.func:
                        continue
                    found = self.value(child, local)
                    if found is _UNKNOWN and not (child.id in _ALLOWED_CALLS):
                        return _UNKNOWN
                    if found is not _UNKNOWN:
                        names[child.id] = found
                elif not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop,
                                            ast.Constant, ast.Call, *_FOLDABLE)):
                    return _UNKNOWN
            try:
                result = eval(compile(ast.Expression(node), "<compile-time>", "eval"),
                              {"__builtins__": {}, **_ALLOWED_CALLS}, names)
            except Exception:
                return _UNKNOWN
            return result if isinstance(result, (int, float, bool)) else _UNKNOWN
        return _UNKNOWN

    def required(self, node: ast.AST, local: dict, what: str) -> Any:
        found = self.value(node, local)
        if found is _UNKNOWN:
            raise self.error(node, f"{what} must be known at compile time, got `{ast.unparse(node)}`")
        return found

    # -- expressions -------------------------------------------------------------------------------------------
    def expression(self, node: ast.AST, local: dict) -> ast.AST:
        expander = self

        class Rewrite(ast.NodeTransformer):
            def visit_Name(self, name: ast.Name):
                if name.id in expander.registers:
                    raise expander.error(name, f"register tile `{name.id}` must be indexed with compile-time "
                                               f"indices everywhere (`{name.id}[i][j]`)")
                if name.id in local:
                    if not isinstance(name.ctx, ast.Load):
                        raise expander.error(name, f"`{name.id}` is a compile-time name here and cannot be assigned")
                    return ast.copy_location(ast.Constant(local[name.id]), name)
                return name

            def visit_Subscript(self, sub: ast.Subscript):
                base, indices = sub, []
                while isinstance(base, ast.Subscript):  # acc[i][j] → base acc, indices [i, j]
                    index = base.slice
                    indices[:0] = list(index.elts) if isinstance(index, ast.Tuple) else [index]
                    base = base.value
                if isinstance(base, ast.Name) and base.id in expander.registers:
                    shape = expander.registers[base.id]
                    values = [expander.required(i, local, f"an index of register tile `{base.id}`") for i in indices]
                    if len(values) != len(shape) or not all(0 <= v < n for v, n in zip(values, shape)):
                        raise expander.error(sub, f"`{ast.unparse(sub)}` is outside register tile `{base.id}` of "
                                                  f"shape {shape} (indices {values})")
                    return ast.copy_location(ast.Name("_".join([base.id, *map(str, values)]), sub.ctx), sub)
                return self.generic_visit(sub)

            def visit_IfExp(self, node: ast.IfExp):
                test = expander.value(node.test, local)
                if test is not _UNKNOWN:
                    return self.visit(node.body if test else node.orelse)
                return self.fold(self.generic_visit(node))

            def fold(self, node):
                if isinstance(node, _FOLDABLE):
                    found = expander.value(node, {})
                    if found is not _UNKNOWN:
                        return ast.copy_location(ast.Constant(found), node)
                return node

            def generic_visit(self, node):
                node = super().generic_visit(node)
                return self.fold(node)

        return Rewrite().visit(node)

    # -- statements --------------------------------------------------------------------------------------------
    def declares_registers(self, stmt: ast.Assign) -> bool:
        """``x = registers(…)`` or ``x, y = registers(…), registers(…)``."""
        calls = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
        if not any(_is_call_to(call, "registers") for call in calls):
            return False
        target = stmt.targets[0]
        targets = target.elts if isinstance(target, ast.Tuple) else [target]
        if (len(stmt.targets) != 1 or len(targets) != len(calls) or not all(isinstance(t, ast.Name) for t in targets)
                or not all(_is_call_to(call, "registers") for call in calls)):
            raise self.error(stmt, "declare register tiles as `name = registers(ROWS, COLS)` "
                                   "or `x, y = registers(N), registers(N)`")
        return True

    def statements(self, body: list[ast.stmt], local: dict, in_unroll: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        local = dict(local)  # compile-time assignments stay inside this block
        for stmt in body:
            out += self.statement(stmt, local, in_unroll)
        return out

    def statement(self, stmt: ast.stmt, local: dict, in_unroll: bool) -> list[ast.stmt]:
        if isinstance(stmt, ast.For) and _is_call_to(stmt.iter, "unroll"):
            if not isinstance(stmt.target, ast.Name) or stmt.orelse:
                raise self.error(stmt, "`for NAME in unroll(...)`: one loop variable and no `else`")
            args = [self.required(a, local, "the range of an unroll loop") for a in stmt.iter.args]
            out = []
            for value in range(*args):
                out += self.statements(_clone(stmt.body), {**local, stmt.target.id: value}, True)
            return out
        if isinstance(stmt, ast.Assign) and self.declares_registers(stmt):
            targets = stmt.targets[0].elts if isinstance(stmt.targets[0], ast.Tuple) else [stmt.targets[0]]
            calls = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
            for target, call in zip(targets, calls):
                shape = tuple(self.required(a, local, "a register tile's shape") for a in call.args)
                self.registers[target.id] = shape
            return []
        if isinstance(stmt, ast.If):
            test = self.value(stmt.test, local)
            if test is not _UNKNOWN:
                return self.statements(stmt.body if test else stmt.orelse, local, in_unroll)
        if (in_unroll and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id not in self.registers):
            found = self.value(self.expression(_clone(stmt.value), local), local)
            if found is not _UNKNOWN:
                local[stmt.targets[0].id] = found
                return []
        # An ordinary statement: rewrite its expressions, expand the statement lists inside it.
        # (A run-time branch or loop inside an unrolled body: what it assigns is not known at compile time.)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(stmt, field, None), list):
                expanded = self.statements(getattr(stmt, field), local, False)
                setattr(stmt, field, expanded or ([] if field == "orelse" else [ast.Pass()]))
        for field, value in ast.iter_fields(stmt):
            if isinstance(value, ast.expr):
                setattr(stmt, field, self.expression(value, local))
            elif isinstance(value, list) and value and isinstance(value[0], ast.expr):
                setattr(stmt, field, [self.expression(v, local) for v in value])
        return [stmt]


def compile_time_parameters(function: Callable) -> list[str]:
    """The names of ``function``'s compile-time constants: its keyword-only parameters (after ``*``)."""
    return list(inspect.signature(function).parameters)[function.__code__.co_argcount:]


def expand(function: Callable, constants: dict[str, Any], name: str | None = None) -> str:
    """The source of ``function`` with its ``unroll`` loops, register tiles and compile-time branches expanded.

    ``constants`` are the compile-time names (tile sizes, variant switches such as ``EDGE``); each of the
    function's keyword-only parameters must be one of them, and is dropped from the generated signature. The result
    is a plain Python function (decorators dropped, renamed to ``name``), ready for :func:`define`.

    An expansion is kept on disk (``expanded/`` of :func:`gemm_steps.toolkit.backend.user_cache`, keyed by the
    function's source, the constants, the name and this module's code), so the next process that builds the same
    kernel reads it instead of expanding again (a Hopper step's fast kernel: about a second).
    """
    lines, first_line = inspect.getsourcelines(function)
    key = _expansion_key("".join(lines), constants, name)
    kept = _kept_expansion(key)
    if kept is not None:
        return kept
    expanded = _expand(function, lines, first_line, constants, name)
    _keep_expansion(key, expanded)
    return expanded


def _expand(function: Callable, lines: list[str], first_line: int, constants: dict[str, Any],
            name: str | None) -> str:
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first_line - 1)  # errors name the line in the kernel's file, not in the function
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        raise TypeError(f"expand() takes a function, got {function!r}")
    where = f"{inspect.getsourcefile(function)}:{function.__name__}"
    missing = [arg.arg for arg in definition.args.kwonlyargs if arg.arg not in constants]
    if missing or definition.args.kw_defaults != [None] * len(definition.args.kwonlyargs):
        raise UnrollError(f"{where}: its compile-time parameters (after `*`, no defaults) must all be given by the "
                          f"build; no value for {', '.join(missing) or 'a parameter with a default'} (the build "
                          f"gives {', '.join(sorted(constants))})")
    definition.args.kwonlyargs, definition.args.kw_defaults = [], []
    expander = _Expander(constants, where)
    definition.decorator_list = []
    if name:
        definition.name = name
    definition.body = expander.statements(definition.body, {}, False)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


# -- expansions kept on disk -------------------------------------------------------------------------------------------
#: How many expansions :func:`expand` keeps on disk (a few to a few hundred KB each); past it the oldest go.
KEPT_EXPANSIONS = 300
#: What an expansion is made by besides its inputs: this module's code.
_EXPANDER_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _expansion_key(source: str, constants: dict[str, Any], name: str | None) -> str | None:
    """The key of one expansion on disk: a hash of the function's source, the constants, the name and this module's
    code — everything :func:`expand` reads. None (not kept) if a constant is not a plain value whose ``repr`` is
    the same in every process."""
    def plain(value) -> bool:
        return value is None or isinstance(value, (bool, int, float, str)) or (
            isinstance(value, tuple) and all(plain(v) for v in value))

    if not all(plain(value) for value in constants.values()):
        return None
    text = "\0".join([_EXPANDER_DIGEST, repr(name), repr(sorted(constants.items())), source])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _kept_expansion(key: str | None) -> str | None:
    """An expansion made before, by any process (every lesson's kernel, test worker and GPU-mode worker expands the
    same kernels), or None."""
    return None if key is None else kept_text("expanded", f"{key}.py")


def _keep_expansion(key: str | None, source: str) -> None:
    if key is not None:
        keep_text("expanded", f"{key}.py", source, KEPT_EXPANSIONS)


def cache_dir() -> Path | None:
    """Where generated sources are written (``$GEMM_STEPS_CACHE``, else ``~/.cache/gemm-steps``); None if unwritable."""
    root = user_cache() / "generated"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return root if os.access(root, os.W_OK) else None


def define(source: str, name: str, namespace: dict[str, Any], key: str = "", directory: Path | None = None) -> str:
    """Execute generated source into ``namespace``; return the file name its code objects carry.

    With ``directory``, the source is written there as ``<name>_<hash of source and key>.py`` (once: the file is
    never rewritten, so its timestamp stays put) and compiled from that path. Numba's on-disk cache
    (``cuda.jit(cache=True)``) needs exactly that — a real, unchanging source file — to reuse a compiled kernel in
    the next process instead of compiling it again. Without a directory the code gets a ``<generated …>`` name,
    registered with linecache. Either way tracebacks, ``inspect`` and the simulator (which tells shared arrays
    apart by file name and line) see real lines.
    """
    digest = hashlib.sha256((source + "\0" + key).encode()).hexdigest()[:16]
    if directory is not None:
        path = directory / f"{name}_{digest}.py"
        if not path.exists():
            temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # one per writer
            temporary.write_text(source)
            os.replace(temporary, path)
        filename = str(path)
    else:
        filename = f"<generated {name} {digest}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return filename
