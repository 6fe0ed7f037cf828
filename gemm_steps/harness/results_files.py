"""Which results file to read: one set of rules for the ``gemm-steps`` command, the README table and the lessons.

Two folders hold measurements:

``results/``
    The course's benchmark (``bench-<gpu>-<date>.json`` from ``gemm-steps bench``, and its plots) and the tuning
    sweeps (``tuning-<step>-<gpu>.json`` from ``gemm-steps tune``).
``experiments/results/``
    One-off experiments (``experiment-*.json``), Nsight Compute text reports, compile times and the like.

They are measurements, not code, and the package does not ship them: from a repository checkout both are the
checkout's; otherwise (a wheel install) they are ``results/`` and ``experiments/results/`` under the current
directory — run from a checkout's root to read the shipped ones. Where a file is missing, the lessons' helpers say
so and show no number (tests/test_wheel.py runs them so). Tests and notebooks may point :data:`RESULTS_DIR` and
:data:`EXPERIMENT_RESULTS_DIR` elsewhere; the functions read them when called.

The rules:

* :func:`newest_benchmark` — the course benchmark: a results document in ``results/``, measured on a GPU (not the
  simulator), whose every record is a step of the course or cuBLAS (so no tuning sweep, whose records are named
  ``step#i``, and no experiment's variants), with a successful record of each step asked for and of cuBLAS.
* :func:`newest_matching` — tuning sweeps and experiments by name: the results documents measured on a GPU whose
  file name matches a glob, in either folder.
* :func:`references` — the reference dissections (``reference-<gpu>-<date>.json``), newest first.
* :func:`run_stem`, :func:`tuning_name`, :func:`held_out_name` — the names ``gemm-steps bench``, ``gemm-steps tune``
  and ``scripts/held_out.py`` write; :func:`ncu_step_report` — a step's shipped Nsight Compute report.
* :func:`find` — a file that is not a results document (``compile-times-nvidia-h200.json``, ``ncu-….txt``), by name, in
  either folder.

"Newest" is the measurement date recorded in the file (a git checkout keeps no file times), then the file name.
Files that are not results documents (``tuned.json``, a broken file) are skipped, never an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable


#: The repository root, when this package runs from a checkout.
REPO = Path(__file__).resolve().parents[2]


def _from_checkout() -> bool:
    return (REPO / "pyproject.toml").is_file() and (REPO / "gemm_steps").is_dir()


#: Where the repository's files are looked for: the checkout, or (an installed package) the current directory.
ROOT = REPO if _from_checkout() else Path(".")
#: The course benchmark and the tuning sweeps.
RESULTS_DIR = ROOT / "results"
#: One-off experiments' results (the experiments' scripts and kernels are the checkout's, never read by the package).
EXPERIMENT_RESULTS_DIR = ROOT / "experiments/results"

Found = tuple[Path, dict]


def _results_documents(paths: Iterable[Path]) -> list[Found]:
    """(path, document) of each path that is a results document measured on a GPU."""
    from . import bench  # here, not at import: calling a step (the simulator's cost model reads the catalogue) must
    #                      not load the benchmark (tests/test_readable_kernels.py)
    found = []
    for path in paths:
        try:
            data = bench.load(path)
        except (ValueError, OSError):  # not a results document (tuned.json, a text file, broken JSON)
            continue
        if not data.get("environment", {}).get("simulator"):
            found.append((path, data))
    return found


def _age(item: Found) -> tuple[str, str]:
    """What "newest" compares: the measurement date recorded in the file, then the file name."""
    return str(item[1]["environment"].get("date", "")), item[0].name


def _newest(found: list[Found]) -> Found | None:
    return max(found, key=_age) if found else None


def _ok(record: dict) -> bool:
    return "error" not in record and record.get("median_ms") is not None


def is_course_benchmark(data: dict, steps: Iterable[str] = ()) -> bool:
    """Whether a results document is a benchmark of the course's steps with successful records of ``steps`` (names)
    and of cuBLAS."""
    from .bench import BASELINES
    from .step import all_steps

    if data.get("suite"):  # a run of a shape suite (gemm-steps bench --suite): not the course's benchmark
        return False
    course = {s.name for s in all_steps()}
    names = {r["step"] for r in data["records"]}
    if not names & course or not names <= course | set(BASELINES):
        return False
    succeeded = {r["step"] for r in data["records"] if _ok(r)}
    return {*steps, "cublas"} <= succeeded


def benchmarks(steps: Iterable[str] = (), folder: Path | None = None) -> list[Found]:
    """Every course benchmark in ``results/`` (or ``folder``) with successful records of ``steps`` (names) and of
    cuBLAS, as (path, document), oldest first."""
    steps = list(steps)
    candidates = _results_documents(sorted(Path(folder or RESULTS_DIR).glob("*.json")))
    return sorted(((path, data) for path, data in candidates if is_course_benchmark(data, steps)), key=_age)


def newest_benchmark(steps: Iterable[str] = (), folder: Path | None = None) -> Found | None:
    """The newest course benchmark in ``results/`` (or ``folder``) with successful records of ``steps`` (names) and of
    cuBLAS, as (path, document); ``None`` if there is none. See the module docstring for the rules."""
    return _newest(benchmarks(steps, folder))


def folders() -> list[Path]:
    """Where tuning sweeps and experiments are looked for, in this order."""
    return [Path(RESULTS_DIR), Path(EXPERIMENT_RESULTS_DIR)]


def newest_matching(pattern: str, keep=None) -> Found | None:
    """The newest results document measured on a GPU whose name matches ``pattern`` (a glob such as
    ``"tuning-unrolled-*.json"`` or ``"experiment-fma-order-*.json"``) in ``results/`` or ``experiments/results/``
    (of those for which ``keep(document)`` is true, if given)."""
    paths = [path for folder in folders() for path in sorted(folder.glob(pattern))]
    return _newest([(path, data) for path, data in _results_documents(paths) if keep is None or keep(data)])


def references() -> list[Found]:
    """The reference dissections in ``results/`` (``reference-<gpu>-<date>.json`` from
    ``scripts/reference_kernels.py``: what cuBLAS and the Hopper steps run, read off the GPU), newest first."""
    found = []
    for path in sorted(Path(RESULTS_DIR).glob("reference-*.json")):
        try:
            data = json.loads(path.read_text())
        except (ValueError, OSError):
            continue
        if "kernels" in data and "environment" in data:
            found.append((path, data))
    return sorted(found, key=_age, reverse=True)


def find(name: str) -> Path | None:
    """A file by name (``"compile-times-nvidia-h200.json"``) in ``results/`` or ``experiments/results/``; ``None`` if in
    neither."""
    return next((folder / name for folder in folders() if (folder / name).is_file()), None)


def held_out_name(gpu: str, date: str, run: int = 1, quick: bool = False) -> str:
    """The file a run of the held-out set writes (``scripts/held_out.py``): ``held-out-<gpu>-<date>.json`` in
    ``results/``, ``-2``, ``-3``… for a later ``run`` the same day, ``-quick`` for a shortened run; the GPU as in the
    other results files' names."""
    from .environment import file_slug

    return HELD_OUT.replace("*", f"{file_slug(gpu)}-{date}{f'-{run}' if run > 1 else ''}{'-quick' if quick else ''}")


