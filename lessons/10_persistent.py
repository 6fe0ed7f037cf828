# %% [markdown]
# # Lesson 10 — Persistent blocks, tile order, and the waves of a grid
#
# Until now each block computed one tile of C and exited, and the GPU's hardware scheduler handed the next block to
# whichever SM became free. This lesson looks at the grid as a whole. A **persistent** kernel launches only as many
# blocks as the GPU runs at once and lets each loop over tiles, in an order chosen for the L2 cache. We predict what
# that should buy, measure it against an otherwise identical non-persistent kernel, and find where the time really
# goes at the grid level: in **waves**.

# %%
import inspect

import gemm_steps
from gemm_steps.course import lesson, lesson_10, profiles
from gemm_steps.toolkit.tiles import PersistentTiles, TiledKernels

warp_tiling, persistent = gemm_steps.get_step("warp_tiling"), gemm_steps.get_step("persistent")
print(persistent.doc)

# %% [markdown]
# ## The idea
#
# With P blocks resident on the GPU at once, block b computes tiles b, b + P, b + 2P, … (a grid-stride loop). The
# tiles are numbered in **groups of `GROUP_M` tile-rows**, column by column inside a group, so that the tiles in
# flight at the same time share rows of A and columns of B — data that one block fetched into L2 and a neighbour can
# reuse. The kernel's index arithmetic, in Python, and the order it gives on a small grid of 6 × 8 tiles for a GPU
# that holds 8 blocks at once (the shaded tiles run first, together):

# %%
lesson.show_code(inspect.getsource(lesson_10.tile_position))
lesson.show_figure(lesson_10.tile_order_figure(rows=6, cols=8, resident=8, group_ms=(1, 2)))

# %% [markdown]
# Row-major, the first wave needs one row of A's tiles and all eight columns of B; grouped by two rows, two rows of
# A and four columns of B — fewer bytes for the same 8 tiles. Step 10 ships with `GROUP_M = 8`.
#
# ## The kernel
#
# The whole change to step 9's kernel: the tile body is wrapped in the loop, unchanged but for its indentation.
# Like step 9, the kernel keeps its `if EDGE:` branches: where the fast variant cannot take the whole product
# (partial tiles, or K not a multiple of `BLOCK_K`), its guarded variant loops over every tile instead:

# %%
lesson.show_diff(warp_tiling, persistent, ignore_indent=True)

# %% [markdown]
# And how many blocks to launch: as many as the driver says fit at once — occupancy per SM times SMs — or fewer if
# there are fewer tiles:

# %%
print(inspect.getsource(TiledKernels.resident_blocks))
print(inspect.getsource(PersistentTiles.launch_tiles))

# %% [markdown]
# ## The prediction
#
# **How many blocks fit.** Step 10 computes the same tiles as step 9, with about the same registers per thread.
# Register counts depend on the compiler: the table below is ptxas's on this machine (the version is under it), and
# the profiler's report records what the GPU's driver compiled:

# %%
compiled = lesson.compile_kernels([persistent])
entry = compiled["persistent_fast"]
occupancy = lesson.blocks_per_sm(entry["registers"], lesson.threads_per_block(persistent), entry["shared_bytes"])
profiled = profiles.load("persistent")
on_gpu = lesson.blocks_per_sm(int(profiled.value("Registers Per Thread")), lesson.threads_per_block(persistent),
                              entry["shared_bytes"])
lesson.say(f"**{occupancy['blocks']} block(s) per SM**, limited by {occupancy['limited_by']}. The profiler's report "
           f"of this kernel on the H100 (`{lesson.shown_path(profiled.path)}`, compiled by the driver there) says "
           f"{profiled.value('Registers Per Thread'):.0f} registers: {on_gpu['blocks']} block(s) per SM there.")
lesson.compiled_table(compiled)

