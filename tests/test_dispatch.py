"""How matmul picks a step for a shape (gemm_steps/harness/dispatch.py) and `gemm-steps explain`."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import gemm_steps
from numba import cuda

from gemm_steps.course import cli
from gemm_steps.harness import dispatch
from gemm_steps.steps import warp_specialized_3xtf32
from helpers import assert_close

STEPS = {s.name for s in gemm_steps.steps()}
TABLE = {"gpu": "GPU A", "date": "2026-01-01", "shapes": [
    [256, 256, 256, {"shared_memory": 0.03, "stream_k": 0.08}, 0.02],
    [4096, 4096, 4096, {"shared_memory": 20.0, "stream_k": 3.0}, 2.7],
]}


def test_the_step_fastest_at_the_nearest_measured_shape_is_chosen():
    small = dispatch.choose_from(TABLE, 300, 200, 256, STEPS)
    assert small.step_name == "shared_memory" and small.nearest == (256, 256, 256)
    assert small.pct_of_cublas["shared_memory"] == pytest.approx(100 * 0.02 / 0.03)
    assert dispatch.choose_from(TABLE, 4000, 4100, 4096, STEPS).step_name == "stream_k"


def test_far_from_every_measured_shape_or_without_a_table_the_last_step_runs():
    far = dispatch.choose_from(TABLE, 100_000, 16, 16, STEPS)
    assert far.step_name == "stream_k" and "too far" in far.reason
    assert dispatch.choose_from(None, 256, 256, 256, STEPS).step_name == "stream_k"
    only_known = dispatch.choose_from(TABLE, 256, 256, 256, {"naive", "stream_k"})  # shared_memory not a step here
    assert only_known.step_name == "stream_k"


def test_another_gpus_table_is_used_and_said_so():
    choice = dispatch.choose_from(TABLE, 256, 256, 256, STEPS, gpu="GPU B")
    assert "no table for GPU B" in choice.reason


def test_a_suite_run_becomes_a_table_that_matmul_reads(tmp_path, monkeypatch):
    records = [{"step": step, "M": 64, "N": 64, "K": 64, "median_ms": ms} for step, ms in
               [("cublas", 0.01), ("shared_memory", 0.02), ("stream_k", 0.05)]]
    records.append({"step": "stream_k", "M": 96, "N": 96, "K": 96, "error": "failed"})
    path = dispatch.record({"environment": {"gpu": None, "date": "d"}, "records": records}, tmp_path / "t.json")
    table = json.loads(path.read_text())
    assert table["null"]["shapes"] == [[64, 64, 64, {"shared_memory": 0.02, "stream_k": 0.05}, 0.01]]
    monkeypatch.setenv("GEMM_STEPS_DISPATCH", str(path))
    monkeypatch.setattr(dispatch, "current_gpu_name", lambda: None)  # the run's GPU (on a GPU: not the shipped one's)
    dispatch.forget()
    try:
        chosen = []
        monkeypatch.setattr(gemm_steps.Step, "__call__", lambda self, a, b, out=None: chosen.append(self.name))
        gemm_steps.matmul(np.ones((60, 70), np.float32), np.ones((70, 64), np.float32))
        assert chosen == ["shared_memory"]
    finally:
        dispatch.forget()


def test_the_shipped_table_is_readable_and_matmul_stays_correct():
    entry = dispatch.table("NVIDIA H100 80GB HBM3")
    assert entry and entry["shapes"], "the shipped dispatch table is missing or empty"
    known = STEPS | set(dispatch.TILE_VARIANTS) | set(dispatch.PADDED_VARIANTS)
    assert all(set(row[3]) <= known for row in entry["shapes"]), "the table names a kernel this package lacks"
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((40, 33), np.float32), rng.standard_normal((33, 29), np.float32)
    assert_close(gemm_steps.matmul(a, b), a, b, "matmul")


def test_explain_names_the_step_and_the_measured_shape(capsys):
    assert cli.main(["explain", "250", "260", "256"]) == 0
    out = capsys.readouterr().out
    choice = dispatch.choose(250, 260, 256)
    assert dispatch.candidate(choice.step_name).name in out and "why:" in out
    assert cli.main(["explain", "1000", "1000", "1000"]) == 0
    assert "tiles:" in capsys.readouterr().out


def test_within_noise_of_the_fastest_the_latest_step_wins():
    table = {"gpu": "GPU A", "shapes": [[2048, 2048, 2048, {"warp_tiling": 1.00, "stream_k": 1.02}, 0.9],
                                        [1024, 1024, 1024, {"warp_tiling": 1.00, "stream_k": 1.10}, 0.9]]}
    assert dispatch.choose_from(table, 2048, 2048, 2048, STEPS).step_name == "stream_k"  # 2 % slower: a tie
    assert dispatch.choose_from(table, 1024, 1024, 1024, STEPS).step_name == "warp_tiling"  # 10 % slower


def test_matmul_can_choose_step_11_with_smaller_tiles_and_it_is_correct(monkeypatch):
    """A table whose fastest kernel at a shape is a tile variant sends matmul there; the variant (step 11's kernel
    for 64×64 tiles) is right on a ragged shape, on the simulator as on a GPU."""
    table = {"gpu": None, "shapes": [[96, 80, 40, {"stream_k": 0.05, "stream_k@64x64": 0.02}, 0.01]]}
    monkeypatch.setattr(dispatch, "table", lambda gpu: table)
    dispatch.forget()
    try:
        assert dispatch.choose(97, 83, 41).step_name == "stream_k@64x64"
        variant = dispatch.candidate("stream_k@64x64")
        launched = []
        original = variant.tiled.launch_through_numba
        monkeypatch.setattr(variant.tiled, "launch_through_numba", lambda *args: launched.append(1) or original(*args))
        rng = np.random.default_rng(5)
        a, b = rng.standard_normal((97, 41), np.float32), rng.standard_normal((41, 83), np.float32)
        assert_close(gemm_steps.matmul(a, b), a, b, "matmul through stream_k@64x64")
        assert launched, "matmul did not run the chosen tile variant"
    finally:
        dispatch.forget()


@pytest.mark.skipif(not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
                    reason="step 17 needs compute capability 9.0")
def test_matmul_can_choose_step_17_with_128_row_tiles_at_tf32_only(monkeypatch):
    """Step 17's kernel on 128 × 128 tiles is a TF32 candidate: allowed at ``precision="tf32"`` only (not under the
    FP32 contract, not on the FP32 units), described as step 17's kernel, and right where a table sends matmul to it
    (on the simulator it runs the step's simulator tiles)."""
    name = "warp_specialized@128x128"
    assert name in dispatch.allowed_steps("tf32")
    assert name not in dispatch.allowed_steps("tf32x3") and name not in dispatch.allowed_steps("ieee")
    assert dispatch._step_arithmetic(name) == "tf32" and dispatch.candidate(name).number == 17
    table = {"gpu": None, "shapes": [[96, 80, 48, {"warp_specialized": 0.8, name: 0.5}, 0.4]]}  # ms
    monkeypatch.setattr(dispatch, "table", lambda gpu: table)
    dispatch.forget()
    try:
        assert dispatch.choose(90, 72, 44, "tf32").step_name == name
        rng = np.random.default_rng(17)
        a, b = rng.standard_normal((90, 44), np.float32), rng.standard_normal((44, 72), np.float32)
        got = gemm_steps.matmul(a, b, precision="tf32")
        assert np.abs(got - a @ b).max() <= 1e-2 * np.abs(a @ b).max()
    finally:
        dispatch.forget()


@pytest.mark.parametrize("name", sorted(dispatch.TILE_VARIANTS))
def test_a_tile_variant_is_a_configuration_its_step_accepts(name):
    """The tiles a GPU runs for each variant pass its step's own checks (``Config.problems``: threads a warpgroup,
    the register hand-off against the pool, shared-memory alignment), so a variant is never first tried on a GPU;
    a tile no step accepts fails here."""
    module = dispatch.candidate(name).module
    assert module.Config.of(dispatch.TILE_VARIANTS[name]).problems() == []


def test_the_variant_check_can_fail():
    """Step 18 on 64 × 96 tiles (a warpgroup computes 64 columns: 96 is not a whole number of them) is refused."""
    tiles = replace(dispatch.TILE_VARIANTS["warp_specialized_3xtf32@64x128"], BLOCK_N=96, THREAD_N=6)
    assert warp_specialized_3xtf32.Config.of(tiles).problems()


def test_an_fp32_step_and_a_rival_judged_at_another_shape_are_compared_at_the_rivals(monkeypatch):
    """458×589×1407 (held-out seed 20261220): step 11's 64 × 64 tiles ran 90 % of cuBLAS at 640³, the nearest shape,
    where step 18's 64 × 128 tiles read A as it is; they copy it here, so they are judged at 501×333×703 (86 %), where
    step 11's tiles ran slower. Compared there, the tensor cores run — and where step 11's tiles were faster there too,
    they keep the product."""
    fp32, rival = "stream_k@64x64", "warp_specialized_3xtf32@64x128"

    def table_with(fp32_ms_there):
        return {"gpu": None, "shapes": [[640, 640, 640, {fp32: 0.0295, rival: 0.0204}, 0.0265],
                                        [501, 333, 703, {fp32: fp32_ms_there, rival: 0.0211}, 0.0181]]}

    for fp32_ms_there, chosen in ((0.0274, rival), (0.0200, fp32)):
        monkeypatch.setattr(dispatch, "table", lambda gpu, t=table_with(fp32_ms_there): t)
        dispatch.forget()
        try:
            choice = dispatch.choose(458, 589, 1407, "tf32x3")
            assert choice.step_name == chosen, choice.reason
            assert ("compared at one shape" in choice.reason) == (chosen == rival)
        finally:
            dispatch.forget()


def test_a_3xtf32_step_and_a_tf32_rival_judged_elsewhere_are_compared_at_both_shapes():
    """8198×172×2503 at ``precision="tf32"`` (held-out seed 20261222): step 22 (3xTF32) judged at 8000×250×6001, step
    23 (TF32) at 9001×99×5003 on a lower %. Step 23 runs where it was faster at both shapes; not where it was slower at
    step 22's; and two TF32 steps are not compared so."""
    s22, s23, s17 = "warp_specialized_3xtf32_stream_k", "cluster_stream_k_tma_store", "warp_specialized@128x128"
    x, y = (8000, 250, 6001), (9001, 99, 5003)
    judged, judged_at = {s22: 183.0, s23: 145.0, s17: 137.0}, {s22: x, s23: y, s17: y}

    def rows(tf32_at_x):  # both TF32 steps' time at x
        return [[*x, {s22: 0.327, s23: tf32_at_x, s17: tf32_at_x}, 0.598],
                [*y, {s22: 0.223, s23: 0.175, s17: 0.184}, 0.253]]

    here = (8198, 172, 2503)
    assert dispatch._faster_where_judged(s22, judged, judged_at, rows(0.233), here) == s23
    assert dispatch._faster_where_judged(s22, judged, judged_at, rows(0.400), here) is None, "slower at step 22's shape"
    tf32_only = {s23: 183.0, s17: 137.0}
    faster = [[*x, {s23: 0.3, s17: 0.2}, 0.598], [*y, {s23: 0.2, s17: 0.1}, 0.253]]
    assert dispatch._faster_where_judged(s23, tf32_only, {s23: x, s17: y}, faster, here) is None, "one arithmetic"


def test_a_step_this_gpu_cannot_run_is_never_chosen(monkeypatch):
    """A table recorded on an H100 where step 14 (wgmma) was fastest, read on a GPU without wgmma: the next fastest
    step runs instead — and on the H100 itself (here: the simulator, which runs every step) step 14 does."""
    table = {"gpu": None, "shapes": [[8192, 8192, 8192, {"stream_k": 24.0, "three_tf32": 18.0, "warpgroup_mma": 15.0},
                                      21.0]]}
    monkeypatch.setattr(dispatch, "table", lambda gpu: table)
    dispatch.forget()
    try:
        assert dispatch.choose(8192, 8192, 8192).step_name == "warpgroup_mma"
        hopper = gemm_steps.get_step("warpgroup_mma")
        monkeypatch.setattr(type(hopper), "unavailable",
                            lambda self: "needs 9.0" if self.name == "warpgroup_mma" else None)
        dispatch.forget()
        assert dispatch.choose(8192, 8192, 8192).step_name == "three_tf32"
    finally:
        dispatch.forget()


def test_matmul_never_chooses_the_tf32_step_even_where_it_was_fastest(monkeypatch):
    """Step 12 rounds its inputs to TF32 (relative error ~3e-4): a table where it was fastest still gets an FP32
    step; 3xTF32 (float32 accuracy) may be chosen; with no table the default is the last FP32 step, not step 13."""
    table = {"gpu": None, "shapes": [[4096, 4096, 4096, {"stream_k": 3.0, "tensor_cores": 1.0}, 2.7],
                                     [8192, 8192, 8192, {"stream_k": 24.0, "three_tf32": 18.0}, 21.0]]}
    monkeypatch.setattr(dispatch, "table", lambda gpu: table)
    dispatch.forget()
    try:
        assert dispatch.choose(4096, 4096, 4096).step_name == "stream_k"
        assert dispatch.choose(8192, 8192, 8192).step_name == "three_tf32"
        monkeypatch.setattr(dispatch, "table", lambda gpu: None)
        dispatch.forget()
        assert dispatch.choose(4096, 4096, 4096).step_name == gemm_steps.fastest_step().name == "stream_k"
    finally:
        dispatch.forget()


def test_precision_decides_which_arithmetic_matmul_may_run(tmp_path, monkeypatch):
    """At one measured shape where a TF32 step was fastest, then a 3xTF32 one, then an FP32 one: "tf32" takes the
    TF32 step, "tf32x3" (the default) the 3xTF32 one — it keeps the FP32 contract — and "ieee" the FP32 step. The
    simulator's GPU can run every step, so only the precision filters."""
    table = {"GPU A": {"gpu": "GPU A", "date": "d", "shapes": [
        [4096, 4096, 4096, {"warpgroup_tf32": 0.5, "warpgroup_mma": 1.9, "stream_k": 3.0}, 2.7]]}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(table))
    monkeypatch.setenv("GEMM_STEPS_DISPATCH", str(path))
    monkeypatch.setattr(dispatch, "current_gpu_name", lambda: "GPU A")  # on a GPU too: not the shipped table's GPU
    dispatch.forget()
    try:
        assert dispatch.choose(4096, 4096, 4096, "tf32").step_name == "warpgroup_tf32"
        assert dispatch.choose(4096, 4096, 4096).step_name == "warpgroup_mma"
        assert dispatch.choose(4096, 4096, 4096, "tf32x3").step_name == "warpgroup_mma"
        assert dispatch.choose(4096, 4096, 4096, "ieee").step_name == "stream_k"
        arithmetic = {s.name: s.arithmetic for s in gemm_steps.steps()}
        assert {arithmetic[n] for n in dispatch.allowed_steps("ieee") if n in arithmetic} == {"fp32"}
        assert {arithmetic[n] for n in dispatch.allowed_steps("tf32x3") if n in arithmetic} == {"fp32", "3xtf32"}
        chosen = []
        monkeypatch.setattr(gemm_steps.Step, "__call__", lambda self, a, b, out=None: chosen.append(self.name))
        a = np.ones((4096, 8), np.float32)[:, :1].repeat(4096, axis=1)  # any 4096×4096: only the shape matters
        gemm_steps.matmul(a, a)
        gemm_steps.matmul(a, a, precision="ieee")
        assert chosen == ["warpgroup_mma", "stream_k"]
    finally:
        dispatch.forget()


def test_a_bad_precision_is_refused_before_anything_runs():
    for bad in ("fp32", "highest", "TF32", None):
        with pytest.raises(ValueError, match="precision must be one of 'ieee', 'tf32x3', 'tf32'"):
            gemm_steps.matmul(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), precision=bad)


