"""Lesson 25 reads shipped runs by name, and shows nothing where one is missing (as in a wheel install, which has no
experiments/). In the checkout every one of them must be found: a renamed file fails here instead of leaving the
lesson's section quietly empty."""

from pathlib import Path

from gemm_steps.course import lesson_25


def test_every_run_lesson_24_reads_is_found_in_the_checkout():
    assert lesson_25.shape_suites() is not None, "no two shape-suite runs of one GPU in results/"
    overhead = lesson_25.call_overhead()
    assert overhead is not None, "experiments/results/experiment-call-overhead{-before,}-nvidia-h100.json missing"
    assert overhead.before["shape"] == overhead.after["shape"] == overhead.shape
    assert lesson_25.held_out() is not None, "no experiments/results/experiment-matmul-held-out-*.json"


def test_the_suite_table_says_which_time_moved():
    """Under the before/after figure: step 11's and cuBLAS's own speed-ups per shape, from the two runs' times."""
    from gemm_steps.harness.shape_suite import SHAPE_CLASSES

    shape = next(iter(SHAPE_CLASSES.values()))[0]

    def run(step11_ms, cublas_ms):
        return {"records": [{"step": "stream_k", "M": shape[0], "N": shape[1], "K": shape[2], "median_ms": step11_ms},
                            {"step": "cublas", "M": shape[0], "N": shape[1], "K": shape[2], "median_ms": cublas_ms}]}

    table = lesson_25.suite_speedups(run(3.0, 1.0), run(1.0, 0.5))
    assert table.rows[0]["step 11 faster by"] == 3.0 and table.rows[0]["cuBLAS faster by"] == 2.0
    assert "| 3.00× | 2.00× |" in table


def test_the_call_overhead_table_divides_by_the_empty_launches():
    run = {"shape": [64, 64, 64], "matmul_us": 30.0, "empty_kernel_us": 10.0}
    after = {**run, "matmul_us": 12.0, "direct_empty_kernel_us": 4.0}
    table = lesson_25.call_overhead_table(lesson_25.CallOverhead([64, 64, 64], run, after))
    before, after = table.rows
    assert before["matmul ÷ empty Numba launch"] == 3.0 and before["matmul ÷ empty cuda.core launch"] is None
    assert after["matmul ÷ empty Numba launch"] == 1.2 and after["matmul ÷ empty cuda.core launch"] == 3.0
    assert "| after | 12 | 10 | 1.2× | 4 | 3.0× |" in table


def test_the_held_out_section_reads_a_set_nobody_had_seen():
    """The newest run of scripts/held_out.py whose set was not seen before it ran (a ``--seed`` rerun of an old set
    says ``"seen": true`` and is skipped), with a row per precision and size and issue 37's targets."""
    from gemm_steps.harness import held_out

    run = lesson_25.held_out_set()
    assert run is not None, "no results/held-out-*.json of an unseen set"
    assert not run["held_out"].get("seen")  # unseen when it ran (its seed may be seen since: redrawn after it)
    assert run["held_out"]["seed"] in (*held_out.SEEN_SEEDS, held_out.SEED)
    table = lesson_25.held_out_set_table(run)
    assert [(row["precision"], row["M·N·K"]) for row in table.rows] == [
        ("`tf32`", "≥ 2³⁰"), ("`tf32`", "< 2³⁰"), ("`tf32x3`", "≥ 2³⁰"), ("`tf32x3`", "< 2³⁰")]
    summary = held_out.summarize(run["shapes"])
    assert table.rows[0]["median"] == summary.group("tf32", "large").median
    assert "median ≥ 0.9×: " in table.rows[0]["issue 37's targets"]


