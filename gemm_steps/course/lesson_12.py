"""Lesson 12's helpers (tensor cores, TF32): the fragment layout of ``mma.sync.m16n8k8`` drawn from the kernels' own
index formulas (:func:`~.gpu_model.a_element` …) and checked on one warp; what TF32 rounding loses, measured in NumPy;
the prediction's numbers, the speed table, figure and verdict values from the shipped benchmark; what the Nsight
Compute report of steps 12 and 13 says of the tensor pipe (:func:`tensor_core_profiles`, :func:`limits`); the
rounding variants (deep dive). Numbers, tables and figures only: the words are the lesson's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda

from gemm_steps.harness.verify import U_TF32, relative_error, tf32_tolerance
from gemm_steps.toolkit.tensor_core_ops import mma_tf32, mma_tf32_reference, round_to_tf32

from gemm_steps.harness import results_files

from .display import MarkdownTable, table
from .gpu_model import LAYOUT, clocks_per_hmma, mma_sync_ceiling_tflops, mma_sync_clocks, owners, tf32_peak_tflops
from .profiles import kernel_sections, report_metrics, report_text
from .targets import TARGET_3XTF32_VS_SGEMM, TARGET_TF32_TFLOPS
from .timings import caption, common_sizes, fp32_peak_tflops, record, tflops_table

# -- the shipped files (experiments/results/ and results/) -----------------------------------------------------------
#: Nsight Compute, one 4096³ launch of steps 12 and 13.
PROFILE_REPORT = results_files.NCU_TENSOR_CORES_NVIDIA_H100_TXT
#: The course benchmark made with that profile (same H100, same kernels, same day): what a cross-check of the
#: profile's counters against a timing must read — not the newest run, which may be another GPU or later kernels.
PROFILED_RUN = results_files.BENCH_NVIDIA_H100_80GB_HBM3_2026_11_25
#: The TF32 rounding variants of steps 12–13 (deep dive 12).
ROUNDING_RUN = results_files.EXPERIMENT_TF32_CONVERSION_NVIDIA_H100
#: Tensor-core products per useful product: TF32 one, 3xTF32 three (small·big, big·small, big·big).
PRODUCTS = {"tensor_cores": 1, "three_tf32": 3, "warpgroup_mma": 3, "warpgroup_tf32": 1}
#: The steps the speed table compares beside cuBLAS, at every size where all of them ran.
COMPARED = ("stream_k", "tensor_cores", "three_tf32")

#: The rows of the speed table and figure, in order: (record name, label, colour, style).
SPEED_ROWS = [("stream_k", "step 11, stream-K (FP32 units)", "tab:blue", "o-"),
              ("tensor_cores", "step 12, TF32", "tab:orange", "s-"),
              ("three_tf32", "step 13, 3xTF32", "tab:green", "D-"),
              ("cublas", "cuBLAS SGEMM (FP32 units)", "tab:red", "o-"),
              ("cublas_tf32", "cuBLAS TF32", "tab:purple", "s-")]


# -- the fragment layout (its formulas: gpu_model.a_element, b_element, c_element) ----------------------------------
def fragment_figure():
    """A, B and C of one mma, each element labelled with the lane that holds it and the register (a0…a3, b0, b1,
    c0…c3), coloured by the lane's group (lane // 4)."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    colours = plt.get_cmap("tab10").colors
    fig = Figure(figsize=(15, 8), layout="constrained")
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [8, 8, 8]})
    titles = {"A": "A: 16 rows (m) × 8 (k)", "B": "B: 8 (k) × 8 columns (n)", "C": "C and D: 16 (m) × 8 (n)"}
    labels = {"A": ("k", "row (m)"), "B": ("column (n)", "k"), "C": ("column (n)", "row (m)")}
    for ax, name in zip(axes, "ABC"):
        held = owners(name)
        rows, cols = held.shape[:2]
        for i in range(rows):
            for j in range(cols):
                lane, r = held[i, j]
                ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colours[lane // 4], alpha=0.35 + 0.15 * (lane % 4),
                                           edgecolor="white"))
                ax.text(j + 0.5, i + 0.5, f"{lane}\n{name.lower()}{r}", ha="center", va="center", fontsize=8)
        ax.set(xlim=(0, cols), ylim=(rows, 0), aspect="equal")
        ax.set_title(titles[name], fontsize=11)
        ax.set_xticks(np.arange(cols) + 0.5, range(cols), fontsize=9)
        ax.set_yticks(np.arange(rows) + 0.5, range(rows), fontsize=9)
        ax.set_xlabel(labels[name][0], fontsize=10)
        ax.set_ylabel(labels[name][1], fontsize=10)
    fig.suptitle("One mma.sync.m16n8k8: which lane (number) holds which element in which register; colour = the "
                 "lane's group, lane // 4 (shade: pair, lane % 4)", fontsize=11)
    return fig


