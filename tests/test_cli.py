"""``gemm-steps``: every subcommand answers ``--help`` with its usage, and a bad argument with a usage message and
exit status 2 — never a traceback. In-process (``cli.main``), so the whole set costs well under a second."""

import json
import re
from pathlib import Path

import pytest

import gemm_steps
from gemm_steps.course import cli
from gemm_steps.harness import dispatch, results_files, simulator
from gemm_steps.toolkit.tuned import current_gpu_name

COMMANDS = sorted(cli.parser()._subparsers._group_actions[0].choices)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``gemm-steps ARGV``, whether main returns the status or argparse exits."""
    try:
        status = cli.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


def test_every_command_is_covered():
    assert set(COMMANDS) == {"info", "verify", "bench", "plot", "tune", "diff", "explain", "exercise", "readme-table"}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_help(command, capsys):
    status, out, err = run([command, "--help"], capsys)
    assert status == 0, err
    assert out.startswith(f"usage: gemm-steps {command}") and "Traceback" not in out + err


BAD = [
    [],
    ["no-such-command"],
    ["info", "extra"],
    ["verify", "--steps"],
    ["verify", "--steps", "99"],
    ["verify", "--steps", "no_such_step"],
    ["verify", "--shapes", "0x3x3"],
    ["verify", "--shapes", "-4x3x3"],
    ["verify", "--shapes", "axbxc"],
    ["verify", "--shapes", "4x3"],
    ["bench", "--sizes", "-5"],
    ["bench", "--sizes", "0"],
    ["bench", "--sizes", "big"],
    ["bench", "--repeats", "0"],
    ["bench", "--steps", "no_such_step"],
    ["bench", "--suite", "other"],
    ["plot"],
    ["plot", "no/such/results.json"],
    ["plot", "results"],  # a folder
    ["plot", "README.md"],  # not JSON
    ["plot", "gemm_steps/harness/dispatch.json"],  # JSON, not results
    ["tune"],
    ["tune", "no_such_step"],
    ["tune", "11", "--size", "0"],
    ["tune", "11", "--size", "-1"],
    ["tune", "11", "--repeats", "x"],
    ["diff"],
    ["diff", "8"],
    ["diff", "8", "99"],
    ["diff", "0", "1"],
    ["diff", "-1", "2"],
    ["diff", "8", "9", "--context", "-1"],
    ["diff", "8", "9", "--context", "x"],
    ["explain"],
    ["explain", "1000", "1000"],
    ["explain", "0", "10", "10"],
    ["explain", "10", "10", "0"],
    ["explain", "-5", "3", "3"],
    ["explain", "a", "b", "c"],
    ["explain", "1.5", "2", "2"],
    ["explain", "10", "10", "10", "10"],
    ["exercise"],
    ["exercise", "grade"],
    ["exercise", "check"],
    ["exercise", "check", "no_such_exercise"],
    ["exercise", "check", "coalesced", "--file", "no/such/file.py"],
    ["exercise", "check", "coalesced", "--file", "exercises"],  # a folder
    ["exercise", "check", "coalesced", "--file", "README.md"],  # not Python
    ["readme-table", "--write", "no/such/README.md"],
    ["readme-table", "--write", "results"],  # a folder
]


@pytest.mark.parametrize("argv", BAD, ids=lambda argv: " ".join(argv) or "(nothing)")
def test_a_bad_argument_gets_the_usage_and_status_2(argv, capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # the relative paths above are the checkout's
    status, out, err = run(argv, capsys)
    assert status == 2, (status, out, err)
    assert "Traceback" not in out + err
    command = argv[0] if argv and argv[0] in COMMANDS else None
    assert err.startswith(f"usage: gemm-steps {command or ''}".rstrip()), err
    last = err.strip().splitlines()[-1]
    assert re.match(rf"gemm-steps{' ' + command if command else ''}: error: \S", last), err


def test_explain_at_a_size_the_simulator_refuses_says_so_and_names_its_files(capsys):
    """The dispatch numbers' files: the table, the results file it was recorded from (same GPU and date), and the
    README's run when that is another; without a GPU, the simulator's limit and the largest square that fits."""
    status, out, err = run(["explain", "1000", "1000", "1000"], capsys)
    assert status == 0, err
    choice, gpu = dispatch.choose(1000, 1000, 1000), current_gpu_name()
    table = dispatch.table_file(gpu)
    source = next(line for line in out.splitlines() if line.strip().startswith("source:"))
    assert results_files.display_path(table) in source
    recorded = re.search(r"recorded from (\S+)", source)
    if table == dispatch.SHIPPED_TABLE:  # (a table of your own, ~/.cache/gemm-steps, may come from a run not kept here)
        assert recorded, source
        env = json.loads((Path(cli.REPO_ROOT) / recorded.group(1)).read_text())["environment"]
        assert (env["gpu"], env["date"]) == (choice.gpu, dispatch.table(gpu)["date"])
        shipped = cli.newest_shipped_results()
        if shipped and shipped[0].name not in recorded.group(1):
            assert shipped[0].name in source, "a percentage from another run than the README's must say so"
    if gemm_steps.SIMULATOR:
        step = dispatch.candidate(choice.step_name)
        side = simulator.largest_square(step.config, simulator.limit_seconds())
        assert simulator.estimated_seconds(step.config, 1000, 1000, 1000) > simulator.limit_seconds()
        assert re.search(rf"refuse.*\b{side}×{side}×{side}\b", out), out


def test_explain_at_a_size_the_simulator_runs_says_it_fits(capsys):
    status, out, err = run(["explain", "64", "48", "32"], capsys)
    assert status == 0, err
    if gemm_steps.SIMULATOR:
        here = next(line for line in out.splitlines() if line.strip().startswith("here:"))
        assert "refuse" not in here


def test_explain_says_when_matmul_refuses_a_matrix_too_large_to_index(capsys):
    status, out, err = run(["explain", "100000", "100000", "100000"], capsys)
    assert status == 0, err
    refused = next(line for line in out.splitlines() if line.strip().startswith("refused:"))
    assert f"{2**31 - 1:,}" in refused
