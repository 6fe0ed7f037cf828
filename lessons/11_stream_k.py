# %% [markdown]
# # Lesson 11 — Stream-K: share the last wave out by k-iterations
#
# Lesson 10 ended on **waves**. With T tiles and G blocks resident on the GPU (running at the same time), a
# schedule of one tile per block takes ⌈T / G⌉ tile-times, however the tiles are ordered: 144 tiles on 132 SMs take
# two tile-times for 1.09 tile-times of work. This last step changes the unit of work: not a tile, but one trip of
# a tile's k-loop. We draw the schedule, write down what it should buy, check the kernel, and measure where
# stream-K wins and where it does not.

# %%
import inspect

import gemm_steps
from gemm_steps.course import lesson, lesson_11
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.toolkit.tiles import SIMULATED_RESIDENT_BLOCKS

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
print(stream_k.doc)

# %% [markdown]
# ## The idea
#
# Count work in **k-iterations**: one k-tile (`BLOCK_K` deep) of one output tile, one trip of the k-loop. T tiles
# of K / `BLOCK_K` k-tiles each are I = T·K / `BLOCK_K` k-iterations, and they can be dealt out evenly: block b
# takes iterations [b·I / G, (b+1)·I / G), in tile order — so a share may start or end in the middle of a tile. A
# tile computed by several blocks needs a **fixup**: its partial sums are added up before C is written.
#
# The function below is the kernel's arithmetic, in Python (the kernel itself comes later). A block first computes
# its whole, *data-parallel* tiles, then its share of the *stream-K* tiles' k-iterations. Below it, a small GPU:
# **4 blocks, 5 tiles of 8 k-iterations** — 1.25 waves. One tile per block needs two tile-times (16 k-iterations),
# with 3 of the 4 block-slots of the second wave idle. Stream-K gives every block 5 · 8 / 4 = 10 iterations. The
# third picture has 10 tiles on the same 4 blocks (2.5 waves):

# %%
lesson.show_code(inspect.getsource(lesson_11.shares))
print("One tile per block (step 10):\n" + lesson_11.picture(5, 8, 4, split=lesson_11.one_tile_per_block))
print("\nStream-K (step 11):\n" + lesson_11.picture(5, 8, 4))
print("\nStream-K, 10 tiles (the hybrid rule):\n" + lesson_11.picture(10, 8, 4))

# %% [markdown]
# In the second picture tiles 1, 2 and 3 are split between two blocks. The block that computes a tile's **last**
# k-iteration *owns* it: it waits until the other blocks' partial sums of the tile are ready, adds them, and stores
# C. The others write their partial sums to a workspace and raise a flag.
#
# Where there are many waves, only the end needs balancing. The **hybrid** rule of step 11 (`stream_k_split`)
# keeps whole waves data-parallel (no partial sums, no waiting) and shares out only the last, part-empty wave plus
# one full wave before it, so that every block still gets about a tile's worth of iterations: the third picture.
# Where one tile per block would keep at least a threshold share of the block-slots busy
# (`WAVE_EFFICIENCY_FOR_DATA_PARALLEL`, in the prediction's table below), step 11 runs step 10's kernel.
#
# ## The fixup protocol
#
# Each block has one **workspace slot** (a `BLOCK_M × BLOCK_N` tile of floats) and one **flag** (an integer, 0
# between launches). The kernel as written. First, which work a block does, and in which order:

# %%
lesson.show_kernel(stream_k, start="# This block first computes", stop="block_col = tile %")

# %% [markdown]
# Then, after the k-loop of each piece. A block that stops before the tile's last k-tile is a **writer**: it stores
# its partial sums, *fences* (`cuda.threadfence()` orders a thread's memory accesses GPU-wide: none after it is seen
# before those before it), and raises its flag. The owner is the **reader**: for each lower-numbered block in its
# tile, nearest first, it spins until that block's flag is raised, fences, and adds that block's partial sums:

# %%
lesson.show_kernel(stream_k, start="if k_first + k_count < k_tiles:", stop="load4_bypassing_l1")

