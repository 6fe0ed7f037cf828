"""Measured-and-rejected variants of the course's kernels, and the scripts that timed them (see README.md here).

Nothing here ships: the steps in ``gemm_steps/steps`` carry no experiment switches. Each experiment is a script,
``experiments/<topic>.py``, and the kernel variants it times live in ``experiments/kernels/``, each a copy of a
shipped step's kernel with one change.

``experiments`` is a plain package of the checkout, not installed with ``gemm_steps``. Run a script from the
repository root with ``-m`` (which puts the root on ``sys.path``)::

    python -m experiments.pipelining                 # writes experiments/results/experiment-pipelining-<gpu>.json
    python -m experiments.pipelining OUT.json        # or where you say

Tests import it the same way: ``tests/test_variants.py`` puts the repository root on ``sys.path`` first.
"""

from __future__ import annotations

import re
from pathlib import Path

import gemm_steps  # first: it chooses GPU or simulator before Numba is imported

#: The repository root, and where the experiments' result files live.
REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"


def require_gpu(script: str) -> None:
    """Stop with a sentence, not a traceback, where there is no GPU to time on (timings on the simulator mean
    nothing; the tests check the variants there instead)."""
    if gemm_steps.SIMULATOR:
        raise SystemExit(f"{script} times kernels on a GPU; here the kernels run on {gemm_steps.backend()}. "
                         "tests/test_variants.py checks the variants on the simulator.")


def gpu_slug(name: str) -> str:
    """The GPU's model as result file names carry it: ``"NVIDIA H100 80GB HBM3"`` → ``"nvidia-h100"`` (memory size,
    memory type and form factor dropped: the files of one model sort together)."""
    from gemm_steps.harness.environment import file_slug

    words = [w for w in file_slug(name).split("-") if not re.fullmatch(r"\d+gb|hbm\d*e?|pcie|sxm\d*|nvl", w)]
    return "-".join(words)


def output_path(topic: str, out: str | None = None, suffix: str = ".json") -> Path:
    """Where an experiment writes its results: ``out`` if given, else the naming rule's
    ``experiments/results/experiment-<topic>-<gpu>.json`` (README.md), with -2, -3, … added so a re-run never
    overwrites."""
    if out:
        return Path(out)
    if gemm_steps.SIMULATOR:
        gpu = "simulator"
    else:
        from numba import cuda

        name = cuda.get_current_device().name
        gpu = gpu_slug(name.decode() if isinstance(name, bytes) else str(name))
    path = RESULTS / f"experiment-{topic}-{gpu}{suffix}"
    candidate, i = path, 1
    while candidate.exists():
        i += 1
        candidate = path.with_name(f"{path.stem}-{i}{path.suffix}")
    return candidate


def print_records(results: dict, width: int = 16) -> None:
    """One line per record of a benchmark run: shape, entry, TFLOPS, % of cuBLAS SGEMM, the SM clock after its
    launches (median / lowest, where recorded), the sampled error, and an error message where it failed."""
    for r in results["records"]:
        clock = (f" clock {r['sm_clock_mhz_median']:.0f}/{r['sm_clock_mhz_min']:.0f}"
                 if "sm_clock_mhz_median" in r else "")
        print(f"{r['M']}×{r['N']}×{r['K']} {r['step']:{width}s} {r.get('tflops', 0):7.1f} TFLOPS "
              f"{r.get('pct_of_cublas') or 0:6.1f} %{clock} error {r.get('sampled_rel_error_fp64', float('nan')):.1e}"
              f"{' ' + r['error'] if 'error' in r else ''}", flush=True)


def kernel_name(prefix: str, label: str) -> str:
    """A kernel name for a variant's label: ``kernel_name("x", "async A+B")`` is ``"x_async_A_B"``."""
    return prefix + "_" + "".join(ch if ch.isalnum() else "_" for ch in label)


def records_by_shape(results: dict) -> dict:
    """A run's records by shape ``"MxNxK"`` (in the order first seen), then by entry name."""
    by: dict = {}
    for r in results["records"]:
        by.setdefault(f"{r['M']}x{r['N']}x{r['K']}", {})[r["step"]] = r
    return by


def launch_with(launch, module, name: str, value):
    """``launch`` with ``module.name`` set to ``value`` around every call (and put back after): an entry that records
    its launch plans — on a shape's first call, kept after — under another setting or kernel than the shipped one."""
    def launched(a, b, c, stream=0):
        shipped = getattr(module, name)
        setattr(module, name, value)
        try:
            launch(a, b, c, stream)
        finally:
            setattr(module, name, shipped)
    return launched


def ratio(x, y):
    """x / y, or None where either is missing or zero (a failed or absent record)."""
    return x / y if x and y else None