def run_stem(gpu: str, date: str, suite: str | None = None) -> str:
    """The stem of the files a ``gemm-steps bench`` run writes (its JSON and plots): ``bench-<gpu>-<date>``, or
    ``shapes-<gpu>-<date>`` for a run of the shape suite (``suite="shapes"``); the GPU as in the other results files'
    names."""
    from .environment import file_slug

    pattern = {None: BENCH_ANY, "shapes": SHAPES_ANY}[suite]
    return pattern.replace("*", f"{file_slug(gpu)}-{date}").removesuffix(".json")


def shape_suite_runs(gpu: str) -> str:
    """The glob of the shape suite's runs on ``gpu`` (``shapes-<gpu>-<date>.json``, for :func:`newest_matching`)."""
    return run_stem(gpu, "20*", suite="shapes") + ".json"


def tuning_name(step: str, gpu: str) -> str:
    """The file ``gemm-steps tune <step>`` writes: ``tuning-<step>-<gpu>.json`` (a step's name, as in its
    :data:`TUNING_ANY` globs below)."""
    from .environment import file_slug

    return TUNING_ANY.replace("*", f"{step}-{file_slug(gpu)}")


def ncu_step_report(step: str, folder: str | None = None) -> str:
    """Nsight Compute's shipped report of ``step`` (a step's name or ``"cublas"``) in a folder of them
    (``ncu-<step>.txt`` in :data:`NCU_STEPS_NVIDIA_H100` unless ``folder``), as a name for :func:`find`."""
    return f"{folder or NCU_STEPS_NVIDIA_H100}/ncu-{step}.txt"