def index_tables():
    """The layout as arrays a kernel can read: (a_rows, a_cols) of shape (32, 4), (b_rows, b_cols) (32, 2),
    (c_rows, c_cols) (32, 4)."""
    tables = []
    for name in "ABC":
        _, registers, element = LAYOUT[name]
        cells = np.array([[element(lane, r) for r in range(registers)] for lane in range(32)], dtype=np.int32)
        tables += [np.ascontiguousarray(cells[..., 0]), np.ascontiguousarray(cells[..., 1])]
    return tables


_ONE_WARP = None


def _one_warp(a, b, c, d, ar, ac, br, bc, cr, cc):
    """One warp, one mma: lane ``lane`` passes A[ar[lane, r], ac[lane, r]] as a_r (and so on) and stores its d_r."""
    lane = cuda.threadIdx.x
    d0, d1, d2, d3 = mma_tf32(a[ar[lane, 0], ac[lane, 0]], a[ar[lane, 1], ac[lane, 1]],
                              a[ar[lane, 2], ac[lane, 2]], a[ar[lane, 3], ac[lane, 3]],
                              b[br[lane, 0], bc[lane, 0]], b[br[lane, 1], bc[lane, 1]],
                              c[cr[lane, 0], cc[lane, 0]], c[cr[lane, 1], cc[lane, 1]],
                              c[cr[lane, 2], cc[lane, 2]], c[cr[lane, 3], cc[lane, 3]])
    d[cr[lane, 0], cc[lane, 0]] = d0
    d[cr[lane, 1], cc[lane, 1]] = d1
    d[cr[lane, 2], cc[lane, 2]] = d2
    d[cr[lane, 3], cc[lane, 3]] = d3


def one_warp_product(a: np.ndarray, b: np.ndarray, c: np.ndarray, tables=None) -> np.ndarray:
    """D of one ``mma_tf32`` by one warp whose lanes pass the elements the layout above says (``tables``: another
    layout, as :func:`index_tables` returns it). On the simulator the 32 lanes are Python threads that meet in
    ``mma_tf32``'s twin; on a GPU it is one HMMA."""
    global _ONE_WARP
    if _ONE_WARP is None:
        _ONE_WARP = cuda.jit(_one_warp)
    tables = index_tables() if tables is None else tables
    d = cuda.to_device(np.full((16, 8), np.nan, dtype=np.float32))
    _ONE_WARP[1, 32](cuda.to_device(a), cuda.to_device(b), cuda.to_device(c), d, *map(cuda.to_device, tables))
    return d.copy_to_host()


def _one_warp_inputs(seed: int):
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal(shape).astype(np.float32) for shape in ((16, 8), (8, 8), (16, 8)))
    expected = mma_tf32_reference(a, b, c)
    return a, b, c, lambda d: float(np.abs(d - expected).max() / np.abs(expected).max())


@dataclass(frozen=True)
class WarpCheck:
    """One warp's mma against NumPy (:func:`one_warp_check`)."""
    right: float  # the layout drawn: largest difference relative to D's largest element
    wrong: float  # the same with A's rows 0–7 and 8–15 swapped in the layout


def one_warp_check(seed: int = 0) -> WarpCheck:
    """One warp's mma with the layout drawn against NumPy (``mma_tf32_reference``: A and B rounded to TF32, sums in
    float64), on A and B rounded to TF32 as the kernels round them, and with A's rows 0–7 and 8–15 swapped in the
    layout."""
    a, b, c, worst = _one_warp_inputs(seed)
    a_tf32, b_tf32 = round_to_tf32(a), round_to_tf32(b)
    tables = index_tables()
    tables[0] = (tables[0] + 8) % 16  # a lane passes row group + 8 where row group belongs, and back
    return WarpCheck(worst(one_warp_product(a_tf32, b_tf32, c)), worst(one_warp_product(a_tf32, b_tf32, c, tables)))


