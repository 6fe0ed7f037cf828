# %% [markdown]
# # Lesson 15 — TF32 on Hopper's `wgmma`
#
# Step 12 multiplies in TF32 with `mma.sync` and stops near the course's TF32 target, latency-bound at 8 warps per
# SM. Step 14 built a faster engine for 3xTF32: `wgmma`, A in the 128-byte swizzle layout, Cᵀ = Bᵀ·Aᵀ. Step 15
# runs plain TF32 on that engine: **one product per k-step instead of three**.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_15
from gemm_steps.course.targets import TARGET_TF32_TFLOPS
from gemm_steps.course.timings import WGMMA_SWAPPED_RUNS, WGMMA_SWIZZLED_RUN, load_run

warpgroup_mma = gemm_steps.get_step("warpgroup_mma")
warpgroup_tf32 = gemm_steps.get_step("warpgroup_tf32")
swizzled, swapped = load_run(WGMMA_SWIZZLED_RUN), load_run(WGMMA_SWAPPED_RUNS[0])
results = lesson.measure_or_load(["tensor_cores"], [512, 1024, 2048, 4096, 8192], optional=["warpgroup_tf32"])
shown, source = lesson_15.shown_timings(results, load_run(lesson_15.STEP15_RUN))
print(warpgroup_tf32.doc.splitlines()[0])

# %% [markdown]
# ## What changes from step 14
#
# Everything that moves data stays: A's k-tiles copied into the swizzled layout two k-tiles ahead, B's rows as they
# are, Bᵀ's fragments loaded into registers after the previous `wgmma` retired (lesson 14's second hazard). What goes
# is the arithmetic of 3xTF32: no small parts, no second shared buffer, and **no flush**. Step 14 flushed its
# big·big products into rounded float32 adds every k-tile because the tensor core's long sums drift (lesson 13's
# bias), and 3xTF32 promises float32-level accuracy. TF32 promises much less. TF32's input error (u), verify's two
# tolerances, and — from lesson 14's experiment — the 3xTF32 build that kept its whole sum in the tensor core
# (float32-accurate inputs, so its error *is* the accumulator's) beside step 12's TF32 error in the same run:

# %%
b = lesson_15.error_budget(swapped)
print(f"u = 2^-11 = {b.u:.1e}; tolerances at K = {b.k}: {b.tolerance:.1e} (float32 sums), "
      f"{b.tf32_tolerance:.1e} (TF32 inputs)")
if b.accumulator is not None:
    print(f"{lesson.size_label((b.size,) * 3)}: accumulator alone {b.accumulator:.1e}, step 12's TF32 error "
          f"{b.step12:.1e}: {b.accumulator / b.step12:.2f}× it, adding {b.combined:.0%} if independent")

# %% [markdown]
# The accumulator's drift is a fraction of TF32's own error, so step 15 keeps one accumulator over all of K. One
# accumulator instead of three frees registers, and they buy a taller tile (wgmma's N, the rows of A, goes from 128 to
# 256), which reads more multiply-adds per float of A and B it stages:

# %%
for number, r in lesson_15.registers(warpgroup_mma, warpgroup_tf32).items():
    print(f"step {number}: {r.tile[0]}×{r.tile[1]} tiles, {r.sets} accumulator set(s) of {r.per_set} = "
          f"{r.floats} floats per thread; {r.reuse:.0f} multiply-adds per staged float")

# %% [markdown]
# ## The prediction
#
# Lesson 14's swizzle experiment already ran this kernel (full tiles only) in the same run as step 12. If step 15
# keeps that build's ratio to step 12, it runs at that ratio times step 12's speed in the timings below. As in
# lesson 14, the build was launched through Numba's dispatcher, so the prediction is a floor by a fixed cost per
# launch, which matters most at the smaller size.

# %%
if shown and swizzled:
    for s, q in lesson_15.predicted(shown, swizzled).items():
        print(f"{lesson.size_label(s)}: {q.ratio:.2f}× step 12 -> {q.tflops:.0f} TFLOPS (the build ran "
              f"{q.build:.1f}, in {q.build_ms:.2f} ms)")

