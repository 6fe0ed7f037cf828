# %% [markdown]
# # Lesson 9 — Warp tiling: arrange a warp's results so its shared loads do not conflict
#
# Since lesson 5, thread t has owned one contiguous THREAD_M × THREAD_N block of C. That is natural for one
# thread, but shared memory serves a *warp* at a time, and a warp's lanes that need different words of one bank
# wait for each other (bank conflicts, [lesson 0b](00_the_gpu.ipynb)). This step changes nothing but the map from
# threads to elements of C — a few lines of step 8's kernel — and, because that map also decides which tile shapes
# are possible, it is tuned to a larger tile. (Warps, lanes, registers, shared memory and occupancy are explained
# in lesson 0b.)

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_09
from gemm_steps.harness import results_files

double_buffered, warp_tiling = gemm_steps.get_step("double_buffered"), gemm_steps.get_step("warp_tiling")
print(warp_tiling.doc)

# %% [markdown]
# ## The idea
#
# Three levels of tiling. The **block tile** is cut into **warp tiles**, one per warp. Inside a warp tile the 32
# lanes form an 8 × 4 grid of 4 × 4 cells, and that grid repeats; so each lane's results (its **thread tile**) are
# 4 × 4 sub-blocks spaced a whole lane grid apart. Drawn from the shipped tile configuration and the constants the
# step's `Config` derives from it:

# %%
lesson.show_figure(lesson_09.tiling_figure(warp_tiling))
lesson.say(lesson_09.tile_table(double_buffered, warp_tiling))

# %% [markdown]
# The whole change to step 8's kernel (`gemm-steps diff 8 9` prints the same). Besides the map (`thread_row`,
# `thread_col` and the `A_CHUNK_STRIDE`/`B_CHUNK_STRIDE` offsets) it runs the FMAs in a *serpentine* order, which
# the end of this lesson comes back to:

# %%
lesson.show_diff(double_buffered, warp_tiling)

# %% [markdown]
# ## The prediction
#
# At each k-step `kk`, every lane loads its A fragment and its B fragment from shared memory, 4 floats at a time
# (`LDS.128`). A 128-bit load is served a quarter-warp (8 lanes) at a time; each quarter-warp takes as many
# *wavefronts* as the most distinct 32-bit words any one bank must deliver to it. Below, for the first warp and
# `kk = 0`, the words each lane reads for the first load of each fragment, computed from each kernel's index
# formulas (`lesson_09.fragment_words`), and the model's count for a whole k-step against the profiler's:

# %%
lesson.show_figure(lesson_09.bank_figure([double_buffered, warp_tiling]))
lesson.say(lesson_09.model_table([double_buffered, warp_tiling]))
print("model and profiler agree on the bank conflicts:", lesson_09.model_agrees([double_buffered, warp_tiling]))

# %% [markdown]
# The profiler's rows: shared-memory wavefronts and bank conflicts of one 2048³ launch, divided by the warps'
# k-steps (FFMAs / FMAs per warp and k-step). The model's conflicts are in step 8's B fragment and in the
# transposed stores of A; the profiler counts the same (the line under the table). Its wavefront totals are a little
# lower than the model's: some 128-bit loads are served in fewer wavefronts than one per quarter-warp (which ones, the
# totals do not say). Bank conflicts, the wavefronts beyond the fewest possible, are what the new map removes, and
# there the model and the profiler agree.
#
# Under step 8's map, the 8 lanes of a quarter-warp read B words 8 floats apart: two different words per bank,
# two wavefronts where one would do. Under step 9's, a warp reads only 4 neighbouring float4 of B and 8 of A, each
# shared by the lanes that need it: no conflicts. But both maps deliver far more FMAs per wavefront than the FP32
# units can use (an SM executes 128 FMAs per clock and serves one wavefront per clock; lesson 6), so the model
# predicts **little from the new map itself**, as the docstring does ("a few percent"). The bigger tile the map
# allows moves less data per FMA from L2 and memory (the last row of the table above), and holds more accumulators
# per thread, which costs registers. How many depends on the compiler, so the count names it:

# %%
results = lesson.measure_or_load(["double_buffered", "warp_tiling"], [512, 1024, 2048, 4096])
compiled = lesson.compile_with_registers([double_buffered, warp_tiling])
lesson.say(lesson.register_table(compiled))

# %% [markdown]
# The first column is what ran: the PTX compiled by the driver when the kernel was loaded, as the shipped reports
# record it. The other two compile the same PTX on this machine for sm_90. Each compiler makes its own choices, so a
# count is only meaningful with its compiler's name.
#
# ## Is it right?
#
# Step 9's tiles are 128×256 (on the simulator); the checks run a ragged shape, one full tile with two k-tiles,
# and a full tile with ragged edges:

