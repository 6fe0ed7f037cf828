# %% [markdown]
# # Lesson 13 — 3xTF32: float32's accuracy from three tensor-core products
#
# Lesson 12's TF32 step is faster than cuBLAS SGEMM but keeps only about 3 decimal digits. This step wins the
# digits back: split each float32 into two TF32 numbers, multiply the parts on the tensor cores, and add up the
# products that matter. Three TF32 products for one float32 product: at 8× the FP32 units' rate that can still beat
# SGEMM. We look at the split, at why three products are enough, at an accumulation trap the first version fell
# into, and then at the accuracy and the speed.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_12, lesson_13

three_tf32 = gemm_steps.get_step("three_tf32")
experiment = lesson_12.load_run(lesson_12.TENSOR_CORES_RUN)
first_try = lesson_12.load_run(lesson_12.FIRST_TRY_RUN)
results = lesson.measure_or_load(["stream_k", "tensor_cores", "three_tf32"], [512, 1024, 2048, 4096, 8192])
print(three_tf32.doc.splitlines()[0])

# %% [markdown]
# ## The idea: big + small
#
# `big = tf32(x)` keeps x's top 11 significant bits; `small = x − big` is what is left, computed exactly in float32,
# and it too fits TF32 nearly whole (the tensor core reads its top 11 bits and truncates the rest, lesson 12). So
# x ≈ big + small to about twice TF32's bits. Three floats split as step 13 splits them (`split_tf32`), and what
# the tensor core reads of them:

# %%
lesson.say(lesson_13.split_table())

# %% [markdown]
# ## Why three products are enough
#
# a·b = big_a·big_b + big_a·small_b + small_a·big_b + small_a·small_b. How large is each term next to a·b? Measured
# on standard-normal numbers, beside float32's own rounding of one result (its unit roundoff, half an ulp: 2^-24):

# %%
lesson.say(lesson_13.term_sizes())

# %% [markdown]
# The last term is about float32's rounding error, so dropping it costs about as much as float32 arithmetic itself
# does. A model in NumPy: C = A·B from 1, 3 or 4 of the products (small parts truncated to TF32 as the tensor core
# reads them; sums in float64, so only the products' error shows):

# %%
lesson.say(lesson_13.product_errors())

# %% [markdown]
# One product is TF32 (≈ 3e-4); three bring the error down by more than three orders of magnitude, to within a
# small factor of float32's; the fourth buys little. Three products where step 12 does one, and lesson 12 measured
# step 12:

# %%
if results:
    lesson.say(lesson_13.prediction(results))

# %% [markdown]
# ## The kernel
#
# Step 12's kernel, with each fragment element split instead of rounded, and three `mma_tf32` per mma tile:

# %%
lesson.show_kernel(three_tf32, start="for kk in unroll(0, BLOCK_K, 8)", stop="acc[i][j][3] += d3")

# %% [markdown]
# Note the accumulators: each k-step's three products start from **zero** inside the tensor core (`d0…d3`), and
# are then added to the running sum `acc` by ordinary FP32 adds. Why not pass `acc` straight in as C, as step 12
# does? That is what the first version did.
#
# ## The trap: the tensor core truncates when it accumulates
#
# When the mma adds its products to C, it does not round the result to nearest: it **truncates** (Fasi et al.,
# "Numerical behavior of NVIDIA tensor cores", 2021). Truncation always errs towards zero — a *biased* error —
# so over a long running sum the errors add up instead of cancelling. A NumPy model of one running sum in float32,
# rounding to nearest against truncating (left), and the two kernels as measured on an H100 (right; the first
# version kept its running sum in the mma accumulator over the whole K):

# %%
model = lesson_13.accumulation_model()
if first_try and experiment:
    lesson.show_figure(lesson_13.accumulation_figure(model, first_try, experiment))
    lesson.say(lesson_13.first_try_text(first_try, experiment))

# %% [markdown]
# Rounding to nearest makes errors of random sign, which grow like √K; truncation's grow like K. For TF32 (lesson
# 12) this does not matter — its input error is far larger — but 3xTF32 needs float32's accuracy, so step 13 pays
# 4 FP32 adds per mma tile per k-step to keep the long sum in round-to-nearest arithmetic.
#
# ## Is it right?
#
# On the simulator (small tiles, as in lesson 12), against NumPy with the float32 tolerance this time:

# %%
lesson.check_against_numpy(three_tf32, [(128, 64, 48), (70, 45, 20)])

# %% [markdown]
# (The simulator's mma twin adds in float64 and rounds: it checks the layout and the split, not the hardware's
# truncation. That is measured on the GPU, next.)
#
# ## How accurate, measured
#
# A sweep of K on the H100, with two kinds of inputs: standard normal, and "wide exponent" — each entry also
# scaled by 2^u, u a random integer in −20…20, so that products span 80 binary orders of magnitude:

# %%
if experiment:
    lesson.say(lesson_13.accuracy_table(experiment))

# %%
if results and experiment:
    lesson.say(lesson_13.accuracy_verdict(experiment, results))

# %% [markdown]
# Where can 3xTF32 lose to float32? Each product keeps a fixed relative error — the dropped small·small and the bits
# of `small` the tensor core truncates — however the sum goes; with wide exponents a few large products dominate
# each sum, SGEMM's own rounding error shrinks, and the ratio grows (our reading of the table, not a measurement of
# the mechanism). And at the bottom of float32's range the split breaks: `small` is at most about 2^-11 of x, so
# a little below |x| ≈ 2^-115 it falls under the smallest normal float (2^-126). It then has fewer bits, or none if
# it is flushed to zero, and x keeps only TF32's 11 bits. Per row, the error the split leaves (NumPy):

# %%
lesson.say(lesson_13.subnormal_table())

# %% [markdown]
# ## How fast

# %%
if results:
    lesson.say(lesson_12.speed_table(results))
    lesson.say(lesson_13.speed_verdict(results))

# %% [markdown]
# Step 13 has step 12's limits (lesson 12's profile: 8 warps per SM, most cycles without a warp
# ready) plus the splits and the FP32 adds. The ideas being tried: flush the per-k-step sums once per k-tile
# instead (a quarter of the adds, more registers), and lesson 12's list.
#
# ## When to use which

# %%
if results and experiment:
    lesson.say(lesson_13.when_to_use(results, experiment))

# %%
if results:
    lesson.say(lesson_13.summary(results))

# %% [markdown]
# Next: [Lesson 14: warpgroup MMA](14_warpgroup_mma.ipynb) — the same three products on Hopper's `wgmma`, one instruction for four warps.
