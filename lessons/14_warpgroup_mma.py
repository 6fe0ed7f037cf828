# %% [markdown]
# # Lesson 14 — Warpgroup MMA: 3xTF32 on Hopper's `wgmma`
#
# Lesson 13's 3xTF32 step gives float32-level accuracy at about cuBLAS SGEMM's speed, not the 1.25× we aimed for:
# its `mma.sync` chain is latency-bound, with only 8 warps per SM (lesson 12's profile). Hopper (the H100, the H200)
# has a bigger tensor-core instruction, `wgmma`: one instruction for **four warps at once**, many times the work of
# an `mma.sync`, issued *asynchronously* (the warps go on while it runs), and with one operand read by the tensor
# core straight from shared memory. Step 14 runs lesson 13's three products on it.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_14, lesson_24
from gemm_steps.course.targets import TARGET_3XTF32_VS_SGEMM
from gemm_steps.course.timings import WGMMA_SWAPPED_RUNS, WGMMA_SWIZZLED_RUN, load_run

warpgroup_mma = gemm_steps.get_step("warpgroup_mma")
runs = [run for run in map(load_run, WGMMA_SWAPPED_RUNS) if run]
swizzled = load_run(WGMMA_SWIZZLED_RUN)
results = lesson.measure_or_load(["three_tf32"], [512, 1024, 2048, 4096, 8192], optional=["warpgroup_mma"])
layout = lesson_14.gpu_layout(warpgroup_mma, results)
print(warpgroup_mma.doc.splitlines()[0])

# %% [markdown]
# ## The idea: a warpgroup and one `wgmma`
#
# A **warpgroup** is four consecutive warps, 128 threads. One `wgmma.m64nNk8` multiplies a 64×8 tile by an 8×N tile
# and adds the 64×N product to accumulators spread over the 128 threads' registers (N is the instruction's own size,
# up to 256; here 128). Its first operand can come from **registers**: warp w holds rows 16w…16w+15, each warp in
# exactly lesson 12's `mma.sync` A layout. Its second always comes from **shared memory**, read by the tensor core
# itself. The kernel does not pass it values but a 64-bit **descriptor**: the tile's start address, a *stride byte
# offset* (**SBO**: the distance between groups of 8 rows), a *leading byte offset* (**LBO**: between groups of
# k, for layouts that split a row), and a layout type.
#
# Step 14's layout type is the **128-byte swizzle**. ("Swizzle" here is a shared-memory layout; step 10's
# "grouped order" of tiles is a different thing.) Each row of the tile, 32 TF32 values of k (128 bytes), is one
# 128-byte line, and its eight 16-byte chunks are permuted: chunk c of row r lies at slot c XOR r % 8. The tensor core
# undoes the permutation as it reads; groups of 8 rows are 1,024 bytes apart (the SBO; in this layout the LBO is
# unused), and the descriptor of k-step s starts 32·s bytes into the row.
#
# Step 14 uses the operands the other way round: it computes the **transpose** of its tile of C, Cᵀ = Bᵀ·Aᵀ, with Bᵀ
# from registers and Aᵀ from shared memory (why: below). A block computes 128×128 of C with two warpgroups; each
# computes Cᵀ for 64 columns of C × all 128 rows, so wgmma's N is the block's 128 rows of A. The drawing uses the
# step's copy formula and the descriptor's reading (its simulator twin's); then the check of all of A's buffers:

# %%
lesson.show_figure(lesson_14.warpgroup_figure(n=layout["BLOCK_M"], block_k=layout["BLOCK_K"]))
check = lesson_14.layout_check(layout)
print(f"{check.found} of {check.checked} elements of A ({check.buffers} buffers) lie where the descriptors "
      f"point; Bᵀ's 512 elements have {check.holders} different holders; chunk 0 of 8 rows lies in "
      f"{check.slots} slots ({check.slots_unswizzled} without the XOR)")

