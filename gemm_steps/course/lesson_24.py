"""The FP32-contract lesson's helpers: read the accuracy run (``python -m experiments.fp32_accuracy`` on a GPU) and
turn it into tables, a figure and verdict values; the input classes' ranges; NumPy models of the 3xTF32 arithmetic
before each fix (:func:`gemm_steps.harness.fp32_contract.three_tf32_model`); the fixes' speed cost from the A/B run.
Numbers, tables and figures only: the words are the lesson's."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..harness import fp32_contract as contract
from ..harness import results_files
from ..harness.bench import load as load_results_document
from ..harness.environment import short_label
from .display import MarkdownTable, table
from .timings import load_run

#: The accuracy run the lesson reads: ``python -m experiments.fp32_accuracy`` on an H200 (experiments/README.md).
RUN = results_files.EXPERIMENT_FP32_ACCURACY_NVIDIA_H200_2
#: Steps 13 and 14 before and after the FP32-contract fixes (issue 25), same GPU, same inputs, two passes in
#: alternating order (``experiments/before_after.py``): records ``"<step> (old)"`` and ``"<step> (new)"``. Lessons
#: 13 and 14 quote its cost too (:func:`contract_cost`).
CONTRACT_AB_RUN = results_files.EXPERIMENT_BEFORE_AFTER_FP32_CONTRACT_NVIDIA_H200
#: What produces it (said when it is missing).
COMMAND = "python -m experiments.fp32_accuracy experiments/results/" + RUN


def load(name: str = RUN) -> dict:
    """The accuracy run, from results/ or experiments/results/ — or an error saying how to make it. Never a silent
    skip: a lesson about measured accuracy without the measurement must not build."""
    path = results_files.find(name)
    if path is None:
        raise FileNotFoundError(f"{name} is in neither results/ nor experiments/results/: run `{COMMAND}` on a GPU "
                                "(the lesson reads the measured errors from it)")
    run = load_results_document(path)
    run["path"] = results_files.display_path(path)
    return run


def where(run: dict) -> str:
    """Where and at what size the run was measured (GPU, versions, date; M × N; the K swept)."""
    return (f"{short_label(run['environment'])} · M × N = {run['M']} × {run['N']}, "
            f"K = {', '.join(str(k) for k in run['ks'])}")


# -- the entries ------------------------------------------------------------------------------------------------------
def entries(run: dict, kinds=("cublas", "model", "step", "matmul")) -> list[dict]:
    """The run's entries that ran, of ``kinds``, in the run's order."""
    return [e for e in run["entries"] if e["kind"] in kinds and "unavailable" not in e]


def unavailable(run: dict) -> dict:
    """{entry name: why it did not run} (cuBLAS on the simulator, a step this GPU cannot run)."""
    return {e["name"]: e["unavailable"] for e in run["entries"] if "unavailable" in e}


def label(entry: dict) -> str:
    """A column or legend name: ``cuBLAS SGEMM``, ``sequential FMA sum``, ``13 three_tf32 (3xtf32)``,
    ``matmul tf32x3 (default)``."""
    if entry["kind"] == "cublas":
        return "cuBLAS SGEMM"
    if entry["kind"] == "model":
        return "sequential FMA sum"
    if entry["kind"] == "step":
        return f"{entry['number']} {entry['name']} ({entry['arithmetic']})"
    return f"matmul {entry['precision']}" + (" (default)" if entry.get("default") else "")


# -- the contract's numbers -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContractNumbers:
    """The bound's constants as the run recorded them (:func:`contract_numbers`)."""
    factor: float  # the bound's multiple of the sequential sum's error
    one_product: float  # its floor, 9u: the worst single 3xTF32 product
    one_product_in_u: float  # the floor in units of u
    u: float  # float32's unit roundoff


def contract_numbers(run: dict) -> ContractNumbers:
    """The bound's constants as the run recorded them: the factor, 9u (the worst single 3xTF32 product) and u."""
    c = run["contract"]
    return ContractNumbers(c["factor"], c["one_product"], c["one_product"] / c["u"], c["u"])