def truncation_check(seed: int = 0) -> float:
    """The warp of :func:`one_warp_check` on A and B *not* rounded to TF32, against D of the rounded inputs: how far
    the tensor core's own reading of float32 operands (it keeps their top 10 mantissa bits) lands."""
    a, b, c, worst = _one_warp_inputs(seed)
    return worst(one_warp_product(a, b, c))


# -- what TF32 loses ---------------------------------------------------------------------------------------------------
def tf32_loss_table(seed: int = 0, size: int = 64, ks=(64, 1024, 4096)) -> MarkdownTable:
    """Measured in NumPy on standard-normal float32 inputs: how far rounding to TF32 moves one input, one product and
    a whole product C = A·B (sums in float64, so only TF32's rounding shows), in units of u = 2^-11, beside
    :func:`tf32_tolerance`."""
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(200_000).astype(np.float32) for _ in range(2))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    input_err = np.abs(round_to_tf32(x).astype(np.float64) - x64) / np.abs(x64)
    product_err = np.abs(round_to_tf32(x).astype(np.float64) * round_to_tf32(y) - x64 * y64) / np.abs(x64 * y64)

    def cell(e):
        return f"{e:.2e} ({e / U_TF32:.2f} u)"

    rows = [(f"one input, rounded to TF32 ({len(x):,} values)", cell(input_err.mean()), cell(input_err.max()), ""),
            ("one product, both inputs rounded", cell(product_err.mean()), cell(product_err.max()), "")]
    for k in ks:
        a = rng.standard_normal((size, k)).astype(np.float32)
        b = rng.standard_normal((k, size)).astype(np.float32)
        err = relative_error(round_to_tf32(a).astype(np.float64) @ round_to_tf32(b).astype(np.float64), a, b)
        rows.append((f"C = A·B, {size}×{size}×{k}, sums in float64", cell(err), "",
                     f"`tf32_tolerance({k})` = {tf32_tolerance(k):.2e}"))
    return table([dict(zip(("what", "mean", "largest", "tolerance used by the checks"), r)) for r in rows],
                 align="lrrr", tight_blanks=True)


# -- the prediction --------------------------------------------------------------------------------------------------
def shipped_config(results: dict, name: str = "tensor_cores") -> dict:
    """The tile configuration the benchmark ran ``name`` with (from its largest record)."""
    return record(results, name, common_sizes(results, COMPARED)[-1])["config"]


@dataclass(frozen=True)
class KStepInstructions:
    """One warp's k-step of 8 in the k-loop as written (:func:`k_step_instructions`)."""
    warp_tile: tuple  # (rows, columns) of the warp's tile of C
    hmma: int  # HMMAs
    elements: int  # fragment elements loaded and rounded
    loads: int  # load instructions: one ldmatrix per A piece, one LDS per B element
    per_hmma: float  # HMMAs, loads and two instructions per rounding, per HMMA


def k_step_instructions(config: dict) -> KStepInstructions:
    """Per warp and per k-step of 8, in the k-loop as written: HMMAs, fragment elements loaded and rounded, and the
    instructions per HMMA that follow: one ``ldmatrix`` per A piece (its four elements), one LDS per B element, and
    a two-instruction rounding per element (ptxas drops ``cvt.rna``'s third instruction before an mma)."""
    mma_m, mma_n = 8 * config["THREAD_M"] // 16, 4 * config["THREAD_N"] // 8
    hmma, elements = mma_m * mma_n, 4 * mma_m + 2 * mma_n
    loads = mma_m + 2 * mma_n
    return KStepInstructions((8 * config["THREAD_M"], 4 * config["THREAD_N"]), hmma, elements, loads,
                             (hmma + loads + 2 * elements) / hmma)


@dataclass(frozen=True)
class Prediction:
    """The prediction's numbers (:func:`predicted`)."""
    size: tuple  # the largest common size, where it is made
    step11: float  # step 11's TFLOPS there
    fp32: float  # the FP32 ceiling (TFLOPS)
    tf32: float  # the TF32 ceiling: 8× FP32, at the run's maximum clock
    carried: float  # step 11's share of its ceiling carried over to the TF32 one: the range's top
    low: float  # our target: the range's bottom
    count: KStepInstructions  # what the k-loop issues
    budget: float  # clocks per HMMA at the dense rate: the instructions a warp may spend per HMMA
    clock_mhz: float | None  # the run's maximum SM clock


