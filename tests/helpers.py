"""What the tests share: random inputs, the float64 reference, the error measure and the tolerance.

The tolerance and the error measure are :mod:`gemm_steps.harness.verify`'s — one definition for
``gemm-steps verify``, the lessons and the tests. In short (the full argument is
:func:`gemm_steps.harness.verify.tolerance`'s docstring):

* a float32 sum of K products rounds K times, each rounding up to eps32/2 of the running sum; on random data the
  errors have random signs and add like a random walk, so a correct kernel's relative error grows like
  ``eps32·√K`` (measured 0.15–0.25 × eps32·√K, worst draw seen 0.9×), and the tolerance is ``4·eps32·√K``
  (1.5e-5 at K = 1024) — no floor, no extra slack;
* a real bug is far above it: one dropped k term moves C by ~1/√K relative (0.1 at K = 80), a dropped k-tile or a
  wrong index by O(1), a single wrong element of a 128×128 result by ~1/128; an unwritten element is NaN.

The error is ``‖C − ref‖ / ‖ref‖`` in float64, with ``‖ref‖`` replaced by ``‖|A|·|B|‖/√K`` when that is larger
(cancellation in tiny products; see :func:`gemm_steps.harness.verify.relative_error`).
"""

from __future__ import annotations

import operator
import re
import zlib
from pathlib import Path

import numpy as np

from gemm_steps.harness.verify import relative_error, tolerance, tolerance_for  # noqa: F401  (re-exported for the tests)
from gemm_steps.harness.simulator import tile_geometry  # noqa: F401  (re-exported)
from gemm_steps.toolkit.tma_tiles import ClusterStreamKTmaTiles

#: This checkout.
REPO = Path(__file__).resolve().parent.parent

__all__ = ["tolerance", "relative_error", "rel_error", "reference", "random_matrices", "rng_for", "assert_close",
           "solution_source", "planted_source",
           "outputs_per_thread", "tile_geometry"]


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded from a test's name: fresh for every test, and the same on every run (reproducible)."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def random_matrices(rng: np.random.Generator, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Standard-normal float32 A (m×k) and B (k×n). Never zeros or ones: a dropped term must change the answer."""
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A @ B`` in float64 (exact to far below float32's rounding for these sizes)."""
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)


def rel_error(c, a: np.ndarray, b: np.ndarray, ref: np.ndarray | None = None) -> float:
    """Relative error of a result ``c`` (NumPy or device array) against float64 ``a @ b``; NaN if ``c`` has NaN."""
    if not isinstance(c, np.ndarray):
        c = c.copy_to_host()
    return relative_error(np.asarray(c), np.asarray(a), np.asarray(b), ref)


def assert_close(c, a: np.ndarray, b: np.ndarray, what: str = "", ref: np.ndarray | None = None, step=None) -> None:
    """Every element written (no NaN) and the relative error within :func:`tolerance` of K — or, given the ``step``
    that computed ``c``, within that step's tolerance (:func:`tolerance_for`: the TF32 step has its own)."""
    host = c if isinstance(c, np.ndarray) else c.copy_to_host()
    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    assert host.shape == (m, n), f"{what}: result has shape {host.shape}, expected {(m, n)}"
    assert host.dtype == np.float32, f"{what}: result has dtype {host.dtype}"
    unwritten = np.argwhere(np.isnan(host))
    assert unwritten.size == 0, (f"{what}: {len(unwritten)} of {m * n} elements never written (NaN), "
                                 f"first at {tuple(int(i) for i in unwritten[0])}")
    err, tol = rel_error(host, a, b, ref), (tolerance(k) if step is None else tolerance_for(step, k))
    if not err <= tol:
        ref = reference(a, b) if ref is None else ref
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(host - ref)), host.shape))
        raise AssertionError(f"{what}: relative error {err:.3e} > tolerance {tol:.3e} for {m}×{n}×{k}; "
                             f"worst element {worst}: got {float(host[worst])!r}, expected {float(ref[worst])!r}")


