# %% [markdown]
# # Deep dive 17 — where step 17 loses to cuBLAS TF32: four experiments
#
# Lesson 17 ends with what cuBLAS's TF32 kernel runs and what it does per FLOP: at the board's power limit it holds a
# higher SM clock than step 17, and it executes fewer warp instructions and moves fewer L2 bytes per FLOP. At 4096³,
# where the course benchmark found both at the top clock, step 17 is still slower. Which differences cost what?
# Experiments on an H200, each with its prediction committed before its run:
#
# 1. **The instructions.** Take step 17's extra instructions out of its k-loop, one change a build, and see whether
#    the clock or the speed moves.
# 2. **A tile's fixed cost.** cuBLAS's kernel is persistent and stores C through the copy engine; step 17 fills each
#    tile's pipeline from nothing and stores from registers while the tensor cores wait. If that is the loss, it is
#    a fixed cost a tile, and it fades as K grows.
# 3. **Late data.** If the k-loop waits for its copies, multicast (step 20) should make them land sooner.
# 4. **Fewer cluster arrivals**, where step 20 spent its time instead.

# %%
from gemm_steps.course import gpu_model, lesson, lesson_17, predictions, timelines
from gemm_steps.course.timings import load_run

loop = load_run(lesson_17.LOOP_RUN)
tile = load_run(lesson_17.PER_TILE_RUN)

# %% [markdown]
# ## 1. The instructions
#
# Step 17's executed opcodes (lesson 17's table) show where its extra instructions were: for each B fragment element
# (`LDS`) a compare, an add and an AND — `cvt.rna.tf32.f32` — and 64-bit arithmetic on the uniform datapath
# (`UIADD3.X`, `USHF.R.U64`). `experiments/loop_instructions.py` takes them out, one change a build
# (`experiments/kernels/warp_specialized_loop_instructions.py`):
#
# * **32-bit ring arithmetic.** The k-loop ran over Python ints, so Numba computed the ring's `u % STAGES` and
#   `u // STAGES % 2` in signed 64 bits with Python's floor rules — about 20 instructions each, every k-tile.
# * **A's descriptor once a stage**, a k-step adding its 32 bytes, instead of building it again for every k-step.
# * **The TF32 rounding in two instructions** (`rounded_operand_bits`): half a TF32 unit added to the bits unless the
#   value is NaN, the 13 low bits left for the tensor core to drop — `cvt.rna` spends a third instruction clearing
#   them.
#
# None changes a result: every build's C is the old one's bit for bit (three shapes, with inf, NaN, the largest
# float and subnormals). The prediction, then the run:

# %%
lesson.say(predictions.quote(predictions.get(17, "loop_instructions_8192")))
lesson.say(lesson_17.loop_table(loop))
q = lesson_17.loop_numbers(loop)
print(f"warp instructions at 4096³: {q.instructions_before:.1f} M before, {q.instructions_after:.1f} M after "
      f"(cuBLAS TF32: {q.instructions_cublas:.1f} M), cycles ×{q.cycles_ratio:.3f}; SM clock under load at "
      f"8192³: {q.mhz_before:.0f} → {q.mhz_after:.0f} MHz (cuBLAS TF32 {q.mhz_cublas:.0f}); every C the "
      f"same bit for bit: {q.identical}")

# %% [markdown]
# With the changes step 17 executes nearly as few instructions as cuBLAS TF32, and it is **no faster, and its clock
# under load is no higher**: the prediction's +2 % (from a fit of the clocks in lesson 17's table) did not come. The
# instructions are not what holds step 17's clock down. Step 17 keeps the changes — the same speed and result with
# fewer instructions — and the L2 bytes stay a suspect for the clock (step 20's multicast takes them on, lesson 20).
#
# ## 2. A tile's fixed cost
#
# At M = N = 4096 step 17 has 512 tiles — 3.9 waves on 132 SMs, one block an SM — for every K; cuBLAS's persistent
# grid walks its 512 tiles in the same four rounds. If a wave costs a fixed part plus a part per k-tile, time over K
# is a line, and its intercept is the fixed part: a persistent grid hides the pipeline's fill, a store through the
# copy engine hides the epilogue. `experiments/per_tile_cost.py` times step 17, its persistent build (the ring runs
# on into the next tile, so the fill is hidden but not the store) and cuBLAS TF32 at K from 1,024 to 16,384. The
# prediction, then the run (TFLOPS per GHz of each run's median clock, over cuBLAS TF32's: a throttled clock does not
# move it):

