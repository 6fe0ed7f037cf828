"""Readable kernels: the package's layers, a step's kernel as a reader sees it, and what is really compiled.

* **Layers.** Kernels (``gemm_steps/steps``) import only the toolkit (and numba, numpy, the standard library, and
  sibling steps); the toolkit imports nothing from the harness or the course. Checked on the source (every
  ``import``, relative or absolute, anywhere in a module) and in a fresh process: calling a step loads neither the
  benchmark harness nor matplotlib.
* **Readable.** A step's kernel, as written, is short enough to read in one sitting, and no step is a text
  template any more: compile-time loops are marked in Python (:mod:`gemm_steps.toolkit.unroll`).
* **What runs is what is shown.** ``step.generated_source()`` is exactly the source of the kernels the step
  launches, and expanding the readable kernel again gives the same text.
"""

from __future__ import annotations

import ast
import inspect
import json
import linecache
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gemm_steps
from gemm_steps import Step
from gemm_steps.toolkit import unroll

PACKAGE = Path(gemm_steps.__file__).resolve().parent
STEPS = gemm_steps.steps()
TILED = [step for step in STEPS if step.tiled is not None]

#: The most non-blank, non-comment lines a step's kernel may have. The longest kernel (step 11's stream-K, with
#: its fixup) is ~115; 160 is about three screens, what a reader can hold while following one lesson. A kernel
#: past it has grown something (a variant, a switch, a second algorithm) that belongs in experiments/ or its
#: own step.
MAX_KERNEL_LINES = 160
#: What the old text template looked like: ``# @for kk in range(BLOCK_K)`` / ``# @if EDGE`` lines and
#: ``{{load * THREADS}}`` placeholders.
TEMPLATE_MARKERS = re.compile(r"^\s*# @\w+|\{\{[^{}\n]*\}\}", re.MULTILINE)


def step_id(step: Step) -> str:
    return f"{step.number}-{step.name}"


# -- layers: what each layer may import ---------------------------------------------------------------------------

def imported_names(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of everything ``source`` imports, anywhere in it.

    ``package`` is the module's ``__package__``, to resolve relative imports. ``from X import y`` gives ``X.y`` (so
    ``from .. import harness`` is caught); ``importlib.import_module("…")`` and ``__import__("…")`` with a constant
    name count too.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                if node.level - 1 > len(parts) - 1:
                    raise ValueError(f"line {node.lineno}: relative import beyond the top of {package}")
                base = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")):
            found.append((node.lineno, node.args[0].value))
    return found


def top_level(name: str) -> str:
    return name.split(".", 1)[0]


def kernel_layer_violations(source: str, package: str = "gemm_steps.steps") -> list[str]:
    """Imports a step module may not make: anything of gemm-steps but the toolkit and sibling steps, and any
    third-party package but numba and numpy."""
    bad = []
    for line, name in imported_names(source, package):
        if top_level(name) == "gemm_steps":
            allowed = name.startswith(("gemm_steps.toolkit.", "gemm_steps.steps.")) or name in (
                "gemm_steps.toolkit", "gemm_steps.steps")
        else:
            allowed = top_level(name) in ("numba", "numpy", "__future__") or top_level(name) in sys.stdlib_module_names
        if not allowed:
            bad.append(f"line {line}: {name}")
    return bad


def toolkit_layer_violations(source: str, package: str = "gemm_steps.toolkit") -> list[str]:
    """Imports a toolkit module may not make: the layers above it (steps, harness, course) or the package's
    top level (which imports the harness)."""
    return [f"line {line}: {name}" for line, name in imported_names(source, package)
            if top_level(name) == "gemm_steps" and not (name == "gemm_steps.toolkit"
                                                         or name.startswith("gemm_steps.toolkit."))]


def modules_in(folder: str) -> list[Path]:
    paths = sorted((PACKAGE / folder).glob("*.py"))
    assert paths, f"no modules in gemm_steps/{folder}"
    return paths


def package_of(path: Path) -> str:
    return "gemm_steps." + path.parent.name  # every module here, __init__ included, is in steps/ or toolkit/


