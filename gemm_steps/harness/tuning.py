"""Autotuning: time a step's tile configurations on this GPU and record the fastest.

``gemm-steps tune STEP`` times every configuration in the step's ``SEARCH_SPACE`` on the GPU at hand (same method
as the benchmark: events, warm-up, median, L2 flushed, NaN-poisoned output checked), writes every timing to
``tuning-<step>-<gpu>.json`` in the output folder (``results/`` under the current directory unless told) and records
the winner in your tuning table (:func:`gemm_steps.toolkit.tuned.user_table`). When a step's kernels are first used
on that GPU, they are built for it (:mod:`gemm_steps.toolkit.tuned`). To make a winner the course's default, put it
first in the step's ``SEARCH_SPACE``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..toolkit.tile_config import tile_fields
from . import results_files
from ..toolkit.tuned import current_gpu_name, user_table


def record_best(step_name: str, gpu: str, config, evidence: dict, table: Path | None = None) -> Path:
    """Write the winner into a tuning table (default: the user's); return the table's path."""
    table = table or user_table()
    tuned = json.loads(table.read_text()) if table.exists() else {}
    tuned.setdefault(gpu, {})[step_name] = {"config": tile_fields(config), **evidence}
    table.parent.mkdir(parents=True, exist_ok=True)
    table.write_text(json.dumps(tuned, indent=1, sort_keys=True) + "\n")
    return table


#: Timings closer than this are noise (repeated runs of one kernel differ by a few percent): among configurations
#: within it of the fastest, the one listed first in the search space wins — simpler tiles, shorter compiles.
NOISE = 0.01


def choose_best(records: list[dict]) -> dict:
    """The fastest record, preferring the earliest in search order among those within :data:`NOISE` of it."""
    fastest = min(r["median_ms"] for r in records)
    return min((r for r in records if r["median_ms"] <= fastest * (1 + NOISE)), key=lambda r: r["number"])


def tune(step_name: str, size: int = 4096, repeats: int = 20, progress=None, out_dir: Path | None = None) -> dict:
    """Time every configuration of a step's ``SEARCH_SPACE`` at size³, record all of them and the winner."""
    import importlib
    from types import SimpleNamespace

    from .bench import run_benchmark, save

    gpu = current_gpu_name()
    if gpu is None:
        raise RuntimeError("autotuning needs a real CUDA GPU (timings on the simulator mean nothing)")
    module = importlib.import_module(f"gemm_steps.steps.{step_name}")
    space = getattr(module, "SEARCH_SPACE", None)
    if not space:
        raise ValueError(f"step {step_name!r} has no SEARCH_SPACE to tune")
    candidates = []
    for index, config in enumerate(space, start=1):
        kernels = module.build(config)
        candidates.append(SimpleNamespace(name=f"{step_name}#{index}", number=index, launch=kernels.launch,
                                          config=config))
    results = run_benchmark(candidates, [(size, size, size)], repeats=repeats, progress=progress)
    by_name = {c.name: c for c in candidates}
    valid = []
    for record in results["records"]:
        if record["step"] in by_name:
            record["config"] = tile_fields(by_name[record["step"]].config)
            if "error" not in record and record["unwritten"] == 0 and record["rel_error_vs_cublas"] < 1e-4:
                valid.append(record)
    if not valid:
        raise RuntimeError(f"no configuration of {step_name} ran correctly; see the records")
    best = choose_best(valid)
    path = save(results, Path(out_dir or "results") / results_files.tuning_name(step_name, gpu))
    results["table"] = str(record_best(step_name, gpu, by_name[best["step"]].config, {
        "size": size, "median_ms": best["median_ms"], "pct_of_cublas": best.get("pct_of_cublas"),
        "measured": results["environment"]["date"], "file": path.name,
        "rule": f"choose_best (NOISE={NOISE:.0%}) over the configurations that ran correctly"}))
    results["best"] = best
    return results