# %% [markdown]
# Three properties make it safe:
#
# * **Visibility.** Writer: partial sums → `threadfence` → flag. Reader: spin on the flag → `threadfence` → read
#   the partial sums (with `load4_bypassing_l1`, `ld.global.cg`: from L2, not from a stale L1 line). The spin's
#   atomic read is *relaxed*: it orders nothing after it, so without the reader's fence the reads of the partial
#   sums could be satisfied before the flag was seen, and return old values. Under the PTX memory model the
#   two fences pair up across the flag (*fence-fence synchronization*: a fence before the write of the flag, a fence
#   after the read that saw it), and only that pair guarantees that every write before the writer's fence is
#   visible to every read after the reader's fence.
# * **No deadlock — in practice.** An owner waits only for *lower-numbered* blocks, and the piece a block owes
#   others is its first stream-K piece (the walk is backwards): it raises its flag before it ever waits. So nobody
#   waits for a block that is itself waiting. What is left is that the block waited for must get to run. The grid
#   is G = SMs × the blocks per SM that the driver's occupancy calculator says fit, so on a GPU running nothing
#   else all G blocks are resident at once. That is an assumption, not a guarantee: only a *cooperative launch*
#   (the driver refuses a grid that does not fit at once) guarantees it, and another kernel or process sharing
#   the GPU can hold SM slots. GPUs are also observed to
#   start blocks in increasing index order, which alone would suffice, but NVIDIA does not document it.
# * **Determinism.** The owner starts from its own partial sums and adds the others' in a fixed order (nearest
#   block first). For a given grid size, every run gives bitwise-identical results. A different grid (another GPU,
#   another occupancy) splits the tiles elsewhere, and rounds differently.
#
# The [deep dive: the fixup protocol](deep_dives/11_fixup_protocol.ipynb) shows both sides in the compiled PTX,
# checks on every shape of the sweep that no block waits before raising its flag, says what would break the
# residency assumption, and shows the launch that sizes the grid.
#
# ## The prediction
#
# **A model in k-iterations.** Give every k-iteration one unit of time, let nothing else cost anything (no fixup
# traffic), and let an owner wait until every piece of its tile is done. Each block's timeline follows from its
# list of work, and the kernel's time is the last block's finish. Then the model meets this lesson's H200 runs
# (step 10's tuned tiles; blocks per SM from the compiler's register count and NVIDIA's occupancy rules, as in
# lesson 10).

# %%
lesson.show_code(inspect.getsource(lesson_11.timelines))
print("One tile per block:\n" + lesson_11.draw(5, 8, 4, split=lesson_11.one_tile_per_block))
print("\nStream-K:\n" + lesson_11.draw(5, 8, 4))

# %%
compiled = lesson.compile_kernels([persistent, stream_k])
lesson.compiled_table(compiled)
sweep = lesson_11.load_sweep(compiled)
if sweep:
    lesson.say(lesson_11.split_table(sweep))
    lesson.say(lesson_11.prediction(sweep).table)

# %% [markdown]
# **Prediction.** Just past a whole wave, a tile-per-block schedule leaves most of its last wave's block-slots
# idle, so balancing can buy up to the bound in the second table. Where the rule keeps data-parallel waves, the gain
# shrinks with their share; where the tiles fill whole waves, step 11 is step 10 and the prediction is 1.00×. Shapes
# with few, deep tiles (small M·N, large K) have the most to gain: a few busy SMs become all of them.
#
# **Minus the fixups,** which the model leaves out. A partial tile is written once and read once by its owner — as
# many bytes as several k-iterations' loads of A and B (the table's last rows) — and an owner adds its tile's partial
# sums one after another. Small against a share of hundreds of k-iterations; less small where a tile is split among
# many blocks, as on the deep, few-tile shapes.

# %% [markdown]
# ## Is it right?
#
# On the simulator a stream-K grid has `SIMULATED_RESIDENT_BLOCKS` blocks (from `gemm_steps.toolkit.tiles`, printed
# below), and Numba's simulator runs the blocks one after another, in index order — the one order in which waiting
# only for lower-numbered blocks works even without resident blocks. So the simulator checks the arithmetic and the
# fixup, not the timing and not the memory ordering. Three shapes, one for each branch of the rule, each small enough
# to run as one launch (the simulator runs a larger product in slices of rows, each with its own split).
#
# Then, **deterministic?** Run the hybrid shape twice and compare bit patterns; compare with step 10, which
# computes every tile in one block, in k-order; and pretend the GPU holds 2 blocks instead of the simulator's (another grid size):

