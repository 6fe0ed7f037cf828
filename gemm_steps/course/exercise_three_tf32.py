"""The grader of exercise ``three_tf32`` (lesson 13): split each float32 into big + small TF32 parts and sum the three
products on one warp's ``mma_tf32`` — graded by the kernel's measured error against the FP32 contract.

``exercises.py`` registers the exercise (``Exercise.grader``) and calls :func:`grade`. One warp computes a 16×8 C =
A·B over K (a multiple of 8). The checks, on the simulator:

* **it compiles for a GPU** (``exercises._check_compiles``, the learner's ``split`` compiled with the kernel);
* **finite inputs, against the contract** (docs/fp32_contract.md, item 1): the contract's adversarial classes
  (``fp32_contract.input_classes``, without the one scaled to 2^-120: its small parts fall below float32's normal
  range unless they are scaled by 2^11 as step 13 does, which this exercise leaves out) at K = 16, a class whose
  mantissas end in 13 one bits (where truncating and rounding to TF32 differ most) at K = 16, and uniform positive
  inputs at K = 256. Each C's normwise error ‖C − A·B‖ / ‖|A|·|B|‖ must be within ``contract_bound`` of the
  sequential float32 FMA sum's (``sgemm_model``). The simulator's ``mma_tf32`` is watched, and its float32 results
  are **truncated toward zero** — the model of the tensor core's biased accumulation that lesson 13 measured and the
  contract's model tests use — so a running sum kept in the tensor core's accumulator shows its error growing with K,
  as it did on the H100. Where the bound is missed, the hints come from what was measured: mma calls per k-step,
  whether the running sum went through the mma as C, how closely the learner's ``split`` reads x (big + small as the
  tensor core reads it, against the contract's 2^-23·|x|), and how the error changed from K = 16 to 256;
* **inf and NaN** (item 2): ``split`` on ±inf and three NaNs must give big + small = x; then the contract's special
  inputs (``fp32_contract.special_inputs``, without the finite overflow beyond the contract's premise) must give
  C's inf and NaN exactly where ``sgemm_model`` has them (``special_pattern``).

On a GPU the real tensor core runs the products (no watched twin, no split probes).
"""

from __future__ import annotations

import math

import numpy as np

from ..harness.fp32_contract import (ONE_PRODUCT, contract_bound, input_classes, normwise_error, sgemm_model,
                                     special_inputs, special_pattern)
from ..toolkit.backend import SIMULATOR
from ..toolkit.tensor_core_ops import truncate_to_tf32
from .exercise_tensor_cores import LAUNCH_SECONDS, MmaRecord, run_one_warp, truncating_warp_mma

M, N = 16, 8
#: K of the classes (two k-steps of 8), and of the long sum where an error that grows with K shows.
K_CLASSES, K_LONG = 16, 256
#: Left out: its small parts are subnormal unless scaled by 2^11 (step 13's split_tf32_scaled; not this exercise).
LEFT_OUT = ("scaled 2^-120·A, 2^100·B", "finite overflow")
#: How closely the contract reads each input (docs/fp32_contract.md, item 3): big + small, as the tensor core reads
#: small, within 2^-23·|x|.
READ_BOUND = 2.0 ** -23
SPECIALS = {"+inf": np.float32(np.inf), "-inf": np.float32(-np.inf), "NaN": np.float32(np.nan),
            "a GPU's NaN (0x7FFFFFFF)": np.array(0x7FFFFFFF, np.uint32).view(np.float32)[()],
            "a NaN with only low bits (0x7F800001)": np.array(0x7F800001, np.uint32).view(np.float32)[()]}
NAMES = {0: "finite", 1: "+inf", 2: "-inf", 3: "NaN"}


def low_bits_set(rng, shape) -> np.ndarray:
    """Positive floats whose 13 low mantissa bits are all 1 (top mantissa bits small, exponents 2^-4 … 2^4): rounding
    to TF32 moves them up by one bit at 2^-23, truncating leaves a 13-bit small part the tensor core cuts to 11."""
    top = rng.integers(0, 64, shape, dtype=np.uint32) << np.uint32(13)
    bits = np.uint32(127 << 23) | top | np.uint32((1 << 13) - 1)
    return (bits.view(np.float32) * np.exp2(rng.integers(-4, 5, shape)).astype(np.float32)).astype(np.float32)


def finite_cases(seed: int = 0):
    """(name, A, B) for the finite checks, in the order they are graded."""
    for name, a, b in input_classes(M, N, K_CLASSES, seed):
        if name not in LEFT_OUT:
            yield name, a, b
    rng = np.random.default_rng(seed + 7)
    yield "mantissas ending in 13 one bits", low_bits_set(rng, (M, K_CLASSES)), low_bits_set(rng, (K_CLASSES, N))
    yield "uniform positive", rng.random((M, K_LONG), np.float32), rng.random((K_LONG, N), np.float32)


# -- probing the learner's split (simulator: its Python function) -------------------------------------------------------
def _split_function(module):
    split = getattr(module, "split", None)
    return getattr(split, "py_func", split)


