"""Lesson 21 reads shipped runs by name, and shows nothing where one is missing (as in a wheel install, which has no
experiments/). In the checkout every one of them must be found: a renamed file fails here instead of leaving the
lesson's section quietly empty."""

from gemm_steps.course import lesson_21


def test_every_run_lesson_21_reads_is_found_in_the_checkout():
    assert lesson_21.shape_suites() is not None, "no two shape-suite runs of one GPU in results/"
    overhead = lesson_21.call_overhead()
    assert overhead is not None, "experiments/results/experiment-call-overhead{-before,}-nvidia-h100.json missing"
    assert overhead["before"]["shape"] == overhead["after"]["shape"]
    assert lesson_21.held_out() is not None, "no experiments/results/experiment-matmul-held-out-*.json"
