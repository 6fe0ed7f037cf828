"""The installed package needs nothing outside it: a wheel, built from the package alone and installed in a fresh
virtual environment, runs every ``gemm-steps`` command's cheap form and imports every module, from a folder with no
checkout in sight.

How the environment is made: the wheel is built (``pip wheel --no-deps --no-build-isolation``) from a copy of
``pyproject.toml``, ``README.md`` and ``gemm_steps/`` alone, so nothing else of the checkout can end up in it. A fresh
``python -m venv`` gets the wheel (``--no-deps``), and only then a ``.pth`` file that puts the packages of the
environment running this test (Numba, NumPy, matplotlib) on its path. That file lists their folders as plain paths
and copies the environment's other ``.pth`` hooks (numba-cuda's redirector) but not the editable install's, so
``gemm_steps`` comes from the wheel only. (``--system-site-packages`` would give the base interpreter's packages, not
this virtual environment's; and were the checkout's editable install visible, the test says so and fails.)

What a wheel does not have: the measurements in ``results/`` and ``experiments/results/`` (data of the checkout,
read from the checkout or else from the current directory, ``gemm_steps.harness.results_files``). The lesson helpers
say so where a file is missing; the commands here run without them.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Each command's cheap form, run in the installed package (the commands that time or tune only say --help).
COMMANDS = [["info"], ["readme-table"], ["diff", "8", "9"], ["exercise", "list"], ["explain", "64", "64", "64"],
            ["verify", "--steps", "1", "--shapes", "8x8x8"]]

#: Run inside the installed environment: where gemm_steps comes from, every module imported, every command.
PROBE = r"""
import contextlib, importlib, io, json, pkgutil, sys
import gemm_steps
from gemm_steps.course import cli
from gemm_steps.harness import results_files

out = {"file": gemm_steps.__file__, "path": sys.path, "meta_path": [repr(f) for f in sys.meta_path],
       "results_dir": str(results_files.RESULTS_DIR.resolve()), "modules": [], "commands": {}}
for info in pkgutil.walk_packages(gemm_steps.__path__, "gemm_steps."):
    if info.name != "gemm_steps.__main__":
        importlib.import_module(info.name)
        out["modules"].append(info.name)
commands = [[name, "--help"] for name in cli.parser()._subparsers._group_actions[0].choices] + json.loads(sys.argv[1])
for argv in commands:
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        try:
            status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code
    out["commands"][" ".join(argv)] = [status, text.getvalue()]
from gemm_steps.course import lesson_09  # a helper whose shipped file a wheel lacks: says so, shows nothing
text = io.StringIO()
with contextlib.redirect_stdout(text):
    out["missing"] = [lesson_09.k_loop_sass(), lesson_09.SASS_FILE, text.getvalue()]
print("PROBE" + json.dumps(out))
"""


def _outer_site_packages() -> list[str]:
    folders = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return [f for f in dict.fromkeys(folders) if Path(f).is_dir()]


def _bridge(venv_site: Path) -> None:
    """Let the new environment import this environment's packages, but not its editable gemm_steps."""
    lines = []
    for folder in _outer_site_packages():
        lines.append(folder)
        for pth in sorted(Path(folder).glob("*.pth")):
            text = pth.read_text(errors="replace")
            if "gemm_steps" in text or "__editable__" in pth.name or str(REPO) in text:
                continue
            shutil.copy(pth, venv_site / pth.name)
    (venv_site / "00-outer-environment.pth").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(REPO / "gemm_steps", source / "gemm_steps", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    quiet = dict(check=True, capture_output=True, text=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp / "dist"), str(source)], **quiet)
    wheel = next((tmp / "dist").glob("gemm_steps-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], **quiet)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "--no-compile", "-q", str(wheel)], **quiet)
    venv_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                    **quiet).stdout.strip())
    _bridge(venv_site)
    work = tmp / "elsewhere"  # a folder with no checkout above it
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(NUMBA_ENABLE_CUDASIM="1", MPLBACKEND="Agg", PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    done = subprocess.run([str(python), "-c", PROBE, json.dumps(COMMANDS)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.split("PROBE", 1)[1])
    script = subprocess.run([str(venv / "bin" / "gemm-steps"), "--help"], cwd=work, env=env, capture_output=True,
                            text=True, timeout=120)
    return {"wheel": wheel, "venv": venv, "work": work, "probe": probe, "script": script}


def test_the_wheel_holds_the_package_and_its_data(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    assert "gemm_steps/harness/dispatch.json" in names
    assert {n.split("/")[0] for n in names} <= {"gemm_steps", installed["wheel"].name.split("-")[0] + "-"
                                                + installed["wheel"].name.split("-")[1] + ".dist-info"}
    shipped = {p.relative_to(REPO).as_posix() for p in (REPO / "gemm_steps").rglob("*.py")}
    assert shipped <= set(names), sorted(shipped - set(names))


def test_gemm_steps_comes_from_the_wheel_not_the_checkout(installed):
    probe = installed["probe"]
    assert Path(probe["file"]).resolve().is_relative_to(installed["venv"].resolve()), probe["file"]
    assert not any(Path(p).resolve() == REPO for p in probe["path"] if p), probe["path"]
    assert not any("editable" in f.lower() and "gemm" in f.lower() for f in probe["meta_path"]), probe["meta_path"]
    assert Path(probe["results_dir"]) == (installed["work"] / "results").resolve()


def test_every_module_imports(installed):
    modules = installed["probe"]["modules"]
    expected = {"gemm_steps." + p.relative_to(REPO / "gemm_steps").with_suffix("").as_posix().replace("/", ".")
                for p in (REPO / "gemm_steps").rglob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    assert expected <= set(modules), sorted(expected - set(modules))
    assert {f"gemm_steps.course.lesson_{n:02d}" for n in (5, 7, 9, 10, 11)} <= set(modules)


def test_a_helper_says_where_a_shipped_file_is_missing(installed):
    found, name, said = installed["probe"]["missing"]
    assert found is None and name in said


def test_every_command_runs(installed):
    commands = installed["probe"]["commands"]
    script = installed["script"]
    assert script.returncode == 0 and "readme-table" in script.stdout, script.stderr
    for name in ("info", "verify", "bench", "plot", "tune", "diff", "explain", "exercise", "readme-table"):
        assert commands[f"{name} --help"][0] == 0, commands[f"{name} --help"]
    for argv in COMMANDS:
        status, text = commands[" ".join(argv)]
        assert status == 0, (argv, text[-2000:])
    assert "@@" in commands["diff 8 9"][1]
    assert "PASS" in commands["verify --steps 1 --shapes 8x8x8"][1].upper()
