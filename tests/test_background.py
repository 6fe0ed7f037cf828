"""The background runner the PTX compile and the lesson executions use (tests/background.py)."""

from __future__ import annotations


import pytest

from background import BackgroundChild, Gate, child_env

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


def test_a_child_waits_for_the_one_before_it_and_unavailable_skips():
    first = BackgroundChild("first", SAYS, ["1", "0"], child_env())
    second = BackgroundChild("second", 'import json; print(json.dumps({"unavailable": "no NVVM here"}))', [],
                             child_env(), after=first)
    try:
        with pytest.raises(pytest.skip.Exception, match="no NVVM here"):
            second.wait_for("a", timeout_s=60)
        assert first.finished, "the second child started before the first had ended"
    finally:
        second.close()
        first.close()


def test_a_slow_record_times_out():
    slow = BackgroundChild("slow", "import time; time.sleep(30)", [], child_env())
    try:
        with pytest.raises(pytest.fail.Exception, match="not done after"):
            slow.wait_for("a", timeout_s=1)
    finally:
        slow.close()
    assert slow.process is None or slow.process.poll() is not None, "close() left the child running"


LATE = r"""
import json, time
time.sleep(0.5)
print(json.dumps({"key": "b", "value": 2}), flush=True)
"""


def test_a_helper_started_late_puts_its_records_with_the_first_childs():
    """The second lesson runner's way (tests/lesson_runs.py): a helper's records are waited for on the first child,
    also after the first child has ended; a helper that never started is not waited for."""
    first = BackgroundChild("first", SAYS, ["1", "0"], child_env())
    gate = Gate()
    helper = BackgroundChild("helper", LATE, [], child_env(), after=gate, into=first)
    try:
        assert first.wait_for("a", timeout_s=60)["value"] == 1
        first.wait_until_finished()
        assert not helper.launched
        with pytest.raises(pytest.fail.Exception, match="ended"):  # no helper running: nothing more can come
            first.wait_for("b", timeout_s=60)
        gate.open()
        assert first.wait_for("b", timeout_s=60)["value"] == 2  # the first child has ended; its helper had not
        assert helper.records.keys() == {"b"} and "a" not in helper.records
    finally:
        helper.close()
        first.close()
