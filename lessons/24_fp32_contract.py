# %% [markdown]
# # Lesson 24 — What float32 accuracy means, and how the course keeps it
#
# Steps 13 and 14 multiply float32 matrices on TF32 tensor cores, three products for one, and lessons 13–14 showed
# them as accurate as cuBLAS SGEMM — on standard-normal squares. A user's matrices are not always that friendly. This
# lesson writes the promise down as a contract, attacks it with inputs chosen to break it, shows what did break in
# the 3xTF32 steps and how each fault was fixed, and then measures every kernel against the contract on a GPU:
# cuBLAS SGEMM, the 3xTF32 steps, the TF32 steps for contrast, and `matmul` at each precision.
#
# The measurements come from one run of `experiments/fp32_accuracy.py`; the next cell says where it ran.

# %%
import inspect

import gemm_steps
from gemm_steps.course import lesson, lesson_13, lesson_24
from gemm_steps.course.lesson_13 import FIRST_TRY_RUN, TENSOR_CORES_RUN
from gemm_steps.course.timings import load_run
from gemm_steps.harness import fp32_contract
from gemm_steps.toolkit import tensor_core_ops

run = lesson_24.load()  # stops here, saying how to make the file, if the run is missing
print(lesson_24.where(run))
print(f"file: {run['path']} ({run['method']['seconds']:.0f} s)")

# %% [markdown]
# ## The contract
#
# For float32 A (M×K) and B (K×N) and any K ≥ 1 ([docs/fp32_contract.md](../docs/fp32_contract.md) has the full text
# and the reasons):
#
# 1. **Finite inputs** (every partial sum below 2^127): the error e(C) = ‖C − A·B‖_F / ‖|A|·|B|‖_F, with A·B and
#    |A|·|B| in float64, is at most the larger of **2 × e(C_seq)** and **9u** (u = 2^-24, float32's unit roundoff).
#    C_seq is the *sequential float32 FMA sum*, c = fma(a_ik, b_kj, c) for k = 0, 1, …, K−1 — what steps 1–10
#    compute (step 11's stream-K splits K at some shapes and adds the parts). cuBLAS SGEMM's results equal it bit
#    for bit at some of the course benchmark's squares, not at all of them (below the bound's code).
# 2. **inf and NaN** in the inputs give exactly the NaN / +inf / −inf pattern of that sum (and of cuBLAS SGEMM).
# 3. **Subnormals** are not flushed by the kernels' float32 arithmetic; the 3xTF32 steps read an input x to within
#    max(2^-23·|x|, 2^-147).
#
# Three choices in it. The error is measured against ‖|A|·|B|‖, the scale of every float32 dot product's rounding
# error whatever its order, not against ‖A·B‖, which cancellation can make arbitrarily small. The reference is an
# *order*, not cuBLAS: cuBLAS picks its order per shape, and a blocked order can be far more accurate than the
# sequential one at large K (docs/fp32_contract.md cites an H200 case; the run below gives this GPU's ratio). And
# the floor 9u: one 3xTF32 product is not correctly rounded — each operand reaches the tensor core to within 2^-23 of
# itself, the small·small term is dropped, and the result is rounded once more — so at K = 1, where SGEMM is exact
# to u, no 3xTF32 kernel can be within 2× of it. The measure and the bound, as the tests and the experiment compute
# them:

# %%
lesson.show_code(inspect.getsource(fp32_contract.normwise_error) + "\n\n"
                 + inspect.getsource(fp32_contract.contract_bound))
c = lesson_24.contract_numbers(run)
print(f"bound = max({c.factor:g} × e(C_seq), {c.one_product:.2e} = {c.one_product_in_u:g}u)")
seq = lesson_24.sgemm_against_sequential()
for size, q in seq.sizes.items():
    print(f"{size}³: cuBLAS SGEMM against steps 1–10, largest relative difference in {seq.files} benchmark files: "
          f"{q.sequential:.3g}; against step 11: {q.stream_k:.3g}")

# %% [markdown]
# ## Inputs chosen to break it
#
# A contract is only as good as the inputs it was tested on. The classes (`fp32_contract.input_classes`):
#
# | class | what it attacks |
# |:--|:--|
# | standard normal | nothing: the friendly case the benchmark measures |
# | uniform positive | no sign cancellation: rounding errors of one sign add up (a truncating sum shows here) |
# | per-element exponents | each element × 2^e, e from −40 to 40: sums dominated by a few products, K = 1-like |
# | scaled 2^a·A, 2^b·B | whole matrices across float32's range: the split's small parts leave TF32's normal range |
# | rows and columns of mixed magnitude | rows of A and columns of B scaled apart |
# | mixed magnitude along k | half of every dot product 2^20 larger than the other half |
# | cancellation | C = A·B − A'·B with A' close to A: C is a tiny remainder of its terms |
# | TF32-exact A | small parts exactly 0: a zero in every cross product |
# | large entries | elements near float32's largest, B scaled down to keep the products finite |
#
# and the specials (`fp32_contract.special_inputs`): inf, −inf and three kinds of NaN in A or B, inf against zero
# and against TF32-exact partners, +inf and −inf in one row, inf·inf, and a finite sum past float32's range. How far
# each finite class spreads, on one draw (16 × 16 × 256), and how much of the sum's size cancellation leaves:

# %%
lesson.say(lesson_24.class_ranges())

# %% [markdown]
# ## What broke, 1: inf became NaN
#
# The split computes small = x − big. For x = ±inf, big is ±inf too, and inf − inf is NaN: the NaN reaches every
# cross product, and so every result in x's row or column. And even with small forced to 0, inf times a TF32-exact
# partner's small part (0) is NaN. Split as the steps split, with b = 1 (TF32-exact, small part 0):

# %%
lesson.say(lesson_24.special_split())

# %% [markdown]
# **The fix: recompute where it happened.** Finite inputs under the contract's premise never leave an inf or NaN in
# a tile; a special input always does (through the split), and so does a sum past float32's range. So as each thread
# stores its results it notes whether any is non-finite; a block vote (`syncthreads_or`) after the store sends a tile
# with one to an SGEMM path that recomputes the tile by sequential float32 FMAs — exactly SGEMM's pattern, and
# values. A tile without specials pays one test per result and one vote. Step 13's version:

# %%
lesson.show_kernel(gemm_steps.get_step("three_tf32"), start="special = 0", stop="= total")

# %% [markdown]
# ## What broke, 2–4: the arithmetic of the finite inputs
#
# * **Small parts below TF32's normal range.** small is at most 2^-11·|x|; for |x| under about 2^-115 it falls
#   below 2^-126, where the tensor core keeps it only to a fixed absolute 2^-136, not to 11 bits. A whole matrix
#   scaled by 2^-120 lost most of what the split buys.
# * **Step 14's A truncated.** Step 14 let the tensor core read A's staged tile as big — truncated to TF32, not
#   rounded — so each a was read to 2^-21·|a| instead of 2^-23·|a|.
# * **All of K in the tensor core's accumulator.** The tensor core truncates the sums it accumulates (lesson 13), so
#   a long sum kept there drifts like K, not like √K. Step 13's first try did that (lesson 13 measured it); the
#   shipped steps start each k-step's (step 13) or k-tile's (step 14) big products from zero and add them to a
#   rounded float32 sum — step 14 keeps only its small products, about 2^-11 of the sum, in the tensor core over all
#   of K. The contract's tests must catch the fault if it ever comes back.
#
# The kernels before the fixes are gone, so here are NumPy models of step 14's arithmetic
# (`fp32_contract.three_tf32_model`, the tensor core's accumulator truncating as the hardware's does), each fault
# alone and the first version's two together, as error / bound on the class and K that expose it (above 1: the
# contract is broken); then what the tensor core reads of one x with A rounded or truncated (log2 of the worst
# relative error over standard-normal x), and the first try's measurement on a GPU:

# %%
rows = lesson_24.model_errors([("scaled 2^-120·A, 2^100·B", 1), ("per-element exponents", 32),
                               ("uniform positive", 16384)])
lesson.say(lesson_24.model_table(rows))
r = lesson_24.read_errors()
print(f"x read to 2^{r.rounded:.1f}·|x| with big rounded, 2^{r.truncated:.1f}·|x| with big truncated")
f = lesson_13.first_try(load_run(FIRST_TRY_RUN), load_run(TENSOR_CORES_RUN))
print(f"first 3xTF32 try (one accumulator over all of K), measured: error ∝ K^{f.slope:.2f}, {f.error:.1e} at "
      f"{f.shape} = {f.error / f.sgemm:.0f}× cuBLAS SGEMM's {f.sgemm:.1e}")

# %% [markdown]
# Truncating A alone keeps the contract in the model but multiplies the error at small K; unscaled small parts and a
# K-long sum in the tensor core break it outright. **The fixes**, both steps:
#
# * `split_tf32_scaled` hands the tensor core **small·2^11** — exact (a power of two) and never larger than |x|, so
#   it stays in TF32's normal range down to |x| = 2^-124. The small products are summed apart from big·big and
#   multiplied by 2^-11 once: in step 13 as each k-step joins the running sum (d + s·2^-11, one FMA), in step 14 at
#   the store.
# * **big rounded to nearest** for both operands: step 14 now splits A's tile in shared memory in place, big over
#   the stage and small·2^11 beside it.
# * the **running sum stays out of the tensor core**, as before: fresh products per k-step (step 13) or k-tile
#   (step 14), added with rounded float32 adds.
#
# The split, as its NumPy twin writes it (the kernel's intrinsic is the same four instructions):

# %%
lesson.show_code(inspect.getsource(tensor_core_ops.split_tf32_parts) + "\n\n"
                 + inspect.getsource(tensor_core_ops.split_tf32_scaled_parts))

