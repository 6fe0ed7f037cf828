"""Lesson 13's helpers (3xTF32): the big + small split and the sizes of the four products, a NumPy model of
accumulating with truncation against rounding and of adding blocks of products before each float32 add, the first
try's error against K, the accuracy sweep, the prediction and the speed verdict values, and where the split breaks
(deep dive). Numbers, tables and figures only: the words are the lesson's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemm_steps.toolkit.tensor_core_ops import SMALL_SCALE, split_tf32_parts, truncate_to_tf32

from .. import steps as course_steps
from ..harness.fp32_contract import U32 as U_FP32
from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .targets import TARGET_3XTF32_VS_SGEMM, accuracy_check, slope, square_ratios, sweep_ratios
from .timings import caption, common_sizes, record, size_label

#: Steps 12–13 in three tile configurations beside both cuBLAS, their ragged shapes and the 512×512×K accuracy sweep.
TENSOR_CORES_RUN = results_files.EXPERIMENT_TENSOR_CORES_NVIDIA_H100
#: The first 3xTF32, which kept its running sum in the mma accumulator.
FIRST_TRY_RUN = results_files.EXPERIMENT_TENSOR_CORES_FIRST_TRY_NVIDIA_H100
#: The steps the speed verdict reads beside cuBLAS, at every size where all of them ran.
COMPARED = ("stream_k", "tensor_cores", "three_tf32")


def split_table(values=(np.pi, 0.1, -1234.5678)) -> MarkdownTable:
    """A few floats split as step 13 splits them: big, small, what the tensor core reads of small (truncated to
    TF32), and what is left of x after big + small, exact and as the tensor core reads the parts."""
    heads = ("x (float32)", "big = tf32(x)", "small = x − big", "small / x", "x − (big + small)",
             "small as the tensor core reads it (truncated)", "\\|x − (big + that)\\| / \\|x\\|")
    rows = []
    for v in values:
        x = np.float32(v)
        big, small = split_tf32_parts(x)
        read = truncate_to_tf32(small)
        left = abs(float(np.float64(x) - np.float64(big) - np.float64(read))) / abs(float(x))
        rows.append(dict(zip(heads, (f"{x:.9g}", f"{float(big):.9g}", f"{float(small):.3e}",
                                     f"{float(small) / float(x):.1e}",
                                     f"{float(np.float64(x) - np.float64(big) - np.float64(small)):.0e}",
                                     f"{float(read):.3e}", f"{left:.1e} (2^{np.log2(left):.1f})"))))
    return table(rows, align="r" * len(heads))


def split_worst(seed: int = 0, count: int = 200_000) -> float:
    """The largest |x − (big + small truncated to TF32)| / |x| (:func:`read_error`) over ``count`` standard-normal
    floats: how many bits of x the tensor core sees through the split."""
    return float(read_error(np.random.default_rng(seed).standard_normal(count).astype(np.float32)).max())


def term_sizes(seed: int = 0, count: int = 200_000) -> MarkdownTable:
    """The four products of a·b = (big_a + small_a)(big_b + small_b), relative to a·b (median and largest), for
    standard-normal a, b, beside float32's unit roundoff."""
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(count).astype(np.float32) for _ in range(2))
    (ba, sa), (bb, sb) = split_tf32_parts(a), split_tf32_parts(b)
    ab = a.astype(np.float64) * b
    terms = [("big·big", ba, bb), ("big·small", ba, sb), ("small·big", sa, bb), ("small·small", sa, sb)]
    rows = []
    for name, x, y in terms:
        size = np.abs(x.astype(np.float64) * y) / np.abs(ab)
        rows.append((name, f"{np.median(size):.1e}", f"{size.max():.1e}", f"2^{np.log2(np.median(size)):.0f}",
                     "no" if name == "small·small" else "yes"))
    rows.append(("*float32's rounding of one result (unit roundoff)*", f"{U_FP32:.1e}", "", "2^-24", ""))
    heads = ("term", "median size / \\|a·b\\|", "largest", "in powers of 2 (median)", "kept by step 13")
    return table([dict(zip(heads, r)) for r in rows], align="lrrrl", tight_blanks=True)