# %%
checks = [(512, 256, 24), (896, 256, 24), (768, 256, 16)]
config = stream_k.config
for m, n, k in checks:
    tiles, k_tiles = (m // config["BLOCK_M"]) * (n // config["BLOCK_N"]), k // config["BLOCK_K"]
    dp, sk = stream_k_split(tiles, SIMULATED_RESIDENT_BLOCKS)
    what = ("all stream-K" if not dp else f"hybrid: {dp} data-parallel + {sk} stream-K" if sk
            else "whole waves: runs step 10")
    print(f"{m}×{n}×{k}: {tiles} tiles of {k_tiles} k-iterations on {SIMULATED_RESIDENT_BLOCKS} blocks → {what}")
    if sk:
        print(lesson_11.picture(tiles, k_tiles, SIMULATED_RESIDENT_BLOCKS) + "\n")
lesson.check_against_numpy(stream_k, checks)
same = lesson_11.determinism(stream_k, persistent, checks[1])
lesson.say(same.table)
assert same.same_bits, "step 11 is not deterministic on the simulator"

# %% [markdown]
# Two runs are bitwise identical. Against step 10, and on another grid, the elements that differ lie in the tiles
# whose k-loop was split: the same sums, added in another order, with errors of the same size.
#
# ## The first version: a chain through every block
#
# Step 11 did not start out walking its share backwards. The first version walked it **forwards**, so a block's
# first stream-K piece was usually the *end* of a tile, a piece that waits, and the piece it owed the next block
# came last: block 1 waited for block 0's whole share, block 2 for block 1, and so on. It was correct, yet on some
# shapes many times slower than step 10, by about as much as the model above predicts from the order of the work
# alone: the [deep dive: the first version](deep_dives/11_first_version.ipynb).
#
# ## The measurement
#
# Every shape of the sweep: step 9's data-parallel grid, step 10, step 11 and cuBLAS, in one run. (It was measured
# before the reader's fence was added; a later run showed no visible cost from it — see the fixup deep dive.)

# %%
if sweep:
    lesson.say(lesson_11.measurement_table(sweep))

# %%
if sweep:
    lesson.show_figure(lesson_11.figure(sweep))

# %% [markdown]
# On the left, the red line is the balance-only model of step 11's schedule: flat where stream-K balances the
# work, and dropping onto the blue saw-tooth where the rule falls back to step 10 (the threshold share of
# block-slots busy or more). The measured stream-K points sit below the line; the next cell says by how much.
#
# ## What the numbers say

# %%
if sweep:
    lesson.say(lesson_11.where_it_ran(sweep))
    lesson.say(lesson_11.verdict(sweep).table)

# %% [markdown]
# **Stream-K wins where waves were the problem**: on the wave-boundary shapes, and most on the deep shapes, the
# largest gains of the course's last step. **Less than predicted, everywhere**: the deep shapes' tiles are split
# among the most blocks, so each owner waits for and adds the most partial sums; at the small squares fixed costs
# (the launch, host time) outweigh any schedule. And the stream-K kernel is not free: where there is nothing to
# split it is slower than step 10 (the last row), which is why step 11 runs step 10's kernel there.
#
# What the balance-only model leaves out — the stream-K kernel's own cost, the fixed costs of the small squares, and
# why the threshold sits where it does — is measured in the
# [deep dive: what the model leaves out](deep_dives/11_what_the_model_leaves_out.ipynb).
#
# ## The last three steps, at the square sizes
#
# The benchmark of steps 9, 10 and 11 at the square sizes, with cuBLAS in the same run. Large squares fill whole
# waves, so here step 11 runs step 10's kernel:

# %%
results = lesson.measure_or_load(["warp_tiling", "persistent", "stream_k"], [1024, 2048, 4096, 8192])
lesson.timing_table(results, ["warp_tiling", "persistent", "stream_k"])

# %% [markdown]
# That is the course: from a three-loop kernel at about 1 % of cuBLAS to one within sight of it, each step a
# prediction checked against a measurement. Where a step won, the lessons say by how much and why; where a
# prediction failed — step 4, step 5, the first stream-K — they say that too, and what it taught. Every step at the
# two largest squares, the course's target against cuBLAS, and what is left inside the tile are in the
# [deep dive: where the course ends](deep_dives/11_where_the_course_ends.ipynb).
#
# Try it: the exercise `stream_k` (`gemm-steps exercise check stream_k`, `exercises/stream_k.py`) — write the even
# split and the fix-up yourself; the grader names a partial sum read before its writer's release.
#
# Next: [Lesson 12: tensor cores](12_tensor_cores.ipynb), where the arithmetic itself changes.
