# %% [markdown]
# # Deep dive 18 — What holds the 3xTF32 step: its work taken away, and its joules
#
# Step 18 computes C = A·B to float32 accuracy from three TF32 tensor-core products a k-step. The tensor core's own
# share of that work would allow close to a third of cuBLAS TF32's speed, and the course's issue asked for 2.5×
# cuBLAS SGEMM at 4096³ and 8192³. Step 18 runs below that (lesson 18), and six changes to it, each measured against
# it in one run with its prediction committed before, moved it by a few percent at most (experiments/README.md).
# So this deep dive stops changing the kernel and asks two other questions, each answered on an H200:
#
# 1. **What does each part of the work cost?** Take it away and time what is left.
# 2. **At 8192³, where the board runs at its power limit, what does a product cost in joules?**

# %%
from gemm_steps.course import lesson, lesson_18
from gemm_steps.course.timings import load_run

ablation = load_run(lesson_18.ABLATION_RUN)
lesson.say(lesson_18.ablation_table(ablation))
print("cuBLAS TF32 in the same run: " + ", ".join(f"{size} {ratio:.2f}×" for size, ratio in
                                                  lesson_18.tf32_over_sgemm(ablation).items()) + " cuBLAS SGEMM")

# %% [markdown]
# ## 1. The work, taken away
#
# `experiments/kernels/step_18_ablation.py` is step 18's kernel (the same PTX, line for line) with three switches.
# Off, each removes one part of the work: the producer warpgroup's split of A into big and small parts in shared
# memory; the consumers' split of B's values in registers; and their 64 adds a k-tile of the fresh sum into the
# running total. A build with a part off computes a **wrong C** — the benchmark says so — so only its time means
# anything. The consumers' two switches, in the kernel's k-loop:

# %%
_ = lesson.show_file("experiments/kernels/step_18_ablation.py", start="# Bᵀ's fragments of the k-tile",
                     stop="b_big[s][q] = b_small[s][q] = b_big_scaled[s][q]")
_ = lesson.show_file("experiments/kernels/step_18_ablation.py", start="if FOLD:", stop="total = fresh")

# %% [markdown]
# The table above is one run (`experiments/step_18_ablation.py`, both cuBLAS beside it); the prediction, written
# before it, is `predictions/step-18-ablation-before-run.md`. The same as a picture:

# %%
lesson.show_figure(lesson_18.ablation_figure(ablation))

# %% [markdown]
# The producer's split of A is the largest single part; the consumers' two parts together cost nearly as much. The
# parts do not add up: with all three gone the kernel gains less than the sum of their gains, because by then its
# three products a k-step run as fast as cuBLAS TF32 runs its one (three times its × SGEMM above, against cuBLAS
# TF32's printed under the table) — faster at 2048³ and 4096³, level at 8192³: there is little room left above that.
# The control (all switches on) lands on step 18, so the switches themselves cost nothing.
#
# **The waits are not it.** A consumer's k-tile has a stretch in which its products are not running: it adds the
# fresh sum, waits for the next stage, loads B's values, splits them. Two of those are waits. Reading the next
# k-tile's B values while this k-tile's products still run takes both out of the stretch
# (`experiments/prefetch_b.py`; the SASS shows the loads where they were meant to go):

# %%
for shape, ratio in lesson_18.prefetch_ratios(load_run(lesson_18.PREFETCH_RUN)).items():
    print(f"{shape.replace('x', '×'):16s} reading B early, over step 18: {ratio:.3f}")

# %% [markdown]
# Nothing moved: the cost is the work itself, not waiting for it.
#
# ## Split A once
#
# Every block of a tile-row splits the same rows of A — at 4096³, 32 blocks split each of them. A first kernel can
# split A once into a workspace of twice A's size (big parts, then small parts), and the producer then only copies
# both parts with the copy engine (`experiments/presplit_a.py`, the same bits as step 18). It pays for the pass over
# A and for 16 KB more copied a k-tile. Timed twice, step 18 first and then last:

# %%
lesson.say(lesson_18.over_step_18_table([load_run(name) for name in lesson_18.PRESPLIT_RUNS], lesson_18.BOTH_ORDERS,
                                        ["presplit_a"]))