# %% [markdown]
# ## The kernel
#
# One k-tile of the loop: wait for the previous k-tile's `wgmma`, load and round Bᵀ's fragments (`to_tf32`), then
# one `wgmma` per k-step of 8, accumulating into `acc` — never started afresh. A is not rounded: the tensor core
# truncates it as it reads. The whole kernel: `warpgroup_tf32.source()`, or `gemm-steps diff 14 15`.

# %%
lesson.show_kernel(warpgroup_tf32, start="if t >= LOAD_AHEAD:", stop="warpgroup_commit()")

# %% [markdown]
# ## Is it right?
#
# On the simulator, with one warpgroup on smaller tiles, a full-tile shape and a ragged one (the edge kernel),
# against NumPy with verify's TF32 tolerance:

# %%
lesson.check_against_numpy(warpgroup_tf32, [(64, 64, 64), (45, 70, 20)])

# %% [markdown]
# ## How fast, and how accurate
#
# The course benchmark if it has step 15; else the run that measured it, beside step 12 and both cuBLAS (the
# caption says which file):

# %%
if source == "step run":
    print("step 15 is not in the course benchmark yet: these are the timings of the run that measured it")
if shown:
    lesson.say(lesson_15.speed_table(shown))
    lesson.show_figure(lesson_15.speed_figure(shown))

# %% [markdown]
# ## The verdict

# %%
v = lesson_15.verdict(shown, swizzled) if shown else None
if v:
    for s, r in v.sizes.items():
        print(f"{lesson.size_label(s)}: {r.tflops:.1f} TFLOPS (predicted {r.predicted:.0f}; the build took "
              f"{r.build_minus_step_ms:+.2f} ms per launch against the step) = {r.vs_step12:.2f}× step 12, "
              f"{r.of_cublas_tf32:.0%} of cuBLAS TF32")
    print(f"the TF32 target of {TARGET_TF32_TFLOPS:.0f} TFLOPS at both sizes: {'met' if v.met else 'not met'} "
          f"(step 12 alone: {'met' if v.step12_met else 'not met'})")
else:
    print("no step 15 at the two largest sizes: no verdict")

# %% [markdown]
# At the smaller size step 15 ran above its prediction, by about the time a launch through the dispatcher costs; at
# the larger the prediction holds. How much faster than step 12 depends on the size: compare the two lines above.
#
# **Accuracy.** Step 15's error is larger than cuBLAS TF32's and step 12's: the tensor core *truncates* A as it reads
# it from shared memory, where step 12 and cuBLAS round. On the CPU, the same product with float64 sums so that only
# the inputs differ (each element's error over Σ|a·b|, the median), A truncated and B rounded against both rounded:

# %%
check = lesson_15.truncation_check()
if v:
    for s, r in v.sizes.items():
        print(f"{lesson.size_label(s)}: step 15 {r.error:.1e}, cuBLAS TF32 {r.cublas_tf32_error:.1e} "
              f"({r.error / r.cublas_tf32_error:.2f}×), step 12 {r.step12_error:.1e}")
print(f"inputs only, K = {check.k}: A truncated {check.truncated:.1e}, both rounded {check.rounded:.1e} "
      f"({check.truncated / check.rounded:.2f}×)")

# %% [markdown]
# Rounding A would cost a pass over shared memory (or registers) per k-tile; the step does not pay it, and stays
# within verify's TF32 tolerance.
#
# ## What is left
#
# cuBLAS TF32 is still faster (the ratio is in the verdict's numbers). We have not profiled its kernels here.
# Hopper GEMMs in CUTLASS — the library cuBLAS's Hopper kernels resemble — copy whole tiles with the Tensor Memory
# Accelerator (TMA: one request per tile, not one per 16 bytes), let dedicated producer warps do the copying while
# the others only issue `wgmma`, and wait on **mbarriers** (shared-memory barrier objects that count arrivals and
# bytes, so consumers wait for exactly the tile they need) instead of block-wide barriers. The course's experiments
# with those pieces are in `experiments/`. Step 15 runs only on compute capability 9.0 (H100, H200) and on the
# simulator, and `matmul` never picks it: its accuracy is TF32's.
#
# Try it: [`exercises/wgmma.py`](../exercises/wgmma.py) — the `wgmma` of steps 14 and 15 on one warpgroup, its
# descriptor and its fences (`gemm-steps exercise check wgmma`).
#
# Next: [Lesson 16: the copy engine feeds the tensor cores](16_tma_pipeline.ipynb).
