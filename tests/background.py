"""A child process that prints JSON records, one a line; a test waits for the record it needs.

The PTX checks need Numba in GPU mode (``NUMBA_ENABLE_CUDASIM=0``, no GPU needed), which a simulator test process
cannot switch to, so one child compiles every kernel the selected tests need and prints one record per kernel as it
finishes (tests/ptx_jobs.py). A test waits only for its own record, so the first PTX test does not wait for the
whole compile.

Records: ``{"key": …, …}`` is kept under its key; ``{"unavailable": reason}`` skips every waiting test with that
reason (no NVVM here); any other line (``{"progress": …}``, stray output) is ignored.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def child_env(**overrides: str) -> dict[str, str]:
    """This environment with this checkout's gemm_steps and tests/ first on the path, plus ``overrides``."""
    import gemm_steps

    checkout = Path(gemm_steps.__file__).resolve().parents[1]
    path = os.pathsep.join([str(checkout), str(Path(__file__).resolve().parent),
                            *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path, **overrides}


class BackgroundChild:
    """``python -c script *args``; :meth:`wait_for` returns the record with a given key once printed."""

    def __init__(self, name: str, script: str, args: list[str], env: dict[str, str]):
        self.name = name
        self.records: dict[str, dict] = {}
        self.unavailable: str | None = None
        self.started = time.monotonic()
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen([sys.executable, "-c", script, *args], env=env, stdout=subprocess.PIPE,
                                        stderr=self._stderr, text=True,
                                        start_new_session=True)  # its own group: close() ends its children too
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=name, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)  # the child closed its output: nothing more comes

    def wait_for(self, key: str, timeout_s: float) -> dict:
        """The record ``key``; skips if the child said it cannot work here, fails (with its stderr) if it ended
        without the record or took longer than ``timeout_s``."""
        import pytest

        deadline = time.monotonic() + timeout_s
        while key not in self.records and self.unavailable is None:
            if self.process.stdout.closed and self._lines.empty():
                break
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"[{self.name}] {key} not done after {timeout_s:.0f} s")
            if line is None:
                self.process.stdout.close()
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # something else printed to stdout
            if "unavailable" in record:
                self.unavailable = record["unavailable"]
            elif "key" in record:
                self.records[record["key"]] = record
        if key in self.records:
            return self.records[key]
        if self.unavailable is not None:
            pytest.skip(self.unavailable)
        pytest.fail(f"[{self.name}] the child process ended (exit {self.process.wait()}) without {key}:\n"
                    f"{self.stderr_tail()}")

    def stderr_tail(self, chars: int = 3000) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()[-chars:]

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # the child and whatever it started
            except ProcessLookupError:
                pass
        self.process.wait()
        self._reader.join(timeout=10)  # the child is gone, so its output ends: the reader stops reading
        self.process.stdout.close()  # else the pipe is left open (an unclosed-file ResourceWarning)
        self._stderr.close()
