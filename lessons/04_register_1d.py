# %% [markdown]
# # Lesson 4 — Register tiling in one dimension: 8 results per thread
#
# Lesson 3 ended on a ceiling: every FMA in the shared-memory kernel needs two loads from shared memory, and
# shared memory cannot serve them fast enough to keep the FP32 units busy. The remedy is the same idea as lesson
# 3, one level further in: if one thread computes *several* elements of C, a value it has loaded into a
# **register** can feed several FMAs. This lesson makes each thread compute a column of 8 results.
#
# It is also the first lesson where the prediction fails — and where we look at the compiled code to find out why.

# %%
import gemm_steps
from gemm_steps.course import lesson

shared, register_1d = gemm_steps.get_step("shared_memory"), gemm_steps.get_step("register_1d")
print(register_1d.doc)

# %% [markdown]
# ## The idea
#
# A block now computes a 64×64 tile of C with 512 threads. Thread `t` owns column `t % 64` of the tile and a
# stack of `THREAD_M = 8` rows in it. The k-loop walks through shared tiles only 8 deep (`BLOCK_K = 8`), and for
# each k it loads **one** value of B into a register and multiplies it with 8 values of A:
#
# ```
#                         b_tile (8 × 64)
#                       ┌─────────────────┐
#                  kk → │      ●          │   b_value = b_tile[kk, col]: one shared load…
#                       └─────────────────┘
#   a_tile (64 × 8)        C tile (64 × 64)
#   ┌────────┐          ┌─────────────────┐
#   │   ○    │ row+0    │      ■          │
#   │   ○    │ row+1    │      ■          │   …used by 8 FMAs: acc[i] += a_tile[row + i, kk] * b_value
#   │   ⋮    │   ⋮      │      ⋮          │   (acc[0..7] live in registers for the whole k-loop)
#   │   ○    │ row+7    │      ■          │
#   └────────┘          └─────────────────┘
#        kk                   col
# ```
#
# What changed from step 3 (docstrings aside):

# %%
lesson.show_diff(shared, register_1d)

# %% [markdown]
# And the whole step as it runs (its docstring is printed above):

# %%
lesson.show_source(register_1d, docstring=False)

# %% [markdown]
# ## The prediction
#
# Lesson 3's model: shared memory serves one 128-byte *wavefront* per clock per SM; a warp-wide load takes one
# wavefront if its 32 lanes read 32 different banks or all read the same word (a broadcast), and more if several
# lanes need different words in the same bank. Count, for the first warp of a block, what one step of the inner
# k-loop costs in each kernel:

# %%
warp = range(32)  # the first warp of a block: threads 0 … 31
config = register_1d.config
BLOCK_N, BLOCK_K, THREAD_M = config["BLOCK_N"], config["BLOCK_K"], config["THREAD_M"]
TILE = shared.config["BLOCK_K"]
kk = 0