def test_a_tensor_core_step_is_judged_where_its_kernel_path_is_the_one_it_takes():
    """Step 14 measured at 4096³ (every tile full: its fast kernel) and at 3001×2999×1531 (K not a multiple of 32:
    every tile on its edge kernel, several times slower). At 3000³ — K = 3000, the edge kernel again — it is judged at
    the ragged shape, where step 11 beat it, though 4096³ is nearer; at 2048³ (fast path) it keeps 4096³'s verdict.
    An FP32 step is judged at the nearest shape whatever its path (its guarded kernel is nearly as fast)."""
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [4096, 4096, 4096, {"warpgroup_mma": 1.9, "stream_k": 3.0}, 2.7],
        [3001, 2999, 1531, {"warpgroup_mma": 1.2, "stream_k": 1.0}, 0.9]]}
    names = {"warpgroup_mma", "stream_k"}
    ragged = dispatch.choose_from(table, 3000, 3000, 3000, names)
    assert ragged.step_name == "stream_k" and ragged.nearest == (4096, 4096, 4096)
    assert ragged.judged == {"stream_k": ((4096, 4096, 4096), pytest.approx(90)),
                             "warpgroup_mma": ((3001, 2999, 1531), pytest.approx(75))}
    assert dispatch.fast_share("warpgroup_mma", 3000, 3000, 3000) == 0.0
    assert dispatch.fast_share("warpgroup_mma", 4096, 4096, 4096) == 1.0
    assert dispatch.choose_from(table, 2048, 2048, 2048, names).step_name == "warpgroup_mma"
    near_ragged = dispatch.choose_from(table, 3100, 3000, 1500, names)  # K = 1500: the edge kernel, as measured
    assert near_ragged.step_name == "stream_k" and "judged at" not in near_ragged.reason
    fast_there = dispatch.choose_from(table, 3072, 2944, 1600, names)  # nearest the ragged shape, but full tiles
    assert fast_there.step_name == "warpgroup_mma" and "judged at 4096³" in fast_there.reason


