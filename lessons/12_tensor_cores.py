# %% [markdown]
# # Lesson 12 — Tensor cores: a warp multiplies 16×8×8 tiles in one instruction
#
# Steps 1–11 did every multiply-add on the SM's **FP32 units**: 128 per SM per clock. Since Volta (2017) each SM
# also has **tensor cores**, units that multiply small *matrices*; since Ampere (2020) they take **TF32** inputs
# (below) in the shape used here, and the H100 is a Hopper (2022). One instruction, issued by a whole warp, computes
# D = A·B + C on a 16×8 tile of A, an 8×8 tile of B and a 16×8 tile of C: 16·8·8 = 1,024 multiply-adds. In PTX it
# is `mma.sync.m16n8k8`, in SASS (the GPU's machine code) **HMMA**. On Hopper the tensor cores do 8× the FP32
# units' multiply-adds per clock in TF32. This lesson drives them from Numba, checks the result, and measures what
# that buys and what it costs in accuracy.

# %%
import inspect

import gemm_steps
from gemm_steps.course import lesson, lesson_12
from gemm_steps.course.targets import TARGET_TF32_TFLOPS
from gemm_steps.course.gpu_model import a_element, b_element, c_element
from gemm_steps.course.lesson_12 import PROFILED_RUN, limits, tensor_core_profiles
from gemm_steps.course.timings import load_run

tensor_cores = gemm_steps.get_step("tensor_cores")
results = lesson.load_results()
print(tensor_cores.doc.splitlines()[0])

# %% [markdown]
# ## The idea: one instruction, 32 lanes, one tile
#
# The mma is **warp-synchronous**: all 32 lanes of a warp execute it together, and none of them holds a whole
# matrix. Each lane passes in a few elements in its registers — 4 of A, 2 of B, 4 of C — and gets 4 elements of D
# back. These per-lane pieces are **fragments**, and which lane holds which element is fixed by the hardware (the
# PTX ISA's fragment layout). With `group = lane // 4` and `pair = lane % 4`, the formulas the kernel indexes with:

# %%
lesson.show_code("\n".join(inspect.getsource(f) for f in (a_element, b_element, c_element)))
lesson.show_figure(lesson_12.fragment_figure())

# %% [markdown]
# Read it by colour: the four lanes of one group (say lanes 4–7, orange) hold rows 1 and 9 of A, column 1 of B, and
# rows 1 and 9 of C. Lane `4·g + p` holds A's row g at k = p and p + 4, and B's column g at the same two k — so the k
# each lane holds lines up with B. C is laid out differently: each lane gets two *neighbouring columns* (2p, 2p + 1)
# of rows g and g + 8.
#
# Is the drawing right? A warp whose lanes pass exactly the elements drawn should get D = A·B + C. On the simulator
# `mma_tf32`'s twin makes the 32 lanes (Python threads) meet and computes each lane's D from what they passed, so a
# wrong layout gives a wrong answer there too. The largest difference from NumPy's D (relative to D's largest
# element), with the drawn layout and with A's rows 0–7 and 8–15 swapped (inputs already rounded to TF32, as the
# kernel rounds them; the next section says what that is):

# %%
warp = lesson_12.one_warp_check()
print(f"drawn layout: {warp.right:.1e}    rows swapped: {warp.wrong:.2f}")

# %% [markdown]
# ## TF32: what is lost
#
# A float32 stores 1 sign bit, 8 exponent bits and 23 **mantissa bits** (the binary digits after the leading 1).
# **TF32** ("tensor float 32") keeps float32's sign and exponent — the same range — but only the top 10 mantissa
# bits. Rounding to the nearest TF32 value moves x by at most half a unit in its last place: a relative error of at
# most u = 2^-11 ≈ 4.9e-4 (float32's is 2^-24 ≈ 6e-8). The tensor core multiplies TF32 inputs exactly (two 11-bit
# significands fit in float32's 24) and adds in float32. Measured in NumPy on standard-normal inputs, in units of u,
# beside the tolerance the course's checks allow a TF32 kernel (`tf32_tolerance`: 4u plus float32's for the sums):

# %%
lesson.say(lesson_12.tf32_loss_table())

# %% [markdown]
# One input moves by at most u, a product by up to 2u. But the error of a whole product C stays below u whatever
# K: the K product errors have random signs, so they grow like √K, and so does C itself. About 3 decimal
# digits for every K — fine for training neural networks, not a drop-in for float32 (lesson 13 wins the digits back).
#
# Why round at all, if the tensor core keeps only the top 10 mantissa bits anyway? Because it *drops* the rest: fed
# unrounded float32, it reads them truncated (the simulator's twin does the same). The warp above, on the same inputs
# *not* rounded first, against D of the rounded inputs:

