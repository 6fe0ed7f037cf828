# %% [markdown]
# # Lesson 25 — Where the course ends, and where to go next
#
# Eleven steps on the FP32 units took a matrix multiply from three nested loops to within about a tenth of cuBLAS
# on large squares; steps 12–23 moved the arithmetic onto the tensor cores. This lesson looks back at the whole
# course in two pictures, says why small products are a different problem, and what carries over to the tools
# people use for this in practice (Triton, CUTLASS).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_16, lesson_18, lesson_25, plots, predictions
from gemm_steps.course.targets import hopper_tf32_verdict
from gemm_steps.course.timings import producer_order_run

results = lesson.load_results()
size = lesson.headline_size(results, lesson_25.steps_in(results)) if results else None
print(f"Timings: the shipped run from {lesson.shown_path(results['path'])}" if results else lesson.NO_RESULTS)

# %% [markdown]
# ## Every step on the roofline
#
# Lesson 0 drew the roofline: a kernel can go no faster than the arithmetic peak, nor faster than DRAM can feed it
# (bandwidth × FLOPs per byte). What sets a kernel's FLOPs per byte is its **block tile**: a block computing a
# BLOCK_M × BLOCK_N tile of C reads BLOCK_M + BLOCK_N floats of A and B per k for BLOCK_M · BLOCK_N multiply-adds.
# Here each step stands at the intensity its tile guarantees (with no help from the caches), at its measured speed.
# Steps 12–19 (squares) compute on the tensor cores, whose roof is higher — 8× the FP32 units' multiply-adds per
# clock in TF32, computed here at the run's maximum SM clock (a calculation, not NVIDIA's datasheet figure, which
# is quoted at a lower clock) — so they are drawn under that second roof, not the FP32 one they pass. A step the
# benchmark file did not measure is not drawn:

# %%
if results:
    lesson.show_figure(lesson_25.roofline_figure(results, size))

# %% [markdown]
# Steps 1 and 2 sit at 0.25 FLOP per byte: with no tiling, DRAM alone could not feed them, and only the caches
# keep them off the floor. Shared-memory tiles (step 3) move the steps' points far to the right; from there on, every step
# is far below the bandwidth line and the limits are all inside the SM — instruction count, shared-memory
# wavefronts, latency, the schedule. That is why lessons 4 to 9 counted instructions rather than bytes.
#
# ## The whole course, step by step, at every size

# %%
if results:
    lesson.show_figure(plots.plot_speedup_curves(results))

# %% [markdown]
# Left: how much each step gained over the previous step of the same arithmetic (above the dotted line: faster).
# Where the arithmetic changes — step 12 to TF32, step 13 to 3xTF32, and back and forth in the Hopper chapter — a
# dotted vertical line marks it and no speed-up is drawn across it: a TF32 step against an FP32 one compares two
# contracts, not two kernels. Right: how close each step came to the cuBLAS of its own arithmetic — cuBLAS SGEMM for
# the FP32 and 3xTF32 steps, cuBLAS TF32 for the TF32 steps. The big wins are early and at large sizes; the late
# steps each add a few percent (lesson 11's
# [deep dive: where the course ends](deep_dives/11_where_the_course_ends.ipynb) has the last table). And the small
# sizes tell a different story, next.
#
# ## Why `matmul` on small shapes is not step 11's job
#
# At the smallest size the benchmark ran, count step 11's tiles, and its k-iterations (one `BLOCK_K`-deep slice of
# one tile: the unit stream-K shares out), against the SMs that share them:

# %%
if results:
    small = lesson_25.small_shape(results)
    print(f"{small.size}: {small.tiles} tiles of {small.tile} for {small.sms} SMs, "
          f"{small.k_iterations} k-iterations = {small.k_iterations_per_sm:.0f} per SM")
    number, name, pct = small.best
    print(f"step 11 there: {small.step11_pct:.0f} % of cuBLAS; the fastest FP32 step there: step {number} "
          f"({name}), {pct:.0f} %")

