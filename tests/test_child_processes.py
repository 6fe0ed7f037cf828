"""Child processes start in their homes only, read from the source.

The one Python in GPU mode that compiles for a process on the simulator is the package's worker,
:mod:`gemm_steps.harness.gpu_mode` (the PTX checks, the exercise grader, the lessons and these tests all call it). Any
other module of the package, of ``tests/`` or of ``lessons/`` that can start a process — ``subprocess``,
``multiprocessing``, a process pool, ``os.fork``/``os.system``/``os.spawn*``/``os.exec*``/``posix_spawn``, ``pty``,
asyncio's subprocesses, loky or joblib — is listed below with what it starts and why that is not the worker's job;
and outside the worker only :data:`GPU_MODE_ALLOWED` gives a child ``NUMBA_ENABLE_CUDASIM="0"``. ``scripts/`` and
``experiments/`` are a checkout's tools, not scanned: they measure compiles and GPUs in processes of their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("gemm_steps", "tests", "lessons")
HOME = "gemm_steps/harness/gpu_mode.py"

#: Files that start a process, each with what it starts and why.
ALLOWED = {
    HOME: "the GPU-mode worker: the one child Python that compiles for a process on the simulator",
    # the package: command-line tools, not Python
    "gemm_steps/harness/environment.py": "nvidia-smi, for the GPU's clocks and driver in a benchmark's record",
    "gemm_steps/course/compiled.py": "a CUDA toolkit's ptxas binary (and its --version), for a lesson's registers",
    "gemm_steps/course/sass.py": "ptxas and nvdisasm binaries, for a kernel's SASS",
    "gemm_steps/course/predictions.py": "git, for when a prediction file was committed",
    # tests of what a fresh process does
    "tests/test_cli.py": "the gemm-steps command as a user runs it (exit status, output, a forced GPU backend)",
    "tests/test_exercises.py": "the grader in a fresh Python, for what its exit leaves (warnings, a running child)",
    "tests/test_first_hour.py": "a learner's first commands, each in a fresh Python as the README gives them",
    "tests/test_mbarrier_ops.py": "a kernel that deadlocks on a GPU, in a Python that may have to be killed",
    "tests/test_package_layers.py": "a fresh Python that imports the lesson helpers, for what their import loads",
    "tests/test_readable_kernels.py": "a step run in a fresh Python (nothing imported before helps it)",
    "tests/test_run_output.py": "a pytest run under pytest-xdist, for what its workers report",
    "tests/test_tile_configs.py": "a fresh Python told another GPU's name, for the tiles it builds at import",
    "tests/test_wheel.py": "pip (the wheel, a venv) and the installed command, outside the checkout",
}
#: Files outside the worker that may give a child NUMBA_ENABLE_CUDASIM="0", and why.
GPU_MODE_ALLOWED = {
    "tests/test_cli.py": "the command's message when NUMBA_ENABLE_CUDASIM=0 forces a GPU on a machine without one",
}

SPAWNING_MODULES = {"subprocess", "multiprocessing", "pty", "loky", "joblib"}
SPAWNING_NAMES = {"ProcessPoolExecutor", "create_subprocess_exec", "create_subprocess_shell"}
SPAWNING_OS = {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "spawnl", "spawnle", "spawnlp",
               "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "execl", "execle", "execlp", "execlpe", "execv",
               "execve", "execvp", "execvpe"}


def spawns(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, what) for each way ``source`` can start a process."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name.split(".")[0] in SPAWNING_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            top = node.module.split(".")[0]
            if top in SPAWNING_MODULES:
                found.append((node.lineno, f"from {node.module} import …"))
            elif top == "os":
                found += [(node.lineno, f"from os import {a.name}") for a in node.names if a.name in SPAWNING_OS]
            else:
                found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names
                          if a.name in SPAWNING_NAMES]
        elif isinstance(node, ast.Attribute):
            if node.attr in SPAWNING_NAMES:
                found.append((node.lineno, node.attr))
            elif node.attr in SPAWNING_OS and isinstance(node.value, ast.Name) and node.value.id == "os":
                found.append((node.lineno, f"os.{node.attr}"))
        elif isinstance(node, ast.Name) and node.id in SPAWNING_NAMES:
            found.append((node.lineno, node.id))
    return sorted(set(found))


def sets_gpu_mode(source: str, filename: str = "<source>") -> list[int]:
    """Lines giving NUMBA_ENABLE_CUDASIM the value "0" in a dict or as a keyword (a child's environment)."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Dict):
            lines += [key.lineno for key, value in zip(node.keys, node.values)
                      if isinstance(key, ast.Constant) and key.value == "NUMBA_ENABLE_CUDASIM"
                      and isinstance(value, ast.Constant) and value.value == "0"]
        elif isinstance(node, ast.keyword) and node.arg == "NUMBA_ENABLE_CUDASIM":
            if isinstance(node.value, ast.Constant) and node.value.value == "0":
                lines.append(node.value.lineno)
    return lines


def sources() -> dict[str, str]:
    return {str(path.relative_to(REPO)): path.read_text() for root in SCANNED
            for path in sorted((REPO / root).rglob("*.py")) if "__pycache__" not in path.parts}


def test_no_process_starts_outside_its_home():
    found = {name: spawns(text, name) for name, text in sources().items()}
    strays = {name: where for name, where in found.items() if where and name not in ALLOWED}
    assert not strays, ("these files start processes: a Python in GPU mode goes through gemm_steps.harness.gpu_mode "
                        f"(call/submit); anything else is listed in ALLOWED with why: {strays}")
    stale = sorted(name for name in ALLOWED if not found.get(name))
    assert not stale, f"ALLOWED lists files that start no process (any more): {stale}"


def test_only_the_worker_starts_a_python_in_gpu_mode():
    strays = {name: lines for name, text in sources().items()
              if name != HOME and name not in GPU_MODE_ALLOWED and (lines := sets_gpu_mode(text, name))}
    assert not strays, f"a child with NUMBA_ENABLE_CUDASIM=0 outside gemm_steps.harness.gpu_mode: {strays}"


def test_the_scan_finds_each_way_to_start_a_process():
    planted = '''
import os
import subprocess as sp
from multiprocessing import Pool
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from os import fork

def later():
    import loky
    os.system("true")
    os.execvp("python", ["python"])
    return asyncio.create_subprocess_exec("python")

env = {"NUMBA_ENABLE_CUDASIM": "0"}
also = dict(NUMBA_ENABLE_CUDASIM="0")
simulator = {"NUMBA_ENABLE_CUDASIM": "1"}
'''
    kinds = [what for _, what in spawns(planted)]
    assert kinds == ["import subprocess", "from multiprocessing import …",
                     "from concurrent.futures import ProcessPoolExecutor", "from os import fork", "import loky",
                     "os.system", "os.execvp", "create_subprocess_exec"], kinds
    assert sets_gpu_mode(planted) == [14, 15]
    assert not spawns("import os\nfrom concurrent.futures import ThreadPoolExecutor\nos.getpid()\n")