# %%
lesson.say(predictions.quote(predictions.get(17, "per_tile_cost")))
lesson.say(lesson_17.per_tile_table(tile))
t = lesson_17.per_tile_numbers(tile)
slope = t.per_1024_us
print(f"step 17 over cuBLAS TF32 per clock: {t.ratio_at[1024]:.3f} at K = 1024, {t.ratio_at[4096]:.3f} at "
      f"4096, {t.ratio_at[8192]:.3f} at 8192; µs per 1,024 of K: step 17 {slope['warp_specialized']:.1f}, "
      f"persistent {slope['persistent_specialized']:.1f}, cuBLAS TF32 {slope['cublas_tf32']:.1f} "
      f"(cuBLAS's k-loop {1 / t.loop_pace:.2f}× as fast as step 17's)")

# %% [markdown]
# **The prediction failed, and that is the finding.** A fixed cost would make step 17's ratio to cuBLAS rise with K;
# instead it is level where K is long (4,096 and 8,192), and at the short K step 17 is as fast as cuBLAS (where
# cuBLAS's own speed jumps between K = 2,048 and 4,096 — most likely another of its kernels; not profiled here). The
# lines agree: step 17's fixed part is *smaller* than cuBLAS's, and what it loses is in the slope — its k-loop runs
# slower per k-tile at the same clock. The persistent build does hide part of the fixed cost (the smaller intercept)
# but its own k-loop is slower still (its ring counter runs across tiles in 64-bit arithmetic; not measured apart).
# Step 21 (lesson 21) later ran step 17's k-loop on a persistent grid with the ring counted in 32 bits: a few percent
# faster than step 17 at 4096³ in three runs, its prediction written before the third — a small part of the gap, not
# the rest of it.
#
# So at 4096³ a persistent grid and a TMA-store epilogue, cuBLAS's remaining differences in design, are not where
# step 17 loses: its k-loop's pace is. What sets that pace — with the same tensor-core instruction, the same fragment
# loads and the same shared-memory traffic as cuBLAS's kernel — is not found yet. A lead, from lesson 17's timeline
# of step 17 (one H200 launch at 4096³, recorded before the changes above; the k-loop's instructions were shown not
# to matter):

# %%
import gemm_steps

m = timelines.timeline_medians(timelines.timeline_run(), "warp_specialized")
w = m["warpgroups"]
tensor = gpu_model.tensor_clocks(gpu_model.ring_constants(gemm_steps.get_step("warp_specialized")))
print(f"a k-tile every {m['period']:.0f} cycles (the tensor cores need {tensor:.0f}); the consumers wait for data "
      f"{w[0]['wait_data']:.0f} and {w[1]['wait_data']:.0f} cycles of it; a k-tile's copies land {m['landing']:.0f} "
      f"cycles after they are issued, and are issued {w[0]['lead']:.0f}–{w[1]['lead']:.0f} cycles before a consumer "
      f"needs them")

# %% [markdown]
# The copies are issued about as far ahead as they take to land, and not further: a consumer frees a stage only when
# the `wgmma` that read it are done, so fewer than the four stages are ever in flight. Data arriving late, not the
# multiplies, would set the pace — and cuBLAS's kernel asks L2 for fewer bytes a FLOP (its multicast), so its copies
# may land sooner. Step 20 multicasts too (A crosses L2 once per cluster of two blocks) and was not faster (lesson
# 20). So:
#
# ## 3. Does multicast make the copies land sooner?
#
# `experiments/timeline.py` recorded step 17 and step 20 (`experiments/kernels/cluster_multicast_timeline.py`, step
# 20 with the same clock writes) in one run: blocks 0 and 1, which in step 20 are one cluster. The prediction, then
# the medians (cycles a k-tile; "landing" is the prediction's measure, the warpgroup that waits longer for data):