# %% [markdown]
# Fewer tiles than SMs and a few k-iterations per SM: each block gets little work for the fixup that sharing a tile
# costs, and a kernel with smaller tiles has more of them to spread.
#
# A library does not run one kernel for every shape. cuBLAS keeps many kernels (tile shapes, split-K and stream-K
# variants, different pipelines) and picks one per shape with a heuristic; Triton's autotuner does the same from a
# list of configurations. `gemm_steps.matmul` picks too, by a rule you can read in one screen
# (`gemm_steps/harness/dispatch.py`): it looks the shape up in a table of shapes **measured on the GPU**
# (`gemm-steps bench --suite shapes`: square, ragged, wave-boundary, K-heavy, skinny and small shapes) and runs the
# step that was fastest at the nearest one; beyond the table's large products (12000³, say: larger in every side
# than 4096³) the step fastest at the nearest of them; far from every measured shape otherwise, the tensor-core step
# that the rest of the table measured faster than the FP32 units on the kernel path it would take, else step 11.
# `gemm-steps explain M N K` says what it would run and why:

# %%
from gemm_steps.course import cli

for shape in ([300, 300, 300], [3001, 2999, 1531], [4000, 60, 8000]):
    cli.main(["explain", *map(str, shape)])
    print()

# %% [markdown]
# Measuring those shapes showed where step 11 lost: on ragged shapes (no side a multiple of a tile, K odd) every
# tile ran on step 9's guarded edge kernel, one block per tile, in partly empty waves, and skinny products narrower
# than a tile had no full tiles for stream-K to balance. Now steps 10–11 cover partial tiles themselves: their
# kernel's guarded variant (`if EDGE:` — scalar loads zero-filled outside the matrices, stores only inside C) loops over
# *every* tile with the same stream-K schedule. Same GPU, each run against its own cuBLAS; under the figure, how much
# faster step 11 and cuBLAS each ran in the second run. And a small product is
# a short kernel, so the host's share counts: under the figure, what one `matmul` call cost in Python before and
# after **launch plans** — a shape's launches recorded once and replayed through `cuda.core` (NVIDIA's Python API to
# the CUDA driver, `toolkit/launch_plans.LaunchPlan`), which skips Numba's dispatcher. Each is next to an empty
# kernel launched through Numba in the same run: the host was not equally fast in the two runs, so compare each call
# with its own run's empty launch (`experiments/call_overhead.py`). A call with a plan costs less than an empty
# launch through Numba; the floor is an empty launch through `cuda.core`:

# %%
suites = lesson_25.shape_suites()
if suites:
    (before_path, before), (after_path, after) = suites
    print(f"before: {lesson.shown_path(before_path)}\nafter:  {lesson.shown_path(after_path)}")
    lesson.show_figure(lesson_25.suite_figure(before, after))
    lesson.say(lesson_25.suite_speedups(before, after))
overhead = lesson_25.call_overhead()
if overhead:
    print(f"one matmul call at {lesson.size_label(overhead.shape)}, host time:")
    lesson.say(lesson_25.call_overhead_table(overhead))

# %% [markdown]
# Read the bars with the table: a bar is step 11's time against cuBLAS's in its own run, and the two runs timed
# differently — in the first, the GPU could reach a launch's start event before the host had enqueued the kernel, so
# part of the host's launch work was counted, which overstates the shortest launches, cuBLAS's most
# ([docs/measurement.md](../docs/measurement.md): since 2026-11-25 a launch is queued behind a busy kernel). Where every tile is full, step 11's kernel did not change and its time moved a few percent at most;
# a bar that moved there moved with cuBLAS's time. Where the kernel changed (the ragged shapes, the skinny ones
# narrower than a tile, 640³), step 11 itself ran faster, by its column of the table — at 640³ cuBLAS's time fell
# about as much, so the bar hardly moved.
#
# Small squares and skinny products were the weak classes: at 512³ step 11 makes 8 tiles of 128×256 for 132 SMs.
# So the table also holds step 11's kernel built for **smaller tiles** (`dispatch.TILE_VARIANTS`: 128×128 and
# 64×64), timed with the suite; where they win, `matmul` runs them (`gemm-steps explain 512 512 512 --precision ieee`:
# among the FP32 kernels; by default, `tf32x3`, the 3xTF32 tensor-core steps compete too). Does the choice
# hold on shapes the table never saw? `experiments/matmul_held_out.py` timed such shapes in one run, hand-picked ones
# and, after them, shapes drawn at random (seeded, never tuned on), `matmul` at its default precision — so its choice
# may be a 3xTF32 tensor-core step (`+padded`: step 18's fast kernel on copies zero-padded to whole tiles):