def class_ranges(m: int = 16, n: int = 16, k: int = 256) -> MarkdownTable:
    """Each finite class at M × N × K (:func:`contract.input_classes`): the binades its nonzero elements span in A
    and in B (log2 of the smallest and largest |x|), and how much of the sum's size is left after cancellation,
    ‖A·B‖_F / ‖|A|·|B|‖_F (1: no cancellation)."""
    def span(x):
        x = np.abs(x[x != 0].astype(np.float64))
        return f"{round(math.log2(x.min()))} … {round(math.log2(x.max()))}"

    rows = []
    for name, a, b in contract.input_classes(m, n, k, seed=k):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        left = np.linalg.norm(a64 @ b64) / np.linalg.norm(np.abs(a64) @ np.abs(b64))
        rows.append({"class": name, "log2 \\|a\\| from … to": span(a), "log2 \\|b\\| from … to": span(b),
                     "‖A·B‖ / ‖\\|A\\|·\\|B\\|‖": f"{left:.1e}"})
    return table(rows, align="lccr")


# -- what broke: the split of a special value, and the models of the arithmetic before each fix -----------------------
def special_split(partner: float = 1.0) -> MarkdownTable:
    """A few values split as the 3xTF32 steps split them (big, small·2^11), and the three products they feed with a
    TF32-exact partner b (whose small part is 0): big·big + big·small_b + small·big_b, summed in float32."""
    b_big, b_small = contract.split(np.float32(partner))
    heads, rows = ("x", "big", "small·2^11", "big·b", "big·small_b", "small·big_b", "sum", "x·b (IEEE)"), []
    for x in (1.5 + 2.0 ** -15, np.inf, -np.inf, np.nan):
        big, small = contract.split(np.float32(x))
        with np.errstate(all="ignore"):
            terms = [big * b_big, big * b_small, small * b_big / np.float32(contract.SMALL_SCALE)]
            total = np.float32(terms[0] + terms[1] + terms[2])
            ieee = np.float32(x) * np.float32(partner)
        rows.append(dict(zip(heads, (f"{np.float32(x):.9g}", f"{float(big):.9g}", f"{float(small):.6g}",
                                     *(f"{float(t):.9g}" for t in (*terms, total, ieee))))))
    return table(rows, align="r" * len(heads))


#: The arithmetic of step 14 before and after its fixes, as :func:`contract.three_tf32_model` options (the tensor
#: core's accumulator truncating, as the hardware's does). ``block_k=None``: the big products summed in the tensor
#: core over all of K (the first 3xTF32 try), instead of afresh every 32 k.
MODELS = {
    "first version: A truncated, small parts unscaled": {"rounding": "truncate_a", "scaled": False},
    "small parts unscaled": {"scaled": False},
    "A truncated": {"rounding": "truncate_a"},
    "all of K in the tensor core": {"block_k": None},
    "fixed": {},
}


@dataclass(frozen=True)
class ModelErrors:
    """The models of :data:`MODELS` on one input class and K (:func:`model_errors`)."""
    inputs: str  # the input class
    k: int  # K
    bound: float  # the contract's bound there
    of_bound: dict  # model (a key of MODELS) → its error ÷ the bound (above 1: the contract is broken)


