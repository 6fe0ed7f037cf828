# %% [markdown]
# # Lesson 7 — Unrolling at compile time, and choosing tile sizes by measuring them
#
# Step 6's inner loop is still a loop: every k-step pays a counter, a compare, a branch and address arithmetic for
# its 64 FMAs. C++ CUDA would add `#pragma unroll` and be done. Numba has no such pragma, so this step *marks* the
# loops to unroll, in ordinary Python, and a small compile step expands them into straight-line code before Numba
# compiles it. The tile sizes become parameters too, so they can be **tuned** by measurement. (Warps, registers,
# shared memory and occupancy are explained in [lesson 0b](00_the_gpu.ipynb).)

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_07
from gemm_steps.harness import results_files
from gemm_steps.toolkit import unroll

vectorized, unrolled = gemm_steps.get_step("vectorized"), gemm_steps.get_step("unrolled")
print(unrolled.doc)

# %% [markdown]
# ## The idea: loops marked for the compiler
#
# `gemm_steps.toolkit.unroll` reads a kernel's Python source and expands the few things it marks, before Numba sees
# the kernel:

# %%
lesson.show_excerpt(unroll.__doc__, start="``for i in unroll(N):``", stop="Everything here is plain Python")

# %% [markdown]
# Here is the heart of step 7's kernel as written, the k-loop over one shared tile. `for kk in unroll(BLOCK_K)`
# repeats its body for every column of the tile, and the two nested `unroll` loops write the 64 FMAs of the outer
# product into `acc`, the register tile that `acc = registers(THREAD_M, THREAD_N)` declares at the top of the
# kernel:

# %%
lesson.show_kernel(unrolled, start="# The unrolled k-loop", stop="syncthreads()")

# %% [markdown]
# And this is what it expands into, from the barrier before that loop on: the code Numba really compiles, printed
# whole by `unrolled.generated_source()`. The accumulators are no longer an array but 64 named variables
# `acc_0_0 … acc_7_7`, and every shared-memory offset is a constant the compiler can fold into the load
# instruction:

# %%
lesson.show_excerpt(unrolled.generated_source(), start="syncthreads()", lines=16)

# %% [markdown]
# Against step 6, as written (`gemm-steps diff 6 7` in a terminal):

# %%
lesson.show_diff(vectorized, unrolled)

# %% [markdown]
# ## The prediction
#
# What the unrolling removes shows in the compiled code. Both kernels are compiled to PTX here (on the CPU, no GPU
# needed; [lesson 4](04_register_1d.ipynb) explains the table), and their k-loops counted per FMA. The picture
# stacks the k-loop's instructions per FMA by kind: everything right of the FMAs' 1.00 is overhead the warp
# schedulers must also issue. If the issue slots are the limit, the FP32 peak divided by instructions per FMA is a
# ceiling, and a kernel that keeps its share of that ceiling speeds up by the ratio of the ceilings (next cell).

# %%
compiled = lesson_07.compile_with_registers(vectorized, unrolled)
kernels = {label: compiled[label] for label in ("vectorized_fast", "unrolled_fast")}
lesson.show_figure(lesson_07.mix_figure(kernels))
lesson.compiled_table(kernels)

# %%
results = lesson.measure_or_load(["vectorized", "unrolled"], [512, 1024, 2048, 4096])
if results:
    predicted = lesson_07.prediction(results, kernels, vectorized, unrolled)
    lesson.say(predicted.table)

# %% [markdown]
# Instructions per FMA fall, so the issue ceiling rises. **If step 7 keeps step 6's share of its issue ceiling,
# expect the speedup in bold.** Two other things changed with the tiles step 7 is built with: a deeper `BLOCK_K`
# and an occupancy hint, `MIN_BLOCKS_PER_SM` (the last two rows). The model counts neither; the tuning sweep below
# measures each.
#
# ## Is it right, and how fast?
#
# The fast kernel needs whole tiles (here 128×128 with `BLOCK_K` = 16 on the simulator), so the checks include one
# full tile, and a full tile with ragged edges next to it, which the edge kernel covers. Then the measurement: steps
# 6 and 7 and cuBLAS in the course's benchmark, at its largest size and across sizes, and what they say about the
# prediction.

# %%
lesson.check_against_numpy(unrolled, [(33, 17, 40), (128, 128, 32), (129, 132, 32)])

# %%
lesson.timing_table(results, ["vectorized", "unrolled"])
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))
    measured = lesson_07.verdict(results, predicted)
    lesson.say(measured.table)
    print("against the prediction:", measured.outcome)

