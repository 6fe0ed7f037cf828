# %% [markdown]
# # Lesson 0 — Setup, and how fast a matrix multiply could possibly be
#
# This course writes an SGEMM — `C = A · B` in 32-bit floats, A of shape M×K, B of shape K×N, all row-major —
# as a Numba CUDA kernel, and makes it faster one step at a time, from three nested loops to near cuBLAS. Every
# lesson follows the same path:
#
# 1. **the idea** of the step, with a small picture;
# 2. **a prediction**, written down *before* looking at a timing;
# 3. **the real source** of the step, printed from the package (never a copy pasted into the notebook);
# 4. **a check against NumPy**, small enough to run anywhere;
# 5. **the measurement**, against the previous step and against cuBLAS;
# 6. **what the measurement says** about the prediction — and where it says we were wrong, we say so.
#
# Before any kernel, this lesson sets the scale: how much work a GEMM is, and what the hardware could do at best.
#
# ## Where do the kernels run?

# %%
import numpy as np

import gemm_steps
from gemm_steps.course import lesson

print(gemm_steps.backend())

# %% [markdown]
# With a CUDA GPU, Numba compiles each kernel to PTX and the GPU runs it. Without one, the package switches to
# Numba's **CUDA simulator**, which runs every GPU thread as a Python thread: the same kernel source, the same
# answers, and many orders of magnitude slower. On the simulator we therefore check correctness on tiny matrices,
# and read timings from the benchmark run shipped in `results/` — each lesson says which you are looking at.
#
# Here are the steps of the course, in order:

# %%
for step in gemm_steps.steps():
    print(f"{step.number:2d}  {step.name:<15} {step.summary}")

# %% [markdown]
# A quick test that everything works: step 1 on a small problem, compared with NumPy in float64. The output
# matrix starts filled with NaN, so an element the kernel forgot to write could not hide.

# %%
lesson.check_against_numpy("naive", [(16, 16, 16), (33, 17, 40)])

# %% [markdown]
# ## What a GEMM costs
#
# Each of the M·N elements of C is a dot product of length K: K multiplies and K adds. So a GEMM is
# **2·M·N·K floating-point operations** (FLOPs). The least it can move through memory is reading A and B once and
# writing C once: **4·(M·K + K·N + M·N) bytes** in float32.
#
# Their ratio — FLOPs per byte, the **arithmetic intensity** — is what decides whether a kernel can keep the
# arithmetic units busy or waits on memory. For square matrices of size n it is 2n³ / 12n² = **n / 6**: it grows
# with n, because every element of A and B takes part in n multiply-adds.

# %%
from gemm_steps.harness.bench import flops


def min_bytes(m, n, k):
    return 4 * (m * k + k * n + m * n)  # read A and B once, write C once; 4 bytes per float32


print(f"{'n':>6} {'GFLOP':>10} {'MB moved':>9} {'FLOP/byte':>10}")
for n in (64, 256, 1024, 4096, 8192):
    print(f"{n:6d} {flops(n, n, n) / 1e9:10.3f} {min_bytes(n, n, n) / 1e6:9.1f} "
          f"{flops(n, n, n) / min_bytes(n, n, n):10.1f}")

# %% [markdown]
# ## The roofline
#
# A GPU can do at most *P* FLOP/s and read at most *B* bytes/s from its DRAM. A kernel that does *I* FLOPs per
# byte it moves can therefore never beat
#
# $$\text{attainable FLOP/s} = \min(P,\; B \cdot I).$$
#
# Plotted against *I* on log axes this is a slanted line (memory bound) that meets a flat roof (compute bound) at
# the **ridge point** *I = P / B*. We read *P* and *B* for the GPU that produced the results:
#
# * *P* is the FP32 peak **estimated** from the benchmark's environment record: SMs × 128 FP32 lanes × 2 FLOPs per
#   fused multiply-add (FMA) × the maximum SM clock. It is not measured.
# * *B* is the DRAM bandwidth from **NVIDIA's datasheet**, not measured either.

# %%
results = lesson.measure_or_load(["naive"], [1024, 4096])