def model_errors(cases, m: int = 16, n: int = 16) -> list[ModelErrors]:
    """For each (class, K) of ``cases``: the bound, and each of :data:`MODELS`' errors as a multiple of the bound
    (above 1: the contract is broken)."""
    rows = []
    for name, k in cases:
        a, b = next((a, b) for c, a, b in contract.input_classes(m, n, k, seed=k) if c == name)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        bound = contract.contract_bound(contract.normwise_error(contract.sgemm_model(a, b), a, b, exact))
        of_bound = {}
        for model, options in MODELS.items():
            options = dict(step=14, accumulator="truncate", **options)
            if options.get("block_k", 32) is None:
                options["block_k"] = -(-k // 8) * 8
            got = contract.three_tf32_model(a, b, **options)
            of_bound[model] = contract.normwise_error(got, a, b, exact) / bound
        rows.append(ModelErrors(name, k, bound, of_bound))
    return rows


def model_table(rows: list[ModelErrors]) -> MarkdownTable:
    """:func:`model_errors` as a table: error / bound per model (bold where above 1)."""
    def cell(v):
        return f"**{v:.2g}**" if v > 1 else f"{v:.2g}"

    return table([{"class": row.inputs, "K": f"{row.k:,}", "bound": f"{row.bound:.1e}",
                   **{model: cell(row.of_bound[model]) for model in MODELS}} for row in rows],
                 align="lrr" + "r" * len(MODELS))


@dataclass(frozen=True)
class ReadErrors:
    """How exactly the tensor core reads a split x (:func:`read_errors`), log2 of the worst relative error."""
    rounded: float  # big rounded to nearest (the fix)
    truncated: float  # big truncated (step 14's A before it)


def read_errors(seed: int = 0, count: int = 100_000) -> ReadErrors:
    """The largest |x − x as the tensor core reads it| / |x| (big + small, each truncated to TF32 as read) over
    standard-normal x, with big rounded to nearest (the fix) and truncated (step 14's A before it): log2 of each."""
    x = np.random.default_rng(seed).standard_normal(count).astype(np.float32)
    big, small = contract.split(x)
    rounded = big.astype(np.float64) + contract.truncate_to_tf32(small).astype(np.float64) / contract.SMALL_SCALE
    cut = contract.truncate_to_tf32(x)
    truncated = cut.astype(np.float64) + contract.truncate_to_tf32((x - cut).astype(np.float32)).astype(np.float64)
    x64 = x.astype(np.float64)
    return ReadErrors(math.log2(float(np.max(np.abs(rounded - x64) / np.abs(x64)))),
                      math.log2(float(np.max(np.abs(truncated - x64) / np.abs(x64)))))


# -- the measured run -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Worst:
    """One (class, entry)'s worst record over K (:func:`worst`)."""
    of_bound: float  # its error ÷ the bound (inf where the output had a NaN)
    k: int  # the K where it was
    kept: bool  # every K of the pair kept the contract


def worst(run: dict) -> dict:
    """{(class, entry): :class:`Worst`}, the worst record over K — the largest error / bound (NaN counts as worst)."""
    out = {}
    for r in run["records"]:
        ratio = r["error"] / r["bound"] if r["error"] == r["error"] else math.inf
        key = (r["inputs"], r["step"])
        if key not in out or ratio > out[key].of_bound:
            out[key] = Worst(ratio, r["K"], all(q["kept"] for q in run["records"] if (q["inputs"], q["step"]) == key))
    return out


def _cell(w: Worst | None) -> str:
    if w is None:
        return "—"
    value = "nan" if math.isinf(w.of_bound) else f"{w.of_bound:.2g}"
    return f"✓ {value}" if w.kept else f"**✗ {value}**"


def accuracy_table(run: dict, kinds=("cublas", "model", "step", "matmul")) -> MarkdownTable:
    """Classes × entries: the worst error / bound over the run's K, ✓ where every K kept the contract, ✗ where one did
    not. A last row: the specials (✓ where every special input gave cuBLAS SGEMM's inf/NaN pattern, or the
    sequential sum's where cuBLAS did not run)."""
    shown = entries(run, kinds)
    w = worst(run)
    rows = [{"class": name, **{label(e): _cell(w.get((name, e["name"]))) for e in shown}} for name in run["classes"]]
    if run["specials"]:
        same = specials_kept(run)
        rows.append({"class": "*specials: inf/NaN pattern*", **{label(e): "—" if e["name"] not in same else (
            "✓" if same[e["name"]]["kept"] else f"**✗ {same[e['name']]['off']}**") for e in shown}})
    return table(rows, align="l" + "c" * len(shown))


def verdicts(run: dict) -> dict:
    """Per entry: how many (class, K) records kept the contract of how many, the worst error / bound and where. (A
    dict of dicts: lesson 18's helper reads it too.)"""
    out = {}
    for e in entries(run):
        mine = [r for r in run["records"] if r["step"] == e["name"]]
        if not mine:
            continue
        bad = max(mine, key=lambda r: r["error"] / r["bound"] if r["error"] == r["error"] else math.inf)
        ratio = bad["error"] / bad["bound"] if bad["error"] == bad["error"] else math.inf
        out[e["name"]] = {"label": label(e), "kept": sum(r["kept"] for r in mine), "of": len(mine),
                          "worst": ratio, "worst_class": bad["inputs"], "worst_K": bad["K"]}
    return out


def chosen_steps(run: dict) -> dict:
    """{matmul precision: the steps it chose over the run's shapes, in step order}."""
    out = {}
    for e in entries(run, ("matmul",)):
        out[e["precision"]] = sorted({r["chosen"] for r in run["records"] + run["specials"] if r["step"] == e["name"]})
    return out


def specials_kept(run: dict) -> dict:
    """Per entry: whether every special input gave SGEMM's pattern (cuBLAS's, where it ran, else the sequential
    sum's), how many inputs did not (``off``), and which pattern it was compared with. (A dict of dicts: lesson
    18's helper reads it too.)"""
    cublas_ran = any(r["same_as_cublas"] is not None for r in run["specials"])
    against = "same_as_cublas" if cublas_ran else "same_as_sequential"
    out = {}
    for r in run["specials"]:
        e = out.setdefault(r["step"], {"kept": True, "off": 0, "against": against})
        if not r[against]:
            e["kept"], e["off"] = False, e["off"] + 1
    return out


def specials_table(run: dict, kinds=("cublas", "step")) -> MarkdownTable:
    """Special inputs × entries: ✓ where C's NaN / +inf / −inf pattern is SGEMM's (cuBLAS's where it ran, else the
    sequential sum's), ✗ and the number of elements off the sequential sum's pattern where it is not."""
    shown = entries(run, kinds)
    against = specials_kept(run)
    key = next(iter(against.values()))["against"] if against else "same_as_sequential"
    rows = []
    for name in dict.fromkeys(r["inputs"] for r in run["specials"]):
        by = {r["step"]: r for r in run["specials"] if r["inputs"] == name}
        rows.append({"input": name, **{label(e): "—" if e["name"] not in by else (
            "✓" if by[e["name"]][key] else f"**✗ {by[e['name']]['elements_off_sequential']}**") for e in shown}})
    return table(rows, align="l" + "c" * len(shown))


def against_reference(run: dict) -> dict:
    """At the run's largest K, per entry (cuBLAS and the steps): the median over the classes of its error / the
    sequential sum's (below 1: fewer or better-placed roundings than the sequential order)."""
    k = max(run["ks"])
    out = {}
    for e in entries(run, ("cublas", "step")):
        ratios = [r["error"] / r["reference_error"] for r in run["records"]
                  if r["step"] == e["name"] and r["K"] == k and r["reference_error"] > 0]
        if ratios:
            out[label(e)] = float(np.median(ratios))
    return out


def tf32_over_3xtf32(run: dict) -> tuple[float, float] | None:
    """The smallest and largest ratio, over every (class, K), of a TF32 step's error to a 3xTF32 step's on the same
    inputs; None if the run lacks either kind."""
    kind = {e["name"]: e["arithmetic"] for e in entries(run, ("step",))}
    by = {}
    for r in run["records"]:
        if r["step"] in kind:
            by.setdefault((r["inputs"], r["K"]), {}).setdefault(kind[r["step"]], []).append(r["error"])
    ratios = [t / x for both in by.values() if {"tf32", "3xtf32"} <= set(both)
              for t in both["tf32"] for x in both["3xtf32"] if x > 0]
    return (min(ratios), max(ratios)) if ratios else None


def error_figure(run: dict, classes: list[str]):
    """Error against K, one panel per class: every step and cuBLAS SGEMM, the sequential sum (dotted) and the
    contract's bound (the grey region above it is outside the contract)."""
    import matplotlib.pyplot as plt

    from .plots import step_colour  # here: importing the helper loads no pyplot

    shown = entries(run, ("cublas", "model", "step"))
    top = max([1e-2] + [3 * r["error"] for r in run["records"] if r["inputs"] in classes and math.isfinite(r["error"])])
    fig, axes = plt.subplots(1, len(classes), figsize=(4.2 * len(classes), 4.2), sharey=True, layout="constrained")
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, classes):
        mine = [r for r in run["records"] if r["inputs"] == name]
        ks = sorted({r["K"] for r in mine})
        bound = [next(r["bound"] for r in mine if r["K"] == k) for k in ks]
        ax.fill_between(ks, bound, top, color="0.9", label="outside the contract")
        ax.plot(ks, bound, color="0.4", lw=2, label="the contract's bound")
        for e in shown:
            points = sorted((r["K"], r["error"]) for r in mine if r["step"] == e["name"])
            if not points:
                continue
            style = {"cublas": dict(color="black", lw=1.5), "model": dict(color="black", ls=":", lw=2)}.get(
                e["kind"], dict(color=step_colour(e.get("number", 1)), marker="o", ms=3,
                                ls="-" if e["arithmetic"] == "3xtf32" else "--"))
            ax.plot(*zip(*points), label=label(e), **style)
        ax.set(xscale="log", yscale="log", xlabel="K", title=name)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("‖C − A·B‖ / ‖|A|·|B|‖")
    axes[0].set_ylim(top=top)
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.suptitle(f"Error against K, M × N = {run['M']} × {run['N']}\n{short_label(run['environment'])}", fontsize=10)
    plt.close(fig)
    return fig