def test_a_tensor_core_step_never_measured_on_the_path_it_would_take_is_modelled_or_not_chosen():
    """At 5000×5000×5001 (K = 5001: step 18 copies A into rows the copy engine can read before its partial-tile
    build runs) the only measurement within reach is 4096³, where nothing was copied: the step is judged by it only
    with the copy's time added (``modelled``), and runs where that still beats the FP32 step. A step whose path here
    is its edge kernel (step 14 at K = 5001) is not judged by a whole-tile shape at all. At 5000³ the copy engine
    reads A and B as they are: step 18 runs every tile on its fast kernel's loop (its partial-tile build), no copies,
    and 4096³ judges it."""
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [4096, 4096, 4096, {"warp_specialized_3xtf32": 1.2, "warpgroup_mma": 1.3, "stream_k": 3.0}, 2.7]]}
    names = {"warp_specialized_3xtf32", "stream_k"}
    assert dispatch._copies_rows(5000, 5000, 5001) and not dispatch._copies_rows(4096, 4096, 4096)
    far_path = dispatch.choose_from(table, 5000, 5000, 5001, names)
    assert far_path.step_name == "warp_specialized_3xtf32" and far_path.modelled == ("warp_specialized_3xtf32",)
    assert far_path.judged["warp_specialized_3xtf32"][1] < 100 * 2.7 / 1.2  # the copy costs it something
    edge = dispatch.choose_from(table, 5000, 5000, 5001, {"warpgroup_mma", "stream_k"})
    assert edge.step_name == "stream_k" and set(edge.judged) == {"stream_k"} and not edge.modelled
    assert dispatch.choose_from(table, 4000, 4000, 4000, names).step_name == "warp_specialized_3xtf32"
    only_tensor_core = dispatch.choose_from(table, 5000, 5000, 5001, {"warpgroup_mma"})
    assert "kernel path" in only_tensor_core.reason
    assert dispatch.fast_share("warp_specialized_3xtf32", 5000, 5000, 5000) == 1.0
    partial = dispatch.choose_from(table, 5000, 5000, 5000, names)
    assert partial.step_name == "warp_specialized_3xtf32" and set(partial.judged) == set(names), partial.reason


