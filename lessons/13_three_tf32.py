# %% [markdown]
# # Lesson 13 — 3xTF32: float32's accuracy from three tensor-core products
#
# Lesson 12's TF32 step is faster than cuBLAS SGEMM but keeps only about 3 decimal digits. This step wins the
# digits back: split each float32 into two TF32 numbers, multiply the parts on the tensor cores, and add up the
# products that matter. Three TF32 products for one float32 product: at 8× the FP32 units' rate that can still beat
# SGEMM. We look at the split, at why three products are enough, at an accumulation trap the first version fell
# into, and then at the accuracy and the speed.

# %%
import math

import gemm_steps
from gemm_steps.course import lesson, lesson_12, lesson_13
from gemm_steps.course.targets import (TARGET_3XTF32_ERROR_VS_SGEMM, TARGET_3XTF32_VS_SGEMM,
                                       TARGET_3XTF32_WIDE_ERROR_VS_SGEMM)
from gemm_steps.course.lesson_13 import FIRST_TRY_RUN, TENSOR_CORES_RUN
from gemm_steps.course.lesson_24 import CONTRACT_AB_RUN, contract_cost
from gemm_steps.course.timings import load_run

three_tf32 = gemm_steps.get_step("three_tf32")
experiment, first_try = load_run(TENSOR_CORES_RUN), load_run(FIRST_TRY_RUN)
results = lesson.measure_or_load(["stream_k", "tensor_cores", "three_tf32"], [512, 1024, 2048, 4096, 8192])
print(three_tf32.doc.splitlines()[0])

# %% [markdown]
# ## The idea: big + small
#
# `big = tf32(x)` keeps x's top 11 significant bits; `small = x − big` is what is left, computed exactly in float32,
# and it too fits TF32 nearly whole (the tensor core reads its top 11 bits and drops the rest, lesson 12). So
# x ≈ big + small to about twice TF32's bits. Step 13 splits with `split_tf32_scaled`: big rounded to the nearest
# TF32, and small handed to the tensor core as small·2^11 — exact, a power of two, so the same bits — which keeps it
# in TF32's normal range for all but the tiniest x; the sum of the small products is multiplied by 2^-11 once. Three
# floats split that way (small shown unscaled), what the tensor core reads of them, and the most of x that
# big + small (as read) leaves out over 200,000 standard-normal floats:

# %%
lesson.say(lesson_13.split_table())
worst = lesson_13.split_worst()
print(f"largest |x − (big + small as read)| / |x|: 2^{math.log2(worst):.1f}: x to about {-math.log2(worst):.0f} bits, "
      "against TF32's 11 and float32's 24")

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
# One product is TF32's error; three bring it down by more than three orders of magnitude, to within a small factor
# of float32's; the fourth buys little. **The prediction**: three tensor-core products where step 12 does one, so —
# if step 12's time is all product work — three times step 12's time: a third of its speed, measured in lesson 12.

# %%
if results:
    p = lesson_13.predicted(results)
    print(f"step 12 at {lesson.size_label(p.size)}: {p.step12:.1f} TFLOPS -> a third: {p.tflops:.1f} TFLOPS = "
          f"{p.vs_sgemm:.2f}× cuBLAS SGEMM ({p.sgemm:.1f}); our target: ≥ {TARGET_3XTF32_VS_SGEMM}×")

# %% [markdown]
# ## The kernel
#
# Step 12's kernel, with each fragment element split instead of rounded, and three `mma_tf32` per mma tile in two
# chains: the two small products (held ×2^11) summed by one, the big product by the other, the two joined to the
# running sum as d + s·2^-11:

# %%
lesson.show_kernel(three_tf32, start="for kk in unroll(0, BLOCK_K, 8)", stop="acc[i][j][3] += d3")

