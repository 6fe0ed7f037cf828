"""The FP32 contract in NumPy: the error measure, the SGEMM reference model, the 3xTF32 models and the input classes.

docs/fp32_contract.md states the contract and why it reads as it does; this module is what the tests
(tests/test_fp32_contract.py) and the GPU checks compute it with.

* :func:`normwise_error` — ``‖C − C64‖_F / ‖|A|·|B|‖_F``, C64 the float64 product: the classical error bound's own
  scale, so it stays meaningful when C cancels to (nearly) zero.
* :func:`sgemm_model` — sequential float32 FMA over k (``c = fma(a_ik, b_kj, c)``, k = 0, 1, …), which is what cuBLAS
  SGEMM's error equals in the shipped results (and what the SIMT steps compute). It also defines the inf/NaN
  pattern the contract asks for (:func:`special_pattern`).
* :func:`split` and :func:`three_tf32_model` — the fixed kernels' split (big rounded to nearest TF32, small scaled by
  2^11) and a model of steps 13/14's arithmetic, so K up to tens of thousands is checked without a GPU.
* :func:`input_classes` — the adversarial classes (name → A, B).
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from ..toolkit.tensor_core_ops import SMALL_SCALE as _SMALL_SCALE, split_tf32_scaled_parts, truncate_to_tf32

#: float32's unit roundoff, 2^-24.
U32 = 2.0 ** -24
#: What the small parts of the split are multiplied by before the tensor core reads them (and what the sum of the
#: small products is divided by afterwards): |small| <= 2^-11·|x|, so small·2^11 never exceeds |x| and stays in
#: TF32's normal range whenever x does (down to |x| = 2^-124; docs/fp32_contract.md).
SMALL_SCALE = float(_SMALL_SCALE)
#: The contract: normwise error <= max(FACTOR · SGEMM model's error, ONE_PRODUCT) (docs/fp32_contract.md says why).
FACTOR = 2.0
#: The worst relative error of a single 3xTF32 product: each operand read to 2^-23 of itself, the dropped
#: small·small term up to 2^-22, and the result's rounding to float32 (2^-24): 2^-21 + 2^-24 = 9·u32.
ONE_PRODUCT = 2.0 ** -21 + 2.0 ** -24


def normwise_error(c, a, b, exact: np.ndarray | None = None) -> float:
    """``‖C − A·B‖_F / ‖|A|·|B|‖_F`` in float64 (0/0 = 0). NaN if C has inf/NaN where A·B is finite."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    exact = a64 @ b64 if exact is None else exact
    scale = float(np.linalg.norm(np.abs(a64) @ np.abs(b64)))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = float(np.linalg.norm(np.asarray(c, np.float64) - exact))
    return diff / scale if scale > 0 else diff


