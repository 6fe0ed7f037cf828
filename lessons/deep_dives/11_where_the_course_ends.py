# %% [markdown]
# # Deep dive (lesson 11_stream_k): where the course ends against cuBLAS
#
# Lesson 11 is the course's last step on the FP32 units. This notebook puts those steps side by side at the two
# largest squares, checks the course's target for them (`TARGET_SGEMM_PCT`, a share of cuBLAS SGEMM: in the
# verdict's table), and gathers what the lessons measured about the difference that is left — which is inside the
# tile, not in the schedule. (Steps 12–17 leave
# the FP32 units for the tensor cores: lessons 12–17.)

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_11, plots
from gemm_steps.harness import results_files

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
compiled = lesson.compile_kernels([persistent, stream_k])
sweep = lesson_11.load_sweep(compiled)

# %% [markdown]
# ## Every step on the FP32 units
#
# From the shipped full run (the plot shows the tensor-core steps too; the table and the verdict are about steps
# 1–11):

# %%
full = lesson.load_shipped(results_files.BENCH_ANY, "`gemm-steps bench`: every step and cuBLAS, 512³ to 8192³")
if full:
    course = [step.name for step in gemm_steps.steps() if step.arithmetic == "fp32"]  # steps 1–11
    big = lesson.common_sizes(full, course)[-2:]
    lesson.show_figure(plots.plot_tflops_vs_size(full))
    lesson.say(lesson_11.course_table(full, course, big))
    lesson.say(lesson_11.target_verdict(full, course, big).table)

# %% [markdown]
# The course's fastest kernel at the two largest squares, against the course's target (`TARGET_SGEMM_PCT` in
# `gemm_steps/course/targets.py`): the last row says whether it is met. Step 11 runs step 10's kernel there, and
# stream-K was never going to close that gap: those shapes keep nearly all of their block-slots busy (below), so
# there is nothing to balance; its gains are on shapes where the number of tiles, not the tile, was the problem.
#
# ## What is left

# %%
if full:
    lesson.say(lesson_11.inside_the_tile(full, course, big, sweep, compiled).table)

# %% [markdown]
# What is left is inside the tile: cuBLAS runs at a larger share of the estimated FP32 peak than the course's fastest
# kernel. What the lessons measured says where the difference is, and where it is not:
#
# * **Not mainly the instruction count.** The k-loop of steps 9 and 10 (the same code) issues the PTX instructions
#   per FMA in the table: besides the FMA, integer index arithmetic (mostly 64-bit), shared loads and a little
#   else. If issuing them were the limit, it could run at the issue ceiling's share of the peak; it runs below it.
#   Fewer index instructions would raise that ceiling, but the kernel is not at it.
# * **Waiting.** At these registers per thread (nvJitLink's count here; the GPU driver's own compile, in the
#   profiler's report), one block of 8 warps fits on an SM, and all waiting — for memory, for shared loads, at the
#   barrier — must be hidden inside that one block, by double buffering alone. Larger register tiles, or a second
#   block per SM, both need registers this kernel does not have to spare.
# * **The machine code.** PTX is not what runs: `ptxas` allocates registers and orders the instructions. Lesson 9
#   looked below PTX: under Nsight Compute, cuBLAS runs a kernel of step 9's design (the same tile, threads,
#   registers and grid) with the same instruction count, and issues more warp-instructions per cycle per scheduler
#   (lesson 9's issue table); register double buffering, `cp.async` copies, cheaper index arithmetic and other FMA
#   orders, each measured against step 9 in one run, were slower or within about 1 % (lesson 9's deep dive).
#   cuBLAS's kernels are tuned down to the machine code (SASS); a Numba kernel reaches it only through NVVM and
#   `ptxas`, whose schedule moved by several percent under small PTX changes that no instruction count predicted.

# %% [markdown]
# Back to [lesson 11](../11_stream_k.ipynb); on to [lesson 12: tensor cores](../12_tensor_cores.ipynb).