def predicted(results: dict) -> Prediction:
    """The prediction's numbers, from step 11's timing, the ceilings and the shipped configuration (nothing of step
    12's timing): the FP32 and TF32 ceilings, step 11's share of its ceiling carried over, our target as the low
    end, and the instruction budget (``budget``: clocks per HMMA at the dense rate; ``count``: what the k-loop
    issues)."""
    big = common_sizes(results, COMPARED)[-1]
    step11 = record(results, "stream_k", big)["tflops"]
    fp32, tf32 = fp32_peak_tflops(results), tf32_peak_tflops(results)
    return Prediction(big, step11, fp32, tf32, step11 / fp32 * tf32, TARGET_TF32_TFLOPS,
                      k_step_instructions(shipped_config(results)), clocks_per_hmma(),
                      results["environment"].get("sm_clock_max_mhz"))


# -- the measurement ---------------------------------------------------------------------------------------------------
def speed_table(results: dict) -> MarkdownTable:
    """TFLOPS (and % of cuBLAS SGEMM, same run) of step 11, the two tensor-core steps, cuBLAS SGEMM and cuBLAS TF32
    at every common size."""
    return tflops_table(results, SPEED_ROWS, common_sizes(results, COMPARED),
                        lambda r, size: f"{r['tflops']:.1f} ({r['pct_of_cublas']:.0f} %)")


def speed_figure(results: dict):
    """TFLOPS against size for the rows of :func:`speed_table`, with the TF32 ceiling (and what ``mma.sync`` reaches
    of it, from the shipped profile) and our targets."""
    from ..harness.environment import short_label
    from .plots import speed_error_figure  # here: importing the helper loads no pyplot

    size_list = common_sizes(results, COMPARED)
    sgemm = np.array([record(results, "cublas", s)["tflops"] for s in size_list])
    peak, profiles = tf32_peak_tflops(results), tensor_core_profiles()
    reach = (f"; mma.sync reaches ≈ {mma_sync_ceiling_tflops(results, profiles['tensor_cores']):.0f}"
             if profiles and "tensor_cores" in profiles else "")

    def targets(ax, x):
        ax.plot(x, TARGET_3XTF32_VS_SGEMM * sgemm, color="tab:olive", lw=1.5, ls="--",
                label=f"our target for step 13: {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM")
        ax.axhline(TARGET_TF32_TFLOPS, color="tab:brown", lw=1.5, ls="--",
                   label=f"our target for step 12: {TARGET_TF32_TFLOPS:.0f} TFLOPS")
        ax.axhline(peak, color="k", lw=1, ls="-.", label=f"TF32 ceiling: 8× FP32 at the max clock, {peak:.0f}{reach}")

    title = f"The tensor-core steps against step 11 and cuBLAS\n{short_label(results['environment'])}"
    return speed_error_figure(results, SPEED_ROWS, size_list, targets, title, errors=False, figsize=(9, 5.2),
                              legend_fontsize=9)


@dataclass(frozen=True)
class AtSize:
    """Step 12 at one size (:attr:`Verdict.sizes`)."""
    tflops: float  # its TFLOPS
    vs_step11: float  # × step 11
    pct: float  # % of cuBLAS SGEMM, same run
    of_cublas_tf32: float  # share of cuBLAS TF32 (NaN where it did not run)
    cublas_tf32: float  # cuBLAS TF32's TFLOPS (NaN where it did not run)
    of_ceiling: float  # share of the TF32 ceiling


@dataclass(frozen=True)
class Verdict:
    """Step 12 against our target and the prediction (:func:`verdict`)."""
    sizes: dict  # size → :class:`AtSize`, at the two largest common sizes
    best: float  # step 12's best TFLOPS over the common sizes
    met: bool  # the best reaches our target
    at_prediction: float  # step 12's TFLOPS at the prediction's size
    where: str  # "inside", "below" or "above" the predicted range
    of_carried: float  # at_prediction ÷ the range's top
    under_low: float  # how far below the range's bottom, 1 − at_prediction ÷ it