# -- what the fixes cost ----------------------------------------------------------------------------------------------
def contract_cost(run: dict, step: str) -> dict:
    """``step`` before and after the FP32-contract fixes in the A/B run (:data:`CONTRACT_AB_RUN`), per size where
    both ran: ``old`` and ``new`` TFLOPS (median over the passes) and ``cost``, the speed lost, 1 − new/old, as
    (smallest, largest) over the passes (each pass times old and new on the same inputs)."""
    out = {}
    found = sorted({(r["M"], r["N"], r["K"]) for r in run["records"] if r["step"] == f"{step} (new)"},
                   key=lambda s: s[0] * s[1] * s[2])
    for size in found:
        old, new = ([r["tflops"] for r in run["records"]
                     if r["step"] == f"{step} ({which})" and (r["M"], r["N"], r["K"]) == size] for which in ("old", "new"))
        if not old or len(old) != len(new):
            continue
        costs = [1 - n / o for o, n in zip(old, new)]  # record order: pass 1's pair, then pass 2's
        out[size] = {"old": float(np.median(old)), "new": float(np.median(new)), "cost": (min(costs), max(costs))}
    return out


@dataclass(frozen=True)
class FixCosts:
    """What the FP32-contract fixes cost every step the A/B run timed (:func:`fix_costs`)."""
    gpu: str  # the run's GPU
    file: str  # the run's file name (:data:`CONTRACT_AB_RUN`)
    steps: dict  # step → :func:`contract_cost` of it: {size: {"old", "new", "cost"}}


