"""Documents that must not drift from the code: the README's steps table and its test command (which CI runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def _readme() -> str:
    if not README.exists():
        pytest.fail("README.md is missing")
    return README.read_text()


def test_readme_steps_table_is_current():
    from gemm_steps.course.cli import TABLE_END, TABLE_START, steps_table_markdown

    text = _readme()
    assert TABLE_START in text and TABLE_END in text, "README.md lost its steps-table markers"
    table = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert table == steps_table_markdown(), "README's steps table is stale: run `gemm-steps readme-table --write`"


def test_readme_results_match_the_shipped_benchmark():
    """The README's numbers are generated from the newest shipped results file: none typed by hand."""
    from gemm_steps.course.cli import RESULTS_END, RESULTS_START, results_markdown

    text = _readme()
    assert RESULTS_START in text and RESULTS_END in text, "README.md lost its results markers"
    section = text.split(RESULTS_START, 1)[1].split(RESULTS_END, 1)[0].strip()
    assert section == results_markdown(), "README's results are stale: run `gemm-steps readme-table --write`"
    for image in re.findall(r"\]\((results/[^)]+)\)", section):
        assert (REPO / image).is_file(), f"README shows {image}, which is not in the repository"


def test_ci_runs_the_readme_test_command():
    """.ci/run must run exactly the command the README gives users (so what CI checks is what users run)."""
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", _readme(), re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines() if "pytest" in line]
    assert commands, "README.md shows no pytest command"
    ci = (REPO / ".ci" / "run").read_text()
    ci_lines = [line.strip() for line in ci.splitlines() if not line.strip().startswith("#")]
    assert any(command in ci_lines for command in commands), (
        f"no README test command {commands} appears verbatim as a line of .ci/run")


def test_the_tensor_core_docs_agree_with_lesson_18():
    """Issue 36: docs/fp32_contract.md named the kernels that keep the contract without step 18, and
    docs/tensor_cores.md called step 18 bound by shared memory where lesson 18's timeline says otherwise."""
    contract = " ".join((REPO / "docs/fp32_contract.md").read_text().split())
    assert "`warp_specialized_3xtf32`" in contract.split("## The contract")[0]
    assert "12, 15 and on" not in contract
    tensor = " ".join((REPO / "docs/tensor_cores.md").read_text().split())
    assert "It is bound by shared memory" not in tensor
