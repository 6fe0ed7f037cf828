"""Compiled kernels' reports are kept on disk (gemm_steps.harness.ptx.remembered_in_gpu_mode): asked again of the same
code and compilers, the answer comes back without a compile; anything the compile depends on changes the key."""

import json

from gemm_steps.harness import ptx


def test_the_same_question_is_answered_once(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMM_STEPS_CACHE", str(tmp_path))
    asked = []

    def compile_(function, *args, timeout):
        asked.append((function, args))
        return {"registers": 40 + len(asked)}

    monkeypatch.setattr(ptx.gpu_mode, "call", compile_)
    first = ptx.remembered_in_gpu_mode("m:f", ["persistent"], "fast")
    assert ptx.remembered_in_gpu_mode("m:f", ["persistent"], "fast") == first == {"registers": 41}
    assert len(asked) == 1 and len(list((tmp_path / "compiled").iterdir())) == 1
    assert ptx.remembered_in_gpu_mode("m:f", ["stream_k"], "fast") == {"registers": 42}  # other arguments: compiled
    (path,) = [p for p in (tmp_path / "compiled").iterdir() if json.loads(p.read_text()) == first]
    path.write_text("{not json")  # a broken file is compiled again, not believed
    assert ptx.remembered_in_gpu_mode("m:f", ["persistent"], "fast") == {"registers": 43}


def test_the_key_covers_the_source_the_compilers_and_their_settings(tmp_path, monkeypatch):
    source = tmp_path / "source"
    source.mkdir()
    (source / "kernels.py").write_text("A = 1\n")
    key = ptx.compile_key("m:f", [1], [source])
    assert key == ptx.compile_key("m:f", [1], [source]) and len(key) == 32
    assert key != ptx.compile_key("m:f", [2], [source]) and key != ptx.compile_key("m:g", [1], [source])
    (source / "kernels.py").write_text("A = 2\n")
    assert ptx.compile_key("m:f", [1], [source]) != key  # an edited kernel compiles again
    edited = ptx.compile_key("m:f", [1], [source])
    monkeypatch.setenv("NUMBA_OPT", "0")
    assert ptx.compile_key("m:f", [1], [source]) != edited
    monkeypatch.delenv("NUMBA_OPT")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")  # the compiling child sets it itself: not part of the key
    on_the_simulator = ptx.compile_key("m:f", [1], [source])
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    assert ptx.compile_key("m:f", [1], [source]) == on_the_simulator == edited
    monkeypatch.setenv("CUDA_HOME", "/opt/another-cuda")  # a toolkit whose NVVM Numba may use
    other_toolkit = ptx.compile_key("m:f", [1], [source])
    assert other_toolkit != edited
    table = tmp_path / "tuned.json"
    monkeypatch.setenv("GEMM_STEPS_TUNED", str(table))
    assert ptx.compile_key("m:f", [1], [source]) == other_toolkit  # no table yet
    table.write_text('{"NVIDIA H100 80GB HBM3": {"warp_tiling": {"BLOCK_K": 32}}}')  # a tuned step: other tiles
    assert ptx.compile_key("m:f", [1], [source]) != other_toolkit
    assert any(p.startswith("numba-cuda==") for p in ptx._compilers()["packages"])


def test_steps_asked_before_are_not_compiled_again_when_asked_with_others(tmp_path, monkeypatch):
    """What compile_kernels does (remembered_per_item): lesson 10 asks for steps 9 and 10, lesson 11 for steps 10
    and 11; the second compiles step 11 only, and the answer keeps the order asked for."""
    monkeypatch.setenv("GEMM_STEPS_CACHE", str(tmp_path))
    asked = []

    def compile_(function, names, variant, *rest, timeout):
        asked.append(list(names))
        return {f"{name}_{variant}": {"step": name, "registers": len(asked)} for name in names}

    monkeypatch.setattr(ptx.gpu_mode, "call", compile_)
    first = ptx.remembered_per_item("m:f", ["warp_tiling", "persistent"], "fast", item_of=lambda e: e["step"])
    second = ptx.remembered_per_item("m:f", ["persistent", "stream_k"], "fast", item_of=lambda e: e["step"])
    assert asked == [["warp_tiling", "persistent"], ["stream_k"]]
    assert list(second) == ["persistent_fast", "stream_k_fast"]
    assert second["persistent_fast"] == first["persistent_fast"] and second["stream_k_fast"]["registers"] == 2
    assert ptx.remembered_per_item("m:f", ["persistent"], "edge", item_of=lambda e: e["step"]) == {
        "persistent_edge": {"step": "persistent", "registers": 3}}  # other arguments: another key


def test_only_the_newest_answers_are_kept(tmp_path, monkeypatch):
    """Every edit of the package makes new keys, so the folder would only grow: past KEPT_ANSWERS the oldest go."""
    import os

    monkeypatch.setenv("GEMM_STEPS_CACHE", str(tmp_path))
    monkeypatch.setattr(ptx, "KEPT_ANSWERS", 3)
    for i in range(5):
        ptx._keep(f"key{i}", {"i": i})
        os.utime(tmp_path / "compiled" / f"key{i}.json", (1000 + i, 1000 + i))
    assert sorted(p.name for p in (tmp_path / "compiled").iterdir()) == ["key2.json", "key3.json", "key4.json"]
    assert ptx._recall("key4") == {"i": 4} and ptx._recall("key0") is None


def test_a_shipped_solution_compiles_once_a_learners_file_every_time(tmp_path, monkeypatch):
    """The exercise grader's GPU compile: a shipped solution (imported by name, its source in the package) is asked
    once for the same package and compilers; a learner's file, which the key cannot see, is compiled every time."""
    import gemm_steps.course.exercises as exercises

    monkeypatch.setenv("GEMM_STEPS_CACHE", str(tmp_path))
    monkeypatch.setattr(exercises, "SIMULATOR", True)  # compiled in the GPU-mode worker, as on a CPU machine
    asked = []

    def compile_(function, request, timeout):
        asked.append(request)
        return {"ok": True, "ptx": {"instructions": 10}, "cc": [9, 0]}

    monkeypatch.setattr(ptx.gpu_mode, "call", compile_)
    monkeypatch.setattr(exercises.gpu_mode, "call", compile_)
    exercise = exercises.get("naive")
    solution = exercise.solution()
    assert exercises._compile(exercise, solution) == exercises._compile(exercise, solution)
    assert len(asked) == 1 and asked[0]["module"] == solution.__name__
    learners = tmp_path / "naive.py"
    learners.write_text("x = 1\n")

    class LearnersModule:
        __name__, __file__ = "exercise_naive", str(learners)

    exercises._compile(exercise, LearnersModule())
    exercises._compile(exercise, LearnersModule())
    assert [request.get("file") for request in asked[1:]] == [str(learners)] * 2
