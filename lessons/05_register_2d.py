# %% [markdown]
# # Lesson 5 — Register tiling in two dimensions: an 8×8 block per thread
#
# Lesson 4 reused one value of B eight times, and its prediction failed: step 4 was held back by the instructions
# around its FMAs, not by shared memory. This step reuses *both* operands. A thread that owns an 8×8 block of C
# loads 8 values of A and 8 of B per k and multiplies every one with every other — an **outer product**, 64 FMAs
# from 16 loads. This is the register tiling every fast GEMM uses. (Warps, registers, shared memory, banks and
# occupancy are explained in [lesson 0b](00_the_gpu.ipynb).)

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_05

shared, register_1d, register_2d = (gemm_steps.get_step(name)
                                    for name in ("shared_memory", "register_1d", "register_2d"))
print(register_2d.doc)

# %% [markdown]
# ## The idea
#
# A block computes a `BLOCK_M × BLOCK_N` tile of C with a 16 × 16 grid of threads. Thread `t` owns the `THREAD_M ×
# THREAD_N` block of C at block-row `t // 16` and block-column `t % 16`. At each step `kk` of the k-loop it copies a
# column of A's shared tile into registers (`a_frag`) and a row of B's (`b_frag`). Then it adds their outer product to
# its accumulators (`acc`), which stay in registers for the whole k-loop. Drawn from the step's tile constants:

# %%
lesson.show_figure(lesson_05.outer_product_figure(register_2d.config))

# %% [markdown]
# ## The kernel
#
# The whole step as it runs (`gemm-steps diff 4 5` shows what changed from step 4). One change is not about tiling:
# every index is computed from `uint32` values. The thread and block indices are cast with `uint32(...)`, and
# `BM`, `BN`, `BK`, `TM`, `TN`, `NT` are `BLOCK_M`, …, `THREADS` as NumPy `uint32` scalars: read `TM` as 8. Why
# that matters is the subject of a deep dive (below). The module also keeps the first attempt at this step,
# `register_2d_signed_kernel`, which the step does not launch.

# %%
lesson.show_source(register_2d, docstring=False)

# %% [markdown]
# ## The prediction
#
# First from the tile sizes alone. Per k, how many values one thread loads from shared memory and how many FMAs it
# does with them. Per k-tile, how many loads from global memory a block makes per FMA: it uses each element of
# its A tile `BLOCK_N` times and each element of its B tile `BLOCK_M` times.

# %%
lesson.say(lesson_05.reuse_table([shared, register_1d, register_2d]))

# %% [markdown]
# Per thread, step 5 does several times as many FMAs per shared load as step 4 (the fourth column), and its
# blocks make half as many global loads per FMA (the last).
#
# But shared memory serves a whole warp's load at once, in *wavefronts*: one when the 32 lanes read different
# banks or the same word, more when lanes need different words of one bank (lesson 3). Lesson 4's model counts
# them for one warp and one k-step, and turns them into a ceiling at one wavefront per clock per SM. For the first
# warp of a block (threads 0–31: block-rows 0 and 1 of step 5's 16 × 16 threads), lanes 0 and 16 read A words
# `THREAD_M · BLOCK_K` floats apart, in the same bank, and the 16 lanes of a block-row read B words `THREAD_N`
# floats apart, four to a bank:

# %%
results = lesson.measure_or_load(["shared_memory", "register_1d", "register_2d"], [512, 1024, 2048, 4096, 8192])
if results:
    predicted = lesson_05.prediction(results, register_1d, register_2d)
    lesson.say(predicted.table)

# %% [markdown]
# **Prediction: if shared memory were the limit, step 5 could be faster than step 4 by the ceilings' ratio** (the
# last row). Lesson 4 taught us to distrust a model that counts one resource: step 4 was held back by the
# instructions around its FMAs, not by shared memory. So this is a ceiling, not a forecast.
#
# ## Is it right?
#
# Against NumPy (in float64) on the simulator, at a ragged shape that cuts through every edge of the tiles, and at
# a whole one:

# %%
lesson.check_against_numpy(register_2d, [(33, 17, 40), (64, 64, 64)])

# %% [markdown]
# ## The measurement
#
# Steps 3, 4 and 5 and cuBLAS in the course's benchmark, at its largest size and across sizes:

# %%
lesson.timing_table(results, ["shared_memory", "register_1d", "register_2d"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results, steps=["shared_memory", "register_1d", "register_2d"]))

# %% [markdown]
# ## What the profiler says
#
# Nsight Compute's reports of steps 4 and 5 (one 2048³ launch each, shipped with the course). Below the report,
# the wavefront model of the prediction against the profiler's own count of shared-memory wavefronts and bank
# conflicts, per warp and k-step (the model: the fragment loads of the prediction plus the tile stores):

# %%
lesson.show_profile("register_1d", "register_2d")
lesson.say(lesson_05.profile_check(register_1d, register_2d))

