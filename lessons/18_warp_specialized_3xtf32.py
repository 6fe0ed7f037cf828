# %% [markdown]
# # Lesson 18 — 3xTF32 on the warp-specialized design: the producer splits A
#
# Step 17 runs TF32 at close to cuBLAS TF32's speed, with TF32's accuracy. Step 14 has float32's accuracy from three
# TF32 products per product (lesson 13's split), but feeds the tensor core the Ampere way: every thread copies, every
# thread splits, and the block meets at `bar.sync` every k-tile. Step 18 puts step 14's arithmetic on step 17's
# design. The timings come from the course benchmark (all 18 steps and both cuBLAS in one H200 run), the builds from
# `experiments/specialized_3xtf32_bench.py`, the accuracy from lesson 24's run: each table names its file.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_18, lesson_24, predictions

warp_specialized = gemm_steps.get_step("warp_specialized")
step18 = gemm_steps.get_step("warp_specialized_3xtf32")
run, builds = lesson_18.bench_run(), lesson_18.builds_run()
print(step18.doc.splitlines()[0])

# %% [markdown]
# ## What changes from step 17
#
# `wgmma` reads A's tile from shared memory, so A's big and small TF32 parts must *be* in shared memory before the
# tensor core reads them. Someone has to split the tile after the copy engine lands it and before the consumers
# multiply. Step 17's producer warpgroup had 127 idle threads: now all 128 split. A ring stage gets a third barrier:
# **full** (the bytes landed) → **ready** (A is split) → **empty** (the consumers are done with it). Each barrier
# is arrived on by one role and waited for by the next:

# %%
lesson.show_figure(lesson_18.ring_figure(step18))
for b in lesson_18.barriers(step18):
    print(f"{b.name:>5}[s] (barrier {b.index}, {b.count} arrivals): arrived on by {b.arrives}; "
          f"waited for by {b.waits}")

# %% [markdown]
# The producer's loop splits k-tile t − SPLIT_BEHIND and then copies k-tile t, so the split never waits for bytes
# that were only just requested. The consumers run three `wgmma` per k-step — small·big, big·small, then big·big —
# into *one* fresh accumulator: the small parts carry a factor 2^11, and so does B's big part in the big·big
# product, so all three products share one scale. After each k-tile the fresh sum joins a running float32 total,
# as in step 14. Two sets of 64 accumulators fit in a consumer's registers after `setmaxnreg` (step 17's hand-off);
# step 14's three sets spilled.
#
# ## The prediction
#
# Written before the run in `experiments/specialized_3xtf32_bench.py`'s docstring, from the first build's timing
# and two counts, and committed before every shipped run of the step (`predictions/18.json`; the commit that added
# it also reports, in its message, a first H200 timing of the step that no shipped file holds):

# %%
p = predictions.get(18, "vector_split")
lesson.say(predictions.quote(p))
low, high = p.predicted["tflops"]
model = lesson_18.model(warp_specialized, step18, run)
for part, n in lesson_18.shared_bytes(step18).parts.items():
    print(f"{part}: {n:,} bytes")
print(f"{model.shared_bytes:,} bytes in the {model.tensor_clocks:,.0f} clocks the tensor core needs: "
      f"{model.shared_per_clock:.0f} bytes a clock (the SM serves {model.shared_limit}; the docstring counted "
      f"≈ {p.model['shared_bytes_per_clock_at_full_rate']})")

# %% [markdown]
# The shared-memory count above is the docstring's, redone from the step's constants (the copy engine writes B's
# padded copy box, wider than the columns the consumers read): at the tensor core's full rate shared memory would
# be busy every clock. The prediction itself is 120–130 TFLOPS if the producer's split stays off the critical path:
# the tensor core's clocks a k-tile (above) plus the consumers' unoverlapped bookkeeping.
#
# ## The kernel
#
# The producer's branch: split k-tile t − SPLIT_BEHIND, arrive on *ready*, then copy k-tile t. The whole kernel:
# `step18.source()`, or `gemm-steps diff 17 18`.