# %%
held_out = lesson_25.held_out()
if held_out:
    rows = lesson_25.held_out_rows(held_out)
    lesson.say(lesson_25.held_out_table(rows))
    print(f"{held_out['environment'].get('gpu')}, {str(held_out['environment'].get('date'))[:10]}, cuBLAS timed in "
          f"the same run; matmul more than 3 % slower than step 11 alone: "
          f"{', '.join(r['shape'] for r in rows if r[lesson_25.SLOWER]) or 'nowhere'}")

# %% [markdown]
# ## Shapes nobody chose
#
# Those shapes were picked by hand, and `matmul` has changed since. The held-out set of issue 37
# (`gemm_steps/harness/held_out.py`) is drawn at random instead: 24 shapes, each side log-uniform between 64 and
# 16384, with a seed committed before any run, and 10 named for the suite's classes. `scripts/held_out.py` times, on
# each, what `matmul` chooses at both precisions against the cuBLAS of the same arithmetic, in one run. Nothing in the
# dispatcher may be fitted to these shapes: when its rule changed after a set's results had been seen, the set was
# drawn again ([deep dive: small products](deep_dives/25_small_products.ipynb) has where the small ones' time goes).
# The newest run on a set nobody had seen before it ran:

# %%
held_out_run = lesson_25.held_out_set()
if held_out_run:
    lesson.say(lesson_25.held_out_set_table(held_out_run))
    print(f"{held_out_run['environment'].get('gpu')}, {str(held_out_run['environment'].get('date'))[:10]}, seed "
          f"{held_out_run['held_out']['seed']}; each kernel launched directly, cuBLAS timed in the same run")

# %% [markdown]
# ## Split-K: when the tiles do not fill the SMs
#
# The draw before this one (seed 20261201) had its slowest `tf32` shapes at long K and few tiles: 260×939×5063 is
# 2 × 8 = 16 of step 17's 256 × 128 tiles, one block each, so 116 of the 132 SMs sat idle for all 159 k-tiles. Step
# 18 already split K there; step 17 now does too (`warp_specialized.slices`): each tile gets several blocks, block z
# sums its slice of the k-tiles into a workspace, and a second kernel adds the slices in order into C. The grey bars
# are the blocks step 17 launched before, the blue ones the blocks it launches now; the dashed line is one block per
# SM:

# %%
split_k = lesson_25.split_k_runs()
split_k_prediction = predictions.get(25, "split_k_over_one_slice")
if split_k and split_k_prediction:
    split_k_rows = lesson_25.split_k_rows(*split_k, split_k_prediction)
    lesson_25.split_k_figure(split_k_rows)

# %% [markdown]
# Splitting is not free: every slice refills the pipeline, writes a whole tile of partial sums and has it read back.
# The prediction, written before the first run (`experiments/split_k_tf32.py`, H200, cuBLAS in the same run), then
# what each run measured — the first with the first split-K kernel, the second with step 17 as shipped beside step 17
# before split-K:

# %%
if split_k and split_k_prediction:
    lesson.say(predictions.quote(split_k_prediction))
    lesson.say(lesson_25.split_k_table(split_k_rows))

