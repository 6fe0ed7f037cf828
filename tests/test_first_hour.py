"""A newcomer's first hour: the README's snippet finishes in seconds, import order does not matter, a product too big
for the simulator is refused at once with what to do, and steps are found by name, number or number-as-text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gemm_steps
from gemm_steps.harness import simulator

REPO = Path(__file__).resolve().parent.parent
simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="about the simulator (this machine has a GPU)")


def _python(code: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=REPO)


def readme_snippet() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Using the kernels"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@simulator_only
def test_readme_snippet_runs_in_seconds_on_the_simulator():
    start = time.perf_counter()
    run = _python(readme_snippet(), timeout=300)
    took = time.perf_counter() - start
    assert run.returncode == 0, run.stderr[-3000:]
    assert "def warp_tiling_kernel" in run.stdout and "acc_0_0" in run.stdout  # source() and generated_source()
    assert took < 120, f"the README's first snippet took {took:.0f} s on the simulator"


@simulator_only
@pytest.mark.parametrize("first", ["import numba", "import numpy, numba", "from numba import config"])
def test_importing_numba_first_still_selects_the_simulator(first):
    run = _python(f"{first}\nimport numpy as np, gemm_steps\n"
                  "c = gemm_steps.get_step(3)(np.ones((5, 4), np.float32), np.ones((4, 3), np.float32))\n"
                  "print(gemm_steps.SIMULATOR, float(c.sum()))\nprint(gemm_steps.backend())")
    assert run.returncode == 0, run.stderr[-3000:]
    flag, total = run.stdout.splitlines()[0].split()
    assert flag == "True" and float(total) == 60.0
    assert "simulator" in run.stdout.lower()


@simulator_only
def test_importing_numba_cuda_first_stops_with_one_clear_sentence():
    run = _python("import numba.cuda\nimport gemm_steps")
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("gemm_steps.toolkit.backend.BackendError"), last
    assert "restart Python and import gemm_steps before numba.cuda" in last


@simulator_only
def test_a_product_too_big_for_the_simulator_is_refused_at_once():
    a = np.ones((1024, 512), np.float32)
    b = np.ones((512, 768), np.float32)
    start = time.perf_counter()
    with pytest.raises(simulator.SimulatorTooSlow) as refused:
        gemm_steps.matmul(a, b)
    assert time.perf_counter() - start < 5
    message = str(refused.value)
    for needed in ("1024×512 @ 512×768", "simulator", "GPU", "GEMM_STEPS_SIMULATOR_LIMIT", "fit"):
        assert needed in message, message


@simulator_only
def test_the_limit_can_be_raised_and_slow_products_are_announced(monkeypatch, capsys):
    step = gemm_steps.get_step("naive")
    monkeypatch.setenv("GEMM_STEPS_SIMULATOR_LIMIT", "0")
    simulator.check(step, 4096, 4096, 4096)  # no limit: allowed (not run here), but announced
    assert "about" in capsys.readouterr().err
    monkeypatch.setenv("GEMM_STEPS_SIMULATOR_LIMIT", "soon")
    with pytest.raises(ValueError, match="number of seconds"):
        simulator.check(step, 8, 8, 8)


def test_the_largest_square_that_fits_is_within_the_limit():
    for step in gemm_steps.steps():
        side = simulator.largest_square(step.config, 60)
        assert simulator.estimated_seconds(step.config, side, side, side) <= 60
        assert simulator.estimated_seconds(step.config, side + 1, side + 1, side + 1) > 60 or side >= 1 << 16


@pytest.mark.parametrize("key", [3, "3", " 3", "shared_memory"])
def test_steps_are_found_by_name_number_or_number_as_text(key):
    assert gemm_steps.get_step(key).name == "shared_memory"


def test_an_unknown_step_lists_the_steps():
    with pytest.raises(KeyError, match="1=naive"):
        gemm_steps.get_step("99")


def test_every_step_has_its_own_colour_in_the_plots():
    from matplotlib.colors import to_rgb

    from gemm_steps.course.plots import step_colour

    colours = {step.number: to_rgb(step_colour(step.number)) for step in gemm_steps.steps()}
    for a in colours:
        assert sum(colours[a]) > 0.3, f"step {a}'s colour is too close to cuBLAS's black"
        for b in colours:
            if a < b:
                distance = sum((x - y) ** 2 for x, y in zip(colours[a], colours[b])) ** 0.5
                assert distance > 0.25, f"steps {a} and {b} have colours too alike ({distance:.2f} apart in RGB)"


def test_plot_titles_fit_and_say_the_cuda_and_cublas_versions():
    import matplotlib

    matplotlib.use("Agg")
    from helpers import synthetic_results

    from gemm_steps.course import plots

    results = synthetic_results(names=["shared_memory", "persistent", "stream_k"])
    results["environment"].update(driver_cuda_version="13.0", cublas_version=130100, smi_driver_version="580.1")
    figure = plots.plot_tflops_vs_size(results)
    title = figure.axes[0].get_title()
    assert "CUDA 13.0" in title and "cuBLAS 13.1.0" in title
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    box = figure.axes[0].title.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= figure.bbox.width, "the title runs past the figure's edge"
    assert figure.axes[0].get_yscale() == "log", "slow steps vanish on a linear axis"


def test_the_shipped_benchmarks_plot_titles_fit_beside_its_legend():
    """The README's plot of every step: the legend of every step and both cuBLAS modes leaves the axes — which the
    title is centred on — narrower than the figure, and a real GPU's label is long."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from gemm_steps.course import plots
    from gemm_steps.harness import results_files

    found = results_files.newest_benchmark()
    assert found is not None, "no course benchmark in results/"
    figure = plots.plot_tflops_vs_size(found[1])
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    box = figure.axes[0].title.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= figure.bbox.width, f"the title runs past the figure's edge: {box}"


