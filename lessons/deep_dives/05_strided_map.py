# %% [markdown]
# # Deep dive (lesson 05_register_2d): a strided thread map — bank conflicts, 128-bit loads, and a preview of step 9
#
# In [lesson 5](../05_register_2d.ipynb)'s kernel each thread owns a contiguous 8×8 block of C. That costs bank
# conflicts, and the lesson's profile showed that `ptxas` loads B's fragment with 128-bit instructions. This
# notebook counts both in the wavefront model, against the profiler. Then it measures a **strided** map that
# avoids the conflicts, and explains why the course does not ship it at this step.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_05

register_2d = gemm_steps.get_step("register_2d")
config = register_2d.config
experiment = lesson_05.load_experiment()

# %% [markdown]
# ## Step 5's map, counted
#
# Take the first warp of a block: threads 0–31, block-rows 0 and 1 of the 16 × 16 threads. At one k-step, lanes
# 0–15 read the same A word (a broadcast), and lanes 16–31 read one 64 floats further on: the same bank, so each of
# the 8 loads of A's fragment takes two wavefronts. B's fragment is 8 neighbouring floats per lane, 8 floats from
# one lane to the next. Loaded one float at a time, 16 lanes read 16 words spread over 4 banks, four words to a
# bank.
#
# `ptxas` can merge those 8 floats into wider loads. A warp-wide 128-bit load moves 512 bytes, and shared memory
# serves it a quarter-warp (8 lanes) at a time. A 64-bit load is served a half-warp at a time. The model of each,
# with the profiler's count for step 5 (`served` in `gemm_steps/course/models.py` counts the phases):

# %%
lesson.say(lesson_05.load_widths(register_2d))

# %% [markdown]
# Only 128-bit loads give what the profiler measured. They do not remove the conflicts: lanes 0 and 4 of a
# quarter-warp read words 32 floats apart, in the same banks.
#
# ## A strided map
#
# The experiment of lesson 5 has two more variants of the shipped kernel, both with unsigned indices. They change
# which elements of C a thread owns: thread (r, c) owns rows r, r + 16, r + 32, … and columns c, c + 16, …. So
# the 16 lanes along a block-row read 16 *neighbouring* floats of B, and the lanes of the two block-rows read A
# words in different banks. The third variant also stores the A tile transposed. The kernel's k-loop:

# %%
kernel_file = lesson.show_file("experiments/kernels/register_2d_strided.py", start="for kk in range(BK):",
                              stop="acc[i, j] +=")

# %% [markdown]
# The wavefront model for each variant, next to the measurement:

# %%
if experiment:
    lesson.say(lesson_05.strided_table(experiment, config))

# %% [markdown]
# The strided map gains over step 5 at every size of the run (the last column at the largest). Transposing A as
# well changes nothing in the model, and little in the time. None of these kernels is near its shared-memory
# ceiling, and the variants differ in more than wavefronts: the strided map also writes C in coalesced rows. The
# timings say the strided map is faster, not why.
#
# The strided map loses the 128-bit loads of B, since a thread's 8 values of a fragment are 16 floats apart. It
# still needs fewer wavefronts, because each load is conflict-free.
#
# ## Why the course keeps the contiguous block
#
# Because of the next step. Step 6 loads fragments with 128-bit instructions, which need **4 neighbouring floats**
# per thread. In the strided map every value a thread loads would stay a scalar load, and so would its stores of C.
# The contiguous block gives step 6 its 128-bit loads and stores, and the bank conflicts come along. Step 9,
# **warp tiling**, gets both: each lane owns 4×4 sub-blocks, 4 neighbouring floats for a 128-bit load, spaced
# across the warp's tile so that a warp's loads hit different banks. That is where this map comes back.
#
# Back to [lesson 5](../05_register_2d.ipynb).
