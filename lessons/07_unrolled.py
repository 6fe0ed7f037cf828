# %% [markdown]
# # Lesson 7 — Unrolling at compile time, and choosing tile sizes by measuring them
#
# Step 6's inner loop is still a loop: every k-step pays a counter, a compare, a branch and address arithmetic for
# its 64 FMAs. C++ CUDA would add `#pragma unroll` and be done. Numba has no such pragma — so this step *marks* the
# loops to unroll, in ordinary Python, and a small compile step expands them into straight-line code before Numba
# compiles it. Two more things come with it: the tile sizes become parameters, so they can be **tuned** by
# measurement, and the kernels take noticeably longer to **compile**. This lesson covers all three.

# %%
import json

import gemm_steps
from gemm_steps.course import lesson
from gemm_steps.toolkit import unroll

vectorized, unrolled = gemm_steps.get_step("vectorized"), gemm_steps.get_step("unrolled")
print(unrolled.doc)

# %% [markdown]
# ## The idea: loops marked for the compiler
#
# `gemm_steps.toolkit.unroll` reads a kernel's Python source and expands the few things it marks, before Numba sees
# the kernel:

# %%
doc = unroll.__doc__
print(doc[doc.index("``for i in unroll(N):``"):doc.index("Everything here is plain Python")])

# %% [markdown]
# Here is the heart of step 7's kernel as written, the k-loop over one shared tile. `for kk in unroll(BLOCK_K)`
# repeats its body for every column of the tile, and the two nested `unroll` loops over `THREAD_M` and `THREAD_N`
# write the 64 FMAs of the outer product into `acc`, the register tile that `acc = registers(THREAD_M, THREAD_N)`
# declares at the top of the kernel:

# %%
lesson.show_kernel(unrolled, start="# The unrolled k-loop", stop="syncthreads()")

# %% [markdown]
# And this is what it expands into, from the barrier before that loop on — the code Numba really compiles, printed
# whole by `unrolled.generated_source()` (the fast kernel, then the edge kernel):

# %%
lesson.show_excerpt(unrolled.generated_source(), start="syncthreads()", lines=28)

# %% [markdown]
# The accumulators are no longer an array but 64 named variables `acc_0_0 … acc_7_7`, and every shared-memory
# offset (`+ 128`, `+ 132`, … for the next columns) is a constant the compiler can fold into the load instruction.
# Against step 6, as written:

# %%
lesson.show_diff(vectorized, unrolled)

# %% [markdown]
# ## The prediction
#
# The compiled code says how much the unrolling removes. Both kernels' k-loops, per FMA:

# %%
compiled = lesson.compile_kernels([vectorized, unrolled], lowering_comparison=True)
lesson.compiled_table(compiled)

# %%
results = lesson.measure_or_load(["vectorized", "unrolled"], [512, 1024, 2048, 4096])

# %%
if results:
    peak = lesson.fp32_peak_tflops(results)
    per_fma = {e["step"]: sum(lesson.k_loop_mix(e["ptx"], lesson.fmas_per_k_tile(e["step"])).values())
               for e in compiled.values()}
    issue = {name: peak / x for name, x in per_fma.items()}
    size = lesson.headline_size(results, ["vectorized", "unrolled"])
    before = lesson.record(results, "vectorized", size)
    share = before["tflops"] / issue["vectorized"]
    lesson.say(
        f"Instructions per FMA fall from {per_fma['vectorized']:.2f} to **{per_fma['unrolled']:.2f}**, so the issue "
        f"ceiling rises from {issue['vectorized']:.1f} to **{issue['unrolled']:.1f} TFLOPS**. Step 6 ran at "
        f"{share:.0%} of its issue ceiling at {lesson.size_label(size)}; if step 7 keeps that share, expect "
        f"**{share * issue['unrolled']:.1f} TFLOPS, {issue['unrolled'] / issue['vectorized']:.2f}× step 6**. The "
        f"docstring, from an earlier run, expects about 1.3×. (Step 7 also reads `BLOCK_K = "
        f"{unrolled.config['BLOCK_K']}` columns per tile instead of {vectorized.config['BLOCK_K']}, halving the "
        f"barriers per FMA; the tuning below is where that came from.)"
    )