# %%
lesson.say(predictions.quote(predictions.get(17, "timeline_17_20")))
pair = load_run(lesson_17.TIMELINE_17_20_RUN)
lesson.say(lesson_17.timeline_compare_table(pair))
landing = {name: [timelines.timeline_medians(pair, name, block)["landing"] for block in (0, 1)]
           for name in ("warp_specialized", "cluster_multicast")}
r = lesson_17.timeline_compare(pair)
print("landing, step 20 / step 17: " + ", ".join(f"block {b} {x / y:.2f}" for b, (x, y) in
                                                 enumerate(zip(landing["cluster_multicast"], landing["warp_specialized"])))
      + f"; means over both blocks and warpgroups: waits for data ×{r.wait_data:.2f}, waits for the previous wgmma "
        f"×{r.wait_previous:.2f}, releases and loops ×{r.rest:.2f}, period ×{r.period:.2f}")

# %% [markdown]
# **Yes — and step 20 spends the gain elsewhere.** Its copies land sooner and its consumers wait less for data, as
# predicted; but a k-tile takes longer: the consumers wait longer for the previous k-tile's `wgmma` to finish, and
# warpgroup 1 takes longer to release a stage and loop (in this step 20 each consumer warp arrived twice a k-tile,
# once on its own block's barrier and once, remotely, on its peer's). In Nsight Compute's executed counts
# (`experiments/results/experiment-reference-steps-17-20-nvidia-h200.json`) that step 20 executed twice as many
# cluster arrivals (`SYNCS.ARRIVE.TRANS64.RED`) as cuBLAS's kernel for the same `HGMMA`s: one a warp and k-tile
# there, two here. Why step 20's `wgmma` take longer is not found.
#
# ## 4. Fewer cluster arrivals
#
# One warp can speak for its warpgroup: the four issue `wgmma` together (`.sync.aligned`), after each has read its
# fragments of the stage, and the tensor core's reads of A are the warpgroup's one operation — so when one warp's
# `wgmma.wait_group` has seen a k-tile's products complete, nothing of the warpgroup reads that stage any more.
# CUTLASS's pipelines signal a consumer's release from one thread a warpgroup per destination block. So
# `experiments/cluster_arrivals.py` timed step 20 with warp r of each consumer warpgroup arriving on block r's empty
# barrier only (the barrier counting the cluster's warpgroups; an experiment kernel then) against step 20 as it was
# (now kept as `experiments/kernels/cluster_every_warp_arrives.py`), twice. The prediction, then both runs:

# %%
lesson.say(predictions.quote(predictions.get(17, "cluster_arrivals")))
lesson.say(lesson_17.arrivals_table())

# %% [markdown]
# About 1 % in both runs, at every shape — at the bottom of the predicted range: the arrivals were a small part of
# what step 20 spends releasing and waiting. Step 20 now releases its stages this way (its docstring says why it is
# safe; lesson 20's picture shows it). The timelines once more, step 20's build releasing the new way — the
# prediction, then step 20 over step 17 (means over both blocks and warpgroups), first run and this one:

# %%
lesson.say(predictions.quote(predictions.get(17, "timeline_20_one_arrival")))
for label, name in (("every warp arrives", lesson_17.TIMELINE_17_20_RUN),
                    ("one arrival a warpgroup", lesson_17.TIMELINE_17_20_RUN_2)):
    r = lesson_17.timeline_compare(load_run(name))
    print(f"{label}: releases and loops ×{r.rest:.2f}, waits for the previous wgmma ×{r.wait_previous:.2f}, "
          f"loads and issues ×{r.issue:.2f}, waits for data ×{r.wait_data:.2f}, period ×{r.period:.2f}")

# %% [markdown]
# The release now costs about what step 17's does, as predicted — and step 20's k-tile is still longer than step
# 17's: what is left is in loading fragments and issuing, and in waiting for the previous k-tile's `wgmma` to finish.
# Those waits, the tensor-core side, are where step 20 (and, with cuBLAS's faster k-loop, step 17) must be looked
# at next: a timeline with the tensor core's own progress (when each `wgmma` group completes) is the next experiment.
#
# Back to [lesson 17](../17_warp_specialized.ipynb).