def product_errors(seed: int = 0, size: int = 128, ks=(256, 4096)) -> MarkdownTable:
    """C = A·B from 1, 3 and 4 of the split products (small parts truncated to TF32, as the tensor core reads them;
    sums in float64 so only the products' error shows), against float64."""
    from gemm_steps.harness.verify import relative_error

    rng = np.random.default_rng(seed)
    rows = {"1: big·big (TF32)": [], "3: small·big + big·small + big·big (step 13)": [],
            "4: and small·small": [], "*float32 inputs, exact products (the best FP32 can do)*": []}
    for k in ks:
        a = rng.standard_normal((size, k)).astype(np.float32)
        b = rng.standard_normal((k, size)).astype(np.float32)
        (ba, sa), (bb, sb) = split_tf32_parts(a), split_tf32_parts(b)
        ba, bb, sa, sb = (x.astype(np.float64) for x in (ba, bb, truncate_to_tf32(sa), truncate_to_tf32(sb)))
        big = ba @ bb
        three = big + sa @ bb + ba @ sb
        four = three + sa @ sb
        exact = a.astype(np.float64) @ b
        for name, c in zip(rows, (big, three, four, exact.astype(np.float32))):
            rows[name].append(relative_error(c, a, b, exact))
    return table([{"products": name, **{f"{size}×{size}×{k}": f"{e:.1e}" for k, e in zip(ks, errs)}}
                  for name, errs in rows.items()], align="l" + "r" * len(ks))


def _to_f32(x: np.ndarray, truncate: bool) -> np.ndarray:
    f = x.astype(np.float32)
    if truncate:  # round toward zero: step back where rounding to nearest went up in magnitude
        up = np.abs(f.astype(np.float64)) > np.abs(x)
        f[up] = np.nextafter(f[up], np.float32(0))
    return f


@dataclass(frozen=True)
class AccumulationModel:
    """The float32 running sum's error against K, rounding and truncating (:func:`accumulation_model`)."""
    ks: list  # K, the products summed
    nearest: list  # relative error at each K, the accumulator rounding to nearest
    truncate: list  # the same, the accumulator truncating (our model of the tensor core's)


def accumulation_model(ks=(64, 256, 1024, 4096, 16384), outputs: int = 512, seed: int = 0) -> AccumulationModel:
    """A NumPy model of one output's running sum: K exact products of standard-normal numbers added one by one
    into a float32 accumulator that rounds to nearest, or truncates (our model of the tensor core's accumulator:
    a simplification of its fused multi-term add, lesson 13); the errors relative to the exact sums."""
    rng = np.random.default_rng(seed)
    out = {"nearest": [], "truncate": []}
    products = rng.standard_normal((max(ks), outputs)) * rng.standard_normal((max(ks), outputs))
    for truncate in (False, True):
        s = np.zeros(outputs, dtype=np.float32)
        exact = np.zeros(outputs)
        for k in range(max(ks)):
            s = _to_f32(s.astype(np.float64) + products[k], truncate)
            exact += products[k]
            if k + 1 in ks:
                out["truncate" if truncate else "nearest"].append(
                    float(np.linalg.norm(s - exact) / np.linalg.norm(exact)))
    return AccumulationModel(list(ks), out["nearest"], out["truncate"])


def first_try_points(run: dict) -> list[tuple[int, float, str]]:
    """(K, sampled error, shape) of the 3xTF32 kernel in an experiment file: its benchmark records (128×256 tiles)
    and its ragged shapes."""
    points = [(r["K"], r["sampled_rel_error_fp64"], size_label((r["M"], r["N"], r["K"])))
              for r in run["records"] if r["step"].startswith("three_tf32 128x256")]
    for name, found in run.get("ragged", {}).items():
        if name.startswith("three_tf32 "):
            m, n, k = map(int, name.split()[1].split("x"))
            points.append((k, found["sampled_rel_error_fp64"], size_label((m, n, k))))
    return sorted(points)


