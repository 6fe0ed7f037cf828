# %% [markdown]
# # Deep dive (lesson 11_stream_k): what the balance-only model leaves out
#
# Lesson 11 predicts stream-K's gain from balance alone: one time unit per k-iteration, nothing else costs. The
# measurements fall short of it everywhere. This notebook measures by how much and why: the fixed costs of the small
# squares, the stream-K kernel's own cost where it has nothing to split, the 90 % threshold against the measured
# break-even, and the run that led step 11 to fall back to step 10's kernel.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_11

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
compiled = lesson.compile_kernels([persistent, stream_k])
sweep = lesson_11.load_sweep(compiled)
forward = lesson.load_shipped("experiment-scheduling-forward-walk-h200.json", "the same sweep with the first "
                              "stream-K kernel; here only its cuBLAS times are used")

# %% [markdown]
# ## The small squares: fixed costs
#
# On 512³ and 1024³ the model promised large gains (few tiles, most SMs idle), and stream-K delivered little. Take
# the time of one k-iteration from the shape that fills exactly one wave, and count the k-loop work each small
# square's schedule holds:

# %%
if sweep:
    lesson.say(lesson_11.small_squares(sweep, forward))

# %% [markdown]
# ## The stream-K kernel's own cost
#
# The sweep also ran step 11's kernel *without* the fallback to step 10: on the shapes where the rule splits
# nothing, that kernel computes every tile data-parallel, like step 10, with the stream-K bookkeeping compiled in.
# The compiled kernels first:

# %%
lesson.compiled_table(compiled)
if sweep:
    text, typical = lesson_11.kernel_cost_text(sweep, compiled)
    lesson.say(text)
    lesson.say(lesson_11.prediction_with_cost(sweep, typical))

# %% [markdown]
# ## Where the rule falls back
#
# With every block-slot of a tile-per-block schedule busy, stream-K has nothing to balance, and only its cost
# would be left. That is why step 11 hands those shapes to step 10:

# %%
if sweep:
    lesson.say(lesson_11.fallback_text(sweep, typical))

# %% [markdown]
# The fallback came from a measurement. Right after the backward walk fixed the chain (the
# [first version](11_first_version.ipynb)), a run of the same sweep timed the stream-K kernel with the 90 % rule
# but *without* the fallback — on full waves it then ran every tile data-parallel in its own kernel:

# %%
before_fallback = lesson.load_shipped("experiment-scheduling-stream-k-kernel-h200.json", "the same sweep with "
                                      "the backward-walk kernel, before step 11 fell back to step 10's kernel")
if sweep and before_fallback:
    lesson.say(lesson_11.before_fallback_text(sweep, before_fallback, typical))

# %% [markdown]
# Back to [lesson 11](../11_stream_k.ipynb).
