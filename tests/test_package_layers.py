"""The package's layers, read from its source: no import runs back up a layer, and nothing reaches into the
repository's own folders.

Layers, lowest first: ``toolkit`` (what kernels are built with) → ``steps`` (the kernels) → ``harness`` (what calls,
checks and times them) → ``course`` (lessons' helpers, plots, the command). A module may import its own layer and the
layers below it; ``gemm_steps/__init__.py`` (the public API: ``matmul``, ``get_step``…) sits above the harness, so only
``course`` may import it (``gemm_steps/__main__.py``, the command, counts as ``course``). Every import is counted, including those inside functions and ``importlib.import_module``.

``scripts/``, ``experiments/``, ``tests/`` and ``lessons/`` come with a checkout, not with the package (a wheel has
none of them, tests/test_wheel.py): no module imports them or builds a path into them. The one exception is data,
not code: ``harness/results_files.py`` names ``experiments/results`` (measurements the lessons read from a
checkout, or from the current directory).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gemm_steps"
RANK = {"toolkit": 0, "steps": 1, "harness": 2, "top": 3, "course": 4}
REPO_ONLY = {"scripts", "experiments", "tests", "lessons"}
#: Repository paths a module may name: measurements (data, read where present), in the one module that finds them.
ALLOWED_PATHS = {("harness/results_files.py", "experiments/results")}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str | None:
    """The layer of a module of gemm_steps (``top`` for the package itself and ``__main__``); None outside it."""
    parts = module.split(".")
    if parts[0] != "gemm_steps":
        return None
    if len(parts) == 1:
        return "top"
    if parts[1] == "__main__":  # python -m gemm_steps: the command
        return "course"
    return parts[1] if parts[1] in RANK else None


def is_module(module: str) -> bool:
    base = PACKAGE.parent.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, module) for every import in ``path`` (or in ``source``, as if it were that file), relative ones
    resolved; ``from X import y`` counts as ``X.y`` where ``y`` is a module."""
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            subs = [f"{source}.{a.name}" for a in node.names if is_module(f"{source}.{a.name}")]
            found += [(node.lineno, m) for m in subs] or [(node.lineno, source)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "import_module", "__import__") and node.args:
            first = node.args[0]
            if isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
                first = first.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
                found.append((node.lineno, first.value.rstrip(".")))
    return found


def repo_paths(path: Path) -> list[tuple[int, str]]:
    """(line, text) for every string used as a path (an operand of ``/``, an argument of ``Path``, ``joinpath``,
    ``open``, ``glob``, ``spec_from_file_location``…) whose first component is a repository-only folder."""
    tree = ast.parse(path.read_text(), str(path))
    path_calls = {"Path", "PurePath", "joinpath", "join", "open", "glob", "rglob", "spec_from_file_location",
                  "read_text", "is_file", "is_dir", "exists"}
    candidates = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            candidates += [node.left, node.right]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in path_calls:
            candidates += node.args
    found = []
    for node in candidates:
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            node = node.values[0]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip("/")
            if text.split("/")[0] in REPO_ONLY:
                found.append((node.lineno, text))
    return found


def package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_layers_are_recognised():
    assert {layer(module_name(p)) for p in package_files()} == set(RANK)
    assert len(package_files()) > 40


def test_no_import_runs_back_up_a_layer():
    wrong = []
    for path in package_files():
        own = layer(module_name(path))
        for line, module in imports(path):
            target = layer(module)
            if target is not None and RANK[target] > RANK[own]:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} ({own}) imports {module} ({target})")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_imports_inside_functions_and_relative_ones():
    source = ("from gemm_steps import get_step\n"
              "def f():\n    from ..course import plots\n    import importlib\n"
              "    importlib.import_module(f'experiments.kernels.{name}')\n")
    found = {module for _, module in imports(PACKAGE / "harness" / "probe.py", source)}
    assert {"gemm_steps", "gemm_steps.course.plots", "experiments.kernels"} <= found
    assert layer("gemm_steps") == "top" and layer("gemm_steps.course.plots") == "course"


def test_nothing_imports_a_repository_folder():
    wrong = [f"{path.relative_to(PACKAGE)}:{line} imports {module}"
             for path in package_files() for line, module in imports(path) if module.split(".")[0] in REPO_ONLY]
    assert not wrong, "\n".join(wrong)


def test_nothing_builds_a_path_into_a_repository_folder():
    wrong = []
    for path in package_files():
        rel = path.relative_to(PACKAGE).as_posix()
        for line, text in repo_paths(path):
            if not any(rel == f and (text + "/").startswith(p + "/") for f, p in ALLOWED_PATHS):
                wrong.append(f"{rel}:{line} builds a path into {text!r}")
    assert not wrong, "\n".join(wrong)


def test_no_lesson_helper_imports_another():
    """A lesson's helper (course/lesson_NN.py) is that lesson's; what two lessons share lives in a course module named
    by its job (models, compiled, sweeps, timings, targets …)."""
    wrong = []
    for path in sorted((PACKAGE / "course").glob("lesson_*.py")):
        own = module_name(path)
        wrong += [f"{path.name}:{line} imports {module}" for line, module in imports(path)
                  if module.startswith("gemm_steps.course.lesson_") and module != own]
    assert not wrong, "\n".join(wrong)


def test_importing_a_lesson_helper_loads_no_pyplot():
    """The lesson helpers import Matplotlib (and :mod:`gemm_steps.course.plots`, which loads pyplot) inside the
    functions that draw: a test, a script or the command that reads a helper's numbers does not pay for pyplot."""
    import subprocess
    import sys

    helpers = sorted(p.stem for p in (PACKAGE / "course").glob("lesson_*.py")) + ["timelines", "timings", "targets",
                                                                                      "gpu_model", "profiles"]
    script = ("import importlib, sys\n"
              f"for name in {helpers!r}:\n"
              "    importlib.import_module('gemm_steps.course.' + name)\n"
              "    if 'matplotlib.pyplot' in sys.modules:\n"
              "        print(name)\n"
              "        break\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"importing gemm_steps.course.{done.stdout.strip()} loaded matplotlib.pyplot"
