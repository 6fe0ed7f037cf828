# %% [markdown]
# # Deep dive (lesson 09_warp_tiling): the last ten percent
#
# [Lesson 9](../09_warp_tiling.ipynb) ends with step 9 at about nine tenths of cuBLAS, executing about as many
# instructions but issuing them more slowly. This notebook keeps the forensics and the four experiments that tried
# to close that gap: what is known about the register file, the FMA order, register double buffering, cuBLAS's
# `cp.async` copies and cheaper index arithmetic, and a search over equivalent code shapes. Every experiment ran on
# an H200, each in one run with cuBLAS; the kernel variants are in `experiments/kernels/`, out of the shipped steps
# (`tests/test_variants.py` keeps them correct).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_09
from gemm_steps.harness import results_files

warp_tiling = gemm_steps.get_step("warp_tiling")
lesson.say(lesson_09.issue_table())

# %% [markdown]
# ## What is known about the register file
#
# An `FFMA` reads three source registers. The rule usually quoted, "two source operands in the same register bank
# stall", describes **Maxwell and Pascal**: four banks, chosen by the register number modulo 4. It was found by
# reverse engineering (Scott Gray's `maxas`), and NVIDIA never documented it.
#
# **Volta changed it.** Jia, Maggioni, Staiger and Scarpazza measured Volta in "Dissecting the NVIDIA Volta GPU
# Architecture via Microbenchmarking" (2018, arXiv:1804.06826). They found two banks, each 64 bits wide, chosen by
# the register number modulo 2. Their `FFMA` test conflicted only when **all three** source registers were in one
# bank: `FFMA R6, R97, R99, RX` stalled for odd `RX` and not for even. Each 128-bit Volta instruction word also
# carries control bits that the compiler sets, among them a reuse flag for each source-operand slot. Huerta et al.
# ("Analyzing Modern NVIDIA GPU cores", 2025, arXiv:2503.20481) reverse-engineered Ampere (RTX A6000) and checked
# their model on Turing. They describe a register file with a small cache in front of it, filled by those compiler
# hints. For **Hopper**, NVIDIA documents neither the number of banks nor their width nor a conflict rule, nor the
# reuse cache's size. We know of no public measurement of Hopper's register file as detailed as these, so this
# course claims no bank rule for the H100 or H200.
#
# What *is* visible is in the SASS. A `.reuse` flag sits on a **source operand** of one instruction, for example
# `R2` in `FFMA R4, R2.reuse, R8, R4`. It tells the hardware to keep that operand in the *operand reuse cache*. The
# next instruction that reads `R2` **in the same operand slot**, say `FFMA R5, R2, R9, R5`, then takes it from the
# cache instead of the register file. So the flag marks the instruction that reads the value first, not the one
# that benefits. `ptxas` sets these flags; we cannot set them from Numba or PTX.
#
# We can choose the order of the FMAs, though. Row by row (`acc[i][j] += a[i] * b[j]` for j = 0 … 15, then the next
# i), consecutive FFMAs share `a[i]` in the same slot, except where a row ends. In a **serpentine** order, odd rows
# run backwards (j = 15 … 0), so the FFMA after a row end shares `b[15]` with the one before it.
#
# **Prediction.** If register reads are what slows the issue, the gain is at most the extra reuse:

# %%
reuse = lesson_09.reuse_counts(lesson_09.k_loop_sass(), warp_tiling)
lesson.facts({key: reuse.numbers[key] for key in ("FFMAs per k-tile", "extra .reuse at most (row ends)",
                                          "at most, as a share of the FFMAs")})

# %% [markdown]
# That is a few percent at most, not the whole gap. The SASS of both orders, and the registers `ptxas` gives each,
# comes from a shipped file that `python -m experiments.k_loop_sass` writes on a CPU: the experiments' kernel
# variants from `experiments/kernels/`, compiled for sm_90 by the `ptxas` binary and read with `nvdisasm` (the
# tools and date below). The loop counted is the k-tile loop (`loop_mix` in `gemm_steps/course/sass.py`), one
# k-tile of `BLOCK_K` k-steps. The driver's JIT on the GPU host may schedule and allocate differently.

# %%
sass = lesson_09.k_loop_sass()
lesson.say(lesson.facts({**sass["tools"], "compiled on": sass["date"], "file": sass["path"],
                         "BLOCK_K": warp_tiling.config["BLOCK_K"]}))