def fix_costs() -> FixCosts:
    """{step: {size: {"old", "new" TFLOPS, "cost": (smallest, largest) speed lost over the passes}}} for every step
    the same-run A/B of the FP32-contract fixes timed (:data:`CONTRACT_AB_RUN`); and the run's GPU and file."""
    run = load_run(CONTRACT_AB_RUN)
    if run is None:
        raise FileNotFoundError(f"{CONTRACT_AB_RUN} is missing from experiments/results/")
    steps = sorted({r["step"][:-len(" (new)")] for r in run["records"] if r["step"].endswith(" (new)")},
                   key=lambda s: next(r["number"] for r in run["records"] if r["step"] == f"{s} (new)"))
    return FixCosts(run["environment"]["gpu"], CONTRACT_AB_RUN, {s: contract_cost(run, s) for s in steps})


@dataclass(frozen=True)
class CostExtremes:
    """The largest and smallest speed lost to the fixes (:func:`largest_cost`)."""
    largest: float  # the largest, 1 − new/old, of any pass
    largest_step: str  # where: the step
    largest_size: tuple  # and the size
    smallest: float  # the smallest of any pass
    smallest_step: str  # where: the step
    smallest_size: tuple  # and the size


def largest_cost(costs: FixCosts) -> CostExtremes:
    """The largest speed lost in :func:`fix_costs` (the larger of a size's two passes) and the smallest (the smaller
    of its passes): step, size, cost."""
    found = [(c["cost"], step, size) for step, sizes in costs.steps.items() for size, c in sizes.items()]
    high, step_high, size_high = max(found, key=lambda f: max(f[0]))
    low, step_low, size_low = min(found, key=lambda f: min(f[0]))
    return CostExtremes(max(high), step_high, size_high, min(low), step_low, size_low)


