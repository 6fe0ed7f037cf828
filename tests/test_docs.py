"""Documents that must not drift from the code: the README's steps table and its test command (which CI runs), and
docs/architecture.md and docs/adding-a-step.md (their paths, names and table of step imports)."""

from __future__ import annotations

import ast
import importlib
import inspect
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


# -- docs/architecture.md and docs/adding-a-step.md describe the code as it is (issue 38, deliverable 6) ---------------
#
# Three checks a reader can rely on: the table of step files that import other steps is the step files' real imports
# (and the count in the sentence above it), every repository path the two pages mention exists, and every
# `module.name` or `Class.name` they put in code spans resolves in the package.

HOUSE_DOCS = ("docs/architecture.md", "docs/adding-a-step.md")
PACKAGE = REPO / "gemm_steps"
STEP_FILES = REPO / "gemm_steps" / "steps"
#: Where a path the docs mention may be rooted: the repository, the package (``toolkit/tiles.py``), docs/.
PATH_ROOTS = (REPO, PACKAGE, REPO / "docs")
PATH = re.compile(r"(?<![\w./~-])((?:gemm_steps|tests|lessons|scripts|docs|predictions|notebooks|results|experiments"
                  r"|harness|toolkit|steps|course)/[^\s`'\"(),;:|\]]*)")
#: A placeholder, not a path: ``lessons/NN_<name>.py``, ``results/tuning-*.json``, ``results/…``.
PLACEHOLDER = re.compile(r"[<>*…]|NN|\bN\b")
DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
FILE_SUFFIXES = {"py", "md", "json", "ipynb", "txt", "png", "toml"}
#: First parts of dotted names that are not the package's: libraries, PTX mnemonics, a parameter in quoted code, the
#: placeholder `module.name`. Any other unknown first part is a misspelt module and fails.
NOT_OURS = {"cuda", "threading", "functools", "numba", "np", "os", "cp", "mma", "config", "module"}
NUMBER_WORDS = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def _text(doc: str) -> str:
    return (REPO / doc).read_text()


