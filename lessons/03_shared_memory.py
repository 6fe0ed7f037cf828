# %% [markdown]
# # Lesson 3 — Shared memory: load a tile once, use it 32 times
#
# In the first two kernels every thread fetches its own operands from global memory: two loads for every FMA, and
# the same element of A or B fetched again by every thread that needs it. Whatever reuse happened, the caches
# found by themselves. This step makes the reuse explicit, with **shared memory** — a small, fast scratchpad on
# each SM that all threads of a block can read and write.

# %%
import gemm_steps
from gemm_steps.course import lesson

shared = gemm_steps.get_step("shared_memory")
print(shared.doc)

# %% [markdown]
# ## The idea
#
# A block of 32×32 threads computes a 32×32 tile of C. It walks along K in tiles: each thread copies **one**
# element of A and one of B into shared memory (`a_tile`, `b_tile`), the block waits for the copy to finish
# (`cuda.syncthreads()`), and then every thread runs 32 turns of its k-loop reading only shared memory:
#
# ```
#                             B (K × N)
#                         ┌────┬──────┬────┐
#                         │    │  B₀  │    │  k0 = 0    each tile of B and the matching tile of A
#                         │    │  B₁  │    │  k0 = 32   is copied to shared memory once per block,
#                         │    │  …   │    │            then read 32 times from there
#                         └────┴──────┴────┘
#         A (M × K)              C (M × N)
#   ┌──────┬──────┬────┐  ┌────┬──────┬────┐
#   │  A₀  │  A₁  │ …  │  │    │ tile │    │  ← one block of 32×32 threads:  tile = A₀·B₀ + A₁·B₁ + …
#   └──────┴──────┴────┘  └────┴──────┴────┘
# ```
#
# The second `syncthreads` in each round matters as much as the first: no thread may overwrite the tiles with the
# next round's copy while another is still reading them. Here is the step as the package runs it (its docstring
# is printed above):

# %%
lesson.show_source(shared, docstring=False)

# %% [markdown]
# ## The prediction
#
# **Global memory.** Each element a block copies into shared memory is used by 32 threads, so global loads per
# FMA fall by the tile size:

# %%
tile = shared.config["BLOCK_K"]
print(f"global loads per FMA: 2 → 2/{tile} = {2 / tile:.4f}")
print(f"arithmetic intensity, if no global load hit a cache: 0.25 → {0.25 * tile:.0f} FLOP/byte")

# %% [markdown]
# **Shared memory.** But look at the inner loop: `acc += a_tile[ty, kk] * b_tile[kk, tx]` is still *two loads
# for one FMA* — from shared memory now. Shared memory has 32 banks of 4 bytes and serves one 128-byte
# "wavefront" per clock per SM (NVIDIA's figure for Volta through Hopper). For one warp, one turn of `kk` costs
# two wavefronts: `a_tile[ty, kk]` is one address for the whole warp (a broadcast), and `b_tile[kk, tx]` is 32
# neighbouring floats in 32 different banks. So an SM can do at most **32 FMAs per 2 clocks** this way, while its
# 128 FP32 lanes could do 128 FMAs per clock: shared memory caps this kernel at one eighth of the FP32 peak. Here
# are both ceilings for the GPU of the results:

# %%
results = lesson.measure_or_load(["naive", "coalesced", "shared_memory"], [512, 1024, 2048, 4096])

# %%
if results:
    env = results["environment"]
    warp, lanes = 32, 128  # threads per warp; FP32 lanes per SM (Ampere to Hopper)
    fma_per_clock = warp / 2  # per SM: 32 FMAs for every 2 shared-memory wavefronts
    clock_hz = env["sm_clock_max_mhz"] * 1e6
    shared_ceiling = env["sm_count"] * clock_hz * fma_per_clock * 2 / 1e12  # TFLOPS
    bandwidth = lesson.datasheet_bandwidth_tbs(results)
    lesson.say(
        f"* shared-memory ceiling: {env['sm_count']} SMs × {env['sm_clock_max_mhz']:.0f} MHz × {fma_per_clock:.0f} "
        f"FMAs × 2 FLOPs = **{shared_ceiling:.1f} TFLOPS** (FP32 peak estimate: "
        f"{lesson.fp32_peak_tflops(results):.1f})\n"
        + (f"* global-memory ceiling if nothing were cached: {bandwidth} TB/s (datasheet) × {0.25 * tile:.0f} "
           f"FLOP/byte = **{bandwidth * 0.25 * tile:.1f} TFLOPS**" if bandwidth else "")
    )

# %% [markdown]
# The lower of the two is the prediction's upper bound. The kernel also spends time the model leaves out — copying
# the tiles, two barriers per round, index arithmetic — so expect to land below it.
#
# ## Is it right?
#
# Shapes that are not multiples of 32 exercise the edges: tiles that stick out of A or B are filled with zeros,
# and threads outside C skip the store.

# %%
lesson.check_against_numpy(shared, [(33, 17, 40), (64, 64, 64)])

# %% [markdown]
# ## The measurement

# %%
lesson.timing_table(results, ["naive", "coalesced", "shared_memory"])

# %%
if results:
    from gemm_steps.course import plots

    fig = plots.plot_tflops_vs_size(results)
    fig.axes[0].axhline(shared_ceiling, color="tab:green", ls=":", label="shared-memory ceiling (the model above)")
    fig.axes[0].legend(fontsize=8, loc="upper left")
    lesson.show_figure(fig)
    lesson.show_figure(plots.plot_step_speedups(results))

# %% [markdown]
# ## What the profiler says
#
# Nsight Compute's reports of one 2048³ launch (shipped with the course) show where the work went:

# %%
lesson.show_profile("coalesced", "shared_memory")

# %% [markdown]
# The global loads are gone from the picture (DRAM is idle: the tiles are read once per block), and the L1/TEX unit
# — which also serves shared memory — is busy again, now with shared-memory reads. The top stall names the
# bottleneck this lesson predicted: warps wait because the **MIO queue** (the queue of shared-memory instructions
# into that unit) is full. Two shared loads per FMA is the ceiling; lesson 4 starts lowering it.

# %% [markdown]
# ## What the numbers say

# %%
if results:
    size = lesson.headline_size(results, ["coalesced", "shared_memory"])
    before, after = lesson.record(results, "coalesced", size), lesson.record(results, "shared_memory", size)
    speedup = before["median_ms"] / after["median_ms"]
    share = after["tflops"] / shared_ceiling
    if share <= 1:
        verdict = (f"**{share:.0%} of the shared-memory ceiling** of {shared_ceiling:.1f} TFLOPS. The ceiling held; "
                   "the distance to it is the work the model leaves out")
    else:
        verdict = (f"**above the shared-memory ceiling** of {shared_ceiling:.1f} TFLOPS ({share:.0%} of it), so the "
                   "model is too pessimistic: the compiler must be serving some operands without one shared "
                   "load each")
    lesson.say(
        f"At {lesson.size_label(size)} shared-memory tiling runs at **{after['tflops']:.2f} TFLOPS**, "
        f"{speedup:.2f}× the coalesced kernel and {after['pct_of_cublas']:.1f} % of cuBLAS. That is {verdict}."
    )

# %% [markdown]
# Shared memory cut global loads per FMA by the tile size, but not the instruction mix: the inner loop still issues
# two loads per FMA, now from shared memory. The remedy is the same idea one level down. If each thread computes
# *several* elements of C, a value it loads from shared memory into a register can feed several FMAs. That is the
# next step: register tiling.