def cost_table(costs: FixCosts) -> MarkdownTable:
    """:func:`fix_costs` as a table: TFLOPS before → after, and the speed lost (smallest … largest over the passes)."""
    return table([{"step": step, "M × N × K": "×".join(map(str, size)), "before (TFLOPS)": f"{c['old']:.1f}",
                   "after": f"{c['new']:.1f}", "speed lost": f"{c['cost'][0]:.0%} … {c['cost'][1]:.0%}"}
                  for step, sizes in costs.steps.items() for size, c in sizes.items()], align="llrrr")


# -- the sequential sum against cuBLAS SGEMM in the course benchmarks ---------------------------------------------------
#: The steps that compute the sequential float32 FMA sum (one FMA at a time, in k order): 1–10. Step 11 (stream-K)
#: splits K at some shapes and adds the parts.
SEQUENTIAL_STEPS = ("naive", "coalesced", "shared_memory", "register_1d", "register_2d", "vectorized", "unrolled",
                    "double_buffered", "warp_tiling", "persistent")


@dataclass(frozen=True)
class Difference:
    """cuBLAS SGEMM against the course's FP32 steps at one square (:attr:`AgainstSequential.sizes`)."""
    sequential: float  # the largest rel_error_vs_cublas of the sequential-sum steps (0: bit for bit)
    stream_k: float  # the same, step 11


@dataclass(frozen=True)
class AgainstSequential:
    """cuBLAS SGEMM against the sequential sum in the course benchmarks (:func:`sgemm_against_sequential`)."""
    files: int  # the benchmark files read (0: none)
    sizes: dict  # square's M → :class:`Difference`, over all the files


def sgemm_against_sequential() -> AgainstSequential:
    """Every course benchmark in ``results/`` (``bench-*.json``): per square, the largest ``rel_error_vs_cublas`` of
    the sequential-sum steps (:data:`SEQUENTIAL_STEPS`) and of step 11 over all the files — 0 where cuBLAS SGEMM's
    results equal the sequential sum bit for bit in every file — and how many files (0 and no sizes without any)."""
    sizes: dict = {}
    files = sorted(results_files.RESULTS_DIR.glob(results_files.BENCH_ANY))
    used = 0
    for path in files:
        try:
            doc = load_results_document(path)
        except Exception:  # not a results document
            continue
        used += 1
        for r in doc["records"]:
            diff = r.get("rel_error_vs_cublas")
            if diff is None or r["M"] != r["N"] or r["N"] != r["K"]:
                continue
            kind = "sequential" if r["step"] in SEQUENTIAL_STEPS else "stream_k" if r["step"] == "stream_k" else None
            if kind:
                q = sizes.setdefault(r["M"], {"sequential": 0.0, "stream_k": 0.0})
                q[kind] = max(q[kind], diff)
    return AgainstSequential(used, {m: Difference(q["sequential"], q["stream_k"]) for m, q in sorted(sizes.items())})
