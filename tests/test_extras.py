"""The install extras bring what the README says they do (a static check of pyproject.toml: no venv is built here).

``pip install -e ".[notebooks]"`` is the README's way to open the lessons without a GPU, and from lesson 4 on their
cells compile kernels to PTX with NVVM and ask ptxas (in nvJitLink) for the registers: without those wheels the
cells stop with ``PTXUnavailable … libnvrtc.so``.
"""

import re
from importlib import metadata
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib" if __import__("sys").version_info >= (3, 11) else "tomli")
packaging_requirements = pytest.importorskip("packaging.requirements")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: The CUDA wheels the compiled-code cells load (gemm_steps.harness.ptx: NVVM and NVRTC; ptxas ships in nvJitLink).
COMPILED_CODE_NEEDS = {"nvvm", "nvrtc", "nvjitlink"}


def requirements(names: list[str]):
    return [packaging_requirements.Requirement(text) for text in names]


def cuda_wheels(extra: str) -> set[str]:
    """The CUDA components an extra of this project brings through numba-cuda's own extras (read from numba-cuda's
    installed metadata: ``cuda-toolkit[cccl,cudart,nvrtc,nvvm]==13.*; extra == "cu13"`` and the like)."""
    found = set()
    for requirement in requirements(PROJECT["optional-dependencies"][extra]):
        if requirement.name != "numba-cuda":
            continue
        for text in metadata.requires("numba-cuda") or []:
            dependency = packaging_requirements.Requirement(text)
            if dependency.marker and any(dependency.marker.evaluate({"extra": e}) for e in requirement.extras):
                found |= set(dependency.extras) | {re.sub(r"^nvidia-|-cu\d+$", "", dependency.name)}
    return found


def test_the_notebooks_extra_brings_what_the_compiled_code_cells_load():
    brought = cuda_wheels("notebooks")
    assert COMPILED_CODE_NEEDS <= brought, f"the notebooks extra lacks {sorted(COMPILED_CODE_NEEDS - brought)}"


def test_the_dev_extra_compiles_the_same_way():
    assert COMPILED_CODE_NEEDS <= cuda_wheels("dev")


def test_the_extras_pin_numba_cuda_as_the_package_does():
    base = next(r for r in requirements(PROJECT["dependencies"]) if r.name == "numba-cuda")
    for extra, names in PROJECT["optional-dependencies"].items():
        for requirement in requirements(names):
            if requirement.name == "numba-cuda":
                assert requirement.specifier == base.specifier, extra


def cuda_flavours(extras: set[str]) -> set[str]:
    """Which of numba-cuda's cu12/cu13 wheel sets these extras of this project pull in."""
    return {flavour for extra in extras for r in requirements(PROJECT["optional-dependencies"][extra])
            if r.name == "numba-cuda" for flavour in r.extras & {"cu12", "cu13"}}


def test_every_install_of_the_docs_names_extras_that_exist_and_can_be_installed_together():
    """cu12 and cu13 wheels cannot be installed together: ".[cu12,notebooks]" would have no solution."""
    extras_known = set(PROJECT["optional-dependencies"])
    lines = 0
    for doc in (ROOT / "README.md", ROOT / "lessons" / "README.md"):
        for found in re.finditer(r'"\.\[([^\]]+)\]"', doc.read_text()):  # ".[cu13,notebooks]", in a command or not
            extras = {e.strip() for e in found.group(1).split(",")}
            assert extras <= extras_known, f"{doc.name}: {found.group(0)} names an extra pyproject.toml lacks"
            assert len(cuda_flavours(extras)) <= 1, f"{doc.name}: {found.group(0)} mixes CUDA 12 and 13 wheels"
            lines += 1
    assert lines, "no install line found in the READMEs"
