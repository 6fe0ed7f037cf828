# %% [markdown]
# # Lesson 17 — Warp specialization: a producer warpgroup, and registers handed over
#
# Lesson 16's timeline showed where step 16 loses time: thread 0 produces, thread 0 is a lane of warpgroup 0, and a
# `wgmma` needs all 128 threads of its warpgroup — so the producer's waits and copies sit on a consumer's path every
# k-tile. Step 17 gives the producer a warpgroup of its own. All the timings come from the same H200 run as lesson
# 16's, the timelines from the same H200 timeline run (the captions name the files).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_16, lesson_17, predictions, reference, timelines
from gemm_steps.course.targets import HOPPER_SIZES, hopper_tf32_verdict
from gemm_steps.course.timings import load_run, producer_order_run, record

tma_pipeline = gemm_steps.get_step("tma_pipeline")
warp_specialized = gemm_steps.get_step("warp_specialized")
run, timeline = producer_order_run(), timelines.timeline_run()
print(warp_specialized.doc.splitlines()[0])

# %% [markdown]
# ## What changes from step 16
#
# A third warpgroup (threads 256–383) does nothing but produce: its first thread walks the k-tiles — wait until the
# stage is empty, announce its bytes on full, issue the two copies — as far ahead as the ring's empty barriers let
# it. The two consumer warpgroups only wait for data, load fragments, multiply and release stages. Same ring, same
# `wgmma`, same tiles, order and arithmetic; the roles are the two branches of one `if`.
#
# The catch is registers. An SM has 65,536, and a block's threads share them equally at launch. A consumer needs its
# 128 accumulators and two fragment sets; a third warpgroup cuts everyone's share:

# %%
r = lesson_17.register_budget(warp_specialized)
print(f"{r.registers:,} registers / {r.threads} threads -> {r.at_entry} a thread at entry")
print(f"after setmaxnreg: producer {r.producer}, consumers {r.consumer}: 128 × {r.producer} + "
      f"{r.threads - 128} × {r.consumer} = {r.after:,} registers")

# %% [markdown]
# At the entry share ptxas would spill a consumer's registers and serialise its `wgmma`. The course met that with a
# ninth producer *warp*, and a ninth warp cost registers like a fourth warpgroup: ptxas capped its 288 threads as if
# they were 384, and a build capped for 288 alone did not launch (out of resources). Two models of the hardware
# explain both: registers allotted a warpgroup at a time, or a register file in four parts, one per scheduler, each a
# quarter of the SM's, with the warps dealt among them, so that the part given three warps sets everyone's cap. For
# one block the two give the same limit at any number of warps, so these launches cannot tell them apart; the course
# has not run one that could (several blocks of odd warp counts on one SM). Hopper's answer
# is **`setmaxnreg`**: a warpgroup changes its own register allocation while it runs. The producer gives registers
# back (`setmaxnreg.dec`, `registers_lower_to`), the consumers take them (`setmaxnreg.inc`, `registers_raise_to`),
# and ptxas compiles each branch for its new budget. It does so only when it sees the whole program: Numba's PTX
# assembled as a relocatable unit makes ptxas ignore the instruction (its warning C7504), while numba-cuda on a GPU
# links the kernel with nvJitLink's link-time optimisation, where it holds — [deep dive: setmaxnreg and
# LTO](deep_dives/17_setmaxnreg_and_lto.ipynb) compiles both ways on this CPU.
#
# ## The prediction
#
# From step 16's timeline (an earlier H200 run than the one below): a warpgroup's k-tile takes its period; the
# producer's work — waiting for an empty stage, issuing the copies — is on warpgroup 0's path, and warpgroup 1 waits
# for the data warpgroup 0's thread asks for late. Take both off, and a k-tile takes the period minus them, but never
# less than the tensor cores need. As `experiments/producer_order_bench.py`'s docstring wrote it (quoted from
# `predictions/17.json`):

# %%
p = predictions.get(17, "producer_warpgroup_over_step16")
lesson.say(predictions.quote(p))
when = predictions.order(p)
low, high = predictions.ratio_range(p)
print(f"first committed {when.committed[:16]}, the run it is compared with recorded {when.recorded[:16]}: "
      f"{'before' if when.before else 'after'} the run, by {abs(when.minutes):.0f} minutes")
for size in HOPPER_SIZES:
    step16 = record(run, "tma_pipeline", size)["tflops"]
    print(f"{lesson.size_label(size)}: step 16 {step16:.1f} TFLOPS in that run -> predicted {low * step16:.0f}–"
          f"{high * step16:.0f}, capped near {p.predicted['cap_tflops']} (cuBLAS TF32)")

