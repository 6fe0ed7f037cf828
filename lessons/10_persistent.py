# %% [markdown]
# # Lesson 10 — Persistent blocks, tile order, and the waves of a grid
#
# Until now each block computed one tile of C and exited, and the GPU's hardware scheduler handed the next block to
# whichever SM became free. This lesson looks at the grid as a whole. A **persistent** kernel launches only as many
# blocks as the GPU runs at once and lets each loop over tiles, in an order chosen for the L2 cache. We predict what
# that should buy, measure it against an otherwise identical non-persistent kernel, and find where the time really
# goes at the grid level: in **waves**. (SMs, occupancy and the L2 cache are explained in
# [lesson 0b](00_the_gpu.ipynb).)

# %%
import inspect

import gemm_steps
from gemm_steps.course import exercise_solutions, lesson, lesson_10
from gemm_steps.toolkit.persistent_tiles import PersistentTiles
from gemm_steps.toolkit.tiles import TiledKernels

warp_tiling, persistent = gemm_steps.get_step("warp_tiling"), gemm_steps.get_step("persistent")
print(persistent.doc)

# %% [markdown]
# ## The idea
#
# With P blocks resident on the GPU at once, block b computes tiles b, b + P, b + 2P, … (a *grid-stride* loop), so
# the tiles numbered 0 to P − 1 are in flight together, then the next P: one **wave** at a time. The numbering is
# the tile order. Step 10 numbers the tiles in **groups of `GROUP_M` tile-rows**, column by column inside a group,
# so that the tiles in flight together share rows of A and columns of B — data that one block fetched into L2 and
# a neighbour can reuse. The order as plain loops (the exercise `exercises/persistent.py` is graded against this
# function), then drawn on a small example: 12 × 16 tiles on a GPU that holds 32 blocks at once, row-major beside
# step 10's `GROUP_M`. The picture is computed from the kernel's own index formula (below), which gives the same
# order:

# %%
lesson.show_code(inspect.getsource(exercise_solutions.expected_tile_order))
lesson.show_figure(lesson_10.tile_order_figure(persistent, rows=12, cols=16, resident=32))
lesson.say(lesson_10.first_wave(persistent, rows=12, cols=16, resident=32).table)

# %% [markdown]
# With step 10's tiles, the first wave of the picture reads about half as many floats of A and B per step of k
# grouped as row-major (the table), for the same tiles in flight.
#
# ## The kernel
#
# The change to step 9's kernel: the tile body is wrapped in the loop (the diff ignores the extra indentation). The
# loop computes each tile's row and column from its number with `//` and `%` — the order above — instead of reading
# them from the block's index, and the early return of step 9's edge kernel is gone. Like step 9, the
# kernel keeps its `if EDGE:` branches: where the fast variant cannot take the whole product (partial tiles, or K
# not a multiple of `BLOCK_K`), its guarded variant loops over every tile instead:

# %%
lesson.show_diff(warp_tiling, persistent, ignore_indent=True)

# %% [markdown]
# And how many blocks to launch: as many as the driver says fit at once — blocks per SM (*occupancy*) times SMs —
# or fewer if there are fewer tiles:

# %%
print(inspect.getsource(TiledKernels.resident_blocks))
print(inspect.getsource(PersistentTiles.launch_tiles))

# %% [markdown]
# ## The prediction
#
# **How many blocks fit.** Registers decide it here: an SM has 65,536, so two blocks of 256 threads fit only at
# 128 registers per thread or fewer, and this kernel needs far more. The count depends on the compiler, and three
# compilers have compiled this kernel: the GPU driver, when the kernel was loaded on the H100 where the profiler's reports were made (its
# count is in the report), and two `ptxas` versions on this machine. For steps 9 and 10:

# %%
compiled = lesson.compile_with_registers([warp_tiling, persistent])
lesson.say(lesson.register_table(compiled))
occupancy = lesson_10.resident_per_sm(compiled, persistent)  # at the driver's count: what ran
print(occupancy)

