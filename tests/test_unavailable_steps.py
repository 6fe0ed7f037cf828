"""A step that needs another GPU (step 14: ``wgmma``, compute capability 9.0 only) is skipped with its reason by
``verify``, the lessons' check and ``bench`` — not run into a failure, and never counted as passed. Checked on the
simulator by pretending the machine has a GPU of compute capability 8.0."""

from __future__ import annotations

import pytest

import gemm_steps
from gemm_steps.course import checks
from gemm_steps.toolkit import gpu_requirements
from gemm_steps.harness import verify


@pytest.fixture
def on_an_ampere_gpu(monkeypatch):
    """Step.unavailable as it answers on a GPU of compute capability 8.0."""
    import types

    from numba import cuda

    monkeypatch.setattr(gpu_requirements, "SIMULATOR", False)  # the one check, for steps and kernels alike
    monkeypatch.setattr(cuda, "get_current_device", lambda: types.SimpleNamespace(compute_capability=(8, 0)))


def test_only_the_hopper_steps_say_they_cannot_run(on_an_ampere_gpu):
    reasons = {s.name: s.unavailable() for s in gemm_steps.steps()}
    hopper = {"warpgroup_mma", "warpgroup_tf32", "tma_pipeline", "warp_specialized",
              "warp_specialized_3xtf32", "pingpong", "cluster_multicast", "warp_specialized_stream_k",
              "warp_specialized_3xtf32_stream_k", "cluster_stream_k_tma_store"}  # 14-23: wgmma
    for name in hopper:
        number = gemm_steps.get_step(name).number
        assert reasons[name] == f"step {number} ({name}) needs a GPU of compute capability 9.0; this one is 8.0"
    assert all(reason is None for name, reason in reasons.items() if name not in hopper)


def test_on_a_turing_gpu_the_tensor_core_steps_say_why_they_cannot_run(monkeypatch):
    """Compute capability 7.5: steps 12-13 need 8.0 or newer (mma.sync on TF32, cp.async), steps 14-17 exactly 9.0;
    steps 1-11 run."""
    import types

    from numba import cuda

    monkeypatch.setattr(gpu_requirements, "SIMULATOR", False)
    monkeypatch.setattr(cuda, "get_current_device", lambda: types.SimpleNamespace(compute_capability=(7, 5)))
    reasons = {s.name: s.unavailable() for s in gemm_steps.steps()}
    for name in ("tensor_cores", "three_tf32"):
        assert reasons[name].endswith("needs a GPU of compute capability 8.0 or newer; this one is 7.5"), reasons[name]
    for name in ("warpgroup_mma", "warpgroup_tf32", "tma_pipeline", "warp_specialized"):
        assert reasons[name].endswith("needs a GPU of compute capability 9.0; this one is 7.5"), reasons[name]
    assert [s.number for s in gemm_steps.steps() if reasons[s.name] is None] == list(range(1, 12))


def test_verify_skips_it_with_the_reason_and_does_not_count_it(on_an_ampere_gpu):
    rows = verify.verify(["coalesced", "warpgroup_mma"], [(5, 6, 7)])
    by_step = {r["step"]: r for r in rows}
    assert by_step["coalesced"]["passed"] is True
    assert by_step["warpgroup_mma"]["passed"] is None and "compute capability 9.0" in by_step["warpgroup_mma"]["skipped"]
    table = verify.format_table(rows)
    assert "skipped (step 14 (warpgroup_mma) needs" in table and "1 of 1 checks passed; 1 skipped" in table
    assert "Not checked here" in str(checks.check_against_numpy("warpgroup_mma", [(5, 6, 7)]))


def test_on_the_simulator_every_step_runs():
    assert all(s.unavailable() is None for s in gemm_steps.steps())


def test_bench_leaves_it_out_and_says_why(on_an_ampere_gpu):
    from gemm_steps.harness.bench import runnable

    said = []
    kept, skipped = runnable([gemm_steps.get_step("coalesced"), gemm_steps.get_step("warpgroup_mma")], said.append)
    assert [s.name for s in kept] == ["coalesced"]
    assert list(skipped) == ["warpgroup_mma"] and "compute capability 9.0" in skipped["warpgroup_mma"]
    assert said == [f"skipped: {skipped['warpgroup_mma']}"]


def test_their_kernels_refuse_to_launch_there_with_the_reason(on_an_ampere_gpu, monkeypatch):
    """Called directly (not through verify or bench), a Hopper step's kernels say why instead of failing to compile;
    the other steps' kernels have no such requirement."""
    for name in ("warpgroup_mma", "warpgroup_tf32"):
        with pytest.raises(RuntimeError, match=f"{name} needs a GPU of compute capability 9.0.*this one is 8.0"):
            gemm_steps.get_step(name).tiled._refuse_other_gpus()
    gemm_steps.get_step("tensor_cores").tiled._refuse_other_gpus()
