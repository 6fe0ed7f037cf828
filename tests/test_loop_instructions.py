"""experiments/loop_instructions.py and its kernel (experiments/kernels/warp_specialized_loop_instructions.py): step
17's k-loop with three changes that each remove instructions and none that changes a result. Each build's C is the
``before`` build's bit for bit — on the simulator over a ring that wraps, on a GPU also over partial tiles and
inf/NaN/largest-float/subnormal inputs (where ``rounded_operand_bits`` leaves 13 low bits the tensor core must drop)."""

import numpy as np
import pytest

import gemm_steps
from gemm_steps.steps import warp_specialized
from gemm_steps.toolkit.tuned import default_config

from helpers import run_in_nan_margin

from experiments import loop_instructions
from experiments.kernels import warp_specialized_loop_instructions as variant

CONFIG = warp_specialized.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else default_config(warp_specialized.SEARCH_SPACE)


def _bits(c: np.ndarray) -> np.ndarray:
    return c.view(np.uint32)


def test_every_switch_gives_the_before_builds_product_bit_for_bit():
    """One tile of 5 k-tiles on the simulator (the 4-stage ring wraps: both phases of a barrier), the GPU's 2 × 2
    tiles of 10 k-tiles there: every build, step 17 as shipped too, writes ``before``'s C."""
    m, n, k = (CONFIG.BLOCK_M, CONFIG.BLOCK_N, 5 * CONFIG.BLOCK_K) if gemm_steps.SIMULATOR else (512, 256, 320)
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    before = run_in_nan_margin(variant.build(CONFIG), a, b)
    assert np.isfinite(before).all()
    for name, switches in list(variant.SWITCHES.items())[1:]:
        assert (_bits(run_in_nan_margin(variant.build(CONFIG, **switches), a, b)) == _bits(before)).all(), name
    shipped = run_in_nan_margin(warp_specialized.build(CONFIG), a, b)
    assert (_bits(shipped) == _bits(before)).all(), "step 17 as shipped"


def test_the_switch_can_fail():
    """The comparison above sees a change of one element's last bit."""
    c = np.ones((4, 4), np.float32)
    d = c.copy()
    d[2, 3] = np.nextafter(np.float32(1), np.float32(2))
    assert not (_bits(c) == _bits(d)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(512, 256, 320), (300, 260, 1000)], ids=["full_tiles", "partial_tiles"])
def test_special_values_meet_the_tensor_core_as_before(shape):
    """inf, −inf, NaN, the largest float and subnormals in A and B: the two-instruction rounding hands the tensor core
    bits whose low 13 it drops, and C is ``before``'s (cvt.rna's) bit for bit, NaNs where its NaNs are."""
    a, b = loop_instructions.special_inputs(*shape)
    before = run_in_nan_margin(variant.build(CONFIG), a, b)
    assert np.isnan(before).any() and np.isinf(before).any()
    for name, switches in list(variant.SWITCHES.items())[1:]:
        assert (_bits(run_in_nan_margin(variant.build(CONFIG, **switches), a, b)) == _bits(before)).all(), name


def test_the_summary_chains_each_build_on_the_one_before():
    """The stored ratios, on made-up records: each build over its predecessor, over ``before``, over cuBLAS TF32."""
    records = [{"step": name, "M": 4096, "N": 4096, "K": 4096, "tflops": value}
               for name, value in [("before", 300.0), ("ring_32", 330.0), ("stage_descriptor", 330.0),
                                   ("rounding_2", 363.0), ("warp_specialized", 363.0), ("cublas_tf32", 400.0),
                                   ("cublas", 50.0)]]
    row = loop_instructions.summary({"records": records})["4096x4096x4096"]
    assert row["over_previous"] == {"ring_32": 1.1, "stage_descriptor": 1.0, "rounding_2": pytest.approx(1.1)}
    assert row["over_before"]["rounding_2"] == pytest.approx(1.21)
    assert row["over_tf32"]["before"] == 0.75 and row["tflops"]["cublas"] == 50.0
