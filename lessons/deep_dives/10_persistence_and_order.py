# %% [markdown]
# # Deep dive (lesson 10_persistent): persistence and tile order, shape by shape
#
# [Lesson 10](../10_persistent.ipynb) gives the verdict of its experiment in two sentences: persistence is flat,
# and the tile order has no consistent sign. Here is the experiment behind them (`experiments/persistent.py`), one
# row per shape: step 10 with `GROUP_M` = 8 (grouped) and = 1 (row-major), its non-persistent twin (step 9's kernel
# with step 10's tiles) and cuBLAS, in one run.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_10

persistent = gemm_steps.get_step("persistent")
compiled = lesson_10.compile_with_registers([persistent])
occupancy = lesson_10.resident_per_sm(compiled, persistent)  # blocks per SM at the register count that ran
experiment = lesson_10.load_experiment(occupancy["blocks"])
if experiment:
    lesson.say(lesson_10.setup_text(experiment, occupancy["blocks"]))

# %% [markdown]
# ## Every shape
#
# Tiles ÷ SMs is how many waves of one tile per SM the grid needs; the last column is the twin's share of cuBLAS.

# %%
if experiment:
    lesson.say(lesson_10.experiment_table(experiment))

# %% [markdown]
# ## Persistence against its twin
#
# On the square sizes, where the grid is more than one wave deep, and with the grouped order:

# %%
if experiment:
    lesson.say(lesson_10.persistence_text(experiment))

# %% [markdown]
# ## Tile order: grouped against row-major
#
# The speed of `GROUP_M` = 8 divided by that of `GROUP_M` = 1, at every shape. The lesson's DRAM count predicted
# that neither order is held back by DRAM at these sizes:

# %%
if experiment:
    lesson.say(lesson_10.order_text(experiment))

# %% [markdown]
# ## Every shape against cuBLAS
#
# Sorted by the twin's share of cuBLAS, with how many SMs the last wave keeps busy (the lesson shows the first
# three):

# %%
if experiment:
    lesson.say(lesson_10.worst_text(experiment))

# %% [markdown]
# Back to [lesson 10](../10_persistent.ipynb).
