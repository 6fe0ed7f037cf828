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
