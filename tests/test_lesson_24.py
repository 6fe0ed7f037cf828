"""The FP32-contract lesson (lessons/*fp32_contract.py), its helpers (gemm_steps/course/lesson_24.py) and the run it
reads (experiments/fp32_accuracy.py): the experiment finds its kernels in the step registry and runs end to end on
the simulator at a tiny size (a smoke test: one class, one special input, one kernel of each kind, a few seconds on
one core; the simulated wgmma steps cost tens of seconds on a busy machine, and test_fp32_contract.py runs them), the
helpers turn its file into tables and verdicts, the models show each fault the lesson names, a missing run fails
loudly, and the shipped GPU run (once it is committed) covers every class and 3xTF32 step."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import gemm_steps
from cell_count import MAX_CELLS, lesson_cells
from gemm_steps.course import lesson_24
from gemm_steps.harness import fp32_contract as contract
from gemm_steps.harness import results_files
from gemm_steps.harness.bench import save
from gemm_steps.harness.step import all_steps

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SCALED = "scaled 2^-120·A, 2^100·B"


def _point_results_at(monkeypatch, folder: Path) -> None:
    monkeypatch.setattr(results_files, "RESULTS_DIR", folder / "results")
    monkeypatch.setattr(results_files, "EXPERIMENT_RESULTS_DIR", folder / "experiments" / "results")


#: What the smoke test runs: one entry of each kind (cuBLAS is recorded as unavailable on the simulator).
SMOKE_ENTRIES = ["cublas", "sequential", "three_tf32", "tensor_cores", "matmul tf32x3"]


@pytest.fixture(scope="module")
def smoke_run():
    """The experiment on the simulator: one class that broke the first split, one K, one special input."""
    if not gemm_steps.SIMULATOR:
        pytest.skip("the smoke test is sized for the simulator; on a GPU run python -m experiments.fp32_accuracy")
    from experiments import fp32_accuracy

    return fp32_accuracy.measure(4, 4, [4], classes=[SCALED], specials=["inf in A"], workers=1, only=SMOKE_ENTRIES)


def test_the_experiment_finds_every_kernel_it_should():
    from experiments import fp32_accuracy

    names = [e["name"] for e in fp32_accuracy.entries()]
    three = [s.name for s in all_steps() if s.arithmetic == "3xtf32"]
    tf32 = [s.name for s in all_steps() if s.arithmetic == "tf32"]
    assert {"three_tf32", "warpgroup_mma"} <= set(three)  # the registry is asked, so a new 3xTF32 step joins
    assert names == ["cublas", "sequential", *three, *tf32, "matmul tf32x3", "matmul ieee", "matmul tf32"]


def test_the_experiment_records_what_ran_and_what_could_not(smoke_run):
    assert [e["name"] for e in smoke_run["entries"]] == SMOKE_ENTRIES
    assert lesson_24.unavailable(smoke_run) == {"cublas": smoke_run["entries"][0]["unavailable"]}
    assert smoke_run["environment"]["simulator"]


def test_the_experiment_tells_kept_from_broken(smoke_run):
    """On the class that broke the unscaled split, every 3xTF32 step keeps the contract, every TF32 step breaks it
    (its error is TF32's, orders above the bound), the sequential sum is its own reference, and matmul records its
    choice."""
    records = {r["step"]: r for r in smoke_run["records"]}
    for e in smoke_run["entries"]:
        if e["kind"] == "step" and e["arithmetic"] == "3xtf32":
            assert records[e["name"]]["kept"], records[e["name"]]
        elif e["kind"] == "step":
            assert not records[e["name"]]["kept"] and records[e["name"]]["error"] > 100 * records[e["name"]]["bound"]
    assert records["sequential"]["error"] == records["sequential"]["reference_error"] > 0
    assert "chosen" in records["matmul tf32x3"]
    specials = {r["step"]: r for r in smoke_run["specials"]}
    assert all(r["same_as_sequential"] and r["same_as_cublas"] is None for r in specials.values())
    assert specials["three_tf32"]["counts"]["+inf"] > 0


def test_the_helpers_read_the_experiments_file(smoke_run, tmp_path, monkeypatch):
    _point_results_at(monkeypatch, tmp_path)
    save(smoke_run, tmp_path / "experiments" / "results" / lesson_24.RUN)
    run = lesson_24.load()
    table = lesson_24.accuracy_table(run)
    assert len(table.splitlines()) == 2 + len(run["classes"]) + 1  # header, rule, a row a class, the specials
    assert "✓" in table and "**✗" in table and "cuBLAS SGEMM" not in table  # cuBLAS did not run here
    verdicts = lesson_24.verdicts(run)
    assert verdicts["three_tf32"]["kept"] == verdicts["three_tf32"]["of"] == 1
    assert verdicts["tensor_cores"]["kept"] == 0 and verdicts["tensor_cores"]["worst"] > 100
    assert lesson_24.tf32_over_3xtf32(run)[0] > 100
    assert set(lesson_24.chosen_steps(run)) == {"tf32x3"}
    assert lesson_24.specials_kept(run)["three_tf32"] == {"kept": True, "off": 0, "against": "same_as_sequential"}
    assert "inf in A" in lesson_24.specials_table(run)
    fig = lesson_24.error_figure(run, [SCALED])
    assert fig.axes[0].get_title() == SCALED


def test_a_missing_run_stops_the_lesson(tmp_path, monkeypatch):
    _point_results_at(monkeypatch, tmp_path)
    with pytest.raises(FileNotFoundError, match="experiments.fp32_accuracy"):
        lesson_24.load()


def test_worst_counts_a_nan_output_as_broken():
    run = {"records": [{"step": "x", "inputs": "c", "K": 1, "error": 1e-8, "bound": 1e-7, "kept": True},
                       {"step": "x", "inputs": "c", "K": 2, "error": math.nan, "bound": 1e-7, "kept": False}]}
    w = lesson_24.worst(run)[("c", "x")]
    assert w.k == 2 and math.isinf(w.of_bound) and not w.kept


def test_the_models_show_each_fault_the_lesson_names():
    """What the lesson says of its model table: unscaled small parts break the contract on the scaled class, a sum
    over all of K in the truncating accumulator on uniform positive at large K; truncating A alone keeps it but
    multiplies the error (per-element exponents); the fixed arithmetic keeps it everywhere."""
    rows = {r.inputs: r.of_bound for r in lesson_24.model_errors(
        [(SCALED, 1), ("per-element exponents", 32), ("uniform positive", 16384)])}
    assert rows[SCALED]["small parts unscaled"] > 3 and rows[SCALED]["fixed"] < 1
    assert rows["uniform positive"]["all of K in the tensor core"] > 3 and rows["uniform positive"]["fixed"] < 1
    truncated = rows["per-element exponents"]
    assert truncated["A truncated"] < 1 and truncated["A truncated"] > 2 * truncated["fixed"]
    assert all(r["fixed"] < 1 for r in rows.values())


def test_the_split_turns_inf_into_nan_and_reads_x_to_2_to_the_minus_23():
    inf_row = next(line for line in lesson_24.special_split().splitlines() if line.startswith("| inf |"))
    cells = [c.strip() for c in inf_row.strip("|").split("|")]
    assert cells[2] == "nan" and cells[-2] == "nan" and cells[-1] == "inf"  # small, the 3xTF32 sum, IEEE x·b
    r = lesson_24.read_errors()
    assert r.rounded <= -23 + 1e-3 and -22 < r.truncated <= -21


def test_the_class_table_and_the_fix_costs_come_from_their_sources():
    table = lesson_24.class_ranges()
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == [
        name for name, _, _ in contract.input_classes(1, 1, 1)]
    costs = lesson_24.fix_costs()
    assert {"three_tf32", "warpgroup_mma"} <= set(costs.steps)
    extremes = lesson_24.largest_cost(costs)
    every = [x for sizes in costs.steps.values() for c in sizes.values() for x in c["cost"]]
    assert extremes.largest == max(every) and extremes.smallest == min(every)


def test_the_lesson_keeps_to_the_cell_rule():
    (path,) = sorted((REPO / "lessons").glob("*fp32_contract.py"))
    assert lesson_cells(path.stem) <= MAX_CELLS


def test_the_shipped_gpu_run_covers_every_class_and_3xtf32_step():
    path = results_files.find(lesson_24.RUN)
    assert path is not None, f"{lesson_24.RUN} is missing (renamed?): the lesson reads it"
    run = lesson_24.load()
    assert not run["environment"].get("simulator"), f"{lesson_24.RUN} was measured on the simulator"
    assert run["classes"] == [name for name, _, _ in contract.input_classes(1, 1, 1)]
    measured = {e["name"] for e in lesson_24.entries(run, ("step",))}
    assert {s.name for s in all_steps() if s.arithmetic == "3xtf32"} <= measured, "re-run: a 3xTF32 step is missing"
    assert "cublas" not in lesson_24.unavailable(run)
    assert len({r["inputs"] for r in run["specials"]}) == len(list(contract.special_inputs(2, 2, 2)))
    assert np.isfinite([r["error"] for r in run["records"] if r["step"] == "cublas"]).all()


def test_cublas_sgemm_is_not_the_sequential_sum_at_every_square():
    """Issue 36: the lesson said cuBLAS SGEMM equals the sequential sum bit for bit at the benchmark's squares; at
    512³ it differs in every benchmark file, and step 11 is not the sequential sum either."""
    seq = lesson_24.sgemm_against_sequential()
    assert seq.files >= 2
    assert seq.sizes[512].sequential > 0 and seq.sizes[8192].sequential == 0
    assert seq.sizes[1024].stream_k > 0
    text = (Path(__file__).resolve().parents[1] / "lessons/24_fp32_contract.py").read_text()
    assert "equal bit for bit at the course benchmark's squares" not in text
