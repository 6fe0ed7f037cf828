# %% [markdown]
# # Deep dive (lesson 14_warpgroup_mma): how step 14 was found
#
# Step 14 is the last of a line of builds in one experiment (`experiments/wgmma_swapped.py`, before it the first
# `wgmma` GEMM, `experiments/wgmma_gemm.py`). Three of them explain choices lesson 14 only states: why Cᵀ = Bᵀ·Aᵀ,
# why the kernel waits before loading fragments, and why A lies in the 128-byte swizzle layout.

# %%
from gemm_steps.course import lesson, lesson_14
from gemm_steps.course.timings import WGMMA_SWAPPED_RUNS, WGMMA_SWIZZLED_RUN, caption, load_run

runs = [run for run in map(load_run, WGMMA_SWAPPED_RUNS) if run]
swizzled = load_run(WGMMA_SWIZZLED_RUN)

# %% [markdown]
# ## The first `wgmma` GEMM transposed B
#
# TF32 `wgmma` reads its shared-memory operands K-major. The first GEMM on it kept C = A·B and copied B into K-major
# order 4 bytes at a time. It was right, and slower than step 12's `mma.sync`, in the same run:

# %%
if runs:
    w = lesson_14.why_swap(runs[0])
    print(f"{lesson.size_label(w.size)}: transposing build {w.transposing:.0f} TFLOPS (TF32), step 12 "
          f"{w.step12:.0f} — {caption(runs[0])}")

# %% [markdown]
# Swapping the operands removes the transposition: Aᵀ is K-major as A lies in memory, and Bᵀ goes through
# registers, where the layout is ours to choose.
#
# ## Loading the next fragments while the `wgmma` run
#
# A `wgmma` may read its register operand until a wait retires it, and the PTX ISA forbids writing those registers
# before then. The build that waited for all but the newest batch (`wait_group 1`) loaded the next k-tile's fragments
# into the same registers while this k-tile's `wgmma` still read them — the program broke the rule, and ptxas, which
# need not protect it, gave the loads the very registers the running `HGMMA` read. Its check against its own inputs,
# beside the same build waiting first (`wait_group 0`):

# %%
if runs:
    lesson.say(lesson_14.overlap_table(runs[0]))

# %% [markdown]
# An error near 1 is a wrong product; the serial build's is float32 rounding. Two sets of fragment registers, used in
# turn, keep the overlap legally (a later experiment, `experiments/kernels/warpgroup_overlap.py`).
#
# ## Copies the L2 can serve whole
#
# Each thread copies A in 16-byte `cp.async` chunks, so a warp's 32 copies read 4 whole rows of A's k-tile: four
# 128-byte lines of global memory. In the swizzle layout they also write 4 whole 128-byte lines of shared memory,
# only in another order within each line. In the no-swizzle layout of "core matrices" (8 rows × 16 bytes each) a
# row's eight chunks go to eight different core matrices, 128 bytes apart. The same builds both ways, in one run,
# with Nsight Compute on the TF32 256×128 build at 8192³, and step 12 (`mma.sync`) in the same run for scale:

# %%
l2 = lesson_14.l2_table(swizzled)
if l2:
    lesson.say(l2.table)
    print("step 12, same run: " + ", ".join(f"{lesson.size_label(s)} {t:.1f} TFLOPS" for s, t in l2.step12.items()))
else:
    print("the swizzle experiment's files are not shipped here (see experiments/README.md)")

# %% [markdown]
# The swizzle did not change the work — the same copies, products and adds — and the L2 served far fewer, fuller
# requests for it. *Why* the unswizzled copies reached the L2 as about one request per 16-byte copy is our reading of
# the counters, not settled: the copies' global reads are the same instruction (`LDGSTS.E.BYPASS.128`) either way,
# and only their shared destinations differ.
#
# Back to [lesson 14](../14_warpgroup_mma.ipynb).