@pytest.mark.parametrize("text, says", [("0x5x5", "M = 0 makes an empty product"), ("5x5", "has 2 part(s)"),
                                        ("5x5xk", "K = 'k' is not a whole number"), ("4x4x0", "K = 0")])
def test_a_bad_shape_on_the_command_line_says_what_is_wrong(text, says):
    import argparse

    from gemm_steps.course.cli import shape

    with pytest.raises(argparse.ArgumentTypeError) as refused:
        shape(text)
    assert says in str(refused.value)
    assert shape("3x4×5") == (3, 4, 5)


@pytest.mark.parametrize("content, says", [("not json at all", "is not JSON"), ('{"a": 1}', "not a results file"),
                                           (b"\x89PNG\r\n\x1a\n\x00\xff", "not a text file")])
def test_plot_names_a_wrong_file_in_plain_words(tmp_path, content, says):
    from gemm_steps.course.cli import UserError, load_results

    path = tmp_path / "given.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(UserError) as refused:
        load_results(path)
    assert says in str(refused.value) and "Expecting" not in str(refused.value)


@simulator_only
def test_a_slow_product_that_is_allowed_reports_its_progress(monkeypatch, capsys):
    monkeypatch.setattr(simulator, "ANNOUNCE_S", 0.0)  # treat this small product as a slow one
    monkeypatch.setattr(simulator, "ROW_SLICE_MULTIPLE", 8)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((40, 6), dtype=np.float32), rng.standard_normal((6, 5), dtype=np.float32)
    c = gemm_steps.get_step("coalesced")(a, b)
    err = capsys.readouterr().err
    assert "about" in err and "rows 40/40 done" in err and err.count("rows ") == 5, err
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@simulator_only
def test_steps_that_schedule_the_whole_grid_are_not_sliced(monkeypatch, capsys):
    """A stream-K split depends on the tile count: slices would each run a schedule of their own."""
    monkeypatch.setattr(simulator, "ANNOUNCE_S", 0.0)
    monkeypatch.setattr(simulator, "ROW_SLICE_MULTIPLE", 8)
    launches = []
    step = gemm_steps.get_step("stream_k")
    monkeypatch.setattr(step, "launch", lambda a, b, c, stream: launches.append(a.shape))
    a, b = np.ones((40, 6), dtype=np.float32), np.ones((6, 5), dtype=np.float32)
    simulator.launch_with_progress(step, a, b, np.empty((40, 5), dtype=np.float32), 0)
    assert launches == [(40, 6)], "stream-K's product was cut into slices"
    assert "rows " not in capsys.readouterr().err