# -- how big a product the simulator can afford, per step ------------------------------------------------------

def outputs_per_thread(config: dict) -> int:
    _, _, tm, tn = tile_geometry(config)
    return tm * tn


def synthetic_results(date="2026-01-01T00:00:00+00:00", gpu="NVIDIA H200 (synthetic test data)", names=None):
    """A results document shaped like bench.run_benchmark's, with made-up numbers: for tests only, never shipped."""
    if names is None:
        from gemm_steps import steps

        names = [s.name for s in steps()]
    records = []
    for n in (256, 1024):
        flop = 2.0 * n**3
        cublas_ms = flop / 50e12 * 1e3
        records.append({"step": "cublas", "number": 0, "M": n, "N": n, "K": n, "median_ms": cublas_ms,
                        "tflops": 50.0, "cublas_median_ms": cublas_ms, "pct_of_cublas": 100.0})
        for number, name in enumerate(names, start=1):
            tflops = 0.5 * 1.5**number
            ms = flop / (tflops * 1e12) * 1e3
            records.append({"step": name, "number": number, "M": n, "N": n, "K": n, "median_ms": ms,
                            "tflops": tflops, "cublas_median_ms": cublas_ms, "pct_of_cublas": 100 * cublas_ms / ms})
    env = {"date": date, "simulator": False, "gpu": gpu, "sm_count": 132, "sm_clock_max_mhz": 1980.0,
           "fp32_peak_tflops_estimate": 66.9, "numba_cuda": "test", "numpy": "test"}
    return {"schema": 1, "environment": env, "method": {}, "records": records}