def verdict(results: dict) -> Verdict:
    """Step 12 at the two largest common sizes (TFLOPS, × step 11, % of cuBLAS SGEMM, share of cuBLAS TF32 and of the
    TF32 ceiling), our target (``met``: the best size reaches it) and where the prediction's size landed
    (``where``: "inside", "below" or "above" the predicted range)."""
    p = predicted(results)
    rows = {}
    for s in common_sizes(results, COMPARED)[-2:]:
        t12, t11, tf32 = (record(results, n, s) for n in ("tensor_cores", "stream_k", "cublas_tf32"))
        rows[s] = AtSize(t12["tflops"], t12["tflops"] / t11["tflops"], t12["pct_of_cublas"],
                         t12["tflops"] / tf32["tflops"] if tf32 else float("nan"),
                         tf32["tflops"] if tf32 else float("nan"), t12["tflops"] / p.tf32)
    best = max(record(results, "tensor_cores", s)["tflops"] for s in common_sizes(results, COMPARED))
    at = record(results, "tensor_cores", p.size)["tflops"]
    where = "inside" if p.low <= at <= p.carried else ("below" if at < p.low else "above")
    return Verdict(rows, best, best >= TARGET_TF32_TFLOPS, at, where, at / p.carried, 1 - at / p.low)


@dataclass(frozen=True)
class AcrossRuns:
    """Step 12's best TFLOPS in every course benchmark of one GPU against our target (:func:`target_across_runs`)."""
    gpu: str
    bests: dict  # file name → step 12's best TFLOPS over the file's common sizes (as :func:`verdict`), oldest first

    @property
    def runs(self) -> int:
        return len(self.bests)

    @property
    def met(self) -> int:
        """How many of the runs reach the target."""
        return sum(t >= TARGET_TF32_TFLOPS for t in self.bests.values())


def target_across_runs(results: dict, folder=None) -> AcrossRuns:
    """Step 12 against our target in every course benchmark in ``results/`` (or ``folder``) measured on the GPU of
    ``results``: one run's verdict is noise when the step sits at the target (the same kernel moves by a few % between
    processes), the count over the runs is not."""
    gpu = results["environment"].get("gpu")
    bests = {}
    for path, run in results_files.benchmarks(["tensor_cores"], folder):
        sizes = common_sizes(run, COMPARED)
        if run["environment"].get("gpu") == gpu and sizes:
            bests[path.name] = max(record(run, "tensor_cores", s)["tflops"] for s in sizes)
    return AcrossRuns(gpu, bests)


# -- what the profile says --------------------------------------------------------------------------------------------
def tensor_core_profiles() -> dict | None:
    """The Nsight Compute report of one 4096³ launch of steps 12 and 13 (:data:`PROFILE_REPORT`) as {step: {metric:
    value}}, or None if it is not shipped."""
    text = report_text(PROFILE_REPORT)
    if text is None:
        return None
    return {kernel.split("::")[0]: report_metrics(part) for kernel, part in kernel_sections(text)}


@dataclass(frozen=True)
class Limits:
    """One profile's numbers the lessons quote (:func:`limits`)."""
    tensor_pipe: float  # tensor pipe active, % of its peak
    issue_busy: float  # issue slots busy, %
    no_eligible: float  # cycles with no warp ready to issue, %
    cycles_per_issue: float  # clocks between two instructions of one warp
    per_hmma: float  # instructions executed per HMMA
    registers: float  # per thread
    warps_per_sm: float  # theoretical active warps per SM
    warps_per_scheduler: float  # active warps per scheduler
    occupancy: float  # achieved occupancy, %
    bank_conflicts: float  # shared-memory load bank conflicts
    clocks_per_hmma: float  # tensor-pipe clocks per HMMA (inferred: :func:`~.gpu_model.mma_sync_clocks`)