# %% [markdown]
# ## Measured: every class, every kernel
#
# On the GPU, each finite class at every K of the run. A cell is the kernel's worst error / bound over K — ✓ where it
# kept the contract at every K, ✗ where it broke it at one (nan: the output had an inf or NaN where A·B is finite).
# The last row is the specials: ✓ where every special input gave cuBLAS SGEMM's inf/NaN pattern, ✗ and the number of
# inputs where not. `matmul`'s columns are whatever step it chose for the shape and K (listed after the table). The
# TF32 steps are there for contrast: they read their inputs to TF32's 2^-11 by design, and the contract does not
# cover them — nor `matmul(precision="tf32")`, which may pick them. Then the verdict per kernel: how many (class, K)
# pairs kept the contract, and the worst one.

# %%
lesson.say(lesson_24.accuracy_table(run))
for name, why in lesson_24.unavailable(run).items():
    print(f"not run: {name}: {why}")
for precision, chosen in lesson_24.chosen_steps(run).items():
    print(f"matmul {precision} chose: {', '.join(chosen)}")
for v in lesson_24.verdicts(run).values():
    print(f"{v['label']:36s} kept {v['kept']:3d} of {v['of']:3d}; worst {v['worst']:9.3g} × the bound "
          f"({v['worst_class']}, K = {v['worst_K']:,})")

# %% [markdown]
# ## Error against K
#
# The three classes that exposed the faults above. The grey region is outside the contract; its lower edge is the
# bound, 9u at small K and twice the sequential sum's error (dotted) once that grows. Under the figure: each
# kernel's error against the sequential sum's at the largest K (median over all the classes), and how far above the
# 3xTF32 steps the TF32 steps sit. A ratio below 1 is no miracle: the tensor-core steps add a block of products (8
# per k-step in step 13, 32 per k-tile in step 14) before each rounded float32 add — fewer roundings of a large sum
# (lesson 13) — and cuBLAS picks a blocked order of its own at some shapes.

# %%
lesson.show_figure(lesson_24.error_figure(run, ["uniform positive", "scaled 2^-120·A, 2^100·B",
                                                "per-element exponents"]))
for name, ratio in lesson_24.against_reference(run).items():
    print(f"{name:36s} error / sequential sum's at K = {max(run['ks']):,}: {ratio:.2f}")
spread = lesson_24.tf32_over_3xtf32(run)
if spread:
    print(f"TF32 steps' error / 3xTF32 steps' error, same inputs: {spread[0]:.0f}× … {spread[1]:.0f}×")

# %% [markdown]
# ## Specials, input by input
#
# ✓: C's NaN / +inf / −inf pattern is SGEMM's; ✗ n: it is not, with n elements off the sequential sum's pattern.
# One input separates the kernels that hand the tensor core a float as it is from those that split it first: a NaN
# whose payload sits only in the 13 low bits TF32 drops (0x7F800001). Read as TF32 it *is* inf, so a TF32 kernel
# returns ±inf where SGEMM returns NaN; the 3xTF32 split turns it into big = inf, small = NaN, and the tile goes to
# the SGEMM path.

# %%
lesson.say(lesson_24.specials_table(run))

# %% [markdown]
# ## What the fixes cost
#
# The scaling of the small parts (a `mul` per split element, an FMA per result), the in-place split of A (an add and
# a shared store per element, in step 14), the second mma chain (step 13) and the specials' test and vote are not
# free. The same-run A/B of the steps before and after the fixes, two passes each, same inputs:

# %%
costs = lesson_24.fix_costs()
print(f"{costs.gpu}, experiments/results/{costs.file}")
lesson.say(lesson_24.cost_table(costs))
x = lesson_24.largest_cost(costs)
print(f"largest cost: {x.largest:.0%} ({x.largest_step}, {'×'.join(map(str, x.largest_size))}); "
      f"smallest: {x.smallest:.0%} ({x.smallest_step}, {'×'.join(map(str, x.smallest_size))})")

# %% [markdown]
# The model written before that run is in docs/fp32_contract.md ("What to expect in speed"); the table is what the
# run measured, and the line above it the extremes. The speed the steps keep is in lessons 13–14 and the course
# benchmark.
#
# ## What is left
#
# * Inputs below 2^-124 (subnormals included): even small·2^11 leaves TF32's normal range, and x is read to an
#   absolute 2^-147 rather than relatively
#   ([deep dive: where the split breaks](deep_dives/13_where_the_split_breaks.ipynb)). Power-of-two pre-scaling per
#   matrix would extend the relative bound, at the cost of a pass over A and B.
# * A tile with a special value is recomputed one result per thread, K FMAs each from global memory: correct, not
#   fast.
# * The contract's tests run on every commit on the simulator (`tests/test_fp32_contract.py`, whose tensor-core twins
#   round where the hardware truncates; NumPy models cover the truncation up to K = 20,000) and on a GPU with
#   `-m gpu`. This lesson's run is re-made with `python -m experiments.fp32_accuracy` on a GPU; a new 3xTF32 step
#   joins it by declaring `ARITHMETIC = "3xtf32"`.
#
# Back to [lesson 13](13_three_tf32.ipynb) (the split) and [lesson 14](14_warpgroup_mma.ipynb) (`wgmma`).
#
# Next: [Lesson 25: where next](25_where_next.ipynb).
