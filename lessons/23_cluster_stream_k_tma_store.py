# %% [markdown]
# # Lesson 23 — Step 21 as cuBLAS runs it: persistent clusters, and C stored by the copy engine
#
# Lesson 17's "What cuBLAS runs" took cuBLAS's TF32 kernel apart on an H200: a persistent grid of 132 blocks, each a
# producer and two consumer warpgroups — so far step 21 (lesson 21) — but launched in **clusters of 2** whose copies of
# A are **multicast** (`UTMALDG…MULTICAST`), and an epilogue that stores C **through shared memory with the copy
# engine** (256 `UTMASTG` in its SASS). Step 20 (lesson 20) tried the cluster on step 17, one tile a block; step 23
# puts both on step 21's persistent grid. Each of the two changes was first measured alone, as an experiment with its
# prediction written before it; then the step, with its own prediction, in the course benchmark and the shape suite.
# A third thing cuBLAS does turned up after that, by asking how it reads its inputs: its copies **round A and B to
# TF32**. Every run is on an **H200** with step 21 and cuBLAS TF32 in the same process (the captions name the files).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_20, lesson_23, predictions

step = gemm_steps.get_step("cluster_stream_k_tma_store")
print(step.doc.splitlines()[0])

# %% [markdown]
# ## Pairs of tiles on clusters of two
#
# Step 21's schedule runs unchanged with a **cluster** in the place of a block and a **pair** of neighbouring tiles
# of one tile-row in the place of a tile: 66 clusters walk the pairs, and both blocks of a cluster walk the same units
# (whole pairs, or runs of a pair's k-tiles where stream-K splits), so their rings stay in step. At every k-tile, block
# r loads half of the A tile the pair shares and the copy engine writes it into **both** blocks; each block loads its
# own B tile. A stage is free when the consumers of both blocks have read it, so its empty barrier counts the arrivals
# of the whole cluster. The picture is lesson 20's, drawn from step 23's constants:

# %%
lesson.show_figure(lesson_20.cluster_figure(step))

# %% [markdown]
# Where stream-K splits a pair's k-tiles over several clusters, block r hands its partial sums to block r of the
# cluster that finishes the pair: the same tile, the same thread, the same elements of C.
#
# ## The first change alone: the cluster
#
# One experiment gave step 21 the cluster and nothing else — the *variant* (`experiments/kernels/cluster_stream_k.py`).
# Its prediction, written before the run — the ranges per shape are the table's "predicted" column, the quoted sentence
# its reason why the shapes where stream-K splits might lose — and two runs in two processes:

# %%
clustered = predictions.get(23, "cluster_stream_k_over_step21_h200")
lesson.say(predictions.quote(clustered))
clustered_runs = lesson_23.cluster_stream_k_runs()
for i, run in enumerate(clustered_runs, 1):
    print(f"run {i}: " + lesson_23.caption(run))
lesson.say(lesson_23.cluster_stream_k_table(clustered_runs, clustered))

# %% [markdown]
# "run 1" and "run 2" are the variant's speed over step 21's in each run. Every ratio is inside its range, and the
# gain is the small one step 20 showed over step 17: 1 % at 4096³, 2–3 % at 8192³, about nothing where stream-K splits.
# The clock column says where the rest of the gap to cuBLAS is: at 4096³ all three run at the top clock and the
# variant is 3 % slower than cuBLAS per clock; at 8192³, under the 700 W limit, cuBLAS's clock is ~6 % higher and the
# variant is as fast as cuBLAS per clock.
#
# ## The second change alone: the TMA store
#
# A consumer of step 21 writes its 128 results straight to C, 128 scalar stores a thread. cuBLAS hands them to the
# copy engine instead. The stages cannot hold C — the producer is already filling them with the next unit's k-tiles —
# so each consumer warpgroup has three small buffers of its own after the stages and stores its part of a tile in 16
# **chunks** of 16 rows × 64 columns:
#
# | chunk j | the warpgroup's 128 threads | the one thread that issues copies |
# |:--|:--|:--|
# | write | put their 8 sums of it in buffer j mod 3, fence | waits until chunk j − 2's store has read its buffer |
# | meet | the warpgroup's named barrier | the same barrier |
# | store | go on to chunk j + 1 | asks the copy engine to store chunk j (two 16 × 32 boxes), clipped to C |
#
# (The buffers are 128-byte swizzled, as the stages are, so the threads' writes hit no bank twice.)
#
# The experiment (`experiments/cluster_stream_k.py --tma-store`, one change from the variant above), its prediction
# written before the run, and two runs:

# %%
tma_store = predictions.get(23, "tma_store_over_cluster_stream_k_h200")
lesson.say(predictions.quote(tma_store))
lesson.say(lesson_23.tma_store_persistent_table(lesson_23.tma_store_persistent_runs(), tma_store))

# %% [markdown]
# Up to 1 % faster everywhere, inside every range, the same in both runs; on step 20, one tile a block, the same
# store had gained nothing (lesson 20: nothing ran while it drained). Each gain alone is within what two processes can
# differ by on one kernel (up to ~4 %), but both were the same in both runs, and together they are 2–4 % at the
# squares: step 23 is the two together.
#
# ## The kernel
#
# Step 21's kernel with the cluster's pieces (`cluster_rank`, `copy_tile_multicast`, `mbarrier_arrive_cluster`, the
# cluster barriers at the start and the end) and the epilogue above. The epilogue, from where a finishing unit has
# its sums (`gemm-steps diff 21 23` shows every change):

# %%
lesson.show_kernel(step, start="# The epilogue:", stop="cluster_sync()  # the peer")

# %% [markdown]
# The copy engine clips a box to C and reads zeros past A and B, so the same kernel runs every shape whose rows it can
# read and write (a multiple of 16 bytes): its partial-tile build counts the last, partial k-tile too, and where the
# tile-columns are odd the last pair's second tile lies wholly past C — its copies bring zeros and its store writes
# nothing. Where the copy engine cannot write C (N not a multiple of 4), step 21 runs the product.
#
# ## Is it right?
#
# On the simulator (32 × 64 tiles, a grid of two clusters): a whole pair of tiles, and a ragged product whose three
# tile-columns make two pairs, the second half past C:

# %%
lesson.check_against_numpy(step, [(32, 128, 96), (45, 180, 70)])

# %% [markdown]
# ## How fast: the first benchmark against the prediction
#
# The prediction for the step (`predictions/step-23-before-run.md`), written before the step first ran, then the
# course benchmark (`gemm-steps bench`: every step and both cuBLAS in one run; the 512³–2048³ ranges are in the file).
# This is step 23 with the first two changes, before its copies rounded (the last section):

# %%
bench_prediction = predictions.get(23, "step23_over_step21_bench_h200")
lesson.say(predictions.quote(bench_prediction))
bench = lesson_23.bench()
if bench:
    print(lesson_23.caption(bench))
    lesson.say(lesson_23.bench_table(bench, bench_prediction))

# %% [markdown]
# Every ratio inside its range: at the squares step 23 is 2 % faster than step 21, 0.97× cuBLAS TF32 at 4096³ and
# 0.96× at 8192³ — the course's fastest TF32 step, and still short of its target (≥ 1.00×). The clocks say where the
# gap is. At 4096³ all three kernels run at the top clock, so step 23 is 2.5 % slower than cuBLAS per clock (the
# Nsight Compute run below looks at why). At 8192³ every kernel is held back by the board's 700 W limit, and
# step 23's clock is 5 % below cuBLAS's: per clock it is as fast (1.01×), but it spends more energy per FLOP. Below
# 4096³ there are fewer pairs than clusters, and step 23 is a little slower than step 21 (0.95–0.99×).
#
# ## On the shape suite
#
# The shape suite (`gemm-steps bench --suite shapes`, recorded as the H200's dispatch table), against the rest of the
# same prediction, shape by shape — ragged and wave-boundary shapes where step 21 runs its own kernel, then shapes
# where both run step 17's split-K or step 21 itself, then skinny ones:

# %%
suite_prediction = predictions.get(23, "step23_over_step21_suite_h200")
lesson.say(predictions.quote(suite_prediction))
suite = lesson_23.suite()
if suite:
    print(lesson_23.caption(suite))
    lesson.say(lesson_23.suite_table(lesson_23.suite_rows(suite, suite_prediction)))

# %% [markdown]
# Sixteen of seventeen inside. The miss is above the range: 2432×1792×4096 (140 tiles, 70 pairs split over 66
# clusters) ran 7.5 % faster than step 21 — more than the cluster and the store gave anywhere else; why is not
# measured. Where both steps hand the product to step 17's split-K, or step 23 to step 21 (N not a multiple of 4),
# the ratio is 1.00 as it must be: the same kernel. 4096×64×8192 is inside for that reason too, not the model's
# (its 16 tiles go to step 17's split-K); 8192×128×4096, one tile-column, runs pairs whose second tile is empty and
# loses 4 %.
# `matmul(precision="tf32")` now picks step 23 wherever it measured fastest (`gemm-steps explain M N K --precision
# tf32` says why).
#
# ## Beside cuBLAS, under Nsight Compute
#
# Is the gap to cuBLAS in the launch, the loop or the clock? Step 23, step 21 and cuBLAS TF32 under Nsight Compute
# (`scripts/reference_kernels.py`: one launch each, its launch, instructions and L2 bytes; then each back to back for
# 3 s, its SM clock and board power), with the prediction written before the run
# (`predictions/step-23-nsight-before-run.md`, first committed at `c56b823` under another name, before the run):

# %%
lesson.show_file("predictions/step-23-nsight-before-run.md", start="1. L2 bytes", stop="21's.")
reference = lesson_23.reference()
if reference:
    print(lesson_23.caption(reference))
    for size in (4096, 8192):
        print(f"{size}³:")
        lesson.say(lesson_23.reference_table(lesson_23.reference_rows(reference, size)))

# %% [markdown]
# Three of four inside; the clock under load at 8192³ missed, 7.7 % below cuBLAS's where 2–7 % was predicted (6.6 % at
# 4096³). The launch is now cuBLAS's, to the registers. The loop is not: step 23 executes 16–19 % more instructions
# per FLOP than cuBLAS and moves 7–9 % more L2 bytes (the multicast took an eighth to a fifth off step 21's). Under
# Nsight Compute, where every kernel runs at one fixed clock, step 23's launch took *fewer* cycles than cuBLAS's at
# both sizes — at that clock it is not slower; in the benchmark, at the top clock, it was 2.5 % slower at 4096³ (why
# the two differ is not measured: a top clock makes every L2 and DRAM wait cost more cycles, and step 23 waits on more
# bytes). Back to back, all three hit the board's 700 W: step 23 spends 5–6 % more energy per FLOP than cuBLAS (its
# extra instructions and bytes), so the power limit gives it a lower clock. Closing the gap means fewer instructions
# and bytes per FLOP in the loop, not a different launch.
#
# ## The third change: copies that round to TF32
#
# Where did the extra instructions come from? Per `HGMMA`, cuBLAS's loop executes 4 shared-memory loads (`LDS`) and
# nothing that could round them; step 23's executes the same 4 loads and 8 instructions more — the rounding of B's
# fragments to TF32, two instructions an element. So how does cuBLAS turn its float32 inputs into TF32? A probe
# (`experiments/tf32_operand_rounding.py`): one 4096³ product where every element of C is 1.0 times a value that
# truncation and the two ways of rounding send to different places — once in A, once in B — and the error of each
# kernel on ordinary random inputs:

# %%
rounding = lesson_23.operand_rounding()
if rounding:
    print(lesson_23.caption(rounding))
    lesson.say(lesson_23.operand_rounding_table(rounding))

