"""The course tools behind lessons 0b and 14 and the profiler cells: the shipped Nsight Compute reports are read
right, the where-am-I kernel reports the hierarchy right, and the roofline places each step where its tile says."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gemm_steps
from gemm_steps.course import gpu_model, lesson_25, plots, profiles
from helpers import synthetic_results


def test_a_shipped_report_is_read_into_the_numbers_it_shows():
    naive = profiles.load("naive")
    assert naive is not None, "experiments/results/ncu-steps-nvidia-h100/ncu-naive.txt is missing"

    assert "naive_kernel" in naive.kernel
    assert naive.duration_ms == pytest.approx(43.90)  # "Duration  ms  43.90" in the file
    assert naive.value("L1/TEX Cache Throughput") == pytest.approx(99.23)
    assert naive.value("Registers Per Thread") == 30 and naive.value("Block Size") == 1024
    assert naive.stalls and naive.stalls[0][2] == pytest.approx(58.5) and "L1TEX" in naive.stalls[0][0]
    assert naive.value("Memory Throughput") == pytest.approx(96.23)  # the first of two rows of that name (%, not GB/s)
    shared = profiles.load("shared_memory")
    assert shared.bytes("Static Shared Memory Per Block") == pytest.approx(8190)  # "8.19 Kbyte/block"
    assert profiles.load("no_such_step") is None


def test_the_profile_table_has_a_row_per_report_and_says_which_are_missing():
    table = profiles.table(["naive", "coalesced", "no_such_step"])
    rows = [line for line in table.splitlines() if line.startswith("| naive") or line.startswith("| coalesced")]
    assert len(rows) == 2 and "| 43.90 |" in rows[0]
    assert "no shipped report for no_such_step" in table


def test_every_step_and_cublas_has_a_shipped_report_of_its_own_kernel():
    from gemm_steps.course.lesson_12 import tensor_core_profiles

    fp32_steps = [s.name for s in gemm_steps.steps() if getattr(s.module, "ARITHMETIC", "fp32") == "fp32"]
    # The tensor-core steps (12–13) were profiled together at 4096³, in one report that lesson 12 reads.
    tensor = tensor_core_profiles()
    assert tensor is not None and set(tensor) == {"tensor_cores", "three_tf32"}
    for name in fp32_steps + ["cublas"]:
        report = profiles.load(name)
        assert report is not None, f"no shipped Nsight Compute report for {name}"
        if name not in ("cublas", "stream_k"):  # stream-K runs step 10's kernel where nothing is left to split
            assert name in report.kernel, f"the report for {name} profiled {report.kernel}"


def test_where_am_i_reports_the_hierarchy():
    seen = gpu_model.where_am_i(grid=(2, 3), block=(8, 4))
    assert seen["block_x"].shape == (12, 16)
    rows, cols = np.indices((12, 16))
    assert (seen["block_x"] == cols // 8).all() and (seen["block_y"] == rows // 4).all()
    assert (seen["thread_x"] == cols % 8).all() and (seen["thread_y"] == rows % 4).all()
    assert (seen["warp"] == (rows % 4 * 8 + cols % 8) // 32).all()


def test_tiling_intensity_follows_the_block_tile():
    assert lesson_25.tiling_intensity(gemm_steps.get_step("naive")) == 0.25
    assert lesson_25.tiling_intensity(gemm_steps.get_step("shared_memory")) == 8.0  # 32·32 / (2·64)
    assert lesson_25.tiling_intensity(gemm_steps.get_step("warp_tiling")) == pytest.approx(128 * 256 / (2 * 384))


def test_the_speedup_curves_have_both_panels_and_refuse_a_single_step():
    fig = plots.plot_speedup_curves(synthetic_results())
    left, right = fig.axes[:2]
    assert len(left.lines) >= 2 and len(right.lines) >= 2  # a line per size
    with pytest.raises(ValueError):
        plots.plot_speedup_curves(synthetic_results(names=["naive"]))


def _with_arithmetics() -> dict:
    """Synthetic results of every step with its arithmetic, and cuBLAS TF32 at 8× cuBLAS SGEMM's speed."""
    results = synthetic_results()
    arithmetic = {step.name: step.arithmetic for step in gemm_steps.steps()}
    for record in results["records"]:
        record["arithmetic"] = arithmetic.get(record["step"], "fp32")
    for record in [r for r in results["records"] if r["step"] == "cublas"]:
        results["records"].append({**record, "step": "cublas_tf32", "arithmetic": "tf32",
                                   "median_ms": record["median_ms"] / 8, "tflops": record["tflops"] * 8})
    return results


def _bar_labels(ax) -> list[str]:
    return [text.get_text() for text in ax.texts if "%" in text.get_text() or "cuBLAS" in text.get_text()]


