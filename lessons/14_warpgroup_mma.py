# %% [markdown]
# # Lesson 14 — Warpgroup MMA: 3xTF32 on Hopper's `wgmma`
#
# Lesson 13's 3xTF32 step gives float32's accuracy a little faster than cuBLAS SGEMM, but not by the 1.25× we
# aimed for: its `mma.sync` chain is latency-bound, with only 8 warps per SM (lesson 12's profile). Hopper (the
# H100) has a bigger tensor-core instruction, `wgmma`: one instruction for **four warps at once**, many times the work
# of an `mma.sync`, issued *asynchronously* (the warps go on while it runs), and with one operand read by the tensor
# core straight from shared memory. Step 14 runs lesson 13's three products on it.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_12, lesson_14

warpgroup_mma = gemm_steps.get_step("warpgroup_mma")
runs = [run for run in map(lesson_12.load_run, lesson_14.SWAPPED_RUNS) if run]
swizzled = lesson_12.load_run(lesson_14.SWIZZLED_RUN)
results = lesson.measure_or_load(["three_tf32"], [512, 1024, 2048, 4096, 8192], optional=["warpgroup_mma"])
layout = lesson_14.gpu_layout(warpgroup_mma, results)
print(warpgroup_mma.doc.splitlines()[0])

# %% [markdown]
# ## The idea: a warpgroup and one `wgmma`
#
# A **warpgroup** is four consecutive warps, 128 threads. One `wgmma.m64nNk8` multiplies a 64×8 tile by an 8×N
# tile and adds the 64×N product to accumulators spread over the 128 threads' registers (N is the instruction's
# own size, up to 256; here 128). Its first operand can come from **registers** (as here) or shared memory: in
# registers, warp w holds rows 16w…16w+15, each warp in exactly lesson 12's `mma.sync` A layout. Its second always
# comes from **shared memory**, read by the tensor core itself. The kernel does not pass it values: it passes a
# 64-bit **descriptor**, an address, a stride and a layout type. Step 14 uses the **128-byte swizzle** layout: each
# row of the tile, 32 TF32 values of k (128 bytes), is one contiguous 128-byte line, and its eight 16-byte chunks
# are permuted: chunk c of row r lies at slot c XOR r % 8. The tensor core undoes the permutation as it reads
# (physical byte = linear byte XOR bits 7–9 shifted to bits 4–6); groups of 8 rows are 1,024 bytes apart (the
# descriptor's stride, SBO), and the descriptor of k-step s starts 32·s bytes into the row.
#
# Step 14 uses the operands the other way round: it computes the **transpose** of its tile of C, Cᵀ = Bᵀ·Aᵀ, with Bᵀ
# from registers and Aᵀ from shared memory (why: below the drawing). A block computes 128×128 of C with two
# warpgroups (256 threads): each computes Cᵀ for 64 columns of C × all 128 rows, so wgmma's N is the block's 128
# rows of A. The drawing uses the step's copy formula (`swizzled_offset`) and the descriptor's reading of
# `toolkit/warpgroup_ops.py` (its simulator twin's):

# %%
lesson.show_figure(lesson_14.warpgroup_figure(n=layout["BLOCK_M"], block_k=layout["BLOCK_K"]))
lesson.say(lesson_14.layout_check(layout))

# %% [markdown]
# Why the swap? TF32 `wgmma` reads shared memory only **K-major**: each column's k values side by side, as in the
# drawing's rows. A (M×K, row-major) already lies that way, so Aᵀ's columns — A's rows — can be copied into shared memory
# 16 bytes at a time, unchanged. B (K×N, row-major) does not: its k values are a whole row apart. In registers the
# layout is ours to choose, so Bᵀ goes there, each thread loading its four elements per k-step from B's tile as it
# was copied.
#
# What about TF32 rounding? Bᵀ's fragments are split in registers as in step 13 (big rounded to TF32, small the
# rest). A's big part is the staged float itself: the tensor core truncates it to TF32 as it reads, and A's small
# part, a − (a truncated), is exactly what it drops — so A needs no rounding step, only the second buffer of small
# parts.

# %%
lesson.say(lesson_14.why_swap_text(runs[0] if runs else None))

# %% [markdown]
# ## Two hazards the kernel respects
#
# First, the new synchronisation words the kernel uses. The tensor core reads shared memory through the **async
# proxy**, a path separate from the threads' own loads and stores, so `fence_proxy_async()` makes their stores
# (the copies, A's small parts) visible to it. `warpgroup_fence()` orders the threads' register writes (the
# fragments) before the `wgmma` that read them. `warpgroup_commit()` closes a batch of `wgmma` issued so far, and a
# wait (`wgmma.wait_group n` in PTX) blocks until at most n batches are still running; the kernel always waits for
# all of them (`warpgroup_wait_all`, n = 0). In the compiled code (SASS) a `wgmma` is an `HGMMA` instruction and a
# shared-memory load an `LDS`.
#
# **The accumulator truncates.** As in lesson 13, the tensor core truncates the sums it accumulates, so a long
# running sum kept in it drifts. Step 13 flushes its products into a rounded float32 sum every k-step; step 14 does
# it once per k-tile: it starts each k-tile's big·big products afresh (`accumulate` = 0 on its first `wgmma`) and
# adds them to the running sum `total` with ordinary, rounded float32 adds. The small products, about
# 2^-11 of the sum, stay in one long-lived accumulator, where truncation costs about 2^-11 as much. The experiment
# that led to this step (`experiments/wgmma_swapped.py`) measured both ways, on the H100:

# %%
if runs:
    lesson.show_figure(lesson_14.flush_figure(runs[0]))
    lesson.say(lesson_14.flush_text(runs[0]))

# %% [markdown]
# **The register operand must not change while a `wgmma` runs.** A `wgmma` may read its register operand until a
# wait retires it, and the PTX rules forbid changing those registers before then. The compiler (`ptxas`) does not
# keep them apart by itself: when the next k-tile's fragments were loaded while this k-tile's `wgmma` ran
# (`wait_group 1`), it gave the loads (`LDS`) the same registers the running `HGMMA` read. So step 14 first
# waits for the previous k-tile's `wgmma` (`warpgroup_wait_all`), then loads. The experiment's check of both orders:

# %%
if runs:
    lesson.say(lesson_14.overlap_table(runs[0]))

# %% [markdown]
# ## Copies the L2 can serve whole
#
# Why the swizzle? Each thread copies A in 16-byte `cp.async` chunks, chunk = thread + load · 256, row = chunk // 8,
# so a warp's 32 copies read 4 whole rows of A's k-tile: four 128-byte lines of global memory. In the swizzle layout
# they also write 4 whole 128-byte lines of shared memory, only in another order within each line: the copies'
# shared destinations follow their global sources. In the no-swizzle layout of "core matrices" (8 rows × 16 bytes
# each) a row's eight chunks go to eight different core matrices, 128 bytes apart, and the L2 received about one
# request per 16-byte copy instead of one per line. The XOR keeps the tensor core's reads spread: chunk c of 8
# consecutive rows lies in 8 different slots, on all 32 banks (the check above). The experiment that found it
# (`experiments/wgmma_swapped.py`, `SWIZZLE`) measured the same builds both ways, in the same run:

# %%
lesson.say(lesson_14.l2_table(swizzled))

# %% [markdown]
# The swizzle did not change the work: the same copies, products and adds. It changed how many requests the L2 had
# to serve for them, and both builds moved by far more than the run-to-run noise.
#
# ## The prediction

# %%
if results and swizzled:
    lesson.say(lesson_14.prediction(results, [swizzled], n=layout["BLOCK_M"]))

# %% [markdown]
# ## The kernel
#
# One k-tile of the loop. It writes A's small parts to a second shared buffer, waits for the previous k-tile's
# `wgmma` and adds its big·big products to `total`, loads and splits Bᵀ's fragments, then issues three `wgmma` per
# k-step of 8. Each gets a descriptor pointing 32·s bytes into the swizzled rows of A's big or small parts:

# %%
lesson.show_kernel(warpgroup_mma, start="if t >= LOAD_AHEAD:", stop="warpgroup_commit()")

# %% [markdown]
# A's copy, each 16-byte chunk to its swizzled slot:

# %%
lesson.show_kernel(warpgroup_mma, start="for load in unroll(A_LOADS):  # 16-byte chunks", stop="copy_async(tiles, to, a")

# %% [markdown]
# The products land in Cᵀ's layout, so the store swaps rows and columns back:

# %%
lesson.show_kernel(warpgroup_mma, start="# Value 4j + r of this thread", stop="c[row * n + col] = total[v]")

# %% [markdown]
# The whole kernel, with the copy pipeline (copies issued two k-tiles ahead): `warpgroup_mma.source()`, or
# `gemm-steps diff 13 14`.
#
# ## Is it right?
#
# On the simulator, `wgmma`'s twin makes the 128 threads of the warpgroup meet, assembles Bᵀ from their fragments,
# reads Aᵀ through the descriptor and computes the product once — so a wrong layout or descriptor gives a wrong
# answer. The step runs one warpgroup on smaller tiles there. A full-tile shape and a ragged one, against NumPy with
# the float32 tolerance:

# %%
print("simulator tiles:", {k: warpgroup_mma.config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREADS")})
lesson.check_against_numpy(warpgroup_mma, [(64, 64, 32), (45, 70, 20)])

# %% [markdown]
# (The twin rounds each product once, where the hardware truncates, and its `wgmma` is finished when it returns:
# neither hazard can show here. The GPU measurements above and below are what test them.)
#
# ## How fast, and how accurate

# %%
if results:
    lesson.say(lesson_14.speed_table(results))
    lesson.show_figure(lesson_14.speed_figure(results))

# %% [markdown]
# ## The verdict

# %%
if results and swizzled:
    lesson.say(lesson_14.verdict(results, [swizzled]))

# %% [markdown]
# ## What is left
#
# Before the swizzle, the TF32 build of this design was *slower* than step 12, with the L2 92 % busy (the table
# above): that is what led to the swizzle. Now:

# %%
lesson.say(lesson_14.what_is_left(swizzled, results))

# %% [markdown]
# That TF32 build, with an edge kernel, is step 15: [lesson 15](15_warpgroup_tf32.ipynb). cuBLAS TF32 shows the
# tensor cores go further still, with Hopper's bulk tensor copies (TMA: whole tiles per request, and mbarriers
# instead of block barriers).
# [docs/tensor_cores.md](../docs/tensor_cores.md) ("What is left") lists what a fast TF32 `wgmma` kernel still
# needs. Step 14 runs only on compute capability 9.0 (H100, H200) and on the simulator.
#
# Next: [Lesson 15: TF32 on `wgmma`](15_warpgroup_tf32.ipynb).