def accumulation_figure(model: AccumulationModel, first: dict, now: dict):
    """Left: the model (truncating vs rounding accumulator). Right: the first 3xTF32 (accumulating in the tensor core)
    and step 13 (each k-step summed from zero, added in FP32) as measured, against K."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.loglog(model.ks, model.nearest, "o-", label=f"rounds to nearest: ∝ K^{slope(model.ks, model.nearest):.2f}")
    left.loglog(model.ks, model.truncate, "s-", label=f"truncates: ∝ K^{slope(model.ks, model.truncate):.2f}")
    left.set(xlabel="K (products summed)", ylabel="relative error against float64",
             title="Model: a float32 running sum (NumPy; whole sums)")
    left.legend(fontsize=8)
    for run, style, label in ((first, "s-", "first try: running sum in the tensor core"),
                              (now, "o-", "step 13: per k-step from zero, + in FP32")):
        pts = first_try_points(run)
        ks, errs = [p[0] for p in pts], [p[1] for p in pts]
        right.loglog(ks, errs, style, label=f"{label}: ∝ K^{slope(ks, errs):.2f}")
    right.set(xlabel="M = N = K (and three ragged shapes, at their K)", ylabel="relative error against float64",
              title=f"Measured, {first['environment'].get('gpu')} (sampled elements)")
    right.legend(fontsize=8)
    return fig


def accuracy_table(run: dict) -> MarkdownTable:
    """The accuracy sweep (M = N = 512, K from 64 up) of the tensor-core experiment, both input kinds."""
    cols = [("cublas", "cuBLAS SGEMM"), ("stream_k", "step 11"), ("three_tf32", "step 13, 3xTF32"),
            ("tensor_cores", "step 12, TF32"), ("cublas_tf32", "cuBLAS TF32")]
    rows = [{"inputs": row["inputs"], "K": str(row["K"]), **{c: f"{row[n]:.1e}" for n, c in cols},
             "step 13 / SGEMM": f"{row['three_tf32'] / row['cublas']:.1f}×"} for row in run["accuracy"]]
    return MarkdownTable(table(rows, align="l" + "r" * (len(cols) + 2)) + "\n\n" + caption(run))


@dataclass(frozen=True)
class FirstTry:
    """The first 3xTF32 try against K (:func:`first_try`)."""
    slope: float  # its error's growth, the exponent of K
    shape: str  # its largest shape, as a label
    error: float  # its sampled error there
    sgemm: float  # cuBLAS SGEMM's there, same run
    pct: float  # its speed there, % of cuBLAS SGEMM's
    step13: float | None  # step 13's error at that K in its own run (None if not measured there)


def first_try(first: dict, now: dict) -> FirstTry:
    """The first try's error growth (exponent of K), its error and speed at its largest K against cuBLAS SGEMM in
    the same run, and step 13's error at that K in its own run."""
    pts, now_pts = first_try_points(first), dict((p[0], p[1]) for p in first_try_points(now))
    big = pts[-1]
    speed = next(r for r in first["records"] if r["step"].startswith("three_tf32 128x256") and r["K"] == big[0])
    sgemm = next(r for r in first["records"] if r["step"] == "cublas" and r["K"] == big[0])
    return FirstTry(slope([p[0] for p in pts], [p[1] for p in pts]), big[2], big[1], sgemm["sampled_rel_error_fp64"],
                    speed["pct_of_cublas"], now_pts.get(big[0]))


def accuracy(run: dict, results: dict) -> dict:
    """The 3xTF32 accuracy rule (:func:`~.targets.accuracy_check`) for step 13: its 512×512×K sweep and the
    benchmark's two largest squares."""
    return accuracy_check(sweep_ratios(run["accuracy"], "three_tf32") + square_ratios(results, "three_tf32"))


def fp32_errors(results: dict) -> dict:
    """{size: {kernel: sampled error}} of cuBLAS SGEMM and every FP32 step (each adds its products one fused
    multiply-add at a time, in k order) at the two largest sizes of the benchmark."""
    kernels = ["cublas"] + [s.name for s in course_steps() if getattr(s.module, "ARITHMETIC", "fp32") == "fp32"]
    return {s: {n: record(results, n, s)["sampled_rel_error_fp64"] for n in kernels if record(results, n, s)}
            for s in common_sizes(results)[-2:]}


