"""The GPU-mode worker (gemm_steps.harness.gpu_mode): one child Python in GPU mode, kept between calls, that reports
a failing function, a call past its timeout and a child that dies, and leaves nothing running or open.

Each test has a worker of its own (``gpu_mode.Worker()``, what the module's ``call`` uses), calling standard-library
functions, so nothing here needs NVVM.
"""

from __future__ import annotations

import os

import pytest

from gemm_steps.harness import gpu_mode


@pytest.fixture
def worker():
    worker = gpu_mode.Worker()
    yield worker
    worker.stop()


def ask(worker, target, *args, timeout=120.0, fresh=False):
    return worker.submit(target, *args, timeout=timeout, fresh=fresh).result()


def test_one_child_answers_in_gpu_mode_and_stays_for_the_next_call(worker):
    pid = ask(worker, "os:getpid")
    assert pid != os.getpid()
    assert ask(worker, "os:getenv", "NUMBA_ENABLE_CUDASIM") == "0"
    assert ask(worker, "builtins:print", "printed, not an answer") is None  # what it prints goes to its stderr
    assert ask(worker, "builtins:divmod", 7, 2) == [3, 1]  # JSON: a tuple comes back as a list
    with pytest.raises(gpu_mode.GPUModeError, match=r"json:loads in GPU mode .* failed: JSONDecodeError") as error:
        ask(worker, "json:loads", "{not json")
    assert "Traceback" in str(error.value) and not isinstance(error.value, gpu_mode.GPUModeDied)
    assert ask(worker, "os:getpid") == pid  # the function's exception did not end the child
    assert ask(worker, "os:getpid", fresh=True) != pid  # fresh: a new child


def test_calls_run_one_at_a_time_in_the_order_made(worker):
    futures = [worker.submit("builtins:abs", -n) for n in range(20)]
    assert [future.result() for future in futures] == list(range(20))


def test_a_call_past_its_timeout_stops_the_child_and_the_next_call_starts_another(worker):
    pid = ask(worker, "os:getpid")
    with pytest.raises(gpu_mode.GPUModeTimeout, match="time:sleep in GPU mode .* took more than 1 s"):
        ask(worker, "time:sleep", 60, timeout=1)
    assert ask(worker, "os:getpid") != pid


def test_a_child_that_dies_is_reported_with_its_stderr_and_replaced(worker):
    with pytest.raises(gpu_mode.GPUModeDied, match=r"ended \(exit 3\) while running os:_exit"):
        ask(worker, "os:_exit", 3)
    assert ask(worker, "builtins:abs", -1) == 1


def test_stop_ends_the_child_and_closes_its_files(worker):
    ask(worker, "os:getpid")
    child = worker._child
    worker.stop()
    assert child.process.poll() is not None, "stop() left the child running"
    assert child.process.stdin.closed and child.process.stdout.closed and child.log.closed
