# %% [markdown]
# # Deep dive (lesson 07_unrolled): step 7's compile time — how long Numba takes, and where the time goes
#
# [Lesson 7](../07_unrolled.ipynb) unrolls the k-loop before Numba compiles the kernel, so Numba compiles a few
# thousand lines of straight-line Python instead of a loop. This notebook measures what that costs: the first call
# on a GPU host, the compile to PTX on the CPU that built this notebook (profiled live, pass by pass), and the
# patches to Numba's passes in `gemm_steps/toolkit/numba_patches.py` that make it several times faster without
# changing the code it produces.

# %%
import gemm_steps
from gemm_steps.course import compile_profile, lesson, lesson_07
from gemm_steps.harness import results_files
from gemm_steps.toolkit import numba_patches

vectorized, unrolled = gemm_steps.get_step("vectorized"), gemm_steps.get_step("unrolled")
lesson.facts({step.name: len(step.generated_source().splitlines()) for step in (vectorized, unrolled)},
             ("step", "lines Numba compiles (generated_source(): fast and edge kernels)"))

# %% [markdown]
# ## The first call on a GPU host
#
# What a learner waits for: a fresh Python process calls step 7 once. The course's first-call experiment
# (`experiments/first_call.py`) ran on an H100 host with the first four patches in place (the fifth, liveness, came
# later and does not change step 7's compile); the kernel it compiled and how long that took come from the run's own
# log:

# %%
lesson.facts(lesson_07.first_call("unrolled") or {})
found = lesson_07.load_first_calls()
if found:
    lesson.say(lesson_07.first_call_table(found[1], ["vectorized", "unrolled", "double_buffered", "warp_tiling"]))

# %% [markdown]
# ## Where the time goes: a live profile
#
# The patches, as `numba_patches` describes them:

# %%
print("\n\n".join(numba_patches.__doc__.split("\n\n")[1:3]))

# %% [markdown]
# The next cell compiles step 7's fast kernel to PTX twice, in a separate Python process in GPU mode (no GPU
# needed): with the patches and with them removed. Each of Numba's passes is timed, grouped by what it does;
# NVVM (LLVM IR → PTX) and `ptxas` (PTX → machine code) are timed apart. Both PTX files are compared. The numbers are
# this machine's, measured now, and vary with its load.

# %%
profile = compile_profile.profile_compile(unrolled)
lesson.say(compile_profile.compile_profile_table(profile))

# %% [markdown]
# The patches make the compile several times faster (the totals) and the PTX is the same code either way (the last
# row). They save in Numba's own passes — lowering to LLVM IR most, then SSA reconstruction, type inference and
# stripping phi nodes — not in NVVM. Why Numba's own passes, and not NVVM: the expanded kernel assigns each of the 64 accumulators once per k-step, so
# every `acc_i_j` is a variable assigned many times. Numba rebuilds SSA form (one name per assignment) and then
# removes the phi nodes again, types every statement, and lowers every statement to LLVM IR. Before the patches,
# several of these passes did work proportional to (variables × statements) or (statements in a block)², which a
# loop never shows and a straight-line kernel of this size does. The patches compute the same results in one pass
# each (and one leaves the variable lifetimes that Numba's nine post-processing runs computed up front to be computed
# when a pass reads them); `tests/test_numba_patches.py` checks that the PTX is byte-identical.
#
# ## Before these patches
#
# Two shipped runs were measured before the patches were complete, so they show the earlier cost. They cannot be
# compared with the live profile above (different machines, and first call on a GPU host against PTX generation
# alone), only with each other. The tuning sweep of lesson 7 recorded each configuration's first call (compile plus
# one run) on its H200 host:

# %%
sweep = lesson.load_shipped(results_files.TUNING_UNROLLED_ANY, "`gemm-steps tune unrolled`, before the compile-time "
                            "patches were complete")
if sweep:
    records = lesson.sweep_records(sweep)
    lesson.say("\n".join(f"* {lesson.config_label(r['config'])}: **{r['first_call_s']:.1f} s**" for r in records))

# %% [markdown]
# The configurations that unroll more FMAs per k-tile (a deeper `BLOCK_K`, a larger thread tile) took longest. A
# second run timed every step's first call in a fresh process (`scripts/compile_times.py`), at 256³ (the fast
# kernel only), at 257³ (the edge kernel too), and in a process that finds Numba's on-disk cache (where and when it
# ran, under the table):

# %%
times = lesson_07.shipped_compile_times()
if times:
    lesson.say(times.table)
    lesson.say(times.measured)

# %% [markdown]
# The on-disk cache was already the remedy for every later process: on a GPU the expanded sources are written to a
# cache folder, so Numba's cache can reuse the compiled kernels (see `gemm_steps.toolkit.unroll.define`).
# `numba_patches` quotes its own profiles from before the patches (step 9's kernel, on a CPU): 10 of 23 s in
# `_find_singly_assigned_variable`, and 2.5 and 1.8 of 7.5 s in SSA reconstruction and phi stripping for the edge
# kernel.
#
# Back to [Lesson 7](../07_unrolled.ipynb).