@pytest.mark.parametrize("path", modules_in("steps"), ids=lambda p: p.stem)
def test_kernel_modules_import_only_the_toolkit(path):
    bad = kernel_layer_violations(path.read_text(), package_of(path))
    assert not bad, (f"gemm_steps/steps/{path.name} imports outside the kernel layer (toolkit, sibling steps, "
                     f"numba, numpy, stdlib): {bad}")


@pytest.mark.parametrize("path", modules_in("toolkit"), ids=lambda p: p.stem)
def test_toolkit_imports_nothing_above_it(path):
    bad = toolkit_layer_violations(path.read_text(), package_of(path))
    assert not bad, f"gemm_steps/toolkit/{path.name} imports from a layer above the toolkit: {bad}"


@pytest.mark.parametrize("source", [
    "from ..harness import api",
    "from ..harness.api import run_step",
    "from .. import course",
    "from gemm_steps.harness.bench import run_benchmark",
    "import gemm_steps.course.cli",
    "import gemm_steps",
    "from gemm_steps import matmul",
    "import matplotlib.pyplot as plt",
    "def f():\n    from ..harness import tuning\n",
    "import importlib\nimportlib.import_module('gemm_steps.harness.bench')",
])
def test_the_layer_check_catches_forbidden_imports(source):
    """The checks above can fail: relative, absolute, nested and dynamic imports of the layers above are caught."""
    assert kernel_layer_violations(source), f"not caught in a step module: {source!r}"
    if "matplotlib" not in source:
        assert toolkit_layer_violations(source, "gemm_steps.toolkit"), f"not caught in the toolkit: {source!r}"


@pytest.mark.parametrize("source", [
    "from ..toolkit.tile_config import TileConfig", "from ..toolkit import unroll", "from . import warp_tiling",
    "from numba import cuda, float32", "import numpy as np", "import math", "from __future__ import annotations",
])
def test_the_layer_check_allows_what_kernels_use(source):
    assert kernel_layer_violations(source) == []