def test_each_step_is_compared_with_the_cublas_of_its_arithmetic():
    """The per-step plot: both cuBLAS drawn; each bar's % is of the cuBLAS of its arithmetic (SGEMM for FP32 and
    3xTF32, TF32 for TF32); its × is over the previous step of the same arithmetic, and the first step of an
    arithmetic says so instead (once: TF32 steps at 6× cuBLAS SGEMM with cuBLAS TF32 "not drawn", and "×0.3 over the
    previous step" from a TF32 step to a 3xTF32 one)."""
    results = _with_arithmetics()
    fig = plots.plot_step_speedups(results, size=1024)
    ax = fig.axes[0]
    at = {r["step"]: r for r in results["records"] if r["M"] == 1024}
    levels = sorted(line.get_ydata()[0] for line in ax.lines if len(set(line.get_ydata())) == 1)
    assert levels == pytest.approx(sorted([at["cublas"]["tflops"], at["cublas_tf32"]["tflops"]]))
    steps = gemm_steps.steps()
    labels = dict(zip((s.name for s in steps), _bar_labels(ax)))
    for i, step in enumerate(steps):
        reference = at["cublas_tf32" if step.arithmetic == "tf32" else "cublas"]
        pct = 100 * reference["median_ms"] / at[step.name]["median_ms"]
        first = labels[step.name].split("\n")[0]
        assert first == f"{pct:.0f} % {'TF32' if step.arithmetic == 'tf32' else 'SGEMM'}", (step.name, first)
        earlier = [s for s in steps[:i] if s.arithmetic == step.arithmetic]
        if i and not earlier:
            assert "×" not in labels[step.name] and f"first {step.arithmetic.upper().replace('X', 'x')}" in \
                labels[step.name], labels[step.name]
        elif earlier:
            # the step it says it changes (BUILDS_ON: step 20 names step 17) where that computes as it does, else the
            # step of its arithmetic before it (step 22 changes step 21's arithmetic: compared with step 18)
            base = getattr(step.module, "BUILDS_ON", None)
            compared = gemm_steps.get_step(base) if base and gemm_steps.get_step(base).arithmetic == step.arithmetic \
                else earlier[-1]
            ratio = at[compared.name]["median_ms"] / at[step.name]["median_ms"]
            assert f"×{ratio:.1f}" in labels[step.name], (step.name, labels[step.name])
            assert (f"vs {compared.number}" in labels[step.name]) == (compared is not steps[i - 1])
    tf32 = [s for s in steps if s.arithmetic == "tf32"]
    assert tf32 and "first TF32" in labels[tf32[0].name]


def _corners(label, renderer) -> np.ndarray:
    """The four corners, in pixels, of a (rotated) tick label: its rectangle of width × height turned by its angle
    fits its axis-aligned box exactly, which fixes where it lies inside it."""
    from matplotlib.text import Text

    flat = Text(text=label.get_text(), fontproperties=label.get_fontproperties())
    flat.set_figure(label.get_figure())
    w, h = flat.get_window_extent(renderer).size
    box = label.get_window_extent(renderer)
    angle = np.radians(label.get_rotation() % 180)
    c, s = abs(np.cos(angle)), np.sin(angle)
    if angle <= np.pi / 2:
        corners = [(h * s, 0), (w * c + h * s, w * s), (w * c, w * s + h * c), (0, h * c)]
    else:  # turned past the vertical: mirrored
        corners = [(w * c, 0), (w * c + h * s, h * c), (h * s, w * s + h * c), (0, w * s)]
    return np.array(corners) + [box.x0, box.y0]


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two convex polygons overlap (separating axis test), with a pixel of slack."""
    for polygon in (a, b):
        for i in range(len(polygon)):
            edge = polygon[(i + 1) % len(polygon)] - polygon[i]
            axis = np.array([-edge[1], edge[0]]) / np.hypot(*edge)
            pa, pb = a @ axis, b @ axis
            if pa.max() <= pb.min() + 1 or pb.max() <= pa.min() + 1:
                return False
    return True


def _overlapping(labels, renderer) -> list[tuple[str, str]]:
    shown = [label for label in labels if label.get_text()]
    return [(a.get_text(), b.get_text()) for a, b in zip(shown, shown[1:])
            if _overlap(_corners(a, renderer), _corners(b, renderer))]


def test_every_step_label_is_readable():
    """No two x labels of the per-step plot overlap (the last two did: "18 warp_specialized_3xtf32 [3xTF32]" ran
    into "19 pingpong [TF32]"), nor those of the speed-up curves."""
    for fig in (plots.plot_step_speedups(_with_arithmetics(), size=1024),
                plots.plot_speedup_curves(_with_arithmetics())):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)  # the figure is closed in pyplot: draw it as gemm-steps saves it
        canvas.draw()
        renderer = canvas.get_renderer()
        for ax in fig.axes:
            overlapping = _overlapping(ax.get_xticklabels(), renderer)
            assert not overlapping, overlapping


def test_the_speedup_curves_take_no_speedup_across_arithmetics():
    """Left panel: no point for the first TF32 or 3xTF32 step (its step before computes differently); right panel:
    a TF32 step's % is of cuBLAS TF32."""
    results = _with_arithmetics()
    fig = plots.plot_speedup_curves(results)
    left, right = fig.axes[:2]
    steps = {s.number: s for s in gemm_steps.steps()}
    firsts = [n for n in steps if n > 1 and not any(steps[m].arithmetic == steps[n].arithmetic for m in steps
                                                     if m < n)]
    assert firsts, "the synthetic results need a step that starts an arithmetic"
    curves = [line for line in left.lines if len(set(line.get_xdata())) > 1 and len(set(line.get_ydata())) > 1]
    drawn = {int(x) for line in curves for x, y in zip(line.get_xdata(), line.get_ydata()) if np.isfinite(y)}
    assert not drawn & set(firsts), sorted(drawn & set(firsts))
    at = {(r["step"], r["M"]): r for r in results["records"]}
    tf32 = next(s for s in steps.values() if s.arithmetic == "tf32")
    want = 100 * at[("cublas_tf32", 1024)]["median_ms"] / at[(tf32.name, 1024)]["median_ms"]
    got = [y for line in right.lines for x, y in zip(line.get_xdata(), line.get_ydata()) if x == tf32.number]
    assert any(y == pytest.approx(want) for y in got), (want, got)