# %% [markdown]
# ## Is it right?
#
# The fast kernel needs whole tiles (here 128×128 with `BLOCK_K` = 16 on the simulator), so the checks include one
# full tile, and a full tile with ragged edges next to it:

# %%
lesson.check_against_numpy(unrolled, [(33, 17, 40), (128, 128, 32), (129, 132, 32)])

# %% [markdown]
# ## The measurement

# %%
lesson.timing_table(results, ["vectorized", "unrolled"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))

# %%
if results:
    after = lesson.record(results, "unrolled", size)
    speedup = before["median_ms"] / after["median_ms"]
    predicted = issue["unrolled"] / issue["vectorized"]
    lesson.say(
        f"At {lesson.size_label(size)} step 7 runs at **{after['tflops']:.2f} TFLOPS, {after['pct_of_cublas']:.1f} % "
        f"of cuBLAS: {speedup:.2f}× step 6**, against {predicted:.2f}× predicted by the issue model. It reaches "
        f"{after['tflops'] / issue['unrolled']:.0%} of its issue ceiling, where step 6 reached {share:.0%}. "
        + ("The issue model predicted well: the instructions around the FMAs were what held step 6 back."
           if speedup >= 0.95 * predicted else
           f"A gain of {speedup - 1:.0%} where {predicted - 1:.0%} was predicted: most of it, not all. The instructions "
           "around the FMAs were most of what held step 6 back, but step 7 reaches a smaller share of its own "
           "ceiling, so the issue slots are no longer the only thing it waits for. The next lesson finds what else "
           "it waits for." if speedup >= 0.85 * predicted else
           "So removing instructions helped, but less than their number suggests: the issue slots are no longer "
           "the only thing the kernel waits for. The next lesson finds what else it waits for.")
        + ("" if "config" in after else
           "\n\n(One caveat: this results file does not record which tile configuration each step ran with, and the "
           "table above describes the configuration this notebook compiled — the first of the search space. The "
           "sweep below times every configuration in one run.)")
    )

# %% [markdown]
# ## Choosing the tile sizes: autotuning
#
# With the kernel compiled from its tile constants, trying another tile shape is one line: `TileConfig(BLOCK_M=…,
# BLOCK_N=…, BLOCK_K=…, THREAD_M=…, THREAD_N=…, MIN_BLOCKS_PER_SM=…)`. Which is best depends on the GPU (its
# registers, shared memory and SM count), so the course measures it: each tunable step lists candidates in its
# `SEARCH_SPACE`, and
#
# ```bash
# gemm-steps tune unrolled          # on a GPU: times every candidate at 4096³
# ```
#
# times them all with the benchmark's method (`gemm_steps.harness.tuning.tune`), writes every timing to
# `results/tuning-unrolled-<gpu>.json`, and records the winner for that GPU in your tuning table
# (`~/.cache/gemm-steps/tuned.json`). The course's own winners ship with the package, in
# `gemm_steps/toolkit/tuned.json`. When the step is imported on a GPU, it builds the configuration recorded for it
# (yours first); on any other GPU — and on the simulator — it uses the first entry of its search space. The sweep
# shipped for step 7:

# %%
sweep = lesson.load_shipped("tuning-unrolled-*.json", "`gemm-steps tune unrolled`: every candidate configuration, "
                            "timed in one run")

# %%
if sweep:
    from gemm_steps.harness import tuning

    records = lesson.sweep_records(sweep)
    best, fastest = tuning.choose_best(records), min(records, key=lambda r: r["median_ms"])
    label = lesson.config_label
lesson.sweep_table(sweep, unrolled) if sweep else None