def test_the_two_ways_of_an_unreadable_matrix_are_two_kernel_paths(monkeypatch):
    """Where the copy engine cannot read A or B (K or N not a multiple of 4), steps 17 and 18 either copy it into
    readable rows or, where their policy says so, read it with their producer's threads (THREAD_COPIES): two paths,
    judged apart — a skinny product on the threads' path says nothing of a compute-bound one on the copy's (the
    2026-11-29 suite: step 18 at 0.59–0.79× cuBLAS SGEMM on the first, 1.7–2.2× on the second). With the threshold
    those runs had (100 FLOPs a copied byte; 0 since, no product on the threads). Step 18's THREAD_COPIES build is
    gone since 2026-11-30 (its B_ROWS_MOD_4 build took its place): step 17's judged here."""
    from gemm_steps.steps import warp_specialized

    monkeypatch.setattr(warp_specialized, "THREAD_COPIES_BELOW", 100)
    skinny, ragged, whole = (9001, 99, 5003), (3001, 2999, 1531), (4096, 4096, 4096)
    assert dispatch._row_path("warp_specialized_3xtf32", *skinny) == "copied"  # no THREAD_COPIES build
    name = "warp_specialized"
    assert dispatch._row_path(name, *skinny) == "threads"
    assert dispatch._row_path(name, *ragged) == "copied"
    assert dispatch._row_path(name, *whole) == "as they are"
    assert not dispatch._same_path(name, skinny, ragged)
    assert dispatch._same_path(name, (100, 6001, 4003), skinny)
    assert "THREAD_COPIES" in dispatch._path_words(name, *skinny)
    assert "copied into rows" in dispatch._path_words(name, *ragged)
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [3001, 2999, 1531, {"warp_specialized": 1.0, "stream_k": 1.6}, 1.5],
        [9001, 99, 5003, {"warp_specialized": 1.0, "stream_k": 0.8}, 0.7]]}
    names = {"warp_specialized", "stream_k"}
    near_ragged = dispatch.choose_from(table, 3300, 3100, 1601, names)  # odd K, compute-bound: the copy's path
    assert near_ragged.step_name == "warp_specialized"
    assert near_ragged.judged["warp_specialized"][0] == ragged
    near_skinny = dispatch.choose_from(table, 8000, 97, 4999, names)  # the threads' path: judged at the skinny one
    assert near_skinny.step_name == "stream_k" and near_skinny.judged["warp_specialized"][0] == skinny


def test_a_copy_path_measured_nowhere_near_is_modelled_from_where_the_step_read_a_and_b_as_they_are():
    """7218×268×5910 (K odd: step 17 copies A into readable rows, ~134 FLOPs a copied byte) had no measured shape of
    that path within reach; the nearest skinny shape where step 17 read A and B as they are judges it, with the
    copy's time added — not "not judged", which left ping-pong's far slower time to decide there (seed 20261206:
    0.40× cuBLAS TF32)."""
    here = (7218, 268, 5910)
    row = [8192, 128, 4096, {"warp_specialized": 0.1, "stream_k": 0.3}, 0.2]
    table = {"gpu": "GPU A", "date": "d", "shapes": [row]}
    names = {"warp_specialized", "stream_k"}
    assert dispatch._row_path("warp_specialized", *here) == "copied"
    assert dispatch._row_path("warp_specialized", *row[:3]) == "as they are"
    choice = dispatch.choose_from(table, *here, names)
    assert choice.step_name == "warp_specialized" and choice.modelled == ("warp_specialized",), choice.reason
    assert "modelled" in choice.reason and "readable copies" in choice.reason
    kernel_ms = 0.1 * (7218 * 268 * 5910) / (8192 * 128 * 4096)
    copy_ms = 1e3 * 4 * (7218 * 5910 + 7218 * 5912) / dispatch.READABLE_COPY_BYTES_PER_S
    assert abs(choice.judged["warp_specialized"][1] - 200 * kernel_ms / (kernel_ms + copy_ms)) < 1e-9
    assert dispatch.readable_copy_seconds(4096, 4096, 4096) == 0  # nothing copied: the measured pace as it is
    assert dispatch.with_the_copy("warp_specialized", row, (8000, 128, 4000)) == 200.0
    slow_copy = {"gpu": "GPU A", "date": "d", "shapes": [[8192, 128, 4096, {"warp_specialized": 0.3,
                                                                            "stream_k": 0.3}, 0.2]]}
    assert dispatch.choose_from(slow_copy, *here, names).step_name == "stream_k"  # the copy tips it


def test_the_copy_model_against_the_suite_that_measured_the_copy():
    """The model of :func:`dispatch.with_the_copy`, from step 17's and step 18's time at 2500×3000×1500 (A and B read
    as they are) to the suite's three shapes where they copy, against what that same run measured there."""
    from gemm_steps.harness.bench import load
    from gemm_steps.harness.results_files import RESULTS_DIR

    records = load(RESULTS_DIR / "shapes-nvidia-h200-2026-11-29-3.json")["records"]
    ms = {(r["step"], r["M"], r["N"], r["K"]): r["median_ms"] for r in records}
    source = (2500, 3000, 1500)
    for name in ("warp_specialized", "warp_specialized_3xtf32"):
        row = [*source, {name: ms[(name, *source)]}, ms[("cublas", *source)]]
        for here in ((3001, 2999, 1531), (1531, 3989, 2003), (2777, 1111, 3333)):
            modelled = dispatch.with_the_copy(name, row, here)
            measured = 100 * ms[("cublas", *here)] / ms[(name, *here)]
            assert 0.8 <= modelled / measured <= 1.2, (name, here, modelled, measured)


def test_explain_says_which_measured_numbers_did_not_count(capsys, monkeypatch):
    """A step faster at the nearest measured shape but on another kernel path here is marked as not counted, with
    where it was judged instead — else `explain` would call the slower step's number the fastest."""
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [4096, 4096, 4096, {"warpgroup_mma": 1.9, "warp_specialized_3xtf32": 1.2, "stream_k": 3.0}, 2.7],
        [3001, 2999, 1531, {"warpgroup_mma": 1.2, "stream_k": 1.0}, 0.9]]}
    monkeypatch.setattr(dispatch, "table", lambda gpu: table)
    dispatch.forget()
    try:
        assert cli.main(["explain", "3000", "3000", "3001"]) == 0  # K = 3001: step 14 on its edge kernel, step 18
        # copying A into readable rows
    finally:
        dispatch.forget()
    measured = next(line for line in capsys.readouterr().out.splitlines() if "measured at" in line)
    assert "stream_k 90 %," in measured or measured.endswith("stream_k 90 %")
    assert "warpgroup_mma 142 % (not counted: here it takes another kernel path, the one it took at " \
           "3001×2999×1531: 75 %)" in measured
    assert "warp_specialized_3xtf32 225 % (not counted: here it copies A or B into readable rows, measured doing " \
           "so at no shape near; modelled from 4096, where it read them as they are, with the copy: 211 %)" in measured