# %%
lesson.show_kernel(step18, start="if warpgroup == CONSUMERS:", stop="else:  # a consumer warpgroup")

# %% [markdown]
# The consumers wait for *ready*, not *full*; the rest of their loop is step 14's arithmetic:

# %%
lesson.show_kernel(step18, start="for u in range(k_tiles):", stop="warpgroup_commit()")

# %% [markdown]
# ## Is it right?
#
# On the simulator (`setmaxnreg` is a no-op there; its tiles are 32×64), with one tile whose 8 k-tiles fill every
# stage of the ring twice, a ragged shape whose K and N are multiples of 4 (the copy engine reads A and B: it runs on
# the step's partial-tile build, every tile in one launch, as step 17's does) and one whose N is not: there, as in
# step 17, a product of at most 200 rows, like this one, reads B by its rows mod 4 (the `B_ROWS_MOD_4` build: four
# tensor maps, one a residue of B's rows, each a pitch the copy engine can read; 1.12–1.61× a copy of B first at
# M = 64–200 on an H200), and a product of more rows copies B into rows the copy engine can read first:

# %%
lesson.check_against_numpy(step18, [(32, 64, 256), (45, 68, 20), (45, 70, 20)])

# %% [markdown]
# ## How fast
#
# Step 18 beside step 14 (the same arithmetic, the old design), step 17 (the same design, TF32) and both cuBLAS,
# from one run, with each record's SM clock:

# %%
lesson.say(lesson_18.speed_table(run))

# %% [markdown]
# ## Where tiles are few: split-K
#
# One block computes one 128×128 tile over all of K. A product with fewer full tiles than the GPU has SMs leaves SMs
# idle for the whole k-loop, and a K-heavy one leaves them idle for a long time. There the launch gets a third grid
# dimension of K slices (the step's `slices`: as many as fill the SMs once, each at least `MIN_SLICE_K_TILES`
# k-tiles long, where the k-tiles a block saves outweigh the second kernel's launch and the slices' traffic,
# `split_pays`): slice z computes its share of every tile's k-tiles into a workspace, and a second kernel,
# `add_slices_kernel`, adds the slices in a fixed order into C — recomputing, as SGEMM does, any sum that comes out
# inf or NaN. Where the tiles fill the SMs there is one slice and nothing changes. The shape suite on the same H200
# before and after, at every shape of the suite where the policy splits K:

# %%
shapes_before, shapes_after = lesson_18.shapes_runs()
split = lesson_18.split_k(step18, shapes_before, shapes_after)
lesson.say(lesson_18.split_k_table(split, shapes_before, shapes_after))
print(f"at the suite's other shapes (one slice) step 18's speed moved by at most {split.elsewhere:.0%} "
      f"between the two runs")

# %% [markdown]
# The K-heavy shapes went from about SGEMM's speed, or well below it, to about twice it: those SMs had been idle.
# The small cubes gained less: their slices are short (k-tiles over slices in the table).
#
# ## What the builds said
#
# The step was chosen from builds timed in one run. The first build split one float at a time in a rolled loop:
# a chain of dependent shared-memory loads and stores per thread, the producer's split on the critical path. The
# split's *form* (16-byte vectors, unrolled) and its *distance* behind the copies mattered; giving the copies a warp
# of their own and moving registers between the roles did not help much:

# %%
lesson.say(lesson_18.builds_table(builds))

# %% [markdown]
# ## Does it keep the FP32 contract?
#
# Lesson 24's contract (error against ‖|A|·|B|‖, every adversarial input class at every K, the special values), from
# its H200 run:

# %%
fp32 = lesson_24.load()
acc = lesson_18.accuracy(fp32, lesson_24.verdicts(fp32), lesson_24.specials_kept(fp32))
print(f"step 18 kept the contract at {acc.kept} of {acc.of} (class, K) pairs; worst error "
      f"{acc.worst:.2f} × the bound ({acc.worst_class}, K = {acc.worst_K}); SGEMM's inf/NaN pattern at "
      f"all {acc.specials} special inputs: {acc.specials_kept}")

