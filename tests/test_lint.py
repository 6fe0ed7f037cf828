"""The package and experiments/ pass pyflakes with nothing ignored: no undefined name (a kernel's compile-time
constants are its keyword-only parameters, so each one is defined where the kernel is), no unused import, no dead
f-string.

pyflakes honours no ``# noqa`` and no per-file ignores, so a step cannot opt out. It is in the dev extras.
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
from pathlib import Path

import pytest

import gemm_steps
from gemm_steps.toolkit.unroll import compile_time_parameters

pyflakes_api = pytest.importorskip("pyflakes.api", reason="pyflakes is in the dev extras: pip install -e '.[dev]'")
from pyflakes.reporter import Reporter  # noqa: E402

PACKAGE = Path(gemm_steps.__file__).resolve().parent
#: The checkout's experiments (not installed with the package): their kernel variants follow the steps' convention.
EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def pyflakes_messages(paths: list[Path]) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    pyflakes_api.checkRecursive([str(p) for p in paths], Reporter(out, err))
    return [line for line in (out.getvalue() + err.getvalue()).splitlines() if line.strip()]


def test_the_package_passes_pyflakes():
    messages = pyflakes_messages([PACKAGE])
    assert not messages, "pyflakes:\n" + "\n".join(messages)


def test_the_experiments_pass_pyflakes():
    """experiments/, its kernel variants included: a variant reading a tile constant or a switch (``ASYNC_A``,
    ``ORDER``) that is not one of its keyword-only parameters fails here, as a step would."""
    assert (EXPERIMENTS / "kernels").is_dir(), f"{EXPERIMENTS} is missing: this test runs in the checkout"
    messages = pyflakes_messages([EXPERIMENTS])
    assert not messages, "pyflakes:\n" + "\n".join(messages)


def test_pyflakes_finds_an_undefined_constant(tmp_path):
    """The check can fail: a kernel reading a tile constant it does not declare is flagged."""
    kernel = tmp_path / "kernel.py"
    kernel.write_text("def kernel(a, *, BLOCK_M):\n    return a[BLOCK_M + BLOCK_N]\n")
    messages = pyflakes_messages([kernel])
    assert len(messages) == 1 and "undefined name 'BLOCK_N'" in messages[0]


TILED = [step for step in gemm_steps.steps() if step.tiled is not None]


@pytest.mark.parametrize("step", TILED, ids=lambda step: f"{step.number}-{step.name}")
def test_every_build_constant_a_kernel_reads_is_one_of_its_parameters(step):
    """A name the build defines (``BLOCK_M``, ``GROUP_M``, ``EDGE``…) that the kernel reads must be a compile-time
    parameter of the kernel, not a module global that the build silently replaces at compile time."""
    tiled = step.tiled
    function = tiled.function
    constants = tiled.variant_constants("fast")
    read = {node.id for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(function))))
            if isinstance(node, ast.Name)}
    shadowed = sorted((read & set(constants)) - set(compile_time_parameters(function)))
    assert not shadowed, f"{step.name}: reads {shadowed}, which the build sets, without declaring them after `*`"


# -- experiments reach the package through its public names only (issue 38, deliverable 5) ----------------------------
#: Private attributes of other libraries' objects an experiment may read: Numba's compiled kernel's code library (how
#: the toolkit itself gets a driver function) and the simulator's array behind a device array.
FOREIGN_PRIVATE = {"_codelibrary", "_ary"}


def private_reaches(source: str, where: str) -> list[str]:
    """``from gemm_steps… import _name`` and ``obj._name`` (not ``self``/``cls``, not a dunder, not one of
    :data:`FOREIGN_PRIVATE`) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gemm_steps"):
            found += [f"{where}:{node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value.id if isinstance(node.value, ast.Name) else None
            if base not in ("self", "cls") and node.attr not in FOREIGN_PRIVATE:
                found.append(f"{where}:{node.lineno}: .{node.attr}")
    return found


def test_experiments_use_only_the_packages_public_names():
    found = []
    for path in sorted(EXPERIMENTS.rglob("*.py")):
        found += private_reaches(path.read_text(), str(path.relative_to(EXPERIMENTS.parent)))
    assert not found, "experiments reach into the package's private names:\n" + "\n".join(found)


def test_the_private_name_check_can_fail():
    planted = ("from gemm_steps.harness.bench import _Timer\nplan = tiled._plans.get(key)\n"
               "self._x = 1\nf = kernel.compile(s)._codelibrary\nname = type(x).__name__\n")
    assert [line.split(": ", 1)[1] for line in private_reaches(planted, "e")] == [
        "from gemm_steps.harness.bench import _Timer", "._plans"]