# %%
if results:
    env = results["environment"]
    peak = lesson.fp32_peak_tflops(results)  # TFLOPS, estimated
    bandwidth = lesson.datasheet_bandwidth_tbs(results)  # TB/s, datasheet
    lesson.say(
        f"**{env['gpu']}**: {env['sm_count']} SMs at up to {env['sm_clock_max_mhz']:.0f} MHz, so an FP32 peak of "
        f"about **{peak:.1f} TFLOPS** (estimate). "
        + (f"Datasheet DRAM bandwidth **{bandwidth} TB/s**, so the ridge point is at "
           f"**{peak / bandwidth:.1f} FLOP/byte**: a kernel needs at least that many FLOPs per DRAM byte "
           "before the arithmetic, not the memory, becomes its limit."
           if bandwidth else "No datasheet bandwidth is on file for this GPU, so no roofline is drawn below.")
    )

# %% [markdown]
# ## Where the naive kernel sits — a prediction
#
# The naive kernel (lesson 1) gives every element of C its own thread, and that thread runs the textbook loop
# `acc += A[row, k] * B[k, col]`. Each turn of the loop loads **two floats (8 bytes) from global memory for one
# FMA (2 FLOPs)**. If no load were ever served from a cache, its intensity would be
#
# $$I_\text{naive} = \frac{2\ \text{FLOP}}{8\ \text{bytes}} = 0.25\ \text{FLOP/byte},$$
#
# far left of the ridge point, while the GEMM itself — n / 6 FLOP/byte — sits far to the right. The problem is
# compute bound; the naive *algorithm* throws that away by fetching every operand again for every FMA.
# So the prediction is: **naive is memory bound, at most about B × 0.25**, unless caches catch some of its loads.

# %%
naive_intensity = 2 / 8  # FLOP per byte: one FMA per two 4-byte loads
if results and bandwidth:
    lesson.say(
        f"With the datasheet bandwidth that ceiling is {bandwidth} TB/s × {naive_intensity} FLOP/byte = "
        f"**{bandwidth * naive_intensity:.2f} TFLOPS**, {bandwidth * naive_intensity / peak:.1%} of the FP32 peak."
    )

# %% [markdown]
# ## The measurement on the roofline
#
# Now the measured numbers: the naive kernel drawn at its no-cache intensity, and cuBLAS drawn at the intensity of
# the matrix size it ran (the minimum traffic, as if every element were read once).

# %%
if results and bandwidth:
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    size = lesson.headline_size(results, ["naive"])
    naive, cublas = lesson.record(results, "naive", size), lesson.record(results, "cublas", size)
    intensity = np.logspace(-2, 3.5, 300)
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    ax.loglog(intensity, np.minimum(peak, bandwidth * intensity), "k-", label="roofline: min(peak, bandwidth × I)")
    ax.plot(naive_intensity, naive["tflops"], "o", ms=9, label=f"naive, measured ({lesson.size_label(size)})")
    ax.plot(flops(*size) / min_bytes(*size), cublas["tflops"], "s", ms=9,
            label=f"cuBLAS, measured ({lesson.size_label(size)})")
    ax.set(xlabel="arithmetic intensity (FLOP per DRAM byte)", ylabel="TFLOPS",
           title=f"FP32 roofline (peak: estimate; bandwidth: datasheet)\n{short_label(env)}")
    ax.legend(loc="lower right")
    lesson.show_figure(fig)

# %% [markdown]
# ## What the numbers say

# %%
if results and bandwidth:
    roof = bandwidth * naive_intensity
    where = (
        f"below its no-cache ceiling of {roof:.2f} TFLOPS. That fits a memory-bound kernel, but does not prove "
        "one: lessons 1 and 2 look closer at what really limits it"
        if naive["tflops"] <= roof
        else f"*above* its no-cache ceiling of {roof:.2f} TFLOPS — impossible if every load went to DRAM, "
        "so the caches must be serving part of its loads"
    )
    lesson.say(
        f"At {lesson.size_label(size)} the naive kernel reaches **{naive['tflops']:.2f} TFLOPS**, {where}. "
        f"cuBLAS reaches **{cublas['tflops']:.1f} TFLOPS** ({cublas['tflops'] / peak:.0%} of the estimated peak), "
        f"{cublas['tflops'] / naive['tflops']:.0f}× the naive kernel.\n\n"
        "That gap is the course. Every step ahead does the same thing in a different place (the order threads "
        "touch memory in, shared memory, registers): it makes each loaded value feed more FMAs. That moves the "
        "kernel to the right on this plot, until the arithmetic units rather than the memory set the pace."
    )