# %%
lesson.check_against_numpy(warp_tiling, [(33, 17, 40), (128, 256, 16), (129, 260, 8)])

# %% [markdown]
# ## The measurement

# %%
lesson.timing_table(results, ["double_buffered", "warp_tiling"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))
    measured = lesson_09.verdict(results, double_buffered, warp_tiling)
    lesson.say(measured.table)
    print("against the prediction (a few percent):", measured.outcome)

# %% [markdown]
# ## Separating the map from the tiles
#
# Two things changed at once — the map and the tiles — and the comparison above cannot tell them apart. The tuning
# sweeps can. Step 9's search space includes step 8's own configuration, so the sweep times the
# warp-tiled map with step 8's tiles; and step 8's sweep includes step 9's tiles with the contiguous map:

# %%
sweep = lesson.load_shipped(results_files.TUNING_WARP_TILING_ANY, "`gemm-steps tune warp_tiling`: every candidate "
                            "configuration, timed in one run")
lesson.sweep_table(sweep, warp_tiling) if sweep else None

# %%
step8_sweep = lesson.load_shipped(results_files.TUNING_DOUBLE_BUFFERED_ANY, "step 8's sweep, a separate run")
parts = lesson_09.map_and_tiles(sweep, step8_sweep)
if parts and parts.same_tiles:
    lesson.say(parts.table)
    lesson.say(parts.numbers)

# %% [markdown]
# ## What the numbers say
#
# The sweeps ran minutes apart (cuBLAS in each: the second table's last row), and `tuning.choose_best` treats
# differences under its noise band as noise. The conflict-free map, by itself, is worth **little**: the second
# table's first rows, although the wavefront count said shared memory was not the limit — the model misses something
# small here. What the map bought is *freedom*: with lanes spread over a warp tile, a thread can own a larger block of
# results and a block a larger tile of C without its fragment loads conflicting (step 9's tiles with step 8's
# contiguous map: neighbouring lanes' B fragments share banks, and it is slower). The larger tile needs less data per
# FMA from L2 and memory: the tiles alone are the gain. It pays in registers (the register table above: one block
# per SM at the count that ran), and all latency hiding now rests on double buffering and on the warps of that one
# block.
# %% [markdown]
# ## The order of the FMAs
#
# Step 9's k-loop is now almost nothing but FMAs, and it executes about as many instructions as cuBLAS; the
# difference is how fast they issue, which the profiler measures as warp-instructions issued per cycle per
# scheduler:

# %%
lesson.say(lesson_09.issue_table())

# %% [markdown]
# One cause that can be tried from Python: each `FFMA` (an FMA in SASS, the GPU's machine code) reads three
# registers, and the register file delivers only so many per cycle (how many on Hopper, NVIDIA does not say; the
# deep dive below has what is known). An *operand reuse cache* helps. `ptxas` sets a `.reuse` flag on a source
# operand of one instruction, and the hardware keeps that value for the next instruction that reads the same
# register in the same operand slot. Row by row, consecutive FFMAs share `a[i]` except where a row ends; in a
# **serpentine** order (odd rows run backwards) the FFMA after a row end shares `b[15]` with the one before it.
# `experiments/fma_order.py` timed step 9 both ways in one run:

# %%
fma_order = lesson.load_shipped(results_files.EXPERIMENT_FMA_ORDER_ANY, "step 9 with row-order and serpentine FMAs, "
                                "timed in one run")
lesson.variants_table(fma_order, "FMA order", ["row_order", "serpentine"], base="row_order") if fma_order else None

# %% [markdown]
# Step 9 ships the serpentine order (the `j = THREAD_N - 1 - jj if i % 2 else jj` line in its kernel), and steps 10
# and 11 inherit it. A few percent, as a count of the extra reuse allows: most of the gap to cuBLAS remains. Step 9
# stays the course's fastest tile kernel. What the register file does on Hopper, four measured attempts to close the
# last ~10 % (register double buffering, cuBLAS's `cp.async` copies, cheaper index arithmetic, equivalent code shapes)
# and what cuBLAS runs instead are in the [deep dive: the last ten percent](deep_dives/09_the_last_ten_percent.ipynb).
# In short: the shipped kernel is a measured local optimum, and the rest lies in `ptxas`'s schedule and register
# allocation, below the PTX that Numba writes.
#
# The next lesson stops looking inside a block and looks at the whole grid: what happens when the tiles do not
# divide evenly among the SMs, and whether launching exactly as many blocks as the GPU holds at once, each looping
# over tiles, helps.