# %% [markdown]
# Note the accumulators: each k-step's chains start from **zero** inside the tensor core (`s0…s3`, `d0…d3`), and
# are then added to the running sum `acc` by ordinary FP32 arithmetic (an FMA and an add). Why not pass `acc`
# straight in as C, as step 12 does? That is what the first version did.
#
# ## The trap: the tensor core's accumulation is biased
#
# The first version kept its running sum in the mma accumulator over the whole K. Measured on the H100 (right), its
# error grew in proportion to K — while a sum that rounds to nearest makes errors of random sign, which grow like √K.
# Growth like K is the mark of a *biased* rounding. Our model of it (left): a float32 running sum that **truncates**
# each add towards zero instead of rounding. The model is a simplification — the tensor core adds several products
# and C in one fused step, with its own alignment and rounding of the terms — but it has the measured slope, and
# it is the behaviour published measurements report for earlier tensor cores (Fasi et al., 2021: V100, T4, A100).

# %%
model = lesson_13.accumulation_model()
if first_try and experiment:
    lesson.show_figure(lesson_13.accumulation_figure(model, first_try, experiment))
    f = lesson_13.first_try(first_try, experiment)
    print(f"first try: error ∝ K^{f.slope:.2f}; at {f.shape} {f.error:.1e} = {f.error / f.sgemm:.0f}× "
          f"cuBLAS SGEMM's {f.sgemm:.1e} (same run), at {f.pct:.0f} % of SGEMM's speed; "
          f"step 13 at the same shape: {f.step13:.1e}")

# %% [markdown]
# For TF32 (lesson 12) the bias does not matter — its input error is far larger — but 3xTF32 needs float32's
# accuracy, so step 13 pays 4 FP32 FMAs and 4 adds per mma tile per k-step to keep the long sum in round-to-nearest
# arithmetic.
#
# ## Is it right?
#
# On the simulator (small tiles, as in lesson 12), against NumPy with the float32 tolerance this time. (The
# simulator's mma twin adds in float64 and rounds: it checks the layout and the split, not the hardware's bias. That
# is measured on the GPU, next.)

# %%
lesson.check_against_numpy(three_tf32, [(128, 64, 48), (70, 45, 20)])

# %% [markdown]
# ## How accurate, measured
#
# Our accuracy rule for 3xTF32, the same in lessons 13 and 14: on every measured shape, an error at most
# `TARGET_3XTF32_ERROR_VS_SGEMM` × cuBLAS SGEMM's on standard-normal inputs, and at most
# `TARGET_3XTF32_WIDE_ERROR_VS_SGEMM` × on "wide exponent" inputs (each entry also scaled by 2^u, u a random integer
# in −20…20, so that products span 80 binary orders of magnitude). The measurements: a 512×512×K sweep on the H100
# (of the step's first version: one mma chain for all three products, small parts unscaled),
# and the course benchmark's two largest squares. The promise the step keeps now is the **FP32 contract**
# ([docs/fp32_contract.md](../docs/fp32_contract.md)): its error against the sequential float32 sum's, for finite
# inputs, inf/NaN and subnormals, and the tests that check it on the simulator and on a GPU. The relative error of
# the whole 512×512×K product against float64:

# %%
if experiment:
    lesson.say(lesson_13.accuracy_table(experiment))
if results and experiment:
    a = lesson_13.accuracy(experiment, results)
    print(f"rule: ≤ {TARGET_3XTF32_ERROR_VS_SGEMM}× SGEMM (standard normal), ≤ {TARGET_3XTF32_WIDE_ERROR_VS_SGEMM}× "
          f"(wide exponent): {'met' if a['met'] else 'not met'}; worst: "
          + ", ".join(f"{kind} {w:.1f}×" for kind, w in a["worst"].items())
          + "".join(f"\n  misses: {kind}, {shape}: {r:.2f}×" for kind, shape, r in a["misses"]))