# %%
print(f"unrounded inputs: {lesson_12.truncation_check():.1e} away from D of the rounded ones")

# %% [markdown]
# Rounding to nearest first (`to_tf32`, PTX `cvt.rna`: **r**ound to **n**earest, ties **a**way from zero) makes
# each input's error at most half as large as truncation's.
#
# ## The prediction
#
# Two models, stated before the run. **The ceiling moves**: the tensor cores' TF32 rate is 8× the FP32 units', so
# the new roof is 8× the old one. We compute both at the maximum SM clock the benchmark recorded; NVIDIA's H100 SXM
# datasheet quotes a lower dense TF32 rate (≈ 495 TFLOPS), at its own, lower clock. If step 12 kept step 11's share
# of its roof, it would run at that share of the new one. **The instruction budget**: a scheduler issues at most one
# instruction per clock, and at the dense TF32 rate its quarter of the tensor pipe finishes one 16×8×8 HMMA every
# few clocks, so a warp may spend at most that many instructions per HMMA — the HMMA, the fragment loads (one
# `ldmatrix` per piece of A, one load per element of B), two instructions per rounding, and everything else.

# %%
if results:
    p = lesson_12.predicted(results)
    count = p.count
    print(f"FP32 roof {p.fp32:.1f} TFLOPS; TF32 roof (8×, at {p.clock_mhz:.0f} MHz) {p.tf32:.0f} TFLOPS\n"
          f"step 11 at {lesson.size_label(p.size)}: {p.step11:.1f} TFLOPS = {p.step11 / p.fp32:.0%} of "
          f"its roof -> the same share of the new one: {p.carried:.0f} TFLOPS\n"
          f"budget: {p.budget:.0f} instructions per HMMA; step 12's {count.warp_tile[0]}×{count.warp_tile[1]} "
          f"warp tile issues {count.hmma} HMMAs per k-step and {count.loads} loads and {count.elements} "
          f"roundings for them: {count.per_hmma:.1f} per HMMA before any addressing or loop control\n"
          f"prediction: between our target, {p.low:.0f}, and {p.carried:.0f} TFLOPS — nearer the target")

# %% [markdown]
# ## The kernel
#
# Step 12 keeps step 9's tiling — one block per 128×256 tile of C, 8 warps of 64×64 — and leaves out the persistent
# loop and stream-K of steps 10–11, to keep the new part in view. Each warp tile is 4 × 8 mma tiles. Per k-step of
# 8, a lane loads its fragment elements from shared memory, rounds them with `to_tf32`, and issues one `mma_tf32` per
# mma tile. A's four values of a piece come from one `ldmatrix` (`load_matrix_x4`): each lane names one 16-byte row
# of the piece, and the warp gets back exactly each lane's a0…a3, in the registers the mma reads. B's stay scalar
# loads (they run down a column, which `ldmatrix` cannot read for 32-bit values). Copies into shared memory go
# through `cp.async` (global → shared without passing through registers) in a 3-stage pipeline, and the shared
# tiles are padded so that a warp's fragment reads hit 32 different banks. The inner loop:

# %%
lesson.show_kernel(tensor_cores, start="for kk in unroll(0, BLOCK_K, 8)", stop="acc[i][j][2], acc[i][j][3])")

# %% [markdown]
# And where each lane's results go — `c_element` from the picture, plus the offsets of the block, the warp and the
# mma tile (the whole kernel: `tensor_cores.source()`, or `gemm-steps diff 9 12`):

# %%
lesson.show_kernel(tensor_cores, start="# Lane (group, pair) holds", stop="c[row * n + col]")

# %% [markdown]
# ## Is it right?
#
# On the simulator the step runs a smaller tile configuration of the same kernel (64×32 blocks of 4 warps: every
# mma there is a meeting of 32 Python threads). A full-tile shape and a ragged one (the edge kernel), against NumPy
# in float64 with the TF32 tolerance:

# %%
print("simulator tiles:", {k: tensor_cores.config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREADS")})
lesson.check_against_numpy(tensor_cores, [(128, 64, 48), (70, 45, 20)])

# %% [markdown]
# ## The measurement
#
# From the course benchmark: step 11, the two tensor-core steps (step 13 is lesson 13), cuBLAS SGEMM (the FP32
# units) and cuBLAS in TF32 mode, all in one run; TFLOPS, and in brackets % of cuBLAS SGEMM in the same run:

# %%
results = lesson.measure_or_load(["stream_k", "tensor_cores", "three_tf32"], [512, 1024, 2048, 4096, 8192])
if results:
    lesson.say(lesson_12.speed_table(results))
    lesson.show_figure(lesson_12.speed_figure(results))

# %% [markdown]
# ## What the numbers say
#
# Step 12 at the two largest sizes — against step 11, cuBLAS and the TF32 roof — then our target and the prediction.
# Step 12 sits at the target, and between two processes the same kernel moves by a few %: one run's "met" or "not met"
# can flip on a rerun, so the target is also read over every course benchmark of this GPU in `results/`:

# %%
if results:
    v = lesson_12.verdict(results)
    for s, r in v.sizes.items():
        print(f"{lesson.size_label(s)}: {r.tflops:.1f} TFLOPS = {r.vs_step11:.2f}× step 11, {r.pct:.0f} % of "
              f"cuBLAS SGEMM, {r.of_cublas_tf32:.0%} of cuBLAS TF32 ({r.cublas_tf32:.0f}), "
              f"{r.of_ceiling:.0%} of the TF32 roof")
    print(f"our target of {TARGET_TF32_TFLOPS:.0f} TFLOPS: {'met' if v.met else 'not met'} (best {v.best:.1f})")
    runs = lesson_12.target_across_runs(results)
    print(f"  over the {runs.runs} course benchmarks on the {runs.gpu}: met in {runs.met} (step 12's best ran "
          f"{min(runs.bests.values()):.1f}–{max(runs.bests.values()):.1f} TFLOPS)")
    print(f"the prediction: {v.at_prediction:.1f} TFLOPS is {v.where} its range ({v.under_low:.0%} under its "
          f"bottom, {v.of_carried:.0%} of its top)" if v.where == "below" else
          f"the prediction: {v.at_prediction:.1f} TFLOPS is {v.where} its range ({v.of_carried:.0%} of its top)")

# %% [markdown]
# Step 11's share of its roof did not carry over. Why? Nsight Compute on one 4096³ launch of each tensor-core step
# (step 13's column belongs to lesson 13). From its counters we can also infer how long the tensor pipe is busy per
# `mma.sync` — the number the budget took from the dense rate:

# %%
profiles = tensor_core_profiles()
if profiles and results:
    lesson.say(lesson_12.profile_table(profiles))
    f, rate = limits(profiles["tensor_cores"]), lesson_12.pipe_rate(profiles, load_run(PROFILED_RUN))
    print(f"mma.sync ceiling at {rate.clocks:.1f} clocks per HMMA: {rate.ceiling:.0f} TFLOPS; cross-check: "
          f"{rate.tflops_4096:.1f} TFLOPS at 4096³ over a {rate.busy:.0f} % busy pipe = {rate.full_pipe:.0f}")

# %% [markdown]
# **The pipe's real rate.** Per HMMA the tensor pipe was busy for more clocks than the dense rate's (the table's
# last row: our inference from the counters, not a documented number). So with `mma.sync` the TF32 ceiling is only
# a share of the roof (the cross-check lands a little lower: the ceiling assumes the maximum clock, which the
# benchmark need not hold). cuBLAS TF32 runs above that ceiling, so it cannot be using `mma.sync`: on Hopper the
# full rate takes `wgmma` (lesson 14). **Not the budget**: the instructions executed per HMMA fit within the pipe's
# real clocks per HMMA, and the issue slots are mostly idle. **Latency**: at the registers per thread in the table
# only one block of 8 warps fits an SM — 2 per scheduler — and each warp waits on its own chain (load a fragment,
# round it, feed the HMMA); in most cycles no warp is ready to issue. The kernel is **latency-bound**. (No bank
# conflicts: the padding works.)
#
# The ways forward: more independent work per warp (load the next k-step's fragments while this one's mma run), or
# Hopper's `wgmma`, whose operands come from shared memory and which can reach the full rate — steps 14 and 15. The
# rounding variants that were tried (and why step 12 keeps `cvt.rna`), and both profiles read in full: the
# [deep dive: rounding and the profile](deep_dives/12_rounding_and_the_profile.ipynb).
#
# Try it: [`exercises/tensor_cores.py`](../exercises/tensor_cores.py) — one warp's mma, its fragments loaded and
# stored by the layout (`gemm-steps exercise check tensor_cores` names any element a lane passed or stored out of
# place).
#
# Next: [Lesson 13: 3xTF32](13_three_tf32.ipynb) — float32's accuracy back, from three TF32 products.
