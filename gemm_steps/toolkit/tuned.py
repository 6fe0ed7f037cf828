"""Which tile configuration a step uses on this GPU: the autotuning table, read when a step is imported.

Tables, first match wins:

1. ``$GEMM_STEPS_TUNED`` — a file you name;
2. your own table, ``~/.cache/gemm-steps/tuned.json`` (``$GEMM_STEPS_CACHE`` moves it) — where
   ``gemm-steps tune STEP`` records the winner on your GPU;
3. the table shipped with the package (``gemm_steps/toolkit/tuned.json``), measured by the course on its GPUs.

Each maps a GPU name (``"NVIDIA H200"``) to ``{step: {"config": {...}, ...evidence}}``. A GPU in no table, or the
simulator, gets the first configuration of the step's search space (the H200's best, a sane default elsewhere).
Tuning itself (timing the candidates) is harness work: :mod:`gemm_steps.harness.tuning`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .backend import SIMULATOR

SHIPPED_TABLE = Path(__file__).resolve().parent / "tuned.json"


def user_table() -> Path:
    """Where ``gemm-steps tune`` records winners for this user."""
    explicit = os.environ.get("GEMM_STEPS_TUNED")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("GEMM_STEPS_CACHE") or Path.home() / ".cache" / "gemm-steps") / "tuned.json"


def tables() -> list[Path]:
    return [user_table(), SHIPPED_TABLE]


def current_gpu_name() -> str | None:
    if SIMULATOR:
        return None
    try:
        from numba import cuda

        name = cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # no usable device: use the default configuration
        return None


def recorded(step_name: str, gpu: str) -> tuple[dict, Path] | None:
    """The record for a step on a GPU, and the table it came from; None if no table has one."""
    for table in tables():
        if not table.exists():
            continue
        try:
            entry = json.loads(table.read_text()).get(gpu, {}).get(step_name)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"the tuning table {table} cannot be read ({exc}); fix or delete it") from exc
        if entry:
            return entry, table
    return None


def tuned_config(step_name: str, search_space: list, simulator=None):
    """The configuration recorded for this GPU (see the module docstring), else the search space's first. On the
    simulator, ``simulator`` if the step gives one (a smaller tiling of the same kernel, for a step whose shipped
    tiles would take minutes per product there)."""
    default = search_space[0]
    if SIMULATOR and simulator is not None:
        return simulator.check()
    gpu = current_gpu_name()
    found = recorded(step_name, gpu) if gpu else None
    if found is None:
        return default
    return type(default)(**found[0]["config"]).check()