def blocked_sums(k: int = 4096, size: int = 48, blocks=(1, 8, 32), seed: int = 0) -> dict:
    """A NumPy model of one float32 running sum per output over K products: blocks of ``b`` products added exactly
    (then rounded to float32) before each rounded float32 add. b = 1 is SGEMM's order, one fused multiply-add at a
    time; b = 8 step 13's (a k-step's products summed in the tensor core), b = 32 a k-tile's. {b: relative error}."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((size, k)).astype(np.float32).astype(np.float64)
    b = rng.standard_normal((k, size)).astype(np.float32).astype(np.float64)
    exact = a @ b
    out = {}
    for block in blocks:
        acc = np.zeros((size, size), dtype=np.float32)
        for k0 in range(0, k, block):
            part = a[:, k0:k0 + block] @ b[k0:k0 + block]
            acc = (acc.astype(np.float64) + (part if block == 1 else part.astype(np.float32))).astype(np.float32)
        out[block] = float(np.linalg.norm(acc - exact) / np.linalg.norm(exact))
    return out


@dataclass(frozen=True)
class Prediction:
    """Step 13's predicted speed (:func:`predicted`)."""
    size: tuple  # the largest common size, where it is made
    step12: float  # step 12's TFLOPS there
    tflops: float  # a third of it
    vs_sgemm: float  # that × cuBLAS SGEMM, same run
    sgemm: float  # cuBLAS SGEMM's TFLOPS there


def predicted(results: dict) -> Prediction:
    """The prediction from step 12's timing at the largest size: three times its work per piece, so three times its
    time — a third of its TFLOPS — and that against cuBLAS SGEMM in the same run."""
    big = common_sizes(results, COMPARED)[-1]
    t12, sgemm = record(results, "tensor_cores", big)["tflops"], record(results, "cublas", big)["tflops"]
    return Prediction(big, t12, t12 / 3, t12 / 3 / sgemm, sgemm)


@dataclass(frozen=True)
class AtSize:
    """Step 13 at one size (:attr:`Speed.sizes`)."""
    tflops: float  # its TFLOPS
    vs_sgemm: float  # × cuBLAS SGEMM, same run
    of_step12: float  # share of step 12's speed


@dataclass(frozen=True)
class Speed:
    """Step 13's speed against our target and the prediction (:func:`speed`)."""
    sizes: dict  # size → :class:`AtSize`, at the two largest common sizes
    met: bool  # ≥ the target × SGEMM at both
    over_prediction: float  # measured ÷ predicted TFLOPS at the prediction's size


def speed(results: dict) -> Speed:
    """Step 13 at the two largest sizes (TFLOPS, × cuBLAS SGEMM, share of step 12's speed), our target (``met``: ≥
    the target × SGEMM at both) and the measurement over the prediction."""
    p = predicted(results)
    rows = {s: AtSize(record(results, "three_tf32", s)["tflops"],
                      record(results, "three_tf32", s)["pct_of_cublas"] / 100,
                      record(results, "three_tf32", s)["tflops"] / record(results, "tensor_cores", s)["tflops"])
            for s in common_sizes(results, COMPARED)[-2:]}
    return Speed(rows, min(r.vs_sgemm for r in rows.values()) >= TARGET_3XTF32_VS_SGEMM,
                 record(results, "three_tf32", p.size)["tflops"] / p.tflops)


