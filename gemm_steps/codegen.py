"""Generating kernel source: how the course unrolls loops without an unroll pragma.

Numba has no ``#pragma unroll``, and ``literal_unroll`` does not unroll ``range``. So a step that needs a loop
unrolled (register arrays indexed only by constants, a k-loop with no branch per iteration) writes its kernel as
a *template* — ordinary Python plus three line directives — and this module expands it into plain Python source,
which Numba then compiles like any other function. The result is readable: ``step.source()`` prints it.

Directives (each on its own comment line; the lines between them keep their indentation):

``# @for NAME in range(EXPR)`` … ``# @end``
    Repeat the enclosed lines for every value, substituting ``{{ … }}`` expressions that use ``NAME``.
``# @if EXPR`` … [``# @else``] … ``# @end``
    Keep one branch, decided at generation time (for example the guarded edge variant of a kernel).
``# @indent EXPR`` … ``# @end``
    Indent the enclosed lines by four more spaces when EXPR is true (to put a body inside a loop that only
    one variant has, such as the persistent kernel's loop over tiles).
``{{ EXPR }}``
    Anywhere in a line: replaced by the value of a Python expression over the template's constants and the
    enclosing ``@for`` variables (``acc_{{i}}_{{j}}`` becomes ``acc_0_0``, ``acc_0_1``, …).
"""

from __future__ import annotations

import hashlib
import linecache
import os
import re
from pathlib import Path
from typing import Any

_DIRECTIVE = re.compile(r"^\s*#\s*@(for|if|indent|else|end)\b\s*(.*)$")
_FOR = re.compile(r"^(\w+)\s+in\s+(range\(.*\))\s*$")
_SUBST = re.compile(r"\{\{(.+?)\}\}")


def _substitute(line: str, env: dict) -> str:
    return _SUBST.sub(lambda m: str(eval(m.group(1), {}, env)), line)


def _block_end(lines: list[str], start: int) -> tuple[int, int | None]:
    """Index of the ``@end`` matching the directive at ``start``, and of its ``@else`` if any."""
    depth, else_at = 0, None
    for i in range(start + 1, len(lines)):
        match = _DIRECTIVE.match(lines[i])
        if not match:
            continue
        kind = match.group(1)
        if kind in ("for", "if", "indent"):
            depth += 1
        elif kind == "else" and depth == 0:
            else_at = i
        elif kind == "end":
            if depth == 0:
                return i, else_at
            depth -= 1
    raise SyntaxError(f"template: no '# @end' for line {start + 1}: {lines[start].strip()}")


def _expand(lines: list[str], env: dict) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match:
            out.append(_substitute(lines[i], env))
            i += 1
            continue
        kind, rest = match.groups()
        if kind in ("else", "end"):
            raise SyntaxError(f"template: '# @{kind}' without an opening directive at line {i + 1}")
        end, else_at = _block_end(lines, i)
        if kind == "for":
            loop = _FOR.match(rest)
            if not loop:
                raise SyntaxError(f"template: expected '# @for NAME in range(...)', got: {lines[i].strip()}")
            name, values = loop.group(1), eval(loop.group(2), {}, env)
            for value in values:
                out += _expand(lines[i + 1:end], {**env, name: value})
        elif kind == "indent":
            body = _expand(lines[i + 1:end], env)
            out += [("    " + line if line.strip() else line) for line in body] if eval(rest, {}, env) else body
        else:
            keep = bool(eval(rest, {}, env))
            body = lines[i + 1:else_at] if else_at is not None else lines[i + 1:end]
            other = lines[else_at + 1:end] if else_at is not None else []
            out += _expand(body if keep else other, env)
        i = end + 1
    return out


def expand(template: str, constants: dict[str, Any]) -> str:
    """Expand a template (see the module docstring) with the given compile-time constants."""
    return "\n".join(_expand(template.strip("\n").splitlines(), dict(constants))) + "\n"


def cache_dir() -> Path | None:
    """Where generated sources are written (``$GEMM_STEPS_CACHE``, else ``~/.cache/gemm-steps``); None if unwritable."""
    root = Path(os.environ.get("GEMM_STEPS_CACHE") or Path.home() / ".cache" / "gemm-steps") / "generated"
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
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(source)
            os.replace(temporary, path)
        filename = str(path)
    else:
        filename = f"<generated {name} {digest}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return filename
