# %% [markdown]
# # Lesson 6 — Vectorized access: the same tiles, a quarter of the load and store instructions
#
# Lesson 5 ended with a kernel that had the right data reuse and unsigned index math, but still 2-D arrays, scalar
# loads behind bounds checks, bank conflicts, and a k-step loop the compiler did not unroll. This step
# keeps the tiles exactly as they are — 128×128×8 per block, 8×8 per thread — and changes only *how* the data
# moves.

# %%
import gemm_steps
from gemm_steps.course import lesson

register_2d, vectorized = gemm_steps.get_step("register_2d"), gemm_steps.get_step("vectorized")
print(vectorized.doc)

# %% [markdown]
# ## The idea
#
# | | step 5 | step 6 |
# |:--|:--|:--|
# | global loads of the tiles | one float each, bounds-checked | four floats per instruction (`LDG.E.128`) |
# | shared loads of the fragments | one float each | four floats per instruction (`LDS.128`) |
# | A tile in shared memory | `a_tile[row][k]` | transposed, `a_tile[k][row]`: a thread's 8 A values are contiguous |
# | stores of C | 64 single floats, each bounds-checked | 16 stores of four floats |
# | arrays and indices | 2-D arrays (row length read at run time), unsigned indices | flat arrays, unsigned indices |
#
# Numba has no float4 type. `gemm_steps.toolkit.intrinsics` adds two tiny functions that emit a 128-bit load or store
# directly as LLVM IR (`load_float4`, `store_float4`); on the simulator they are plain Python with the same meaning.
# A 128-bit access must be 16-byte aligned, and would read past the edge of a partial tile, so from this step on
# every step has **two kernels compiled from one kernel function** (`gemm_steps.toolkit.kernel_builds`): a *fast* kernel for
# the tiles that lie wholly inside C, with no bounds checks at all, and a guarded *edge* kernel for the rest. The
# kernel says which lines belong to which with `if EDGE:` — a compile-time constant, so each of the two compiled
# kernels keeps only its own branch.
#
# Here is what changed in the kernel, step 5's against step 6's:

# %%
lesson.show_diff(register_2d, vectorized)

# %% [markdown]
# The whole step: the kernel, then the tile configuration and `TiledKernels`, which compiles it twice (fast and edge)
# and launches both. `vectorized.generated_source()` prints the two kernels as Numba compiles them, each with its
# `EDGE` branches decided:

# %%
lesson.show_source(vectorized)

# %% [markdown]
# ## The prediction
#
# Counting instructions per thread straight from the tile constants:

# %%
config = vectorized.config
BLOCK_M, BLOCK_N, BLOCK_K = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
THREAD_M, THREAD_N, THREADS = config["THREAD_M"], config["THREAD_N"], config["THREADS"]
tile_loads = (BLOCK_M + BLOCK_N) * BLOCK_K // THREADS  # floats of A and B each thread copies per k-tile
for what, count in (("per k-step, shared loads of the fragments", THREAD_M + THREAD_N),
                    ("per k-tile, global loads of the tiles", tile_loads),
                    ("per thread, stores of C", THREAD_M * THREAD_N)):
    print(f"{what + ':':43} {count:2d} scalar → {count // 4} × 128-bit")

# %% [markdown]
# And the shared-memory wavefronts of one warp per k-step, with lesson 4's model. With A transposed, a thread's 8 A
# values are two float4 at `a_tile[kk * BLOCK_M + thread_row + q]`, and its B values two float4 at
# `b_tile[kk * BLOCK_N + thread_col + q]`:

