"""The FP32 contract (docs/fp32_contract.md), adversarially: every kernel that claims float32 accuracy — the SIMT steps
9–11 and the 3xTF32 steps 13 and 14 — against the sequential-FMA SGEMM model, class by class.

On the simulator the shapes are tiny: the classes are packed block-diagonally into one product per launch (class i
owns rows R_i, columns C_i and a k-range K_i of its own, zeros elsewhere, so C[R_i, C_i] = A_i·B_i exactly and the
other blocks are exact zeros), one launch for the finite classes at small K, one at larger K, one for the specials.
K in the tens of thousands is checked on the NumPy models of the kernels (:mod:`gemm_steps.harness.fp32_contract`);
on a GPU (``-m gpu``) the same classes run at larger shapes against cuBLAS SGEMM itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness import fp32_contract as contract
from gemm_steps.harness.step import get_step
from gemm_steps.toolkit.tensor_core_ops import split_tf32_scaled, split_tf32_scaled_parts

SIMT_STEPS = [9, 10, 11]
THREE_TF32_STEPS = [13, 14]
STEPS = SIMT_STEPS + THREE_TF32_STEPS
#: On a GPU every step that keeps the contract, steps 18 and 22 (3xTF32 on the warp-specialized design, and on its
#: stream-K schedule) too. On the simulator
#: step 18 runs what its own code makes new — the specials' vote with the producer warpgroup in it, and several
#: k-tiles of its one-accumulator sum — and the GPU tests run every class on it.
GPU_STEPS = STEPS + [18, 22]
SPECIALIZED_3XTF32 = [18]

simulator_only = pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="simulator-sized; on a GPU the gpu tests run")


def _tile(number: int) -> tuple[int, int]:
    """The product's M × N: one block tile of the 3xTF32 steps (their fast kernel), 32 × 32 for the SIMT steps (their
    simulator tiles are 128 × 256: the edge kernel, which is theirs line for line)."""
    if number in THREE_TF32_STEPS + SPECIALIZED_3XTF32:
        config = get_step(number).module.TUNING.kernels().config
        return config.BLOCK_M, config.BLOCK_N
    return 32, 32


def _round_up(x: int, to: int) -> int:
    return -(-x // to) * to


def pack(classes, multiple_of=(1, 1, 1)) -> tuple[np.ndarray, np.ndarray, list]:
    """Block-diagonal packing of [(name, A_i, B_i)]: (A, B, [(name, rows, cols, A_i, B_i)]), M, N and K padded
    with zeros up to multiples of ``multiple_of`` (a whole number of tiles: the fast kernels run)."""
    m = _round_up(sum(a.shape[0] for _, a, _ in classes), multiple_of[0])
    n = _round_up(sum(b.shape[1] for _, _, b in classes), multiple_of[1])
    k = _round_up(sum(a.shape[1] for _, a, _ in classes), multiple_of[2])
    a_all, b_all = np.zeros((m, k), np.float32), np.zeros((k, n), np.float32)
    blocks, r, c, q = [], 0, 0, 0
    for name, a, b in classes:
        rows, cols, ks = slice(r, r + a.shape[0]), slice(c, c + b.shape[1]), slice(q, q + a.shape[1])
        a_all[rows, ks], b_all[ks, cols] = a, b
        blocks.append((name, rows, cols, a, b))
        r, c, q = r + a.shape[0], c + b.shape[1], q + a.shape[1]
    return a_all, b_all, blocks


def _run(number: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A·B by step ``number`` on device arrays, C poisoned with NaN first (an unwritten element stays NaN)."""
    step = get_step(number)
    if step.unavailable():  # a GPU without the step's instructions (step 14 needs compute capability 9.0)
        pytest.skip(step.unavailable())
    c = cuda.to_device(np.full((a.shape[0], b.shape[1]), np.nan, np.float32))
    step(cuda.to_device(np.ascontiguousarray(a)), cuda.to_device(np.ascontiguousarray(b)), out=c)
    return c.copy_to_host()