# Step 3: thread (ty, tx) reads a_tile[ty, kk] and b_tile[kk, tx]; its 32×32 tiles are stored row by row.
step3 = {"loads": [[[(t // TILE) * TILE + kk] for t in warp], [[kk * TILE + t % TILE] for t in warp]],
         "fmas": len(warp)}
# Step 4: thread t reads b_tile[kk, t % 64] once and a_tile[(t // 64) * 8 + i, kk] for i = 0 … 7.
step4 = {"loads": [[[kk * BLOCK_N + t % BLOCK_N] for t in warp]]
         + [[[((t // BLOCK_N) * THREAD_M + i) * BLOCK_K + kk] for t in warp] for i in range(THREAD_M)],
         "fmas": len(warp) * THREAD_M}
for name, kernel_model in (("step 3", step3), ("step 4", step4)):
    kernel_model["wavefronts"] = sum(lesson.wavefronts(load) for load in kernel_model["loads"])
    kernel_model["per_wavefront"] = kernel_model["fmas"] / kernel_model["wavefronts"]
    print(f"{name}: {len(kernel_model['loads'])} shared loads per thread for {kernel_model['fmas'] // len(warp)} "
          f"FMA(s) = {len(kernel_model['loads']) * len(warp) / kernel_model['fmas']:.3f} loads per FMA; per warp "
          f"{kernel_model['wavefronts']} wavefronts for {kernel_model['fmas']} FMAs = "
          f"{kernel_model['per_wavefront']:.1f} FMAs per wavefront")

# %% [markdown]
# Every load is a broadcast or 32 neighbouring floats, so there are no bank conflicts, and the FMAs per wavefront
# rise by the ratio of loads per FMA. Global memory improves too: each thread copies one element of A and one of
# B per k-tile, as in step 3, but now they feed `BLOCK_K × THREAD_M` FMAs instead of 32.
#
# Turned into ceilings for the GPU of the results, with one wavefront per clock per SM:

# %%
results = lesson.measure_or_load(["shared_memory", "register_1d"], [512, 1024, 2048, 4096])

# %%
if results:
    shared_ceiling = {name: lesson.sm_rate_tflops(results, m["per_wavefront"]) for name, m in
                      (("step 3", step3), ("step 4", step4))}
    predicted_speedup = shared_ceiling["step 4"] / shared_ceiling["step 3"]
    lesson.say(
        f"* shared-memory ceiling of step 3: **{shared_ceiling['step 3']:.1f} TFLOPS**; of step 4: "
        f"**{shared_ceiling['step 4']:.1f} TFLOPS** (FP32 peak estimate {lesson.fp32_peak_tflops(results):.1f})\n"
        f"* global loads per FMA: {2 / TILE:.4f} → {2 / (BLOCK_K * THREAD_M):.4f}\n\n"
        f"Lesson 3 found step 3 close to its shared-memory ceiling. If shared-memory bandwidth is still what limits "
        f"the kernel, step 4 should be up to **{predicted_speedup:.2f}× faster** — the docstring's \"roughly 2×\"."
    )

# %% [markdown]
# ## Is it right?

# %%
lesson.check_against_numpy(register_1d, [(33, 17, 40), (64, 64, 64)])

# %% [markdown]
# ## The measurement

# %%
lesson.timing_table(results, ["shared_memory", "register_1d"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))

# %% [markdown]
# ## What the numbers say

# %%
if results:
    size = lesson.headline_size(results, ["shared_memory", "register_1d"])
    before, after = lesson.record(results, "shared_memory", size), lesson.record(results, "register_1d", size)
    speedup = before["median_ms"] / after["median_ms"]
    per_size = lesson.speedups_by_size(results, "shared_memory", "register_1d")
    if speedup >= 0.8 * predicted_speedup:
        verdict = "close to the prediction: shared-memory bandwidth was the limit, and it moved"
    elif speedup >= 1.1:
        verdict = (f"a real gain, but well short of the {predicted_speedup:.2f}× predicted: something besides "
                   "shared-memory bandwidth now limits the kernel")
    else:
        verdict = (f"**no gain at all**, against the {predicted_speedup:.2f}× predicted. The model has failed: "
                   "whatever limits step 4, it is not the shared-memory wavefronts we counted")
    lesson.say(
        f"At {lesson.size_label(size)} step 4 runs at **{after['tflops']:.2f} TFLOPS** against step 3's "
        f"{before['tflops']:.2f}: a speedup of **{speedup:.2f}×** — {verdict}. Speedup at each size: {per_size}."
    )

# %% [markdown]
# ## What the profiler says

# %%
lesson.show_profile("shared_memory", "register_1d")

# %% [markdown]
# Compare the columns: step 4 issues instructions at close to one per cycle per scheduler, with the SM's issue
# logic busy and no memory unit saturated — it is **bound by the number of instructions**, not by memory. More
# registers per thread also cut the occupancy (fewer warps fit on an SM), which is fine while there are still
# enough warps to hide latency. So the question is which instructions it spends: the compiled code tells.
#
# ## Why: what the compiler made of it
#
# A model that counts only shared-memory traffic assumes everything else is free. To see what else the kernel
# does, look at the code Numba generates. Numba compiles a kernel to **PTX**, NVIDIA's virtual instruction set,
# with NVVM — which works on a CPU, no GPU needed (`gemm_steps.harness.ptx` wraps it). `ptxas`, the assembler that
# turns PTX into the GPU's machine code, ships inside the `nvidia-nvjitlink` wheel and reports how many registers each
# thread needs. `lesson.compile_kernels` does both in a separate Python process (this one may be running the
# simulator, which compiles nothing) and keeps the answer on disk, so a step compiles once until its code or the
# compilers change; `lesson.compiled_table` counts the instructions of the k-loop — one trip per k-tile — per FMA:

# %%
compiled = lesson.compile_kernels([shared, register_1d])
lesson.compiled_table(compiled)

# %% [markdown]
# Read the first and fourth columns together. A GPU SM has four schedulers, each issuing at most one warp
# instruction per clock, and 4 × 32 FP32 lanes: it reaches its FP32 peak only if *every* instruction it issues is
# an FMA. A kernel that issues *x* instructions per FMA can therefore reach at most 1/*x* of the peak — the
# "issue-bound" ceiling.
#
# Step 4 did cut the shared loads per FMA, but its k-loop now issues far more **64-bit integer** instructions:
# address arithmetic. `a_tile[thread_row * THREAD_M + i, kk]` indexes a 2-D array with Python integers, which
# Numba computes in 64 bits, and the k-step loop is not fully unrolled, so every trip recomputes the addresses. In
# step 3 the compiler unrolled the 32-step loop completely and folded every shared-memory offset into the load
# instruction itself. (This is PTX, not the machine code; `ptxas` optimizes further, so treat the counts as
# estimates of the instruction stream, not measurements.)
#
# Both models together, against the measurement:

# %%
if results:
    issue_ceiling = {}
    for label, entry in compiled.items():
        mix = lesson.k_loop_mix(entry["ptx"], lesson.fmas_per_k_tile(entry["step"]))
        issue_ceiling[entry["step"]] = lesson.fp32_peak_tflops(results) / sum(mix.values())
    rows = [(f"step 3\n{shared.name}", before["tflops"],
             {"shared-memory ceiling": shared_ceiling["step 3"], "issue ceiling": issue_ceiling["shared_memory"]}),
            (f"step 4\n{register_1d.name}", after["tflops"],
             {"shared-memory ceiling": shared_ceiling["step 4"], "issue ceiling": issue_ceiling["register_1d"]})]
    lesson.show_figure(lesson.ceiling_figure(rows, f"Two ceilings per kernel at {lesson.size_label(size)}", results))
    lower = {name: min(ceilings.values()) for name, _, ceilings in rows}
    both = (lower[rows[1][0]] / lower[rows[0][0]])
    lesson.say(
        f"The lower of the two ceilings is what a kernel can hope for: **{lower[rows[0][0]]:.1f} TFLOPS** for step 3 "
        f"(its {'shared-memory' if shared_ceiling['step 3'] < issue_ceiling['shared_memory'] else 'issue'} "
        f"ceiling) and **{lower[rows[1][0]]:.1f} TFLOPS** for step 4 (its "
        f"{'shared-memory' if shared_ceiling['step 4'] < issue_ceiling['register_1d'] else 'issue'} ceiling). "
        f"With both models the predicted speedup is **{both:.2f}×**, against {speedup:.2f}× measured and "
        f"{predicted_speedup:.2f}× from shared memory alone. Step 4 reaches {after['tflops'] / lower[rows[1][0]]:.0%} "
        f"of its lower ceiling, step 3 {before['tflops'] / lower[rows[0][0]]:.0%} of its own."
    )

# %% [markdown]
# The lesson of this step: **reuse in registers pays only if the instructions around the FMAs stay few.** The idea
# was right — fewer shared loads per FMA — and the next step pushes it further, with an 8×8 block of results per
# thread and only a quarter of a shared load per FMA. But the index arithmetic that Numba generates for 2-D arrays
# is still there, and lesson 5 will show how much that, and a few other costs, can hide.
