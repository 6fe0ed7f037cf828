# %% [markdown]
# # Lesson 21 — Stream-K on the tensor cores: no part-empty last wave
#
# Step 17 (lesson 17) launches one block per tile of C, and a block of its tile needs a whole SM (200 KB of shared
# memory): an H100 or H200 runs **132 tiles at a time**, a *wave*. A product of 150 tiles runs two waves — the second
# with 18 tiles and 114 idle SMs — for 1.14 waves of work. This is **wave quantization**, and lesson 11 fixed it on the
# FP32 units with **stream-K**: whole waves stay one block a tile, and the k-loops of the tiles left over are shared
# out evenly over all the SMs, a tile's pieces added up at the end. Step 21 is step 17's k-tile, unchanged, on that
# schedule. The timings come from four runs on an **H200**, each with step 17 and cuBLAS TF32 in the same process
# (the captions name the files).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_21, predictions

step = gemm_steps.get_step("warp_specialized_stream_k")
runs = lesson_21.runs()
print(step.doc.splitlines()[0])

# %% [markdown]
# ## Waves against shares
#
# Left, step 17 at 1152×3840×2048: 150 tiles (256 × 128) of 64 k-tiles (32 deep), each SM a row, time to the right.
# Right, step 21: the grid is 132 blocks, one an SM, and each takes an equal share of the 150 × 64 k-tiles — 72 or 73
# — walked from its end backwards and cut where a tile ends, so most rows hold pieces of two tiles, and most tiles lie
# on two rows: the SM that computes a tile's last k-tile adds the other's partial sums before it stores C.

# %%
lesson.show_figure(lesson_21.waves_figure(tiles=150, k_tiles=64))

# %% [markdown]
# ## The model, and the prediction
#
# If a k-tile costs the same on both kernels, the time is the busiest SM's k-tiles: step 17's ceil(tiles / 132)
# waves × k-tiles, against step 21's whole waves plus an equal share of the rest (step 11's split: where one block a
# tile keeps at least 90 % of the SMs busy, nothing is split; otherwise the last part-empty wave and one full wave
# before it are shared out). For the experiment's shapes:

# %%
SHAPES = [(1152, 3840, 2048), (2304, 2048, 8192), (6784, 1280, 3072), (3000, 3000, 3000), (4096, 4608, 4096),
          (1024, 1024, 8192), (4096, 4096, 4096)]
lesson.say(lesson_21.schedule_table(SHAPES))
prediction = predictions.get(21, "stream_k_over_step17_h200")
lesson.say(predictions.quote(prediction))

# %% [markdown]
# The ranges, per shape, are in `predictions/21.json` (and the table of the file quoted). The prediction was committed
# before the kernel first ran on a GPU; `tests/test_predictions.py` checks that against git.
#
# ## The kernel
#
# Step 17's producer and consumers, with three changes. **Work units**: `work_unit` gives a block its next piece of
# work — its data-parallel tiles first, then the last run of k-tiles left in its share — and the producer and the
# consumers walk the same units. **One ring for the walk**: the ring's counter runs on from unit to unit, so the
# producer fills the next unit's stages while the consumers finish this one. **The fixup, thread by thread**: a unit
# that stops before its tile's last k-tile writes its 128 partial sums a thread to the block's workspace slot, fences
# and raises its own flag; the finishing block's thread that holds the same elements of C waits for that flag, reads
# them from L2 and adds them, nearest block first (a fixed order: the same bits every run). No barrier between threads:
# two consumer warpgroups never wait for each other. The consumers' side (the producer's loop is step 17's, over
# `work_unit`):

# %%
lesson.show_kernel(step, start="g0 = uint32(0)")

# %% [markdown]
# ## Is it right?
#
# On the simulator the grid is at most 3 blocks. The first shape is one tile of 32 k-tiles, shared by two blocks (16
# each: the smallest share step 21 makes); the second is ragged (the copy engine zero-fills past A and B, the stores
# keep to C), 4 tiles of 17 k-tiles, split over the three blocks:

# %%
lesson.check_against_numpy(step, [(32, 64, 1024), (45, 70, 520)])

# %% [markdown]
# ## How fast: the first run against the prediction
#
# Step 21 beside step 17 and cuBLAS TF32 (`experiments/tensor_core_stream_k.py`; in this first run the stream-K build
# ran step 17 itself where nothing was split, so at 4096³ the two are one kernel):