def _bits(x) -> str:
    x = np.float32(x)
    return f"{float(x):g}" if np.isfinite(x) else f"{float(x):g} (0x{int(x.view(np.uint32)):08X})"


def split_problem(module, values: np.ndarray) -> str | None:
    """What is wrong with the learner's split on finite ``values``, measured (None: nothing, or it cannot be called
    here): big not a TF32 number, big + small ≠ x, or x read less closely than the contract's 2^-23·|x|."""
    split = _split_function(module)
    if split is None or not SIMULATOR:
        return None
    worst, where = -1.0, np.float32(0)
    try:
        for x in np.unique(values[np.isfinite(values) & (values != 0)])[:4000]:
            x = np.float32(x)
            big, small = (np.float32(part) for part in split(x))
            if truncate_to_tf32(big) != big:
                return (f"split({float(x):.9g}) gave big = {float(big):.9g}, which has bits TF32 does not keep: the "
                        "tensor core reads it truncated — big = to_tf32(x)")
            if np.float32(big + small) != x:
                return (f"split({float(x):.9g}) gave big + small = {float(np.float32(big + small)):.9g}: small = x − big "
                        "(exact in float32)")
            read = float(truncate_to_tf32(big)) + float(truncate_to_tf32(small))
            error = abs(float(x) - read) / abs(float(x))
            if error > worst:
                worst, where = error, x
    except Exception:
        return None
    if worst <= READ_BOUND:
        return None
    return (f"your split reads x = {float(where):.9g} (bits 0x{int(where.view(np.uint32)):08X}) to 2^{math.log2(worst):.1f} "
            "of itself as the tensor core reads big + small; the contract's 3xTF32 reads every x to 2^-23 "
            "(docs/fp32_contract.md, item 3): big must be x rounded to the nearest TF32 (to_tf32), not truncated — "
            "then small is at most half a TF32 unit and fits in the 11 bits the tensor core reads")


def split_special_problem(module) -> tuple[str, list[str]] | None:
    """None if the learner's split gives big + small = x for ±inf and NaNs; else what it gave, and a hint."""
    split = _split_function(module)
    if split is None:
        return ("split(x) is missing: the exercise's file defines split(x) -> (big, small), a @cuda.jit(device=True) "
                "function", [])
    for name, x in SPECIALS.items():
        try:
            with np.errstate(invalid="ignore", over="ignore"):
                big, small = split(np.float32(x))
                read = np.float32(truncate_to_tf32(np.float32(big)) + truncate_to_tf32(np.float32(small)))
        except Exception as error:
            return f"split({name}) failed: {type(error).__name__}: {error}", []
        if (np.isnan(x) and np.isnan(read)) or read == x:
            continue
        hint = ("for inf, to_tf32 gives inf, and small = inf − inf is NaN: return (x, float32(0.0)) for ±inf"
                if np.isinf(x) else
                "the tensor core reads a NaN's top 10 mantissa bits only, and a NaN whose payload is all in the low "
                "bits reads as inf: for a NaN return (float32(math.nan), float32(0.0)) (math.isnan(x))")
        return (f"split({name}) returned ({_bits(big)}, {_bits(small)}): big + small as the tensor core reads them (top "
                f"10 mantissa bits) is {float(read):g}, where x is {float(x):g} — the contract keeps inf and NaN as they "
                "are (docs/fp32_contract.md, item 2: C holds inf and NaN exactly where the sequential float32 sum does)",
                [hint])
    return None


# -- grading -------------------------------------------------------------------------------------------------------------
def _measure(exercise, kernel, a, b, time_limit):
    from . import exercises

    c = np.full((a.shape[0], b.shape[1]), exercises.POISON_BITS, dtype=np.uint32).view(np.float32)
    failure, observed, record = run_one_warp(exercise, kernel, a, b, c, truncating_warp_mma, time_limit)
    if failure is None and observed is not None and observed.early_read is not None:
        failure = exercises._early_read(observed, c.shape[1])
    return failure, c, record


def _hints(module, record: MmaRecord | None, name: str, a, b, error: float, ratio_short: float | None) -> list[str]:
    """What the measurements point at, beyond the error itself."""
    hints = []
    k_steps = a.shape[1] // 8
    if record is not None:
        per_step = len(record.calls) / k_steps
        if per_step < 3:
            hints.append(f"the warp called mma_tf32 {per_step:g} times per k-step of 8: 3xTF32 sums three products — "
                         "small_a·big_b, big_a·small_b and big_a·big_b (lesson 13, 'Why three products are enough')")
        from_zero = sum(all(v == 0 for lane in call for v in lane[6:]) for call in record.calls)
        if record.calls and from_zero <= 1 and k_steps > 1:
            hints.append("after the first, every mma_tf32 was handed a nonzero C: the running sum goes through the "
                         "tensor core, whose additions truncate (lesson 13, 'The trap') — start each k-step's products "
                         "from zero in the mma and add them to your running sum in FP32 (acc += d + s)")
    if error >= 2.0 ** -8:
        hints.append(f"the error is 2^{math.log2(error):.1f} of |A|·|B|: C is far from A·B — do all three products "
                     "reach acc0 … acc3?")
    elif error > 2.0 ** -16:
        hints.append(f"the error is 2^{math.log2(error):.1f} of |A|·|B|, TF32's size (2^-11 … 2^-13), not float32's: "
                     "a small product is missing or wrong (x = big + small; a·b ≈ big_a·big_b + big_a·small_b + "
                     "small_a·big_b)")
    split_hint = split_problem(module, np.concatenate([a.ravel(), b.ravel()]))
    if split_hint is not None:
        hints.append(split_hint)
    if ratio_short is not None:
        hints.append(f"at K = {K_CLASSES} the same kind of inputs was within the bound ({ratio_short:.2f}× it): an error "
                     "that grows with K")
    return hints