# %% [markdown]
# Where K is long, a few slices turned a mostly idle GPU into a full one, and step 17 went from a fraction of cuBLAS
# TF32 to about its speed. Where K is short (640³, 1024³), the workspace cost more than the idle SMs did — the model
# had the workspace too cheap — so step 17 splits only from 64 k-tiles (`MIN_SPLIT_K_TILES`; 33–63 were not
# measured). The first kernel also lost at every shape to the one shipped, which differs only in how it stores a
# result (experiments/README.md). The set was then drawn again, because a kernel written after seeing a set's slowest
# shapes is tuned on them. On that draw the slowest shape had 96 rows: step 17's 256-row tiles left most of each tile
# empty. Step 17's kernel built for 128-row tiles ran such shapes faster (`experiments/hopper_tiles.py`) and became a
# tile variant `matmul` may choose at `precision="tf32"` (`warp_specialized@128x128`); the set was drawn once more.
# Its slowest shapes were skinny, with a big matrix whose rows the copy engine cannot read: copying it cost more than
# the product. Step 17's producer threads then read such a matrix as it is (lesson 17), then step 18's too, and the
# set was drawn again after each. Then the readable copy got faster (it had been doing a 64-bit division per float:
# `experiments/readable_copy_speed.py`) — and measured again, the copy beat the producer's threads at every shape, so
# no product takes the threads any more (`experiments/thread_copies.py`). A C of one or two tiles with a long K had
# run on 8–16 of 132 SMs, split into at most 8 slices; the cap went (`experiments/split_k_slices.py`). `matmul` learned
# to model a step's copies where the table never measured them, and no longer trusts a padded copy's speed measured
# where it copied nothing. Then step 21 brought stream-K to the tensor cores (lesson 21): at `precision="tf32"` a
# product just past one wave of tiles no longer runs its k-loop twice — and `matmul` judges a step far from its table
# by the share of its tiles inside C. Step 22 did the same for step 18, the default (on step 18, 140 tiles took 1.67×
# the time of 130 in `experiments/small_products.py`; lesson 22), where the waves it saves pay for its k-tiles, which run slower than step 18's for a reason not yet found; `matmul` runs it only near
# where it was measured. The next draw's slowest `tf32` shape was a large one: K = 14460 put every row of A off the
# 128-byte L2 lines, and steps 17 and 21 now copy A onto whole lines first where that pays (lesson 21); `matmul` also
# stopped ignoring a step measured only where it copied A or B at shapes where it reads them as they are (the same
# kernel without the copy). That draw's slowest shapes were small and short-K products, where a readable copy and each
# extra launch weigh most (at the slowest small one, step 18 and step 22 take the same 30 µs to cuBLAS SGEMM's 20:
# `experiments/README.md`). Each change was followed by a new draw. Step 18 then got a tile half as tall (64 × 128:
# two consumer warpgroups of 64 columns, as on its 128 × 128, each on half the rows; `experiments/half_tiles_3xtf32.py`:
# 1.10–1.36× step 18 at six small products, 0.72–0.78× at 2048³ and 4096³), and the suite three small products whose
# A or B is copied first. The next draw's slowest small product ran step 11's 64 × 64 tiles: `matmul` had judged them
# at 640³ against step 18's new tile judged at another shape, and now compares the two at the rival's shape. The
# next draw's slowest large product had K = 71 (5274×5673×71: three k-tiles a tile), where step 18 spends about as
# much on each tile's start, first copies and stores as on its k-loop; step 22's persistent loop hides that cost and
# now runs wherever a tile has at most 8 k-tiles (lesson 22). The next draw's slowest `tf32` shape ran step 22, a
# 3xTF32 step judged at one shape, against TF32 steps judged at another, where they had been faster at both; such a
# pair is now compared at both shapes. The next draw's slowest `tf32` shape was 69×5639×5962: 69 rows, and a 134 MB B
# whose rows the copy engine cannot read (N = 5639), copied first — read, written and read again, where cuBLAS reads
# it once — and the copy already ran at 3.9 TB/s. So step 17 stopped copying such a B: its rows 0, 4, 8, … are 16·N
# bytes apart, a pitch the copy engine reads, and four maps, one a residue mod 4, bring it (lesson 17; 1.6–2.0× the
# copy at few rows). Later draws led to four more changes: step 18 reads such a B by rows too, a copy lets the kernel
# after it start early, step 18 splits K only where the split pays ([deep dive: small products](deep_dives/25_small_products.ipynb)),
# and the table was measured again on the kernels as they are. The table above is the newest draw;
# `gemm_steps/harness/held_out.py`'s docstring lists every draw, its misses and what followed.
#
# ## What carries over to Triton and CUTLASS
#
# Every idea of the course has a name in the tools people use: **Triton** (OpenAI's Python language for GPU kernels,
# where you write what a block computes and its compiler writes the threads) and **CUTLASS** (NVIDIA's C++ template
# library for GEMMs, with CuTe for describing layouts):
#
# | course | Triton | CUTLASS / CuTe |
# |:--|:--|:--|
# | block tile, BLOCK_M × BLOCK_N × BLOCK_K (steps 3–5) | `BLOCK_M`, `BLOCK_N`, `BLOCK_K` as `tl.constexpr`; one program = one block tile | threadblock tile (`TileShape`) |
# | shared-memory staging (step 3) | implicit: `tl.load` of a block, the compiler stages it | shared-memory layouts, `cp.async`/TMA copies |
# | thread tile in registers (steps 4–5) | implicit: `tl.dot` on blocks; registers are the compiler's | the MMA/thread tile; register fragments |
# | 128-bit loads, transposed A (step 6) | chosen by the compiler from the layout | vectorised copy atoms, swizzled layouts |
# | `unroll()` and `registers()` (step 7) | `tl.static_range`, blocks as values | templates, `CUTE_UNROLL` |
# | double buffering (step 8) | `num_stages` | multistage mainloop (`Stages`) |
# | warp tiling (step 9) | `num_warps` | warp tile (`WarpShape`) |
# | grouped tile order (step 10) | `GROUP_SIZE_M` in the matmul tutorial | threadblock swizzle |
# | stream-K (step 11) | split-K / stream-K kernels in the tutorials and libraries built on Triton | `GemmUniversal` with the stream-K tile scheduler |
# | TF32 tensor cores, `mma.sync` (step 12) | `tl.dot(a, b, input_precision="tf32")` (the default for float32 inputs) | `OpClassTensorOp` with `tfloat32_t` operands, SM80 MMA atoms |
# | 3xTF32 (steps 13–14) | `tl.dot(a, b, input_precision="tf32x3")` | the fast-FP32 op, `arch::OpMultiplyAddFastF32` |
# | `wgmma` from shared memory, swizzled A (steps 14–15) | chosen by the compiler on Hopper (`tl.dot` lowers to `wgmma`) | SM90 GMMA atoms, swizzled shared-memory layouts |
# | TMA and an mbarrier ring (step 16) | tensor descriptors (`tl.make_tensor_descriptor`) and `num_stages` | TMA copy atoms, `PipelineTmaAsync`, the `MainloopSm90TmaGmmaWarpSpecialized` mainloop |
# | a producer warpgroup, `setmaxnreg` (step 17) | warp specialization by the compiler (`tl.range(..., warp_specialize=True)`) | `KernelTmaWarpSpecialized` (and its `Cooperative` / `Pingpong` schedules), `cutlass::arch::warpgroup_reg_alloc` / `warpgroup_reg_dealloc` |
#
# The difference is who writes what. In Numba the course wrote every index; Triton writes the thread-level code
# from block-level operations, and CUTLASS composes it from templates. Both hit the same walls this course did —
# which is why knowing the walls lets you read their knobs.
#
# ## The tensor cores: steps 12–23, and what is left
#
# Steps 1–11 used the FP32 units; [lesson 12](12_tensor_cores.ipynb) drove the tensor cores from Numba
# (`mma.sync` through inline PTX) in TF32, and [lesson 13](13_three_tf32.ipynb) won float32's accuracy back with
# three TF32 products per product (3xTF32); [lesson 14](14_warpgroup_mma.ipynb) ran those three products on
# Hopper's warpgroup MMA, `wgmma`, and [lesson 15](15_warpgroup_tf32.ipynb) ran plain TF32 on it;
# [lesson 16](16_tma_pipeline.ipynb) fed it with the copy engine through an mbarrier ring and
# [lesson 17](17_warp_specialized.ipynb) gave the copies a producer warpgroup of its own, and
# [lesson 18](18_warp_specialized_3xtf32.ipynb) ran 3xTF32 on that design, [lesson 19](19_pingpong.ipynb) made
# step 17 persistent and ping-pong (slower, and why), [lesson 20](20_cluster_multicast.ipynb) ran it in clusters of
# two blocks that share A's tile, [lesson 21](21_warp_specialized_stream_k.ipynb) brought step 11's stream-K to it,
# [lesson 22](22_warp_specialized_3xtf32_stream_k.ipynb) ran 3xTF32 on that schedule, and
# [lesson 23](23_cluster_stream_k_tma_store.ipynb) put step 21 on clusters of two with cuBLAS's TMA-store epilogue —
# the course's fastest TF32 step. Where steps 12–15 stand against the course's targets, from the
# same results file (errors: sampled, relative to float64; a 3xTF32 step meets its target only at an error no
# larger than cuBLAS SGEMM's; step 12 sits at its target, so its row can flip from one run to the next —
# [lesson 12](12_tensor_cores.ipynb) counts it over every benchmark):