# %% [markdown]
# The docstring says it was written before the run, but git cannot show that: the text was first committed in the
# commit that added the run's records, after the run (the line above). Read it as a prediction on the docstring's
# word only. Its cap, cuBLAS TF32's own speed, and its worry — the loads run at most as far ahead as four stages
# allow, and the copies' latency may not fit in that — are what to hold it to.
#
# ## The kernel
#
# The roles part after the barriers are initialised: first the producer, one thread issuing the copy engine's
# copies; then the consumers, whose loop is step 16's without the producer's turn. (Between them sits a second
# producer, for matrices whose rows the copy engine cannot read — the end of the next section.) The whole kernel:
# `warp_specialized.source()`, or `gemm-steps diff 16 17`.

# %%
lesson.show_kernel(warp_specialized, start="if warpgroup == CONSUMERS and not THREAD_COPIES:",
                   stop="copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, k_at, block_col")
lesson.show_kernel(warp_specialized, start="else:  # a consumer warpgroup", stop="acc = warpgroup_wait_all(acc)")

# %% [markdown]
# ## Is it right?
#
# On the simulator (`setmaxnreg` is a no-op there; the simulator's tiles have one consumer warpgroup), with a shape
# that fills every stage twice, a ragged one that runs on the step's partial-tile build (K and N multiples of 4: the
# copy engine fills the missing rows and columns with zeros, the store keeps to C), and one whose N = 70 the copy
# engine cannot read as it is (a row of B is 280 bytes, not a multiple of 16). For a matrix like that, step 17 copies
# it first into rows the copy engine can read (each row widened with zeros to a multiple of 4 floats) — except B in
# products of at most 1,024 rows, which it reads as it is (`B_ROWS_MOD_4`): B's rows 0, 4, 8, … lie 16·N bytes
# apart, a pitch the copy engine *can* read, and so do the rows of the other three residues mod 4; four tensor maps,
# one a residue, bring each k-tile of B as four boxes of 8 rows, and the consumers read k-row k from box k % 4. (A box
# must also start on 16 bytes of its row — an H200 stopped one that began 8 bytes in with an illegal-instruction error
# — so map r starts (r·N) % 4 floats early and each lane skips that many.) Where B's bytes are the time (few rows)
# that ran 1.6–2.0× the copy on an H200, with thousands of rows 0.89–1.02× (`experiments/b_rows_mod_4.py`). A third
# way reads A and B as they are (`THREAD_COPIES`): all 128 producer threads copy each stage themselves,
# 4 bytes at a time with `cp.async`, into the same swizzled layout the copy engine writes. It reads the matrix once,
# but slowly — forced on 4096³ it feeds the tensor cores at well under half of step 17's speed — and on an H200 the
# copy (read, write, read again, at close to full memory speed) won at every shape timed, even skinny products with
# a huge unreadable A; so no product takes the threads (`experiments/thread_copies.py` times both). (Where its
# tiles are few and K is long, step 17 also splits K into slices that run side by side and are added up after —
# lesson 25's section on split-K; these K are too short for it.)

# %%
lesson.check_against_numpy(warp_specialized, [(64, 128, 256), (45, 68, 20), (45, 70, 20)])

# %% [markdown]
# ## How fast
#
# Steps 15–17 and the late-producer experiment beside both cuBLAS, one run, with each record's SM clock:

# %%
lesson.say(lesson_16.speed_table(run))
lesson.show_figure(lesson_16.speed_figure(run))

# %% [markdown]
# ## The verdict
#
# Against the prediction, and against the course's target for the Hopper chapter (`gemm_steps/course/targets.py`).
# The share per clock is the share if step 17 and cuBLAS TF32 had run at the same SM clock:

# %%
v = hopper_tf32_verdict(run, "warp_specialized")
for size, q in v["sizes"].items():
    print(f"{lesson.size_label(size)}: {q['tflops']:.1f} TFLOPS = {q['vs_previous']:.2f}× step 16 (predicted "
          f"{low:.2f}–{high:.2f}×), {q['pct_of_cublas_tf32']:.0f} % of cuBLAS TF32 ({q['cublas_tf32']:.1f}); clocks "
          f"{q['mhz']:.0f} / {q['cublas_tf32_mhz']:.0f} MHz, per clock {q['pct_per_clock']:.0f} %")
print(f"target {v['target_pct']:.0f} % of cuBLAS TF32 at both sizes in this run: {'met' if v['met'] else 'not met'}; "
      f"at least step 16's speed at 8192³: {v['at_least_previous_at_8192']}")
for b in lesson_17.benchmark_verdicts("warp_specialized"):
    shares = ", ".join(f"{lesson.size_label(s)} {q['pct_of_cublas_tf32']:.0f} %" for s, q in b.sizes.items())
    print(f"course benchmark, {b.gpu} ({b.file}): {shares} of cuBLAS TF32: {'met' if b.met else 'not met'}")

