"""The simulator's cost model (gemm_steps/harness/simulator.py) against the timings it was fitted on
(results/simulator-cost-model-<date>.json, written by scripts/fit_simulator_cost_model.py): its constants are the
fit's, and every timed call lies within its estimate, and not far under it — the model refuses products and budgets
the property tests, so it may err on the slow side, a little."""

from __future__ import annotations

import json
import math

import pytest

import gemm_steps
from gemm_steps.harness import results_files, simulator

#: How far under its estimate a timed call may lie: the model could not tell unrolled loops from others closer than
#: this (simulator.py's docstring); the model before the fit of 2026-11-28 had calls at 0.13× (7.9× too slow).
MOST_OVER = 4.0


def fitted() -> dict:
    path = results_files.find(simulator.FITTED_ON)
    if path is None:
        pytest.skip(f"{simulator.FITTED_ON} is not here (a wheel install)")
    return json.loads(path.read_text())


def round_up(value: float) -> float:
    """Two significant digits, rounded up (as simulator.py's constants are)."""
    exponent = math.floor(math.log10(value))
    return math.ceil(round(value / 10**exponent * 10, 6)) / 10 * 10**exponent


def test_the_constants_are_the_fits():
    for name, value in fitted()["fitted"].items():
        assert getattr(simulator, name) == pytest.approx(round_up(value), rel=1e-9), name


def test_every_timed_call_lies_within_its_estimate_and_not_far_under_it():
    ratios = {}
    for record in fitted()["records"]:
        step = gemm_steps.get_step(record["step"])
        estimate = simulator.estimated_seconds(step.config, *record["shape"], simulator.products_of(step))
        ratios[f"{step.number} {step.name} {record['shape']}"] = record["seconds"] / estimate
    assert max(ratios.values()) <= 1.0, {k: round(v, 2) for k, v in ratios.items() if v > 1}
    assert min(ratios.values()) >= 1 / MOST_OVER, {k: round(v, 2) for k, v in ratios.items() if v < 1 / MOST_OVER}