# %% [markdown]
# **Waves.** A non-persistent grid with one block per SM also runs in *waves* of one tile per SM: the first SMs
# to finish take the next blocks, and so on. If T tiles take the same time each, the kernel takes ⌈T / SMs⌉ tile
# times, whatever the order — so the TFLOPS should follow T / ⌈T / SMs⌉: a saw-tooth in T / SMs, dropping just past
# every whole number, where the last wave runs almost empty. A persistent kernel has the same last wave: with 512
# tiles on 132 blocks, 116 blocks compute four tiles and 16 compute three, exactly as in waves. It saves only the
# launch of each block, which the hardware scheduler does in far less time than a tile takes. **Prediction:
# persistence alone is flat.**
#
# **Tile order.** Grouping should matter only if the L2 cache fails to keep what the tiles in flight share. Count
# it: in each wave, the rows of A and columns of B its tiles touch, each read once from memory per wave if L2 keeps
# them while the wave runs (a lower bound on DRAM traffic):

# %%
experiment = lesson_10.load_experiment(occupancy["blocks"])
if experiment:
    lesson.say(lesson_10.setup_text(experiment, occupancy["blocks"]) + "\n\n" + lesson_10.dram_table(experiment))

# %% [markdown]
# ## Is it right?
#
# On the simulator a persistent grid gets 3 blocks (there is no occupancy to ask for), so 2 × 2 tiles of 128 × 256
# make each block loop; the last shape adds partial tiles, for the guarded variant:

# %%
lesson.check_against_numpy(persistent, [(33, 17, 40), (128, 256, 8), (256, 512, 8), (257, 516, 8)])

# %% [markdown]
# ## The measurement
#
# The benchmark run, where it has step 10:

# %%
results = lesson.measure_or_load(["warp_tiling"], [1024, 2048, 4096, 8192], optional=["persistent"])
present = [s for s in ("warp_tiling", "persistent") if results and lesson.common_sizes(results, [s])]
lesson.timing_table(results, ["warp_tiling", "persistent"], results and lesson.headline_size(results, present))

# %% [markdown]
# And the experiment, shape by shape: step 10 in both tile orders against its non-persistent twin (step 9's kernel
# with step 10's tiles), in one run. Tiles ÷ SMs is how many waves of tiles the grid needs:

# %%
if experiment:
    lesson.say(lesson_10.experiment_table(experiment))
    lesson.show_figure(lesson_10.waves_figure(experiment))

# %% [markdown]
# ## What the numbers say
#
# **Waves** are the largest effect in the experiment:

# %%
if experiment:
    lesson.say(lesson_10.waves_text(experiment))

# %% [markdown]
# A sweep of shapes that all have K = 4096 puts more points on the saw-tooth, for steps 9 and 10 and cuBLAS:
# [deep dive: the saw-tooth](deep_dives/10_the_saw_tooth.ipynb).
#
# **Persistence**, against its twin on the square sizes, where the grid is many waves deep; then **tile order**,
# GROUP_M = 8 against GROUP_M = 1 (row-major), shape by shape:

# %%
if experiment:
    lesson.say(lesson_10.persistence_text(experiment))
    lesson.say(lesson_10.order_text(experiment))

# %% [markdown]
# ## Where the course still loses to cuBLAS
#
# Sort the shapes by how far the course's kernel is from cuBLAS:

# %%
if experiment:
    lesson.say(lesson_10.worst_text(experiment))

# %% [markdown]
# The worst shapes are the ones with **few tiles**: a small matrix, or one whose work lies along K. A C of a few
# tiles keeps only that many SMs busy, however long K is, and the share of cuBLAS tracks the share of busy SMs.
# No schedule of whole tiles can fix that: neither persistence nor tile order gives an idle SM anything to do —
# and the saw-tooth is the same problem at every wave boundary. The remedy is to split the work *along K* as well:
# give each SM an equal share of all the k-iterations of all tiles, and add up the partial tiles at the end. That
# is **stream-K**, step 11. Lesson 11 builds it on this step's kernel and measures it on the same wave-boundary and
# deep shapes.
