"""The tensor-core exercises' graders — ``tensor_cores`` (lesson 12: one warp's mma, its fragments by the layout) and
``three_tf32`` (lesson 13: the split and the three products, against the FP32 contract): each passes its solution and
fails its stub and wrong solutions with the message that names the mistake.

A wrong solution is a whole file in tests/exercise_cases/ or the shipped solution's source with one edit, written to a
temporary file and graded like a learner's file (the GPU compile check included, where NVVM is installed).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from gemm_steps.course import exercise_solutions_tensor_cores, exercise_three_tf32, exercises
from gemm_steps.course.gpu_model import a_element, b_element, c_element

SIMULATOR_ONLY = pytest.mark.skipif(not exercises.SIMULATOR, reason="the watched mma twin is the simulator's")
CASES = Path(__file__).parent / "exercise_cases"
REPO = Path(__file__).resolve().parents[1]


def _solution_source() -> str:
    return inspect.getsource(exercise_solutions_tensor_cores).replace("from ..toolkit", "from gemm_steps.toolkit")


def _grade(name: str, source: str, tmp_path, **options):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return exercises.check(name, path, say=lambda line: None, **options)


def _planted(name: str, old: str, new: str, tmp_path, **options):
    source = _solution_source()
    assert source.count(old) == 1, f"the solution no longer contains {old!r} once"
    return _grade(name, source.replace(old, new), tmp_path, **options)


def _failure(report) -> str:
    text = report.text()
    assert not report.passed, text
    return text


# -- tensor_cores ----------------------------------------------------------------------------------------------------
@SIMULATOR_ONLY
def test_the_tensor_cores_solution_passes_as_a_learners_file(tmp_path):
    report = _grade("tensor_cores", _solution_source(), tmp_path)
    text = report.text()
    assert report.passed, text
    assert "ok    the fragments: each lane passed the A and B elements the layout names" in text, text
    assert "ok    random A and B: D = A·B with A and B rounded to TF32" in text, text


@SIMULATOR_ONLY
def test_the_tensor_cores_stub_hears_that_the_mma_was_never_called():
    text = _failure(exercises.check("tensor_cores", say=lambda line: None))
    assert "the warp never called mma_tf32" in text, text


@SIMULATOR_ONLY
def test_a_transposed_b_fragment_is_named_element_by_element(tmp_path):
    text = _failure(_grade("tensor_cores", (CASES / "tensor_cores_transposed_b.py").read_text(), tmp_path))
    # The first lane and register whose B element differs from its transpose (lanes in order, a before b).
    lane, r = next((lane, r) for lane in range(32) for r in range(2) if b_element(lane, r)[::-1] != b_element(lane, r))
    want, got = b_element(lane, r), b_element(lane, r)[::-1]
    assert (f"lane {lane}'s b[{r}] holds B[{got[0]}][{got[1]}], the layout wants B[{want[0]}][{want[1]}]") in text, text
    assert "every misplaced B element is the transpose of the one wanted" in text, text


@SIMULATOR_ONLY
def test_a_wrong_lane_to_element_map_is_named_element_by_element(tmp_path):
    text = _failure(_grade("tensor_cores", (CASES / "tensor_cores_lane_map.py").read_text(), tmp_path))
    # The case maps lane → (group, pair) = (lane % 8, lane // 8): lane 1 passes A[1][0] where the layout wants A[0][1].
    got = (1 % 8, 1 // 8)
    assert f"lane 1's a[0] holds A[{got[0]}][{got[1]}], the layout wants A[{a_element(1, 0)[0]}][{a_element(1, 0)[1]}]" \
        in text, text
    assert "pass another lane's A elements" in text and "group = lane // 4 and pair = lane % 4" in text, text


@SIMULATOR_ONLY
def test_d_stored_in_the_wrong_place_is_named(tmp_path):
    report = _planted("tensor_cores", "    c[group, 2 * pair + 1] = d1\n    c[group + 8, 2 * pair] = d2\n",
                      "    c[group, 2 * pair + 1] = d2\n    c[group + 8, 2 * pair] = d1\n", tmp_path)
    text = _failure(report)
    right, wrong = c_element(0, 1), c_element(0, 2)
    assert (f"lane 0's d[1] was stored at C[{wrong[0]}][{wrong[1]}]; the layout puts it at C[{right[0]}][{right[1]}]"
            in text), text


@SIMULATOR_ONLY
def test_a_fragment_read_outside_a_says_the_shapes(tmp_path):
    report = _planted("tensor_cores", "a1 = to_tf32(a[group + 8, pair])", "a1 = to_tf32(a[pair, group + 8])", tmp_path)
    text = _failure(report)
    assert "outside a matrix" in text and "a is 16×8, b 8×8 (K×N), c 16×8" in text, text


@SIMULATOR_ONLY
def test_unrounded_fragments_are_told_to_round(tmp_path):
    source = _solution_source()
    kernel = source[source.index("def mma_kernel"):source.index("# -- three_tf32")]
    unrounded = re.sub(r"to_tf32\((\w\[[^\]]*\])\)", r"\1", kernel)
    assert unrounded.count("to_tf32") == 0 and kernel.count("to_tf32") == 6
    text = _failure(_grade("tensor_cores", source.replace(kernel, unrounded), tmp_path))
    assert "C is A·B of A and B truncated to TF32" in text and "round each element with to_tf32" in text, text


@SIMULATOR_ONLY
def test_lanes_that_skip_the_mma_are_stopped_and_named(tmp_path):
    old = "    d0, d1, d2, d3 = mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)\n"
    new = ("    d0, d1, d2, d3 = zero, zero, zero, zero\n    if lane < 16:\n"
           "        d0, d1, d2, d3 = mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)\n")
    text = _failure(_planted("tensor_cores", old, new, tmp_path, time_limit=2))
    assert "lanes 0–15 called mma_tf32 and waited for lanes 16–31, which never called it" in text, text


def test_the_coded_inputs_name_their_own_elements():
    from gemm_steps.course import exercise_tensor_cores as grader

    a, b = grader.coded_inputs()
    assert grader.element_name(a[13, 2]) == "A[13][2]" and grader.element_name(b[3, 1]) == "B[3][1]"
    assert len({grader.element_name(v) for v in np.concatenate([a.ravel(), b.ravel()])}) == 16 * 8 + 8 * 8
    assert np.array_equal(np.float32(a), grader.round_to_tf32(a))  # exact in TF32: rounding cannot move them
    assert "no element" in grader.element_name(0.0)


# -- three_tf32 ------------------------------------------------------------------------------------------------------
@SIMULATOR_ONLY
def test_the_three_tf32_solution_passes_as_a_learners_file(tmp_path):
    report = _grade("three_tf32", _solution_source(), tmp_path)
    text = report.text()
    assert report.passed, text
    assert re.search(r"ok    finite inputs: \d+ classes at K = 16 and 1 at K = 256, each within the FP32 contract's "
                     r"bound \(worst: .*, 0\.\d\d× it\), the tensor core's float32 sums truncated", text), text
    assert "ok    inf and NaN: split keeps them whole, and 13 inputs with inf or NaN" in text, text


@SIMULATOR_ONLY
def test_the_three_tf32_stub_fails_with_its_error_and_no_mma():
    text = _failure(exercises.check("three_tf32", say=lambda line: None))
    assert "K = 16, standard normal: error" in text and "the warp called mma_tf32 0 times per k-step" in text, text


def _ratio(text: str) -> float:
    return float(re.search(r"= ([\d.]+)× the bound", text).group(1))


@SIMULATOR_ONLY
@pytest.mark.parametrize("case, says", [
    # Truncating big leaves a 13-bit small part; the tensor core keeps 11 of them. Caught on the class whose low 13
    # mantissa bits are all 1; the hint measures the split itself.
    ("three_tf32_truncated_split.py", ["K = 16, mantissas ending in 13 one bits: error",
                                       "your split reads x = ", "not truncated"]),
    ("three_tf32_missing_term.py", ["K = 16, standard normal: error", "called mma_tf32 2 times per k-step",
                                    "TF32's size"]),
    # Lesson 13's first version: within the bound at K = 16, past it at K = 256.
    ("three_tf32_running_sum_in_mma.py", ["K = 256, uniform positive: error", "every mma_tf32 was handed a nonzero C",
                                          "an error that grows with K"]),
], ids=["truncated-split", "missing-small-big", "running-sum-in-the-mma"])
def test_a_wrong_three_tf32_fails_by_its_error_against_the_contract(case, says, tmp_path):
    text = _failure(_grade("three_tf32", (CASES / case).read_text(), tmp_path))
    for words in says:
        assert words in text, text
    assert _ratio(text) > 1 and "docs/fp32_contract.md, item 1" in text, text


@SIMULATOR_ONLY
def test_a_split_that_turns_inf_into_nan_fails(tmp_path):
    text = _failure(_grade("three_tf32", (CASES / "three_tf32_inf_to_nan.py").read_text(), tmp_path))
    assert "ok    finite inputs:" in text, text  # its finite numbers are right: only inf is wrong
    assert re.search(r"split\(\+inf\) returned \(inf \(0x7F800000\), nan \(0x[0-9A-F]{8}\)\): big \+ small as the "
                     r"tensor core reads them \(top 10 mantissa bits\) is nan, where x is inf", text), text


@SIMULATOR_ONLY
def test_a_split_that_keeps_a_low_payload_nan_fails(tmp_path):
    # A NaN whose payload is all in the low 13 bits reads as inf once the tensor core drops them.
    text = _failure(_planted("three_tf32", "        return float32(math.nan), float32(0.0)",
                             "        return x, float32(0.0)", tmp_path))
    assert "split(a NaN with only low bits (0x7F800001)) returned (nan (0x7F800001), 0)" in text, text
    assert "is inf, where x is nan" in text, text


@SIMULATOR_ONLY
def test_small_products_joined_past_an_inf_give_nan_where_sgemm_has_inf(tmp_path):
    source = _solution_source()
    for r in range(4):
        old = f"acc{r} += d{r} + s{r} if math.isfinite(d{r}) else d{r}"
        assert old in source
        source = source.replace(old, f"acc{r} += d{r} + s{r}")
    text = _failure(_grade("three_tf32", source, tmp_path))
    assert re.search(r"inf in [AB] \(K = 16\): C\[\d+\]\[\d+\] is NaN where the sequential float32 sum has [+-]inf",
                     text), text
    assert "let it join the running sum alone" in text, text


def test_the_hard_class_is_where_truncating_and_rounding_differ():
    x = exercise_three_tf32.low_bits_set(np.random.default_rng(0), (1000,))
    assert (x > 0).all() and ((x.view(np.uint32) & 0x1FFF) == 0x1FFF).all()
    names = [name for name, _, _ in exercise_three_tf32.finite_cases()]
    assert "scaled 2^-120·A, 2^100·B" not in names and names[-2:] == ["mantissas ending in 13 one bits",
                                                                     "uniform positive"]


# -- where a learner finds them ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, lesson", [("tensor_cores", "12_tensor_cores"), ("three_tf32", "13_three_tf32")])
def test_the_lesson_points_at_its_exercise(name, lesson):
    assert exercises.get(name).lesson_name == lesson
    text = (REPO / "lessons" / f"{lesson}.py").read_text()
    assert f"exercises/{name}.py" in text and f"gemm-steps exercise check {name}" in text