def display_path(path: str | Path) -> str:
    """``path`` as a reader finds it: relative to the repository if inside it, else to the current directory if
    inside that, else as given."""
    resolved = Path(path).resolve()
    for base in (REPO, Path.cwd()):
        try:
            return str(resolved.relative_to(base))
        except ValueError:
            continue
    return str(path)


# -- the catalogue: every results file the package or a lesson names --------------------------------------------------
#
# The one place a results file's name is written (tests/test_results_catalogue.py fails on one elsewhere in the
# package or in a lesson's code, and on a file a lesson's text names that is not here): a lesson or its helper reads
# ``results_files.EXPERIMENT_…``, and a new lesson's files are added here. Names with ``*`` are globs
# (:func:`newest_matching`).

BENCH_ANY = "bench-*.json"
BENCH_NVIDIA_H100_80GB_HBM3_2026_11_25 = "bench-nvidia-h100-80gb-hbm3-2026-11-25.json"
BENCH_NVIDIA_H100_80GB_HBM3_2026_11_26 = "bench-nvidia-h100-80gb-hbm3-2026-11-26.json"
BENCH_NVIDIA_H200_2026_11_26_3 = "bench-nvidia-h200-2026-11-26-3.json"
BENCH_NVIDIA_H200_2026_11_28 = "bench-nvidia-h200-2026-11-28.json"
BENCH_NVIDIA_H200_2026_11_28_2 = "bench-nvidia-h200-2026-11-28-2.json"
BENCH_NVIDIA_H200_2026_11_29_2 = "bench-nvidia-h200-2026-11-29-2.json"  # the first benchmark with step 23
BENCH_NVIDIA_H200_2026_11_29_3 = "bench-nvidia-h200-2026-11-29-3.json"  # step 23 with its copies rounding to TF32
BENCH_NVIDIA_H200_2026_11_30 = "bench-nvidia-h200-2026-11-30.json"  # steps 17 and 21 with TFLOAT32 copies too
COMPILE_TIMES_NVIDIA_H200 = "compile-times-nvidia-h200.json"
EXPERIMENT_ALIGNED_ROWS_NVIDIA_H200 = "experiment-aligned-rows-nvidia-h200.json"  # A copied onto 128-byte rows
EXPERIMENT_ASYNC_COPY_ANY = "experiment-async-copy-*.json"  # step 9 with cp.async copies (deep dive 09)
EXPERIMENT_BEFORE_AFTER_FP32_CONTRACT_NVIDIA_H200 = "experiment-before-after-fp32-contract-nvidia-h200.json"
EXPERIMENT_CALL_OVERHEAD_BEFORE_NVIDIA_H100 = "experiment-call-overhead-before-nvidia-h100.json"  # before launch plans
EXPERIMENT_CALL_OVERHEAD_NVIDIA_H100 = "experiment-call-overhead-nvidia-h100.json"  # host µs per call, launch plans
EXPERIMENT_CLOCKS_UNDER_LOAD_NVIDIA_H200 = "experiment-clocks-under-load-nvidia-h200.json"
EXPERIMENT_CLUSTER_ARRIVALS_NVIDIA_H200 = "experiment-cluster-arrivals-nvidia-h200.json"
EXPERIMENT_CLUSTER_ARRIVALS_NVIDIA_H200_2 = "experiment-cluster-arrivals-nvidia-h200-2.json"
EXPERIMENT_CLUSTER_ARRIVE_SCOPE_NVIDIA_H100 = "experiment-cluster-arrive-scope-nvidia-h100.json"
EXPERIMENT_CLUSTER_ARRIVE_SCOPE_NVIDIA_H200 = "experiment-cluster-arrive-scope-nvidia-h200.json"
EXPERIMENT_CLUSTER_STREAM_K_NVIDIA_H200 = "experiment-cluster-stream-k-nvidia-h200.json"  # step 21 on clusters of two
EXPERIMENT_CLUSTER_STREAM_K_NVIDIA_H200_2 = "experiment-cluster-stream-k-nvidia-h200-2.json"  # the same, again
# … and with a TMA-store epilogue, twice
EXPERIMENT_CLUSTER_STREAM_K_TMA_STORE_NVIDIA_H200 = "experiment-cluster-stream-k-tma-store-nvidia-h200.json"
EXPERIMENT_CLUSTER_STREAM_K_TMA_STORE_NVIDIA_H200_2 = "experiment-cluster-stream-k-tma-store-nvidia-h200-2.json"
EXPERIMENT_CODE_SHAPES_ANY = "experiment-code-shapes-*.json"  # step 9's k-column in equivalent forms (deep dive 09)
EXPERIMENT_FIRST_CALL_NVIDIA_H100 = "experiment-first-call-nvidia-h100.json"
EXPERIMENT_FMA_ORDER_ANY = "experiment-fma-order-*.json"  # step 9 with row-order and serpentine FMAs
EXPERIMENT_FP32_ACCURACY_NVIDIA_H200_2 = "experiment-fp32-accuracy-nvidia-h200-2.json"  # with steps 19-22
EXPERIMENT_K_LOOP_SASS_SM90 = "experiment-k-loop-sass-sm90.json"
EXPERIMENT_MATMUL_HELD_OUT_ANY = "experiment-matmul-held-out-*.json"
EXPERIMENT_MEMORY_BANDWIDTH_ANY = "experiment-memory-bandwidth-*.json"
EXPERIMENT_PERSISTENT_NVIDIA_H200 = "experiment-persistent-nvidia-h200.json"
EXPERIMENT_PINGPONG_NVIDIA_H100 = "experiment-pingpong-nvidia-h100.json"
EXPERIMENT_PINGPONG_FAIR_NCU_NVIDIA_H200 = "experiment-pingpong-fair-ncu-nvidia-h200.json"
EXPERIMENT_PINGPONG_FAIR_NVIDIA_H200 = "experiment-pingpong-fair-nvidia-h200.json"
EXPERIMENT_PINGPONG_FAIR_NVIDIA_H200_2 = "experiment-pingpong-fair-nvidia-h200-2.json"
EXPERIMENT_LOOP_INSTRUCTIONS_NVIDIA_H200 = "experiment-loop-instructions-nvidia-h200.json"
EXPERIMENT_PER_TILE_COST_NVIDIA_H200 = "experiment-per-tile-cost-nvidia-h200.json"
EXPERIMENT_PIPELINING_ANY = "experiment-pipelining-*.json"  # steps 8 and 9 with and without register double buffering
EXPERIMENT_PRODUCER_ORDER_NVIDIA_H200 = "experiment-producer-order-nvidia-h200.json"
EXPERIMENT_REFERENCE_STEPS_17_20_NVIDIA_H200 = "experiment-reference-steps-17-20-nvidia-h200.json"
EXPERIMENT_CLUSTER_3XTF32_NVIDIA_H200 = "experiment-cluster-3xtf32-nvidia-h200.json"  # step 22 on clusters of two
# how cuBLAS TF32 and the TF32 steps read their operands; step 23 with TFLOAT32 tensor maps, then without B's rounding
EXPERIMENT_TF32_OPERAND_ROUNDING_NVIDIA_H200 = "experiment-tf32-operand-rounding-nvidia-h200.json"
EXPERIMENT_TF32_COPIES_NVIDIA_H200 = "experiment-tf32-copies-nvidia-h200.json"
EXPERIMENT_REFERENCE_STEP_23_NVIDIA_H200 = "experiment-reference-step-23-nvidia-h200.json"  # steps 21, 23, both cuBLAS
EXPERIMENT_REGISTER_2D_NVIDIA_H200 = "experiment-register-2d-nvidia-h200.json"
EXPERIMENT_REGISTER_2D_UNSIGNED_ANY = "experiment-register-2d-unsigned-*.json"
EXPERIMENT_SCHEDULING_NVIDIA_H200 = "experiment-scheduling-nvidia-h200.json"
EXPERIMENT_SCHEDULING_FORWARD_WALK_NVIDIA_H200 = (  # stream-K's first version, walking forwards
    "experiment-scheduling-forward-walk-nvidia-h200.json")
