"""The GPU-mode worker: one child Python with Numba in GPU mode, which compiles for a process on the simulator.

Numba's mode is fixed when it is first imported: a process on the simulator (a notebook, the tests, the exercise
grader) runs kernels but compiles nothing. NVVM compiles to PTX on the CPU, no GPU needed, in a Python started with
``NUMBA_ENABLE_CUDASIM=0``. This module starts one such child, at the first call, and keeps it for the next ones
(importing Numba and the steps costs seconds; a kernel compiled once is not compiled again). It is the one place in
the package that starts a Python (tests/test_child_processes.py)::

    from gemm_steps.harness import gpu_mode
    gpu_mode.call("gemm_steps.harness.ptx:report", ["vectorized"])     # report(["vectorized"]), in GPU mode
    future = gpu_mode.submit("gemm_steps.harness.ptx:nvvm_version")   # the same, without waiting for it

* A call names its function ``"module:function"``; its arguments and its result travel as JSON (a tuple comes back
  as a list). Calls run one at a time, in the order they were made, each from any thread.
* ``timeout`` counts the call's own run in the child, not the calls before it: past it the child is stopped
  (:class:`GPUModeTimeout`) and the next call starts a fresh one.
* ``fresh=True`` runs the call in a new child (the old one stopped first): for timing a compile, where nothing
  compiled earlier may help.
* An exception in the function raises :class:`GPUModeError` here, with its traceback; the child stays. A child that
  ends during a call (a crash, ``os._exit``) raises :class:`GPUModeDied` with the end of what it wrote to stderr.
* Whatever the function prints goes to the child's stderr (kept in a temporary file), never into an answer.
* The child ends with this process (its input closed at exit; killed if it is still busy a second later).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

#: The default time one call may run in the child (seconds).
TIMEOUT_S = 1800.0
#: How much of the child's stderr an error quotes (characters).
LOG_TAIL = 4000


class GPUModeError(RuntimeError):
    """A call in the GPU-mode child failed: the function raised (its traceback is in the message)."""


class GPUModeTimeout(GPUModeError):
    """A call ran longer than its timeout; the child was stopped."""


class GPUModeDied(GPUModeError):
    """The child ended during a call (or could not start): the message ends with its stderr."""


def gpu_mode_env() -> dict[str, str]:
    """This process's environment with Numba in GPU mode (``NUMBA_ENABLE_CUDASIM=0``) and this copy of gemm_steps
    first on ``PYTHONPATH``."""
    package_parent = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join([package_parent] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    return {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": path}


class _Child:
    """One running child: its process, a thread reading its answers into a queue, its stderr in a file."""

    def __init__(self):
        self.log = tempfile.TemporaryFile()
        command = [sys.executable, "-c", "from gemm_steps.harness.gpu_mode import _serve; _serve()"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                        env=gpu_mode_env(), text=True, bufsize=1,
                                        start_new_session=True)  # its own group: stop() ends what it started too
        self.answers: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, name="gpu-mode answers", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.answers.put(line)
        self.answers.put(None)  # its output closed: it ended

    def ask(self, target: str, args: tuple, timeout: float) -> Any:
        start = self.log_size()
        try:
            self.process.stdin.write(json.dumps({"target": target, "args": list(args)}) + "\n")
            self.process.stdin.flush()
        except OSError:  # it had ended: the answer queue says how
            pass
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise GPUModeTimeout(f"{target} in GPU mode (NUMBA_ENABLE_CUDASIM=0) took more than {timeout:.0f} s; "
                                     f"its process was stopped. Its output:\n{self.log_tail(start)}") from None
            if line is None:
                try:
                    status = self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:  # its output closed, itself still running
                    status = "none yet"
                raise GPUModeDied(f"the GPU-mode process (NUMBA_ENABLE_CUDASIM=0) ended (exit {status}) while running "
                                  f"{target}. Its error:\n{self.log_tail(start)}")
            try:
                answer = json.loads(line)
            except json.JSONDecodeError:
                continue  # not an answer (nothing else should write there)
            if "error" in answer:
                raise GPUModeError(f"{target} in GPU mode (NUMBA_ENABLE_CUDASIM=0) failed: {answer['error']}. "
                                   "Compiling needs NVVM, from the CUDA wheels (`pip install 'numba-cuda[cu13]'`), "
                                   f"but no GPU. Its traceback:\n{answer['traceback'][-LOG_TAIL:]}")
            return answer["result"]

    def log_size(self) -> int:
        return 0 if self.log.closed else os.fstat(self.log.fileno()).st_size

    def log_tail(self, start: int = 0) -> str:
        """What the child wrote to stderr since ``start`` (its last :data:`LOG_TAIL` characters). Read with
        ``pread``: the file's offset is the child's too, so moving it would misplace what the child writes next."""
        try:
            end = self.log_size()
            start = max(start, end - 4 * LOG_TAIL)
            text = os.pread(self.log.fileno(), end - start, start).decode(errors="replace") if end > start else ""
        except (OSError, ValueError):  # closed: stop() ran meanwhile
            return "(its output is closed)"
        return text[-LOG_TAIL:]

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace_s: float = 1.0) -> None:
        """End it (input closed, it ends; its group killed if it has not within ``grace_s``), close its files."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.reader.join(timeout=10)  # the child is gone, so its output ends
        self.process.stdout.close()  # else an unclosed-file ResourceWarning
        self.log.close()