# %%
if runs:
    lesson.say(lesson_21.verdict_table(lesson_21.verdicts(runs[0], prediction), "step 21"))
    print(lesson_21.caption(runs[0]))
    lesson.show_figure(lesson_21.speed_figure(runs[0]))

# %% [markdown]
# Five of seven inside. The two misses say where the model is too simple:
#
# * **1152×3840×2048, below.** The model counted k-tiles only. The timeline below shows what else a block of step 21
#   does here: two stores of C in the partial build this ragged shape runs (M = 1152 is 4.5 tiles), each as long as
#   several k-tiles, and a hand-over of partial sums; and blocks with the same number of k-tiles ended far apart —
#   some SMs' k-tiles ran slower (most likely waiting on L2 with every SM busy; not measured) — and the kernel ends
#   with the slowest.
# * **1024×1024×8192, below.** 32 tiles of 256 k-tiles: step 17 splits K here (split-K, lesson 17: 4 slices that a
#   second kernel adds up) and was faster — its slices are summed by a kernel that reads them all at once, while step
#   21's finishing blocks read four partial tiles one after another at the end. Since that run, step 21 leaves the
#   products step 17 splits K on to step 17.
#
# The same shapes again, in another process (`predictions/warp-specialized-stream-k-second-run.md`, written before
# it: every ratio within 4 % of the first run, 1024×1024×8192 now step 17):

# %%
if len(runs) > 1:
    lesson.say(lesson_21.repeat_table(runs[0], runs[1]))
    print(lesson_21.caption(runs[1]))

# %% [markdown]
# ## Where nothing is split: the persistent loop
#
# In both runs step 21's kernel with *no* tile split — 132 blocks walking tiles b, b + 132, … — also ran a little
# faster than step 17 at 4096³, where a tile has 128 k-tiles. A persistent block pays a tile's start once (barriers,
# tensor maps, the first copies' latency), and its store of C overlaps the next tile's first copies. A third run
# measured that alone, at whole waves, against a prediction written before it:

# %%
persistent = predictions.get(21, "persistent_over_step17_h200")
lesson.say(predictions.quote(persistent))
if len(runs) > 2:
    lesson.say(lesson_21.verdict_table(lesson_21.verdicts(runs[2], persistent), "persistent loop"))
    print(lesson_21.caption(runs[2]))

# %% [markdown]
# All inside: a few percent where tiles are short and many a block, nothing at 2048³ (one tile a block either way).
# So step 21 runs its own kernel wherever step 17 does not split K: stream-K where the last wave is part-empty, the
# persistent loop where the waves are whole.
#
# ## On the shapes `matmul` was measured on
#
# The shape suite (`gemm-steps bench --suite shapes`; its prediction, in `predictions/`, was committed before the run),
# step 21 against step 17 and cuBLAS TF32 — what `matmul(precision="tf32")` chooses from:

# %%
suite = lesson_21.suite()
if suite is not None:
    lesson.say(lesson_21.suite_table(lesson_21.suite_rows(suite)))
    print(lesson_21.caption(suite))

# %% [markdown]
# Where a part-empty wave is split, step 21 gains most (2432×1792, 140 tiles); where step 17 splits K it *is* step
# 17. Four rows missed the prediction, all below it: the three ragged shapes whose A and B are both copied into
# readable rows first (K and N odd) gained only a few percent, where the same schedule on a shape without copies
# (3000³ above) gained about a fifth; and 640³, where 15 tiles of 20 k-tiles are cut into shares and the fixup costs
# more than it saves. The other small products lose a little too: a persistent block's bookkeeping is not free where
# a tile has 8–20 k-tiles (probably; not measured apart).
#
# Were the copies what took the gain? One shape class, 288 tiles of 48 k-tiles, with nothing, B, A, and both copied —
# one change a row, in one run, its prediction (`predictions/stream-k-copies-before-run.md`) written before it:

# %%
if len(runs) > 3:
    lesson.say(lesson_21.copies_table(runs[3]))
    print(lesson_21.caption(runs[3]))

# %% [markdown]
# No: with or without copies step 21 gains about the same here, less than at 3000³ — the shorter K is what gives
# less (a tile of 48 k-tiles, against 94), and the suite's smaller gain at 3001×2999×1531 against this run's is a
# spread between two processes, larger than the few percent usual.
#
# ## Where the time goes
#
# Step 21's kernel with a timeline (`experiments/stream_k_timeline.py`: thread 0 of each block reads `%clock64` after
# each phase; one launch, no L2 flush — a timeline, not a benchmark): the median SM cycles of each phase over all
# blocks, and how far apart the blocks end:

# %%
timeline = lesson_21.timeline()
if timeline is not None:
    lesson.say(lesson_21.phase_table(timeline))
    for shape in ("1152x3840x2048", "1024x1024x8192"):
        first, median, last = lesson_21.ends_spread(timeline, shape)
        print(f"{shape.replace('x', '×')}: blocks end {first:.1f} / {median:.1f} / {last:.1f} µs after the start "
              "(first / median / last)")

# %% [markdown]
# Compare the rows with a k-tile: handing a partial tile over (the store, the fence that makes it visible GPU-wide,
# the flag) costs several k-tiles of work, and waiting for and reading one back a few more. A share not much longer
# than that spends more on the fixup than it saves, which is why step 21 never cuts a share under 16 k-tiles
# (`MIN_SHARE_K_TILES`, a value from this model, not from a sweep). The spread of the end times is the other cost: the last block, not the average,
# ends the kernel.
#
# ## Ragged K: rows off the 128-byte lines
#
# On one held-out draw (seed 20261216), `matmul(precision="tf32")` ran step 21 at 2858×16012×14460 at about two
# thirds of cuBLAS TF32 — a large product, where the waves are no excuse. Two runs took it apart, each with a
# prediction committed before it. The first (whose guess — long K with a large B — was wrong) found the same K on
# whole tiles fast, and a loss that grows with K: it is in the k-loop, not the store. The second changed one property
# at a time against that whole-tile shape (the table below; "+112" is how far past a 128-byte line each row ends
# up). What costs is the **row pitch**. The copy engine's rule is that a row of A or B starts every 16 bytes; with K = 14460 a
# row of A is 57,840 bytes long, which obeys it, but 57,840 is not a multiple of 128. L2 moves memory in 32-byte
# sectors and 128-byte lines: every 128-byte row of an A box (32 floats of one k-tile) then starts inside a sector,
# touches five sectors instead of four and two lines instead of one — for every box, every k-tile. B's rows are 512
# bytes a box row, so the same offset costs them much less. The fix is one change: before the partial build runs,
# copy A into rows of a multiple of 32 floats (zeros past K, which add nothing), so every box row starts on a line.
# The copy moves 8·M·K bytes; the kernel's time grows with M·N·K — so it pays where N is large.

# %%
strides, aligned = lesson_21.strides_run(), lesson_21.aligned_run()
if strides and aligned:
    guess = predictions.get(21, "strides_over_control_h200")
    lesson.say(predictions.quote(guess))
    lesson.say(lesson_21.strides_table(strides, guess))
    change = predictions.get(21, "aligned_a_over_shipped_h200")
    lesson.say(predictions.quote(change))
    lesson.say(lesson_21.aligned_table(aligned, change))
    print(lesson_21.caption(aligned) + "; each column: the build with A copied onto lines over the step as shipped")

# %% [markdown]
# The guess held in kind, not everywhere in size: A's rows off the lines cost step 21 about a fifth of its time, B's
# less than predicted. The copy won that back and more than paid for itself at N in the thousands (above its range
# at 4096×4096×4100), lost a little at N = 1024, and changed nothing where A was being copied anyway (K = 9999 is not
# a multiple of 4). cuBLAS TF32 lost only a few percent to the same pitch. Steps 18 and 22 gained nothing, against
# the small gain predicted: three products on the same bytes leave their k-loop less hungry for L2. So
# steps 17 and 21 copy A first where K is off the lines, N ≥ 2048 and the product is large
# (`tma_tiles.aligned_a_pays`); the held-out set was then drawn again (lesson 25).
#
# ## The verdict
#
# Stream-K does on the tensor cores what it did on the FP32 units: where the last wave is part-empty, step 21 is
# faster than step 17 by up to the part of a wave it saves, less the fixup and the slowest SM; where the waves are
# whole, the persistent loop gains a few percent; where few tiles have a long K, step 17's split-K stays. It does not
# close the gap to cuBLAS TF32 at the squares (lesson 17's deep dive: the k-loop's pace and the clock, not the
# schedule). Left: the copied shapes' small gain, the persistent loop's loss on the smallest products, and the tile
# shapes a skinny product needs (M under 128 wastes most of a 256-row tile). The 3xTF32 build is step 22.
#
# Deep dive: [step 11's fixup protocol](deep_dives/11_fixup_protocol.ipynb) — the flags, fences and the backward walk
# this kernel keeps.
#
# Next: [Lesson 22: the default precision on stream-K](22_warp_specialized_3xtf32_stream_k.ipynb), step 18 on this schedule.