# %% [markdown]
# (This checks the step's copy formula against our reading of the descriptor; the hardware itself is checked by the
# warpgroup tests on the GPU, where unswizzled data must give a wrong product.)
#
# **Why the swap?** TF32 `wgmma` reads shared memory only **K-major**: each column's k values side by side. A (M×K,
# row-major) already lies that way, so Aᵀ's columns — A's rows — are copied into shared memory 16 bytes at a time,
# unchanged. B (K×N, row-major) does not: its k values are a whole row apart. In registers the layout is ours to
# choose, so Bᵀ goes there. (The first `wgmma` GEMM transposed B on the way in, and ran slower than step 12: the deep
# dive.)
#
# **What about TF32 rounding?** Both operands are split as in step 13, with `split_tf32_scaled`: big rounded to the
# nearest TF32, small·2^11 (kept in TF32's normal range). Bᵀ's fragments are split in registers. A's k-tile is split
# once, *in place* in shared memory: the threads round the staged floats, write the big parts over the stage and the
# small parts ×2^11 into a second buffer, then fence and meet before the `wgmma` read them. That pass over shared
# memory is not free, and the step's first version skipped it: A's big part was the staged float itself, which the
# tensor core *truncates* as it reads, and its small part a − (a truncated). But a truncated big leaves a small part
# up to 2^-10 of a, not 2^-11, and the tensor core truncates that small part too, so more of a is lost. In NumPy, over
# standard-normal floats, the largest |small| / |a| and the largest error of big + small as the tensor core reads
# them, for A truncated (the first version) and rounded (step 13, and step 14 now):

# %%
split = lesson_14.a_split_errors()
for name, e in split.items():
    print(f"big {name}: |small| ≤ {e.small:.2e} of a; error of big + small as read: largest {e.largest:.1e}, "
          f"mean {e.mean:.1e}")

# %% [markdown]
# ## Two hazards the kernel respects
#
# First, the new synchronisation words. The tensor core reads shared memory through the **async proxy**, a path
# separate from the threads' own loads and stores, so `fence_proxy_async()` makes their stores visible to it.
# `warpgroup_fence()` orders the threads' register writes (the fragments) before the `wgmma` that read them.
# `warpgroup_commit()` closes a batch of `wgmma`, and a wait (`wgmma.wait_group n`) blocks until at most n batches
# are still running; the kernel always waits for all of them (`warpgroup_wait_all`, n = 0).
#
# **The accumulator's bias.** As in lesson 13, a long running sum kept in the tensor core drifts. Step 13 flushes
# its products into a rounded float32 sum every k-step; step 14 does it once per k-tile: it starts each k-tile's
# big·big products afresh and adds them to the running sum `total` with ordinary, rounded float32 adds. The small
# products stay in one long-lived accumulator. They are held ×2^11 there (the split's scaling) and multiplied by
# 2^-11 once, at the store: about 2^-11 of the sum, so the bias costs about 2^-11 as much. The experiment that led to
# this step measured both ways, on the H100 (with the step's first split: A truncated, small parts unscaled):

# %%
if runs:
    lesson.show_figure(lesson_14.flush_figure(runs[0]))
    f = lesson_14.flush(runs[0])
    print(f"without the flush: error ∝ K^{f.slope:.2f}, {f.first:.1e} at K = {f.k[0]} to {f.last:.1e} at "
          f"K = {f.k[-1]} ({f.last / f.sgemm:.0f}× cuBLAS SGEMM's {f.sgemm:.1e}); with it: "
          f"{f.flushed:.1e}")