# %% [markdown]
# ## The verdict
#
# Issue 24's target for 3xTF32 on the final design is a multiple of cuBLAS SGEMM at 4096³ and 8192³, same run.
# Against it, against the prediction, and with the SM clocks of the step and of SGEMM:

# %%
v = lesson_18.verdict(run)
for size, q in v.sizes.items():
    print(f"{lesson.size_label(size)}: {q.tflops:.1f} TFLOPS (predicted {low}–{high}) = {q.vs_sgemm:.2f}× cuBLAS "
          f"SGEMM ({'met' if q.met else 'not met'}), {q.vs_step14:.2f}× step 14; SM clock {q.mhz:.0f} MHz "
          f"median, {q.mhz_min:.0f} slowest launch (SGEMM {q.sgemm_mhz:.0f})")
print(f"target {v.target}× at both sizes: {'met' if v.met else 'not met'}")
for b in lesson_18.step17_third_shares():
    print(f"worked out after the run, {b.gpu} ({b.file}): step 18 / (step 17 / 3) = "
          + ", ".join(f"{lesson.size_label(s)} {share:.1%}" for s, share in b.sizes.items()))

# %% [markdown]
# The step ran below the predicted 120–130 TFLOPS at both sizes. The last lines were worked out after the run: step
# 17's TF32 speed / 3. A 3xTF32 k-tile is three TF32 k-tiles of the tensor core's work, so it is tempting to call
# that a ceiling — an earlier version of this lesson did — but it is not one: step 17 does not keep its own tensor
# cores busy every clock, so a third of its speed does not bound step 18, and on the H100 step 18 ran faster than
# it at 4096³. At 4096³ the step meets the target. At 8192³ it does not, and the clocks say what changed: cuBLAS
# SGEMM runs on the FP32 units at full clock, while the tensor-core kernels at 8192³ run under the H200's 700 W
# power limit at lower SM clocks (the slowest launch far lower still; step 17 and cuBLAS TF32 drop there too).
#
# ## Where the time goes
#
# Which of the prediction's counts holds the step? Nsight Compute on an H100 (`experiments/results/
# ncu-steps-17-18-nvidia-h100.txt`, one 4096³ launch of steps 17 and 18) cannot settle the shared-memory one: its
# shared-memory metric, `l1tex__data_pipe_lsu_wavefronts_mem_shared`, counts the wavefronts of the load/store
# unit's pipe — the threads' own shared loads and stores (the producer's split, the consumers' B fragments). The
# `wgmma`'s reads of A and the copy engine's writes do not go through that pipe, and they are most of the bytes
# counted above, so that metric below its peak does not show shared memory idle. So, as in lesson 17, the GPU's
# clock: a debug copy of the kernel (`experiments/kernels/
# warp_specialized_3xtf32_timeline.py`, step 18 before split-K — the consumers' loop in the shipped order — with
# `%clock64` writes, six events per role and k-tile) records when each role reaches each point of its loop. Under
# each consumer warpgroup its wgmma windows: from its fragments split (the first wgmma is issued next) to the
# `wait_group 0` that ends them. At the bottom, the stretches when neither consumer has a wgmma in flight:

# %%
timeline = lesson_18.timeline_run()
lesson.show_figure(lesson_18.timeline_figure(timeline))
t = lesson_18.timeline_numbers(step18, timeline, run)
lesson.say(lesson_18.timeline_table(t, timeline))
print(f"a k-tile: {t.period:,.0f} clocks in the timeline build ({t.implied_tflops:.0f} TFLOPS if every SM "
      f"ran so), {t.shipped_period:,.0f} in the shipped kernel (its {t.shipped_tflops:.1f} TFLOPS at "
      f"{t.size}³); the tensor core needs {t.tensor_clocks:,.0f} at its dense TF32 rate")
