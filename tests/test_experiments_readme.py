"""experiments/README.md is the lab notebook: every experiment script has a row, every row says whether the
experiment is live or historical, and every result file (here and in results/) follows its folder's naming rule."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "experiments" / "README.md").read_text()
#: The rows of the table of experiments (the section "## The experiments"; the renamed-files table is another).
EXPERIMENTS = README.split("## The experiments", 1)[1].split("\n## ", 1)[0]
ROWS = [line for line in EXPERIMENTS.splitlines() if line.startswith("| ") and not line.startswith("| experiment |")]


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


#: experiments/README.md's naming rule: what a script wrote is ``experiment-<topic>-<gpu>[-N]`` (its figures add
#: ``-<figure>``), an Nsight Compute report ``ncu-<topic>-<gpu>[-N].txt``; ``<gpu>`` is the GPU's model
#: (``experiments.gpu_slug``: ``nvidia-h100``) or, for code compiled on a CPU, its target (``sm90``).
NAME_RULE = re.compile(r"^(experiment|ncu)-[a-z0-9]+(-[a-z0-9]+)*-(nvidia-[a-z0-9]+|sm\d+)(-\d+)?"
                       r"(-(curves|steps|tflops|shapes))?\.(json|txt|log|png|md)$")


def test_every_result_file_follows_the_naming_rule():
    results = REPO / "experiments" / "results"
    names = sorted(p.name for p in results.iterdir() if p.is_file())
    assert names and [name for name in names if not NAME_RULE.match(name)] == []
    # the one folder: Nsight Compute's reports of every step, one file per step
    assert sorted(p.name for p in results.iterdir() if p.is_dir()) == ["ncu-steps-nvidia-h100"]


def test_the_naming_rule_can_fail():
    for bad in ("experiment-persistent-h200.json", "call-overhead-nvidia-h100.json",
                "tensor-core-speed-run2-nvidia-h100.json", "experiment-x-nvidia-h100-2026-11-25.json"):
        assert not NAME_RULE.match(bad), bad
    for good in ("experiment-persistent-nvidia-h200.json", "experiment-step-18-nvidia-h100-2-curves.png",
                 "ncu-tensor-core-speed-nvidia-h100-2.txt", "experiment-experiment-k-loop-sass-sm90.json"):
        assert NAME_RULE.match(good), good


def test_the_scripts_default_file_follows_the_rule():
    import sys

    sys.path.insert(0, str(REPO))
    from experiments import gpu_slug

    assert gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100" and gpu_slug("NVIDIA H200") == "nvidia-h200"
    assert gpu_slug("NVIDIA H100 PCIe") == "nvidia-h100" and gpu_slug("NVIDIA GeForce RTX 4090") == "nvidia-geforce-rtx-4090"
    assert NAME_RULE.match(f"experiment-pipelining-{gpu_slug('NVIDIA H100 80GB HBM3')}-2.json")


#: results/README.md's rule: ``<kind>-<gpu>-<date>[-N][-<figure>]`` for benchmark and shape-suite runs and the
#: reference dissections (``reference``), runs of the held-out set (``held-out``, ``-quick`` for a shortened one),
#: ``tuning-<step>-<gpu>``, ``compile-times-<gpu>`` and ``numerics-<gpu>``, and
#: ``simulator-cost-model-<date>`` (measured on this project's CPU machine, not a GPU); ``<gpu>`` is
#: ``environment.file_slug`` of the GPU's whole name (``nvidia-h100-80gb-hbm3``), as ``gemm-steps bench`` and ``tune``
#: write it.
RESULTS_RULE = re.compile(r"^((bench|shapes|reference)-nvidia-[a-z0-9-]+-\d{4}-\d\d-\d\d(-\d+)?"
                          r"(-(tflops|steps|curves|shapes))?\.(json|png)"
                          r"|held-out-nvidia-[a-z0-9-]+-\d{4}-\d\d-\d\d(-\d+)?(-quick)?\.json"
                          r"|tuning-[a-z0-9_]+-nvidia-[a-z0-9-]+\.json"
                          r"|(compile-times|numerics)-nvidia-[a-z0-9-]+\.json|simulator-cost-model-\d{4}-\d\d-\d\d\.json"
                          r"|README\.md)$")


def test_every_file_in_results_follows_its_rule():
    names = sorted(p.name for p in (REPO / "results").iterdir())
    assert names and [name for name in names if not RESULTS_RULE.match(name)] == []
    assert not RESULTS_RULE.match("numerics-h200.json") and not RESULTS_RULE.match("bench-nvidia-h200.json")
