"""Lesson 21's section on ragged K (A's rows off the 128-byte lines): the helpers, and every fact its words state,
checked against the runs it reads."""

from __future__ import annotations

from gemm_steps.course import lesson_21, predictions
from gemm_steps.course.timings import tflops_by_shape
from gemm_steps.toolkit.tma_tiles import aligned_a_pays


def test_a_row_pitch_is_said_against_the_line():
    assert lesson_21.row_pitch(14460) == "57,840 B (+112)"
    assert lesson_21.row_pitch(14464) == "57,856 B (on lines)"
    assert lesson_21.row_pitch(16012) == "64,048 B (+48)"


def test_the_strides_run_shows_what_the_lesson_says():
    """A's rows off the lines cost step 21 about a fifth (0.75–0.82 of its control), B's less than predicted (above
    the range), aligned ragged edges little; cuBLAS TF32 lost only a few percent to A's pitch."""
    run, guess = lesson_21.strides_run(), predictions.get(21, "strides_over_control_h200")
    by = tflops_by_shape(run)
    control = by[lesson_21.STRIDES_CONTROL]

    def over(shape, name="warp_specialized_stream_k"):
        return by[shape][name] / control[name]

    assert 0.75 <= over("3072x16128x14460") <= 0.82
    assert over("3072x16012x14464") > guess.predicted["ratio"]["3072x16012x14464"][1]
    assert over("3072x16032x14464") >= 0.98
    assert 0.94 <= over("3072x16128x14460", "cublas_tf32") <= 0.97
    text = str(lesson_21.strides_table(run, guess))
    assert text.count(": inside") == 4 and text.count(": above") == 1


def test_the_aligned_run_shows_what_the_lesson_says_and_the_rule_follows_it():
    run, change = lesson_21.aligned_run(), predictions.get(21, "aligned_a_over_shipped_h200")
    gains = {shape: row["aligned_over_shipped"] for shape, row in run["summary"].items()}
    for shape, gain in gains.items():
        m, n, k = map(int, shape.split("x"))
        tf32 = gain["warp_specialized_stream_k"]
        if k % 4:  # copied anyway: nothing changes
            assert abs(tf32 - 1) < 0.02, shape
        elif n >= 4096:
            assert tf32 > 1.15 and aligned_a_pays(m, n, k), shape
        else:  # N = 1024: loses a little
            assert 0.9 < tf32 < 1 and not aligned_a_pays(m, n, k), shape
        assert gain["warp_specialized_3xtf32_stream_k"] < 1.01, shape  # 3xTF32: nothing gained
    assert gains["4096x4096x4100"]["warp_specialized_stream_k"] > change.predicted["ratio"]["4096x4096x4100"][1]
    text = str(lesson_21.aligned_table(run, change))
    assert text.count("step") >= 6 and ": above" in text and ": below" in text