# %% [markdown]
# The step gained, but less than the prediction said, on every GPU measured; the target is met on the H200 and
# not on the H100. Which assumption failed? The timelines of both steps, on one
# scale of clocks:

# %%
lesson.show_figure(timelines.timeline_figure(timeline, ["tma_pipeline", "warp_specialized"]))
lesson.say(lesson_16.timeline_table(timeline, ["tma_pipeline", "warp_specialized"]))

# %% [markdown]
# The warpgroups now keep pace with each other, and their period fell — but not by the producer's work. They still
# wait for data every k-tile, although the producer issued its copies long before their turn; and the producer now
# waits for an empty stage about half its time: the ring is full. The copies take longer from issue to landing than
# they did in step 16:

# %%
for name in ("tma_pipeline", "warp_specialized"):
    m = timelines.timeline_medians(timeline, name)
    print(f"{name}: copies issued -> data landed {m['landing']:,.0f} clocks (seen by the warpgroup that waited); "
          f"period {m['period']:,.0f}; every SM at the recorded block's pace "
          f"{lesson_16.implied_tflops(timeline, name, tma_pipeline):.0f} TFLOPS")
shared = lesson_16.shared_budget(warp_specialized)
print(f"the ring: {shared.stages} × {shared.stage:,} bytes of {shared.limit:,}; one more stage fits: "
      f"{shared.one_more_fits}")

# %% [markdown]
# The prediction took step 16's copy latency with it. With every SM's consumers asking for k-tiles faster, a copy takes
# far longer from issue to landing, and four stages — all the shared memory allows at these tiles — are not enough
# ahead to cover it: the producer has to wait for a stage to be released, and the consumers wait for its copies.
# The fix is a deeper pipeline, which needs less shared memory per stage (a smaller BLOCK_K, or one k-tile shared
# by both warpgroups in a different split) or fewer bytes per FLOP (larger tiles, or two blocks' tiles sharing an
# operand: thread-block clusters and TMA multicast).
#
# At 8192³ the step ran at a lower SM clock than cuBLAS TF32 in the same run; per clock it is level with it there.
# That does not make the clock the board's alone. Under the board's power limit (lesson 16's deep dive has its
# evidence) each kernel gets the clock its own power draw allows, and the draw per FLOP is the kernel's:

# %%
e = lesson_17.clock_share(run, "warp_specialized")
power = lesson_17.clocks_under_load_power(load_run(lesson_16.CLOCKS_RUN))
print(f"8192³: step 17 at {e.mhz:.0f} MHz, cuBLAS TF32 at {e.cublas_tf32_mhz:.0f}; step 17 did {e.share:.0%} "
      f"of cuBLAS TF32's FLOP a second ({e.share_per_clock:.0%} per clock). If both drew the same power, step 17 "
      f"spent {e.energy_per_flop_at_equal_power:.2f}× cuBLAS's energy per FLOP (cuBLAS TF32 drew {power:.0f} W "
      "back to back at 8192³ in the clocks-under-load run)")

# %% [markdown]
# So at 8192³ part of the gap to cuBLAS may be energy the kernel spends per FLOP, which the power limit turns into a
# lower clock. That needs the kernels' own power and work, and before any "why we are slower" it needs a look at
# what we are slower *than*.
#
# ## What cuBLAS runs
#
# `scripts/reference_kernels.py` dissects the reference on a GPU: Nsight Compute profiles one launch of cuBLAS TF32's
# kernel (after a warm-up) at the course's products — its launch statistics and every SASS instruction — and the
# Hopper steps' kernels the same way; then each kernel runs back to back for three seconds while the board's SM
# clock and power are sampled. One run per GPU, every kernel in it (the caption names the file):

# %%
ref = reference.load("NVIDIA H200")
hopper_kernels = ["cublas_tf32", "warpgroup_tf32", "tma_pipeline", "warp_specialized", "pingpong"]
if ref is not None:
    print(f"{ref.gpu}, {ref.date} ({ref.path.name}), 8192³:")
    lesson.say(reference.launch_table(ref, 8192, hopper_kernels))