# %% [markdown]
# Where the clock holds (4096³ and the 5120 × 2560 × 4096 product) it is faster; at 2048³ the extra pass over A is
# too large a share of a short product. At 8192³ it is no faster — and its clock fell well below step 18's, in both
# orders. It did more work per clock; the board, at its 700 W limit, lowered the clock until the speed was the same.
#
# ## Or load A without the copy engine
#
# In step 18 the copy engine writes A's k-tile into shared memory, and the producer reads it back to split it: with
# the parts it writes, 64 KB of shared-memory traffic a k-tile for A. Its 128 threads can instead load A from global
# memory into registers a k-tile ahead and write only the two parts — 32 KB less, and no first kernel
# (`experiments/producer_loads_a.py`, the same bits as step 18; its prediction, written before the run, is
# `predictions/producer-loads-a-before-run.md`). Timed twice, step 18 first and then last, then (`--ablation`) with
# the split's arithmetic or the proxy fence taken away, and (`--stores`) the stores of the parts (a wrong C, times
# only):

# %%
lesson.say(lesson_18.over_step_18_table([load_run(name) for name in lesson_18.PRODUCER_LOADS_A_RUNS],
                                        lesson_18.BOTH_ORDERS, ["producer_loads_a"]))
lesson.say(lesson_18.over_step_18_table([load_run(name) for name in lesson_18.PRODUCER_LOADS_A_ABLATION_RUNS],
                                        ["--ablation", "--stores"]))

# %% [markdown]
# The bytes were not it: the short 2048³ product gained, but 4096³ only a percent or two, where the prediction asked
# for three to ten, and the two larger products nothing. Nor was the split's arithmetic: taking it away moved
# nothing. The proxy fence each thread needs before the tensor core may read what it wrote costs a few percent, and
# the threads' stores themselves a few more (at 4096³, where every kernel here ran at the same clock) — presplit's
# product kernel, whose producer is one thread that only starts copies, copied more bytes and ran faster than all of
# them (worked out after its run, in `experiments/presplit_a.py`'s docstring). Without the stores the tensor core multiplies the zeros left in A's buffers, and at 8192³ that build kept
# its full clock where the others fell under the power limit: how much power a product draws depends on the
# numbers in it, so that ratio says nothing about the stores. (Its first run, without zeros in the buffers, read
# stale shared memory, whose NaN sent every tile down the slow path for specials; the script's docstring says so.)
#
# ## 2. The joules
#
# So at 8192³ speed is work per joule. `experiments/step_18_energy.py` runs each kernel back to back for three
# seconds while NVML samples the board's power and the SM clock, and divides: TF32 products a joule (three a 3xTF32
# FLOP, one a TF32 FLOP). Its prediction, committed before the run:

# %%
_ = lesson.show_file("predictions/step-18-energy-before-run.md", start="| kernel (8192³", stop="| none of the three")

# %%
energy = load_run(lesson_18.ENERGY_RUN)
lesson.show_figure(lesson_18.energy_figure(energy))
lesson.say(lesson_18.energy_table([load_run(name) for name in lesson_18.ENERGY_RUNS]))
for r in lesson_18.energy_rows(energy):
    per_joule = "" if r.products_per_joule is None else f", TF32 products a joule {r.products_per_joule:.3f}× cuBLAS TF32's"
    print(f"{r.name:28s} {r.tflops:6.1f} TFLOPS at {r.mhz:5.0f} MHz, {r.watts:4.0f} W{per_joule}")
print(f"the issue's target at this power needs "
      f"{energy['summary']['target_tf32_products_per_joule_over_cublas_tf32']:.3f}× cuBLAS TF32's products a joule")

# %% [markdown]
# The figure and the lines under it are the first run; the table beside them adds the second, with the kernels in the
# opposite order (its prediction, `predictions/step-18-energy-reverse-before-run.md`, was written between the two).

# %% [markdown]
# Every tensor-core kernel sits at the board's limit, so its speed is its products a joule. Step 18 computes fewer
# of them per joule than cuBLAS's TF32 kernel, in both runs; with the splits and adds taken away, more — about as
# many as the target needs: a little short of it in the first run, a little over in the second, where that
# build ran first, at a higher clock (the board's temperature was not recorded). So the target at 8192³ asks a 3xTF32 kernel to spend less
# energy on each TF32 product than cuBLAS's own TF32 kernel does, and to do its splits and adds almost for free.
# This design, with them, is far from that.
#
# ## Verdict
#
# At 4096³ the step is held by the work of splitting and adding, mostly the producer's split of A; splitting A once
# recovers part of it. At 8192³ it is held by energy: work moved to fewer clocks comes back as a lower clock, and even
# with the splits and adds free the kernel would only just reach the target. What
# would move 8192³ is less energy per product — fewer bytes moved and fewer instructions issued for each — not fewer
# waits. The course's benchmark times short bursts after a warm-up, at higher clocks than this sustained load, so its
# 8192³ numbers sit a little above these. Not measured: an H100 (also 700 W, with a lower memory bandwidth).
#
# Back to [Lesson 18](../18_warp_specialized_3xtf32.ipynb).
