"""gpu_clock.load_records, the one loop of the reference script, the loop-instruction experiment and step 18's energy
experiment: each call made once on the shared inputs before its record, in the order given, each record reported as
it is made (NVML's sampling itself, load_record, is tested on a GPU in tests/test_gpu.py; here it is replaced)."""

from __future__ import annotations

from gemm_steps.harness import gpu_clock


def test_each_call_runs_once_before_its_record_in_order(monkeypatch):
    events = []
    monkeypatch.setattr(gpu_clock, "load_record", lambda call, flops, seconds, settle: (
        call(), events.append(("record", flops, seconds, settle)), {"flops": flops})[-1])

    def calls_of(a, b, c):
        assert a.shape == b.shape == c.shape == (8, 8)
        return {"second": lambda: events.append("second"), "first": lambda: events.append("first")}

    heard = []
    found = gpu_clock.load_records(calls_of, 8, 3.0, 1.0, each=lambda name, record: heard.append(name))
    assert list(found) == heard == ["second", "first"]
    assert events == ["second", "second", ("record", 1024, 3.0, 1.0), "first", "first", ("record", 1024, 3.0, 1.0)]
    assert found["first"] == {"flops": 2 * 8 ** 3}
