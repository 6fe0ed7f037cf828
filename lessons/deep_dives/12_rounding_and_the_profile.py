# %% [markdown]
# # Deep dive (lesson 12_tensor_cores): the TF32 rounding, and what Nsight Compute says
#
# Step 12 rounds every fragment element with `cvt.rna.tf32.f32` before the mma; step 13 split each into a big and
# a small TF32 part with `split_tf32` when these measurements were made (it now uses `split_tf32_scaled`: the same
# split, with small multiplied by 2^11 — one more instruction — to keep it in TF32's normal range; lesson 13). Both
# cost instructions in the inner loop, where lesson 12 found the issue budget already spent. This notebook shows the
# variants that were timed, and both kernels' profiles (of the kernels of that day).

# %%
from gemm_steps.course import lesson, lesson_12
from gemm_steps.course.lesson_12 import PROFILED_RUN, ROUNDING_RUN, limits, tensor_core_profiles
from gemm_steps.course.timings import load_run

run = load_run(ROUNDING_RUN)

# %% [markdown]
# ## The rounding variants
#
# `cvt.rna.tf32.f32` alone is three SASS instructions on an H100: a test for inf/NaN, an add of half a TF32 unit to
# the bits, and an AND that clears the 13 low bits. The tensor core ignores those 13 bits anyway (one warp's mma
# gave bit-identical results with and without them: the run's count is printed below the table), and ptxas knows
# it: before an mma it drops the AND. Every variant below is the kernel of the day with only the rounding changed
# (`experiments/tf32_conversion.py`, one run; SASS counts of the whole fast kernel). It was measured before step 12's
# copy addresses moved out of the k-loop and A's fragments moved to `ldmatrix`, so its TFLOPS are below the course
# benchmark's (lesson 12): compare the variants with each other:

# %%
if run:
    lesson.say(lesson_12.rounding_table(run))
    low = run.get("low_bits", {})
    lesson.say(f"Does the tensor core read the low 13 bits? {low.get('mma_raw_equals_cleared_low_bits', '—')}.")
    for size, (split_by_cvt, split_tf32, slower) in lesson_12.rounding_gap(run).items():
        print(f"{size}³: step 13 split by two cvt.rna {split_by_cvt:.1f} TFLOPS, by split_tf32 {split_tf32:.1f}: "
              f"{slower:.0%} slower, at the same accuracy")

# %% [markdown]
# * Step 12: the NaN-safe rewrites (an inline-PTX `testp` + add, two comparisons, an exponent test) each became
#   three instructions and ran slower than `cvt.rna`. Only unsafe ones were faster: add-and-clear without the test
#   (the GPU's own NaN, 0x7FFFFFFF, carries into the sign and becomes −0) and passing the raw bits (truncation:
#   a larger error, in the table's last column). Step 12 keeps `cvt.rna`.
# * Step 13: `big` must be an exact TF32 value (`small = x − big` is computed from it), so the split by two
#   `cvt.rna` kept all their instructions. `split_tf32` adds half a unit and clears the bits for `big` (no NaN test:
#   a NaN lost in `big` survives in `small`, and reaches C through the small·big product), subtracts, and leaves
#   `small` for the tensor core to truncate. Rounding `small` as well bought no accuracy. (Today's
#   `split_tf32_scaled` is this split plus one `mul.f32`, small·2^11, for the FP32 contract's range:
#   [docs/fp32_contract.md](../../docs/fp32_contract.md).)
#
# ## Both profiles

# %%
results = lesson.load_results()
profiles = tensor_core_profiles()
if profiles and results:
    lesson.say(lesson_12.profile_table(profiles))
    for step in ("tensor_cores", "three_tf32"):
        f, rate = limits(profiles[step]), lesson_12.pipe_rate(profiles, load_run(PROFILED_RUN), step)
        print(f"{step}: {f.clocks_per_hmma:.1f} tensor-pipe clocks per HMMA; {rate.tflops_4096:.1f} useful "
              f"TFLOPS at 4096³ × {rate.products} HMMA per product / {rate.busy:.0f} % busy = "
              f"{rate.full_pipe:.0f} TFLOPS with the pipe full, against the mma.sync ceiling of {rate.ceiling:.0f}")

# %% [markdown]
# Both profiles give the same clocks per HMMA: the pipe's rate is a property of `mma.sync`, not of the kernel. The
# cross-check must count what the pipe does: step 13 issues three HMMAs per useful product (small·big, big·small,
# big·big), so its useful TFLOPS over its busy share are a third of the pipe's rate; counted per HMMA, both steps
# land a little under the `mma.sync` ceiling. The cheaper split cut step 13's instructions per HMMA and raised its
# tensor pipe's activity, but both kernels are limited the same way: 8 warps per SM, and most cycles without a warp
# ready to issue.
#
# Back to [lesson 12](../12_tensor_cores.ipynb).
