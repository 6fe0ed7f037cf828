"""experiments/README.md is the lab notebook: every experiment script has a row, and every row says whether the
experiment is live or historical."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "experiments" / "README.md").read_text()
ROWS = [line for line in README.splitlines() if line.startswith("| ") and not line.startswith("| experiment |")]


def test_every_row_says_live_or_historical():
    assert ROWS
    statuses = [row.split(" | ")[1] for row in ROWS]
    assert all(s.startswith(("live", "historical")) for s in statuses), [s for s in statuses
                                                                          if not s.startswith(("live", "historical"))]


def test_every_experiment_script_has_a_row():
    scripts = sorted(p.name for p in (REPO / "experiments").glob("*.py") if p.name != "__init__.py")
    table = "\n".join(ROWS)
    assert [name for name in scripts if f"`{name}`" not in table] == []


def test_scripts_and_experiments_do_not_overlap():
    """The Nsight Compute driver lives in scripts/ only; experiments name it there."""
    assert not (REPO / "experiments" / "profile_steps.py").exists()
    assert (REPO / "scripts" / "profile_steps.py").exists() and (REPO / "scripts" / "README.md").exists()