def finite_classes(count_rows: int, count_cols: int, k: int, seed: int):
    """The finite classes at K = k, each as a count_rows × count_cols block (one draw per class)."""
    return list(contract.input_classes(count_rows, count_cols, k, seed=seed))


def contract_failures(c: np.ndarray, blocks) -> list[str]:
    """The blocks of C whose normwise error exceeds the contract's bound (and off-diagonal blocks that are not 0)."""
    failures = []
    covered = np.zeros(c.shape, bool)
    for name, rows, cols, a, b in blocks:
        covered[rows, cols] = True
        exact = a.astype(np.float64) @ b.astype(np.float64)
        reference = contract.normwise_error(contract.sgemm_model(a, b), a, b, exact)
        error = contract.normwise_error(c[rows, cols], a, b, exact)
        bound = contract.contract_bound(reference)
        if not error <= bound:
            failures.append(f"{name} (K={a.shape[1]}): error {error:.2e} > bound {bound:.2e} "
                            f"(SGEMM model {reference:.2e}, {error / max(reference, 1e-300):.1f}×)")
    if (c[~covered] != 0).any():
        failures.append(f"{int((c[~covered] != 0).sum())} elements outside the classes' blocks are not 0")
    return failures


def _layout(number: int, classes: int) -> tuple[int, int]:
    """Rows and columns per class so that ``classes`` blocks fit the step's M × N product."""
    m, n = _tile(number)
    return max(1, m // classes), max(1, n // classes)


def _whole_tiles(number: int) -> tuple[int, int, int]:
    """What M, N, K are padded to: the 3xTF32 steps' tiles and k-tile (their fast kernels), 1 for the SIMT steps."""
    if number in THREE_TF32_STEPS + SPECIALIZED_3XTF32:
        config = get_step(number).module.TUNING.kernels().config
        return config.BLOCK_M, config.BLOCK_N, 32
    return 1, 1, 1


# ---------------------------------------------------------------------------------------------------------------
# The NumPy models: large K, and the old kernels' arithmetic fails.

MODEL_KS = (1, 3, 32, 1000, 20000)


def test_the_fixed_3xtf32_arithmetic_keeps_the_contract_up_to_k_20000():
    """Every finite class at K = 1 … 20,000 (8 × 8 blocks), on the models of the fixed steps 13 and 14 with the
    tensor core modelled both as the simulator's twins (each instruction rounds to nearest) and pessimistically
    (each instruction's result truncated toward zero, like the hardware's accumulator). The classes of one K go
    through the models as one stack (each model walks K once for all of them)."""
    failures = []
    for k in MODEL_KS:
        names, a_list, b_list = zip(*contract.input_classes(8, 8, k, seed=k))
        a, b = np.stack(a_list), np.stack(b_list)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        sgemm = contract.sgemm_model(a, b)
        bounds = [contract.contract_bound(contract.normwise_error(sgemm[i], a[i], b[i], exact[i]))
                  for i in range(len(names))]
        for step in (13, 14):
            for accumulator in ("nearest", "truncate"):
                got = contract.three_tf32_model(a, b, step=step, accumulator=accumulator)
                for i, name in enumerate(names):
                    error = contract.normwise_error(got[i], a[i], b[i], exact[i])
                    if not error <= bounds[i]:
                        failures.append(f"step {step}, {accumulator}, {name}, K={k}: {error:.2e} > {bounds[i]:.2e}")
    assert not failures, "\n".join(failures)


def test_a_stack_goes_through_the_models_as_its_matrices_one_by_one():
    """The stacked models (the test above) give each matrix of the stack what it gives alone."""
    names, a_list, b_list = zip(*contract.input_classes(8, 8, 100, seed=3))
    a, b = np.stack(a_list), np.stack(b_list)
    np.testing.assert_array_equal(contract.sgemm_model(a, b), [contract.sgemm_model(x, y) for x, y in zip(a, b)])
    for step in (13, 14):
        stacked = contract.three_tf32_model(a, b, step=step, accumulator="truncate")
        alone = [contract.three_tf32_model(x, y, step=step, accumulator="truncate") for x, y in zip(a, b)]
        np.testing.assert_array_equal(stacked, alone)


def test_the_old_3xtf32_arithmetic_breaks_the_contract():
    """The split before the fix — small parts unscaled (they leave TF32's normal range below |x| ≈ 2^-115) and
    step 14's A truncated — fails the contract on the model: the tests above can fail."""
    a, b = next((a, b) for name, a, b in contract.input_classes(16, 16, 32) if name == "scaled 2^-120·A, 2^100·B")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = contract.contract_bound(contract.normwise_error(contract.sgemm_model(a, b), a, b, exact))
    old = contract.three_tf32_model(a, b, step=14, rounding="truncate_a", scaled=False)
    assert contract.normwise_error(old, a, b, exact) > 3 * bound
    assert contract.normwise_error(contract.three_tf32_model(a, b, step=14), a, b, exact) <= bound


def test_rounding_both_splits_halves_what_each_element_keeps_wrong():
    """What the tensor core reads of x (big + small, small truncated to TF32): with big rounded to nearest, within
    2^-23·|x| of x; with big truncated (step 14's A before the fix), up to 2^-21·|x| — 4× more."""
    x = np.random.default_rng(0).standard_normal(100_000).astype(np.float32)
    big, small = contract.split(x)
    read = big.astype(np.float64) + contract.truncate_to_tf32(small).astype(np.float64) / contract.SMALL_SCALE
    assert (np.abs(read - x) <= 2.0 ** -23 * np.abs(x)).all()
    trunc = contract.truncate_to_tf32(x)
    read_trunc = trunc.astype(np.float64) + contract.truncate_to_tf32(x - trunc).astype(np.float64)
    worst = float((np.abs(read_trunc - x) / np.abs(x)).max())
    assert 2.0 ** -22 < worst <= 2.0 ** -21


def test_the_sgemm_model_is_a_sequential_fma_sum():
    """K = 2: fl(fl(a0·b0) + a1·b1) with one rounding per step (the FMA); exactly float32's rounding at K = 1."""
    a = np.array([[1 + 2.0 ** -20, 1 + 2.0 ** -20]], np.float32)
    b = np.array([[1 + 2.0 ** -20], [-(1 + 2.0 ** -20)]], np.float32)
    # a0·b0 = 1 + 2^-19 + 2^-40 rounds to c = 1 + 2^-19 at k = 0; at k = 1 the FMA adds the exact −(1 + 2^-19 +
    # 2^-40): −2^-40. Rounding the product first (no FMA) would give 0.
    assert contract.sgemm_model(a, b)[0, 0] == np.float32(-(2.0 ** -40))
    a1, b1 = a[:, :1], b[:1]
    assert contract.sgemm_model(a1, b1)[0, 0] == np.float32(np.float64(a1[0, 0]) * np.float64(b1[0, 0]))


# ---------------------------------------------------------------------------------------------------------------
# The split the 3xTF32 kernels use.

@cuda.jit
def _split_scaled_kernel(x, big, small):
    i = cuda.grid(1)
    if i < x.size:
        big[i], small[i] = split_tf32_scaled(x[i])


def test_split_scaled_matches_its_twin_bit_for_bit_and_is_exact():
    """``split_tf32_scaled`` in a kernel (on a GPU: the add/and/sub/mul it compiles to) gives its NumPy twin's bits,
    on every binade from subnormals to the largest floats, ties, zeros and specials; for finite x below the top
    2^-12 of float32's range big + small·2^-11 = x exactly and big is a TF32 value; for normal x, |small| <= |x|."""
    rng = np.random.default_rng(5)
    x = np.concatenate([(1 + rng.random(2000)) * rng.choice([-1.0, 1.0], 2000) * np.exp2(rng.integers(-149, 128, 2000)),
                        [1 + 2.0 ** -11, -(1 + 2.0 ** -11), 3.4e38, -3.4e38, 1e-45, -1e-40, 0.0, -0.0, np.inf,
                         -np.inf, np.nan]]).astype(np.float32)
    x = np.concatenate([x, np.array([0x7FFFFFFF, 0xFFFFFFFF, 0x7F800001], np.uint32).view(np.float32)])
    outs = [cuda.device_array_like(x) for _ in range(2)]
    _split_scaled_kernel[(x.size + 255) // 256, 256](cuda.to_device(x), *outs)
    big, small = split_tf32_scaled_parts(x)
    for got, want, name in zip((o.copy_to_host() for o in outs), (big, small), ("big", "small")):
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), f"{name} differs from its twin at {x[~same][:4]}"
    ordinary = np.isfinite(x) & (np.abs(x) < 3.39e38)
    assert np.array_equal(big[ordinary] + small[ordinary].astype(np.float64) / 2 ** 11, x[ordinary].astype(np.float64))
    assert not (big[ordinary].view(np.uint32) & 0x1FFF).any()
    normal = ordinary & (np.abs(x) >= 2.0 ** -126)  # a subnormal's big is on TF32's subnormal grid (2^-136)
    assert (np.abs(small[normal]) <= np.abs(x[normal])).all()


# ---------------------------------------------------------------------------------------------------------------
# The kernels on the simulator.

@simulator_only
@pytest.mark.parametrize("number", STEPS)
def test_finite_classes_keep_the_contract_at_small_k(number):
    """Every finite class, K = 1 for half of them and 5 for the other half, in one launch."""
    names = [name for name, _, _ in contract.input_classes(1, 1, 1)]
    rows, cols = _layout(number, len(names))
    classes = [next(c for c in contract.input_classes(rows, cols, 1 if i % 2 else 5, seed=i) if c[0] == name)
               for i, name in enumerate(names)]
    a, b, blocks = pack(classes, _whole_tiles(number))
    failures = contract_failures(_run(number, a, b), blocks)
    assert not failures, f"step {number}:\n" + "\n".join(failures)


#: Classes run at larger K on the simulator (every class runs at larger K on the models and on the GPU). The 3xTF32
#: steps run the last three only: a warpgroup of 128 simulated threads per wgmma makes each k-tile cost seconds there,
#: and these three are the ones that found the split's faults (CI time: docs/hardening.md).
LARGE_K_CLASSES = ("standard normal", "per-element exponents", "uniform positive", "scaled 2^-120·A, 2^100·B",
                   "mixed magnitude along k")
LARGE_K_CLASSES_3XTF32 = LARGE_K_CLASSES[2:]


@simulator_only
@pytest.mark.parametrize("number", STEPS + SPECIALIZED_3XTF32)
def test_finite_classes_keep_the_contract_at_larger_k(number):
    """Five classes (three for the 3xTF32 steps) at K = 24, 40, 24, … (several k-tiles of every kernel) in one
    launch."""
    names = LARGE_K_CLASSES_3XTF32 if number in THREE_TF32_STEPS + SPECIALIZED_3XTF32 else LARGE_K_CLASSES
    rows, cols = _layout(number, len(names))
    classes = [next(c for c in contract.input_classes(rows, cols, 24 + 16 * (i % 2), seed=100 + i) if c[0] == name)
               for i, name in enumerate(names)]
    a, b, blocks = pack(classes, _whole_tiles(number))
    failures = contract_failures(_run(number, a, b), blocks)
    assert not failures, f"step {number}:\n" + "\n".join(failures)


#: Every step's edge kernel, and the fast ones of steps 14, 18 and 22 (22: per thread, no vote): the specials' path (a block vote, then the tile recomputed by
#: sequential FMAs) is the same code in a step's fast and edge kernels; step 13's fast kernel costs 40 s here.
SPECIAL_RUNS = [(n, "edge") for n in STEPS] + [(14, "fast"), (18, "fast"), (22, "fast")]


@simulator_only
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf − inf and inf·0 are the point here
@pytest.mark.parametrize("number, kernel", SPECIAL_RUNS, ids=[f"{n}-{k}" for n, k in SPECIAL_RUNS])
def test_specials_give_sgemms_inf_and_nan_pattern(number, kernel):
    """inf, −inf and NaN (three kinds) in A and in B, inf against TF32-exact and zero partners, inf − inf along k,
    inf·inf and a finite sum past float32's range: C's NaN / +inf / −inf / finite pattern is exactly the
    sequential-FMA model's. ``edge``: a ragged shape (M, N not multiples of a tile), the edge kernels run; ``fast``:
    padded with zeros to whole tiles, the 3xTF32 steps' fast kernels run."""
    specials = list(contract.special_inputs(3, 3, 4))
    a, b, _ = pack(specials, _whole_tiles(number) if kernel == "fast" else (1, 1, 1))
    monotone = [i for i, (name, _, _) in enumerate(specials) if name == "finite overflow"][0]
    rows = slice(3 * monotone, 3 * monotone + 3)
    b[4 * monotone: 4 * monotone + 4, rows] = np.abs(b[4 * monotone: 4 * monotone + 4, rows]) + 1  # sum grows: +inf
    c = _run(number, a, b)
    expected = contract.special_pattern(contract.sgemm_model(a, b))
    got = contract.special_pattern(c)
    wrong = np.argwhere(got != expected)
    kinds = "finite +inf -inf nan".split()
    described = [f"C{tuple(int(x) for x in w)}: {kinds[got[tuple(w)]]} instead of {kinds[expected[tuple(w)]]} "
                 f"({specials[min(w[0] // 3, len(specials) - 1)][0]})" for w in wrong[:8]]
    assert not len(wrong), f"step {number}: {len(wrong)} elements off SGEMM's pattern:\n" + "\n".join(described)
    assert (expected == 3).any() and (expected == 1).any() and (expected == 2).any()


def wide_exponents(rng, shape) -> np.ndarray:
    """±(1 + uniform[0, 1))·2^e, e uniform in −124 … 99: every binade where the contract reads x to 2^-23·|x|."""
    mantissa = (1 + rng.random(shape)) * rng.choice([-1.0, 1.0], shape)
    return (mantissa * np.exp2(rng.integers(-124, 100, shape))).astype(np.float32)


@simulator_only
@pytest.mark.parametrize("number", THREE_TF32_STEPS)
def test_each_input_is_read_to_2_to_the_minus_23(number):
    """C = A·I and C = I·B: the kernel reads each element of A (of B) as big + small, and must get within 2^-23·|x|
    of it (both splits rounded to nearest; step 14's A truncated reached 2^-21), and for |x| down to 2^-124 (small
    parts scaled into TF32's normal range; unscaled, they lose bits below 2^-115)."""
    m, n = _tile(number)
    k = 32
    rng = np.random.default_rng(7)
    x = wide_exponents(rng, (m, k))
    c = _run(number, x, np.eye(k, n, dtype=np.float32))
    worst_a = np.max(np.abs(c[:, :k].astype(np.float64) - x) / np.abs(x.astype(np.float64)))
    y = wide_exponents(rng, (k, n))
    c = _run(number, np.eye(m, k, dtype=np.float32), y)
    both = min(m, k)
    worst_b = np.max(np.abs(c[:both].astype(np.float64) - y[:both]) / np.abs(y[:both].astype(np.float64)))
    assert worst_a <= 2.0 ** -23 and worst_b <= 2.0 ** -23, f"A read to {worst_a:.2e}, B to {worst_b:.2e} (relative)"


@simulator_only
@pytest.mark.parametrize("number", STEPS)
def test_subnormal_inputs_and_outputs(number):
    """Subnormal inputs (|x| < 2^-126), multiplied into the normal range, are read to within 2^-147 (4 units of the
    smallest subnormal) by the 3xTF32 steps and exactly by the SIMT steps; results in the subnormal range are
    rounded, not flushed: within K·2^-148 + 2·(SGEMM model's error) of the exact value (docs/fp32_contract.md).
    On the simulator the tensor core's twin reads subnormal TF32 operands as their value (the GPU test checks the
    hardware)."""
    m, n = _tile(number)
    k = 16
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((m, k)) * 2.0 ** -135).astype(np.float32)  # subnormal: 14 bits or so
    assert (np.abs(a[a != 0]) < 2.0 ** -126).all()
    b = np.eye(k, n, dtype=np.float32) * np.float32(2.0 ** 100)
    c = _run(number, a, b)
    read = np.abs(c[:, :k].astype(np.float64) * 2.0 ** -100 - a)
    assert read.max() <= 2.0 ** -147, f"subnormal inputs read to {read.max() / 2.0 ** -149:.1f} units of 2^-149"
    a = (rng.standard_normal((m, k)) * 2.0 ** -70).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 2.0 ** -70).astype(np.float32)  # products about 2^-140: subnormal
    c = _run(number, a, b).astype(np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    reference = np.abs(contract.sgemm_model(a, b) - exact).max()
    assert np.abs(c - exact).max() <= k * 2.0 ** -148 + 2 * reference
    assert (c != 0).mean() > 0.9, "subnormal results flushed to zero"


# ---------------------------------------------------------------------------------------------------------------
# On a GPU: the same classes at larger shapes, against cuBLAS SGEMM.

GPU_KS = (1, 7, 64, 1000, 16384)


def _cublas_or_skip():
    try:
        from gemm_steps.harness.cublas import cublas_matmul
        cublas_matmul(np.ones((1, 1), np.float32), np.ones((1, 1), np.float32))
    except Exception as exc:  # no nvmath-python: the model is the reference instead
        return None, f"{type(exc).__name__}: {exc}"
    return cublas_matmul, None


_MODEL_ERRORS: dict = {}


def _sgemm_order_error(name: str, k: int, a, b, exact) -> float:
    """The sequential-FMA sum's error on one class (computed once per class and K: the model is slow at K = 16,384)."""
    if (name, k) not in _MODEL_ERRORS:
        _MODEL_ERRORS[(name, k)] = contract.normwise_error(contract.sgemm_model(a, b), a, b, exact)
    return _MODEL_ERRORS[(name, k)]


@pytest.mark.gpu
@pytest.mark.parametrize("number", GPU_STEPS)
@pytest.mark.parametrize("k", GPU_KS)
def test_gpu_finite_classes_keep_the_contract(number, k):
    """Every finite class at 257 × 255 × K (K = 1 … 16,384; ragged by one row and column: fast and edge kernels)
    against the contract's reference, the sequential float32 FMA sum's error on the same inputs.

    Not against cuBLAS SGEMM's own error: on this K-heavy shape cuBLAS runs another order. On an H200
    (2026-11-26) its error on "uniform positive" at K = 16,384 was 1.61e-07 where the sequential sum's — and steps
    9 and 10's, which compute exactly that sum — was 1.67e-06: ten times smaller, a blocked sum. "Within 2× of
    cuBLAS" would fail the FP32 steps themselves there; the failure message shows cuBLAS's error beside."""
    cublas, _ = _cublas_or_skip()
    failures = []
    for name, a, b in contract.input_classes(257, 255, k, seed=k):
        exact = a.astype(np.float64) @ b.astype(np.float64)
        reference = _sgemm_order_error(name, k, a, b, exact)
        error = contract.normwise_error(_run(number, a, b), a, b, exact)
        if not error <= contract.contract_bound(reference):
            beside = f", cuBLAS {contract.normwise_error(cublas(a, b), a, b, exact):.2e}" if cublas else ""
            failures.append(f"{name}: {error:.2e} > {contract.contract_bound(reference):.2e} "
                            f"(sequential sum {reference:.2e}{beside})")
    assert not failures, f"step {number}, K = {k}:\n" + "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("number", GPU_STEPS)
def test_gpu_specials_give_sgemms_pattern(number):
    """The special classes at 300 × 260 × 50 (a few tiles, one of them with the specials): pattern equal to cuBLAS
    SGEMM's and to the model's."""
    cublas, _ = _cublas_or_skip()
    for name, a, b in contract.special_inputs(300, 260, 50):
        if name == "finite overflow":
            b = np.abs(b) + 1  # every partial sum of row 0 grows: +inf in any order
        expected = contract.special_pattern(contract.sgemm_model(a, b))
        got = contract.special_pattern(_run(number, a, b))
        assert (got == expected).all(), f"step {number}, {name}: {(got != expected).sum()} elements off the pattern"
        if cublas is not None:
            assert (contract.special_pattern(cublas(a, b)) == expected).all(), f"cuBLAS itself differs on {name}"


@pytest.mark.gpu
@pytest.mark.parametrize("number", GPU_STEPS)
def test_gpu_inputs_are_read_to_2_to_the_minus_23_and_subnormals(number):
    """A·I on the hardware: each element of A (|A| from 2^-124 to 2^100) read to 2^-23·|a|; subnormal A (about
    2^-135) times 2^100·I read to 2^-147 — or the tensor core flushes subnormal operands, which this test reports
    (docs/fp32_contract.md states the result measured here); products about 2^-140 summed into subnormal results,
    not flushed, within K·2^-148 + 2·(SGEMM model's error)."""
    rng = np.random.default_rng(3)
    a = wide_exponents(rng, (256, 64))
    c = _run(number, a, np.eye(64, 128, dtype=np.float32))
    worst = np.max(np.abs(c[:, :64].astype(np.float64) - a) / np.abs(a.astype(np.float64)))
    assert worst <= 2.0 ** -23, f"A read to {worst:.2e} relative"
    sub = (rng.standard_normal((256, 64)) * 2.0 ** -135).astype(np.float32)
    c = _run(number, sub, np.eye(64, 128, dtype=np.float32) * np.float32(2.0 ** 100))
    read = np.abs(c[:, :64].astype(np.float64) * 2.0 ** -100 - sub)
    assert read.max() <= 2.0 ** -147, (f"subnormal A read to {read.max() / 2.0 ** -149:.0f} units of 2^-149 "
                                       f"({(c[:, :64] == 0).mean():.0%} of the products flushed to 0)")
    a = (rng.standard_normal((256, 64)) * 2.0 ** -70).astype(np.float32)
    b = (rng.standard_normal((64, 128)) * 2.0 ** -70).astype(np.float32)  # products about 2^-140: subnormal results
    c = _run(number, a, b).astype(np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    reference = np.abs(contract.sgemm_model(a, b) - exact).max()
    assert np.abs(c - exact).max() <= 64 * 2.0 ** -148 + 2 * reference, "subnormal results off by more than K·2^-148"
    assert (c != 0).mean() > 0.9, "subnormal results flushed to zero"


def test_the_docs_claim_about_cublas_and_the_simt_steps_matches_the_shipped_results():
    """docs/fp32_contract.md: in the shipped H100 benchmark cuBLAS SGEMM's results are bit-for-bit those of steps 9
    and 10 at 1024³ and 8192³ — why the sequential-FMA model stands in for cuBLAS in CI."""
    import json
    from pathlib import Path

    source = "results/bench-nvidia-h100-80gb-hbm3-2026-11-25.json"
    docs = (Path(__file__).resolve().parent.parent / "docs" / "fp32_contract.md").read_text()
    assert source in docs
    records = json.loads((Path(__file__).resolve().parent.parent / source).read_text())["records"]
    same = {(r["number"], r["M"]) for r in records if r["rel_error_vs_cublas"] == 0.0 and r["M"] == r["N"] == r["K"]}
    assert {(9, 1024), (10, 1024), (9, 8192), (10, 8192)} <= same


# -- step 18's own paths on a GPU ----------------------------------------------------------------------------------
#
# The classes above run step 18 at 257 × 255: K = 1, 7 and 1000 are not multiples of its BLOCK_K, so those run step
# 14's edge kernel; K = 64 is 2 × 1 full tiles; K = 16,384 splits K (few tiles, long K). So three of its paths need
# shapes of their own: one slice over a long K (a large product: as many full tiles as SMs), the split-K reduction's
# recompute of specials (add_slices_kernel), and B's big part past 2^117, where 2^11 · B overflows and the tile is
# computed again by SGEMM's sum.

def _step18_slices(m: int, n: int, k: int) -> int:
    tiled = get_step(18).tiled
    c = tiled.config
    return tiled.slice_count(m, n, k, (m // c.BLOCK_M) * (n // c.BLOCK_N))


@pytest.mark.gpu
def test_gpu_step18_one_slice_over_a_long_k_keeps_the_contract():
    """1280 × 1792 × 4096: 140 full tiles (at least one an SM), 128 k-tiles, one slice — the path of large squares.
    Every finite class; the sequential sum is modelled on 48 sampled rows × 48 columns (the same sub-product)."""
    m, n, k = 1280, 1792, 4096
    assert _step18_slices(m, n, k) == 1, "this shape was meant to run unsplit"
    rng = np.random.default_rng(18)
    rows, cols = np.sort(rng.choice(m, 48, replace=False)), np.sort(rng.choice(n, 48, replace=False))
    failures = []
    for name, a, b in contract.input_classes(m, n, k, seed=18):
        c = _run(18, a, b)[np.ix_(rows, cols)]
        a_s, b_s = a[rows], b[:, cols]
        exact = a_s.astype(np.float64) @ b_s.astype(np.float64)
        reference = contract.normwise_error(contract.sgemm_model(a_s, b_s), a_s, b_s, exact)
        error = contract.normwise_error(c, a_s, b_s, exact)
        if not error <= contract.contract_bound(reference):
            failures.append(f"{name}: {error:.2e} > {contract.contract_bound(reference):.2e}")
    assert not failures, "step 18, one slice, K = 4096:\n" + "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_gpu_step18_split_k_recomputes_specials_like_sgemm():
    """256 × 256 × 4096: 4 full tiles, 128 k-tiles — split into slices, and add_slices_kernel adds them; a sum that
    comes out inf or NaN is computed again there as SGEMM does. Every special class: SGEMM's pattern exactly."""
    m, n, k = 256, 256, 4096
    assert _step18_slices(m, n, k) > 1, "this shape was meant to split K"
    for name, a, b in contract.special_inputs(m, n, k, seed=4):
        if name == "finite overflow":
            b = np.abs(b) + 1
        expected = contract.special_pattern(contract.sgemm_model(a, b))
        got = contract.special_pattern(_run(18, a, b))
        assert (got == expected).all(), f"step 18 split-K, {name}: {(got != expected).sum()} elements off the pattern"


@pytest.mark.gpu
@pytest.mark.parametrize("k", [64, 4096], ids=["one slice", "split-K"])
def test_gpu_step18_keeps_the_contract_where_b_passes_2_to_the_117(k):
    """|b| ≥ 2^117 is finite and inside the contract's premise (here the sums stay near 2^110), but 2^11 · B's big
    part overflows: the tile's sum comes out inf and the block (or the reduction) computes it again by SGEMM's
    sequential sum — slow, and right. The result must keep the contract and hold no inf."""
    m, n = 256, 256
    rng = np.random.default_rng(117)
    a = (rng.standard_normal((m, k)) * 2.0 ** -10).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    b[3, :] = np.float32(2.0 ** 118)  # one row of B past 2^117: every column's sum meets it
    exact = a.astype(np.float64) @ b.astype(np.float64)
    c = _run(18, a, b)
    assert np.isfinite(c).all(), "a finite product inside the premise came out inf or NaN"
    reference = contract.normwise_error(contract.sgemm_model(a, b), a, b, exact)
    assert contract.normwise_error(c, a, b, exact) <= contract.contract_bound(reference)
