"""Dump what every register-tiled step compiles, for every configuration it may be built with, into a folder.

    python scripts/dump_generated_sources.py OUT [STEP …]
    python scripts/dump_generated_sources.py --compare BEFORE AFTER

For each step 6–20 and each configuration in its ``SEARCH_SPACE``, its ``SIMULATOR_CONFIG`` and (step 6) its one
configuration, and for each kernel variant (fast, edge), it writes

* ``OUT/<step>/<config>_<variant>.py``: the generated source (what ``unroll.expand`` makes: what Numba compiles);
* ``OUT/<step>/<config>_<variant>.json``: the values of the compile-time names that source reads (the kernel's
  keyword-only parameters, ``EDGE``, ``KERNEL_NAME``), the launch's shape (threads, shared memory, launch bounds,
  cluster, signature), and, apart, every constant the build put in the kernel's namespace (``all_constants``:
  names the source does not read may come and go without changing the compiled code);
* ``OUT/<step>/PTX_EXPECT.json``: the step's PTX claims.

Run it before and after a change of how steps assemble their constants, then ``diff -r``: identical sources and
identical values of every name they read give identical PTX. Nothing is compiled (runs on the simulator, no GPU).
``--compare`` does that diff: every file byte for byte, except ``all_constants``, where it lists names that came or
went (a value that changed is a difference).
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import importlib  # noqa: E402

from gemm_steps.steps import COURSE  # noqa: E402
from gemm_steps.toolkit import unroll  # noqa: E402

TILE_FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "MIN_BLOCKS_PER_SM")


def configurations(module) -> dict:
    """label → configuration: every configuration a step may be built with."""
    found = {}
    for index, config in enumerate(getattr(module, "SEARCH_SPACE", None) or []):
        found[f"search{index}"] = config
    if getattr(module, "SIMULATOR_CONFIG", None) is not None:
        found["simulator"] = module.SIMULATOR_CONFIG
    if not found:  # step 6: one configuration, built at import
        found["default"] = module.TUNING.kernels().config
    return found


def built(module, config):
    if hasattr(module, "build"):
        return module.build(config)
    return module.TUNING.kernels()  # step 6


def read_names(source: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


def plain(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return repr(value)


def dump_variant(build, variant: str) -> tuple[str, dict]:
    owner = build.edge_source if (variant == "edge" and build.edge_source is not None) else build
    constants = owner.variant_constants(variant)
    source = owner.expand(constants)
    parameters = unroll.compile_time_parameters(owner.function)
    namespace_constants = {**constants, **owner.overrides}
    read = sorted(name for name in read_names(source) | set(parameters) if name in namespace_constants)
    record = {
        "function": f"{owner.function.__module__}.{owner.function.__name__}",
        "parameters": parameters,
        "read_constants": {name: plain(namespace_constants[name]) for name in read},
        "tiles": {field: getattr(owner.config, field) for field in TILE_FIELDS},
        "launch": {"class": type(build).__name__, "threads": build.threads, "shared_bytes": build.shared_bytes,
                   "dynamic_shared_bytes": build.dynamic_shared_bytes, "launch_bounds": plain(build.launch_bounds),
                   "cluster": plain(build.cluster), "full_cols_multiple": build.full_cols_multiple,
                   "signature": build.signature(variant),
                   "requires_compute_capability": plain(build.requires_compute_capability),
                   "min_compute_capability": plain(build.min_compute_capability),
                   "edge_from": build.edge_source.name if build.edge_source is not None else None,
                   "edge_threads": owner.threads, "edge_dynamic_shared_bytes": owner.dynamic_shared_bytes},
        "all_constants": {name: plain(value) for name, value in sorted(constants.items())},
    }
    return source, record


def compare(before: Path, after: Path) -> int:
    """Print every difference between two dumps; the number of sources compared on the last line."""
    names = sorted({p.relative_to(before) for p in before.rglob("*") if p.is_file()}
                   | {p.relative_to(after) for p in after.rglob("*") if p.is_file()})
    differences, sources, notes = 0, 0, set()
    for name in names:
        old, new = before / name, after / name
        if not old.exists() or not new.exists():
            print(f"only in {'after' if new.exists() else 'before'}: {name}")
            differences += 1
            continue
        sources += name.suffix == ".py"
        if name.suffix == ".json" and name.name != "PTX_EXPECT.json":
            a, b = json.loads(old.read_text()), json.loads(new.read_text())
            ca, cb = a.pop("all_constants"), b.pop("all_constants")
            changed = [key for key in ca.keys() & cb.keys() if ca[key] != cb[key]]
            for key in changed:
                print(f"{name}: all_constants[{key!r}] {ca[key]!r} -> {cb[key]!r}")
            notes |= {f"+{key}" for key in cb.keys() - ca.keys()} | {f"-{key}" for key in ca.keys() - cb.keys()}
            if a != b:
                print(f"{name}: differs: {sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))}")
            differences += bool(changed) + (a != b)
        elif old.read_bytes() != new.read_bytes():
            print(f"{name}: differs")
            differences += 1
    if notes:
        print("names that came or went in all_constants (read by no generated source):", " ".join(sorted(notes)))
    print(f"{differences} differences; {sources} generated sources compared")
    return 1 if differences else 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--compare":
        return compare(Path(argv[1]), Path(argv[2]))
    out = Path(argv[0])
    wanted = argv[1:] or COURSE[5:]
    count = 0
    for name in wanted:
        module = importlib.import_module(f"gemm_steps.steps.{name}")
        folder = out / f"{COURSE.index(name) + 1:02d}_{name}"
        folder.mkdir(parents=True, exist_ok=True)
        for label, config in configurations(module).items():
            build = built(module, config)
            for variant in ("fast", "edge"):
                source, record = dump_variant(build, variant)
                (folder / f"{label}_{variant}.py").write_text(source)
                (folder / f"{label}_{variant}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
                count += 1
        claims = {key: getattr(module, key, None) for key in ("PTX_EXPECT", "PTXAS_EXPECT")}
        (folder / "PTX_EXPECT.json").write_text(json.dumps(plain_claims(claims), indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(configurations(module))} configurations", flush=True)
    print(f"{count} generated sources written to {out}")
    return 0


def plain_claims(value):
    if isinstance(value, dict):
        return {str(k): plain_claims(v) for k, v in value.items()}
    return plain(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