def sgemm_model(a, b) -> np.ndarray:
    """C = A·B by sequential float32 FMA: ``c = fma(a[i, k], b[k, j], c)`` for k = 0 … K−1, from c = 0.

    Emulated in float64: a float32 product is exact there; the sum of c and the product is rounded to float64
    and then to float32 (a double rounding that differs from one FMA only in rare near-ties). Overflow, inf and
    NaN follow IEEE arithmetic as the FMA does, and results below 2^-126 are rounded to float32's subnormals. Stacks
    of matrices (leading dimensions) are multiplied pairwise, all in one pass over k."""
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    a64, b64 = a32.astype(np.float64), b32.astype(np.float64)
    c = np.zeros(a32.shape[:-1] + b32.shape[-1:], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(a32.shape[-1]):
            c = (c.astype(np.float64) + a64[..., k:k + 1] * b64[..., k:k + 1, :]).astype(np.float32)
    return c


def special_pattern(c) -> np.ndarray:
    """Where C is NaN (code 3), +inf (1), −inf (2) or finite (0): the pattern the contract compares."""
    c = np.asarray(c)
    return np.where(np.isnan(c), 3, np.where(np.isposinf(c), 1, np.where(np.isneginf(c), 2, 0)))


def split(x) -> tuple[np.ndarray, np.ndarray]:
    """The fixed kernels' split of float32 ``x`` (:func:`gemm_steps.toolkit.tensor_core_ops.split_tf32_scaled`):
    ``big`` = x rounded to the nearest TF32 value (the bits plus half a TF32 unit, low 13 bits cleared) and
    ``small`` = (x − big)·2^11, both exact in float32 for finite x below 2^128·(1 − 2^-12)."""
    return split_tf32_scaled_parts(np.asarray(x, np.float32))


def _f32(x: np.ndarray, truncate: bool) -> np.ndarray:
    """float64 → float32, to nearest, or toward zero (the tensor core's accumulator, as a pessimistic model)."""
    with np.errstate(invalid="ignore", over="ignore"):
        y = x.astype(np.float32)
        if truncate:
            up = np.isfinite(x) & (np.abs(y.astype(np.float64)) > np.abs(x))
            y = np.where(up, np.nextafter(y, np.float32(0)), y)
    return y


def three_tf32_model(a, b, *, step: int = 14, rounding: str = "nearest", scaled: bool = True,
                     accumulator: str = "nearest", block_k: int = 32) -> np.ndarray:
    """C = A·B as step 13 or 14 computes it, in NumPy (inputs finite: specials take the kernels' SGEMM path).

    ``rounding``: how the split picks big — ``"nearest"`` (the fixed kernels, both operands) or ``"truncate_a"``
    (step 14 before the fix: A's big is A truncated to TF32, as the tensor core reads the staged tile).
    ``scaled``: small parts multiplied by 2^11 before the tensor core reads them (the fix) or not.
    ``accumulator``: each tensor-core instruction's float32 result rounded to nearest (the simulator's twins) or
    toward zero (a pessimistic stand-in for the hardware's truncating accumulator, lesson 13).
    Step 13: per 8 k, small products summed by two mma from zero, big·big by a third, the two added to the running
    sum in float32 (big + small·2^-11, one FMA, then the add). Step 14: per ``block_k`` k, big·big summed by the
    tensor core from zero and added to the running sum in float32; the small products accumulate in the tensor
    core over all of K; the two sums meet once, at the store. Stacks of matrices are multiplied pairwise."""
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    scale = SMALL_SCALE if scaled else 1.0
    ab, as_ = split(a32)
    bb, bs = split(b32)
    if not scaled:
        as_, bs = (x / np.float32(SMALL_SCALE) for x in (as_, bs))
    if rounding == "truncate_a":
        ab = truncate_to_tf32(a32)
        with np.errstate(invalid="ignore"):
            as_ = ((a32 - ab) * np.float32(scale)).astype(np.float32)
    ab, as_, bb, bs = (truncate_to_tf32(x).astype(np.float64) for x in (ab, as_, bb, bs))  # as the tensor core reads
    truncate = accumulator == "truncate"
    k = a32.shape[-1]
    total = np.zeros(a32.shape[:-1] + b32.shape[-1:], np.float32)
    small_sum, big = np.zeros_like(total), np.zeros_like(total)

    def t(x):  # a stack's transpose
        return np.swapaxes(x, -1, -2)

    step_k = 8 if step == 13 else block_k
    for k0 in range(0, k, step_k):
        for s in range(k0, min(k0 + step_k, k), 8):
            q = slice(s, min(s + 8, k))
            if step == 13:
                d_small = _f32(as_[..., q] @ bb[..., q, :], truncate)
                d_small = _f32(ab[..., q] @ bs[..., q, :] + d_small, truncate)
                d_big = _f32(ab[..., q] @ bb[..., q, :], truncate)
                with np.errstate(over="ignore", invalid="ignore"):
                    correction = (d_big.astype(np.float64) + d_small.astype(np.float64) / scale).astype(np.float32)
                    total = (total + correction).astype(np.float32)
            else:
                small_sum = t(_f32(t(bs[..., q, :]) @ t(ab[..., q]) + t(small_sum), truncate))
                small_sum = t(_f32(t(bb[..., q, :]) @ t(as_[..., q]) + t(small_sum), truncate))
                big = _f32(ab[..., q] @ bb[..., q, :] + (0 if s == k0 else big), truncate)
        if step == 14:
            total = (total + big).astype(np.float32)
    if step == 14:
        with np.errstate(over="ignore", invalid="ignore"):
            total = (total.astype(np.float64) + small_sum.astype(np.float64) / scale).astype(np.float32)
    return total


def contract_bound(sgemm_error: float) -> float:
    """The largest normwise error the contract allows where the SGEMM model's is ``sgemm_error``."""
    return max(FACTOR * sgemm_error, ONE_PRODUCT)


# ----------------------------------------------------------------------------------------------------------------
# The adversarial input classes.

#: Powers of two whole matrices are scaled by (A's, B's): across float32's range, the product staying finite and
#: its terms above 2^-100 (the relative contract's range; docs/fp32_contract.md).
SCALES = [(-120, 100), (-100, -20), (-60, 50), (60, -70), (100, 0), (0, 100), (-20, -60), (30, 60)]


def input_classes(m: int, n: int, k: int, seed: int = 0) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """The finite adversarial classes at one shape: (name, A, B), float32."""
    rng = np.random.default_rng(seed)

    def normal(r, c):
        return rng.standard_normal((r, c)).astype(np.float32)

    yield "standard normal", normal(m, k), normal(k, n)
    yield "uniform positive", rng.random((m, k), np.float32), rng.random((k, n), np.float32)
    wide = 40  # per-element exponents 2^-40 … 2^40: products 2^-80 … 2^80
    yield ("per-element exponents", (normal(m, k) * np.exp2(rng.integers(-wide, wide + 1, (m, k)))).astype(np.float32),
           (normal(k, n) * np.exp2(rng.integers(-wide, wide + 1, (k, n)))).astype(np.float32))
    for sa, sb in SCALES:
        yield (f"scaled 2^{sa}·A, 2^{sb}·B", (normal(m, k) * np.float32(2.0 ** sa)).astype(np.float32),
               (normal(k, n) * np.float32(2.0 ** sb)).astype(np.float32))
    rows = np.exp2(rng.integers(-30, 31, (m, 1))).astype(np.float32)
    cols = np.exp2(rng.integers(-30, 31, (1, n))).astype(np.float32)
    yield "rows and columns of mixed magnitude", normal(m, k) * rows, normal(k, n) * cols
    a = normal(m, k)
    a[:, : max(1, k // 2)] *= np.float32(2.0 ** 20)  # half of each dot product huge, half tiny: cancellation
    b = normal(k, n)
    yield "mixed magnitude along k", a, b
    half = k // 2  # C = A·B − A'·B with A' within 2^-10 of A: C is about 2^-10 of its terms (K = 1: no partner)
    a, b = normal(m, k), normal(k, n)
    if half:
        a[:, half: 2 * half] = a[:, :half] * (1 + np.float32(2.0 ** -10) * normal(m, half))
        b[half: 2 * half] = -b[:half]
    yield "cancellation", a, b
    tf32 = (rng.integers(-1024, 1024, (m, k)) * 2.0 ** -10).astype(np.float32)  # exact in TF32: small parts are 0
    yield "TF32-exact A", tf32, normal(k, n)
    near_max = normal(m, k)
    near_max.flat[:: max(1, near_max.size // 3)] = np.float32(3.4e38) / np.float32(2.0 ** 40)
    yield "large entries", near_max, normal(k, n) * np.float32(2.0 ** -90)


def special_inputs(m: int, n: int, k: int, seed: int = 0) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Inputs with inf, −inf and NaN (name, A, B): every way a special value meets the other operand."""
    rng = np.random.default_rng(seed)
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    gpu_nan = np.array(0x7FFFFFFF, np.uint32).view(np.float32)  # a GPU's own NaN: top mantissa bits all 1
    low_nan = np.array(0x7F800001, np.uint32).view(np.float32)  # payload in the 13 bits TF32 drops

    def base():
        return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)

    for name, value in (("inf", inf), ("-inf", -inf), ("nan", nan), ("gpu nan", gpu_nan), ("low-payload nan", low_nan)):
        a, b = base()
        a[min(1, m - 1), min(2, k - 1)] = value
        yield f"{name} in A", a, b
        a, b = base()
        b[min(2, k - 1), min(1, n - 1)] = value
        yield f"{name} in B", a, b
    a, b = base()
    a[0, 0] = inf
    b[0, :] = np.float32(1.0)  # TF32-exact partners: their small parts are 0 (inf·0 in a cross term)
    b[0, min(1, n - 1)] = 0.0  # inf·0 in the product itself: NaN
    yield "inf times TF32-exact and zero", a, b
    a, b = base()
    a[0, 0], a[0, min(1, k - 1)] = inf, -inf  # inf − inf across k (K ≥ 2): NaN; K = 1: just −inf
    yield "inf and -inf in one row", a, b
    a, b = base()
    a[min(1, m - 1), 0] = inf
    b[0, 0] = inf
    b[0, min(1, n - 1)] = -inf
    yield "inf times inf", a, b
    a, b = base()
    a[0, :] = np.float32(3.4e38)  # finite, but the sum overflows: SGEMM gives ±inf
    yield "finite overflow", a, b


def ratio_table(ks=(1, 2, 8, 32, 256, 2048, 16384), m: int = 16, n: int = 16, **model) -> list[dict]:
    """Normwise errors of the 3xTF32 model and the SGEMM model per class and K, and their ratio."""
    rows = []
    for k in ks:
        for name, a, b in input_classes(m, n, k, seed=k):
            exact = a.astype(np.float64) @ b.astype(np.float64)
            ref = normwise_error(sgemm_model(a, b), a, b, exact)
            got = normwise_error(three_tf32_model(a, b, **model), a, b, exact)
            rows.append({"K": k, "class": name, "sgemm": ref, "3xtf32": got,
                         "ratio": got / ref if ref > 0 else math.inf,
                         "bound": contract_bound(ref)})
    return rows


def main() -> None:
    """Print :func:`ratio_table` for the fixed kernels' models and the variants before the fix (slow: a minute)."""
    variants = {"fixed14": {"step": 14}, "fixed13": {"step": 13},
                "fixed14, truncating accumulator": {"step": 14, "accumulator": "truncate"},
                "trunc_a14 (A truncated, small scaled)": {"step": 14, "rounding": "truncate_a"},
                "before the fix (step 14)": {"step": 14, "rounding": "truncate_a", "scaled": False}}
    for name, model in variants.items():
        print(f"== {name}: normwise error / SGEMM model's, and / the contract's bound")
        for row in ratio_table(**model):
            print(f"  K={row['K']:<6} {row['class']:38s} {row['ratio']:7.2f}× SGEMM   "
                  f"{row['3xtf32'] / row['bound']:6.2f} of bound")


if __name__ == "__main__":
    main()
