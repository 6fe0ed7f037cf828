# %% [markdown]
# # Lesson 22 — The default precision on stream-K
#
# `gemm_steps.matmul` computes at float32 accuracy by default, on step 18 (lesson 18): three TF32 products a k-step
# on the tensor cores, 128 × 128 tiles, one block a tile. Its slowest shape in the held-out draw before this step
# (seed 20261215) was 10077×164×4066 — 0.97× cuBLAS SGEMM — and the reason is lesson 21's: 158 tiles for 132 SMs run in two **waves**, the second with 26
# tiles and 106 idle SMs, for 1.2 waves of work. Step 22 is step 18's k-tile on step 21's stream-K schedule. The
# timings come from runs on an **H200**, each with step 18 and cuBLAS SGEMM in the same process (the captions name the
# files).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_21, lesson_22, lesson_25, predictions

step = gemm_steps.get_step("warp_specialized_3xtf32_stream_k")
runs = lesson_22.runs()
print(step.doc.splitlines()[0])

# %% [markdown]
# ## Waves against shares
#
# Left, step 18 at 10077×164×4066: 158 tiles of 128 k-tiles, each SM a row, time to the right. Right, step 22: 132
# blocks, one an SM, each taking an equal share of the 158 × 128 k-tiles, cut where a tile ends; the SM that computes
# a tile's last k-tile adds the others' partial sums before it stores C (lesson 21).

# %%
lesson.show_figure(lesson_21.waves_figure(tiles=158, k_tiles=128, steps=("step 18", "step 22")))

# %% [markdown]
# ## The model, and the prediction
#
# Lesson 21's model, with step 18's tile: step 18 runs ceil(tiles / 132) waves, step 22 the waves of work, plus a
# hand-over of partial sums. The prediction, committed before step 22 first ran on a GPU:

# %%
prediction = predictions.get(22, "stream_k_over_step18_h200")
lesson.say(predictions.quote(prediction))

# %% [markdown]
# ## The kernel
#
# Step 21's schedule — work units, one ring counter over all of a block's k-tiles, the per-thread fixup — with step
# 18's roles. Three things had to change:
#
# * **The producer splits A across units.** Step 18's producer warpgroup splits each stage of A into big and small
#   TF32 parts, two k-tiles behind the copies its first thread issues. The split only needs the ring's place, not the
#   tile, so one loop runs over all of the block's k-tiles; the copy thread moves to the next work unit where one ends.
# * **Scaled sums are handed over as they are.** A consumer keeps 2^11 × its sum (step 18's scaling); every block's
#   part of a tile carries the same scale, so the finishing thread adds them and unscales once.
# * **Specials per thread.** Step 18 votes over the whole block (`syncthreads_or`) and recomputes a tile with an inf
#   or NaN as cuBLAS SGEMM does. Here the producer is already in the next unit and the consumers never wait for each
#   other, so each consumer thread recomputes its own results that came out inf or NaN. Those are the results where
#   the recompute matters: a special input makes its whole row or column of the 3xTF32 sum NaN (and a sum past
#   float32's range inf), while finite inputs within the contract never do (docs/fp32_contract.md).
#
# The producer's loop:

# %%
lesson.show_kernel(step, start="produced = ", stop="else:  # a consumer warpgroup")

# %% [markdown]
# ## Is it right?
#
# On the simulator (3 blocks): 4 tiles of 8 k-tiles, and a ragged product of 4 tiles of 11 k-tiles (the copy engine
# zero-fills past A and B, the stores keep to C), both shared out over the three blocks. The tests add specials on a
# shared tile — an inf in another block's k-tiles, a NaN in the finishing block's, a sum past float32's range — and on
# a GPU step 22 kept the FP32 contract at all 112 (class, K) pairs of lesson 24's accuracy run.

# %%
lesson.check_against_numpy(step, [(64, 128, 256), (40, 100, 330)])

# %% [markdown]
# ## How fast: the first run against the prediction

# %%
if runs:
    lesson.say(lesson_22.verdict_table(lesson_22.verdicts(runs[0], prediction)))
    print(lesson_22.caption(runs[0]))

# %% [markdown]
# The three wave boundaries are inside, at the low end of their ranges; step 18's split-K product (768×768×16384) is
# step 18 itself. Three rows are below — and they are the rows where the model expected *nothing* from the schedule:
# at 2048³ and 4096³ every tile is data-parallel (whole waves: step 22 runs a persistent loop of tiles), at 3000³
# most of them are. So step 22's k-tiles are slower than step 18's. Step 21's persistent loop had been a few percent
# *faster* than step 17 (lesson 21).
#
# ## Why slower? One change at a time
#
# The consumers' k-loops compile to nearly the same PTX (406 instructions against 402); the producer's loop is
# longer and runs in 40 registers. A second run gave the producer 56 (the consumers 224: the same pool), against a
# prediction (`predictions/stream-k-3xtf32-pace-before-run.md`, written before it) that named both outcomes: 0.97–1.03×
# step 18 if the producer's registers were the cause, 0.85–0.93× if not.

# %%
if len(runs) > 1:
    lesson.say(lesson_22.pace_table(runs[1]))
    print(lesson_22.caption(runs[1]))
profile = lesson_22.profile_table()
if profile is not None:
    lesson.say(profile)

# %% [markdown]
# Not the registers. Nsight Compute on one 4096³ launch of each (the table above, clocks locked by the profiler):
# the same DRAM and L2 bytes, 2.5 % more instructions, and fewer instructions issued a cycle — the warps wait longer,
# mostly on the long scoreboard and at warpgroup barriers. The machine code says why, in part: in step 22 every
# `HGMMA` of a k-tile takes its shared-memory descriptor through an `R2UR` (a move from a thread's registers to the
# warp's uniform registers, 22 a k-tile), where step 18 builds its descriptors in the uniform registers. The cause was
# the fixup's wait for another block's flag: a loop whose exit differs from lane to lane, after which ptxas no
# longer treats the ring's stage as the same for the whole warp. Waiting as a warp (`wait_for_flag`: the lanes poll
# together and leave together) removes every `R2UR` from the k-tile — in step 21 too. The third run, its prediction
# committed before it:

# %%
wait = predictions.get(22, "warp_wait_persistent_over_step18_h200")
lesson.say(predictions.quote(wait))
if len(runs) > 2:
    lesson.say(lesson_22.verdict_table(lesson_22.verdicts(runs[2], wait), "persistent loop"))
    lesson.say(lesson_22.pace_table(runs[2]))
    print(lesson_22.caption(runs[2]))

# %% [markdown]
# Closer, not there: 4–5 % back at every shape, the loop still about 0.9× step 18's at 4096³ (2048³ inside the range,
# 4096³ below it). The rest is not found yet. Until it is, the step uses the measurement: a k-tile of step 22 costs
# about 1 / 0.9 of step 18's (`PACE_OF_STEP_18`), so where tiles are long it runs its own kernel only where the waves
# it saves are worth more than that, with a 5 % margin.
#
# ## Short tiles
#
# Where K is short a tile is a few k-tiles, and the k-loop is no longer most of a tile's time. Step 18 runs one tile a
# block and one block an SM (its registers), so a block's start, the wait for its first copies and its stores happen
# with nothing under them; the persistent loop starts the next tile's copies while it stores. A first run at short K
# (`experiments/short_k.py`, its prediction committed before it) tested the store first, and it was not that: step
# 23's TMA store ran only 1.00–1.11× step 21 where the tiles were whole. It also showed step 18 spending about 7.5 µs
# a tile of 2 k-tiles against 9.3 µs a tile of 4 — most of it not the k-loop. The fourth run put the loop beside step
# 18 from 2 to 128 k-tiles a tile:

# %%
short = predictions.get(22, "short_k_persistent_over_step18_h200")
lesson.say(predictions.quote(short))
if len(runs) > 3:
    lesson.say(lesson_22.verdict_table(lesson_22.verdicts(runs[3], short), "persistent loop"))
    print(lesson_22.caption(runs[3]))

# %% [markdown]
# The loop wins where tiles are short — 1.27–1.42× step 18 at 2–4 k-tiles, 1.08× at 8 — and loses its 10 % where they
# are long. The prediction proposed a fixed cost a tile fitted on this run; fitted (about 1.3 k-tiles' worth), it
# overshot the loop by 3–8 % at 2 and at 32–128 k-tiles, so the rule is the measurement itself: step 22 runs its own
# kernel wherever a tile has at most 8 k-tiles (`SHORT_TILE_K_TILES`: the last count measured to gain; 9–31 were not
# measured), whatever the waves, and elsewhere by the waves it saves:

# %%
lesson.say(lesson_22.waves_table([(10077, 164, 4066), (1152, 2048, 4096), (2432, 1792, 4096), (3000, 3000, 3000),
                                  (4096, 4096, 4096), (4096, 8192, 64), (4096, 8192, 1024)]))

# %% [markdown]
# ## On the shapes `matmul` was measured on
#
# The shape suite (`gemm-steps bench --suite shapes`; its prediction, in `predictions/`, was committed before the
# run), the four shapes where step 22 runs its own kernel:

# %%
suite = lesson_22.suite()
if suite is not None:
    lesson.say(lesson_22.suite_table(lesson_22.suite_rows(suite), own_only=True))
    print(lesson_22.caption(suite))

# %% [markdown]
# 1.10–1.23× step 18 where a wave is part-empty; three of the four inside their ranges, 9001×99×5003 just below (N = 99
# in one column of tiles: 71 tiles on 132 SMs, B copied first). Everywhere else step 22 is step 18 (0.99–1.01×, one
# shape at 0.91× in the same process: a spread not explained).
#
# ## Shapes nobody measured
#
# A new held-out draw (seed 20261216, its prediction committed before the run), the default `matmul` and
# `precision="tf32"` over the cuBLAS of their arithmetic:

# %%
held = lesson_22.held_out()
if held is not None:
    lesson.say(lesson_25.held_out_set_table(held))
    print(lesson_22.caption(held))

# %% [markdown]
# Every range of that prediction held, and two of issue 37's five targets were met (the medians). `matmul` chose
# step 22 at 26 of 34 shapes but ran its own kernel at only two: the dispatch rule trusts a kernel path only where it
# was measured near, and step 22's own was measured at six shapes. The default's slowest large product is short-K
# (689×15194×125: 0.99× cuBLAS SGEMM), not a wave boundary any more.
#
# ## The verdict
#
# Stream-K pays at the default precision too: 1.1–1.5× step 18 where its last wave is part-empty, up to 2.35× cuBLAS
# SGEMM. But step 22's k-tiles run at about 0.9× step 18's — a wait loop that split the warp cost part of it, and the
# rest is not found — so where long tiles fill whole waves it leaves the product to step 18; where tiles are short,
# its loop hides a cost of each of step 18's tiles and runs 1.1–1.4× step 18. Left: the rest of that gap, the
# dispatch rule's trust in the model far from a measurement, and the small products where the default is still
# under 1× cuBLAS SGEMM. (The shape suite and the held-out draw above ran before the warp's wait and the short-tile
# rule; lesson 25 has the newest draws.)
#
# Next: [Lesson 23: persistent clusters and the TMA store](23_cluster_stream_k_tma_store.ipynb) (step 23: step 21 as
# cuBLAS runs it: clusters of two sharing A, C stored by the copy engine).