# %% [markdown]
# Step 4's profile matches the model. Step 5's does not match its loads as written: it matches the middle column.
# The compiler did something the prediction did not count. B's 8 fragment values are 8 neighbouring floats, and
# `ptxas`, the assembler that turns the compiled PTX into machine code, loads them with two 128-bit instructions
# instead of eight 32-bit ones. Served a quarter-warp (8 lanes) at a time, each takes two wavefronts per quarter,
# half what B's fragment costs as written. Global load requests halve, as the tile sizes said, and step 5 executes
# far fewer instructions per FMA than step 4 (the last two rows).
#
# ## What the measurement says

# %%
if results:
    measured = lesson_05.verdict(results, [shared, register_1d, register_2d], predicted)
    lesson.say(measured.table)
    lesson.say(measured.sizes)
    print("faster than the model allowed:", measured.beats_model, "| some size leaves SMs idle:", measured.idle_sms)

# %% [markdown]
# Step 5 beats step 4 by more than the shared-memory model allowed, and the profiles say why the model was too low
# on both counts:
#
# * **The ceiling counted loads that do not run.** With B's fragment in two 128-bit loads, as the profiler counts
#   it, the ceiling is the last row of the table.
# * **Step 4 was not at its shared-memory ceiling to begin with**: it was bound by the instructions it issued per
#   FMA (the profiler's table above). An outer product needs far fewer loads and index computations per FMA — and
#   step 5's indices are unsigned (below).
#
# Size by size (the second table, with the blocks each grid has for the GPU's SMs): at small sizes, 128×128 tiles make
# so few blocks that SMs sit idle: plain lack of parallelism (lesson 10 gives it a name, wave quantization).

# %% [markdown]
# ## Signed indices, and a strided thread map
#
# Step 5 differs from step 4 in two things at once: the tiling, which the model counts, and the index types, which
# it does not. In Python `x[-1]` is the last element, and Numba keeps that meaning. So for an index whose *type*
# is signed it adds a test and a fix-up to every array access. Step 4 still computes its indices as signed
# integers, and so did the first attempt at this step. An experiment (`experiments/register_2d.py`) timed that
# first attempt (`signed`) next to step 5 as shipped (`unsigned`: unsigned indices), next to a variant that changes
# which elements of C a thread owns (`unsigned_strided`: a strided thread map), and next to steps 3 and 4
# (`shared_memory`, `register_1d`), all in one run:

# %%
experiment = lesson_05.load_experiment()
if experiment:
    lesson.say(lesson.variants_table(experiment, "variant", ["signed", "unsigned", "unsigned_strided",
                                                             "shared_memory", "register_1d"], base="signed"))

# %% [markdown]
# With signed indices the first attempt sat near steps 3 and 4; the same kernel with unsigned indices, step 5 as
# shipped, is several times faster (the last columns) from the types of its indices alone. A strided thread map on
# top gains more still.
#
# Two deep dives take these apart:
#
# * [Deep dive: signed indices](deep_dives/05_signed_indices.ipynb) checks and times the first attempt. It finds
#   the sign tests in its PTX and measures their cost in instructions, registers and occupancy. It also gives the
#   rules that keep an index unsigned in Numba.
# * [Deep dive: a strided thread map](deep_dives/05_strided_map.ipynb) shows how the 128-bit loads of B show in the
#   profiler's counts. It then gives each thread every 16th row and column instead of a contiguous block: fewer
#   bank conflicts and a faster kernel, but not what step 6 needs. This is a preview of step 9.
#
# ## What is left
#
# The register tiling pays off now, and step 5 has a new limit. Its profile says what it waits for:

# %%
lesson.say(lesson_05.waiting(register_2d))

# %% [markdown]
# Step 5 spends much of its time waiting: in many cycles no warp is ready to issue. With its registers only a few
# blocks fit on an SM, and shared memory is close to its limit, a good part of it spent on bank conflicts. What
# surrounds the FMAs is what the next steps go after:
#
# * **Scalar loads.** The tile copies from global memory move one float per instruction, each behind a bounds
#   check. A's fragment is 8 scalar shared loads: its values are 8 floats apart, so `ptxas` could merge only B's.
#   The 64 results are stored one by one, each behind its own check.
# * **2-D arrays with run-time shapes.** Every access computes its address in 64-bit arithmetic (the
#   signed-indices deep dive's table counts what is left of it), and `a[row, col]` multiplies by a row length read
#   from the array at run time.
# * **Loops the compiler did not unroll.** The `kk` loop reaches `ptxas` as a loop, with its counter, compare and
#   branch (the signed-indices deep dive counts its FMAs in the PTX).
# * **Bank conflicts** of the contiguous map: step 6 keeps them and step 9 removes them.
#
# Step 6 changes *how* the data moves, with the same tiles: flat arrays, 128-bit loads and stores, a transposed A
# tile, aligned shared memory. Step 7 unrolls the loops.
#
# Next: [Lesson 6: vectorized loads](06_vectorized.ipynb)
