# %% [markdown]
# # Lesson 8 — Double buffering: load the next tile while computing this one
#
# Every kernel since lesson 3 has the same rhythm inside a block: copy a tile from global memory into shared
# memory, wait at a barrier until the copy is complete, compute on it, wait at a barrier until everyone is done
# reading, repeat. While the copy is on its way — global memory answers after hundreds of clock cycles — the
# block's warps have nothing to do. Only *other* blocks on the same SM can use that time. This step lets a block
# overlap its own waiting with its own work.

# %%
import gemm_steps
from gemm_steps.course import lesson
from gemm_steps.harness import results_files

unrolled, double_buffered = gemm_steps.get_step("unrolled"), gemm_steps.get_step("double_buffered")
print(double_buffered.doc)

# %% [markdown]
# ## The idea
#
# Shared memory holds **two stages** of each tile. At iteration t, each thread first *issues* its global loads of
# k-tile t into registers (`a_next`, `b_next`), then runs the FMAs of k-tile t − 1 from the other stage, and only
# then writes the registers into shared memory. A load's data is needed only a whole k-tile of FMAs after it was issued:
#
# ```
#  step 7, one block:   │load t│▒wait▒│FMAs t      │load t+1│▒wait▒│FMAs t+1    │ …      2 barriers per k-tile
#                                 ↑ barrier    ↑ barrier
#
#  step 8, one block:   │issue loads t+1 │FMAs t (stage t%2)      │regs → stage (t+1)%2│ …  1 barrier per k-tile
#                        └── in flight while the FMAs run ──────┘                    ↑ barrier
# ```
#
# One barrier per k-tile suffices: after it, stage t % 2 is complete *and* everyone has finished reading the
# other stage, which the next iteration overwrites. The load coordinates, constant for the whole loop, are now
# computed once before it. Against step 7, as written:

# %%
lesson.show_diff(unrolled, double_buffered)

# %% [markdown]
# The new k-loop as written, from the loads of the next k-tile to the one barrier
# (`double_buffered.generated_source()` prints it expanded, as Numba compiles it):

# %%
lesson.show_kernel(double_buffered, start="for k_tile in range", stop="syncthreads()")

# %% [markdown]
# The step also asks for occupancy: `launch_bounds=(256, 2)` (`MIN_BLOCKS_PER_SM = 2` in its tile configuration)
# tells the compiler that two blocks of 256 threads must fit on an SM, which caps it at 128 registers per thread.
#
# ## The prediction
#
# Two models now disagree. Count instructions, as in lessons 4–7:

# %%
compiled = lesson.compile_kernels([unrolled, double_buffered])
lesson.compiled_table(compiled)

# %%
results = lesson.measure_or_load(["unrolled", "double_buffered"], [512, 1024, 2048, 4096])

# %%
config = double_buffered.config
fmas_between = config["BLOCK_K"] * config["THREAD_M"] * config["THREAD_N"]
if results:
    peak = lesson.fp32_peak_tflops(results)
    per_fma = {e["step"]: sum(lesson.k_loop_mix(e["ptx"], lesson.fmas_per_k_tile(e["step"])).values())
               for e in compiled.values()}
    lesson.say(
        f"* **Issue model:** {per_fma['unrolled']:.2f} → {per_fma['double_buffered']:.2f} instructions per FMA (in "
        f"both steps the loaded values pass through registers on their way to shared memory, as Numba has no direct "
        f"global-to-shared copy without `cp.async`; step 8 changes *when* they are stored: the next k-tile's loads "
        f"are issued before the FMAs on the current one, and stored after them), so if issue slots were the limit, "
        f"step 8 would be **{per_fma['unrolled'] / per_fma['double_buffered']:.2f}×** step 7 — slightly *slower*.\n"
        f"* **Latency model:** in step 7 a thread needs its loaded data immediately (load, barrier, compute); in "
        f"step 8, {fmas_between} of its own FMAs stand between issuing a load and needing its data, and a warp "
        f"issues at most one instruction per clock — so at least {fmas_between} clock cycles, more than the "
        f"hundreds that global memory takes. If waiting was the limit, step 8 should recover much of it; the "
        f"docstring, from an earlier run, expects about **1.1×**.\n\n"
        f"Lesson 7 ended with step 7 at well under its issue ceiling, which favours the latency model."
    )

# %% [markdown]
# ## Is it right?
#
# With two stages, the shapes must run several k-tiles: 2 and 3 here, with `BLOCK_K` = 16 on the simulator.

