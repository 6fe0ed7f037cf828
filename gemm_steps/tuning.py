"""Autotuning: which tile configuration a step uses on this GPU.

``gemm-steps tune STEP`` times every configuration in the step's ``SEARCH_SPACE`` on the GPU at hand (same method
as the benchmark: events, warm-up, median, L2 flushed, NaN-poisoned output checked), writes every timing to
``results/tuning-<step>-<gpu>.json`` and records the winner in ``results/tuned.json`` under the GPU's name.
When a step is imported it looks up its GPU there; on another GPU, or on the simulator, it uses the first
configuration of its search space — the best one measured on an H200, a sane default elsewhere.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ._backend import SIMULATOR

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
TUNED_FILE = RESULTS_DIR / "tuned.json"


def current_gpu_name() -> str | None:
    if SIMULATOR:
        return None
    try:
        from numba import cuda

        name = cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # no usable device: use the default configuration
        return None


def tuned_config(step_name: str, search_space: list):
    """The configuration recorded for this GPU in results/tuned.json, else the search space's first."""
    default = search_space[0]
    gpu = current_gpu_name()
    if gpu is None or not TUNED_FILE.exists():
        return default
    recorded = json.loads(TUNED_FILE.read_text()).get(gpu, {}).get(step_name)
    if not recorded:
        return default
    return type(default)(**recorded["config"]).check()


def record_best(step_name: str, gpu: str, config, evidence: dict) -> None:
    tuned = json.loads(TUNED_FILE.read_text()) if TUNED_FILE.exists() else {}
    tuned.setdefault(gpu, {})[step_name] = {"config": asdict(config), **evidence}
    TUNED_FILE.parent.mkdir(parents=True, exist_ok=True)
    TUNED_FILE.write_text(json.dumps(tuned, indent=1, sort_keys=True) + "\n")


#: Timings closer than this are noise (repeated runs of one kernel differ by a few percent): among configurations
#: within it of the fastest, the one listed first in the search space wins — simpler tiles, shorter compiles.
NOISE = 0.01


def choose_best(records: list[dict]) -> dict:
    """The fastest record, preferring the earliest in search order among those within :data:`NOISE` of it."""
    fastest = min(r["median_ms"] for r in records)
    return min((r for r in records if r["median_ms"] <= fastest * (1 + NOISE)), key=lambda r: r["number"])


def tune(step_name: str, size: int = 4096, repeats: int = 20, progress=None) -> dict:
    """Time every configuration of a step's ``SEARCH_SPACE`` at size³, record all of them and the winner."""
    import importlib
    from types import SimpleNamespace

    from .bench import run_benchmark, save
    from .environment import file_slug

    gpu = current_gpu_name()
    if gpu is None:
        raise RuntimeError("autotuning needs a real CUDA GPU (timings on the simulator mean nothing)")
    module = importlib.import_module(f"{__package__}.steps.{step_name}")
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
            record["config"] = asdict(by_name[record["step"]].config)
            if "error" not in record and record["unwritten"] == 0 and record["rel_error_vs_cublas"] < 1e-4:
                valid.append(record)
    if not valid:
        raise RuntimeError(f"no configuration of {step_name} ran correctly; see the records")
    best = choose_best(valid)
    path = save(results, RESULTS_DIR / f"tuning-{step_name}-{file_slug(gpu)}.json")
    record_best(step_name, gpu, by_name[best["step"]].config, {
        "size": size, "median_ms": best["median_ms"], "pct_of_cublas": best.get("pct_of_cublas"),
        "measured": results["environment"]["date"], "file": path.name,
        "rule": f"choose_best (NOISE={NOISE:.0%}) over the configurations that ran correctly"})
    results["best"] = best
    return results
