"""The predictions the lessons quote, from ``predictions/NN.json`` (one file per lesson), and when each was written.

A prediction is a model's number written down before the run it predicts. The lessons do not compute their
predictions afresh from later records: each quotes the text as it was first committed (its file and that commit
are in the JSON), the model's inputs and the predicted number or range, and names the results record it is compared
with. ``before_the_run`` says whether git shows the text committed before that record's run;
``tests/test_predictions.py`` checks every entry against git (the text is in the file at that commit and not before
it, the commit's date, and ``before_the_run`` against the record's date), so a lesson that calls something a
prediction made before the run can be trusted to, and one that cannot be shown so says it.

Like ``results/``, ``predictions/`` is the checkout's (or the current directory's, for an installed package:
:data:`gemm_steps.harness.results_files.ROOT`); where it is missing, :func:`load` returns None. Numbers and small
dataclasses only: the words around them are the lessons'.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from gemm_steps.harness import results_files

from .display import MarkdownTable, table


def folder() -> Path:
    """Where the prediction files are: ``predictions/`` beside ``results/``."""
    return results_files.ROOT / "predictions"


@dataclass(frozen=True)
class Prediction:
    lesson: int
    id: str
    what: str
    source: str           # the file the text was first written in
    first_commit: str     # the commit that first held the text (40 hex digits)
    committed: str        # that commit's date (ISO 8601), as git reports it
    text: str             # the prediction, verbatim (whitespace joined)
    model: dict           # the model's inputs, as the text states them
    predicted: dict       # the predicted number or range
    compared_with: dict   # {"file": a results file, "record": its record, "baseline": the record it is divided by}
    before_the_run: bool  # git shows the text committed before the compared record's run
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def short_commit(self) -> str:
        return self.first_commit[:7]


_FIELDS = {"id", "what", "source", "first_commit", "committed", "text", "model", "predicted", "compared_with",
           "before_the_run", "note"}


def load(lesson: int) -> dict[str, Prediction] | None:
    """``predictions/<lesson>.json`` as {id: Prediction}; None if the file is not there."""
    path = folder() / f"{lesson}.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text())
    out = {}
    for entry in doc["predictions"]:
        known = {k: v for k, v in entry.items() if k in _FIELDS}
        out[entry["id"]] = Prediction(lesson=doc["lesson"], extra={k: v for k, v in entry.items() if k not in _FIELDS},
                                      **known)
    return out


def get(lesson: int, prediction_id: str) -> Prediction | None:
    """One prediction of a lesson; None if the lesson's file is missing."""
    found = load(lesson)
    return None if found is None else found[prediction_id]


def all_predictions() -> list[Prediction]:
    """Every prediction of every file in :func:`folder`."""
    out = []
    for path in sorted(folder().glob("*.json")):
        out += list(load(int(path.stem)).values())
    return out