# %%
lesson.check_against_numpy(double_buffered, [(33, 17, 40), (128, 128, 32), (129, 132, 48)])

# %% [markdown]
# ## The measurement

# %%
lesson.timing_table(results, ["unrolled", "double_buffered"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))

# %%
if results:
    size = lesson.headline_size(results, ["unrolled", "double_buffered"])
    before, after = lesson.record(results, "unrolled", size), lesson.record(results, "double_buffered", size)
    speedup = before["median_ms"] / after["median_ms"]
    issue_prediction = per_fma["unrolled"] / per_fma["double_buffered"]
    lesson.say(
        f"At {lesson.size_label(size)} step 8 runs at **{after['tflops']:.2f} TFLOPS, {after['pct_of_cublas']:.1f} % "
        f"of cuBLAS: {speedup:.2f}× step 7.** "
        + ("The latency model wins: the kernel executes more instructions per FMA and still runs faster, so it "
           "was waiting for global memory, not short of issue slots."
           if speedup > 1.02 and speedup > issue_prediction else
           "No clear gain: whatever step 7 waited for, it was not only its own global loads.")
    )

# %% [markdown]
# ## What the tuning sweep adds
#
# The step's configuration was tuned like step 7's (`gemm-steps tune double_buffered`). The sweep also isolates the
# occupancy hint: two of its configurations have the same tiles, with and without `MIN_BLOCKS_PER_SM = 2`.

# %%
sweep = lesson.load_shipped(results_files.TUNING_DOUBLE_BUFFERED_ANY,
                            "`gemm-steps tune double_buffered`: every candidate configuration, timed in one run")
lesson.sweep_table(sweep, double_buffered) if sweep else None

# %%
if sweep:
    records = lesson.sweep_records(sweep)
    pairs = [(with_hint, without) for with_hint in records for without in records
             if with_hint["config"].get("MIN_BLOCKS_PER_SM") and not without["config"].get("MIN_BLOCKS_PER_SM")
             and lesson.same_config({**with_hint["config"], "MIN_BLOCKS_PER_SM": 0}, without["config"])]
    lines = [f"* {lesson.config_label(without['config'])}: with the hint "
             f"**{without['median_ms'] / with_hint['median_ms']:.2f}×** as fast ({without['median_ms']:.3f} → "
             f"{with_hint['median_ms']:.3f} ms)" for with_hint, without in pairs]
    unrolled_sweep = lesson.load_shipped(results_files.TUNING_UNROLLED_ANY, "step 7's sweep, a separate run")
    same = []
    if unrolled_sweep:
        same = [(u, d) for u in lesson.sweep_records(unrolled_sweep) for d in records
                if lesson.same_config(u["config"], d["config"])]
    lines += [f"* the same tiles, {lesson.config_label(d['config'])}, as step 7 and as step 8: {u['median_ms']:.3f} → "
              f"{d['median_ms']:.3f} ms, **{u['median_ms'] / d['median_ms']:.2f}×** (two sweeps, "
              f"{str(unrolled_sweep['environment']['date'])[11:16]} and {str(sweep['environment']['date'])[11:16]} "
              f"UTC: double buffering alone, tiles held fixed)" for u, d in same]
    lesson.say("\n".join(lines) if lines else "The sweep has no pair of configurations that differ only in the hint.")

# %% [markdown]
# Where the hint helps, it does so the same way double buffering does: with two blocks sharing each SM, one
# block's barrier wait is another's compute time — overlap between blocks, where double buffering creates it
# within one. The two remedies can add up because neither hides every wait on its own.
#
# ## What the profiler says

# %%
lesson.show_profile("unrolled", "double_buffered", "cublas")

# %% [markdown]
# One barrier per k-tile instead of two shows in the issue rate (instructions issued per cycle per scheduler):
# step 8's warps are ready to issue more often than step 7's. Both keep the L1/TEX unit, which serves shared
# memory, almost fully busy: their fragment reads are close to that unit's limit. cuBLAS, on the last row, issues
# more often still with L1/TEX only half busy — lesson 9's warp tiling is about that gap.
#
# ## What the numbers say
#
# Double buffering is the first step whose gain does not show in any count of instructions or bytes: it moves
# *when* work happens, not how much of it there is. Its gain is bounded by how much waiting step 7 had left, and
# step 7 already had a second block per SM (the table above) to fill some of its waits.
#
# What is left now? The shared-memory loads of the fragments: the compiled code shows them still there, and lesson
# 6's wavefront count says a warp's B loads conflict. The next step rearranges which elements of C each thread
# owns so that every fragment load of a warp reads contiguous memory.