def limits(metrics: dict) -> Limits:
    """One profile's numbers the lessons quote."""
    return Limits(metrics["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"],
                  metrics["Issue Slots Busy"], metrics["No Eligible"], metrics["Warp Cycles Per Issued Instruction"],
                  metrics["smsp__inst_executed.sum"] / metrics["smsp__inst_executed_pipe_tensor_op_hmma.sum"],
                  metrics["Registers Per Thread"], metrics["Theoretical Active Warps per SM"],
                  metrics["Active Warps Per Scheduler"], metrics["Achieved Occupancy"],
                  metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"], mma_sync_clocks(metrics))


def profile_table(profiles: dict) -> MarkdownTable:
    """Both steps' profiles side by side."""
    rows = [("tensor pipe active (of its peak)", "tensor_pipe", "{:.0f} %"),
            ("issue slots busy", "issue_busy", "{:.0f} %"), ("cycles with no warp ready to issue", "no_eligible", "{:.0f} %"),
            ("clocks between two instructions of one warp", "cycles_per_issue", "{:.1f}"),
            ("instructions per HMMA (executed)", "per_hmma", "{:.1f}"), ("registers per thread", "registers", "{:.0f}"),
            ("warps per SM (of 64)", "warps_per_sm", "{:.0f}"), ("shared-memory bank conflicts", "bank_conflicts", "{:.0f}"),
            ("tensor-pipe clocks per HMMA (inferred)", "clocks_per_hmma", "{:.1f}")]
    steps = [s for s in ("tensor_cores", "three_tf32") if s in profiles]
    found = {s: limits(profiles[s]) for s in steps}
    heads = {s: f"step {12 if s == 'tensor_cores' else 13}" for s in steps}
    shown = table([{"": label, **{heads[s]: fmt.format(getattr(found[s], key)) for s in steps}}
                   for label, key, fmt in rows],
                  align="l" + "r" * len(steps), tight_blanks=True)
    return MarkdownTable(shown + f"\n\n*Nsight Compute, one 4096³ launch each, `experiments/results/"
                         f"{PROFILE_REPORT}` (`scripts/profile_steps.py`, the command in its docstring).*")


@dataclass(frozen=True)
class PipeRate:
    """What one profile says about ``mma.sync``'s rate (:func:`pipe_rate`)."""
    clocks: float  # tensor-pipe clocks per HMMA
    ceiling: float  # the TF32 ceiling with mma.sync at that rate (TFLOPS)
    tflops_4096: float  # the benchmark's useful TFLOPS of the step at 4096³ (NaN if not there)
    products: int  # tensor-core products per useful product (3xTF32: three)
    busy: float  # tensor pipe active in the profile, % of its peak
    full_pipe: float  # tflops_4096 × products ÷ busy: the rate a full pipe would give (TFLOPS)


def pipe_rate(profiles: dict, results: dict, step: str = "tensor_cores") -> PipeRate:
    """What the profile of ``step`` says about ``mma.sync``'s rate: clocks of tensor pipe per HMMA, the TF32 ceiling
    with ``mma.sync`` at that rate, and a cross-check: the benchmark's TFLOPS of ``step`` at the profiled size
    (4096³) × the tensor-core products per useful product (3xTF32: three HMMAs each) over the share of the pipe it
    kept busy — the rate a full pipe would give at the benchmark's clock."""
    f = limits(profiles[step])
    measured = record(results, step, 4096)
    tflops = measured["tflops"] if measured else float("nan")
    return PipeRate(f.clocks_per_hmma, mma_sync_ceiling_tflops(results, profiles[step]), tflops, PRODUCTS[step],
                    f.tensor_pipe, tflops * PRODUCTS[step] / (f.tensor_pipe / 100))


# -- the rounding variants (deep dive) ---------------------------------------------------------------------------------
def rounding_table(run: dict) -> MarkdownTable:
    """The rounding variants of both steps: SASS instructions, TFLOPS and % of cuBLAS SGEMM, and the error."""
    names = list(dict.fromkeys(r["step"] for r in run["records"] if r["step"].startswith("step ")))
    size_list = sorted({r["M"] for r in run["records"]})
    errors, rows = "error at " + " / ".join(f"{s}³" for s in size_list), []
    for name in names:
        by_size = {r["M"]: r for r in run["records"] if r["step"] == name}
        sass = run.get("registers", {}).get(name, {}).get("sass", {})
        rows.append({"variant": name, "SASS instructions (HMMA)": f"{sass.get('instructions', '—')} "
                     f"({sass.get('HMMA', '—')})", **{f"{s}³ TFLOPS": f"{by_size[s]['tflops']:.1f} "
                                                      f"({by_size[s]['pct_of_cublas']:.0f} %)" for s in size_list},
                     errors: " / ".join(f"{by_size[s]['sampled_rel_error_fp64']:.1e}" for s in size_list)})
    return MarkdownTable(table(rows, align="l" + "r" * (len(size_list) + 2)) + "\n\n" + caption(run))


def rounding_gap(run: dict, shipped: str = "step 13 split_tf32 (shipped)",
                 other: str = "step 13 cvt.rna (previous)") -> dict:
    """{size: (TFLOPS of ``other``, of ``shipped``, how much slower ``other`` ran)} in the rounding run."""
    by = {(r["step"], r["M"]): r["tflops"] for r in run["records"]}
    return {s: (by[(other, s)], by[(shipped, s)], 1 - by[(other, s)] / by[(shipped, s)])
            for s in sorted({r["M"] for r in run["records"]})}