# %% [markdown]
# Where step 13 misses, it is within a small factor of SGEMM's error and two to three orders of magnitude below
# TF32's. Why worse at large K? Each product keeps a fixed relative error — the dropped small·small and the bits of
# `small` the tensor core truncates — however the sum goes, and with wide exponents a few large products dominate
# each sum and SGEMM's own rounding error shrinks (our reading of the table, not a measurement of the mechanism).
#
# And why is step 13 *below* SGEMM at the benchmark's large squares? Not because 3xTF32 is more accurate than
# float32 arithmetic. cuBLAS SGEMM and every FP32 step of the course make the *same* error there, to every digit:
# each adds its products one fused multiply-add at a time, in k order, into one float32 sum. The tensor-core steps
# add a block of products first — 8 per k-step in step 13, inside the mma — and only then round into the long sum.
# Fewer roundings of a large sum, a smaller error: a split-K FP32 kernel would gain the same. The benchmark's errors,
# and a NumPy model of one float32 sum adding blocks of b exact products at a time (b = 1 is SGEMM's order):

# %%
if results:
    for s, errors in lesson_13.fp32_errors(results).items():
        print(f"{lesson.size_label(s)}: {len(errors)} FP32 kernels, {len(set(errors.values()))} distinct error(s): "
              f"{sorted(set(errors.values()))[0]:.3e}; step 13: "
              f"{lesson.record(results, 'three_tf32', s)['sampled_rel_error_fp64']:.3e}")
print("model, 48×48×4096:", ", ".join(f"b = {b}: {e:.1e}" for b, e in lesson_13.blocked_sums().items()))

# %% [markdown]
# ## How fast
#
# TFLOPS, and in brackets % of cuBLAS SGEMM in the same run:

# %%
if results:
    lesson.say(lesson_12.speed_table(results))
    sp = lesson_13.speed(results)
    for s, r in sp.sizes.items():
        print(f"{lesson.size_label(s)}: {r.tflops:.1f} TFLOPS = {r.vs_sgemm:.2f}× cuBLAS SGEMM, "
              f"{r.of_step12:.2f} of step 12's speed")
    print(f"measured / predicted: {sp.over_prediction:.2f}; our target of {TARGET_3XTF32_VS_SGEMM}× SGEMM: "
          f"{'met' if sp.met else 'not met'}")
cost = contract_cost(load_run(CONTRACT_AB_RUN), "three_tf32")
for s, c in cost.items():
    print(f"before → after the FP32-contract fixes, {lesson.size_label(s)}: {c['old']:.1f} → {c['new']:.1f} TFLOPS, "
          f"{sum(c['cost']) / 2:.0%} slower (passes: {c['cost'][0]:.1%} to {c['cost'][1]:.1%})")

# %% [markdown]
# Three products per piece cost less than a factor of 3 against step 12: lesson 12's profile (on the H100) found
# step 12's tensor pipe idle more than half the time, latency-bound at 8 warps per SM, so the extra HMMAs partly fill
# idle cycles — the prediction's assumption (step 12's time is all product work) failed. Step 13 has step 12's
# limits plus the splits and the FP32 arithmetic. Keeping the FP32 contract added more: the scaling of the small
# parts, the second mma chain and its FMA, and the inf/NaN check per result. The last lines: the step before and
# after those fixes, on the same GPU and inputs, two passes each.
#
# ## When to use which

# %%
if results and experiment:
    lesson.say(lesson_13.when_to_use(results, experiment))

# %% [markdown]
# * **FP32 units**: you need float32's own rounding, or inputs below 2^-124 (subnormals included), where even the
#   scaled small part leaves TF32's normal range and x is read less exactly
#   ([deep dive: where the split breaks](deep_dives/13_where_the_split_breaks.ipynb)).
# * **3xTF32**: float32-level accuracy at about the FP32 units' speed with `mma.sync` (the table), and well above it
#   with Hopper's `wgmma` (step 14, next) (CUTLASS ships a 3xTF32 GEMM, `OpMultiplyAddFastF32`; Triton's
#   `tl.dot(input_precision="tf32x3")`; neither timed here).
# * **TF32**: three decimal digits are enough — neural-network training and inference, which PyTorch runs in TF32
#   when allowed.
#
# Try it: [`exercises/three_tf32.py`](../exercises/three_tf32.py) — the split and the three products on one warp
# (`gemm-steps exercise check three_tf32` measures your error against the FP32 contract).
#
# Next: [Lesson 14: warpgroup MMA](14_warpgroup_mma.ipynb) — the same three products on Hopper's `wgmma`, one
# instruction for four warps.
