# %% [markdown]
# # Lesson 12 — Tensor cores: a warp multiplies 16×8×8 tiles in one instruction
#
# Steps 1–11 did every multiply-add on the SM's **FP32 units**: 128 per SM per clock. Since Volta (NVIDIA's GPU
# generation of 2017; the H100 is a Hopper, 2022), each SM also has **tensor cores**: units that multiply small
# *matrices*, not numbers. One instruction, issued by a whole warp, computes D = A·B + C on a 16×8 tile of A, an 8×8
# tile of B and a 16×8 tile of C — 16·8·8 = 1,024 multiply-adds (2,048 FLOPs). In SASS (the GPU's machine code) it
# is called **HMMA**; in PTX, `mma.sync.m16n8k8`. On Hopper the tensor cores do 8× the
# FP32 units' multiply-adds per clock, in a format called TF32 (below). This lesson drives them from Numba, checks
# the result, and measures what that buys and what it costs in accuracy.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_12

tensor_cores = gemm_steps.get_step("tensor_cores")
results = lesson.load_results()
print(tensor_cores.doc.splitlines()[0])

# %% [markdown]
# ## The idea: one instruction, 32 lanes, one tile
#
# The mma is **warp-synchronous**: all 32 lanes (threads) of a warp must execute it together, and none of them
# holds a whole matrix. Each lane passes in a few elements in its registers — 4 of A, 2 of B, 4 of C — and gets 4
# elements of D back. These per-lane pieces are called **fragments**, and which lane holds which element is fixed by
# the hardware (the PTX ISA's fragment layout). With `group = lane // 4` and `pair = lane % 4`, the formulas the
# kernel uses (`gemm_steps/toolkit/tensor_core_ops.py` documents them):

# %%
import inspect

lesson.show_code("\n".join(inspect.getsource(f) for f in (lesson_12.a_element, lesson_12.b_element,
                                                          lesson_12.c_element)))
lesson.show_figure(lesson_12.fragment_figure())

# %% [markdown]
# Read it by colour: the four lanes of one group (say lanes 4–7, orange) hold rows 1 and 9 of A, column 1 of B,
# and rows 1 and 9 of C. Lane `4·g + p` holds A's row g at k = p and p + 4; B's column g at the same two k — so the
# lanes that share a group share rows of A, and the k each lane holds lines up with B. C is laid out differently:
# each lane gets two *neighbouring columns* (2p, 2p + 1) of rows g and g + 8.
#
# Is the drawing right? A warp whose lanes pass exactly the elements drawn above should get D = A·B + C. On the
# simulator, `mma_tf32`'s twin makes the 32 lanes (Python threads) meet and computes each lane's D from what they
# passed, so a wrong layout gives a wrong answer there too:

# %%
text, _ = lesson_12.one_warp_check()
lesson.say(text)

# %% [markdown]
# ## TF32: what is lost
#
# A float32 stores 1 sign bit, 8 exponent bits and 23 **mantissa bits** (the binary digits after the leading 1).
# The leading 1 and the mantissa bits together, 24 bits, are the **significand**: x = ± significand × 2^exponent.
# **TF32** ("tensor float 32") keeps float32's sign and exponent — the same range — but only the top 10 mantissa
# bits (an 11-bit significand). The spacing between neighbouring TF32 numbers near x, one **unit in the last place**
# (ulp), is 2^-10 of x's power of two; rounding to the nearest TF32 value moves x by at most half of that: a relative
# error of at most u = 2^-11 ≈ 4.9e-4 (float32's is 2^-24 ≈ 6e-8). The tensor core multiplies TF32 inputs exactly
# (a product of two 11-bit significands fits in float32's 24) and adds in float32 — but its adds *truncate* instead
# of rounding to nearest, which matters in lesson 13. Here the loss is in the inputs. Measured in NumPy on
# standard-normal inputs, next to the tolerance the course's checks allow a TF32 kernel
# (`harness/verify.tf32_tolerance`: 4u plus the float32 tolerance for the sums):

# %%
lesson.say(lesson_12.tf32_loss_table())

# %% [markdown]
# One input moves by at most u, a product by up to 2u. But the error of a whole
# product C stays at about 0.6 u whatever K: the K product errors have random signs, so they grow like √K, and so
# does C itself. About 3 decimal digits, for every K — fine for training neural networks, not a drop-in for
# float32 (lesson 13 wins the digits back).
#
# Why round at all, if the tensor core keeps only the top 10 mantissa bits anyway? Because of *how* it drops the
# rest:

# %%
lesson.say(lesson_12.truncation_check())

# %% [markdown]
# ## The prediction
#
# Before the kernel and its timing: what should step 12 reach? From step 11's shipped timing, the ceilings, and the
# shape of step 12's warp tile (the tile configuration the benchmark ran; the kernel section below shows the loop
# it counts):

