"""A kernel compiled once per machine (:func:`gemm_steps.harness.ptx.compiled_kernel`): every GPU-mode worker — the
test run's PTX checks, each lesson's, the deep dives' ptxas reports — asks the disk before it compiles, under a key
(:func:`~gemm_steps.harness.ptx.kernel_key`) that changes with anything the PTX depends on.

The compile itself is replaced here by a stand-in (it needs GPU mode); the PTX tests and the lessons run the real
one."""

from __future__ import annotations

import threading
import time

import pytest

from gemm_steps.harness import ptx


class FakeDispatcher:
    """What :func:`kernel_key` reads of a ``cuda.jit`` dispatcher: its Python function and compile options."""

    def __init__(self, module: str, constant: int = 4, options: dict | None = None, helper=len):
        namespace = {"__name__": module, "TILE": constant, "helper": helper}
        exec("def kernel(a, b, c):\n    c[0] = a[0] * b[0] * TILE + helper(a)\n", namespace)
        self.py_func = namespace["kernel"]
        self.targetoptions = options or {}


SIGNATURE = "void(float32[::1], float32[::1], float32[::1])"


def test_the_key_changes_with_what_the_ptx_depends_on():
    base = ptx.kernel_key(FakeDispatcher("gemm_steps.steps.fake"), SIGNATURE)
    assert base is not None and base == ptx.kernel_key(FakeDispatcher("gemm_steps.steps.fake"), SIGNATURE)
    others = [ptx.kernel_key(FakeDispatcher("gemm_steps.steps.fake", constant=8), SIGNATURE),
              ptx.kernel_key(FakeDispatcher("gemm_steps.steps.fake"), SIGNATURE.replace("float32", "float64")),
              ptx.kernel_key(FakeDispatcher("gemm_steps.steps.fake"), SIGNATURE, cc=(8, 0)),
              ptx.kernel_key(FakeDispatcher("gemm_steps.steps.fake", options={"launch_bounds": (128, 1)}),
                             SIGNATURE)]
    assert len({base, *others}) == 5


def test_the_key_names_a_helper_by_its_module_not_by_its_address():
    """The same function gives the same key in every process; another function of the same name, from another
    module, another key (its ``repr`` would show only the name and an address)."""
    def helper(x):
        return x

    other = FakeDispatcher("gemm_steps.steps.fake").py_func  # another function, named as helper is (same repr
    other.__name__, other.__qualname__ = helper.__name__, helper.__qualname__  # but for its address)
    other.__module__ = "gemm_steps.steps.other"
    keys = {ptx.kernel_key(FakeDispatcher("gemm_steps.steps.fake", helper=h), SIGNATURE)
            for h in (helper, helper, other)}
    assert len(keys) == 2
    assert ptx._portable_text(helper) == f"{__name__}.test_the_key_names_a_helper_by_its_module_not_by_its_address" \
                                         ".<locals>.helper"


def test_a_kernel_from_outside_the_package_has_no_key():
    """Its helpers live in files the key does not hash (experiments/, a learner's exercise)."""
    assert ptx.kernel_key(FakeDispatcher("experiments.kernels.fake"), SIGNATURE) is None
    assert ptx.kernel_key(FakeDispatcher("exercise_solution"), SIGNATURE) is None


@pytest.fixture
def counted_compiles(tmp_path, monkeypatch):
    """compiled_kernel with a stand-in compile that records each call (and takes 0.2 s, so two callers overlap)."""
    monkeypatch.setenv("GEMM_STEPS_CACHE", str(tmp_path))
    calls = []

    def compile_(dispatcher, signature, cc, lto, entry):
        calls.append(lto)
        time.sleep(0.2)
        entry = {**entry, "ptx": entry.get("ptx", f"// {len(calls)}"), "seconds": entry.get("seconds", 0.2)}
        return {**entry, "lto_ptxas": {"registers": 40}} if lto else entry

    monkeypatch.setattr(ptx, "_compile_kernel", compile_)
    return calls


def test_a_kernel_compiled_once_is_read_back(counted_compiles):
    kernel = FakeDispatcher("gemm_steps.steps.fake")
    first = ptx.compiled_kernel(kernel, SIGNATURE)
    assert ptx.compiled_kernel(kernel, SIGNATURE) == first and counted_compiles == [False]
    with_lto = ptx.compiled_kernel(kernel, SIGNATURE, lto=True)  # asks for more: compiles again, keeps the PTX
    assert with_lto["ptx"] == first["ptx"] and with_lto["lto_ptxas"] == {"registers": 40}
    assert ptx.compiled_kernel(kernel, SIGNATURE, lto=True) == with_lto and counted_compiles == [False, True]
    ptx.compiled_kernel(FakeDispatcher("gemm_steps.steps.fake", constant=8), SIGNATURE)
    assert counted_compiles == [False, True, False]


def test_a_kernel_without_a_key_compiles_every_time(counted_compiles):
    kernel = FakeDispatcher("experiments.kernels.fake")
    ptx.compiled_kernel(kernel, SIGNATURE)
    ptx.compiled_kernel(kernel, SIGNATURE)
    assert counted_compiles == [False, False]


def test_two_callers_at_once_compile_once(counted_compiles):
    """The second waits on the key's lock while the first compiles, then reads the first's answer."""
    kernel = FakeDispatcher("gemm_steps.steps.fake")
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(ptx.compiled_kernel(kernel, SIGNATURE)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counted_compiles == [False] and answers[0] == answers[1]
