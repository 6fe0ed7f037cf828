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
        products = simulator.products_of(step)
        side = simulator.largest_square(step.config, simulator.limit_seconds(), products)
        assert simulator.estimated_seconds(step.config, 1000, 1000, 1000, products) > simulator.limit_seconds()
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


def test_explain_without_a_gpu_says_which_machine_each_tile_line_describes(capsys):
    """Without a GPU, the tiles, SMs and waves are the measured GPU's (its tiles, its SM count), under a line naming
    it; the simulator's own smaller tiles get a line of their own. (Once the simulator's 32×64 tiles were printed with
    an H100's 132 SMs, a machine that does not exist.)"""
    from gemm_steps.toolkit.tuned import default_config

    status, out, err = run(["explain", "4096", "4096", "4096"], capsys)
    assert status == 0, err
    choice = dispatch.choose(4096, 4096, 4096)
    step = dispatch.candidate(choice.step_name)
    lines = out.splitlines()
    tiles = next(i for i, line in enumerate(lines) if line.strip().startswith("tiles:"))
    if not gemm_steps.SIMULATOR:
        assert f"{step.tiled.config.BLOCK_M}×{step.tiled.config.BLOCK_N} →" in lines[tiles]
        return
    gpu_tiles, local = default_config(step.module.SEARCH_SPACE), step.tiled.config
    assert local != gpu_tiles, "the check needs a step whose simulator tiles are not its GPU tiles"
    measured_on = json.loads((Path(cli.REPO_ROOT) / "gemm_steps/harness/dispatch.json").read_text())
    sms = {r["environment"]["gpu"]: r["environment"]["sm_count"] for r in (
        json.loads(p.read_text()) for p in results_files.RESULTS_DIR.glob("*.json")) if "environment" in r
        and r["environment"].get("sm_count")}
    assert choice.gpu in measured_on and choice.gpu in sms
    header = next(line for line in reversed(lines[:tiles]) if not line.strip().startswith("step "))  # (a hand-off
    assert header.strip().startswith(f"on the {choice.gpu} it was measured on ({sms[choice.gpu]} SMs"), out  # line:
    assert "no GPU here" in header  # step 22 leaving 4096³ to step 18's build)
    assert f"tiles: {gpu_tiles.BLOCK_M}×{gpu_tiles.BLOCK_N} →" in lines[tiles], out
    assert f"{sms[choice.gpu]} SMs ×" in lines[tiles]
    here = next((line for line in lines if line.strip().startswith("here, on the simulator:")), "")
    assert f"{local.BLOCK_M}×{local.BLOCK_N} →" in here and "SMs ×" not in here, out


def _gemm_steps(*args: str, env: dict | None = None, **kwargs):
    import os
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "gemm_steps", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})}, **kwargs)


@pytest.mark.parametrize("argv", [["info"], ["explain", "4096", "4096", "4096"]], ids=" ".join)
def test_a_reader_that_stops_early_gets_no_traceback(argv):
    """``gemm-steps info | head -2``: the reader closes the pipe before the command has written; the command ends
    quietly with 141 (128 + SIGPIPE, as a shell reports a Unix tool stopped by a closed pipe)."""
    process = _gemm_steps(*argv)
    process.stdout.close()  # the reader went away before the first line
    _, err = process.communicate(timeout=120)
    text = err.decode()
    assert "Traceback" not in text and "BrokenPipeError" not in text and "Exception ignored" not in text, text
    assert process.returncode == cli.BROKEN_PIPE, text


def test_a_forced_gpu_that_is_not_there_is_one_sentence_not_a_traceback():
    """``NUMBA_ENABLE_CUDASIM=0 gemm-steps info`` on a machine without a GPU: what is wrong and what to do."""
    from gemm_steps.toolkit.backend import _driver_device_count

    if _driver_device_count() > 0:
        pytest.skip("this machine has a GPU: NUMBA_ENABLE_CUDASIM=0 finds it")
    process = _gemm_steps("info", env={"NUMBA_ENABLE_CUDASIM": "0"})
    out, err = (text.decode() for text in process.communicate(timeout=120))
    assert process.returncode == 1, out + err
    assert "Traceback" not in err, err
    assert "no usable CUDA GPU or driver was found" in err and "NUMBA_ENABLE_CUDASIM=0 forces the GPU" in err, err


