"""The held-out set of issue 37 (gemm_steps/harness/held_out.py): drawn as documented, the same every time; and
the run's plumbing and summary (scripts/held_out.py), on made-up numbers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gemm_steps.harness import held_out, results_files
from gemm_steps.harness.shape_suite import SHAPE_CLASSES, suite_shapes


def test_the_draw_is_what_the_issue_asks_for():
    drawn = [s for s in held_out.shapes() if s.kind == "drawn"]
    assert len(drawn) >= 20
    for s in held_out.shapes():
        assert all(held_out.SIDE_MIN <= side <= held_out.SIDE_MAX for side in s.shape), s
        assert s.product >= 2**27, s
        assert s.bytes <= held_out.MAX_BYTES, s


def test_the_draw_is_the_same_every_time_and_depends_on_the_seed():
    assert held_out.drawn() == held_out.drawn()
    assert held_out.shapes() == held_out.shapes()
    assert held_out.drawn(seed=held_out.SEED + 1) != held_out.drawn()
    assert held_out.drawn()[0] == (1878, 212, 2370)  # the committed draw: a change of numpy's generator shows here
    assert held_out.drawn(seed=20261230)[0] == (9378, 8997, 276)  # measured once, then redrawn
    assert held_out.drawn(seed=20261229)[0] == (974, 10018, 9849)  # measured once, then redrawn
    assert held_out.drawn(seed=20261228)[0] == (7501, 4115, 9401)  # measured once, then redrawn
    assert held_out.drawn(seed=20261227)[0] == (3674, 248, 13769)  # measured once, then redrawn
    assert held_out.drawn(seed=20261226)[0] == (525, 14332, 87)  # measured once, then redrawn
    assert held_out.drawn(seed=20261225)[0] == (3911, 16371, 6431)  # measured once, then redrawn
    assert held_out.drawn(seed=20261224)[0] == (3153, 1961, 1271)  # measured once, then redrawn
    assert held_out.drawn(seed=20261217)[0] == (113, 658, 10015)  # measured once, then redrawn
    assert held_out.drawn(seed=20261214)[0] == (1641, 9675, 803)  # measured once, then redrawn
    assert held_out.drawn(seed=20261213)[0] == (7376, 654, 86)  # measured once, then redrawn
    assert held_out.drawn(seed=20261212)[0] == (391, 2197, 732)  # measured once, then redrawn
    assert held_out.drawn(seed=20261211)[0] == (348, 299, 7422)  # measured once, then redrawn
    assert held_out.drawn(seed=20261210)[0] == (1969, 161, 11318)  # measured once, then redrawn
    assert held_out.drawn(seed=20261209)[0] == (4074, 272, 447)  # measured once, then redrawn
    assert held_out.drawn(seed=20261208)[0] == (10302, 796, 345)  # measured once, then redrawn
    assert held_out.drawn(seed=20261207)[0] == (8224, 1340, 454)  # measured once, then redrawn
    assert held_out.drawn(seed=20261206)[0] == (7218, 268, 5910)  # measured once, then redrawn
    assert held_out.drawn(seed=20261205)[0] == (376, 579, 754)  # measured once, then redrawn
    assert held_out.drawn(seed=20261204)[0] == (463, 7622, 193)  # measured once, then redrawn
    assert held_out.drawn(seed=20261203)[0] == (6665, 1786, 180)  # measured once, then redrawn
    assert held_out.drawn(seed=20261202)[0] == (5892, 494, 809)  # measured once, then redrawn
    assert held_out.drawn(seed=20261201)[0] == (454, 2026, 151)  # the set measured once, then redrawn
    assert held_out.drawn(seed=20261130)[0] == (2421, 383, 925)  # the set measured twice, then redrawn
    assert held_out.SEED not in held_out.SEEN_SEEDS


def test_every_class_of_the_suite_but_the_squares_is_present_and_no_shape_is_the_suites():
    kinds = {s.kind for s in held_out.shapes()}
    assert set(SHAPE_CLASSES) - {"square"} <= kinds
    assert not {s.shape for s in held_out.shapes()} & set(suite_shapes())
    assert len({s.shape for s in held_out.shapes()}) == len(held_out.shapes())


# -- the run's summary (scripts/held_out.py) ---------------------------------------------------------------------------
_spec = importlib.util.spec_from_file_location("held_out_script", Path(__file__).resolve().parents[1] / "scripts"
                                               / "held_out.py")
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)


def _row(shape, kind, tf32, tf32x3, wrong=False):
    """A made-up shape of a run: matmul's speed over cuBLAS TF32 (``tf32``) and over cuBLAS SGEMM (``tf32x3``)."""
    m, n, k = shape
    return {"M": m, "N": n, "K": k, "kind": kind,
            "tf32": {"step": "warp_specialized", "ms": 1.0, "baseline_ms": tf32, "wrong": wrong},
            "tf32x3": {"step": "stream_k", "ms": 1.0, "baseline_ms": tf32x3, "wrong": False}}


ROWS = [_row((4096, 4096, 4096), "drawn", 0.95, 1.6), _row((2048, 2048, 2048), "drawn", 0.92, 1.7),
        _row((5000, 3000, 2000), "ragged", 0.6, 0.9), _row((512, 512, 512), "small", 0.5, 0.85),
        _row((600, 512, 512), "small", 0.4, 0.7)]