def _without_code_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def path_problems(text: str) -> list[str]:
    """Every repository path in ``text`` (placeholders aside) and every relative Markdown link that names no file."""
    problems = []
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if PLACEHOLDER.search(path):
            continue
        if not any((root / path).exists() for root in PATH_ROOTS):
            problems.append(f"no file {path}")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        found = (REPO / "docs" / file).resolve()
        if not found.exists():
            problems.append(f"a link to {target}, which is not there")
        elif anchor and found.suffix == ".md" and anchor not in _anchors(found.read_text()):
            problems.append(f"a link to {target}: {file} has no heading #{anchor}")
    return problems


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.+)$", _without_code_blocks(markdown), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _short_names() -> dict[str, str]:
    """Each package module by its last name (``tiles`` → ``gemm_steps.toolkit.tiles``), those that are unique; and
    the tests' helper modules the docs name."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.stem == "__init__":
            continue
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        seen.setdefault(path.stem, []).append(module)
    names = {short: modules[0] for short, modules in seen.items() if len(modules) == 1}
    names["cell_count"] = "cell_count"  # tests/cell_count.py (tests/ is on the path of the test run)
    return names


def _classes(short_names: dict[str, str]) -> dict[str, str]:
    """Each class defined at the top level of a package module, by name → its module (unique names only)."""
    seen: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                seen.setdefault(node.name, set()).add(module)
    return {name: next(iter(modules)) for name, modules in seen.items() if len(modules) == 1}


def _has(owner, name: str) -> bool:
    """``owner.name`` exists: an attribute, or (for a class of the package) one its methods assign to ``self``."""
    if hasattr(owner, name):
        return True
    if inspect.isclass(owner):
        return any(c.__module__.startswith("gemm_steps") and re.search(rf"\bself\.{name}\s*=", inspect.getsource(c))
                   for c in owner.__mro__)
    return False


def name_problems(text: str) -> tuple[list[str], int]:
    """Every dotted name in a code span of ``text`` whose first part is a package module, a package class or
    ``gemm_steps``, followed attribute by attribute while the value is a module or a class; the problems and how
    many names were checked. Names of other libraries (``cuda.core.launch``, ``threading.local``: :data:`NOT_OURS`)
    are not checked; a first part that is neither is a problem."""
    modules = _short_names()
    classes = _classes(modules)
    problems, checked = [], 0
    spans = re.findall(r"`([^`\n]+)`", _without_code_blocks(text))
    for dotted in sorted({d for span in spans for d in DOTTED.findall(span)}):
        parts = dotted.split(".")
        if parts[-1] in FILE_SUFFIXES:
            continue
        if parts[0] == "gemm_steps":
            owner, rest = importlib.import_module("gemm_steps"), parts[1:]
        elif parts[0] in modules:
            owner, rest = importlib.import_module(modules[parts[0]]), parts[1:]
        elif parts[0] in classes:
            owner, rest = getattr(importlib.import_module(classes[parts[0]]), parts[0]), parts[1:]
        elif parts[0] in NOT_OURS:
            continue
        else:
            problems.append(f"`{dotted}`: {parts[0]} is no module or class of the package (nor in NOT_OURS)")
            continue
        checked += 1
        for part in rest:
            if not _has(owner, part):
                problems.append(f"`{dotted}`: {getattr(owner, '__name__', owner)} has no {part}")
                break
            owner = getattr(owner, part, None)
            if not (inspect.ismodule(owner) or inspect.isclass(owner)):
                break
    return problems, checked


def actual_step_imports() -> dict[str, set[str]]:
    """{step file's stem: the other steps it imports}, for every step file that imports one, read from its source."""
    steps = {p.stem for p in STEP_FILES.glob("*.py")} - {"__init__"}
    found = {}
    for stem in sorted(steps):
        imported = set()
        for node in ast.walk(ast.parse((STEP_FILES / f"{stem}.py").read_text())):
            if isinstance(node, ast.ImportFrom):
                absolute = (node.module or "").startswith("gemm_steps.steps")
                if node.level == 1 or absolute:
                    within = (node.module or "").removeprefix("gemm_steps.steps").lstrip(".") if absolute else (
                        node.module or "")
                    imported |= {within.split(".")[0]} if within else {alias.name for alias in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name.split(".")[2] for a in node.names if a.name.startswith("gemm_steps.steps.")}
        imported = (imported & steps) - {stem}
        if imported:
            found[stem] = imported
    return found


def step_import_problems(text: str) -> list[str]:
    """The table between the ``step-imports`` markers against :func:`actual_step_imports`: the same files, each with
    the same imports and its step number; and the count in the sentence before it."""
    from gemm_steps.steps import COURSE

    if "<!-- step-imports" not in text:
        return ["no step-imports table"]
    table = text.split("<!-- step-imports", 1)[1].split("<!-- /step-imports -->", 1)[0]
    documented, problems = {}, []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        row = re.fullmatch(r"`(\w+)\.py` \((\d+)\)", cells[0]) if len(cells) >= 2 else None
        if row is None:
            continue
        stem, number = row.group(1), int(row.group(2))
        documented[stem] = set(re.findall(r"`(\w+)`", cells[1]))
        if stem not in COURSE or COURSE.index(stem) + 1 != number:
            problems.append(f"{stem}.py is not step {number}")
    actual = actual_step_imports()
    for stem in sorted(set(documented) | set(actual)):
        if documented.get(stem) != actual.get(stem):
            problems.append(f"{stem}.py imports {sorted(actual.get(stem, ()))}, the table says "
                            f"{sorted(documented.get(stem, ()))}")
    count = re.search(r"(\w+) do; the other (\w+) import only the toolkit", text)
    if count is None:
        problems.append("no sentence 'N do; the other M import only the toolkit'")
    else:
        said = [NUMBER_WORDS.get(word.lower(), -1) for word in count.groups()]
        if said != [len(actual), len(COURSE) - len(actual)]:
            problems.append(f"'{count.group(0)}': {len(actual)} step files import steps, "
                            f"{len(COURSE) - len(actual)} do not")
    return problems


def test_the_step_import_table_is_the_step_files_imports():
    problems = step_import_problems(_text("docs/architecture.md"))
    assert not problems, "docs/architecture.md's step-import table is stale:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", HOUSE_DOCS)
def test_every_path_the_doc_names_exists(doc):
    problems = path_problems(_text(doc))
    assert not problems, f"{doc} names what is not there:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", HOUSE_DOCS)
def test_every_module_and_class_name_the_doc_names_exists(doc):
    problems, checked = name_problems(_text(doc))
    assert checked >= 15, f"{doc}: only {checked} names checked; did the check stop recognising them?"
    assert not problems, f"{doc} names what the package does not have:\n" + "\n".join(problems)


def test_the_house_checks_can_fail():
    """Each check finds a planted mistake: a missing file, a wrong name, a step import the table lacks."""
    assert path_problems("see `toolkit/no_such_module.py` and [x](no-such-page.md)") == [
        "no file toolkit/no_such_module.py", "a link to no-such-page.md, which is not there"]
    assert path_problems("[x](architecture.md#no-such-heading)")
    assert not path_problems("`lessons/NN_<name>.py`, `results/tuning-*.json`, `toolkit/tiles.py`")
    problems, checked = name_problems("`TiledKernels.no_such_method`, `tuned.no_such_rule`, `tiles.TiledKernels.launch`,"
                                      " `cuda.core.launch`, `launch_plan.recording`")
    assert checked == 3 and len(problems) == 3, problems
    text = _text("docs/architecture.md")
    row = re.search(r"^\| `(\w+)\.py` \((\d+)\) \|[^|]*\|", text, re.M)  # the table's first row
    stem, number = row.group(1), int(row.group(2))
    assert step_import_problems(text.replace(row.group(0), f"| `{stem}.py` ({number}) | |"))  # its imports gone
    assert step_import_problems(text.replace(f"`{stem}.py` ({number})", f"`{stem}.py` ({number + 1})"))
    assert step_import_problems(re.sub(r"\w+ do; the other", "Two do; the other", text))
