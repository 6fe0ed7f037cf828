"""Each step's configuration lives in the step's file (issue 38).

A reader of a step file finds every compile-time constant of its kernels there, with its value or its formula: each
keyword-only parameter of each kernel function in the file (except ``EDGE``, which says which of the two variants
is compiled, fast or edge) is a field with a default or a property of the file's ``Config`` — checked on the
file's text (AST), not on objects, so a value inherited from another file does not count. And the constants a build
binds to the kernel are the Config's: nothing else assembles them.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from gemm_steps.steps import COURSE
from gemm_steps.toolkit import unroll
from gemm_steps.toolkit.tile_config import StepConfig, TILE_FIELDS, tile_fields

STEPS = Path(__file__).resolve().parents[1] / "gemm_steps" / "steps"
#: Given by the build per variant, not by the configuration: ``EDGE`` (fast or guarded kernel).
VARIANT_SWITCHES = {"EDGE"}


def kernel_parameters(tree: ast.Module) -> dict[str, list[str]]:
    """{kernel function: its keyword-only parameters} for every top-level function of a file that has some."""
    return {node.name: [arg.arg for arg in node.args.kwonlyargs] for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.args.kwonlyargs}


def config_names(tree: ast.Module) -> tuple[set[str], list[str]]:
    """(the names the file's ``class Config`` defines: fields with a default and properties; its fields without a
    value written there)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Config":
            defined, unvalued = set(), []
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    (defined.add if item.value is not None else unvalued.append)(item.target.id)
                elif isinstance(item, ast.FunctionDef) and any(
                        isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                    defined.add(item.name)
            return defined, unvalued
    return set(), []


def missing_constants(source: str) -> list[str]:
    """What a step file's kernels read at compile time that its own ``Config`` does not define, as
    ``kernel: NAME``; fields of the Config declared without a value count too."""
    tree = ast.parse(source)
    defined, unvalued = config_names(tree)
    missing = [f"Config: {name} has no value" for name in unvalued]
    for function, parameters in kernel_parameters(tree).items():
        missing += [f"{function}: {name}" for name in parameters
                    if name not in VARIANT_SWITCHES and name not in defined]
    return missing


def step_file(name: str) -> Path:
    return STEPS / f"{name}.py"


@pytest.mark.parametrize("name", COURSE)
def test_every_constant_of_a_steps_kernels_is_in_its_own_config(name):
    missing = missing_constants(step_file(name).read_text())
    assert not missing, f"steps/{name}.py: its kernels read constants its own Config does not define: {missing}"


def tiled_steps() -> list[str]:
    return [name for name in COURSE if kernel_parameters(ast.parse(step_file(name).read_text()))]


def test_the_steps_with_compile_time_constants_are_steps_6_to_20():
    """Steps 1–5 have none (their constants are module globals of their own file, read as such); 6–20 do."""
    assert tiled_steps() == COURSE[5:]


@pytest.mark.parametrize("name, field", [("warp_specialized", "STAGES"), ("warp_tiling", "BLOCK_K")])
def test_the_check_catches_a_constant_defined_elsewhere(name, field):
    """The check can fail: a step's file without one field of its Config (step 17's ``STAGES``), and with the
    field but no value."""
    source = step_file(name).read_text()
    line = next(line for line in source.splitlines() if line.strip().startswith(f"{field}: int ="))
    kernel = next(iter(kernel_parameters(ast.parse(source))))
    assert missing_constants(source.replace(line + "\n", "")) == [f"{kernel}: {field}"]
    assert missing_constants(source.replace(line, f"    {field}: int")) == [f"Config: {field} has no value",
                                                                           f"{kernel}: {field}"]


def configurations(module) -> list:
    found = list(getattr(module, "SEARCH_SPACE", None) or [module.TUNING.kernels().config])
    if getattr(module, "SIMULATOR_CONFIG", None) is not None:
        found.append(module.SIMULATOR_CONFIG)
    return found


@pytest.mark.parametrize("name", COURSE[5:])
def test_the_constants_a_build_binds_are_its_configs(name):
    """Every configuration a step may be built with (``SEARCH_SPACE``, ``SIMULATOR_CONFIG``) is one of the step's
    own Configs; the build binds each kernel parameter to the Config's value (fast and edge); the Config's defaults
    are the course's pick (``SEARCH_SPACE[0]``), and the tuning table overrides only the tiles."""
    module = importlib.import_module(f"gemm_steps.steps.{name}")
    assert issubclass(module.Config, StepConfig)
    configs = configurations(module)
    assert all(type(config) is module.Config for config in configs), f"{name}: a configuration of another kind"
    assert configs[0] == module.Config(), f"{name}: SEARCH_SPACE[0] is not the Config's defaults"
    for config in configs:
        build = module.build(config) if hasattr(module, "build") else module.TUNING.kernels()
        assert build.config == config
        expected = config.constants()
        assert {key: build.constants[key] for key in expected} == expected
        for variant in ("fast", "edge"):
            if variant == "edge" and build.edge_source is not None:
                continue  # another step's kernel, checked in its own file
            bound = build.variant_constants(variant)
            for parameter in unroll.compile_time_parameters(build.function):
                if parameter not in VARIANT_SWITCHES:
                    assert bound[parameter] == expected[parameter], (name, variant, parameter)
    entry = {field: getattr(configs[-1], field) for field in TILE_FIELDS}
    assert type(configs[0])(**entry).check() == module.Config.of(configs[-1])  # what tuned.tuned_config makes
    assert tile_fields(module.Config.of(configs[-1])) == entry


@pytest.mark.parametrize("name", COURSE)
def test_a_steps_constants_have_one_home_its_config(name):
    """No second way to the constants: a step file keeps no ``layout()`` view beside its Config (nine did, as a
    compatibility shim for lessons and experiments; they now ask the Config: ``Config.of(config, FIELD=…)
    .check().constants()``)."""
    tree = ast.parse(step_file(name).read_text())
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert "layout" not in functions, f"steps/{name}.py defines layout(): read the constants from its Config"
