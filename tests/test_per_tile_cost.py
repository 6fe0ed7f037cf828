"""experiments/per_tile_cost.py: its line fit and its per-clock ratios, on made-up records (the run is on a GPU)."""

import pytest

from experiments import per_tile_cost


def test_the_fit_finds_a_lines_intercept_and_slope():
    ks = [1024, 2048, 4096]
    line = per_tile_cost.fit(ks, [0.030 + 0.080 * k / 1024 for k in ks])
    assert line["intercept_us"] == pytest.approx(30.0) and line["us_per_1024_k"] == pytest.approx(80.0)


def test_the_summary_divides_per_clock_by_cublas_tf32():
    """A kernel at half the clock and half the TFLOPS is 0.5× cuBLAS TF32 but 1.0× per clock."""
    records = []
    for k in per_tile_cost.KS:
        records += [{"step": "cublas_tf32", "K": k, "tflops": 400.0, "sm_clock_mhz_median": 2000.0,
                     "median_ms": 0.005 + 0.08 * k / 1024},
                    {"step": "warp_specialized", "K": k, "tflops": 200.0, "sm_clock_mhz_median": 1000.0,
                     "median_ms": 0.025 + 0.08 * k / 1024}]
    out = per_tile_cost.summary({"records": records})
    row = out["per_k"]["4096"]["warp_specialized"]
    assert row["over_tf32"] == 0.5 and row["over_tf32_per_clock"] == pytest.approx(1.0)
    assert out["lines"]["warp_specialized"]["intercept_us"] == pytest.approx(25.0)
    assert out["lines"]["cublas_tf32"]["us_per_1024_k"] == pytest.approx(80.0)
    assert "persistent_specialized" not in out["lines"]  # no records: no line