# %% [markdown]
# cuBLAS reads both operands **rounded** to the nearest TF32 value (a tie to the even one). Steps 15–23 read A
# **truncated**: A's tile goes from the copy engine straight to the tensor core, which drops the 13 low bits. That is
# all of their 1.6× larger error — step 12, which rounds both itself, has cuBLAS's. (Predicted, before the run: cuBLAS
# truncates both. Wrong.) How can cuBLAS round without an instruction? In its copies: a **tensor map's element type**
# can be `TFLOAT32` instead of `FLOAT32`, and then the copy engine rounds every float as it loads it. (cuBLAS's maps
# were not read; the run below shows such a map gives exactly cuBLAS's reading and error.) Step 23's maps do that now
# (`tensor_map_2d(…, tf32=True)`), and B's fragments go to the `wgmma` as loaded — two changes, timed each alone in
# one run (`experiments/tf32_copies.py`), each against its prediction written before the run. (Steps 17 and 21 got
# the same maps afterwards: their error became cuBLAS's, their speed 0.99–1.02× the float32 maps'.)

# %%
copies_prediction = predictions.get(23, "tf32_copies_over_step23_h200")
plain_b_prediction = predictions.get(23, "plain_b_over_tf32_copies_h200")
lesson.say(predictions.quote(copies_prediction))
copies_run = lesson_23.tf32_copies_run()
if copies_run:
    print(lesson_23.caption(copies_run))
    lesson.say(lesson_23.tf32_copies_table(copies_run, copies_prediction, plain_b_prediction))

# %% [markdown]
# The error is now cuBLAS's to the last digit. The speed moved more than predicted: the maps alone made step 23 1.5–3 %
# faster, where nothing was expected — at 8192³ its clock rose by 44 MHz under the same 700 W, and at 4096³, where
# the clock was at its top either way, the gain is not explained. Dropping B's 8 instructions an `HGMMA` then added
# 0–1 %, inside its range: the loop was not short of issue slots. Together: cuBLAS's speed at 4096³.
#
# The course benchmark with step 23 so built, against the prediction written before it:

# %%
final_prediction = predictions.get(23, "step23_tf32_copies_bench_h200")
lesson.say(predictions.quote(final_prediction))
final = lesson_23.bench_tf32_copies()
if final:
    print(lesson_23.caption(final))
    lesson.say(lesson_23.bench_table(final, final_prediction))

# %% [markdown]
# Every ratio inside its range. Step 23 is 7 % faster than step 21 at the squares, as fast as cuBLAS TF32 at 4096³
# and 2 % short of it at 8192³, where its clock is 2.5 % below cuBLAS's under the power limit — the target (≥ 1.00×
# at both) is met at one size of two, on one GPU. One lead tried since: B's box is 8 floats wider than the tile so
# that the consumers' fragment loads do not conflict; with 4 or none, fewer bytes move and the clock at 8192³ can
# rise, but the conflicts cost more — slower at every size, in two runs (`experiments/b_stride.py`).
#
# And 3xTF32? The same cluster on step 22's kernel (`experiments/cluster_3xtf32.py`, retired at `525e52b`; one H200
# run, its prediction written before it) changed nothing: 0.99–1.01× that kernel at all four shapes, inside the
# predicted range — three products a k-step on the same bytes leave L2 little to save. And that kernel is 0.90–0.91× step 18's at the squares
# (why step 22 hands them to step 18, lesson 22). So step 23 has no 3xTF32 build: the course's 3xTF32 target (≥ 2.5×
# cuBLAS SGEMM) needs a faster 3xTF32 k-tile first, not a cluster — and at 8192³ one that spends fewer joules a product
# ([deep dive 18](deep_dives/18_what_holds_3xtf32.ipynb)).
#
# Try it: [`exercises/tma_store.py`](../exercises/tma_store.py) — this epilogue alone: one warpgroup storing a tile
# of C through three buffers (`gemm-steps exercise check tma_store`, on the simulator: it names a buffer written while
# a store may still read it, a store issued before its chunk was fenced and met, and a block that ends with a store
# still reading).
#
# Next: [Lesson 24: the FP32 contract](24_fp32_contract.ipynb), what "FP32" promises.
