"""The child process the PTX compile runs in (tests/background.py)."""

from __future__ import annotations


import pytest

from background import BackgroundChild, child_env

SAYS = r"""
import json, sys
print("not a record", flush=True)
print(json.dumps({"progress": "halfway"}), flush=True)
print(json.dumps({"key": "a", "value": int(sys.argv[1])}), flush=True)
sys.exit(int(sys.argv[2]))
"""


def test_a_record_arrives_and_a_missing_one_fails_with_the_childs_stderr():
    ok = BackgroundChild("ok", SAYS, ["7", "0"], child_env())
    try:
        assert ok.wait_for("a", timeout_s=60)["value"] == 7
        with pytest.raises(pytest.fail.Exception, match="ended"):
            ok.wait_for("b", timeout_s=60)
    finally:
        ok.close()

    crashing = BackgroundChild("crashing", "import sys; sys.exit('it broke')", [], child_env())
    try:
        with pytest.raises(pytest.fail.Exception, match="it broke"):
            crashing.wait_for("a", timeout_s=60)
    finally:
        crashing.close()


def test_unavailable_skips():
    child = BackgroundChild("no-nvvm", 'import json; print(json.dumps({"unavailable": "no NVVM here"}))', [],
                            child_env())
    try:
        with pytest.raises(pytest.skip.Exception, match="no NVVM here"):
            child.wait_for("a", timeout_s=60)
        with pytest.raises(pytest.skip.Exception, match="no NVVM here"):  # every later test too
            child.wait_for("b", timeout_s=60)
    finally:
        child.close()


def test_a_slow_record_times_out():
    slow = BackgroundChild("slow", "import time; time.sleep(30)", [], child_env())
    try:
        with pytest.raises(pytest.fail.Exception, match="not done after"):
            slow.wait_for("a", timeout_s=1)
    finally:
        slow.close()
    assert slow.process is None or slow.process.poll() is not None, "close() left the child running"


def test_close_leaves_no_file_open():
    """close() closes the child's output pipe and the stderr file too (an unclosed one is a ResourceWarning at the
    end of the run), whether or not a test read the output to its end."""
    for script in ("print('{}')", "import time; time.sleep(30)"):
        child = BackgroundChild("files", script, [], child_env())
        child.close()
        assert child.process.stdout.closed and child._stderr.closed, script