def test_calling_a_step_loads_neither_the_benchmark_nor_matplotlib():
    """In a fresh process, ``gemm_steps.get_step(3)(a, b)`` — the whole path a user takes — imports no benchmark,
    tuning, PTX or course module and no matplotlib (a kernel call must not pay for the tools around it)."""
    code = textwrap.dedent("""
        import json, sys
        import numpy as np
        import gemm_steps
        a = np.arange(12, dtype=np.float32).reshape(4, 3)
        b = np.arange(15, dtype=np.float32).reshape(3, 5)
        c = gemm_steps.get_step(3)(a, b)
        print(json.dumps({"right": bool(np.array_equal(c, a @ b)), "modules": sorted(sys.modules)}))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["right"], "step 3 gave a wrong product in the fresh process"
    modules = result["modules"]
    assert "gemm_steps.steps.shared_memory" in modules  # the check looks at the right process
    loaded = [name for name in modules
              if name in ("gemm_steps.harness.bench", "gemm_steps.harness.tuning", "gemm_steps.harness.ptx")
              or top_level(name) == "matplotlib" or name == "gemm_steps.course" or name.startswith("gemm_steps.course.")]
    assert not loaded, f"calling a step imported {loaded}"


# -- a step's kernel stays readable ------------------------------------------------------------------------------

def code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_kernel_is_short_enough_to_read(step):
    functions = step.kernel_functions()
    assert functions, f"step {step.name} shows no kernel function"
    for function in functions:
        assert inspect.getsourcefile(function) == inspect.getsourcefile(step.module), (
            f"{function.__name__} is not written in the step's own module")
    source = step.kernel_source()
    assert code_lines(source) <= MAX_KERNEL_LINES, (
        f"step {step.name}'s kernel has {code_lines(source)} lines of code (limit {MAX_KERNEL_LINES}): "
        f"move variants to experiments/ or split the step")


def test_the_template_check_catches_the_old_template():
    old = "def {{KERNEL_NAME}}(a):\n# @for load in range(A_LOADS)\n    a_row_{{load}} = tid + {{load * THREADS}}\n"
    assert len(TEMPLATE_MARKERS.findall(old)) == 4
    assert TEMPLATE_MARKERS.findall('PTX_EXPECT = {"fast": {"local": 0}}  # @ not a marker') == []


def test_line_count_ignores_blanks_and_comments():
    assert code_lines("def f():\n\n    # a comment\n    x = 1  # trailing\n        \n    return x\n") == 3


@pytest.mark.parametrize("step", STEPS, ids=step_id)
def test_no_step_is_a_text_template(step):
    source = step.source()
    found = TEMPLATE_MARKERS.findall(source)
    assert not found, f"gemm_steps/steps/{step.name}.py contains template markers {found}: write ordinary Python"
    ast.parse(source)  # and the module is valid Python as written


# -- what is compiled is what generated_source() shows ------------------------------------------------------------

def generated_parts(step: Step) -> dict[str, str]:
    """``generated_source()`` split into its header, the fast and edge kernels and (steps 17, 18) the fast kernel's
    partial-tile build, and (step 17) its THREAD_COPIES and B_ROWS_MOD_4 builds."""
    text = step.generated_source()
    match = re.fullmatch(r"(# Generated for [^\n]*\n)\n# ---- fast kernel[^\n]*\n(.*)\n# ---- edge kernel[^\n]*\n(.*?)"
                         r"(?:\n# ---- partial-tile build[^\n]*\n(.*?))?"
                         r"(?:\n# ---- THREAD_COPIES build[^\n]*\n(.*?))?"
                         r"(?:\n# ---- B_ROWS_MOD_4 build[^\n]*\n(.*))?", text, re.S)
    assert match, f"step {step.name}: generated_source() has not the header / fast / edge layout:\n{text[:400]}"
    return {"header": match.group(1), "fast": match.group(2), "edge": match.group(3), "partial": match.group(4),
            "thread_copies": match.group(5), "b_rows": match.group(6)}


def owner(step: Step, variant: str):
    """The TiledKernels that compiles this variant (steps 10 and 11 take their edge kernel from step 9's build)."""
    tiled = step.tiled
    return tiled.edge_source if variant == "edge" and tiled.edge_source is not None else tiled


@pytest.mark.parametrize("step", TILED, ids=step_id)
def test_generated_source_is_the_source_of_the_launched_kernels(step):
    parts = generated_parts(step)
    kernels = step.kernels()
    config = step.config
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N"):
        assert f"{name}={config[name]} " in parts["header"], f"{step.name}: header {parts['header']!r} lacks {name}"
    for variant in ("fast", "edge"):
        dispatcher, _ = kernels[f"{step.name}_{variant}"]
        assert dispatcher is step.tiled.kernel(variant), f"{step.name}: kernels() is not what launch() runs"
        function = dispatcher.py_func
        filename = function.__code__.co_filename
        assert filename in linecache.cache or Path(filename).is_file(), f"{filename}: generated source not registered"
        assert inspect.getsource(function) == parts[variant], (
            f"step {step.name}: the {variant} kernel that runs differs from generated_source()'s")
        compiled_with = owner(step, variant).variant_constants(variant)
        for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "EDGE"):
            assert function.__globals__[name] == compiled_with[name] == config.get(name, compiled_with[name]), (
                f"step {step.name} {variant}: {name} is {function.__globals__[name]} in the running kernel")
    for build_name, flag in (("partial", "PARTIAL_TILES"), ("thread_copies", "THREAD_COPIES"),
                             ("b_rows", "B_ROWS_MOD_4")):
        built = getattr(step.tiled, build_name, None)
        if built is not None and built.function is not step.tiled.function:
            built = None  # another step's build (step 22's B_ROWS_MOD_4 is step 18's): shown with that step
        assert (parts[build_name] is None) == (built is None), f"{step.name}: the {flag} build is shown iff it exists"
        if built is not None:
            assert inspect.getsource(built.kernel("fast").py_func) == parts[build_name], (
                f"step {step.name}: the {flag} build that runs differs from generated_source()'s")
            assert built.kernel("fast").py_func.__globals__[flag] is True


@pytest.mark.parametrize("step", TILED, ids=step_id)
def test_expanding_the_readable_kernel_again_gives_the_same_text(step):
    for variant in ("fast", "edge"):
        tiled = owner(step, variant)
        constants = tiled.variant_constants(variant)
        again = unroll.expand(tiled.function, constants, constants["KERNEL_NAME"])
        assert again == tiled.generated(variant), f"step {step.name}: expanding its {variant} kernel is not stable"


@pytest.mark.parametrize("step", TILED, ids=step_id)
def test_generated_kernels_are_fully_expanded(step):
    """No ``unroll``, ``registers`` or ``EDGE`` is left for Numba: all were decided at compile time."""
    for variant in ("fast", "edge"):
        source = step.tiled.generated(variant)
        called = {ast.unparse(node.func) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)}
        names = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
        left = {"unroll", "registers"} & called
        assert not left, f"{step.name} {variant}: {sorted(left)} left unexpanded"
        assert "EDGE" not in names, f"{step.name} {variant}: EDGE left for run time"


