"""Work the tests need, done by a child process on the second core while the simulator tests run on the first.

CI has 2 cores and the simulator tests use one. Two long jobs need no pytest process of their own: compiling every
kernel to PTX (tests/ptx_jobs.py) and executing the lessons in Jupyter kernels (tests/lesson_runs.py). Each is a
:class:`BackgroundChild`: a Python child that prints one JSON record per line as each piece finishes. A test waits
only for the record it needs, printing a progress line on the terminal while it waits, so a long wait never looks
hung. ``conftest.py`` starts them when collection ends, the second one after the first has finished (so the two
never fight over the spare core).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

#: A waiting test prints a progress line this often.
PROGRESS_EVERY_S = 15


def child_env(**overrides: str) -> dict[str, str]:
    """This environment with this checkout's gemm_steps and tests/ first on the path, plus ``overrides``."""
    import gemm_steps

    checkout = Path(gemm_steps.__file__).resolve().parents[1]
    path = os.pathsep.join([str(checkout), str(Path(__file__).resolve().parent),
                            *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path, **overrides}


class BackgroundChild:
    """A child process printing JSON records; :meth:`wait_for` returns the record with a given key.

    Every record with a ``"key"`` field is kept under that key. A record ``{"progress": text}`` says where the child
    is (shown to waiting tests), ``{"unavailable": reason}`` skips every waiting test with that reason. With
    ``after``, the child starts only once that other child has ended.
    """

    def __init__(self, name: str, script: str, args: list[str], env: dict[str, str],
                 say: Callable[[str], None] = print, after: "BackgroundChild | None" = None):
        self.name, self.say = name, say
        self.records: dict[str, dict] = {}
        self.unavailable: str | None = None
        self.progress = "not started"
        self.finished = False
        self.returncode: int | None = None
        self.process: subprocess.Popen | None = None
        self.started = time.monotonic()
        self.ended: float | None = None
        self._closed = False
        self._changed = threading.Condition()
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._thread = threading.Thread(target=self._run, args=(script, args, env, after), name=name, daemon=True)
        self._thread.start()

    def _run(self, script, args, env, after) -> None:
        if after is not None:
            after.wait_until_finished()
        with self._changed:
            if self._closed:
                return
            self.started = time.monotonic()
            self.progress = "started"
            self.process = subprocess.Popen([sys.executable, "-c", script, *args], env=env,
                                            stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                            start_new_session=True)  # its own group: close() ends its children
        for line in self.process.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # something else printed to stdout
            with self._changed:
                if "unavailable" in record:
                    self.unavailable = record["unavailable"]
                elif "progress" in record:
                    self.progress = record["progress"]
                elif "key" in record:
                    self.records[record["key"]] = record
                self._changed.notify_all()
        self.returncode = self.process.wait()
        with self._changed:
            self.ended = time.monotonic()
            self.finished = True
            self._changed.notify_all()

    def wait_until_finished(self) -> None:
        with self._changed:
            while not self.finished and not self._closed:
                self._changed.wait(timeout=1.0)

    def wait_for(self, key: str, timeout_s: float) -> dict:
        """The record ``key``, once the child has printed it (skips if the child said it cannot work here)."""
        deadline = time.monotonic() + timeout_s
        next_report = time.monotonic() + PROGRESS_EVERY_S
        with self._changed:
            while key not in self.records and self.unavailable is None and not self.finished:
                now = time.monotonic()
                if now > deadline:
                    pytest.fail(f"[{self.name}] {key} not done after {timeout_s:.0f} s ({self.progress})")
                if now >= next_report:
                    self.say(f"[{self.name}] waiting for {key}: {len(self.records)} done, {self.progress} "
                             f"({now - self.started:.0f} s)")
                    next_report = now + PROGRESS_EVERY_S
                self._changed.wait(timeout=1.0)
            if key in self.records:
                return self.records[key]
        if self.unavailable is not None:
            pytest.skip(self.unavailable)
        pytest.fail(f"[{self.name}] the child process ended (exit {self.returncode}) without {key}:\n"
                    f"{self.stderr_tail()}")

    def timing(self, since: float) -> str:
        """One line for the terminal summary: when the child started and ended (seconds after ``since``) and the
        slowest records by their ``seconds``."""
        if self.process is None:
            return f"[{self.name}] never started"
        end = f"ended at {self.ended - since:.0f} s" if self.ended is not None else "still running"
        def label(key: str) -> str:  # a PTX key is a JSON list [job, kernel]
            return " ".join(json.loads(key)) if key.startswith("[") else key

        timed = sorted(((r.get("seconds", 0.0), label(key)) for key, r in self.records.items()), reverse=True)
        slowest = ", ".join(f"{key} {seconds:.0f} s" for seconds, key in timed[:6])
        return (f"[{self.name}] started at {self.started - since:.0f} s, {end}; {len(self.records)} records, "
                f"{sum(s for s, _ in timed):.0f} s in all; slowest: {slowest}")

    def stderr_tail(self, chars: int = 3000) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()[-chars:]

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            process = self.process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the child and what it started (a Jupyter kernel)
            except ProcessLookupError:
                pass
            process.wait()
        self._stderr.close()