# %% [markdown]
# The line under the table reads the speedup against the predicted ratio: `as predicted` (at least 95 % of it) would
# mean the instructions were all that held step 6 back, `most of it` is 85–95 %, `less` under 85 %. Removing
# instructions helped, but step 7 reaches a smaller share of its own ceiling than step 6 did (the table's last two
# rows), so issue slots are no longer the only thing it waits for. The next lesson finds what else it waits for.
#
# ## Choosing the tile sizes: autotuning
#
# With the kernel compiled from its tile constants, trying another tile shape is one line: `TileConfig(BLOCK_M=…,
# BLOCK_N=…, BLOCK_K=…, THREAD_M=…, THREAD_N=…, MIN_BLOCKS_PER_SM=…)`. The last field is an **occupancy hint**:
# `MIN_BLOCKS_PER_SM = 2` compiles the kernel with `launch_bounds=(256, 2)`, which tells `ptxas` (the assembler
# that turns PTX into machine code) that two blocks of 256 threads must fit on one SM, so it must stay within the
# registers that allows. Which configuration is best depends on the GPU, so the course measures it: each tunable
# step lists candidates in its `SEARCH_SPACE`, and `gemm-steps tune unrolled` (on a GPU) times them all at 4096³,
# writes every timing to `results/tuning-unrolled-<gpu>.json` and records the winner in your tuning table
# (`~/.cache/gemm-steps/tuned.json`), which that GPU then uses. Without one, and on the simulator, a step uses the
# first entry of its search space: the course put its own sweep's winner there. The sweep shipped for step 7:

# %%
sweep = lesson.load_shipped(results_files.TUNING_UNROLLED_ANY,
                            "`gemm-steps tune unrolled`: every candidate configuration, timed in one run")
if sweep:
    lesson.show_figure(lesson_07.sweep_figure(sweep))
lesson.sweep_table(sweep, unrolled) if sweep else None

# %% [markdown]
# **The rule** (`tuning.choose_best`): the fastest configuration wins, unless others are within `tuning.NOISE` of
# it. Repeated runs of one kernel differ by about that much, so among those the one listed *first* in the search
# space wins: the list is ordered simple-first (smaller unrolled code, shorter compiles). A deeper tile,
# `BLOCK_K = 16`, looks like the obvious gain — each barrier pair covers twice the FMAs. The sweep compares the two,
# with everything else equal:

# %%
if sweep:
    lesson.say(lesson_07.sweep_findings(sweep, unrolled).table)

# %% [markdown]
# `BLOCK_K` 8 against 16, with no hint and everything else equal, is a tie within the noise band: halving the
# barriers per FMA bought nothing measurable. The occupancy hint, at `BLOCK_K = 16`, is the difference beyond the
# noise band. (The sweep has no `BLOCK_K = 8` run *with* the hint, so it cannot say whether that would tie with the
# winner.) The rule's pick is the first entry of step 7's search space. So the winner's lead over step 6's `BLOCK_K = 8` comes from the occupancy hint, not from the deeper tile. Does the
# hint buy occupancy? That depends on how many registers each thread needs, and that number depends on which
# compiler produced the machine code. Three compilers counted it: the driver on the GPU host, which compiled the
# PTX when the kernel was loaded (read from the Nsight Compute report shipped with the course), and two `ptxas`
# versions on the machine that built this notebook:

# %%
lesson.say(lesson.register_table(compiled))
lesson.say(lesson_07.hint_registers(compiled, unrolled).table)

# %% [markdown]
# Nsight Compute's count is what ran: the PTX compiled by the driver's JIT when the kernel was loaded. The other two
# compile the same PTX on this machine, for sm_90; no report was made of a kernel without the hint (—). The hint is
# `launch_bounds`: that many blocks of that many threads must fit on an SM, which caps the registers per thread
# (second table). Every count is at most the cap either way, so by these compilers the hint does not change how many
# blocks fit on an SM. What it does change is the code: `ptxas` is told the block size and the register budget, and
# compiles the same k-loop differently (the counts differ). The sweep measured that its code runs faster; the
# sweep's file does not record the register count the H200's driver chose, so *why* it runs faster is not
# established here.
#
# Register counts quoted in the course differ because they come from different compilers: the profiler's count is
# the driver's, and the tables the lessons compute are `ptxas`'s on the machine that built them. Each table says
# which.
#
# ## The price: compile time
#
# Unrolled code is long: the expanded source of this step is thousands of lines, and Numba type-infers and lowers
# every one of them. A first call of step 7 therefore compiles for seconds, not for a fraction of one; Numba's
# on-disk cache makes every later process start fast. How long, where the time goes, and the patches to
# Numba's passes that cut it (`gemm_steps/toolkit/numba_patches.py`) are in a deep dive, which profiles the compile
# live:
#
# * [Deep dive: step 7's compile time](deep_dives/07_compile_time.ipynb)

# %%
lesson.facts(lesson_07.first_call("unrolled") or {})

# %% [markdown]
# ## What is left
#
# The unrolled k-loop left the FMA stream nearly uninterrupted, yet step 7 is still well short of cuBLAS. Within
# each k-tile the threads copy the next tiles from global memory into shared memory (through registers: Numba has
# no direct global-to-shared copy) and then *wait* for them at a barrier before any FMA can start. The next step
# overlaps that wait with the FMAs.
#
# Next: [Lesson 8: double buffering](08_double_buffered.ipynb)
