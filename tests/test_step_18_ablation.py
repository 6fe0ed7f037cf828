"""experiments/kernels/step_18_ablation.py: step 18's kernel with switches that turn parts of its work off, for
timing only. All on, it must be step 18 (the same bits on the simulator); each switch off must change the result
(else it switched nothing off) — and the timing script labels those builds' results wrong."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import gemm_steps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from experiments.kernels import step_18_ablation as ablation  # noqa: E402
from gemm_steps.steps import warp_specialized_3xtf32 as step18  # noqa: E402
from helpers import random_matrices, run_in_nan_margin  # noqa: E402

pytestmark = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the simulator check; experiments/step_18_ablation.py "
                                                                 "times the builds on a GPU")
CONFIG = ablation.Config.of(step18.SIMULATOR_CONFIG)
SHAPE = (64, 64, 96)


def run(config):
    m, n, k = SHAPE
    a, b = random_matrices(np.random.default_rng(7), m, n, k)
    return run_in_nan_margin(ablation.build(config), a, b), a, b


def test_all_on_is_step_18():
    ours, a, b = run(CONFIG)
    shipped = run_in_nan_margin(step18.build(step18.SIMULATOR_CONFIG, slices=lambda *_: 1), a, b)
    np.testing.assert_array_equal(ours, shipped)


@pytest.mark.parametrize("switch", ["SPLIT_A", "SPLIT_B", "FOLD"])
def test_each_switch_turns_work_off(switch):
    on, _, _ = run(CONFIG)
    off, _, _ = run(replace(CONFIG, **{switch: False}))
    assert not np.array_equal(on, off), f"{switch}=False gave step 18's result: it switched nothing off"