class Worker:
    """The calls' queue and the thread that hands them, one at a time, to the child (started when needed)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._child: _Child | None = None
        self._stop_at_exit = False

    def submit(self, target: str, *args: Any, timeout: float = TIMEOUT_S, fresh: bool = False) -> Future:
        future: Future = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gpu-mode calls", daemon=True)
                self._thread.start()
            if not self._stop_at_exit:  # else Python's exit finds it running, with its pipes and log open
                atexit.register(self.stop)
                self._stop_at_exit = True
            self._calls.put((future, target, args, timeout, fresh))
        return future

    def _run(self) -> None:
        while True:
            future, target, args, timeout, fresh = self._calls.get()
            if not future.set_running_or_notify_cancel():
                continue
            child = None
            try:
                with self._lock:
                    if self._child is None or not self._child.alive() or fresh:
                        if self._child is not None:
                            self._child.stop()
                        self._child = _Child()
                    child = self._child
                result = child.ask(target, args, timeout)
            except BaseException as error:
                # past its timeout, dead, or in a state nobody knows (the protocol broke): never asked again
                if child is not None and (isinstance(error, (GPUModeTimeout, GPUModeDied))
                                          or not isinstance(error, GPUModeError)):
                    with self._lock:
                        if self._child is child:
                            self._child = None
                    child.stop(grace_s=0)
                future.set_exception(error)
            else:
                future.set_result(result)

    def stop(self) -> None:
        """End the child (the next call starts another); calls not yet started are cancelled."""
        with self._lock:
            while True:
                try:
                    future, *_ = self._calls.get_nowait()
                except queue.Empty:
                    break
                future.cancel()
            child, self._child = self._child, None
        if child is not None:
            child.stop()


_WORKER = Worker()


def submit(target: str, *args: Any, timeout: float = TIMEOUT_S, fresh: bool = False) -> Future:
    """``target(*args)`` queued for the GPU-mode child (``target``: ``"module:function"``); a Future of its result
    (its exception: :class:`GPUModeError` and its kinds). ``fresh``: in a new child."""
    return _WORKER.submit(target, *args, timeout=timeout, fresh=fresh)


def call(target: str, *args: Any, timeout: float = TIMEOUT_S, fresh: bool = False) -> Any:
    """``target(*args)`` in the GPU-mode child (``target``: ``"module:function"``); returns its result. Raises
    :class:`GPUModeError` (the function raised), :class:`GPUModeTimeout` (it ran past ``timeout`` seconds) or
    :class:`GPUModeDied` (the child ended). ``fresh``: in a new child (for timing a compile)."""
    return submit(target, *args, timeout=timeout, fresh=fresh).result()


def stop() -> None:
    """End the child now (it is also ended at exit); the next call starts a fresh one."""
    _WORKER.stop()


def _serve() -> None:
    """The child: one JSON request a line on stdin (``{"target": "module:function", "args": [...]}``), one JSON answer
    a line (``{"result": ...}`` or ``{"error": ..., "traceback": ...}``)."""
    import importlib
    import traceback

    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a function prints (Python or C) goes to stderr, never into an answer
    for line in sys.stdin:
        request = json.loads(line)
        try:
            module, name = request["target"].split(":")
            result = getattr(importlib.import_module(module), name)(*request["args"])
            answer = json.dumps({"result": result})
        except BaseException as error:  # reported; the child stays for the next call
            answer = json.dumps({"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()})
        sys.stdout.flush()
        sys.stderr.flush()
        answers.write(answer + "\n")
        answers.flush()
