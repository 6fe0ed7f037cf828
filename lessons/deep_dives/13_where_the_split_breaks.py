# %% [markdown]
# # Deep dive (lesson 13_three_tf32): where the split breaks
#
# 3xTF32 recovers float32's accuracy by splitting x into `big = tf32(x)` and `small = x − big`. That works while
# `small` is a normal float32. `small` is at most about 2^-11 of x, so near the bottom of float32's range it falls
# under the smallest normal number, 2^-126: it then keeps fewer bits (a *subnormal*), or none if the hardware
# flushes it to zero, and x keeps only TF32's 11 bits.

# %%
import math

from gemm_steps.course import lesson, lesson_13

# %% [markdown]
# Per row, for x = 1.2345·2^e: the error of big + small as the tensor core reads them (small truncated to TF32's 10
# mantissa bits; for a subnormal small, the top 10 bits of its mantissa field — our model, not measured on the GPU),
# and the error if small is flushed to zero (big alone: the same in every row, since small scales with x while it is
# normal):

# %%
lesson.say(lesson_13.subnormal_table())

# %% [markdown]
# Where does that start, for other mantissas? While `small` is normal it scales with x, so x = m·2^e has a subnormal
# `small` when |small(m)|·2^e < 2^-126. Over random mantissas (the 10th to 90th percentile of the threshold, as
# log2 of |x|):

# %%
low, high = lesson_13.subnormal_threshold()
print(f"small turns subnormal below |x| = 2^{low:.0f} … 2^{high:.0f} (80 % of mantissas); from there the error grows "
      f"towards the flushed-to-zero column at 2^-126 (2^{math.log2(2.0 ** -126):.0f})")

# %% [markdown]
# So for inputs whose magnitude reaches below that threshold, 3xTF32 is not float32: use the FP32 units, or scale the
# inputs first. Back to [lesson 13](../13_three_tf32.ipynb).