# %% [markdown]
# The first column is what ran: the PTX compiled by the driver when the kernel was loaded, as the shipped reports
# record it; the other two compile the PTX that NVVM makes here, for sm_90. A register count means something only
# with the name of the compiler that made it. One block of 8 warps per SM, whichever count: P = SMs.
#
# **Waves.** A non-persistent grid with one block per SM also runs in waves of one tile per SM: the first SMs to
# finish take the next blocks, and so on. If T tiles take the same time each, the kernel takes ⌈T / SMs⌉ tile
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
    lesson.say(lesson_10.setup(experiment, occupancy["blocks"]))
    dram = lesson_10.dram_table(experiment)
    lesson.say(dram.table)
    print(f"DRAM needs at most {dram.share:.0%} of a kernel's time at datasheet bandwidth, in either order")

# %% [markdown]
# **Prediction:** if L2 keeps each wave's data, DRAM needs only that small share of the kernel's time at full
# bandwidth in either order, so the order has little to win at these sizes: the kernel is not waiting on DRAM.
# (Grouping can even touch *more* rows per wave, when a wave ends part-way into a group.)

# %% [markdown]
# ## Is it right?
#
# On the simulator a persistent grid gets 3 blocks (there is no occupancy to ask for), so with 2 × 2 tiles of
# 128 × 256 one block loops over two of them; the last shape adds partial tiles, for the guarded variant:

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
# And the experiment: step 10 in both tile orders against its non-persistent twin (step 9's kernel with step 10's
# tiles), and cuBLAS, in one run over squares, shapes at and just past a whole wave, a small and a K-heavy shape.
# Note the runs: the benchmark above and the experiment (with the DRAM table, on an H200) are separate runs, each
# naming its GPU — 132 SMs in both, the same tiles — so compare within each, not across (separate runs differ by up
# to about 10 %).
# Plotted against tiles ÷ SMs — how many waves of tiles the grid needs — with the wave model's saw-tooth:

# %%
if experiment:
    lesson.show_figure(lesson_10.waves_figure(experiment))

# %% [markdown]
# ## What the numbers say
#
# **Waves** are the largest effect in the experiment; then the two predictions:

# %%
if experiment:
    lesson.say(lesson_10.waves(experiment).table)
    lesson.say(lesson_10.verdict(experiment).table)

# %% [markdown]
# * **Waves.** The shape just past one wave takes far more than its share of work longer than one wave: its last
#   wave holds a small share of a wave's work and costs a large share of a wave's time — less than a full wave (its
#   few blocks have memory and L2 nearly to themselves), but far more than its work. cuBLAS pays on the same two
#   shapes too.
# * **Persistence:** on the squares more than a wave deep, step 10 against its non-persistent twin (the second
#   table's first rows; `persistence flat` is the prediction, checked).
# * **Tile order:** grouped ÷ row-major speed over all shapes (its range, how many shapes fall on each side of the
#   noise band, and the `tile order` verdict), against the DRAM count's prediction of little to win; one run per
#   shape cannot tell a few percent at a single shape from run-to-run variation.

# %% [markdown]
# The experiment's table, shape by shape, with both tile orders and the share of cuBLAS:
# [deep dive: persistence and tile order, shape by shape](deep_dives/10_persistence_and_order.ipynb). A sweep of
# shapes that all have K = 4096 puts more points on the saw-tooth, for steps 9 and 10 and cuBLAS:
# [deep dive: the saw-tooth](deep_dives/10_the_saw_tooth.ipynb).
#
# ## Where the course still loses to cuBLAS
#
# The shapes furthest from cuBLAS, and how many SMs their last wave keeps busy:

# %%
if experiment:
    lesson.say(lesson_10.worst_table(experiment, 3))

# %% [markdown]
# The worst shapes are the ones with **few tiles**: a small matrix, or one whose work lies along K. A C of a few
# tiles keeps only that many SMs busy, however long K is, and the share of cuBLAS follows the share of SMs busy,
# averaged over the waves.
# No schedule of whole tiles can fix that: neither persistence nor tile order gives an idle SM anything to do —
# and the saw-tooth is the same problem at every wave boundary. The remedy is to split the work *along K* as well:
# give each SM an equal share of all the k-iterations of all tiles (a k-iteration: one `BLOCK_K`-deep slice of one
# tile's k-loop), and add up the partial tiles at the end. That
# is **stream-K**, step 11.
#
# Next: [Lesson 11: stream-K](11_stream_k.ipynb)
