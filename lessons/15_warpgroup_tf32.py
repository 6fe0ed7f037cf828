# %% [markdown]
# # Lesson 15 — TF32 on Hopper's `wgmma`
#
# Step 12 multiplies in TF32 with `mma.sync` and stops near the course's TF32 target, latency-bound at 8 warps per
# SM. Step 14 built a faster engine for 3xTF32: `wgmma`, A in the 128-byte swizzle layout, Cᵀ = Bᵀ·Aᵀ. Step 15
# runs plain TF32 on that engine: **one product per k-step instead of three**.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_12, lesson_14, lesson_15

warpgroup_mma = gemm_steps.get_step("warpgroup_mma")
warpgroup_tf32 = gemm_steps.get_step("warpgroup_tf32")
swizzled = lesson_12.load_run(lesson_14.SWIZZLED_RUN)
swapped = lesson_12.load_run(lesson_14.SWAPPED_RUNS[0])
results = lesson.measure_or_load(["tensor_cores"], [512, 1024, 2048, 4096, 8192], optional=["warpgroup_tf32"])
shown, note = lesson_15.shown_timings(results, lesson_12.load_run(lesson_15.STEP_RUN))
print(warpgroup_tf32.doc.splitlines()[0])

# %% [markdown]
# ## What changes from step 14
#
# Everything that moves data stays: A's k-tiles copied into the swizzled layout two k-tiles ahead, B's rows as they
# are, Bᵀ's fragments loaded from shared memory into registers after the previous `wgmma` retired (lesson 14's
# second hazard). What goes is the arithmetic of 3xTF32: no small parts, no second shared buffer, and **no flush**.
# Step 14 flushed its big·big products into rounded float32 adds every k-tile because the tensor core *truncates*
# the sums it accumulates, and 3xTF32 promises float32's accuracy. TF32 promises much less:

# %%
lesson.say(lesson_15.error_budget(swapped))

# %% [markdown]
# One accumulator instead of three frees registers, and they buy a taller tile (wgmma's N, the rows of A, goes from
# 128 to 256):

# %%
lesson.say(lesson_15.registers_text(warpgroup_mma, warpgroup_tf32))

# %% [markdown]
# ## The prediction
#
# Lesson 14's swizzle experiment already ran this kernel, full tiles only, in the same run as step 12:

# %%
lesson.say(lesson_15.prediction(shown, swizzled))

# %% [markdown]
# ## The kernel
#
# One k-tile of the loop: wait for the previous k-tile's `wgmma`, load and round Bᵀ's fragments (`to_tf32`), then
# one `wgmma` per k-step of 8, accumulating into `acc` with `accumulate` = 1 — never started afresh. A is not
# rounded: the tensor core truncates it as it reads. The whole kernel: `warpgroup_tf32.source()`, or
# `gemm-steps diff 14 15`.

# %%
lesson.show_kernel(warpgroup_tf32, start="if t >= LOAD_AHEAD:", stop="warpgroup_commit()")

# %% [markdown]
# ## Is it right?
#
# On the simulator, with one warpgroup on smaller tiles, a full-tile shape and a ragged one (the edge kernel),
# against NumPy with verify's TF32 tolerance:

# %%
lesson.check_against_numpy(warpgroup_tf32, [(64, 64, 64), (45, 70, 20)])

# %% [markdown]
# ## How fast, and how accurate

# %%
if note:
    lesson.say(note)
if shown:
    lesson.say(lesson_15.speed_table(shown))
    lesson.show_figure(lesson_15.speed_figure(shown))

# %% [markdown]
# ## The verdict

# %%
if shown:
    lesson.say(lesson_15.verdict(shown, swizzled))
    lesson.say(lesson_15.accuracy_text(shown))

# %% [markdown]
# ## What is left

# %%
if shown:
    lesson.say(lesson_15.what_is_left(shown))

# %% [markdown]
# Step 15 runs only on compute capability 9.0 (H100, H200) and on the simulator, and `matmul` never picks it: its
# accuracy is TF32's. See [docs/tensor_cores.md](../docs/tensor_cores.md).
#
# Next: [Lesson 16: where next](16_where_next.ipynb).