def when_to_use(results: dict, run: dict) -> MarkdownTable:
    """Error (the sweep at 512×512×4096) and TFLOPS at the largest size, ours and cuBLAS's, of the three kinds of
    arithmetic."""
    big = common_sizes(results, COMPARED)[-1]
    row = next(r for r in run["accuracy"] if r["inputs"] == "standard normal" and r["K"] == 4096)

    def tflops(name):
        found = record(results, name, big)
        return f"{found['tflops']:.0f}" if found else "—"

    rows = [("FP32 units (steps 1–11, cuBLAS SGEMM)", row["cublas"], f"{tflops('stream_k')} / {tflops('cublas')}"),
            ("3xTF32 (step 13)", row["three_tf32"], f"{tflops('three_tf32')} / —"),
            ("TF32 (step 12)", row["tensor_cores"], f"{tflops('tensor_cores')} / {tflops('cublas_tf32')}")]
    heads = ("arithmetic", "error (512×512×4096)", f"TFLOPS at {size_label(big)} (ours / cuBLAS)")
    return table([dict(zip(heads, (what, f"{error:.0e}", speeds))) for what, error, speeds in rows],
                 align="lrr")


# -- where the split breaks (deep dive) ---------------------------------------------------------------------------------
def _small_handed(x, scaled: bool):
    """(big, the small part as handed to the tensor core, the factor that undoes it): step 13's ``split_tf32_scaled``
    (small·2^11, undone by 2^-11 on the summed products) or the first version's ``split_tf32`` (small itself)."""
    big, small = split_tf32_parts(x)
    return (big, (small * SMALL_SCALE).astype(np.float32), 1 / float(SMALL_SCALE)) if scaled else (big, small, 1.0)


def read_error(x, scaled: bool = True) -> np.ndarray:
    """|x − (big + small as read)| / |x| for float32 ``x``: the small part as handed to the tensor core (scaled by
    2^11 or not), truncated to TF32 as the tensor core reads it (for a subnormal, the top 10 bits of its mantissa
    field — our model; on an H200 the tensor core read subnormal operands so, docs/fp32_contract.md), then unscaled
    exactly in float64."""
    x = np.asarray(x, dtype=np.float32)
    big, small, undo = _small_handed(x, scaled)
    read = big.astype(np.float64) + truncate_to_tf32(small).astype(np.float64) * undo
    return np.abs(x.astype(np.float64) - read) / np.abs(x.astype(np.float64))


def subnormal_threshold(scaled: bool = True, seed: int = 0, count: int = 100_000) -> tuple[float, float]:
    """Below which |x| the small part handed to the tensor core turns subnormal (under 2^-126), as log2 of |x|: the
    10th and 90th percentile over float32 x with uniformly random mantissas (those with small = 0, already TF32,
    left out). ``scaled``: step 13's small·2^11, else the first version's small. While it is normal it scales with
    x, so x = m·2^e has a subnormal one when |handed(m)|·2^e < 2^-126."""
    m = np.random.default_rng(seed).uniform(1, 2, count).astype(np.float32)
    handed = np.abs(_small_handed(m, scaled)[1].astype(np.float64))
    keep = handed > 0
    limit = np.log2(m[keep].astype(np.float64)) - 126 - np.log2(handed[keep])
    return float(np.percentile(limit, 10)), float(np.percentile(limit, 90))


def subnormal_table(exponents=(-110, -114, -116, -120, -124, -125, -126, -130, -135)) -> MarkdownTable:
    """For x = 1.2345·2^e: the small part step 13 hands the tensor core (small·2^11), whether it is subnormal (under
    2^-126), and the error of x as read (:func:`read_error`) with step 13's scaled split and with the first version's
    unscaled one, beside the error if the small part were dropped (big alone)."""
    def cell(err):
        return f"{err:.1e} (2^{np.log2(err):.0f})" if err else "0"

    rows = []
    for e in exponents:
        x = np.float32(1.2345 * 2.0 ** e)
        big, handed, _ = _small_handed(x, True)
        sub = 0 < abs(float(handed)) < 2.0 ** -126
        rows.append({"x": f"1.2345·2^{e}", "small·2^11 (handed to the tensor core)": f"{float(handed):.2e}",
                     "subnormal?": "yes" if sub else "no",
                     "error as read: scaled split (step 13)": cell(float(read_error(x, True))),
                     "error as read: unscaled split (first version)": cell(float(read_error(x, False))),
                     "error of big alone": f"{abs(float(big) - float(x)) / float(x):.1e}"})
    return table(rows, align="rrlrrr")
