# %% [markdown]
# # Deep dive (lesson 11_stream_k): what the balance-only model leaves out
#
# Lesson 11 predicts stream-K's gain from balance alone: one time unit per k-iteration, nothing else costs. The
# measurements fall short of it everywhere. This notebook measures by how much and why: the fixed costs of the small
# squares, the stream-K kernel's own cost where it has nothing to split, the rule's threshold against the measured
# break-even, and the run that led step 11 to fall back to step 10's kernel.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_11
from gemm_steps.harness import results_files

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
compiled = lesson.compile_kernels([persistent, stream_k])
sweep = lesson_11.load_sweep(compiled)
forward = lesson.load_shipped(results_files.EXPERIMENT_SCHEDULING_FORWARD_WALK_NVIDIA_H200,
                              "the same sweep with the first stream-K kernel; here only its cuBLAS times are used")

# %% [markdown]
# ## The small squares: fixed costs
#
# On 512³ and 1024³ the model promised large gains (few tiles, most SMs idle), and stream-K delivered little. Take
# the time of one k-iteration from the shape that fills exactly one wave, and count the k-loop work each small
# square's schedule holds:

# %%
if sweep:
    small = lesson_11.small_squares(sweep, forward)
    lesson.say(small.table if small else "")

# %% [markdown]
# Balance is not what limits them: their stream-K schedules hold far less k-loop work than they measured. The rest
# is fixed cost — the launch, host time the timing counts, fixups — that no schedule removes. (This sweep's times at
# these sizes are also less steady than the others': cuBLAS at the smallest square took different times here and in
# the first version's sweep, the last two rows, so their percentages of cuBLAS say little.)

# %% [markdown]
# ## The stream-K kernel's own cost
#
# The sweep also ran step 11's kernel *without* the fallback to step 10: on the shapes where the rule splits
# nothing, that kernel computes every tile data-parallel, like step 10, with the stream-K bookkeeping compiled in.
# The compiled kernels first:

# %%
lesson.compiled_table(compiled)
if sweep:
    cost = lesson_11.kernel_cost_numbers(sweep, compiled)
    typical = cost.typical
    lesson.say(cost.table)

# %% [markdown]
# Step 11's kernel with nothing to split is slower than step 10's. Its k-loop has the same instruction mix as step
# 10's, but the share bounds, the walk and the fixup raise the registers per thread close to the limit of 255,
# which leaves the compiler less room to schedule. That is the likely cost; a profiler would have to confirm it.
# Taking that cost into the prediction, on the wave-boundary shapes:

# %%
if sweep:
    with_cost = lesson_11.prediction_with_cost(sweep, typical)
    lesson.say(with_cost.table)
    print("what is left shrinks as the shares grow:", with_cost.shrinks)

# %% [markdown]
# What is left shrinks as the shares grow (the shapes are sorted by tiles ÷ SMs): a cost per block or per split tile
# that the model leaves out — writing, waiting for and adding partial sums.

# %% [markdown]
# ## Where the rule falls back
#
# With every block-slot of a tile-per-block schedule busy, stream-K has nothing to balance, and only its cost
# would be left. That is why step 11 hands those shapes to step 10:

# %%
if sweep:
    lesson.say(lesson_11.fallback(sweep, typical).table)

# %% [markdown]
# The rule splits only when fewer than its threshold of the block-slots would be busy. With the kernel's cost,
# balancing pays only below the break-even share: the threshold sits close to it.
#
# Where it falls back, step 11 runs step 10's very kernel, yet measured slower (the gap column). That difference is
# not in the kernel. In the measured version, step 11's launch did more host work before it handed over (it checked
# the arrays, sized the grid and split, then called step 10's launch, which checked them again), and these timings
# count host time that outlasts the L2 flush queued before each launch (`docs/measurement.md`). That is the likely
# reason, not a measured one. It weighs most on the shortest kernels. The launch has since been made leaner — the
# fallback now takes over the launch before anything is compiled, with the arrays checked once — and has not been
# timed again yet.

# %% [markdown]
# The fallback came from a measurement. Right after the backward walk fixed the chain (the
# [first version](11_first_version.ipynb)), a run of the same sweep timed the stream-K kernel with the threshold rule
# but *without* the fallback — on full waves it then ran every tile data-parallel in its own kernel:

# %%
before_fallback = lesson.load_shipped(results_files.EXPERIMENT_SCHEDULING_STREAM_K_KERNEL_NVIDIA_H200,
                                      "the same sweep with the backward-walk kernel, before step 11 fell back to step "
                                      "10's kernel")
if sweep and before_fallback:
    lesson.say(lesson_11.before_fallback(sweep, before_fallback).table)

# %% [markdown]
# Two runs agree (this median against the final sweep's, above): where there is nothing to balance, the stream-K
# kernel only costs, so step 11 does not run it there.

# %% [markdown]
# Back to [lesson 11](../11_stream_k.ipynb).
