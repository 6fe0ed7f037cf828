"""The TF32 tolerance of ``harness.verify`` (``tf32_tolerance``): measured, as the float32 one was.

TF32 rounds each input to 10 mantissa bits. On standard-normal data the relative error that this alone causes in
C = A·B should not depend on K (errors and C both grow like √K) and should sit near u_tf32 = 2**-11: far inside
``tf32_tolerance``, yet far outside the float32 ``tolerance`` (so the TF32 step really needs its own). NumPy
emulates it: inputs rounded with the same ``round_to_tf32`` the simulator twin of ``to_tf32`` uses, sums in float64.
"""
import numpy as np
import pytest

from gemm_steps.harness.verify import U_TF32, tf32_tolerance, tolerance, tolerance_for
from gemm_steps.toolkit.tensor_core_ops import round_to_tf32
from helpers import rel_error, rng_for


@pytest.mark.parametrize("k", [1, 8, 64, 512, 4096])
def test_tf32_rounding_error_is_about_u_tf32_at_every_k(k):
    rng = rng_for(f"tf32 tolerance {k}")
    a = rng.standard_normal((96, k), dtype=np.float32)
    b = rng.standard_normal((k, 96), dtype=np.float32)
    error = rel_error((round_to_tf32(a).astype(np.float64) @ round_to_tf32(b).astype(np.float64)), a, b)
    assert 0.3 * U_TF32 < error < 1.2 * U_TF32, f"K={k}: TF32 rounding error {error:.2e}, u_tf32 = {U_TF32:.2e}"
    assert error < tf32_tolerance(k) / 4, "the tolerance keeps a ≥ 4× margin over what rounding does"
    assert error > 2 * tolerance(k), "the float32 tolerance would reject a correct TF32 kernel"


def test_tf32_tolerance_still_catches_a_dropped_term():
    rng = rng_for("tf32 dropped term")
    k = 4096
    a = rng.standard_normal((64, k), dtype=np.float32)
    b = rng.standard_normal((k, 64), dtype=np.float32)
    a_r, b_r = round_to_tf32(a).astype(np.float64), round_to_tf32(b).astype(np.float64)
    dropped = a_r[:, 1:] @ b_r[1:, :]  # one k term missing
    assert rel_error(dropped, a, b) > 2 * tf32_tolerance(k)


def test_only_the_tf32_step_gets_the_tf32_tolerance():
    from gemm_steps.steps import tensor_cores, three_tf32, warp_tiling

    assert tolerance_for(tensor_cores, 512) == tf32_tolerance(512)
    assert tolerance_for(three_tf32, 512) == tolerance(512)
    assert tolerance_for(warp_tiling, 512) == tolerance(512)


def test_arithmetic_of_reads_a_step_a_module_or_a_variant():
    """The benchmark records and judges every entry by ``arithmetic_of``: a course step and its module agree, and a
    kernel variant an experiment times (no module) says its own arithmetic."""
    from types import SimpleNamespace

    import gemm_steps
    from gemm_steps.harness.verify import arithmetic_of
    from gemm_steps.steps import tensor_cores

    assert arithmetic_of(gemm_steps.get_step("tensor_cores")) == arithmetic_of(tensor_cores) == "tf32"
    assert arithmetic_of(gemm_steps.get_step("three_tf32")) == "3xtf32"
    assert arithmetic_of(gemm_steps.get_step("stream_k")) == "fp32"
    assert arithmetic_of(SimpleNamespace(name="variant", arithmetic="tf32")) == "tf32"
    assert arithmetic_of(SimpleNamespace(name="variant", module=tensor_cores)) == "tf32"
    assert arithmetic_of(SimpleNamespace(name="plain")) == "fp32"
