# %% [markdown]
# # Deep dive (lesson 11_stream_k): where the course ends against cuBLAS
#
# Lesson 11 is the course's last step on the FP32 units. This notebook puts those steps side by side at the two
# largest squares, checks the course's target for them (95 % of cuBLAS SGEMM there), and gathers what the lessons
# measured about the difference that is left — which is inside the tile, not in the schedule. (Steps 12–14 leave
# the FP32 units for the tensor cores: lessons 12–14.)

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_11, plots

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
compiled = lesson.compile_kernels([persistent, stream_k])
sweep = lesson_11.load_sweep(compiled)

# %% [markdown]
# ## Every step on the FP32 units
#
# From the shipped full run (the plot shows the tensor-core steps too; the table and the verdict are about steps
# 1–11):

# %%
full = lesson.load_shipped("bench-*.json", "`gemm-steps bench`: every step and cuBLAS, 512³ to 8192³")
if full:
    course = [step.name for step in gemm_steps.steps() if step.arithmetic == "fp32"]  # steps 1–11
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
