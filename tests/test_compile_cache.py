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

    monkeypatch.setattr(ptx, "in_gpu_mode", compile_)
    first = ptx.remembered_in_gpu_mode("m:f", ["persistent"], "fast")
    assert ptx.remembered_in_gpu_mode("m:f", ["persistent"], "fast") == first == {"registers": 41}
    assert len(asked) == 1 and len(list((tmp_path / "compiled").iterdir())) == 1
    assert ptx.remembered_in_gpu_mode("m:f", ["stream_k"], "fast") == {"registers": 42}  # other arguments: compiled
    (path,) = [p for p in (tmp_path / "compiled").iterdir() if json.loads(p.read_text()) == first]
    path.write_text("{not json")  # a broken file is compiled again, not believed
    assert ptx.remembered_in_gpu_mode("m:f", ["persistent"], "fast") == {"registers": 43}


def test_the_key_covers_the_source_the_compilers_and_their_settings(tmp_path, monkeypatch):
    (tmp_path / "kernels.py").write_text("A = 1\n")
    key = ptx.compile_key("m:f", [1], [tmp_path])
    assert key == ptx.compile_key("m:f", [1], [tmp_path]) and len(key) == 32
    assert key != ptx.compile_key("m:f", [2], [tmp_path]) and key != ptx.compile_key("m:g", [1], [tmp_path])
    (tmp_path / "kernels.py").write_text("A = 2\n")
    assert ptx.compile_key("m:f", [1], [tmp_path]) != key  # an edited kernel compiles again
    edited = ptx.compile_key("m:f", [1], [tmp_path])
    monkeypatch.setenv("NUMBA_OPT", "0")
    assert ptx.compile_key("m:f", [1], [tmp_path]) != edited
    monkeypatch.delenv("NUMBA_OPT")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")  # the compiling child sets it itself: not part of the key
    on_the_simulator = ptx.compile_key("m:f", [1], [tmp_path])
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    assert ptx.compile_key("m:f", [1], [tmp_path]) == on_the_simulator == edited
    assert any(p.startswith("numba-cuda==") for p in ptx._compilers()["packages"])