@pytest.mark.parametrize("step", [s for s in STEPS if s.tiled is None], ids=step_id)
def test_untiled_steps_run_their_kernel_as_written(step):
    """Steps 1–5 compile their kernel as written: generated_source() is kernel_source(), and every kernel the
    step launches is in its module's source."""
    assert step.generated_source() == step.kernel_source()
    for label, (dispatcher, _) in step.kernels().items():
        assert inspect.getsource(dispatcher.py_func).strip() in step.source(), f"{label} is not in step.source()"
        assert dispatcher.py_func in step.kernel_functions(), f"{label} is missing from kernel_functions()"


# -- claims of sameness between steps -----------------------------------------------------------------------------

def k_loop(function) -> ast.For:
    """The ``for k_tile in range(…)`` loop of a kernel (its double-buffered main loop)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    loops = [node for node in ast.walk(tree) if isinstance(node, ast.For) and isinstance(node.target, ast.Name)
             and node.target.id == "k_tile"]
    assert len(loops) == 1, f"{function.__name__}: expected one k_tile loop, found {len(loops)}"
    return loops[0]


def test_step_10s_k_loop_is_step_9s_unchanged():
    """persistent.py says "Step 9's double-buffered k-loop, unchanged." over its copy of it: the two loops are the
    same code (the AST, so comments and line breaks may differ)."""
    from gemm_steps.steps import persistent, warp_tiling

    assert "Step 9's double-buffered k-loop, unchanged." in inspect.getsource(persistent.persistent_kernel)
    assert ast.dump(k_loop(persistent.persistent_kernel)) == ast.dump(k_loop(warp_tiling.warp_tiling_kernel)), (
        "step 10's k-loop differs from step 9's: change the comment in persistent.py or the loop")


def test_step_11s_k_loop_is_step_9s_over_its_own_k_range():
    """stream_k.py says its k-loop is step 9's over k-tiles k_first … k_first + k_count − 1: the same code once its
    loop bound (k_count) and first k (k_first) are read as step 9's (k_tiles, 0)."""
    from gemm_steps.steps import stream_k, warp_tiling

    class AsStepNine(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.copy_location(ast.Name({"k_count": "k_tiles"}.get(node.id, node.id), node.ctx), node)

        def visit_BinOp(self, node):  # (k_first + k_tile) → k_tile
            node = self.generic_visit(node)
            if (isinstance(node.op, ast.Add) and isinstance(node.left, ast.Name) and node.left.id == "k_first"):
                return node.right
            return node

    ours = ast.fix_missing_locations(AsStepNine().visit(k_loop(stream_k.stream_k_kernel)))
    assert ast.dump(ours) == ast.dump(k_loop(warp_tiling.warp_tiling_kernel)), (
        "step 11's k-loop is not step 9's over its own k-range: change the comment in stream_k.py or the loop")