def test_a_few_tiles_with_edges_count_as_the_edge_path():
    """700×700×12000: 25 full tiles of 36 (fast share 0.84) is still the edge kernel's time for a tensor-core step
    without a partial-tile build — its 11 edge tiles each run all of K on the edge kernel beside the full ones — so
    step 14 is not judged by 768×768×16384 (all tiles full) but needs a measurement with edge tiles; 4000³ (1,024
    tiles, 63 of them edge tiles) keeps its fast-path verdict. Step 18, with its partial-tile build, runs every tile
    of 700×700×12000 on its fast kernel's loop (fast share 1)."""
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [768, 768, 16384, {"warpgroup_mma": 1.0, "stream_k": 2.5}, 2.0],
        [4096, 4096, 4096, {"warpgroup_mma": 1.2, "stream_k": 3.0}, 2.7]]}
    names = {"warpgroup_mma", "stream_k"}
    assert 0.8 < dispatch.fast_share("warpgroup_mma", 700, 700, 12000) < 1
    assert dispatch.fast_share("warp_specialized_3xtf32", 700, 700, 12000) == 1.0
    assert dispatch.choose_from(table, 700, 700, 12000, names).step_name == "stream_k"
    assert dispatch.choose_from(table, 768, 768, 12000, names).step_name == "warpgroup_mma"
    assert dispatch.choose_from(table, 4000, 4000, 4000, names).step_name == "warpgroup_mma"


def test_beyond_the_tables_large_products_the_steps_keep_their_order():
    """12000³ and 16384³ are far from every measured shape (log₂ distance 2.7 and 3.5 from 4096³), but larger in every
    side than a large measured product: more of the same tiles on the same kernel paths. They are judged at 4096³ —
    the 3xTF32 step that was fastest there runs, not the FP32 default (which had run at half its speed there, issue
    37). A shape beyond only a small measured product, or not larger in every side, still gets the default."""
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [256, 256, 256, {"shared_memory": 0.03, "stream_k": 0.08}, 0.02],
        [4096, 4096, 4096, {"warp_specialized_3xtf32": 1.2, "stream_k": 3.0}, 2.7]]}
    names = {"warp_specialized_3xtf32", "stream_k", "shared_memory"}
    for n in (12000, 16384):
        choice = dispatch.choose_from(table, n, n, n, names)
        assert choice.step_name == "warp_specialized_3xtf32" and "beyond the table" in choice.reason, choice.reason
        assert choice.nearest == (4096, 4096, 4096)
    assert "too far" in dispatch.choose_from(table, 65536, 4096, 1024, names).reason  # K smaller than measured
    small_only = {"gpu": "GPU A", "date": "d", "shapes": [table["shapes"][0]]}
    assert "too far" in dispatch.choose_from(small_only, 3000, 3000, 3000, names).reason  # 256³ is no large product
    # where a step's kernel path changes beyond the table (K = 12001: step 18 copies A into readable rows), 4096³
    # judges it only with the copy's time added
    ragged = dispatch.choose_from(table, 12000, 12000, 12001, names)
    assert ragged.step_name == "warp_specialized_3xtf32" and ragged.modelled == ("warp_specialized_3xtf32",)
    assert ragged.judged["warp_specialized_3xtf32"][1] < 100 * 2.7 / 1.2


def test_the_order_at_4096_holds_at_8192_in_the_course_benchmarks():
    """dispatch.LARGE_C's claim: in every course benchmark in results/ the fastest step of each precision at 4096³ was
    the fastest at 8192³ too, or within the tie (TIE) of it."""
    from gemm_steps.harness import results_files

    files = [(path, data) for path, data in results_files._results_documents(
        sorted(results_files.RESULTS_DIR.glob("bench-*.json"))) if results_files.is_course_benchmark(data)]
    if not files:
        pytest.skip("no course benchmark in results/ (a checkout's results)")
    arithmetic = {s.name: s.arithmetic for s in gemm_steps.steps()}
    checked = 0
    for path, data in files:
        for precision, allowed in dispatch.PRECISIONS.items():
            by_size = {}
            for size in (4096, 8192):
                records = {r["step"]: r["tflops"] for r in data["records"] if r.get("M") == r.get("N") == r.get("K")
                           == size and arithmetic.get(r["step"], "") in allowed and r.get("tflops")}
                by_size[size] = records
            if not by_size[4096] or not by_size[8192]:
                continue
            best_4096 = max(by_size[4096], key=by_size[4096].get)
            fastest_8192 = max(by_size[8192].values())
            assert by_size[8192].get(best_4096, 0) >= fastest_8192 / (1 + dispatch.TIE), (path.name, precision)
            checked += 1
    assert checked >= 8


def _row(shape, pct_of_cublas):
    """A table row from % of cuBLAS (cuBLAS 1 ms)."""
    return [*shape, {name: 100 / pct for name, pct in pct_of_cublas.items()}, 1.0]


#: Four measured shapes of an H100 table (results/shapes-nvidia-h100-80gb-hbm3-2026-11-26-2.json, rounded): a
#: square, a ragged product, a skinny one and a K-heavy one.
AN_H100_TABLE = {"gpu": "GPU A", "date": "d", "shapes": [
    _row((4096, 4096, 4096), {"warp_specialized": 647, "warp_specialized+padded": 648, "warp_specialized_3xtf32": 224,
                              "warp_specialized_3xtf32+padded": 225, "stream_k": 89}),
    _row((3001, 2999, 1531), {"warp_specialized": 201, "warp_specialized+padded": 283, "warp_specialized_3xtf32": 77,
                              "warp_specialized_3xtf32+padded": 159, "stream_k": 86}),
    _row((4096, 64, 8192), {"warp_specialized": 24, "warp_specialized+padded": 68, "warp_specialized_3xtf32": 13,
                            "warp_specialized_3xtf32+padded": 103, "stream_k": 27, "stream_k@64x64": 71}),
    _row((1024, 1024, 16384), {"warp_specialized": 225, "warp_specialized+padded": 223,
                               "warp_specialized_3xtf32": 213, "warp_specialized_3xtf32+padded": 211, "stream_k": 81}),
]}
#: Shapes of the kinds issue 37 names, outside that table: ragged (within reach of 4096³, but K = 5001 puts every
#: tensor-core step on a path measured near at no shape), skinny and K-heavy (too far from every measured shape).
OUTSIDE = {"ragged": (9001, 3003, 5001), "skinny": (64, 12000, 1500), "K-heavy": (300, 200, 30000)}
#: … and where the evidence from afar decides: the ragged one within reach of 4096³ is judged there, steps 17 and
#: 18 with their copies modelled (:func:`dispatch.with_the_copy`); the other two are too far from every shape.
FAR = ("skinny", "K-heavy")


