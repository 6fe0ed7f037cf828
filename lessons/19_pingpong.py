# %% [markdown]
# # Lesson 19 — Persistent ping-pong: one consumer stores while the other multiplies
#
# Step 17 gives each block one 256×128 tile: both consumer warpgroups multiply it together, then both store it, and
# the block ends. Outside the k-loop the SM's tensor cores wait: for the block's start, and for the store of C.
# CUTLASS's answer on Hopper is the **ping-pong** schedule: a persistent block walks many tiles, each consumer owns
# whole tiles, and the two take turns in the main loop — one stores its tile while the other multiplies. Step 19
# builds it. The first timings come from one H100 run of `experiments/pingpong_bench.py` (step 17, its persistent
# form, step 19 as it was then, both cuBLAS), the timeline from the same H100; the controlled runs that explain the
# result, from an H200. Each table and figure names its file.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_19, predictions

step17 = gemm_steps.get_step("warp_specialized")
step19 = gemm_steps.get_step(19)
run, timeline, timeline17 = lesson_19.bench_run(), lesson_19.timeline_run(), lesson_19.step17_timeline_run()
print(step19.doc.splitlines()[0])

# %% [markdown]
# ## The idea
#
# Three changes to step 17, one idea. **Persistent**: one block per SM walks tiles b, b + gridDim.x, … in step 16's
# grouped order, and the ring runs on from one tile into the next, so the producer copies the next tile's first
# k-tiles while this tile's last ones are multiplied. **A tile per consumer**: a tile is 128×128 and belongs to one
# consumer warpgroup (two m64n128k8 a k-step, one per 64-column half); the block's tiles 0, 2, 4, … go to consumer
# 0, tiles 1, 3, 5, … to consumer 1. **Ping-pong**: before its main loop a consumer waits at a *named barrier*
# (`bar.sync`) until the other has issued the last products of the block's previous tile (`bar.arrive`). The main
# loops take turns; each store runs under the other consumer's main loop.
#
# Here is what one block of the shipped kernel's timeline build did on the H100 — a copy of the kernel that writes
# `%clock64` at each step of each role (`experiments/kernels/pingpong_specialized_timeline.py`), one launch at
# 4096³, the block's first four tiles:

# %%
lesson.show_figure(lesson_19.pingpong_figure(timeline))
alt = lesson_19.alternation(timeline)[0]
print(f"main loops overlap by at most {alt.overlap:,.0f} clocks (negative: never at once); from one tile's last "
      f"wgmma to the next tile's first: {alt.handoff:,.0f} clocks; a consumer waits {alt.turn_wait:,.0f} for "
      f"its turn while the other's main loop takes {alt.other_main_loop:,.0f}")

# %% [markdown]
# ## The ring, over tiles
#
# One producer fills one ring for both consumers, in the block's tile order: k-tile u of the block's tile i is the
# ring's k-tile g = i·k_tiles + u, in stage g % STAGES, the stage's fill g // STAGES. A consumer waits on the
# stage's *full* barrier for that fill's parity, as in lessons 16–17. But the wait names only a parity, not the
# fill: it is right only if it begins while the fill it wants is in progress or just landed. Begun earlier, it
# ends too early — at once, or when an older fill lands — and the consumer reads a stage the copy engine has not
# filled (right panel). Two barriers keep every wait in the right window: the empty barriers keep the producer from
# refilling a stage before its reader is done (not too late), and the ping-pong order keeps a consumer from asking
# for a fill before the one before it has landed (not too early): at most one lap of the ring ahead.

# %%
lesson.show_figure(lesson_19.ring_figure(step19))
u = lesson_19.unordered_start(step19, 4096, lesson_19.RUN_STAGES)  # the H100 run's build: 6 stages
print(f"without the order, at 4096³: consumer 1 starts at once on the block's tile 1, ring k-tile g = {u.g}, "
      f"stage {u.stage} of {u.stages}, fill {u.wait.fill} (parity {u.wait.fill % 2}), while that stage is in "
      f"phase {u.wait.phase}: the wait {'returns at once' if u.wait.at_once else 'blocks'}; right: {u.wait.right}")