def grade(exercise, module, seed: int = 0, say=None, time_limit: float = LAUNCH_SECONDS, compile: bool = True):
    from . import exercises

    report = exercises.Report(exercise)
    kernel = exercises.kernel_or_failure(exercise, module, report)
    if kernel is None:
        return report
    if getattr(module, "split", None) is None:
        return report.fail("split(x) is not defined in the file: the exercise is split(x) -> (big, small), a "
                           "@cuda.jit(device=True) function, and the kernel that uses it")
    if compile and not exercises.compiles(exercise, module, report):
        return report
    time_limit = min(time_limit, LAUNCH_SECONDS)
    ratios = {}
    for name, a, b in finite_cases(seed):
        k = a.shape[1]
        if say is not None:
            say(f"  …     K = {k}, {name}")
        failure, c, record = _measure(exercise, kernel, a, b, time_limit)
        if failure is not None:
            return report.fail(f"K = {k}, {name}: {failure}")
        with np.errstate(invalid="ignore", over="ignore"):
            sgemm = normwise_error(sgemm_model(a, b), a, b)
            error = normwise_error(c, a, b)
        bound = contract_bound(sgemm)
        if not error <= bound:
            shown = f"{error:.2e} = {error / bound:.1f}× the bound" if np.isfinite(error) else "not finite (inf or NaN)"
            return report.fail(
                f"K = {k}, {name}: error {shown} — the FP32 contract allows {bound:.2e}, max(2 × the sequential "
                f"float32 sum's {sgemm:.2e}, 9u = {ONE_PRODUCT:.2e}); error = ‖C − A·B‖ / ‖|A|·|B|‖ "
                "(docs/fp32_contract.md, item 1)",
                *_hints(module, record, name, a, b, error if np.isfinite(error) else 1.0,
                        ratios.get((name, K_CLASSES)) if k != K_CLASSES else None))
        ratios[name, k] = error / bound
    worst = max(ratios, key=ratios.get)
    short = sum(k == K_CLASSES for _, k in ratios)
    report.ok(f"finite inputs: {short} classes at K = {K_CLASSES} and {len(ratios) - short} at K = {K_LONG}, each within "
              f"the FP32 contract's bound (worst: {worst[0]} at K = {worst[1]}, {ratios[worst]:.2f}× it)"
              + (", the tensor core's float32 sums truncated toward zero as lesson 13 models them" if SIMULATOR else ""))
    if SIMULATOR:
        found = split_special_problem(module)
        if found is not None:
            return report.fail(found[0], *found[1])
    specials = [(name, a, b) for name, a, b in special_inputs(M, N, K_CLASSES, seed) if name not in LEFT_OUT]
    for name, a, b in specials:
        if say is not None:
            say(f"  …     K = {K_CLASSES}, {name}")
        failure, c, _ = _measure(exercise, kernel, a, b, time_limit)
        if failure is not None:
            return report.fail(f"{name}: {failure}")
        with np.errstate(invalid="ignore", over="ignore"):
            got, want = special_pattern(c), special_pattern(sgemm_model(a, b))
        if (got != want).any():
            i, j = (int(x) for x in np.argwhere(got != want)[0])
            return report.fail(
                f"{name} (K = {K_CLASSES}): C[{i}][{j}] is {NAMES[int(got[i, j])] if got[i, j] else f'{c[i, j]:g}'} where "
                f"the sequential float32 sum has {NAMES[int(want[i, j])]} ({int((got != want).sum())} elements differ; "
                "docs/fp32_contract.md, item 2)",
                "an inf times B's small parts — which have either sign — gives +inf and −inf in the small products, "
                "and their sum is NaN: where the big products' sum d is inf or NaN, let it join the running sum alone "
                "(acc += d + s if math.isfinite(d) else d)")
    report.ok(f"inf and NaN: split keeps them whole, and {len(specials)} inputs with inf or NaN give C's inf and NaN "
              "exactly where the sequential float32 sum has them" if SIMULATOR else
              f"inf and NaN: {len(specials)} inputs give C's inf and NaN exactly where the sequential float32 sum has "
              "them")
    return report


def solution():
    from . import exercise_solutions_tensor_cores

    return exercise_solutions_tensor_cores


def time_against_step(exercise, module) -> str:
    return ("one warp's 16×8 tile over K: nothing here to time against step 13's kernel (lesson 13 times the step; "
            "gemm-steps bench --steps 13)")