def test_the_memory_levels_come_from_shipped_files():
    levels = gpu_model.memory_levels()
    assert levels["sm_count"] and levels["l2_bytes"]
    assert levels["bandwidth_tbs"]["shared_conflict_free_tbs"] > levels["bandwidth_tbs"]["shared_32_way_conflict_tbs"]


def _suite_results(shapes):
    """synthetic_results with its records moved onto ``shapes`` (and marked as a suite run)."""
    results = synthetic_results(names=["warp_tiling", "stream_k"])
    records = []
    for m, n, k in shapes:
        for record in results["records"]:
            if record["M"] == 1024:
                records.append({**record, "M": m, "N": n, "K": k})
    return {**results, "records": records, "suite": "shapes"}


def test_the_shape_suite_plot_groups_bars_by_class_and_needs_two_classes():
    from gemm_steps.harness.shape_suite import SHAPE_CLASSES, shape_class, suite_shapes

    shapes = SHAPE_CLASSES["ragged"] + SHAPE_CLASSES["skinny"][:1]
    fig = plots.plot_shape_classes(_suite_results(shapes))
    bars = [patch for patch in fig.axes[0].patches]
    assert len(bars) == 2 * len(shapes)  # one bar per step per shape
    labels = {text.get_text() for text in fig.axes[0].texts}
    assert {"ragged", "skinny"} <= labels
    with pytest.raises(ValueError):
        plots.plot_shape_classes(_suite_results(SHAPE_CLASSES["ragged"]))
    assert shape_class(3001, 2999, 1531) == "ragged" and shape_class(3001, 2999, 1530) is None
    assert len(set(suite_shapes())) == len(suite_shapes())


def test_a_shape_suite_run_is_not_taken_for_the_course_benchmark(tmp_path):
    from gemm_steps.harness import results_files
    from gemm_steps.harness.shape_suite import suite_shapes

    course = synthetic_results(date="2026-01-01T00:00:00+00:00")
    suite = _suite_results(suite_shapes())
    suite["environment"] = {**suite["environment"], "date": "2026-06-01T00:00:00+00:00"}  # newer
    (tmp_path / "bench-a.json").write_text(json.dumps(course))
    (tmp_path / "shapes-b.json").write_text(json.dumps(suite))
    found = results_files.newest_benchmark(folder=tmp_path)
    assert found is not None and found[0].name == "bench-a.json"


def test_one_reader_of_nsight_computes_text_reports():
    """profiles.py reads every shipped report: per kernel, its metrics with units, scaled to bytes, seconds, hertz."""
    text = ("  mod::first_kernel[abi:v1](Array<float, 1, C>) (16, 32, 1)x(256, 1, 1), Context 1, Stream 7, Device 0\n"
            "    Section: GPU Speed Of Light Throughput\n"
            "    Duration                         usecond       417.76\n"
            "    DRAM Throughput                   %         2.78\n"
            "    Duration                         ms         9.99\n"
            "  sm80_xmma_gemm_cublas (16, 32, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0\n"
            "    dram__bytes_read.sum                      Gbyte         4.69\n"
            "    smsp__inst_executed.sum                    inst 2,441,846,784\n")
    (first, first_part), (second, second_part) = profiles.kernel_sections(text)
    assert (first, second) == ("mod::first_kernel", "sm80_xmma_gemm_cublas")
    assert profiles.read_metrics(first_part) == {"Duration": (417.76, "usecond"), "DRAM Throughput": (2.78, "%")}
    assert profiles.report_metrics(second_part) == {"dram__bytes_read.sum": 4.69, "smsp__inst_executed.sum": 2441846784}
    assert profiles.base_units(417.76, "usecond") == pytest.approx(417.76e-6)
    assert profiles.base_units(4.69, "Gbyte") == pytest.approx(4.69e9) and profiles.base_units(2.78, "%") == 2.78


def test_the_shape_suite_before_and_after_come_from_one_gpu():
    from gemm_steps.course import lesson_25

    found = lesson_25.shape_suites()
    if found is None:
        pytest.skip("the shape suite's runs are not shipped")
    (_, before), (_, after) = found
    assert before["environment"]["gpu"] == after["environment"]["gpu"]
