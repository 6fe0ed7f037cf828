# %% [markdown]
# # Deep dive (lesson 10_persistent): the saw-tooth, point by point
#
# Lesson 10 predicts that a grid of T equal tiles on a GPU that runs one tile per SM at a time takes ⌈T / SMs⌉ tile
# times, so that TFLOPS follow T / ⌈T / SMs⌉ — a saw-tooth that drops just past every whole wave. A sweep run for
# lesson 11 (`experiments/scheduling.py`) timed steps 9 and 10 with the same tiles, and cuBLAS, on a family of shapes
# that all have K = 4096 — so a tile takes the same time in each — with tile counts at and just past whole waves,
# from half a wave to 2.27.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_10

persistent = gemm_steps.get_step("persistent")
compiled = lesson.compile_with_registers([persistent])
occupancy = lesson_10.resident_per_sm(compiled, persistent)  # blocks per SM at the register count that ran
sweep = lesson_10.saw_tooth(occupancy["blocks"])

# %% [markdown]
# The wave model, T/⌈T/SMs⌉, anchored at the shape that is exactly one wave:

# %%
if sweep and sweep.anchor:
    lesson.say(lesson_10.saw_tooth_table(sweep))
    lesson.show_figure(lesson_10.saw_tooth_figure(sweep))

# %%
if sweep and sweep.anchor:
    lesson.say(lesson_10.saw_tooth_numbers(sweep).table)

# %% [markdown]
# Step 9 follows the wave model closely at every point but the one it is anchored at, and a little above it past a
# whole wave: a part-empty last wave runs a little faster than a full one. Step 10 tracks step 9 point for point:
# persistence moves no point of the saw-tooth. One tile more than a wave costs step 9 a large share of its TFLOPS;
# cuBLAS loses less on the same two shapes — it is free to choose other tiles or to split K for a shape, and we do
# not know what it chose. The % of cuBLAS on the right is the same saw-tooth: at whole waves step 9 is close to
# cuBLAS, elsewhere further; the difference is the empty part of the last wave.

# %% [markdown]
# Back to [lesson 10](../10_persistent.ipynb).
