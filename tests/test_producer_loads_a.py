"""experiments/kernels/producer_loads_a.py: step 18's kernel with its producer loading A from global memory (the copy
engine brings B alone). It must be step 18 bit for bit (the same split, the same products in the same order) — on
the simulator here; experiments/producer_loads_a.py times it on a GPU."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import gemm_steps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from experiments.kernels import producer_loads_a as variant  # noqa: E402
from gemm_steps.steps import warp_specialized_3xtf32 as step18  # noqa: E402
from helpers import random_matrices, run_in_nan_margin  # noqa: E402

pytestmark = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the simulator check; experiments/producer_loads_a.py "
                                                                 "times the build on a GPU")
CONFIG = variant.Config.of(step18.SIMULATOR_CONFIG)


@pytest.mark.parametrize("shape", [(64, 64, 160), (32, 128, 32)])
def test_it_is_step_18_bit_for_bit(shape):
    m, n, k = shape  # 5 k-tiles over a ring of 4 (a stage refilled), and a single k-tile
    a, b = random_matrices(np.random.default_rng(11), m, n, k)
    ours = run_in_nan_margin(variant.build(CONFIG), a, b)
    shipped = run_in_nan_margin(step18.build(step18.SIMULATOR_CONFIG, slices=lambda *_: 1), a, b)
    np.testing.assert_array_equal(ours, shipped)


def test_its_register_split_fits_the_pool():
    from gemm_steps.toolkit.tuned import default_config

    gpu = variant.Config.of(default_config(step18.SEARCH_SPACE))
    assert gpu.problems() == []
    assert replace(gpu, PRODUCER_REGISTERS=96).problems(), "128 × 96 + 256 × 208 is more than 384 × 168"


def test_whole_tiles_only():
    assert replace(CONFIG, PARTIAL_TILES=True).problems()


@pytest.mark.parametrize("switch", ["SPLIT_ARITHMETIC", "STORES"])
def test_the_ablation_switch_turns_work_off(switch):
    m, n, k = 64, 64, 96
    a, b = random_matrices(np.random.default_rng(3), m, n, k)
    on = run_in_nan_margin(variant.build(CONFIG), a, b)
    off = run_in_nan_margin(variant.build(replace(CONFIG, **{switch: False})), a, b)
    assert not np.array_equal(on, off), f"{switch}=False gave the same result: it switched nothing off"