# %%
if results:
    lesson.say(lesson_25.target_table(lesson_25.target_rows(results)))

# %% [markdown]
# Steps 16 and 17 against the Hopper chapter's target (a share of cuBLAS TF32 at 4096³ and 8192³), from the run that
# measured them beside step 15 and both cuBLAS (another GPU than the benchmark's above, maybe: the caption says
# which); step 18 against its target (a multiple of cuBLAS SGEMM at both sizes) from the benchmark above. Step 18's
# target is higher than the 3xTF32 target of the table above: it was set for the chapter's final design (TMA, a
# producer warpgroup), that one for steps 13–14, whose threads all copy and meet at a block barrier. Each cell of the
# table also gives the SM clock the kernel ran at: at 8192³ the GPU ran some kernels below its top clock, each at its
# own, so a share there compares kernels at different clocks ([lesson 17](17_warp_specialized.ipynb) works out step
# 17's share per clock).

# %%
hopper_run = producer_order_run()
if hopper_run:
    lesson.say(lesson_16.speed_table(hopper_run, ["cublas", "cublas_tf32", "warpgroup_tf32", "tma_pipeline",
                                                  "warp_specialized"]))
    for name in ("tma_pipeline", "warp_specialized"):
        v = hopper_tf32_verdict(hopper_run, name)
        shares = ", ".join(f"{lesson.size_label(s)} {q['pct_of_cublas_tf32']:.0f} %" for s, q in v["sizes"].items())
        print(f"{name}: {shares} of cuBLAS TF32; target {v['target_pct']:.0f} %: {'met' if v['met'] else 'not met'}")