@pytest.mark.parametrize("kind", OUTSIDE)
def test_precision_tf32_keeps_to_the_tensor_cores_outside_the_table(kind):
    """Issue 37: held-out shapes on an H100 sent precision="tf32" to step 11 on the FP32 units (10–13 % of cuBLAS
    TF32) where a tensor-core step ran 3–4× faster even on its edge kernel. Where no measurement near decides, the
    rest of the table does: the tensor-core step that ran fastest against the FP32 units on the kernel path it takes
    here."""
    names = dispatch.allowed_steps("tf32") & {"stream_k", "stream_k@64x64", "warp_specialized",
                                              "warp_specialized+padded", "warp_specialized_3xtf32",
                                              "warp_specialized_3xtf32+padded"}
    choice = dispatch.choose_from(AN_H100_TABLE, *OUTSIDE[kind], names)
    assert dispatch._step_arithmetic(choice.step_name) != "fp32", choice.reason
    if kind in FAR:
        assert "the tensor cores run" in choice.reason and "fastest FP32 step" in choice.reason
    else:
        assert choice.step_name == "warp_specialized" and "modelled" in choice.reason
    # without the steps that copy, the padded copies (never measured copying near) are chosen from afar too
    padded = dispatch.choose_from(AN_H100_TABLE, *OUTSIDE[kind], {"stream_k", "warp_specialized+padded"})
    assert padded.step_name == "warp_specialized+padded" and "the tensor cores run" in padded.reason
    if kind not in FAR:
        assert "but no tensor-core step was measured near on the path it takes here" in padded.reason


@pytest.mark.parametrize("kind", OUTSIDE)
def test_the_default_precision_runs_3xtf32_outside_the_table_where_the_table_measured_it_faster(kind):
    """At the default precision the 3xTF32 steps run on the same evidence (the padded step 18 ran 1.5–1.9× the FP32
    units on copies in the table above); with only step 18's edge kernel, slower than step 11 where it was measured
    (77 % against 86 % at 3001×2999×1531), the FP32 units keep the ragged shape. "ieee" never leaves them."""
    names = {"stream_k", "stream_k@64x64", "warp_specialized_3xtf32", "warp_specialized_3xtf32+padded"}
    shape = OUTSIDE[kind]
    chosen = dispatch.choose_from(AN_H100_TABLE, *shape, names)
    assert chosen.step_name == ("warp_specialized_3xtf32+padded" if kind in FAR else "warp_specialized_3xtf32")
    edge_only = {"stream_k", "stream_k@64x64", "warpgroup_mma"}  # step 14: its edge kernel at K = 5001, unmeasured
    no_copies = dispatch.choose_from(AN_H100_TABLE, *OUTSIDE["ragged"], edge_only)
    assert no_copies.step_name == "stream_k" and "the tensor cores run" not in no_copies.reason
    assert dispatch._step_arithmetic(dispatch.choose_from(AN_H100_TABLE, *shape, {"stream_k", "stream_k@64x64"})
                                     .step_name) == "fp32"


def test_the_evidence_from_afar_is_read_at_products_of_the_same_size():
    """A small product is judged by the table's small products where any was measured on the path: there the 3xTF32
    step ran slower than the FP32 units, whatever it did on large ones."""
    table = {"gpu": "GPU A", "date": "d", "shapes": AN_H100_TABLE["shapes"] + [
        _row((600, 600, 600), {"warp_specialized_3xtf32+padded": 80, "stream_k@64x64": 87, "stream_k": 46})]}
    names = {"stream_k", "stream_k@64x64", "warp_specialized_3xtf32+padded"}
    assert dispatch.choose_from(table, 300, 200, 3000, names).step_name == "stream_k"  # 1.8e8: small, too far
    assert dispatch.choose_from(table, 300, 200, 30000, names).step_name == "warp_specialized_3xtf32+padded"
    # within the tie of the FP32 units the tensor-core step wins, as the later step does at a measured shape
    tied = {"gpu": "GPU A", "date": "d", "shapes": AN_H100_TABLE["shapes"] + [
        _row((600, 600, 600), {"warp_specialized_3xtf32+padded": 86, "stream_k@64x64": 87, "stream_k": 46})]}
    # (at 256×256×3000, where both fill their tiles: at 300×200 the 128-row tile fills less than the 64-row one)
    assert dispatch.choose_from(tied, 256, 256, 3000, names).step_name == "warp_specialized_3xtf32+padded"
    assert dispatch.choose_from(tied, 300, 200, 3000, names).step_name == "stream_k"  # no evidence: the last FP32 step
    # with no small product measured on its path, the large ones decide for a TF32 step (the reason says so), never
    # for a 3xTF32 one: copies to whole tiles cost a small product more
    untested = dispatch.choose_from(AN_H100_TABLE, 300, 200, 3000, names | {"warp_specialized+padded"})
    assert untested.step_name == "warp_specialized+padded"
    assert "none of them products smaller than 2³⁰ on this path" in untested.reason
    assert dispatch.choose_from(AN_H100_TABLE, 300, 200, 3000, names).step_name == "stream_k"


@pytest.mark.parametrize("gpu", ["NVIDIA H100 80GB HBM3", "NVIDIA H200"])
def test_the_shipped_tables_keep_tf32_on_the_tensor_cores_outside_them(gpu):
    entry = dispatch.table(gpu)
    names = dispatch.allowed_steps("tf32")
    for shape in [*OUTSIDE.values(), (6000, 6000, 700), (500, 700, 30000)]:
        choice = dispatch.choose_from(entry, *shape, names, gpu)
        assert dispatch._step_arithmetic(choice.step_name) != "fp32", (shape, choice.reason)


@pytest.mark.parametrize("gpu", ["NVIDIA H100 80GB HBM3", "NVIDIA H200"])
def test_at_the_tables_own_shapes_the_fastest_measured_there_runs(gpu):
    """The evidence from afar never overrules a measurement at the shape itself: at every measured shape and
    precision, the choice is within the tie of the fastest step measured there."""
    entry = dispatch.table(gpu)
    for precision in dispatch.PRECISIONS:
        names = dispatch.allowed_steps(precision)
        for row in entry["shapes"]:
            times = {s: ms for s, ms in row[3].items() if s in names}
            choice = dispatch.choose_from(entry, *row[:3], names, gpu)
            assert times[choice.step_name] <= min(times.values()) * (1 + dispatch.TIE), (row[:3], precision)
            assert "the tensor cores run" not in choice.reason