def test_the_split_k_section_reads_both_runs_and_its_words_hold():
    """The split-K section's table from experiments/split_k_tf32.py's two H200 runs and its prediction: the slices
    are the policies' (the first run's and the shipped one), and the section's words agree with the numbers — long K
    gains at least 2× over step 17 before split-K and comes within a quarter of cuBLAS TF32 or past it; short K (640³,
    1024³) lost split in the first run and is not split as shipped; whole tiles (4096³) unchanged within 3 %; the
    first split-K kernel slower than the shipped one at every shape."""
    from gemm_steps.course import predictions

    runs = lesson_25.split_k_runs()
    prediction = predictions.get(25, "split_k_over_one_slice")
    assert runs and prediction and prediction.before_the_run
    rows = {r["M×N×K"]: r for r in lesson_25.split_k_rows(*runs, prediction)}
    long_k = ["900×640×14336", "1000×700×9996", "512×512×16384", "768×768×16384", "300×1000×6000"]
    for shape in long_k:
        assert rows[shape]["shipped ÷ before split-K"] >= 2 and rows[shape]["shipped ÷ cuBLAS TF32"] >= 0.75, shape
    for shape in ("1024³", "640³"):
        assert rows[shape]["first run"] < 1 and rows[shape]["slices (shipped)"] == 1, shape
    assert 0.97 <= rows["4096³"]["shipped ÷ before split-K"] <= 1.03 and rows["4096³"]["slices (shipped)"] == 1
    second = runs[1]["summary"]
    assert all(row["branch_over_after"] < 1 for row in second.values())
    assert len(lesson_25.split_k_figure(list(rows.values())).axes) == 1


def test_the_wave_number_lesson_24_quotes_is_the_experiments():
    """Lesson 25's "140 tiles took 1.67× the time of 130" is experiments/small_products.py's first H200 run (step 18 on
    one slice, 1792×1280×256 over 1664×1280×256), rounded as quoted."""
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    run = json.loads((repo / "experiments" / "results" / "experiment-small-products-nvidia-h200.json").read_text())
    quoted = f"{run['summary']['140_tiles_time_over_130']:.2f}×"
    text = " ".join((repo / "lessons" / "25_where_next.py").read_text().split())
    assert f"140 tiles took {quoted} the time of 130" in text.replace("# ", ""), quoted


def test_the_small_products_deep_dive_reads_its_runs_and_its_words_hold():
    """Deep dive 25's sentences against its files: step 18 ~2.5 µs above cuBLAS SGEMM besides the k-loop and twice
    as fast in it, level at K = 64 and ahead from 128; a copy at 3968×384 still 3–4 µs (B's 3.0, A's 4.2); every
    split the rule dropped made step 18 faster."""
    from gemm_steps.course.timings import load_run

    floor, copies, splits = (load_run(name) for name in (lesson_25.FLOOR_RUN, lesson_25.COPY_RUN, lesson_25.SPLIT_RUN))
    lines, us = floor["summary"]["lines"], floor["summary"]["us"]
    step18, sgemm = lines["warp_specialized_3xtf32"], lines["cublas"]
    assert 2.0 <= step18["intercept_us"] - sgemm["intercept_us"] <= 3.0
    assert 1.9 <= sgemm["us_per_1024_k"] / step18["us_per_1024_k"] <= 2.2
    at = {int(shape.split("x")[2]): row for shape, row in us.items()}
    assert abs(at[64]["warp_specialized_3xtf32"] / at[64]["cublas"] - 1) < 0.05
    assert all(at[k]["warp_specialized_3xtf32"] < at[k]["cublas"] for k in (128, 256))
    plain = copies["summary"]["3968x384x128"]["us"]["warp_specialized_3xtf32"]
    a_copy = copies["summary"]["3968x384x127"]["us"]["warp_specialized_3xtf32"] - plain
    b_copy = copies["summary"]["3968x383x128"]["us"]["warp_specialized_3xtf32"] - plain
    assert round(b_copy, 1) == 3.0 and round(a_copy, 1) == 4.2
    from gemm_steps.steps import warp_specialized_3xtf32 as step18_module

    for shape, row in splits["summary"].items():
        m, n, k = (int(x) for x in shape.split("x"))
        tiles, k_tiles = -(-m // 128) * -(-n // 128), -(-k // 32)
        if step18_module.slices(tiles, k_tiles, 132) < step18_module.split_asked(tiles, k_tiles, 132):
            assert row["new_time_over_old"] < 0.97, shape
    assert "deep_dives/25_small_products" in (Path(__file__).resolve().parent.parent / "lessons/25_where_next.py").read_text()