# %%
if results:
    lesson.say(lesson_12.prediction(results))

# %% [markdown]
# ## The kernel
#
# Step 12 keeps step 9's tiling — one block per 128×256 tile of C, 8 warps of 64×64 — and leaves out the
# persistent loop and stream-K of steps 10–11, to keep the new part in view. Each warp tile is 4 × 8 mma tiles.
# Per k-step of 8, a lane loads its fragment elements from shared memory, rounds them with `to_tf32`
# (`cvt.rna.tf32.f32`: round to nearest, ties away from zero) and issues one `mma_tf32` per mma tile. A's four
# fragment values of a piece come from one `ldmatrix` (`load_matrix_x4`): each lane names one 16-byte row of the
# piece in shared memory (4 floats), and the warp gets back exactly each lane's a0…a3, in the registers the mma
# reads — one instruction instead of four loads. B's fragment values stay scalar loads (they run down a column,
# which `ldmatrix` cannot read for 32-bit values). Two more changes: copies into shared memory go
# through `cp.async` (global → shared without passing through registers) in a 3-stage pipeline, and the shared
# tiles are padded so that a warp's fragment reads hit 32 different banks. The inner loop:

# %%
lesson.show_kernel(tensor_cores, start="for kk in unroll(0, BLOCK_K, 8)", stop="acc[i][j][2], acc[i][j][3])")

# %% [markdown]
# And where each lane's results go — `c_element` from the picture, plus the offsets of the block, the warp and the
# mma tile:

# %%
lesson.show_kernel(tensor_cores, start="# Lane (group, pair) holds", stop="c[row * n + col]")

# %% [markdown]
# The whole kernel, with the pipeline: `tensor_cores.source()`, or `gemm-steps diff 9 12` for what changed since
# step 9.
#
# ## Is it right?
#
# On the simulator the step runs a smaller tile configuration of the same kernel (`SIMULATOR_CONFIG`: 64×32
# blocks of 4 warps; the shipped 128×256 tiles take about a minute per product there, where every mma is a meeting
# of 32 Python threads). A full-tile shape and a ragged one (the edge kernel), against NumPy in float64 with the
# TF32 tolerance:

# %%
print("simulator tiles:", {k: tensor_cores.config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREADS")})
lesson.check_against_numpy(tensor_cores, [(128, 64, 48), (70, 45, 20)])

# %% [markdown]
# ## The measurement
#
# From the course benchmark: step 11, the two tensor-core steps (step 13 is lesson 13), cuBLAS SGEMM (the FP32
# units) and cuBLAS in TF32 mode (`CUBLAS_COMPUTE_32F_FAST_TF32`), all in one run:

# %%
results = lesson.measure_or_load(["stream_k", "tensor_cores", "three_tf32"], [512, 1024, 2048, 4096, 8192])
if results:
    lesson.say(lesson_12.speed_table(results))

# %%
if results:
    lesson.show_figure(lesson_12.speed_figure(results))

# %% [markdown]
# ## What the numbers say

# %%
if results:
    lesson.say(lesson_12.verdict(results))

# %% [markdown]
# ## Why: latency, not throughput
#
# Nsight Compute on one 4096³ launch of each tensor-core step. From its counters we can also work out how long the
# tensor pipe is busy per `mma.sync` — the number the prediction took from the datasheet:

# %%
profiles = lesson_12.tensor_core_profiles(results) if results else None
if profiles:
    lesson.say(lesson_12.profile_table(profiles))
    lesson.say(lesson_12.limits_text(profiles, results=results))

# %% [markdown]
# Step 12 spends its registers on a large warp tile (32 mma tiles × 4 accumulators = 128 registers of C per
# lane, plus fragments and addresses), so only 8 warps fit an SM — 2 per scheduler, too few to hide the latency of
# each warp's load → round → mma chain. Fewer instructions per HMMA would not help much now: the count is within
# the budget. The ways forward: loading the next k-step's fragments while this one's mma run (more independent work
# per warp), and Hopper's `wgmma`, whose operands come straight from shared memory and which reaches the datasheet
# rate that `mma.sync` cannot; cuBLAS TF32 shows how much room there is. `wgmma` runs from Numba
# (`experiments/wgmma_probe.py` checks one warpgroup's product against NumPy), and a first GEMM on it,
# `experiments/wgmma_gemm.py`, is right but still slower than step 12 (docs/tensor_cores.md has its numbers and what
# it lacks: producer warps that keep the tensor cores fed between barriers). The rounding variants that were tried (and
# why step 12 keeps `cvt.rna`), and both profiles in full: the
# [deep dive: rounding and the profile](deep_dives/12_rounding_and_the_profile.ipynb).
#
# Next: [Lesson 13: 3xTF32](13_three_tf32.ipynb) — float32's accuracy back, from three TF32 products.
