"""One results catalogue (issue 38): a results file is named in gemm_steps/harness/results_files.py and nowhere else
in the package or the lessons' code, a lesson's prose names only files the catalogue has, and every name there is a
file the checkout ships (or, for a glob, matches one).

The rules, which read the code (``ast``) and the lessons' prose (their comments, which are the notebooks' Markdown
cells), not lines of text:

* **Code** — every string literal of the package (outside results_files.py) and of ``lessons/*.py`` and
  ``lessons/deep_dives/*.py``, an f-string read with each ``{…}`` as ``{}`` and implicit concatenation joined (as
  Python joins it). A literal fails if it holds a results file's prefix (:data:`PREFIXES`, then ``-``) followed by
  name characters (letters, digits, ``_ . * / -`` and f-string holes) that

  - end in a results file's extension (``"experiment-fma-order-*.json"``, ``f"{folder}/ncu-{step}.txt"``), or
  - run into an f-string hole (``f"shapes-{gpu}-20*.json"``, ``f"bench-{gpu}"``), or
  - run to the literal's end: a name cut for ``+`` (``"experiment-" + name``), or a whole literal that is one such
    word (a results folder, ``"ncu-steps-nvidia-h100"``).

  So a name written, built or half-built outside the catalogue fails; prose in a string (a help text's
  ``results/bench-<gpu>-<date>.json``, a word such as "reference-counted") does not. Docstrings (bare string
  statements) are documentation, not names the code uses, and are left to the prose rule below for the lessons (the
  package's docstrings and comments cite files as provenance, and are not checked).
* **Lessons' prose** — a results file name in a lesson's comment (``results/tuning-unrolled-<gpu>.json`` tells a
  learner where a command writes) is allowed only if the catalogue has it: the name, with a placeholder (``<gpu>``,
  ``…``) read as ``*``, is one of the catalogue's values. A renamed or removed file then fails here, not in a reader.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from gemm_steps.harness import results_files

PACKAGE = Path(results_files.__file__).resolve().parents[1]
REPO = PACKAGE.parent
LESSONS = sorted((REPO / "lessons").glob("*.py")) + sorted((REPO / "lessons" / "deep_dives").glob("*.py"))
#: How every results file's name begins (then ``-``): a measurement's kind.
PREFIXES = ("bench", "shapes", "tuning", "experiment", "compile-times", "numerics", "reference",
            "simulator-cost-model", "ncu", "held-out")
EXTENSIONS = r"\.(?:json|txt|log|md|png)"
_PREFIX = "(?:" + "|".join(re.escape(p) for p in PREFIXES) + ")"
#: A results name in code: a prefix, then name characters and f-string holes (``{}``).
CODE_NAME = re.compile(rf"(?<![\w-]){_PREFIX}-(?:[\w.*/-]|\{{\}})*")
#: A results file named in prose: a prefix, name characters and placeholders, an extension.
PROSE_NAME = re.compile(rf"(?<![\w-])({_PREFIX}-[\w.*<>…/-]*?{EXTENSIONS})(?![\w])")
PLACEHOLDER = re.compile(r"<[^<>]*>|…")


def catalogue() -> dict[str, str]:
    """The catalogue: every upper-case string constant of results_files (file names, globs, one folder)."""
    return {name: value for name, value in vars(results_files).items() if name.isupper() and isinstance(value, str)}


def _literal(node: ast.AST) -> str | None:
    """A string literal's text, an f-string's with each hole as ``{}``; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return None


def code_names(text: str) -> list[str]:
    """The results names a literal holds, written or built (the rules in the module docstring)."""
    found = []
    for match in CODE_NAME.finditer(text):
        name = match.group(0).rstrip(".")
        if re.search(rf"{EXTENSIONS}$", name) or "{}" in name or match.end() == len(text):
            found.append(match.group(0))
    return found


def names_in_code(source: str) -> list[tuple[int, str]]:
    """(line, name) of each results name in a module's string literals, docstrings aside."""
    tree = ast.parse(source)
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    inside_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    found = []
    for node in ast.walk(tree):
        text = None if id(node) in docstrings | inside_fstrings else _literal(node)
        if text is not None:
            found += [(node.lineno, name) for name in code_names(text)]
    return sorted(found)


def names_in_prose(source: str) -> list[tuple[int, str]]:
    """(line, name) of each results file named in a module's comments."""
    return [(token.start[0], match.group(1))
            for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT
            for match in PROSE_NAME.finditer(token.string)]


def _where(path: Path, line: int, name: str) -> str:
    return f"{path.relative_to(REPO)}:{line}: {name}"


def test_no_results_file_is_named_outside_the_catalogue():
    found = [_where(path, line, name) for path in sorted(PACKAGE.rglob("*.py")) if path.name != "results_files.py"
             for line, name in names_in_code(path.read_text())]
    assert not found, "results files named outside gemm_steps/harness/results_files.py:\n" + "\n".join(found)


def test_lessons_read_results_names_from_the_catalogue():
    found = [_where(path, line, name) for path in LESSONS for line, name in names_in_code(path.read_text())]
    assert not found, "lessons that type a results file's name (read it from results_files):\n" + "\n".join(found)


def test_lessons_prose_names_only_catalogued_files():
    values = set(catalogue().values())
    found = [_where(path, line, name) for path in LESSONS for line, name in names_in_prose(path.read_text())
             if PLACEHOLDER.sub("*", name) not in values]
    assert not found, "lessons name results files the catalogue does not have:\n" + "\n".join(found)


def test_the_check_finds_a_name():
    def names(code):
        return [name for _, name in names_in_code(code)]

    assert names('RUN = "experiment-producer-order-nvidia-h200.json"')
    assert names("results_files.newest_matching('experiment-matmul-held-out-*.json')")
    assert names('find(f"experiment-call-overhead{run}-nvidia-h100.json")')
    assert names('newest_matching(f"shapes-{file_slug(gpu)}-20*.json")')
    assert names('find(f"{folder}/ncu-{step}.txt")')
    assert names('stem = f"bench-{gpu}-{date}"')
    assert names('find("experiment-" + name + ".json")')
    assert names('find("experiment-pipelining" "-nvidia-h200.json")')
    assert names('REPORTS = "ncu-steps-nvidia-h100"')
    assert not names("RUN = results_files.EXPERIMENT_PRODUCER_ORDER_NVIDIA_H200")
    assert not names('HELP = "the results file (default: results/bench-<gpu>-<date>.json)"')
    assert not names('say("a reference-counted buffer")')
    assert not names('def f():\n    """Reads ``experiment-fma-order-*.json``."""')
    assert [name for _, name in names_in_prose("# writes `results/tuning-unrolled-<gpu>.json`, then …\nx = 1\n")] \
        == ["tuning-unrolled-<gpu>.json"]


def test_every_catalogued_file_is_shipped():
    if not results_files._from_checkout():
        pytest.skip("a wheel install ships no results")
    assert len(catalogue()) >= 40
    folders = results_files.folders()
    missing = [value for value in catalogue().values()  # a file, a glob that matches one, or a folder of them
               if not any(list(folder.glob(value)) if "*" in value else (folder / value).exists()
                          for folder in folders)]
    assert not missing, f"catalogued but not in results/ or experiments/results/: {missing}"