EXPERIMENT_SCHEDULING_STREAM_K_KERNEL_NVIDIA_H200 = (  # stream-K before it fell back to step 10's kernel
    "experiment-scheduling-stream-k-kernel-nvidia-h200.json")
EXPERIMENT_SHAPES_BEFORE_GUARDED_LOOPS_NVIDIA_H100 = "experiment-shapes-before-guarded-loops-nvidia-h100.json"
EXPERIMENT_SPECIALIZED_3XTF32_NVIDIA_H200 = "experiment-specialized-3xtf32-nvidia-h200.json"
# step 18 with parts of its work taken away, the same under a sustained load, A split once (twice), B read early
EXPERIMENT_STEP_18_ABLATION_NVIDIA_H200 = "experiment-step-18-ablation-nvidia-h200.json"
EXPERIMENT_STEP_18_ENERGY_NVIDIA_H200 = "experiment-step-18-energy-nvidia-h200.json"
EXPERIMENT_STEP_18_ENERGY_NVIDIA_H200_2 = "experiment-step-18-energy-nvidia-h200-2.json"  # the kernels in reverse
EXPERIMENT_PRESPLIT_A_NVIDIA_H200 = "experiment-presplit-a-nvidia-h200.json"
EXPERIMENT_PRESPLIT_A_NVIDIA_H200_2 = "experiment-presplit-a-nvidia-h200-2.json"
EXPERIMENT_PREFETCH_B_NVIDIA_H200 = "experiment-prefetch-b-nvidia-h200.json"
# step 18's producer loading A from global memory (twice, the second with step 18 last), and that variant's ablations
EXPERIMENT_PRODUCER_LOADS_A_NVIDIA_H200 = "experiment-producer-loads-a-nvidia-h200.json"
EXPERIMENT_PRODUCER_LOADS_A_NVIDIA_H200_2 = "experiment-producer-loads-a-nvidia-h200-2.json"
EXPERIMENT_PRODUCER_LOADS_A_ABLATION_NVIDIA_H200 = "experiment-producer-loads-a-ablation-nvidia-h200.json"
EXPERIMENT_PRODUCER_LOADS_A_STORES_NVIDIA_H200 = "experiment-producer-loads-a-stores-nvidia-h200.json"  # no stores
EXPERIMENT_SMALL_PRODUCT_FLOOR_NVIDIA_H200 = "experiment-small-product-floor-nvidia-h200.json"  # deep dive 25
EXPERIMENT_COPY_EARLY_START_NVIDIA_H200 = "experiment-copy-early-start-nvidia-h200.json"  # deep dive 25
EXPERIMENT_SPLIT_PAYS_NVIDIA_H200 = "experiment-split-pays-nvidia-h200.json"  # deep dive 25
EXPERIMENT_A_ROWS_MOD_4_NVIDIA_H200_2 = "experiment-a-rows-mod-4-nvidia-h200-2.json"  # deep dive 25 (not adopted)
EXPERIMENT_B_ROWS_MOD_4_STEP_18_SMALL_NVIDIA_H200 = "experiment-b-rows-mod-4-step-18-small-nvidia-h200.json"  # the same
EXPERIMENT_SUSPEND_HINT_NVIDIA_H200 = "experiment-suspend-hint-nvidia-h200.json"  # the same
EXPERIMENT_SPLIT_K_TF32_NVIDIA_H200 = "experiment-split-k-tf32-nvidia-h200.json"
EXPERIMENT_SPLIT_K_TF32_NVIDIA_H200_2 = "experiment-split-k-tf32-nvidia-h200-2.json"
EXPERIMENT_STREAM_K_TIMELINE_NVIDIA_H200 = "experiment-stream-k-timeline-nvidia-h200.json"  # step 21's phases
EXPERIMENT_STREAM_K_READER_FENCE_NVIDIA_H100 = "experiment-stream-k-reader-fence-nvidia-h100.json"  # fixup: fence
EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200 = "experiment-tensor-core-stream-k-nvidia-h200.json"  # step 21, run 1
EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200_2 = "experiment-tensor-core-stream-k-nvidia-h200-2.json"
EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200_3 = "experiment-tensor-core-stream-k-nvidia-h200-3.json"  # whole waves
EXPERIMENT_TENSOR_CORE_STREAM_K_NVIDIA_H200_4 = "experiment-tensor-core-stream-k-nvidia-h200-4.json"  # the copies
EXPERIMENT_STEP_20_LEAN_LOOP_NVIDIA_H200 = "experiment-step-20-lean-loop-nvidia-h200.json"  # step 17's loop in step 20
EXPERIMENT_STEP_20_LEAN_LOOP_NVIDIA_H200_2 = "experiment-step-20-lean-loop-nvidia-h200-2.json"  # the same, again
EXPERIMENT_TF32_MINIMUM_SHAPE_NVIDIA_H200_2 = "experiment-tf32-minimum-shape-nvidia-h200-2.json"  # edges or strides
EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200 = "experiment-stream-k-3xtf32-nvidia-h200.json"  # step 22 against step 18
EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200_2 = "experiment-stream-k-3xtf32-nvidia-h200-2.json"  # --pace
EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200_3 = "experiment-stream-k-3xtf32-nvidia-h200-3.json"  # the warp's flag wait
EXPERIMENT_STREAM_K_3XTF32_NVIDIA_H200_4 = "experiment-stream-k-3xtf32-nvidia-h200-4.json"  # short tiles
EXPERIMENT_TENSOR_CORES_FIRST_TRY_NVIDIA_H100 = "experiment-tensor-cores-first-try-nvidia-h100.json"
EXPERIMENT_TENSOR_CORES_NVIDIA_H100 = "experiment-tensor-cores-nvidia-h100.json"
EXPERIMENT_TF32_CONVERSION_NVIDIA_H100 = "experiment-tf32-conversion-nvidia-h100.json"
EXPERIMENT_THREE_TF32_WIDE_NVIDIA_H100 = "experiment-three-tf32-wide-nvidia-h100.json"
EXPERIMENT_TIMELINE_NVIDIA_H200 = "experiment-timeline-nvidia-h200.json"
EXPERIMENT_TIMELINE_PINGPONG_SPECIALIZED_NVIDIA_H100 = "experiment-timeline-pingpong-specialized-nvidia-h100.json"
EXPERIMENT_TIMELINE_WARP_SPECIALIZED_3XTF32_NVIDIA_H200 = "experiment-timeline-warp-specialized-3xtf32-nvidia-h200.json"
EXPERIMENT_TIMELINE_WARP_SPECIALIZED_CLUSTER_MULTICAST_NVIDIA_H200 = (
    "experiment-timeline-warp-specialized-cluster-multicast-nvidia-h200.json")