# %%
warp, kk = range(32), 0
thread_row = [t // (BLOCK_N // THREAD_N) * THREAD_M for t in range(THREADS)]
thread_col = [t % (BLOCK_N // THREAD_N) * THREAD_N for t in range(THREADS)]
a_loads = [[range(kk * BLOCK_M + thread_row[t] + q, kk * BLOCK_M + thread_row[t] + q + 4) for t in warp]
           for q in range(0, THREAD_M, 4)]
b_loads = [[range(kk * BLOCK_N + thread_col[t] + q, kk * BLOCK_N + thread_col[t] + q + 4) for t in warp]
           for q in range(0, THREAD_N, 4)]
step6_wavefronts = sum(map(lesson.wavefronts, a_loads + b_loads))
fmas = len(warp) * THREAD_M * THREAD_N
print(f"{len(a_loads) + len(b_loads)} LDS.128 per k-step: {step6_wavefronts} wavefronts for {fmas} FMAs = "
      f"{fmas / step6_wavefronts:.1f} FMAs per wavefront (step 5: 85.3, its B loads merged by ptxas)")

# %% [markdown]
# The B loads still conflict (16 lanes read float4 32 bytes apart), but shared memory now serves far more FMAs per
# wavefront than the SM can execute: it stops being a limit.
#
# ### The PTX evidence
#
# Whether the compiler really emits 128-bit instructions, and what else it emits, is in the PTX. The command
# `python -m gemm_steps.harness.ptx --steps 5 6` prints these counts for every kernel (it compiles on the CPU, no GPU
# needed); here they come from `lesson.compile_kernels`, which uses the same functions in a separate process in
# GPU mode. Counts are static — instructions as they appear in the code, a loop body once:

# %%
compiled = lesson.compile_kernels([register_2d, vectorized], variant="fast")
compiled.update(lesson.compile_kernels([vectorized], variant="edge"))
keys = ["ld.global.v4.f32", "ld.global.f32", "ld.shared.v4.f32", "ld.shared.f32", "st.global.v4.f32",
        "st.global.f32", "fma.rn.f32", "local", "instructions"]
lesson.say("| kernel | " + " | ".join(f"`{key}`" for key in keys) + " |\n|:--|" + "--:|" * len(keys) + "\n"
           + "\n".join(f"| {label} | " + " | ".join(str(entry["stats"][key]) for key in keys) + " |"
                       for label, entry in compiled.items()))

# %%
fast_stats, edge_stats = compiled["vectorized_fast"]["stats"], compiled["vectorized_edge"]["stats"]
vector_only = all(fast_stats[f"{op}.v4.f32"] and not fast_stats[f"{op}.f32"]
                  for op in ("ld.global", "ld.shared", "st.global"))
lesson.say(
    ("In the fast kernel every tile copy is an `ld.global.v4.f32`, every fragment load an `ld.shared.v4.f32` and "
     "every store of C an `st.global.v4.f32`: no scalar access is left. " if vector_only else
     "**The fast kernel still has scalar accesses** where 128-bit ones were intended (see the table). ")
    + ("`local` is 0: the 8×8 accumulator array and the fragments live in registers, not in local memory. "
       if fast_stats["local"] == 0 else
       f"`local` is {fast_stats['local']}: part of the arrays lives in local memory — slow. ")
    + ("The edge kernel keeps scalar, guarded global accesses, as it must, but shares the vectorized shared loads. "
       if edge_stats["ld.shared.v4.f32"] else "")
    + (f"Each kernel shows {fast_stats['fma.rn.f32']} FMAs: one k-step's outer product — the compiler did not "
       "unroll the k-step loop." if fast_stats["fma.rn.f32"] == THREAD_M * THREAD_N else "")
)

# %% [markdown]
# Per FMA, over one k-tile, and with the registers `ptxas` allocates:

# %%
fast = {label: entry for label, entry in compiled.items() if not label.endswith("_edge")}
lesson.compiled_table(fast)

# %%
results = lesson.measure_or_load(["shared_memory", "register_2d", "vectorized"], [512, 1024, 2048, 4096])

# %%
if results:
    peak = lesson.fp32_peak_tflops(results)
    issue = {entry["step"]: peak / sum(lesson.k_loop_mix(entry["ptx"], lesson.fmas_per_k_tile(entry["step"])).values())
             for entry in fast.values()}
    shared_ceiling = {"register_2d": lesson.sm_rate_tflops(results, 2048 / 24),  # lesson 5's count, as ptxas runs it
                      "vectorized": min(lesson.sm_rate_tflops(results, fmas / step6_wavefronts), peak)}
    occupancy = {entry["step"]: lesson.blocks_per_sm(entry["registers"], THREADS, entry["shared_bytes"])
                 for entry in fast.values()}
    lesson.say(
        f"**Prediction.** The issue ceiling rises from {issue['register_2d']:.1f} to **{issue['vectorized']:.1f} "
        f"TFLOPS** ({issue['vectorized'] / issue['register_2d']:.1f}×), the shared-memory ceiling from "
        f"{shared_ceiling['register_2d']:.1f} to {shared_ceiling['vectorized']:.1f} TFLOPS (capped at the FP32 peak), "
        f"and the SM holds {occupancy['vectorized']['blocks']} blocks ({occupancy['vectorized']['warps']} warps) "
        f"for step 5's {occupancy['register_2d']['blocks']} ({occupancy['register_2d']['warps']}). Lesson 5 found step "
        f"5 well below its ceilings, so the ceilings alone do not say how fast step 6 will be. The docstring, from an "
        f"earlier run, expects about 1.3×."
    )

# %% [markdown]
# ## Is it right?
#
# Three shapes: one smaller than a tile (the edge kernel alone), one exactly one 128×128 tile (the fast kernel
# alone), and one tile plus ragged edges (both kernels writing parts of one C):

# %%
lesson.check_against_numpy(vectorized, [(33, 17, 40), (128, 128, 16), (129, 132, 16)])

# %% [markdown]
# ## The measurement

# %%
lesson.timing_table(results, ["shared_memory", "register_2d", "vectorized"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))
    lesson.show_figure(plots.plot_step_speedups(results))

# %% [markdown]
# ## What the numbers say

# %%
if results:
    size = lesson.headline_size(results, ["register_2d", "vectorized"])
    before, after = lesson.record(results, "register_2d", size), lesson.record(results, "vectorized", size)
    speedup = before["median_ms"] / after["median_ms"]
    rows = [(f"step {s.number}\n{s.name}", rec["tflops"],
             {"shared-memory ceiling": shared_ceiling[s.name], "issue ceiling": issue[s.name]})
            for s, rec in ((register_2d, before), (vectorized, after))]
    lesson.show_figure(lesson.ceiling_figure(rows, f"Steps 5 and 6 against their ceilings at {lesson.size_label(size)}",
                                             results))
    lower = min(shared_ceiling["vectorized"], issue["vectorized"])
    per_size = lesson.speedups_by_size(results, "register_2d", "vectorized")
    lesson.say(
        f"At {lesson.size_label(size)} step 6 runs at **{after['tflops']:.2f} TFLOPS, {after['pct_of_cublas']:.1f} % "
        f"of cuBLAS**: **{speedup:.2f}×** step 5"
        + (" — more than the 1.3× the docstring expected" if speedup > 1.45 else
           " — about the 1.3× the docstring expected" if speedup > 1.15 else
           " — less than the 1.3× the docstring expected")
        + f". It reaches {after['tflops'] / lower:.0%} of its lower ceiling ({lower:.1f} TFLOPS), where step 5 "
        f"reached {before['tflops'] / min(shared_ceiling['register_2d'], issue['register_2d']):.0%} of its own. "
        f"Speedup at each size: {per_size}.\n\n"
        "No single change explains it: fewer load and store instructions, fewer shared-memory wavefronts and flat "
        "arrays all arrived together. The experiment in lesson 5 measured what a conflict-free thread map alone is "
        "worth; the rest could be separated only by removing the changes one at a time, or with a profiler."
    )

# %% [markdown]
# Step 6 still issues noticeably more than one instruction per FMA (the table above): the k-step loop is a real
# loop, with a counter, a compare, a branch and address arithmetic every 64 FMAs, and the accumulators are an
# array the compiler must keep track of. Numba cannot be told to unroll it — so the next step writes the unrolled
# code itself, by generating the kernel's source.
