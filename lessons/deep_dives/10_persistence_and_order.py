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
compiled = lesson.compile_with_registers([persistent])
occupancy = lesson_10.resident_per_sm(compiled, persistent)  # blocks per SM at the register count that ran
experiment = lesson_10.load_experiment(occupancy["blocks"])
if experiment:
    lesson.say(lesson_10.setup(experiment, occupancy["blocks"]))

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
# On the square sizes, where the grid is more than one wave deep, and with the grouped order, persistent speed ÷
# its twin's:

# %%
if experiment:
    lesson.say(lesson.facts({lesson.size_label(row["shape"]): ratio
                             for row, ratio in lesson_10.persistence(experiment)}, ("shape", "persistent / twin")))

# %% [markdown]
# Flat, as predicted: within 2 %. With one block per SM the twin already runs in waves of one tile per SM; the
# hardware block scheduler launches a block in far less time than a tile takes; and the last wave is equally
# partial either way. A persistent kernel earns its keep when there is something to do *between* tiles — prologue
# work to amortize, or a smarter split of the work than whole tiles (lesson 11).

# %% [markdown]
# ## Tile order: grouped against row-major
#
# The speed of `GROUP_M` = 8 divided by that of `GROUP_M` = 1, at every shape. The lesson's DRAM count predicted
# that neither order is held back by DRAM at these sizes:

# %%
if experiment:
    lesson.say(lesson.facts({lesson.size_label(row["shape"]): ratio for row, ratio in
                             lesson_10.order(experiment).diffs}, ("shape", "grouped / row-major speed")))

# %% [markdown]
# Within the course's noise threshold at most shapes, grouped faster by more than that at some and row-major at
# others (the lesson's verdict table counts them). There is no consistent sign, and the DRAM count leaves little for
# an order to win at these sizes on a cache this large. What differs at single shapes is one run each: this
# experiment cannot say whether a few percent either way is the order or run-to-run variation, and we do not claim
# either.

# %% [markdown]
# ## Every shape against cuBLAS
#
# Sorted by the twin's share of cuBLAS, with how many SMs the last wave keeps busy (the lesson shows the first
# three):

# %%
if experiment:
    lesson.say(lesson_10.worst_table(experiment))

# %% [markdown]
# Back to [lesson 10](../10_persistent.ipynb).