# %% [markdown]
# **The register operand must not change while a `wgmma` runs.** A `wgmma` may read its register operand until a
# wait retires it, and the PTX ISA forbids writing those registers before then. A first version loaded the next
# k-tile's fragments while this k-tile's `wgmma` ran (`wait_group 1`) *into the same registers*: the PTX program
# itself broke the rule, and its results were wrong. So step 14 first waits for the previous k-tile's `wgmma`, then
# loads. The alternative that keeps the overlap is two sets of fragment registers, used in turn (a later
# experiment does that). The wrong build's check, and how step 14's tile layout was found — the swizzle cut the
# requests the L2 had to serve for the same copies several-fold, though *why* the unswizzled copies made so many
# requests is not settled — are in the
# [deep dive: how step 14 was found](deep_dives/14_how_step_14_was_found.ipynb).
#
# ## The prediction
#
# Step 14 is the experiment's fastest 3xTF32 build made a step: the same kernel, plus a guarded twin for partial
# tiles, which squares never run. So it should run at that build's ratio to cuBLAS SGEMM (measured in the same run as
# cuBLAS) — with one caveat: the experiment launched its builds through Numba's dispatcher, whose host-side cost falls
# inside the timed region, where the benchmark launches a step through its prepared launch plan. The prediction is
# therefore a floor, by a fixed cost per launch that matters most at the smaller size.

# %%
if results and swizzled:
    for s, q in lesson_14.predicted(results, [swizzled]).items():
        print(f"{lesson.size_label(s)}: {q.low:.2f}× cuBLAS SGEMM ({q.tflops[0]:.1f} TFLOPS at this benchmark's "
              f"SGEMM); the build took {q.ms:.2f} ms")

# %% [markdown]
# ## The kernel
#
# One k-tile of the loop. It splits A's k-tile in place — big parts over the stage, small parts ×2^11 into a second
# shared buffer — waits for the previous k-tile's `wgmma` and adds its big·big products to `total`, loads and splits
# Bᵀ's fragments, then issues three `wgmma` per k-step of 8, each with a descriptor pointing 32·s bytes into the
# swizzled rows of A's big or small parts:

# %%
lesson.show_kernel(warpgroup_mma, start="if t >= LOAD_AHEAD:", stop="warpgroup_commit()")

# %% [markdown]
# A's copy, each 16-byte chunk to its swizzled slot (the products land in Cᵀ's layout, so the store swaps rows and
# columns back; the whole kernel: `warpgroup_mma.source()`, or `gemm-steps diff 13 14`):

# %%
lesson.show_kernel(warpgroup_mma, start="for load in unroll(A_LOADS):  # 16-byte chunks", stop="copy_async(tiles, to, a")

# %% [markdown]
# ## Is it right?
#
# On the simulator, `wgmma`'s twin makes the 128 threads of the warpgroup meet, assembles Bᵀ from their fragments,
# reads Aᵀ through the descriptor and computes the product once — so a wrong layout or descriptor gives a wrong
# answer. (It rounds each product once where the hardware's sum is biased, and its `wgmma` is finished when it
# returns: neither hazard can show here; the GPU measurements test them.) One warpgroup on smaller tiles, a full-tile
# shape and a ragged one, against NumPy with the float32 tolerance:

# %%
print("simulator tiles:", {k: warpgroup_mma.config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREADS")})
lesson.check_against_numpy(warpgroup_mma, [(64, 64, 32), (45, 70, 20)])

# %% [markdown]
# ## How fast, and how accurate
#
# TFLOPS (× cuBLAS SGEMM in the same run), and the relative error of 512 sampled elements against float64:

# %%
v = lesson_14.verdict(results, [swizzled] if swizzled else []) if results else None
if results:
    lesson.say(lesson_14.speed_table(results))
    lesson.show_figure(lesson_14.speed_figure(results))
if v:
    for s, r in v.sizes.items():
        print(f"{lesson.size_label(s)}: {r.tflops:.1f} TFLOPS = {r.vs_sgemm:.2f}× cuBLAS SGEMM (predicted "
              f"{r.predicted[0]:.2f}×), {r.vs_step13:.2f}× step 13; the experiment's build took "
              f"{r.build_minus_step_ms:+.2f} ms per launch against the step's time")
    print(f"our speed target, ≥ {TARGET_3XTF32_VS_SGEMM}× cuBLAS SGEMM at both sizes: "
          f"{'met' if v.speed_met else 'not met'}")
elif results:
    print("this benchmark has no step 14: no verdict")

# %% [markdown]
# **The prediction.** Compare the measured and predicted ratios above: where step 14 runs below the prediction, its
# premise — "the same kernel" — no longer holds. The experiment's build is the step's first version, and the fixes
# that keep the FP32 contract (below: A rounded in place, the small parts scaled, the inf/NaN check) cost the step
# more than a launch through Numba's dispatcher costs the build; where the build's time per launch is *shorter* than
# the step's (a negative difference above), the fixes outweigh the dispatcher. (The build ran on an H100: the same
# SM count and clock as an H200, on which the FP32 steps time alike.)
#
# **Accuracy**, by lesson 13's rule — every measured shape, standard-normal and wide-exponent inputs: the benchmark's
# squares, a 512×512×K sweep of the experiment's build (before the swizzle, which changed no arithmetic), and a run
# of steps 13–14 on wide-exponent inputs at 4096³–8192³:

# %%
sweep, wide = load_run(lesson_14.WGMMA_ACCURACY_RUN), load_run(lesson_14.WIDE_RUN)
if results and v:
    a = lesson_14.accuracy(results, sweep, wide)
    print(f"accuracy rule: {'met' if a['met'] else 'not met'}; worst: "
          + ", ".join(f"{kind} {w:.2f}×" for kind, w in a["worst"].items())
          + "".join(f"\n  misses: {kind}, {shape}: {r:.2f}×" for kind, shape, r in a["misses"]))

# %% [markdown]
# Step 14 meets our speed target. Its error is below SGEMM's at the large squares — for lesson 13's reason: it
# adds a block of products before each rounded add. The sweep and the wide-exponent run are the H100's, of the step's
# first version (A truncated, above; small parts not scaled): like step 13 then, it missed the rule at small K and on
# wide exponents. Since then both steps round both operands and scale the small parts, and they keep the **FP32
# contract** ([docs/fp32_contract.md](../docs/fp32_contract.md)): what "float32 accuracy" promises, measured against
# the sequential float32 sum with a floor at small K, for finite inputs, inf/NaN and subnormals, and the tests that
# check it on the simulator and on a GPU. The fixes — rounding A in place, the scaled small parts, the check for
# inf/NaN — cost speed; the step before and after them, same GPU, same inputs, two passes:

# %%
cost = lesson_24.contract_cost(load_run(lesson_24.CONTRACT_AB_RUN), "warpgroup_mma")
for s, c in cost.items():
    print(f"{lesson.size_label(s)}: {c['old']:.1f} → {c['new']:.1f} TFLOPS, {sum(c['cost']) / 2:.0%} slower (passes: "
          f"{c['cost'][0]:.1%} to {c['cost'][1]:.1%})")

# %% [markdown]
#
# ## What is left
#
# Three products per k-step cost speed. The same design with one product per k-step — TF32 — ran in the same
# experiment:

# %%
if swizzled and results:
    left = lesson_14.what_is_left(swizzled, results)
    for s, r in left.sizes.items():
        print(f"{lesson.size_label(s)}: TF32 build {r.tflops:.1f} TFLOPS = {r.vs_step12:.2f}× step 12, "
              f"{r.of_cublas_tf32:.0%} of cuBLAS TF32; the 3xTF32 build ran at {r.three_share:.0%} of it")
    print(f"step 14 against the Hopper chapter's 3xTF32 target ({left.hopper_target}× SGEMM): "
          + ", ".join(f"{lesson.size_label(s)} {r:.2f}×" for s, r in left.hopper.items()))

# %% [markdown]
# The 3xTF32 build ran near a third of the TF32 build's speed — what three products per product would give if the
# tensor-core work were the limit (our reading). That TF32 build, with an edge kernel, is step 15. Step 14 runs only
# on compute capability 9.0 (H100, H200) and on the simulator.
#
# Try it: [`exercises/wgmma.py`](../exercises/wgmma.py) — one warpgroup's `wgmma`: the descriptor's strides, the
# fence, the commit and the wait (`gemm-steps exercise check wgmma` names a wrong field, a missing fence, a register
# written after it, and a read of the accumulators before the wait).
#
# Next: [Lesson 15: TF32 on `wgmma`](15_warpgroup_tf32.ipynb).
