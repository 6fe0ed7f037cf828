# %% [markdown]
# # Deep dive (lesson 11_stream_k): where the course ends against cuBLAS
#
# Lesson 11 is the course's last step. This notebook puts every step side by side at the two largest squares,
# checks the course's target (95 % of cuBLAS there), and gathers what the lessons measured about the difference
# that is left — which is inside the tile, not in the schedule.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_11, plots

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
compiled = lesson.compile_kernels([persistent, stream_k])
sweep = lesson_11.load_sweep(compiled)

# %% [markdown]
# ## Every step of the course
#
# From the shipped full run:

# %%
full = lesson.load_shipped("bench-*.json", "`gemm-steps bench`: all eleven steps and cuBLAS, 512³ to 8192³")
if full:
    course = [step.name for step in gemm_steps.steps()]
    big = lesson.common_sizes(full, course)[-2:]
    lesson.show_figure(plots.plot_tflops_vs_size(full))
    lesson.say(lesson_11.course_table(full, course, big))

# %% [markdown]
# ## What is left

# %%
if full:
    lesson.say(lesson_11.where_the_course_ends(full, course, big, sweep, compiled))

# %% [markdown]
# Back to [lesson 11](../11_stream_k.ipynb); on to [lesson 12: tensor cores](../12_tensor_cores.ipynb).