print(f"the producer waits {t.producer['wait_full']:,.0f} clocks for a k-tile's bytes, then splits it in "
      f"{t.producer['split']:,.0f}; the bytes land {t.producer['landed_after_issue']:,.0f} clocks after it "
      f"issued their copies")

# %% [markdown]
# The clock writes slow the recorded blocks (the build's k-tile is longer than the shipped kernel's), but the order
# of operations is the shipped one and the picture is plain. Each consumer spends about half of its k-tile with none
# of its own wgmma in flight: adding the fresh sum to the total and releasing the stage, waiting for *ready*,
# loading and splitting B's fragments — serial work of its own threads. Two consumers would hide each other's
# serial stretches only if they alternated exactly; they do not, and for about a quarter of the time neither has
# a wgmma in flight. The tensor core idles then, whatever shared memory could serve: that is the measured limit. The
# timeline alone does not say whether shared memory would hold the step back once those stretches are gone; the
# ablation below does — with the split work taken away the kernel ran its three products faster than cuBLAS TF32 runs
# its one. Part of the wait for *ready* is the producer's own: it too waits for the bytes before it can split them.
#
# ## What is left
#
# **What each part costs.** Instead of one more change, take parts of the work away and time what is left
# (`experiments/step_18_ablation.py`: this step's kernel with switches, a wrong C, times only; its prediction written
# before the run). Without the producer's split of A the kernel runs about a sixth faster at every size; without the
# consumers' split of B and their adds into the total, nearly as much; without all three, its three products a
# k-step run as fast as cuBLAS TF32 runs its one. The split's work, not the waits, is what the step pays for: reading
# the next k-tile's B values while this one's wgmma run (`experiments/prefetch_b.py`), which takes the *ready* wait
# and the loads out of the consumers' stretch, moved nothing.
#
# **Split A once.** Every block of a tile-row splits the same A. A first kernel can split it once into a workspace
# and the producer copy both parts (`experiments/presplit_a.py`, timed twice, in both orders): the same bits, faster
# at 4096³ where the clock holds, slower at 2048³ where the extra pass over A is a tenth of the time, and no faster
# at 8192³ — there it does more work per clock and the board, at its power limit, lowers the clock until the speed is
# the same. Nor is it the bytes, or the producer's arithmetic: its threads loading A from global memory and writing
# only the parts — 32 KB a k-tile less shared-memory traffic — gained a percent or two, and taking their split
# arithmetic away moved nothing (`experiments/producer_loads_a.py`); what costs is the threads' own stores and the
# fence before the tensor core may read them. At 8192³ this step is held by energy, not by a stall: a faster
# kernel must spend fewer joules per product, not just wait less. Measured under a sustained load (`experiments/step_18_energy.py`, the board's power and clock
# sampled while each kernel runs back to back): this step spends more energy per TF32 product than cuBLAS's TF32
# kernel; with its splits and adds taken away it would spend less — about as little as the course's 3xTF32 target over
# cuBLAS SGEMM asks for at 8192³, a little short of it in one run and a little over in the other. The tables, figures and predictions of these measurements are in
# [deep dive 18: what holds the 3xTF32 step](deep_dives/18_what_holds_3xtf32.ipynb).
#
# Not kept either (experiments/README.md): consumers taking turns to issue (`experiments/take_turns.py`; the tensor
# core no busier), a fifth ring stage, fewer buffers of A's small parts, leaving A's big part for the tensor core to
# truncate, and descriptors made by adds. One finding from them: a handful of extra index instructions in the loops
# cost this step more than any of those changes gained (`experiments/small_ring.py`).
#
# `matmul` picks step 18 where the shape suite measured it fastest (`gemm-steps explain 4096 4096 4096`).
#
# Try it: the producer/consumer split this step keeps, in
# [`exercises/warp_specialized.py`](../exercises/warp_specialized.py) (`gemm-steps exercise check warp_specialized`).
#
# Next: [Lesson 19: persistent ping-pong](19_pingpong.ipynb).
