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
compiled = lesson_10.compile_with_registers([persistent])
occupancy = lesson_10.resident_per_sm(compiled, persistent)  # blocks per SM at the register count that ran
sweep = lesson_10.saw_tooth(occupancy["blocks"])

# %%
if sweep and sweep.anchor:
    lesson.say(lesson_10.saw_tooth_table(sweep))
    lesson.show_figure(lesson_10.saw_tooth_figure(sweep))

# %%
if sweep and sweep.anchor:
    lesson.say(lesson_10.saw_tooth_text(sweep))

# %% [markdown]
# Back to [lesson 10](../10_persistent.ipynb).