def run_and_save(entries, sizes, out: Path, experiment: str, summarize, repeats: int = 20, width: int = 16) -> dict:
    """Time ``entries`` at ``sizes`` in one run (``bench.run_benchmark``, both cuBLAS beside them), describe it
    (``experiment``), add ``summarize(results)`` as its ``summary``, save it to ``out`` and print its records."""
    from gemm_steps.harness.bench import run_benchmark, save

    results = run_benchmark(entries, sizes, repeats=repeats, progress=lambda message: print(message, flush=True))
    results["experiment"] = experiment
    results["summary"] = summarize(results)
    save(results, out)
    print_records(results, width=width)
    return results


def without_partial_build(step_name: str, build_name: str):
    """Step 17 or 18 as it ran before its partial-tile build: the same kernel built for full tiles (``PARTIAL_TILES``
    False, no ``partial``), the edge kernel it takes from an older step on every other tile — what
    experiments/tma_edges.py, partial_3xtf32.py and readable_copies.py time the shipped step against."""
    from dataclasses import replace

    from gemm_steps.harness.step import get_step
    from gemm_steps.toolkit.tuned import default_config

    module = get_step(step_name).module
    built = module.build(default_config(module.SEARCH_SPACE))
    extra = {"slices": module.slices, "reduce": module.add_slices_kernel} if hasattr(module, "slices") else {}
    return type(built)(build_name, built.function, replace(built.config, PARTIAL_TILES=False), edge=built.edge_source,
                       requires_compute_capability=module.REQUIRES_COMPUTE_CAPABILITY, **extra)


def over_shipped_summary(shipped: str, variants: list[str]):
    """A ``summarize`` for :func:`run_and_save` of one step against builds of it: per shape every entry's TFLOPS, SM
    clock and error; each variant's speed and error over the shipped build's; each build's speed over cuBLAS SGEMM
    and error over cuBLAS SGEMM's."""
    def summary(results: dict) -> dict:
        out = {}
        for shape, rows in records_by_shape(results).items():
            t = {name: r.get("tflops") for name, r in rows.items()}
            err = {name: r.get("sampled_rel_error_fp64") for name, r in rows.items()}
            builds = [shipped, *variants]
            out[shape] = {"tflops": t,
                          "clock_mhz": {name: r.get("sm_clock_mhz_median") for name, r in rows.items()},
                          "error": err,
                          "over_shipped": {v: ratio(t.get(v), t.get(shipped)) for v in variants},
                          "error_over_shipped": {v: ratio(err.get(v), err.get(shipped)) for v in variants},
                          "error_over_cublas_sgemm": {name: ratio(err.get(name), err.get("cublas")) for name in builds},
                          "over_cublas_sgemm": {name: ratio(t.get(name), t.get("cublas")) for name in builds}}
        return out
    return summary


def time_against_shipped(step_name: str, variants: dict, sizes, topic: str, experiment: str, argv: list[str],
                         repeats: int = 30) -> dict:
    """Time a step as shipped (its tuned configuration) against ``variants`` (``{name: built kernels}``) in one run,
    both cuBLAS beside them, at ``sizes``; save the run (``experiment-<topic>-<gpu>.json``, or the first argument of
    ``argv`` that is not an option) with :func:`over_shipped_summary`'s summary and print one line a shape and
    variant. ``--shipped-last`` in ``argv`` times the shipped step after the variants (the order's own effect: under
    the power limit a kernel timed after others may run at a lower clock)."""
    shipped_last = "--shipped-last" in argv
    argv = [arg for arg in argv if arg != "--shipped-last"]
    from types import SimpleNamespace

    from gemm_steps.harness.step import get_step
    from gemm_steps.toolkit.tuned import default_config

    step = get_step(step_name)
    require_gpu(f"experiments/{topic.replace('-', '_')}.py")
    out = output_path(topic, argv[1] if len(argv) > 1 else None)
    shipped = {step_name: step.module.build(default_config(step.module.SEARCH_SPACE))}
    builds = {**variants, **shipped} if shipped_last else {**shipped, **variants}
    entries = [SimpleNamespace(name=name, number=step.number, arithmetic=step.module.ARITHMETIC, launch=built.launch,
                               config={}) for name, built in builds.items()]
    results = run_and_save(entries, sizes, out, experiment, over_shipped_summary(step_name, list(variants)),
                           repeats=repeats, width=max(map(len, builds)) + 2)
    nan = float("nan")
    for shape, row in results["summary"].items():
        for name in variants:
            print(f"{shape:16s} {name:{max(map(len, variants))}s} over shipped {row['over_shipped'][name] or nan:.3f} "
                  f"(error {row['error_over_shipped'][name] or nan:.2f}×)  over cuBLAS SGEMM: shipped "
                  f"{row['over_cublas_sgemm'][step_name] or nan:.2f}, this {row['over_cublas_sgemm'][name] or nan:.2f}")
    print(f"wrote {out}")
    return results