lesson.say(lesson_09.sass_table(sass, ["row_order", "step9 shipped"]))
lesson.say(reuse.table)

# %% [markdown]
# `experiments/fma_order.py` timed the two orders in one run:

# %%
fma_order = lesson.load_shipped(results_files.EXPERIMENT_FMA_ORDER_ANY, "step 9 with row-order and serpentine FMAs, "
                                "timed in one run")
lesson.variants_table(fma_order, "FMA order", ["row_order", "serpentine"], base="row_order") if fma_order else None

# %% [markdown]
# A few percent, as predicted. (The tuning sweep in lesson 9 ran before, with row-order FMAs.) A first run of that
# experiment had a bug: the serpentine index expression turned one column of every odd row into a duplicate, so one
# FMA was done twice and one never. The benchmark's float64 spot check flagged the result as wrong, and
# `tests/test_variants.py` now checks that every order computes exactly the same products — a faster kernel is only
# a result once it is checked.
#
# ## Register double buffering: a textbook move that lost
#
# CUTLASS's SIMT kernels double-buffer twice: the tiles in shared memory (step 8) and the *fragments* in registers.
# With two fragment sets that alternate by column of the k-tile, column kk + 1's shared loads are in flight while
# column kk's FMAs run; and right after each barrier, the next stage's first fragments are loaded while the current
# stage's last column is computed. The variant is `experiments/kernels/warp_tiling_pipelined.py` (`diff
# gemm_steps/steps/warp_tiling.py experiments/kernels/warp_tiling_pipelined.py` shows the whole change). Its k-loop:
# first the columns whose next fragments load while the current ones compute,

# %%
_ = lesson.show_file("experiments/kernels/warp_tiling_pipelined.py", start="# Columns 0", stop="a_frag[kk % 2][i]")

# %% [markdown]
# and after the barrier, the next stage's first fragments, loaded while the last column of the stage before is
# computed:

# %%
_ = lesson.show_file("experiments/kernels/warp_tiling_pipelined.py", start="stage t % 2 is written",
                                  stop="a_frag[(BLOCK_K - 1) % 2][i]")

# %% [markdown]
# **Prediction.** After each barrier, step 9's first FMAs wait for their fragments: one shared-load latency per
# k-tile. How large is that? (Computed here from the SASS and the profile; the prediction written before the run,
# in `experiments/pipelining.py`, used round figures.)

# %%
lesson.say(lesson_09.pipelining_prediction(sass, warp_tiling).table)

# %% [markdown]
# A k-tile costs one scheduler its warps' instructions at the measured issue rate; one shared-load latency after each
# barrier, about 30 cycles (the figure `experiments/pipelining.py`'s prediction used), is the last row's share of
# that. Hiding it should be worth 1 to 3 points of cuBLAS (the prediction in `experiments/pipelining.py`), and a
# little more for step 8, which has half the FMAs per k-tile to hide it behind. `experiments/pipelining.py` timed both
# steps with and without it in one run, and three other tile shapes with it. The shipped step 9 ran first and again
# last, to show the spread within the run:

# %%
pipelining = lesson.load_shipped(results_files.EXPERIMENT_PIPELINING_ANY,
                                 "steps 8 and 9 with and without register double buffering, timed in one run")
lesson.variants_table(pipelining) if pipelining else None

# %% [markdown]
# It lost: with the shipped tiles, step 9 with pipelined fragments is several points *slower* at both sizes, and
# none of the other tile shapes brings it back. Step 8 gained under a point, too little to tell apart from the
# variation between separate runs. The prediction was wrong in sign. Nsight Compute, on one launch of each at 4096³
# (`ncu --clock-control none`, `experiments/pipelining.py --profile`, the report
# `experiments/results/ncu-step9-pipelined-cublas-nvidia-h200.txt`):

# %%
lesson.say(lesson_09.ncu_h200_table(sass))

# %% [markdown]
# Registers as the kernels ran: ours compiled from PTX by the driver's JIT on that host (and, beside them, what
# `ptxas` gives the same kernels here: the same counts); cuBLAS's compiled by NVIDIA, in the library. More
# instructions at the same issue rate. The SASS says where they come from:

# %%
lesson.say(lesson_09.sass_table(sass, ["step9 shipped", "step9 pipelined"]))

