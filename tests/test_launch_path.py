"""The launch path is one object (issue 38, item 2): a step's ``TUNING`` builds a ``TiledKernels`` (config → fast and
edge kernels → launch plans → launch) that ``Step.tiled`` holds — no object forwarding attributes to another, no
``getattr(x, "built", x)`` unwrapping, no launch list handed over through a thread-local or an attribute, and every
memo on the path a bounded ``toolkit.kept.Kept`` or a ``functools.lru_cache``, never a dict emptied by hand.

These read the package's source (each check is shown to fail on a line written the old way), then check the objects.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gemm_steps
from gemm_steps.harness import dispatch
from gemm_steps.toolkit import tuned
from gemm_steps.toolkit.kept import Kept, KeptPerThread
from gemm_steps.toolkit.tiles import TiledKernels

PACKAGE = Path(gemm_steps.__file__).resolve().parent
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "course" not in p.parts)  # the kernels, toolkit and harness


def forwarding(source: str) -> list[str]:
    """Classes that forward attributes (a ``__getattr__``) and ``getattr(x, "built", …)`` unwrapping, in a source."""
    found = [f"line {node.lineno}: {node.name}" for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"]
    found += [f"line {n}: unwraps a build" for n, line in enumerate(source.splitlines(), 1)
              if re.search(r"""getattr\([^,]+,\s*["']built["']""", line)]
    return found


def memos_emptied_by_hand(source: str) -> list[str]:
    """``if len(memo) >= LIMIT: memo.clear()`` written out (what :meth:`Kept.keep` does, once)."""
    lines = source.splitlines()
    return [f"line {n + 1}: {lines[n].strip()}" for n in range(len(lines) - 1)
            if re.search(r"\bif len\(.+\) >", lines[n])
            and re.search(r"\.clear\(\)", lines[n + 1])]


def test_the_checks_can_fail():
    old = ("class TunedKernels:\n    def __getattr__(self, name):\n        return getattr(self.built, name)\n"
           "inner = getattr(tiled, 'built', tiled)\n"
           "def keep(plans, key, plan):\n    if len(plans) >= 64:\n        plans.clear()\n    plans[key] = plan\n")
    assert forwarding(old) == ["line 2: __getattr__", "line 4: unwraps a build"]
    assert memos_emptied_by_hand(old) == ["line 6: if len(plans) >= 64:"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_on_the_launch_path_forwards_attributes_or_empties_a_memo_by_hand(path):
    source = path.read_text()
    assert not forwarding(source), f"{path.name} forwards attributes: {forwarding(source)}"
    if path.name != "kept.py":
        assert not memos_emptied_by_hand(source), f"{path.name}: use toolkit.kept.Kept: {memos_emptied_by_hand(source)}"


def test_no_launch_list_is_handed_over_through_a_thread_local_or_an_attribute():
    """Recording a launch plan passes its list down as an argument (``launch_through_numba(..., launches)``)."""
    source = (PACKAGE / "toolkit" / "launch_plans.py").read_text()
    assert "threading" not in source and "def recording" not in source


def test_kept_empties_when_full_and_keeps_per_thread():
    kept = Kept(2)
    kept.keep("a", 1)
    kept.keep("b", 2)
    assert kept.keep("a", 3) == 3 and dict(kept) == {"a": 3, "b": 2}  # a key it has: replaced, nothing dropped
    kept.keep("c", 4)
    assert dict(kept) == {"c": 4}
    made = []
    assert kept.made("d", lambda: made.append(1) or "D") == "D" and kept.made("d", lambda: made.append(1)) == "D"
    assert made == [1]
    import threading

    per_thread = KeptPerThread(4)
    per_thread.mine()["here"] = 1
    there = []
    thread = threading.Thread(target=lambda: there.append(dict(per_thread.mine())))
    thread.start()
    thread.join(10)
    assert there == [{}] and per_thread.mine() == {"here": 1}


def test_a_step_holds_its_build_and_steps_share_one_build_per_configuration():
    """``Step.tiled`` is the ``TiledKernels`` itself; step 11's data-parallel fallback is step 10's very build, a
    padded candidate's kernels its step's (``tuned.built`` keeps one per build function and configuration)."""
    persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
    assert isinstance(persistent.tiled, TiledKernels) and isinstance(stream_k.tiled, TiledKernels)
    assert stream_k.tiled.data_parallel_fallback is persistent.tiled
    padded = dispatch.candidate("warp_specialized+padded")
    assert padded.pads and padded.tiled is gemm_steps.get_step("warp_specialized").tiled
    assert padded.padded().tiled is padded.tiled
    assert tuned.built(persistent.module.build, persistent.tiled.config) is persistent.tiled
    assert isinstance(gemm_steps.get_step("naive").tiled, type(None))
