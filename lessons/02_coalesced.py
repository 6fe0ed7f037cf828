# %% [markdown]
# # Lesson 2 — Coalescing: let a warp walk along a row
#
# Lesson 1's warps read A 32 rows at a time, one float from each row. This lesson swaps which thread index picks
# the row and which the column — a one-line change — so that a warp's 32 threads read 32 *neighbouring* floats
# instead. It is the step every GPU tutorial makes second, usually with a large speedup. We will predict that
# speedup two ways and then see which prediction this GPU agrees with.

# %%
import gemm_steps
from gemm_steps.course import lesson

naive, coalesced = gemm_steps.get_step("naive"), gemm_steps.get_step("coalesced")
print(coalesced.doc)

# %% [markdown]
# ## The idea
#
# Now `threadIdx.x` picks the **column**, so a warp owns 32 neighbouring elements of one *row* of C:
#
# ```
#                                   B (K × N)
#                              ┌───────┬────────────────┬──┐
#                              │       │████████████████│  │  ← B[k, col … col+31]: 128 contiguous bytes
#                              └───────┴────────────────┴──┘
#          A (M × K)                 C (M × N)
#   ┌──────────┬──┬──────┐     ┌───────┬────────────────┬──┐
#   │  row r   │██│      │     │       │▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓│  │  ← t0 t1 … t31: one row of C
#   │          │  │      │     │       │                │  │
#   └──────────┴──┴──────┘     └───────┴────────────────┴──┘
#     A[row, k]: one address for the whole warp (a broadcast)
# ```
#
# Against step 1, only these lines of the source change (the docstrings aside):

# %%
lesson.show_diff(naive, coalesced)

# %% [markdown]
# And here is the whole step as it runs (its docstring is printed above):

# %%
lesson.show_source(coalesced, docstring=False)

# %% [markdown]
# ## Two predictions
#
# **Counting memory transactions.** Memory is fetched in 32-byte sectors. Per turn of the k-loop, one warp asks
# for:

# %%
warp, float_bytes, sector_bytes = 32, 4, 32
contiguous = warp * float_bytes // sector_bytes  # sectors for 32 neighbouring floats
sectors = {  # (naive, coalesced)
    "A[row, k]": (warp, 1),  # naive: 32 rows → 32 sectors; coalesced: one address → 1 sector
    "B[k, col]": (1, contiguous),  # naive: one address → 1 sector; coalesced: 128 contiguous bytes
}
naive_total, coalesced_total = (sum(pair[i] for pair in sectors.values()) for i in (0, 1))
for load, (before, after) in sectors.items():
    print(f"{load:10} naive {before:3d} sectors   coalesced {after:3d} sectors")
print(f"{'total':10} naive {naive_total:3d} sectors   coalesced {coalesced_total:3d} sectors")
transaction_speedup = naive_total / coalesced_total
print(f"→ if sectors were the cost, coalescing would be {transaction_speedup:.1f}× faster")

# %% [markdown]
# That is where the famous speedup of this step comes from: Simon Boehm's CUDA SGEMM worklog measured about 6×
# for it on an A6000.
#
# **Counting what misses the cache.** But look at *which* sectors the naive warp reads. A 32-byte sector holds 8
# consecutive floats of a row of A, so the sectors read at step k are the very same ones needed at steps k+1 …
# k+7. And in step 1 all 32 warps of a block read the *same* 32 rows of A (they differ only in the column). So the
# naive kernel's 32 sectors per load are mostly requests for data already in the SM's L1 cache, not trips to DRAM.
# If those hits were cheap, the extra sectors would cost little, and the gain would be **much smaller than the
# transaction count**.
#
# Two models, two predictions. Before the measurement, a check that the swap changed nothing in the answers:

# %%
lesson.check_against_numpy(coalesced, [(16, 16, 16), (33, 17, 40), (64, 48, 64)])

# %% [markdown]
# ## The measurement

# %%
results = lesson.measure_or_load(["naive", "coalesced"], [512, 1024, 2048, 4096])
lesson.timing_table(results, ["naive", "coalesced"])

# %% [markdown]
# The two predictions against the measured speedup, at every size in the results:

# %%
if results:
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    measured = lesson.common_sizes(results, ["naive", "coalesced"])
    speedups = [lesson.record(results, "naive", s)["median_ms"] / lesson.record(results, "coalesced", s)["median_ms"]
                for s in measured]
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    ax.axhline(transaction_speedup, color="tab:red", ls="--", label="prediction from counting sectors")
    ax.axhline(1, color="gray", ls=":", label="no change")
    ax.plot(range(len(measured)), speedups, "o-", ms=8, label="measured")
    ax.set_xticks(range(len(measured)), [lesson.size_label(s) for s in measured])
    ax.set(ylim=(0, 1.15 * max(transaction_speedup, *speedups)), xlabel="matrix size",
           ylabel="speedup of coalesced over naive",
           title=f"Coalescing: prediction vs measurement\n{short_label(results['environment'])}")
    ax.legend(loc="center right")
    lesson.show_figure(fig)

# %% [markdown]
# ## What the numbers say

# %%
if results:
    size = lesson.headline_size(results, ["naive", "coalesced"])
    before, after = lesson.record(results, "naive", size), lesson.record(results, "coalesced", size)
    speedup = before["median_ms"] / after["median_ms"]
    if speedup >= 0.8 * transaction_speedup:
        verdict = "close to what counting transactions predicts: on this GPU the strided sectors were the whole cost"
    else:
        verdict = (f"well short of the {transaction_speedup:.1f}× that counting transactions predicts, and far more "
                   "than the cheap-cache-hit model allows. Neither model is right; the profiler says why, below")
    bandwidth = lesson.datasheet_bandwidth_tbs(results)
    roof = None if bandwidth is None else bandwidth * 0.25  # TFLOPS if every load went to DRAM
    above = ("" if roof is None or after["tflops"] <= roof else
             f"\n\nNote also that {after['tflops']:.2f} TFLOPS is above {roof:.2f} TFLOPS, the most DRAM could feed "
             f"at 2 loads per FMA ({bandwidth} TB/s datasheet × 0.25 FLOP/byte). So the caches are certainly "
             "supplying many of its operands; what they cannot fix is that every operand is still loaded once per FMA.")
    lesson.say(
        f"At {lesson.size_label(size)} coalescing took the kernel from {before['tflops']:.2f} to "
        f"**{after['tflops']:.2f} TFLOPS**, a speedup of **{speedup:.2f}×** — {verdict}. It now reaches "
        f"{after['pct_of_cublas']:.1f} % of cuBLAS. Across all sizes measured the speedup lies between "
        f"{min(speedups):.2f}× and {max(speedups):.2f}×.{above}"
    )

# %% [markdown]
# ## What the profiler says
#
# Nsight Compute (NVIDIA's kernel profiler) measures what each unit of the GPU was doing. Its reports of one 2048³
# launch of each kernel ship with the course, so this reads the same without a GPU:

# %%
lesson.show_profile("naive", "coalesced")

# %% [markdown]
# The cache hits were **not** cheap. The naive kernel kept the L1/TEX unit almost fully busy while DRAM idled:
# nearly all its sectors hit in L1, but every one costs the unit a *wavefront* (a pass of data through it), and a
# strided warp load takes up to 32 of them where a coalesced one takes a few. Its warps waited mostly on those
# loads (the top stall). Coalescing removed that bottleneck — and the kernel ran straight into the next one: the
# SM's instruction issue (the SM-busy column and the issue rate went up; no memory unit is busy any more). Each
# multiply-add still needs two loads and the address arithmetic around them: too many instructions per FMA. That is
# why the speedup stops far short of the sector count's prediction: **a kernel is as fast as its tightest limit,
# and removing one limit only helps until the next one.** The next steps attack the instruction count.
#
# Coalescing is still the right way to write the loads — every later step keeps it. But in both kernels so far
# each thread loads two floats for every FMA it does, and a float loaded by one thread is loaded again by every
# other thread that needs it. The next lesson stops relying on the cache to notice that reuse: the threads of a
# block copy tiles of A and B into shared memory once, and all of them read from there.
