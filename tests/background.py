"""Work the tests need, done by a child process on the second core while the simulator tests run on the first.

CI has 2 cores and the simulator tests use one. Two long jobs need no pytest process of their own: compiling every
kernel to PTX (tests/ptx_jobs.py) and executing the lessons in Jupyter kernels (tests/lesson_runs.py). Each is a
:class:`BackgroundChild`: a Python child that prints one JSON record per line as each piece finishes. A test waits
only for the record it needs, printing a progress line on the terminal while it waits, so a long wait never looks
hung. ``conftest.py`` starts them when collection ends, the second one after the first has finished (so the two
never fight over the spare core).

A child can have helpers (``into=``): children that put their records into its store, so that a test waiting for a
record finds it whichever child made it. The lessons use one, started when the pytest process has no simulator
tests left (its own core is free then), and the two take lessons from one list (tests/lesson_runs.py).
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


class Gate:
    """Something a child can start ``after``: it starts once :meth:`open` is called."""

    def __init__(self):
        self._open = threading.Event()

    def open(self) -> None:
        self._open.set()

    @property
    def finished(self) -> bool:  # (what a child started after it asks)
        return self._open.is_set()

    def wait_until_finished(self) -> None:
        self._open.wait()


class BackgroundChild:
    """A child process printing JSON records; :meth:`wait_for` returns the record with a given key.

    Every record with a ``"key"`` field is kept under that key. A record ``{"progress": text}`` says where the child
    is (shown to waiting tests), ``{"unavailable": reason}`` skips every waiting test with that reason. With
    ``after``, the child starts only once that other child (or a :class:`Gate`) has ended. With ``into``, it is a
    helper of that child: its records go into that child's store, and that child's :meth:`wait_for` waits for it too.
    """

    def __init__(self, name: str, script: str, args: list[str], env: dict[str, str],
                 say: Callable[[str], None] = print, after: "BackgroundChild | Gate | None" = None,
                 into: "BackgroundChild | None" = None):
        self.name, self.say = name, say
        self.into = into
        self.helpers: list[BackgroundChild] = []
        self.after = after
        self.launched = False  # set before the process starts, under the lock
        if into is not None:
            into.helpers.append(self)
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
            self.launched = True
            self.process = subprocess.Popen([sys.executable, "-c", script, *args], env=env,
                                            stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                            start_new_session=True)  # its own group: close() ends its children
        store = self.into or self
        for line in self.process.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # something else printed to stdout
            with store._changed:
                if "unavailable" in record:
                    store.unavailable = record["unavailable"]
                elif "progress" in record:
                    store.progress = record["progress"]
                elif "key" in record:
                    store.records[record["key"]] = record
                    if store is not self:
                        self.records[record["key"]] = record  # (for its own timing line)
                store._changed.notify_all()
        self.returncode = self.process.wait()
        with self._changed:
            self.ended = time.monotonic()
            self.finished = True
            self._changed.notify_all()
        if store is not self:
            with store._changed:
                store._changed.notify_all()

    def due(self) -> bool:
        """Started, or about to: what it starts after has ended (and it was not closed first)."""
        return self.launched or (not self._closed and (self.after is None or self.after.finished))

    def done(self) -> bool:
        """Nothing more can come: this child has ended, and so has every helper that started or is due to."""
        return self.finished and all(helper.finished or not helper.due() for helper in self.helpers)

    def wait_until_finished(self) -> None:
        with self._changed:
            while not self.finished and not self._closed:
                self._changed.wait(timeout=1.0)

    def wait_for(self, key: str, timeout_s: float) -> dict:
        """The record ``key``, once the child has printed it (skips if the child said it cannot work here)."""
        deadline = time.monotonic() + timeout_s
        next_report = time.monotonic() + PROGRESS_EVERY_S
        with self._changed:
            while key not in self.records and self.unavailable is None and not self.done():
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
        helpers = "".join(f"\n[{helper.name}] exit {helper.returncode}:\n{helper.stderr_tail()}"
                          for helper in self.helpers if helper.launched)
        pytest.fail(f"[{self.name}] the child process ended (exit {self.returncode}) without {key}:\n"
                    f"{self.stderr_tail()}{helpers}")

    def timing(self, since: float) -> str:
        """One line for the terminal summary: when the child started and ended (seconds after ``since``) and the
        slowest records by their ``seconds``."""
        if self.process is None:
            return f"[{self.name}] never started"
        end = f"ended at {self.ended - since:.0f} s" if self.ended is not None else "still running"
        def label(key: str) -> str:  # a PTX key is a JSON list [job, kernel]
            return " ".join(json.loads(key)) if key.startswith("[") else key

        own = {key: r for key, r in self.records.items() if not any(key in h.records for h in self.helpers)}
        timed = sorted(((r.get("seconds", 0.0), label(key)) for key, r in own.items()), reverse=True)
        slowest = ", ".join(f"{key} {seconds:.0f} s" for seconds, key in timed[:6])
        return (f"[{self.name}] started at {self.started - since:.0f} s, {end}; {len(own)} records, "
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