# %% [markdown]
# That is what happened on the H100: the build without the order (`pingpong_unordered` in
# `experiments/kernels/pingpong_specialized.py`) failed its first launch — a consumer read stages that had not
# landed and released them, the ring's counts came apart, and a wait trapped at the toolkit's time limit
# (`experiments/pingpong_bench.py`'s docstring). With the simulator tests' short K the consumers never get two laps
# apart, and its product comes out right there. The order is not optional.
#
# ## The prediction
#
# Written before any run, in `experiments/kernels/pingpong_specialized.py`'s docstring, from step 17's timeline (an
# H200's): a step-17 tile's k-loop takes its k-tiles × step 17's k-tile period; the store of C and the turn to the
# next tile (the docstring's estimate, not measured) come off it, now under the other consumer's main loop. Against
# the persistent build of the same run — if the 128×128 k-tile keeps step 17's rate per multiply-add:

# %%
lesson.say(predictions.quote(predictions.get(19, "pingpong_over_persistent")))
m = lesson_19.model(step17, step19, run, timeline17)
print(f"step 17's k-tile: {m.period17:,.0f} clocks ({m.timeline_gpu}); a 128×128 k-tile at the same rate per "
      f"multiply-add, one consumer at a time: {m.same_rate_period:,.0f}; saved a 256×128 tile: "
      f"{m.saved[0]:,}–{m.saved[1]:,} clocks")
for size, q in m.sizes.items():
    print(f"{lesson.size_label(size)}: {q.k_tiles} k-tiles, {q.tile_clocks:,.0f} clocks a tile -> "
          f"+{q.gain[0]:.1%} to +{q.gain[1]:.1%}: persistent {q.persistent:.1f} -> "
          f"{q.predicted[0]:.1f}–{q.predicted[1]:.1f} TFLOPS")
print(f"risks: L2 -> shared memory {m.bytes19:,.0f} bytes per 2^20 multiply-adds (step 17: {m.bytes17:,.0f}); "
      f"a consumer's fragments {m.fragments19} values a thread a k-tile (step 17: {m.fragments17}); one k-tile "
      f"of products in flight lasts {m.tensor_clocks:,.0f} clocks, step 17's consumer spent {m.fragment_clocks17:,.0f} "
      "loading fragments and issuing")

# %% [markdown]
# A small gain, and the docstring named what could take it away: more bytes per multiply-add, and a main loop that
# only one warpgroup runs at a time, so that its own fragment loads must hide behind a single k-tile of its products
# in flight — where step 17's two consumers cover each other's gaps.
#
# ## The kernel
#
# The consumer's branch: the order's `named_barrier_sync` before the main loop, its `named_barrier_arrive` for the
# other consumer after it, the store after the last wait. Each thread holds 128 accumulators and two sets of B's
# fragments for both halves, in the registers `setmaxnreg` gives it ([deep dive: setmaxnreg and
# LTO](deep_dives/17_setmaxnreg_and_lto.ipynb)). The whole kernel: `step19.source()`, or `gemm-steps diff 17 19`.

# %%
lesson.show_kernel(step19, start="else:  # consumer `warpgroup`", stop="tile += 2 * stride")

# %% [markdown]
# ## Is it right?
#
# On the simulator (32×128 tiles, three blocks; `setmaxnreg` is a no-op there, the barriers have twins that time
# out instead of hanging), a product of four tiles: block 0's two consumers take one each, and consumer 1 waits for
# its turn:

# %%
lesson.check_against_numpy(step19, [(64, 256, 64)])

# %% [markdown]
# ## How fast
#
# Step 19 as it was then (6 stages, its ring in 64-bit arithmetic: see below) beside step 17, step 17's persistent
# form (the same kernel walking tiles, no ping-pong) and both cuBLAS, one run, with each record's SM clock:

# %%
lesson.say(lesson_19.speed_table(run))

# %% [markdown]
# ## The verdict

# %%
v = lesson_19.verdict(run, m)
for size, q in v.sizes.items():
    lo, hi = q.predicted_over_persistent
    print(f"{lesson.size_label(size)}: {q.tflops:.1f} TFLOPS = {q.over_persistent:.3f}× persistent (predicted "
          f"{lo:.3f}–{hi:.3f}), {q.over_step17:.2f}× step 17 ({q.over_step17_per_clock:.2f}× per clock: "
          f"{q.mhz:.0f} against {q.step17_mhz:.0f} MHz), {q.pct_of_cublas_tf32:.0f} % of cuBLAS TF32")
print(f"prediction met: {v.prediction_met}; at least step 17's speed at 8192³: {v.at_least_step17_at_8192}; "
      f"the course's target, {v.target_pct:.0f} % of cuBLAS TF32: {'met' if v.target_met else 'not met'}")