# -- when: the prediction's commit against the compared record's run -----------------------------------------------------
def when(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def record_date(prediction: Prediction) -> str | None:
    """The date the compared results file records for its run (``environment.date``); None if the file is missing."""
    path = results_files.find(prediction.compared_with["file"])
    return None if path is None else json.loads(path.read_text())["environment"]["date"]


def written_before(committed: str, recorded: str) -> bool:
    """Whether a prediction committed at ``committed`` is older than a run recorded at ``recorded``."""
    return when(committed) < when(recorded)


@dataclass(frozen=True)
class Order:
    committed: str         # the prediction's first commit's date
    recorded: str          # the compared run's date
    minutes: float         # recorded − committed, in minutes: > 0 when the prediction is older
    before: bool


def order(prediction: Prediction) -> Order | None:
    """The prediction's commit against the compared run; None without the results file."""
    recorded = record_date(prediction)
    if recorded is None:
        return None
    minutes = (when(recorded) - when(prediction.committed)).total_seconds() / 60
    return Order(prediction.committed, recorded, minutes, written_before(prediction.committed, recorded))


def problems(prediction: Prediction, commit_date: str | None, recorded: str | None) -> list[str]:
    """What is wrong with an entry, given its first commit's date as git reports it and the compared run's date:
    a stored date that is not the commit's, or a ``before_the_run`` that the dates contradict (above all: a
    prediction called older than the run it is compared with that is not)."""
    out = []
    if commit_date is not None and when(commit_date) != when(prediction.committed):
        out.append(f"{prediction.id}: committed {prediction.committed}, but git dates {prediction.short_commit} "
                   f"{commit_date}")
    if recorded is None:
        out.append(f"{prediction.id}: no record date for {prediction.compared_with['file']}")
    elif written_before(commit_date or prediction.committed, recorded) != prediction.before_the_run:
        out.append(f"{prediction.id}: before_the_run is {prediction.before_the_run}, but the text was committed "
                   f"{commit_date or prediction.committed} and the run recorded {recorded}")
    return out


# -- git (the test's evidence; a wheel has no history) ------------------------------------------------------------------
def _git(*args: str, repo: Path | None = None) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=repo or results_files.ROOT, capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_available(repo: Path | None = None) -> bool:
    """Whether ``repo`` (default: the checkout) has git history to read."""
    return _git("rev-parse", "--git-dir", repo=repo) is not None


def commit_date(commit: str, repo: Path | None = None) -> str | None:
    out = _git("show", "-s", "--format=%cI", commit, repo=repo)
    return out.strip() if out else None


def file_at(commit: str, path: str, repo: Path | None = None) -> str | None:
    """``path`` as it was at ``commit``; None if it did not exist there."""
    return _git("show", f"{commit}:{path}", repo=repo)


def holds(text: str, source: str | None) -> bool:
    """Whether ``source`` holds ``text``, whitespace ignored (docstrings are wrapped)."""
    return source is not None and " ".join(text.split()) in " ".join(source.split())


# -- what the lessons show ------------------------------------------------------------------------------------------------
def quote(prediction: Prediction) -> MarkdownTable:
    """The prediction's text as a quotation, with where and when it was first committed."""
    return MarkdownTable(f"> {prediction.text}\n\n*`{prediction.source}` at commit `{prediction.short_commit}` "
                         f"({prediction.committed[:16].replace('T', ' ')} UTC); `predictions/{prediction.lesson}"
                         f".json`.*")


def ratio_range(prediction: Prediction, size: int | None = None) -> tuple[float, float]:
    """The predicted ratio over the baseline (low, high), for ``size`` where it depends on the size."""
    r = prediction.predicted["ratio"]
    if isinstance(r, dict):
        r = r[str(size)]
    return float(r[0]), float(r[1])


# -- the verdict: a measured ratio against its predicted range --------------------------------------------------------
def where(value: float, low: float, high: float) -> str:
    """"inside", "above" or "below" the predicted range [low, high]."""
    return "inside" if low <= value <= high else ("above" if value > high else "below")


def range_text(low: float, high: float) -> str:
    """A predicted range as the lessons' tables show it: ``0.97–1.03``."""
    return f"{low:.2f}–{high:.2f}"


@dataclass(frozen=True)
class Verdict:
    """One shape of a run against a prediction (:func:`verdicts`)."""
    shape: str  # "MxNxK"
    ratio: float  # the compared record over its baseline, same run (TFLOPS over TFLOPS: > 1 faster)
    low: float  # the predicted range's low end …
    high: float  # … and high end
    over_reference: float  # the record over the reference (a cuBLAS) in the same run

    @property
    def where(self) -> str:
        return where(self.ratio, self.low, self.high)

    @property
    def label(self) -> str:
        """The shape as the lessons write it: ``4096³`` for a square, ``1152×2048×4096`` otherwise."""
        m, n, k = self.shape.split("x")
        return f"{m}³" if m == n == k else f"{m}×{n}×{k}"


def verdicts(run: dict, prediction: Prediction, reference: str) -> list[Verdict]:
    """At each shape the prediction names (``predicted["shapes"]``), its record over its baseline
    (``compared_with``) in ``run`` against the predicted range, and the record over ``reference``."""
    from .timings import tflops_by_shape

    record, baseline = prediction.compared_with["record"], prediction.compared_with["baseline"]
    by_shape = tflops_by_shape(run)
    out = []
    for shape in prediction.predicted["shapes"]:
        t = by_shape.get(shape, {})
        if record in t and baseline in t:
            low, high = ratio_range(prediction, shape)
            out.append(Verdict(shape, t[record] / t[baseline], low, high, t[record] / t[reference]))
    return out


def verdict_table(found: list[Verdict], what: str, baseline: str, reference: str) -> MarkdownTable:
    """The verdicts as a table: ``what`` / ``baseline`` with its predicted range and where it fell, and ``what`` /
    ``reference``."""
    return table([{"M×N×K": v.label, f"{what} / {baseline}": v.ratio,
                   "predicted": range_text(v.low, v.high), "": v.where, f"{what} / {reference}": v.over_reference}
                  for v in found], {f"{what} / {baseline}": "{:.3f}", f"{what} / {reference}": "{:.2f}"})
