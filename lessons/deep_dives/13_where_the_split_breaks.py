# %% [markdown]
# # Deep dive (lesson 13_three_tf32): where the split breaks
#
# 3xTF32 recovers float32's accuracy by splitting x into `big = tf32(x)` and `small = x − big`. That works while the
# tensor core reads `small` to TF32's 11 bits, that is while what it is handed is a normal float32. `small` is at
# most about 2^-11 of x, so near the bottom of float32's range it falls under the smallest normal number, 2^-126: it
# then keeps fewer bits (a *subnormal*), or none if the hardware flushes it to zero, and x keeps only TF32's 11 bits.
#
# The step's first version handed the tensor core `small` itself (`split_tf32`), and lost accuracy below about
# 2^-115. Step 13 and step 14 now split with `split_tf32_scaled`: they hand it small·2^11 — exact, a power of two,
# never larger than |x| — and multiply the sum of the small products by 2^-11 once. That moves the threshold down by
# 11 binary orders of magnitude, to the bottom of float32's normal range.

# %%
import math

from gemm_steps.course import lesson, lesson_13

# %% [markdown]
# Per row, for x = 1.2345·2^e: the small part step 13 hands the tensor core, and the error of big + small as the
# tensor core reads them (small truncated to TF32's 10 mantissa bits; for a subnormal, the top 10 bits of its
# mantissa field — our model), with the scaled split and with the first version's unscaled one, beside the error of
# big alone (what is left if small is flushed to zero):

# %%
lesson.say(lesson_13.subnormal_table())

# %% [markdown]
# Where does that start, for other mantissas? While the handed part is normal it scales with x, so x = m·2^e hands
# a subnormal one when |handed(m)|·2^e < 2^-126. Over random mantissas (the 10th to 90th percentile of the
# threshold, as log2 of |x|):

# %%
for name, scaled in (("scaled split (steps 13–14)", True), ("unscaled split (first version)", False)):
    low, high = lesson_13.subnormal_threshold(scaled)
    print(f"{name}: the small part turns subnormal below |x| = 2^{low:.0f} … 2^{high:.0f} (80 % of mantissas)")
print(f"float32's smallest normal number: 2^{math.log2(2.0 ** -126):.0f}")

# %% [markdown]
# Subnormal is not yet lossy: the tensor core keeps a subnormal's top 10 mantissa bits, multiples of 2^-136, and
# small·2^11 is a multiple of 2^(e−12) for x in [2^e, 2^(e+1)). So down to |x| = 2^-124 the scaled split still reads
# x to within 2^-23 of itself (tests/test_lesson_13.py checks it over random mantissas); below that, and for
# subnormal inputs, x is read to an absolute error instead of a relative one. The FP32 contract's item 3
# ([docs/fp32_contract.md](../../docs/fp32_contract.md)) states what the steps promise there, and names the GPU test
# that checks how the tensor core reads subnormal operands. For inputs that far down, use the FP32 units, or scale
# the inputs first. Back to [lesson 13](../13_three_tf32.ipynb).