def test_the_summary_takes_median_and_minimum_by_size_and_kind():
    summary = held_out.summarize(ROWS)
    large = summary.group("tf32", "large")
    assert (large.count, large.median, large.minimum, large.slowest) == (3, 0.92, 0.6, (5000, 3000, 2000))
    assert summary.group("tf32x3", "small").minimum == pytest.approx(0.7)
    assert summary.group("tf32x3", "drawn").median == pytest.approx(1.65)
    assert summary.group("tf32", "ragged").count == 1
    assert summary.chosen == {"tf32": {"warp_specialized": 5}, "tf32x3": {"stream_k": 5}}


def test_each_target_is_met_or_not_and_a_wrong_result_counts_as_zero():
    verdicts = {(v.target.precision, v.target.size, v.target.statistic): v for v in held_out.summarize(ROWS).verdicts}
    assert verdicts["tf32", "large", "median"].met and verdicts["tf32", "large", "median"].value == 0.92
    assert not verdicts["tf32", "large", "min"].met  # the ragged shape at 0.6 < 0.7
    assert not verdicts["tf32x3", "large", "min"].met and verdicts["tf32x3", "large", "median"].met
    assert not verdicts["tf32x3", "small", "min"].met
    wrong = held_out.summarize([_row((4096, 4096, 4096), "drawn", 0.95, 1.6, wrong=True)])
    assert wrong.group("tf32", "large").failed == 1 and wrong.group("tf32", "large").minimum == 0
    lines = script.summary_lines(held_out.summarize(ROWS))
    assert "  NOT MET  tf32   M·N·K ≥ 2^30: min ≥ 0.70× cuBLAS TF32: 0.60" in lines
    assert any("met      tf32   M·N·K ≥ 2^30: median ≥ 0.90× cuBLAS TF32: 0.92" in line for line in lines)


def test_a_shape_is_measured_with_both_choices_and_both_cublas(monkeypatch):
    """measure() on the simulator with run_benchmark replaced: each precision's chosen kernel (timed once where they
    agree), both cuBLAS, the choice's reason, and a result that fails its check marked wrong."""
    from gemm_steps.harness import bench, dispatch

    timed = []

    def fake_run(entries, sizes, **kwargs):
        timed.append(([e.name for e in entries], kwargs["include_cublas_tf32"]))
        names = ["cublas", "cublas_tf32"] + [e.name for e in entries]
        return {"environment": {}, "method": {}, "records": [
            {"step": name, "median_ms": {"cublas": 2.0, "cublas_tf32": 0.5}.get(name, 1.0), "unwritten": 0,
             "sampled_rel_error_fp64": 1e-7, "arithmetic": "fp32"} for name in names]}

    monkeypatch.setattr(bench, "run_benchmark", fake_run)
    choices = {"tf32": dispatch.Choice("warp_specialized", "why tf32"), "tf32x3": dispatch.Choice("stream_k", "why")}
    monkeypatch.setattr(dispatch, "choose", lambda m, n, k, precision: choices[precision])
    shape = held_out.HeldOutShape(3000, 2000, 1000, "drawn")
    row, run = script.measure(shape, repeats=5)
    assert timed == [(["matmul_tf32", "matmul_tf32x3"], True)]
    assert row["tf32"]["step"] == "warp_specialized" and row["tf32"]["reason"] == "why tf32"
    assert held_out.ratio(row, "tf32") == 0.5 and held_out.ratio(row, "tf32x3") == 2.0
    assert all(r["held_out_kind"] == "drawn" for r in run["records"])
    choices["tf32"] = choices["tf32x3"]
    timed.clear()
    row, _ = script.measure(shape, repeats=5)
    assert timed == [(["matmul_tf32"], True)] and row["tf32x3"]["timed_as"] == "matmul_tf32"
    assert "[ 1/2] drawn" in script.line(1, 2, row, 0.1)


def test_the_script_refuses_without_a_gpu():
    import gemm_steps

    if not gemm_steps.SIMULATOR:
        pytest.skip("a GPU is here")
    with pytest.raises(SystemExit, match="has none"):
        script.main([])


def test_the_file_name_comes_from_the_catalogue_and_a_quick_run_is_a_subset(tmp_path):
    path = script.output_path(f"{tmp_path}/", "NVIDIA H100 80GB HBM3", quick=False)
    assert path.name == results_files.held_out_name("NVIDIA H100 80GB HBM3", path.name[-15:-5])
    assert path.name.startswith("held-out-nvidia-h100-80gb-hbm3-20")
    path.write_text("{}")
    second = script.output_path(f"{tmp_path}/", "NVIDIA H100 80GB HBM3", quick=False)
    assert second.name == path.name.replace(".json", "-2.json")
    assert script.output_path(None, "NVIDIA H200", quick=True).name.endswith("-quick.json")
    from test_experiments_readme import RESULTS_RULE

    for name in (path.name, second.name, results_files.held_out_name("NVIDIA H200", "2026-11-29", 3, quick=True)):
        assert RESULTS_RULE.match(name), name
    quick = script.chosen_set(quick=True)
    assert set(quick) <= set(held_out.shapes()) and len(quick) == script.QUICK_DRAWN + 5
    assert [s.kind for s in quick[script.QUICK_DRAWN:]] == list(held_out.CLASS_SHAPES)


def test_the_run_records_the_commit_it_is_told_beside_what_git_says(monkeypatch):
    """A device run copies the working tree onto a checkout whose ``.git`` may be older: GEMM_STEPS_SOURCE_COMMIT names
    the commit whose tree runs (recorded as ``commit``); without it, git's answer."""
    monkeypatch.delenv(script.SOURCE_COMMIT, raising=False)
    assert script.commit() == script.git_commit()
    monkeypatch.setenv(script.SOURCE_COMMIT, "0123abc")
    assert script.commit() == "0123abc"
