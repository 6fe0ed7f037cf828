"""One results catalogue (issue 38): the package names a results file in gemm_steps/harness/results_files.py and
nowhere else, and every name there is a file the checkout ships (or, for a glob, matches one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gemm_steps.harness import results_files

PACKAGE = Path(results_files.__file__).resolve().parents[1]
#: A results file's name as the package would write it: a measurement's prefix, then its GPU, date or pattern.
NAME = re.compile(r"""["']((?:bench|shapes|tuning|experiment|compile-times|numerics|reference|simulator-cost-model|ncu)"""
                  r"""-[-a-zA-Z0-9_*.]*\.(?:json|txt|log|md|png))["']""")


def catalogue() -> dict[str, str]:
    return {name: value for name, value in vars(results_files).items()
            if name.isupper() and isinstance(value, str) and NAME.fullmatch(f'"{value}"')}


def test_no_results_file_is_named_outside_the_catalogue():
    found = [f"{path.relative_to(PACKAGE.parent)}:{number}: {match.group(1)}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "results_files.py"
             for number, line in enumerate(path.read_text().splitlines(), 1) for match in NAME.finditer(line)]
    assert not found, "results files named outside gemm_steps/harness/results_files.py:\n" + "\n".join(found)


def test_the_check_finds_a_name():
    assert NAME.search('RUN = "experiment-producer-order-nvidia-h200.json"')
    assert NAME.search("results_files.newest_matching('experiment-matmul-held-out-*.json')")
    assert not NAME.search("RUN = results_files.EXPERIMENT_PRODUCER_ORDER_NVIDIA_H200")


def test_every_catalogued_file_is_shipped():
    if not results_files._from_checkout():
        pytest.skip("a wheel install ships no results")
    assert len(catalogue()) >= 40
    folders = results_files.folders()
    missing = [value for value in catalogue().values()
               if not any(list(folder.glob(value)) if "*" in value else (folder / value).is_file() for folder in folders)]
    assert not missing, f"catalogued but not in results/ or experiments/results/: {missing}"