EXPERIMENT_TIMELINE_WARP_SPECIALIZED_CLUSTER_MULTICAST_NVIDIA_H200_2 = (
    "experiment-timeline-warp-specialized-cluster-multicast-nvidia-h200-2.json")
EXPERIMENT_TIMING_METHOD_NVIDIA_H200 = "experiment-timing-method-nvidia-h200.json"
EXPERIMENT_TMA_STORE_EPILOGUE_NVIDIA_H200 = "experiment-tma-store-epilogue-nvidia-h200.json"
EXPERIMENT_WARPGROUP_ORDER_NVIDIA_H200 = "experiment-warpgroup-order-nvidia-h200.json"
EXPERIMENT_WARPGROUP_OVERLAP_NVIDIA_H100 = "experiment-warpgroup-overlap-nvidia-h100.json"
EXPERIMENT_WARPGROUP_TF32_NVIDIA_H100 = "experiment-warpgroup-tf32-nvidia-h100.json"
EXPERIMENT_WARPGROUP_TMA_BULK_ROWS_NVIDIA_H100 = "experiment-warpgroup-tma-bulk-rows-nvidia-h100.json"
EXPERIMENT_WARPGROUP_TMA_NVIDIA_H100 = "experiment-warpgroup-tma-nvidia-h100.json"
EXPERIMENT_WARPGROUP_TMA_UNIFORM_WAIT_NVIDIA_H100 = "experiment-warpgroup-tma-uniform-wait-nvidia-h100.json"
EXPERIMENT_WGMMA_3XTF32_ACCURACY_NVIDIA_H100 = "experiment-wgmma-3xtf32-accuracy-nvidia-h100.json"
EXPERIMENT_WGMMA_SWAPPED_NVIDIA_H100 = "experiment-wgmma-swapped-nvidia-h100.json"
EXPERIMENT_WGMMA_SWAPPED_REPEAT_NVIDIA_H100 = "experiment-wgmma-swapped-repeat-nvidia-h100.json"
EXPERIMENT_WGMMA_SWAPPED_SWIZZLED_NVIDIA_H100 = "experiment-wgmma-swapped-swizzled-nvidia-h100.json"
HELD_OUT = "held-out-*.json"  # runs of the held-out set (issue 37): held_out_name
NCU_L2_REQUESTS_BY_SOURCE_NVIDIA_H100_TXT = "ncu-l2-requests-by-source-nvidia-h100.txt"
NCU_STEP9_PIPELINED_CUBLAS_NVIDIA_H200_TXT = "ncu-step9-pipelined-cublas-nvidia-h200.txt"
NCU_STEPS_NVIDIA_H100 = "ncu-steps-nvidia-h100"  # a folder: one report per step and cuBLAS, ncu_step_report
NCU_STEPS_17_18_NVIDIA_H100_TXT = "ncu-steps-17-18-nvidia-h100.txt"  # one 4096³ launch of steps 17 and 18
NCU_TENSOR_CORES_NVIDIA_H100_TXT = "ncu-tensor-cores-nvidia-h100.txt"
NCU_LOOP_INSTRUCTIONS_NVIDIA_H200_TXT = "ncu-loop-instructions-nvidia-h200.txt"
NCU_STEP_18_NVIDIA_H200_TXT = "ncu-step-18-nvidia-h200.txt"  # one 4096³ launch of step 18 …
NCU_STEP_22_PERSISTENT_NVIDIA_H200_TXT = "ncu-step-22-persistent-nvidia-h200.txt"  # … and of step 22's persistent loop
NCU_WARPGROUP_ORDER_NVIDIA_H200_TXT = "ncu-warpgroup-order-nvidia-h200.txt"
NCU_WGMMA_SWAPPED_NVIDIA_H100_TXT = "ncu-wgmma-swapped-nvidia-h100.txt"
NCU_WGMMA_SWAPPED_SWIZZLED_NVIDIA_H100_TXT = "ncu-wgmma-swapped-swizzled-nvidia-h100.txt"
REFERENCE_NVIDIA_H200_2026_11_28 = "reference-nvidia-h200-2026-11-28.json"  # what cuBLAS and steps 17-20 run
SHAPES_ANY = "shapes-*.json"  # runs of the shape suite (gemm-steps bench --suite shapes): run_stem
SHAPES_NVIDIA_H200_2026_11_26_2 = "shapes-nvidia-h200-2026-11-26-2.json"
SHAPES_NVIDIA_H200_2026_11_26_3 = "shapes-nvidia-h200-2026-11-26-3.json"
SHAPES_NVIDIA_H200_2026_11_29_5 = "shapes-nvidia-h200-2026-11-29-5.json"  # the first suite with step 21
SHAPES_NVIDIA_H200_2026_11_29_6 = "shapes-nvidia-h200-2026-11-29-6.json"  # the first suite with step 22
SHAPES_NVIDIA_H200_2026_11_29_7 = "shapes-nvidia-h200-2026-11-29-7.json"  # every step as of 2026-11-29 evening
SHAPES_NVIDIA_H200_2026_11_29_8 = "shapes-nvidia-h200-2026-11-29-8.json"  # the first suite with step 23
HELD_OUT_NVIDIA_H200_2026_11_29_16 = "held-out-nvidia-h200-2026-11-29-16.json"  # the first draw with step 22
SIMULATOR_COST_MODEL_2026_11_28 = "simulator-cost-model-2026-11-28.json"
TUNING_ANY = "tuning-*.json"  # tuning sweeps (gemm-steps tune): tuning_name
TUNING_DOUBLE_BUFFERED_ANY = "tuning-double_buffered-*.json"  # step 8's sweep
TUNING_UNROLLED_ANY = "tuning-unrolled-*.json"  # step 7's sweep
TUNING_WARP_TILING_ANY = "tuning-warp_tiling-*.json"  # step 9's sweep