#: A claim's comparison (PTX_EXPECT, PTXAS_EXPECT): ``">=1"`` → operator.ge.
COMPARE = {"==": operator.eq, ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def parse_expectation(spec) -> tuple[str, int]:
    """``3`` → ("==", 3); ``">=1"`` → (">=", 1)."""
    if isinstance(spec, bool) or not isinstance(spec, (int, str)):
        raise ValueError(f"bad PTX_EXPECT value {spec!r}: use an int or a string like '>=4'")
    if isinstance(spec, int):
        return "==", spec
    match = re.fullmatch(r"\s*(==|>=|<=|>|<)\s*(\d+)\s*", spec)
    if not match:
        raise ValueError(f"bad PTX_EXPECT value {spec!r}: use an int or a string like '>=4'")
    return match.group(1), int(match.group(2))


# -- exercises: a solution as a learner's file, and wrong solutions planted in it -----------------------------------

def solution_source(name: str) -> str:
    """Exercise ``name``'s shipped solution as a learner's file: gemm_steps imported first, the package's relative
    imports made absolute (the file is loaded from outside the package)."""
    import inspect

    from gemm_steps.course import exercises

    source = inspect.getsource(exercises.get(name).solution()).replace("from ..toolkit", "from gemm_steps.toolkit")
    return "import gemm_steps  # noqa: F401\n" + source


def planted_source(name: str, edits, docstring: str | None = None) -> str:
    """A wrong solution of one kind: exercise ``name``'s solution (:func:`solution_source`) with each ``(old, new)``
    edit of ``edits`` made, each ``old`` found exactly once; ``docstring`` replaces the module's (what is wrong)."""
    source = solution_source(name)
    if docstring is not None:
        source = re.sub(r'""".*?"""', lambda _: f'"""{docstring}"""', source, count=1, flags=re.S)
    for old, new in edits:
        assert source.count(old) == 1, f"the solution of {name} no longer contains {old!r} once"
        source = source.replace(old, new)
    return source


def planted_file(name: str, case: str, mistake, folder) -> Path:
    """A wrong solution of exercise ``name`` — ``mistake`` is (what is wrong, its edits: :func:`planted_source`) —
    written as ``<case>.py`` in ``folder`` (the name the grader's messages show), its docstring saying what is wrong."""
    what, edits = mistake
    path = Path(folder) / f"{case}.py"
    path.write_text(planted_source(name, edits, docstring=f"Wrong on purpose: {what}"))
    return path


# -- the TMA steps' border tests (test_tma_edges, test_partial_3xtf32, test_tma_store_epilogue) ------------------------
#: Floats of NaN before and after C in its buffer (256 bytes: C stays 16-byte aligned).
C_MARGIN = 64


def nan_c_with_margin(m: int, n: int):
    """C (m × n, NaN) as a view into a device buffer with C_MARGIN NaN floats on either side: (buffer, C)."""
    from numba import cuda

    buffer = cuda.to_device(np.full(m * n + 2 * C_MARGIN, np.nan, np.float32))
    return buffer, buffer[C_MARGIN: C_MARGIN + m * n].reshape(m, n)


def only_c_written(buffer, m: int, n: int) -> np.ndarray:
    """C out of :func:`nan_c_with_margin`'s buffer, after checking that nothing around it was written."""
    everything = buffer.copy_to_host()
    assert np.isnan(everything[:C_MARGIN]).all() and np.isnan(everything[-C_MARGIN:]).all(), "written outside C"
    return everything[C_MARGIN:-C_MARGIN].reshape(m, n)


def run_in_nan_margin(kernels, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A·B by ``kernels.launch`` into a NaN-poisoned C inside a NaN margin; checks that nothing outside C was
    written; returns C."""
    from numba import cuda

    m, n = a.shape[0], b.shape[1]
    buffer, c = nan_c_with_margin(m, n)
    kernels.launch(cuda.to_device(a), cuda.to_device(b), c)
    return only_c_written(buffer, m, n)


def spy_launches(monkeypatch, kernels) -> list:
    """Record each launch ``kernels`` (a TMA build) or its partial-tile build configures: (variant, grid); its
    ``thread_copies`` build's as ("thread copies: <variant>", grid), its ``b_rows`` build's as ("B by rows mod 4:
    <variant>", grid). (Its
    "edge" launch is configured by the build its edge kernel comes from, through the same method: that inner call is
    not a second launch.)"""
    from gemm_steps.toolkit.tiles import TiledKernels

    launched: list = []
    original = TiledKernels.configured
    ours = (kernels, getattr(kernels, "partial", None) or kernels)
    threads = getattr(kernels, "thread_copies", None)
    b_rows = getattr(kernels, "b_rows", None)

    def spy(self, which, grid, stream, launches=None):
        if any(self is built for built in ours):
            launched.append((which, grid))
        elif threads is not None and self is threads:
            launched.append((f"thread copies: {which}", grid))
        elif b_rows is not None and self is b_rows:
            launched.append((f"B by rows mod 4: {which}", grid))
        return original(self, which, grid, stream, launches)

    monkeypatch.setattr(TiledKernels, "configured", spy)
    return launched


def spy_row_copies(monkeypatch) -> list:
    """Which matrix ("A" or "B") each launch of ``copy_rows_kernel`` (``TmaTiles.readable_copy``) copied, in order."""
    from gemm_steps.toolkit.tma_tiles import TmaTiles, copy_rows_kernel

    copied: list = []
    original = TmaTiles.launch_or_record

    def spy(function, signature, blocks, threads, stream, arguments, launches=None):
        if function is copy_rows_kernel:
            copied.append("AB"[int(arguments[6])])
        return original(function, signature, blocks, threads, stream, arguments, launches)

    monkeypatch.setattr(TmaTiles, "launch_or_record", staticmethod(spy))
    return copied


def record_schedule_launches(built, launches: list, label: str | None = None, blocks: int | None = None) -> list:
    """Make a scheduled build (``StreamKTmaTiles``, ``PersistentTmaTiles``…, whose launch ends with two counts, or
    with two counts and C's map: ``ClusterStreamKTmaTiles``) record
    each launch in ``launches`` as (``label``, or the variant's name where there is none, grid, the two counts);
    ``blocks`` forces its grid size. Returns ``launches``."""
    configured = built.configured

    def recorded(variant_name, grid, stream, plan_launches=None):
        launch = configured(variant_name, grid, stream, plan_launches)

        def call(*arguments):
            counts = arguments[-3:-1] if isinstance(built, ClusterStreamKTmaTiles) else arguments[-2:]  # C's map last
            launches.append((label or variant_name, grid, int(counts[0]), int(counts[1])))
            launch(*arguments)

        return call

    built.configured = recorded
    if blocks is not None:
        built._resident_blocks = {"fast": blocks, "edge": blocks}
    return launches


def record_stream_k_launches(built, blocks: int | None = None) -> list:
    """Make a stream-K build (steps 21, 22: ``StreamKTmaTiles``) and its partial build record each launch as
    (build, grid, dp_tiles, sk_tiles); ``blocks`` forces their grid size."""
    launches = []
    for label, one in (("full", built), ("partial", built.partial)):
        record_schedule_launches(one, launches, label, blocks)
    return launches


def checked_tf32_product(built, m: int, n: int, k: int, name: str, step) -> np.ndarray:
    """C = A·B by ``built`` — a TF32 build of ``step``'s k-tile (its module: steps 21's and its variants) — into NaN
    inside a NaN margin: nothing written outside C, every element of C written, within ``step``'s TF32 tolerance
    against float64 and, sharper, within the float32 tolerance against float64 on TF32 inputs (what the k-tile
    multiplies: A truncated and B rounded — or, where a build's copy engine rounds (``TF32_COPIES``: step 23), both
    rounded to nearest, ties to even, unless it handed the product to a build that truncates A, step 17's or step
    21's). Returns C."""
    from numba import cuda

    a, b = random_matrices(rng_for(name), m, n, k)
    buffer, c = nan_c_with_margin(m, n)
    built.launch(cuda.to_device(a), cuda.to_device(b), c)
    result = only_c_written(buffer, m, n)
    assert not np.isnan(result).any(), f"{int(np.isnan(result).sum())} elements unwritten"
    error, limit = rel_error(result, a, b), tolerance_for(step, k)
    assert error <= limit, f"error {error:.2e} > TF32 tolerance {limit:.2e}"
    on_tf32 = rel_error(result, *tf32_inputs(a, b, False))
    if getattr(built, "constants", {}).get("TF32_COPIES"):
        on_tf32 = min(on_tf32, rel_error(result, *tf32_inputs(a, b, True)))
    assert on_tf32 <= tolerance(k), f"error {on_tf32:.2e} on TF32 inputs > {tolerance(k):.2e}"
    return result


def tf32_inputs(a: np.ndarray, b: np.ndarray, copies_round: bool) -> tuple[np.ndarray, np.ndarray]:
    """A and B as a TF32 build's tensor core multiplies them: rounded to nearest, ties to even, where its copy engine
    loads them through TFLOAT32 maps (``copies_round``: ``TF32_COPIES``, steps 17, 21 and 23, and the experiments'
    builds made from step 17's configuration, since 2026-11-30); else A truncated (the tensor core reads it from shared
    memory as float32) and B rounded, ties away (the consumers' two instructions)."""
    from gemm_steps.toolkit.tensor_core_ops import round_to_tf32, round_to_tf32_even, truncate_to_tf32

    if copies_round:
        return round_to_tf32_even(a), round_to_tf32_even(b)
    return truncate_to_tf32(a), round_to_tf32(b)


def tf32_product(a: np.ndarray, b: np.ndarray, copies_round: bool) -> np.ndarray:
    """The float64 product of :func:`tf32_inputs`."""
    a_read, b_read = tf32_inputs(a, b, copies_round)
    return a_read.astype(np.float64) @ b_read.astype(np.float64)


def tf32_fed(a: np.ndarray, b: np.ndarray, built) -> np.ndarray:
    """:func:`tf32_product` for the build ``built`` (its ``TF32_COPIES``)."""
    return tf32_product(a, b, bool((getattr(built, "constants", None) or {}).get("TF32_COPIES")))