# %% [markdown]
# The prediction missed by far, and in the wrong direction: step 19 runs at about two thirds of step 17 at every
# size. At 8192³ it even ran at a higher clock than step 17 — its tensor cores idle more of the time, and the power
# limit held its clock less ([deep dive: the 8192³ drop](deep_dives/16_the_8192_drop.ipynb) has the power limit) —
# so per clock it is further behind still. The store was never the cost that mattered. Which assumption failed?
#
# ## Where the time goes
#
# The one the model stated first: that a 128×128 k-tile would keep step 17's rate per multiply-add. One
# consumer's k-tiles in both timelines, on one clock scale (step 17's from the H200 run lesson 17 read), with the
# tensor core's work under them as a model — each issued k-tile's products at the dense TF32 rate, as soon as the
# previous ones are done:

# %%
lesson.show_figure(lesson_19.kloop_figure(step17, step19, timeline17, timeline))
k = lesson_19.kloop_numbers(step17, step19, timeline17, timeline, run)
lesson.say(lesson_19.kloop_table(k))
print(f"step 19 gets {k.ratio:.2f}× step 17's multiply-adds a clock by the timelines, {k.bench_ratio:.2f}× by "
      "the benchmark (one H100 run for both)")

# %% [markdown]
# A consumer's k-tile takes about as long in step 19 as in step 17, and in both it is about three times the
# tensor core's share: most of it is the consumer's own serial work — waiting for its data, loading B's fragments
# from shared memory and rounding them to TF32, the loop. Step 17 runs two such loops at once, and one's serial work
# hides behind the other's products. Ping-pong runs one at a time *by design*, so nothing covers a consumer's
# serial work, and each k-tile needs twice step 17's fragments per multiply-add besides (two 64-column halves). (The timelines ran on different GPUs, with clock writes in the loop; their ratio is lower than
# the benchmark's, which compares the shipped kernels in one run. Both put step 19 far below step 17.)
#
# Why fragments at all? `wgmma` reads TF32 operands from shared memory only **K-major**: the PTX ISA offers its
# transpose bits only for 16-bit types. B is row-major, so the course computes Cᵀ = Bᵀ·Aᵀ and feeds Bᵀ through
# registers ([lesson 14](14_warpgroup_mma.ipynb)). That operand path is not what sets ping-pong apart: the
# references take it too. CUTLASS's sm90 collective builder chooses the register path (its `GMMA_TMA_WS_RS`
# mainloop, A and B swapped) for any input that is not 16-bit and not K-major on both sides — the course's case —
# under its cooperative and its ping-pong schedules alike (`is_use_rmem_A` and `is_swapAB` in
# `cutlass/gemm/collective/builders/sm90_common.inl`); and cuBLAS's TF32 kernel on Hopper feeds one `wgmma` operand
# from registers (`HGMMA.64x256x8.F32.TF32` with A in registers, in the reference dissection lesson 17 reads:
# `results/reference-nvidia-h200-2026-11-28.json` and its H100 twin). There, step 19 also ran at a *higher* SM clock
# than step 17 and cuBLAS TF32 under the same power limit, while executing more warp instructions per FLOP than
# either: its tensor cores wait more.
#
# So the operand path does not set ping-pong apart. But step 19 changed its tile (128×128 a consumer, where step
# 17's two consumers share 256×128) together with the schedule, so nothing above separates the two.
#
# ## Ping-pong, fairly
#
# `experiments/pingpong_fair.py` does, on an H200, every build in one run, twice. Step 17 persistent (both consumers
# on each 256×128 tile) against a ping-pong build whose consumer owns a whole 256×64 tile — exactly the share a
# step-17 consumer computes: the same `m64n256k8`, the same fragment loads per multiply-add, 4 stages, registers
# 40 / 232 (`experiments/kernels/pingpong_wide.py`). Only who owns a tile changes. Beside them, step 19's 128×128
# tile at 4 and 6 stages. The prediction, committed before the first run:

# %%
lesson.say(predictions.quote(predictions.get(19, "pingpong_fair_schedule")))
fair = lesson_19.fair_runs()
lesson.say(lesson_19.fair_table(fair))
for (i, size), q in lesson_19.fair_numbers(fair).items():
    print(f"run {i + 1}, {lesson.size_label(size)}: the schedule alone {q.schedule:.2f}×; step 19's tile over the "
          f"wide one (4 stages each) {q.tile:.2f}×; step 19 with 6 stages over 4: {q.six_over_four:.2f}×")

# %% [markdown]
# Inside the prediction: with step 17's products, fragments and stages, the schedule alone costs about a third.
# Where it goes, by Nsight Compute on the first run's builds (one launch each at 4096³):

