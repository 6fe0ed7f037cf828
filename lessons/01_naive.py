# %% [markdown]
# # Lesson 1 — The naive kernel: one thread per element of C
#
# The first kernel is the three-loop matrix multiply with the two outer loops handed to the GPU: a grid of thread
# blocks covers C, every thread owns one element `C[row, col]`, and runs the inner loop over k by itself.

# %%
import gemm_steps
from gemm_steps.course import lesson

naive = gemm_steps.get_step("naive")
print(naive.doc)

# %% [markdown]
# ## The idea
#
# Threads come in **warps** of 32 that execute each instruction together; inside a warp, `threadIdx.x` is the index
# that changes from one thread to the next. This first kernel lets `threadIdx.x` choose the **row** of C. So the 32
# threads of a warp own 32 elements stacked in one *column* of C, and at every step k of the loop they load:
#
# ```
#                                   B (K × N)                   one warp = 32 threads, lanes t0 … t31
#                              ┌───────┬──┬───────┐
#                              │       │██│       │  ← B[k, col]: one address for the whole warp (a broadcast)
#                              └───────┴──┴───────┘
#          A (M × K)                 C (M × N)
#   ┌──────────┬──┬──────┐     ┌───────┬──┬───────┐
#   │  row r   │██│      │ t0  │       │▓▓│       │
#   │  row r+1 │██│      │ t1  │       │▓▓│       │  ← 32 threads, 32 rows of C, one column
#   │   …      │██│      │ …   │       │▓▓│       │
#   │  row r+31│██│      │ t31 │       │▓▓│       │
#   └──────────┴──┴──────┘     └───────┴──┴───────┘
#        A[row, k]: 32 addresses, each a whole row (K floats) apart
# ```
#
# Memory is fetched in 32-byte **sectors**. The B load costs one sector for the whole warp. The A load touches 32
# different rows, so it costs 32 sectors — 1024 bytes fetched to use 128. The store to C at the end is strided
# the same way.
#
# ## The prediction
#
# Count what one turn of the inner loop does: **2 loads from global memory (8 bytes) for 1 FMA (2 FLOPs)**, an
# arithmetic intensity of 0.25 FLOP per byte. Lesson 0 showed that this is far below what a GPU needs to be
# compute bound, so if every load went to DRAM the kernel could run no faster than bandwidth × 0.25. The step's
# docstring above predicts **a few percent of cuBLAS**.
#
# ## The source
#
# This is the step's module exactly as the package runs it (its docstring is printed above). The kernel is an
# ordinary Python function compiled by `@kernel` (the package's `cuda.jit`); `launch` picks the grid so that the
# blocks cover all of C.

# %%
lesson.show_source(naive, docstring=False)

# %% [markdown]
# How many threads is that? For a 4096 × 4096 C, with the step's own block size:

# %%
from gemm_steps.toolkit.kernel_tools import ceil_div

block = naive.config["BLOCK_SIZE"]
m = n = k = 4096
blocks = ceil_div(m, block) * ceil_div(n, block)
print(f"{blocks:,} blocks × {block * block} threads = {blocks * block * block:,} threads, "
      f"each doing {k:,} FMAs and {2 * k:,} loads")

# %% [markdown]
# ## Is it right?
#
# On small matrices, including sizes that are not multiples of the 32×32 block (so some threads fall outside C
# and must do nothing), the kernel agrees with NumPy's float64 product to within float32 rounding:

# %%
lesson.check_against_numpy(naive, [(16, 16, 16), (33, 17, 40), (64, 48, 64)])

# %% [markdown]
# ## How fast is it?
#
# The timing comes from the benchmark harness (`gemm_steps.harness.bench`): CUDA events around each launch, the output
# poisoned with NaN and the L2 cache flushed before every run, the median of many runs, and cuBLAS timed in the same
# run on the same inputs.

# %%
results = lesson.measure_or_load(["naive"], [512, 1024, 2048, 4096])
lesson.timing_table(results, ["naive"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))

# %% [markdown]
# ## What the numbers say

# %%
if results:
    size = lesson.headline_size(results, ["naive"])
    record = lesson.record(results, "naive", size)
    tflops, pct = record["tflops"], record["pct_of_cublas"]
    feed = tflops / 0.25  # TB/s of loads needed at 8 bytes per FMA, if nothing came from a cache
    bandwidth = lesson.datasheet_bandwidth_tbs(results)
    verdict = "as the docstring predicted" if pct < 10 else "more than the few percent the docstring predicted"
    dram = ("" if bandwidth is None else
            f" That is {feed / bandwidth:.0%} of the {bandwidth} TB/s the DRAM can deliver (datasheet)"
            + (": more than DRAM can supply, so caches must be serving part of the loads."
               if feed > bandwidth else
               ": within DRAM's reach, so these numbers cannot tell whether DRAM or the caches are the limit."))
    per_size = ", ".join(f"{lesson.record(results, 'naive', s)['tflops']:.2f} at {lesson.size_label(s)}"
                         for s in lesson.common_sizes(results, ["naive"]))
    lesson.say(
        f"At {lesson.size_label(size)} the naive kernel runs at **{tflops:.2f} TFLOPS**, {pct:.1f} % of cuBLAS, "
        f"{verdict}. At 8 bytes per FMA, that rate means loading **{feed:.1f} TB/s**.{dram}\n\n"
        f"Across sizes (TFLOPS): {per_size}."
    )

# %% [markdown]
# The kernel computes the right answer. Two things stand out in its access pattern: the warp reads A with a
# stride of a whole row, and every value is fetched again for every FMA that needs it. The next lesson fixes the
# first with a one-line change — and measures how much that alone is worth.