v18 = lesson_18.verdict(results) if results else None
if v18:
    shares = ", ".join(f"{lesson.size_label(s)} {q.vs_sgemm:.2f}× ({'met' if q.met else 'not met'})"
                       for s, q in v18.sizes.items())
    print(f"warp_specialized_3xtf32 (the benchmark above): {shares} cuBLAS SGEMM; target {v18.target}×")

# %% [markdown]
# Steps 12–13 are latency-bound at 8 warps per SM (lesson 12's profile). Steps 14–15 run on `wgmma` (Hopper's
# warpgroup MMA: 128 threads per instruction, one operand straight from shared memory, asynchronous), with A in
# its 128-byte swizzle layout. Steps 16–17 feed it Hopper's way: the copy engine (TMA) fills a ring of stages
# guarded by mbarriers, and in step 17 a producer warpgroup does nothing else, its registers handed to the consumers
# with `setmaxnreg`; step 18 runs 3xTF32 on that design, its producer warpgroup splitting A in shared memory. Steps
# 14–19 run on H100 and H200 only (steps 12–13 on any GPU from compute capability 8.0), all with simulator twins.
# Step 19 tried the last piece of the design CUTLASS teaches, a
# persistent grid with ping-pong consumers ordered by named barriers, and lost to step 17. A controlled run
# (`experiments/pingpong_fair.py`, lesson 19) says why: with step 17's work per consumer and only the schedule
# changed, ping-pong still ran about a third slower, because a consumer that owns its tile loads its own A — more
# L2 bytes per FLOP, at the highest L2 rate any build drew. Not the operand path: CUTLASS's ping-pong and cuBLAS's
# TF32 kernel take it too. Step 20 puts two blocks in a cluster that share A's tile by TMA multicast (lesson 20);
# step 21 runs step 17's k-tile on a persistent grid with stream-K (lesson 21: faster where the last wave is
# part-empty, a few percent where the waves are whole), step 22 step 18's (lesson 22). What is left is ping-pong on the cluster design, and a
# persistent step with clusters and a TMA-store epilogue ([docs/tensor_cores.md](../docs/tensor_cores.md)) — though at
# 4096³ step 17 loses to cuBLAS TF32 mostly in its k-loop's pace, not in the fixed costs those would hide ([deep dive
# 17: the gap to cuBLAS](deep_dives/17_the_gap_to_cublas.ipynb)).
#
# ## Your turn
#
# The kernels of steps 1, 2, 3, 5 and 10's tile loop are exercises, and so is one idea of each of lessons 11–14, 16,
# 17, 19, 20 and 23 (from stream-K's fix-up to the TMA store): `gemm-steps exercise list` names them, and
# `gemm-steps exercise check NAME` grades yours on the simulator — which element is wrong, which thread read out of
# bounds, which threads race on shared memory, which barrier never completes and why. The stubs are in `exercises/`.