# %%
counters = lesson_19.fair_counters()
lesson.say(lesson_19.counters_table(counters))
bt = lesson_19.bytes_and_time(counters)
print(f"the wide ping-pong over step 17 persistent: {bt.bytes:.2f}× the L2 bytes, {bt.cycles:.2f}× the cycles, "
      f"at {bt.rate_wide:.1f} against {bt.rate_coop:.1f} TB/s")
for size, q in lesson_19.step19_before_after().items():
    print(f"step 19 in the course benchmark, {lesson.size_label(size)}: {q.before:.2f}× step 17 before (6 stages, "
          f"64-bit ring), {q.after:.2f}× after (4 stages, 32-bit ring)")

# %% [markdown]
# **A consumer that owns its tile must bring its own A.** Step 17's two consumers read one A k-tile together; the
# wide ping-pong's each read their own, so it asks L2 for about 1.44× the bytes per FLOP — and takes 1.44× the
# cycles, at the same L2 rate as step 17 persistent, the highest any build here drew. On this tile the schedule's
# price is L2 bandwidth, not the operand path (the two builds share it). Step 19's narrower tile moves fewer bytes
# (its L2 runs well below that rate) and pays in instructions instead: twice the fragments and roundings per FLOP.
# cuBLAS's choice fits: its TF32 kernel on this GPU runs two consumer warpgroups on one 128×256 tile (its name says
# `tilesize128x256x32_warpgroupsize2x1x1`: the cooperative schedule) and multicasts in a cluster of two (lesson 20)
# to cut the bytes further.
#
# And a surprise in step 19's own numbers: 6 stages ran *slower* than 4. Numba computed the ring's `g % STAGES` and
# `g // STAGES` in 64 bits (a uint32 counter meets an integer constant), a multiply-high sequence for 6 and a mask
# for 4. `ring_place` does it with one 32-bit division; predicted before its run to close the gap
# (`predictions/pingpong-ring-before-run.md`, 0.97–1.05), it closed part: 6 stages still ran slower, for a reason
# not found yet. Step 19 now keeps 4 stages with the 32-bit ring — the benchmark lines above.
#
# What ping-pong does hide, it hides: the store.

# %%
s = lesson_19.store_numbers(step19, timeline)
print(f"a consumer's store of its {s.bytes:,}-byte tile: {s.store:,.0f} clocks (the docstring's rate would "
      f"give {s.estimate[0]:,.0f}–{s.estimate[1]:,.0f}), {s.covered:.0%} of it under the other consumer's "
      f"main loop; the turn from one tile's last wgmma to the next tile's first: {s.handoff:,.0f} clocks")
print(f"the build's 'past the order barrier' mark: {alt.mark_after_turn:,.0f} clocks after the turn, before the "
      f"other consumer's arrival in every tile: {alt.mark_before_arrival}")

# %% [markdown]
# The store took far longer than the docstring guessed, and the other consumer's main loop still covered most of it.
# (The timeline build also marks the moment a consumer is past the order barrier. That clock was read before the
# barrier let the warp through — the mark comes a few clocks after the turn, before the other consumer's arrival —
# so the figures measure the turn from the tile's first data instead.)
#
# ## What is left
#
# * **Ping-pong on the cluster design.** Multicast halves the A bytes a block asks of L2 (lesson 20): the wide
#   ping-pong's limit. Whether a cluster of two ping-pong blocks, each consumer's A shared with its peer's, gets
#   back to step 17 is the next run.
# * **Why 6 stages still lose to 4** with the 32-bit ring (a timeline of both builds would show where).
# * **More products in flight.** `wait_group 1` keeps one k-tile of products ahead of a consumer's serial work; a
#   third fragment set would allow two, if the registers allow it.
# * Until then the cooperative design — step 17, both consumers on one tile — is the faster one measured. Step 19
#   runs only on compute capability 9.0 (and on the simulator), and `matmul` does not pick it by default: its
#   accuracy is TF32's (with `precision="tf32"` a shape suite's table could choose it where it was measured
#   fastest).
#
# Try it: [`exercises/pingpong.py`](../exercises/pingpong.py) — two consumers take a block's tiles in turn, the wait
# and the hand-over at the named barriers yours (`gemm-steps exercise check pingpong`, on the simulator: it draws the
# two consumers' timeline and names a main loop that started too early, a wait that never completes, or a hand-over
# after the store).
#
# Next: [Lesson 20: a cluster of two blocks that share A's tile](20_cluster_multicast.ipynb) (step 20), then
# [Lesson 21: stream-K on the tensor cores](21_warp_specialized_stream_k.ipynb) (step 21).