# %% [markdown]
# The second stage offset and the extra branches cost index arithmetic, and `ptxas` put fewer FFMAs on the reuse
# cache. The shared-load latency we set out to hide was not what cost time: step 9 is limited by **how fast its
# instructions issue**, so a change that adds instructions, or costs operand reuse, loses. (That is also why steps
# 10 and 11 keep step 9's k-loop.)
#
# The same report names cuBLAS's kernel (the last row): in its column-major terms a 256×128 tile, which is our
# 128×256; k-tiles of 8; 8 warps of 256 threads; one block per SM and the same 16 × 32 grid. That is the design
# this course arrived at by measurement. The differences are a three-stage `cp.async` pipeline (copies from global
# to shared memory that skip the registers) and SASS whose registers are allocated for the FFMA stream. (At 2048³ on
# the H100, cuBLAS chose another kernel; lesson 9 names it with its issue rate.)
#
# ## Trying cuBLAS's copies, and cheaper index arithmetic
#
# `cp.async` is one more inline-PTX intrinsic, `copy_async` in `gemm_steps/toolkit/intrinsics.py` (with a
# plain-Python twin for the simulator). A variant of step 9, `experiments/kernels/warp_tiling_async.py`, has two
# compile-time switches: `ASYNC_B` copies B's k-tile with 16-byte `cp.async` straight into the next shared stage, and
# `ASYNC_A` copies A's floats one by one (4-byte `cp.async`) into their transposed places; one `cp.async.wait_all`
# before the barrier replaces the shared-memory stores. A third variant touches only index arithmetic: the stage
# `k_tile % 2` is computed from the signed 64-bit loop counter; in unsigned 32-bit arithmetic it is one AND.
#
# **Prediction.** The loop is bound by instruction issue, so each variant should move time by about its change in
# instructions per k-tile:

# %%
lesson.say(lesson_09.sass_table(sass, ["step9 shipped", "uint32 stage", "async B", "async A+B",
                                       "async A+B, uint32 stage"]))

# %% [markdown]
# A few percent either way, so a few percent of time. (The counts are of the variants as they compile today; the
# prediction in `experiments/async_copy.py`, written before its run, quotes the counts of that day.)
# `experiments/async_copy.py`, one run, the shipped kernel first and again last:

# %%
async_copy = lesson.load_shipped(results_files.EXPERIMENT_ASYNC_COPY_ANY,
                                 "step 9 with cp.async copies and with unsigned stage arithmetic, timed in one run")
lesson.variants_table(async_copy, base="step9 shipped") if async_copy else None

# %% [markdown]
# Every variant is slower (the last columns: the shipped kernel's time over the variant's), and by far more than its
# change in instructions in the table before says. Even the unsigned stage, with *fewer* instructions, loses several
# points. What the variants share is a leaner register allocation (the table before). Given the fully unrolled k-tile,
# `ptxas` chooses its own schedule: how far ahead of the FFMAs to load fragments, and which registers hold which
# accumulator. For the shipped PTX it chose one that fills the register file; for each variant a leaner one that
# issues worse. Small changes to the PTX move the result by several percent, in directions no instruction count
# predicts. So the shipped kernel is a **measured local optimum**, not a designed one.
#
# ## Searching instead of predicting
#
# If predicting fails, one can still *search*: write the same k-column in other shapes that compute bit-identical
# results — other orders of its 128 independent FMAs, or B's fragments loaded just before their FMAs — and let the
# GPU pick. Before the run we set the bar: adopt a shape only if it beats the shipped one by over 1 % at both sizes.
# `experiments/code_shapes.py` (its shapes in `experiments/kernels/warp_tiling_fma_order.py`), one run:

# %%
shapes = lesson.load_shipped(results_files.EXPERIMENT_CODE_SHAPES_ANY, "step 9's k-column in equivalent FMA orders and "
                             "load placements, timed in one run")
found = lesson_09.code_shapes(shapes) if shapes else None
if found:
    lesson.say(found.table)
    print("best shape:", found.best, "— over 1 % at every size, so adopt it:", found.adopt)

# %% [markdown]
# No shape clears the bar, so step 9 keeps its serpentine order. Equivalent code shapes spread over a few percent, not
# the whole gap to cuBLAS. The last ten percent lies in the schedule and register allocation below PTX — the level at
# which cuBLAS's kernels are tuned, and which Numba, like CUDA C, does not let us write.
#
# Back to [lesson 9](../09_warp_tiling.ipynb).