# %%
if sweep:
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    ordered = sorted(records, key=lambda r: r["median_ms"])
    fig = Figure(figsize=(8, 0.45 * len(ordered) + 1.5), layout="constrained")
    ax = fig.subplots()
    ax.barh([label(r["config"]) for r in ordered], [r["pct_of_cublas"] for r in ordered],
            color=["tab:green" if r is best else "tab:blue" for r in ordered])
    ax.axvline(100 * fastest["cublas_median_ms"] / (fastest["median_ms"] * (1 + tuning.NOISE)), color="k", ls=":",
               label=f"{tuning.NOISE:.0%} slower than the fastest: the noise band")
    ax.invert_yaxis()
    shape = lesson.size_label(tuple(best[d] for d in "MNK"))
    ax.set(xlabel="% of cuBLAS (same run)", title=f"Autotuning step 7 at {shape}\n{short_label(sweep['environment'])}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, loc="lower right")
    lesson.show_figure(fig)

# %% [markdown]
# **The rule** (`tuning.choose_best`): the fastest configuration wins — unless others are within `tuning.NOISE` of
# it. Repeated runs of one kernel differ by about that much, so a difference that small says nothing about which is
# better; among those, the one listed *first* in the search space wins, because the list is ordered simple-first
# (smaller unrolled code, shorter compiles).

# %%
if sweep:
    within = [r for r in records if r["median_ms"] <= fastest["median_ms"] * (1 + tuning.NOISE)]
    from gemm_steps.toolkit.tuned import SHIPPED_TABLE  # the course's winners, shipped with the package

    tuned = json.loads(SHIPPED_TABLE.read_text()).get(sweep["environment"]["gpu"], {}).get("unrolled")
    agrees = tuned is not None and lesson.same_config(tuned["config"], best["config"])
    lesson.say(
        f"Fastest: {label(fastest['config'])}, {fastest['median_ms']:.3f} ms. Within {tuning.NOISE:.0%} of it: "
        f"{len(within)} configuration{'s' if len(within) > 1 else ''}, so the rule picks **{label(best['config'])}**. "
        f"The spread from best to worst is {max(r['median_ms'] for r in records) / fastest['median_ms'] - 1:.0%}: "
        "tile shape matters, and no simple rule predicts the order — which is why it is measured.\n\n"
        + (f"`gemm_steps/toolkit/tuned.json` records exactly that for the {sweep['environment']['gpu']}:"
           if agrees else "`gemm_steps/toolkit/tuned.json` records something else for this GPU (a newer sweep?):")
    )
    print(json.dumps(tuned, indent=1))
    from dataclasses import asdict

    first = asdict(unrolled.module.SEARCH_SPACE[0])
    lesson.say(f"This notebook's kernels are the first entry of the search space, {label(first)} — "
               + ("the same configuration." if tuned and lesson.same_config(tuned["config"], first)
                  else "not the recorded winner."))

# %% [markdown]
# ## The price: compile time
#
# Unrolled code is long. The expanded source of this step has thousands of lines; Numba type-infers and lowers
# every one of them, and NVVM and `ptxas` optimize the result. The sweep above recorded each configuration's
# **first call** — compile plus one run — on the GPU's host:

# %%
if sweep:
    lines = [f"* {label(r['config'])}: **{r['first_call_s']:.1f} s**" for r in records]
    slowest = max(records, key=lambda r: r["first_call_s"])
    lesson.say("\n".join(lines) + f"\n\nThe slowest, {label(slowest['config'])}, unrolls the most FMAs per k-tile "
               f"({slowest['config']['BLOCK_K'] * slowest['config']['THREAD_M'] * slowest['config']['THREAD_N']} per "
               f"thread). Lines of code Numba compiles for this notebook's kernels (`generated_source()`, fast and "
               f"edge): {len(unrolled.generated_source().splitlines())} for step 7, "
               f"{len(vectorized.generated_source().splitlines())} for step 6.")

# %% [markdown]
# Where does that time go? Profiling the compile on a CPU showed one pass of Numba's lowering,
# `_find_singly_assigned_variable`, rescanning a whole basic block for every variable defined in it — quadratic in
# the size of the block, and step 7's k-loop is one enormous block. `gemm_steps/toolkit/numba_patches.py` replaces it
# with a one-pass version that computes the same set; the package applies it whenever it builds unrolled kernels. The
# sweep above ran on the GPU host before that workaround existed. Here is its effect on the machine that built this
# notebook, generating step 7's PTX with and without it:

# %%
import os
import platform

entry = compiled["unrolled_fast"]
if "seconds_without_workaround" in entry:
    lesson.say(
        f"PTX generation for `unrolled_fast` on this machine ({platform.machine()}, {os.cpu_count()} CPUs): "
        f"**{entry['seconds_without_workaround']:.1f} s without the workaround, {entry['seconds']:.1f} s with it** "
        f"({entry['seconds_without_workaround'] / entry['seconds']:.1f}× faster); the PTX is "
        + ("identical." if entry["same_ptx_without_workaround"] else "**different** — the workaround has a bug.")
    )
else:
    lesson.say("The workaround was already active in the compiling process, so there is no comparison to show.")

# %% [markdown]
# ### Every step's first call, measured
#
# The course's target is a first call of at most 3 s per step. `scripts/compile_times.py` measures it on the GPU
# host: each step in a fresh process with empty caches, first at 256³ (full tiles: only the fast kernel compiles),
# then at 257³ (the edge kernel compiles too), then again in a new process that finds Numba's on-disk cache.

# %%
compile_file = lesson.shipped_file("compile-times-h200.json")
if compile_file:
    compile_times = json.loads(compile_file.read_text())
    env = compile_times["environment"]
    table = ["| step | first call, empty caches | edge kernel, first 257³ call | first call, on-disk cache |",
             "|:--|--:|--:|--:|"]
    for name, r in compile_times["compile_times"].items():
        table.append(f"| {name} | {r['cold_s']:.2f} s | {r['cold_edge_s']:.2f} s | {r['warm_s']:.2f} s |")
    over = [name for name, r in compile_times["compile_times"].items() if r["cold_s"] > 3]
    lesson.say(f"From `{lesson.shown_path(compile_file)}`, measured on the host of an {env['gpu']} on "
               f"{env['date'][:10]}, with numba-cuda {env['numba_cuda']}:\n\n" + "\n".join(table) + "\n\n"
               + (f"Over the 3 s target with empty caches: **{', '.join(over)}** — every step whose kernel is "
                  f"unrolled. With the on-disk cache every step starts in under "
                  f"{max(r['warm_s'] for r in compile_times['compile_times'].values()):.1f} s."
                  if over else "Every step is under 3 s."))

# %% [markdown]
# The 3 s target is not met by the unrolled steps on a cold start, and the edge kernels take longer still. Where
# the time goes, profiled with `cProfile` on a CPU for step 9's fast kernel (the workaround above applied): almost
# all of it in Numba's own passes over the long source — rebuilding SSA form about 31 %, type inference 23 %,
# removing the phi nodes again 20 %, lowering to LLVM IR 13 % — and under a tenth in NVVM and `ptxas`. The edge
# kernel, with a guarded branch for every load and store, has many more basic blocks, and Numba's liveness analysis
# over them adds about a fifth of its (2.5× longer) compile. Keeping the accumulators in a local array instead of
# scalars, to give SSA fewer variables, made it slower (15.6 s against 10.9 s for the PTX on that CPU). So the
# remedy would be in Numba's passes, not in the kernel.
#
# These are two different machines and two different things timed — first call on the GPU host (compile to PTX,
# `ptxas`, load, one run) against PTX generation alone here — so compare each with itself, not with the other.
# A third remedy avoids compiling at all: on a GPU the expanded sources are written to a cache folder, so that
# Numba's on-disk cache can reuse the compiled kernels in the next process (see `gemm_steps.toolkit.unroll.define`).
#
# The unrolled k-loop left the FMA stream nearly uninterrupted, yet step 7 is still well short of cuBLAS. Within
# each k-tile the threads still copy the next tiles from global memory and then *wait* for them at a barrier. The
# next step overlaps that wait with the FMAs.