# %% [markdown]
# cuBLAS TF32's kernel is the design step 17 is heading for, with four things more. Like step 17 it has three
# warpgroups (384 threads) with the `setmaxnreg` hand-off from 168 registers, and the same tensor-core instruction
# fed the same way: `HGMMA.64x256x8` with operand A from registers — the course's own operand path. What it has
# and step 17 has not: a **persistent** grid (one block an SM), **clusters of two blocks** whose tiles share an
# operand, which the copy engine loads once and **multicasts** to both (`UTMALDG…MULTICAST`), and an epilogue that
# writes C through shared memory and the copy engine (`UTMASTG`) instead of 128 `STG` from registers. Those are the
# next steps of the course. The fourth is not an instruction, and was found later (lesson 23): cuBLAS reads A and B
# rounded to TF32 with nothing in its loop that rounds — as a copy does whose tensor map's element type is TF32 —
# where step 17 loaded float32: the tensor core then truncated A, and two instructions round each element of B.
# (Since 2026-11-30 step 17's maps are TFLOAT32 too, and its error is cuBLAS's: 1.51–1.66× before, at the same speed,
# 0.99–1.01×: `experiments/tf32_copies.py --steps 17 21`. The numbers in this lesson were measured before.)
#
# Now the clocks. Every kernel here ran into the board's 700 W limit, so the SM clock each got is what its energy per
# FLOP allows. Beside it, the work per FLOP of the profiled launch:

# %%
if ref is not None:
    lesson.say(reference.energy_table(ref, 8192, hopper_kernels))
    lesson.say(reference.instruction_mix_table(ref, 8192, ["cublas_tf32", "warp_specialized"], top=8))
    for r in reference.load_all():
        s17, cublas = r.kernel("warp_specialized", 8192), r.kernel("cublas_tf32", 8192)
        print(f"{r.gpu}: step 17 at {s17.sm_clock_mhz:.0f} MHz, cuBLAS TF32 at {cublas.sm_clock_mhz:.0f} MHz "
              f"({s17.sm_clock_mhz / cublas.sm_clock_mhz - 1:+.1%}) at {s17.power_w:.0f} / {cublas.power_w:.0f} W; "
              f"{s17.warp_instructions_per_flop / cublas.warp_instructions_per_flop:.2f}× the warp instructions "
              f"and {s17.l2_bytes_per_flop / cublas.l2_bytes_per_flop:.2f}× the L2 bytes per FLOP")

# %% [markdown]
# At the same board power step 17 runs at a lower clock, and it executes more warp instructions and moves more L2
# bytes per FLOP than cuBLAS TF32. At 4096³, where both held the top clock in the benchmark, it is slower still. Two
# experiments asked which difference costs what ([deep dive: the gap to cuBLAS](deep_dives/17_the_gap_to_cublas.ipynb),
# each prediction committed before its run). Taking step 17's extra instructions out of its k-loop (its TF32
# rounding, 64-bit ring arithmetic, descriptors rebuilt every k-step) changed neither its speed nor its clock: the
# instructions are not it (step 17 keeps the leaner loop). And timing it over K at one tile count showed that the
# loss at 4096³ is not a fixed cost a tile — the pipeline's fill and the epilogue, which a persistent grid and a
# TMA-store epilogue would hide — but the k-loop's pace: cuBLAS's runs faster per k-tile at the same clock, for
# reasons not yet found. (The back-to-back TFLOPS here are the load run's, with no L2 flush between launches; the
# course benchmark above is the timing of record.)
#
# ## What is left
#
# The next lessons build on this design: 3xTF32 on it (step 18, lesson 18), two consumer warpgroups on alternate tiles
# of a persistent grid (ping-pong, step 19, lesson 19) and clusters of two blocks sharing A's tile by multicast (step
# 20, lesson 20) and this kernel on a persistent grid with stream-K (step 21, lesson 21). A TMA-store epilogue,
# cuBLAS's last difference, was tried alone on step 20 and gained nothing (lesson 20); on step 21's persistent grid in
# clusters of two it gained about 1 % — small, as the deep dive's measurement said it would be at 4096³ — and the two
# together are step 23 (lesson 23).
# Step 17 runs only on compute capability 9.0 (H100, H200) and on the simulator. Its accuracy is TF32's, so `matmul`
# runs it only when asked for TF32, where the shape table (of the GPU you run on, or the newest one shipped) measured
# it fastest — and a tie goes to the later step. Step 21 (lesson 21) runs this very k-tile on a persistent grid and
# leaves to step 17 only the products step 17 splits K on; on the H200's table it ran within 3 % of step 17 or faster
# at every shape, and step 23 (lesson 23) runs it on clusters of two, a little faster again:
# `gemm-steps explain 2500 3000 1500 --precision tf32` picks step 23. Step 17's kernel runs inside both, where they
# split K. At the default precision `matmul` never runs step 17.
#
# Deep dives: [setmaxnreg and LTO](deep_dives/17_setmaxnreg_and_lto.ipynb);
# [the gap to cuBLAS](deep_dives/17_the_gap_to_cublas.ipynb).
#
# Try it: [`exercises/warp_specialized.py`](../exercises/warp_specialized.py) — a producer warpgroup and two
# consumers, the registers handed over within the block's pool (`gemm-steps exercise check warp_specialized`).
#
# Next: [Lesson 18: 3xTF32 on the warp-specialized design](18_warp_specialized_3xtf32.ipynb).