def test_bench_without_a_gpu_says_what_it_checks_and_that_out_writes_nothing(capsys, monkeypatch, tmp_path):
    """``bench --steps 5 9 --out FILE`` on the simulator: it names the two steps it checks (not "every step") and says
    that --out writes nothing (there is no benchmark without a GPU) rather than ignoring it."""
    if not gemm_steps.SIMULATOR:
        pytest.skip("on a GPU, bench benchmarks and --out is its results file")
    checked = []
    monkeypatch.setattr(cli, "run_verify", lambda steps, shapes: checked.append(steps) or 0)
    monkeypatch.setattr(cli, "newest_shipped_results", lambda: None)  # no plotting here
    out_file = tmp_path / "mine.json"
    status, out, err = run(["bench", "--steps", "5", "9", "--out", str(out_file)], capsys)
    assert status == 0 and checked == [["5", "9"]], err
    assert "every step" not in err and "checks steps 5 register_2d, 9 warp_tiling on" in err, err
    assert f"--out given, but there is no benchmark without a GPU: nothing is written to {out_file}" in err
    assert not out_file.exists()
    status, out, err = run(["bench"], capsys)
    assert "checks every step" in err and "--out" not in err


def test_explain_names_the_partial_tile_build_where_a_step_runs_it():
    """Steps 17 and 18 run a shape that is not whole tiles on their partial-tile build: one launch over every tile
    where K and N are multiples of 4, after copying A (K) or B (N) where one is not; whole tiles on the fast kernel."""
    from gemm_steps.toolkit.tuned import default_config

    step = gemm_steps.get_step("warp_specialized_3xtf32")
    config = default_config(step.module.SEARCH_SPACE)

    def kernel_line(m, n, k):
        return next(line for line in cli._tile_lines(step, config, 132, m, n, k) if line.startswith("kernel"))

    ragged = kernel_line(1000, 1000, 1000)
    assert ragged == ("kernel: the fast kernel's partial-tile build over all 64 tiles (the copy engine zero-fills what "
                      "of a box lies outside A or B; the store keeps to C)"), ragged
    odd_k = kernel_line(1000, 1000, 1001)
    assert odd_k.startswith("kernel: the fast kernel's partial-tile build over all 64 tiles"), odd_k
    assert odd_k.endswith("after A is copied into rows the copy engine can read (K or N not a multiple of 4)"), odd_k
    assert kernel_line(1024, 1024, 1024) == "kernels: the fast kernel on 64 full tiles, the guarded edge kernel on 0"


def test_explain_names_the_b_rows_build_where_step_17_reads_b_so():
    """Step 17 reads a B it cannot read as one map (N not a multiple of 4) by its rows mod 4 where M ≤ 1,024 (after
    copying A, where K is not a multiple of 4 either), and copies B above that."""
    from gemm_steps.toolkit.tuned import default_config

    step = gemm_steps.get_step("warp_specialized")
    config = default_config(step.module.SEARCH_SPACE)

    def kernel_line(m, n, k):
        return next(line for line in cli._tile_lines(step, config, 132, m, n, k) if line.startswith("kernel"))

    by_rows = kernel_line(108, 8075, 4396)
    assert by_rows.startswith("kernel: the fast kernel's B_ROWS_MOD_4 build over all"), by_rows
    assert "A is copied" not in by_rows and "A is copied" in kernel_line(108, 8075, 4395)
    assert "after B is copied into rows" in kernel_line(4096, 4095, 4096)


def test_explain_says_how_a_step_splits_k():
    """Steps 17 and 18 split K where their tiles are few: explain says into how many slices of how many k-tiles, and
    how many blocks that makes (step 17 at 900×640×14336: 20 tiles of 448 k-tiles, 6 slices on 132 SMs); and says
    none where the tiles fill the SMs."""
    from gemm_steps.toolkit.tuned import default_config

    step = gemm_steps.get_step("warp_specialized")
    config = default_config(step.module.SEARCH_SPACE)
    split = cli._tile_lines(step, config, 132, 900, 640, 14336)[-1]
    assert split.startswith("split-K: K in 6 slices of up to 75 k-tiles → 120 blocks"), split
    assert cli._tile_lines(step, config, 132, 4096, 4096, 4096)[-1].startswith("split-K: none"), split
    fp32 = gemm_steps.get_step("warp_tiling")
    assert not any(line.startswith("split-K") for line in cli._tile_lines(fp32, fp32.tiled.config, 132, 900, 640,
                                                                          14336))


def test_explain_says_when_step_22_hands_a_product_to_step_18_and_why_step_18_does_not_split_it():
    """At 2400×256×288 step 22 leaves the product to step 18's build (38 tiles: step 18 would split K), and step 18
    runs it in one slice: the 3 slices that would fill the SMs do not pay (``split_pays``). At 4096×8192×64 (2048
    tiles of 2 k-tiles) step 22 runs its own loop."""
    from gemm_steps.toolkit.tuned import default_config

    step = gemm_steps.get_step("warp_specialized_3xtf32_stream_k")
    config = default_config(step.module.SEARCH_SPACE)
    lines = cli._tile_lines(step, config, 132, 2400, 256, 288)
    assert lines[0].startswith("step 18's build runs this product, not step 22's own loop"), lines
    assert lines[-1].startswith("split-K: none — 3 slices would fill the SMs") and "split_pays" in lines[-1], lines
    assert not cli._tile_lines(step, config, 132, 4096, 8192, 64)[0].startswith("step 18's build"), lines