def test_explain_says_why_the_tensor_cores_run_outside_the_table(capsys, monkeypatch):
    monkeypatch.setattr(dispatch, "table", lambda gpu: AN_H100_TABLE)
    dispatch.forget()
    try:
        assert cli.main(["explain", "9001", "3003", "5001", "--precision", "tf32"]) == 0
    finally:
        dispatch.forget()
    why = next(line for line in capsys.readouterr().out.splitlines() if "why:" in line)
    # step 17 copies A and B into readable rows here, a path measured at no shape near: judged at 4096³, with the copy
    assert "modelled: its time at 4096³, where it read A and B as they are" in why and "readable copies" in why
    dispatch.forget()
    try:  # too far from every measured shape: the rest of the table decides, on the path step 17 takes here
        assert cli.main(["explain", "64", "12000", "1501", "--precision", "tf32"]) == 0
    finally:
        dispatch.forget()
    why = next(line for line in capsys.readouterr().out.splitlines() if "why:" in line)
    assert "too far" in why and "the tensor cores run" in why
    # M = 64 fills a quarter of step 17's 256-row tiles and half of step 18's 128-row ones: carried to this shape by
    # the tiles they fill (dispatch._carried), step 18's padded copies run, and the reason names their path
    assert "warp_specialized_3xtf32+padded on the kernel path it takes here (its fast kernel on copies padded" in why


def test_padded_copies_are_judged_beside_their_step_or_not_at_all():
    """Step 17's padded candidate is step 17's kernel on the same tiles plus copies of A, B and C: where it would copy
    and step 17 may be chosen, it is judged only where step 17 is, if step 17 was measured there (not modelled) and
    the copies were timed there copying. At 230×9851×6277 (K and N odd) it had been judged at 128×8192×4096 (195 %),
    against step 17 at 100×6001×4003, where its path is the one it takes here (105 %; the copies ran 68 % there), and
    won. Where step 17 is modelled (320×5043×2431: no shape near where it copied) the copies are not judged; where
    step 17 may not be chosen they are judged as before; where they copy nothing they tie step 17, which wins the
    tie. Fails without ``_padded_beside_their_step``."""
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [128, 8192, 4096, {"warp_specialized": 1.0, "warp_specialized+padded": 0.96}, 1.87],
        [100, 6001, 4003, {"warp_specialized": 1.0, "warp_specialized+padded": 1.54}, 1.05],
        [4096, 4096, 4096, {"warp_specialized": 1.0, "warp_specialized+padded": 1.0}, 7.0]]}
    names = {"warp_specialized", "warp_specialized+padded"}
    choice = dispatch.choose_from(table, 230, 9851, 6277, names)
    assert choice.step_name == "warp_specialized", choice.reason
    assert choice.judged["warp_specialized+padded"] == ((100, 6001, 4003), pytest.approx(100 * 1.05 / 1.54))
    modelled = dispatch.choose_from({**table, "shapes": table["shapes"][::2]}, 320, 5043, 2431, names)
    assert "warp_specialized" in modelled.modelled and "warp_specialized+padded" not in modelled.judged
    alone = dispatch.choose_from(table, 230, 9851, 6277, {"warp_specialized+padded"})
    assert alone.step_name == "warp_specialized+padded" and alone.judged["warp_specialized+padded"][0] == (128, 8192, 4096)
    whole = dispatch.choose_from(table, 4096, 4096, 4096, names)  # no copies: a tie, the step wins it
    assert whole.step_name == "warp_specialized" and "warp_specialized+padded" in whole.judged


def test_no_evidence_reaches_a_product_smaller_than_every_measured_one():
    """Far from the table, the evidence of the table's products of the same size decides (``_tensor_core_evidence``)
    — but not below the smallest measured product, where launches set the time: 5×6×7 stays on the FP32 units though
    step 18 ran 1.9× step 11 at the one small product measured on its path; 1000×1000×1001 (odd K, as that product) takes
    step 18 on that word. Fails without the floor."""
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [150, 181, 10001, {"warp_specialized_3xtf32": 1.0, "stream_k": 1.9}, 1.1],
        [4096, 4096, 4096, {"warp_specialized_3xtf32": 1.0, "stream_k": 2.2}, 2.0]]}
    names = {"warp_specialized_3xtf32", "stream_k"}
    assert dispatch.choose_from(table, 5, 6, 7, names).step_name == "stream_k"
    assert dispatch.choose_from(table, 1000, 1000, 1001, names).step_name == "warp_specialized_3xtf32"


def test_step_21_is_judged_only_where_it_ran_the_same_kernel():
    """Step 21 runs step 17's split-K where step 17 splits K and its own kernel elsewhere: a measurement of one says
    nothing of the other (seed 20261213's 94×13363×1051, judged on 100×6001×4003's split-K, ran its stream-K at 0.56×
    cuBLAS TF32)."""
    assert dispatch._schedule("warp_specialized_stream_k", 100, 6001, 4003) == "step 17"  # 47 tiles, 126 k-tiles
    assert dispatch._schedule("warp_specialized_stream_k", 94, 13363, 1051) == "own"  # 33 k-tiles: no split-K
    assert dispatch._schedule("warp_specialized_stream_k", 4096, 4096, 4096) == "own"
    assert dispatch._schedule("warp_specialized", 100, 6001, 4003) == "one"
    assert not dispatch._same_path("warp_specialized_stream_k", (94, 13363, 1051), (100, 6001, 4003))
    assert dispatch._same_path("warp_specialized_stream_k", (4096, 4096, 4096), (2048, 2048, 2048))
    # step 22 (128 × 128 tiles) likewise, with step 18's split-K: 36 tiles of 512 k-tiles; 158 tiles of 128
    assert dispatch._schedule("warp_specialized_3xtf32_stream_k", 768, 768, 16384) == "step 18"
    assert dispatch._schedule("warp_specialized_3xtf32_stream_k", 10077, 164, 4066) == "own"


def test_far_from_the_table_a_step_is_judged_by_the_tiles_it_fills():
    """Where no measured shape is near, each tensor-core step's evidence is carried to this shape by the share of its
    tiles inside C: M = 94 fills 37 % of a 256-row tile and 73 % of a 128-row one, and the 128-row variant runs
    (seed 20261213's 94×13363×1051 and seed 20261214's 126×3795×14063 ran step 21 and step 17 at 0.56× and 0.62×
    cuBLAS TF32 before)."""
    assert dispatch.tile_efficiency("warp_specialized", 94, 13363) == pytest.approx(94 * 13363 / (256 * 13440))
    assert dispatch.tile_efficiency("warp_specialized@128x128", 94, 13363) == pytest.approx(94 * 13363 / (128 * 13440))
    assert dispatch.tile_efficiency("warp_specialized_stream_k", 4096, 4096) == 1.0
    dispatch.forget()
    for shape in [(94, 13363, 1051), (126, 3795, 14063)]:
        assert dispatch.choose(*shape, "tf32").step_name == "warp_specialized@128x128", shape


