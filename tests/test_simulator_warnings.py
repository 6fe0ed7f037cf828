"""An inf in the input: the simulator's float32 arithmetic warns once per generated line it passes through (hundreds
for one small product); ``matmul`` issues one warning instead, with the count, and returns the right values."""

import warnings

import numpy as np
import pytest

import gemm_steps

pytestmark = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the warnings come from the CUDA simulator")


def test_an_inf_gives_one_warning_with_the_count_and_the_right_result():
    a, b = np.ones((20, 8), np.float32), np.ones((8, 12), np.float32)
    a[3, 2] = np.inf
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every warning recorded: none deduplicated by location
        c = gemm_steps.matmul(a, b)
    float_warnings = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(float_warnings) == 1, [str(w.message) for w in float_warnings[:3]]
    count = int(str(float_warnings[0].message).split(" × ")[0])
    assert count > 1, "the one warning should say how many the simulated threads raised"
    with np.errstate(invalid="ignore"):
        expected = a.astype(np.float64) @ b
    np.testing.assert_array_equal(c, expected.astype(np.float32))


def test_filters_still_apply_to_the_summary_and_a_finite_product_warns_nothing():
    a, b = np.ones((20, 8), np.float32), np.ones((8, 12), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gemm_steps.matmul(a, b)
    assert not caught
    a[0, 0] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="in the simulated kernel"):
            gemm_steps.matmul(a, b)
