# %% [markdown]
# # Deep dive 25 — small products: where the time goes besides the k-loop
#
# Lesson 25 (`25_where_next`) ends on the held-out set, whose hardest target was always the same: the default
# `matmul` at 0.8× cuBLAS SGEMM or better on every product below 2³⁰ multiply-adds. Those products take 15–55 µs,
# and a good part of that is not arithmetic. Experiments on an H200 took them apart, each with its prediction
# committed before its run (`predictions/small-product-floor-before-run.md`, `copy-early-start-…`, `split-pays-…`):
# first the floor with nothing in the way, then the two things that stand in the way — a copy before the kernel and
# a reduction after it.

# %%
from gemm_steps.course import lesson, lesson_25
from gemm_steps.course.timings import caption, load_run

floor, copies, splits = (load_run(name) for name in (lesson_25.FLOOR_RUN, lesson_25.COPY_RUN, lesson_25.SPLIT_RUN))

# %% [markdown]
# ## 1. The floor: whole tiles, nothing copied
#
# At 3968 × 384 × K every tile of 128 × 128 is whole and the 93 of them fit one wave of 132 SMs, so each block runs
# one tile's k-loop once. Timed at K = 32–256, each kernel's time is close to a line in K: its slope is the k-loop,
# its intercept what the product costs besides — the launch, the barriers' set-up, the first copies' trip from
# memory, the epilogue's stores.

# %%
if floor:
    lesson.say(lesson_25.floor_table(floor))
    lesson.show_figure(lesson_25.floor_figure(floor))
    print(caption(floor))

# %% [markdown]
# Step 18 pays about 2.5 µs more than cuBLAS SGEMM besides its k-loop, and its k-loop is twice as fast: level at
# K = 64, ahead from K = 128 on. With whole tiles and nothing copied, a small product is not where the default
# precision loses.
#
# ## 2. A copy is a kernel boundary
#
# Where K (or N) is not a multiple of 4, A's (or B's) rows are not 16-byte multiples apart and the copy engine cannot
# read them: a small kernel first copies the matrix into rows it can read. The step's kernel already starts as a
# *programmatic dependent launch* (its blocks may be placed while the copy runs, and wait for it with
# `griddepcontrol.wait`), but only once the copy lets it: the copy now says so first thing
# (`griddepcontrol.launch_dependents`), and B's copy starts beside A's. Step 18 with that copy against the copy before:

# %%
if copies:
    lesson.say(lesson_25.copy_table(copies))
    print(caption(copies))

# %% [markdown]
# It helps most where a split follows, and at two of the three products that copy both. But at 3968 × 384 a copy
# still costs 3–4 µs — B's 196 KB 3.0 µs, A's 2 MB 4.2 µs. What a copy costs a small product is not its bytes but one
# more kernel: the step's kernel cannot read its first tile until the copy has finished and its writes are visible.
#
# ## 3. So is a split
#
# Where the tiles leave SMs idle, step 18 splits K into slices that run side by side and adds them in a second
# kernel. That kernel, and the slices' partial sums written and read back, cost — by a model fitted to four earlier
# runs — about 2 µs plus 0.05 µs a tile a slice; a k-tile of a block costs about 1.1 µs (the floor's slope). Step 18
# now splits only where the k-tiles saved outweigh that (`warp_specialized_3xtf32.split_pays`): at these products, a
# split of 2–3 became none.

# %%
if splits:
    lesson.say(lesson_25.split_table(splits))
    print(caption(splits))

# %% [markdown]
# The last column is what `matmul` runs at most of them: step 18's kernel on 64 × 128 tiles, twice the blocks on the
# same SMs and no split at all — the fastest way to fill the SMs here was smaller tiles, not slices of K.
#
# ## 4. What did not pay
#
# Three more ideas were built and measured, and not kept: reading A by its rows mod 4 instead of copying it (four
# tensor maps whose rows are 16-byte multiples apart, as step 18 reads B where M ≤ 200; A's short, unaligned boxes
# landed at about half the copy path's pace), reading B so at larger M too, and a suspend hint in every mbarrier wait
# (CUTLASS's, to keep waiting warps from spinning). Time over the path each would replace:

# %%
lesson.say(lesson_25.not_adopted_table({key: load_run(name) for key, name in lesson_25.NOT_ADOPTED_RUNS.items()}))

# %% [markdown]
# Where this leaves the small products: at whole tiles, level with cuBLAS SGEMM from K = 64 and ahead from 128; with
# a copy, or a split, one kernel boundary behind it. cuBLAS SGEMM ran 3968 × 384 × 128 as one launch of a 64 × 64-tile
# kernel (372 blocks; Nsight Compute, experiments/README.md). The next step for the course would be the same: the copy
# and the reduction folded into the one kernel.
#
# [Back to lesson 25](../25_where_next.ipynb)