def test_tile_efficiency_and_choices_at_small_products_for_every_step():
    """Every candidate has tiles a GPU runs, steps 1–5 (no search space) too: a fresh run of
    experiments/fp32_accuracy.py on an H200 (2026-11-29) stopped in ``matmul`` at 256 × 256 × K with an
    AttributeError where the fastest FP32 step of a measured row was step 3 (``_carried`` asked its tiles)."""
    for step in gemm_steps.steps() + dispatch.variants():
        assert 0 < dispatch.tile_efficiency(step.name, 257, 255) <= 1, step.name
    assert dispatch.tile_efficiency("shared_memory", 32, 48) == pytest.approx(32 * 48 / (32 * 64))
    assert dispatch.tile_efficiency("naive", 32, 32) == 1.0
    for gpu in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"):
        entry = dispatch.table(gpu)
        for precision in dispatch.PRECISIONS:
            for k in (1, 4, 32, 256, 1024, 4096, 16384):
                for m, n in ((256, 256), (257, 255), (8, 8)):
                    dispatch.choose_from(entry, m, n, k, dispatch.allowed_steps(precision), gpu)


def test_a_step_measured_copying_a_matrix_is_judged_where_it_reads_it_as_it_is():
    """A step with a partial-tile build measured near only where it copied A or B into readable rows (K or N not a
    multiple of 4) is judged at face value where it reads them as they are: the same kernel without the copy, no
    slower. 1527×9584×1592 (held-out seed 20261217, looked at on a CPU before its run) had steps 17 and 21 measured
    near only at 1531×3989×2003 (K odd) and went to step 20, whose fast kernel takes no partial k-tile: every tile on
    step 15's edge kernel, which ran at half their speed there."""
    entry = dispatch.table("NVIDIA H200")
    choice = dispatch.choose_from(entry, 1527, 9584, 1592, dispatch.allowed_steps("tf32"), "NVIDIA H200")
    assert choice.step_name in ("warp_specialized", "warp_specialized_stream_k", "cluster_stream_k_tma_store"), choice
    assert "reads them as they are, no slower" in choice.reason, choice.reason
    assert choice.judged[choice.step_name][0] == (1531, 3989, 2003)
    # the other way round is still modelled with the copy's time added, not at face value
    assert not dispatch._copied_rows("warp_specialized", (1531, 3989, 2003), entry["shapes"], 10.0)


def test_a_step_that_hands_products_to_another_names_it_and_its_rule():
    """Steps 21, 22 and 23 say which step's build runs the products their rule names (``FALLBACK_STEP``,
    ``FALLBACK_RULE``): dispatch's ``_schedule`` reads them, no step is known to it by name. The fallback is the step
    the kernel builds on for its arithmetic (TF32 to TF32, 3xTF32 to 3xTF32)."""
    with_rule = [s for s in gemm_steps.steps() if hasattr(s.module, "FALLBACK_RULE")]
    assert {s.name for s in with_rule} == {"warp_specialized_stream_k", "warp_specialized_3xtf32_stream_k",
                                         "cluster_stream_k_tma_store"}
    for step in with_rule:
        other = gemm_steps.get_step(step.module.FALLBACK_STEP)
        assert dispatch._step_arithmetic(other.name) == dispatch._step_arithmetic(step.name), step.name
    assert dispatch._schedule("warp_specialized_3xtf32_stream_k", 768, 768, 16384) == "step 18"


def test_step_18s_half_tiles_run_only_where_they_fit_one_wave():
    """The 64 × 128 variant measured fastest at a shape is still left out where its own tiles would not fit one wave
    of 132 SMs (2 × 77 = 154 at 93×9781×173: it ran 0.88× step 18 there, experiment-small-copies-nvidia-h200); at
    2 × 39 = 78 it stays (1.26× step 18 at 101×4957×287). Its tiles are counted, not twice step 18's: 300×3001 is
    5 × 24 = 120 of them (it ran 1.30× step 18 at 300×3001×300) though 3 × 24 = 72 of step 18's."""
    names = {dispatch.HALF_TILES, "warp_specialized_3xtf32"}
    table = {"gpu": "GPU A", "date": "d", "shapes": [
        [100, 9000, 170, {dispatch.HALF_TILES: 1.0, "warp_specialized_3xtf32": 1.3}, 0.8],
        [100, 5000, 290, {dispatch.HALF_TILES: 1.0, "warp_specialized_3xtf32": 1.3}, 0.8]]}
    many = dispatch.choose_from(table, 93, 9781, 172, names)
    assert many.step_name == "warp_specialized_3xtf32" and "left out" in many.reason, many.reason
    few = dispatch.choose_from(table, 101, 4956, 288, names)
    assert few.step_name == dispatch.HALF_TILES, few.reason
    assert dispatch.half_tiles_fit(101, 4957) and not dispatch.half_tiles_fit(93, 9781)
    assert dispatch.half_tiles_fit(300, 3001) and dispatch.half_tiles_fit(800, 1201)  # 120 and 130 of 64 × 128
    assert not dispatch.half_tiles_fit(3000, 301) and not dispatch.half_tiles_fit(1500, 703)  # 141 and 144


def test_step_22_replaces_step_18_where_it_runs_its_loop_over_short_tiles():
    """Step 18 measured fastest, but here step 22 runs its own persistent loop over tiles of at most 8 k-tiles (where
    it ran 1.03–1.42× step 18 at every product timed): step 22; at 13 k-tiles, or where step 22 would hand the product
    to step 18 (split-K), step 18 stays."""
    names = {"warp_specialized_3xtf32", "warp_specialized_3xtf32_stream_k"}
    row = [4000, 350, 100, {"warp_specialized_3xtf32": 1.0, "warp_specialized_3xtf32_stream_k": 1.2}, 1.5]
    table = {"gpu": "GPU A", "date": "d", "shapes": [row, [4000, 350, 400, row[3], 1.5], [128, 128, 8192, row[3], 1.5]]}
    short = dispatch.choose_from(table, 4000, 350, 100, names)
    assert short.step_name == "warp_specialized_3xtf32_stream_k" and "persistent loop" in short.reason, short.reason
    assert dispatch.choose_from(table, 4000, 350, 400, names).step_name == "warp_specialized_3xtf32"
    assert dispatch.choose_from(table, 128, 128, 8192, names).step_name == "warp_specialized_3xtf32"
