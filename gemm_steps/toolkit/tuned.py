"""Which tile configuration a step is built with on this machine: one rule, applied when the step's kernels are
first used (never when a step is imported, so importing the course asks no GPU anything).

A step declares its candidates in its own file: ``SEARCH_SPACE`` (the first is the course's choice: the fastest on
the GPU it was measured on, a sane default elsewhere) and, where the GPU's tiles would take minutes per product on
Numba's simulator, ``SIMULATOR_CONFIG``. Its ``TUNING`` (a :class:`Tuning`) builds the kernels, when they are first
asked for, for :func:`tuned_config`'s choice:

1. on the simulator, ``SIMULATOR_CONFIG`` if the step gives one;
2. on a GPU, the configuration recorded for that GPU's name in the user's tuning table — ``$GEMM_STEPS_TUNED`` if
   set, else ``~/.cache/gemm-steps/tuned.json`` (``$GEMM_STEPS_CACHE`` moves the folder) — where
   ``gemm-steps tune STEP`` records the winner of a sweep on that GPU;
3. otherwise ``SEARCH_SPACE[0]`` (:func:`default_config`).

The course ships no table: its sweeps (``results/tuning-*.json``) chose each step's first configuration. Tuning itself
(timing the candidates) is harness work: :mod:`gemm_steps.harness.tuning`.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .backend import SIMULATOR, user_cache
from .kernel_builds import BUILD_LOCK


def user_table() -> Path:
    """Where ``gemm-steps tune`` records winners for this user."""
    explicit = os.environ.get("GEMM_STEPS_TUNED")
    if explicit:
        return Path(explicit)
    return user_cache() / "tuned.json"


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
    """The record for a step on a GPU in the user's table, and the table's path; None if it has none."""
    table = user_table()
    if not table.exists():
        return None
    try:
        entry = json.loads(table.read_text()).get(gpu, {}).get(step_name)
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"the tuning table {table} cannot be read ({exc}); fix or delete it") from exc
    return (entry, table) if entry else None


def default_config(search_space: list):
    """The configuration a GPU without a table entry gets, and the one a step's PTX claims are stated for: the first
    of its search space."""
    return search_space[0].check()


def tuned_config(step_name: str, search_space: list, simulator=None):
    """The configuration this machine builds a step with (the rule of the module docstring). ``step_name``: the
    step whose table entry decides (steps 10 and 11 take step 9's tiles). A table entry records the tile fields
    (``tile_config.TILE_FIELDS``): the result is the step's own ``Config`` with those tiles, every other field as the
    step's file declares it."""
    if SIMULATOR and simulator is not None:
        return simulator.check()
    gpu = current_gpu_name()
    found = recorded(step_name, gpu) if gpu else None
    if found is None:
        return default_config(search_space)
    return type(search_space[0])(**found[0]["config"]).check()


@functools.lru_cache(maxsize=None)
def _built(build: Callable, config):
    return build(config)


def built(build: Callable, config):
    """``build(config)``, made once per build function and configuration in a process and kept (the one memo of
    built kernels: a ``functools.lru_cache``). Step 11 asks it for step 10's build as its data-parallel fallback, so
    the two steps share one set of step 10's kernels, compiled once."""
    with BUILD_LOCK:  # two threads' first calls build one set of kernels, not two
        return _built(build, config)


@dataclass(frozen=True, eq=False)
class Tuning:
    """How a step's kernels are built on this machine: its ``build(config)``, the step whose tuning-table entry
    decides (``step_name``: steps 10 and 11 take step 9's tiles), its candidates (``search_space``, the course's choice
    first) and the simulator's configuration. A step's file declares one (``TUNING``); the step's kernels are
    :meth:`kernels`. Nothing is asked of the GPU until then."""

    build: Callable
    step_name: str
    search_space: list
    simulator: Any = None

    def chosen_config(self):
        """The configuration this machine builds the step with (:func:`tuned_config`; asks the GPU its name)."""
        return tuned_config(self.step_name, self.search_space, self.simulator)

    def kernels(self):
        """The step's kernels (a :class:`~gemm_steps.toolkit.tiles.TiledKernels`) for :meth:`chosen_config`
        (:func:`built`: one per configuration in a process). They compile later still, on their first launch."""
        return built(self.build, self.chosen_config())
