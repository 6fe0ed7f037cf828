# %% [markdown]
# # Lesson 5 — Register tiling in two dimensions: an 8×8 block per thread
#
# Lesson 4 reused one value of B eight times. Reuse both operands and the arithmetic gets better still: a thread
# that owns an 8×8 block of C loads a column of 8 values of A and a row of 8 values of B per k, and multiplies
# every one with every other — an **outer product**, 64 FMAs from 16 loads. This is the register tiling every
# fast GEMM uses.
#
# And on the GPU of our results it makes the kernel *slower*. This lesson predicts, measures, and then takes the
# result apart with an experiment and with the compiled code, to find out what is in the way.

# %%
import gemm_steps
from gemm_steps import lesson

register_1d, register_2d = gemm_steps.get_step("register_1d"), gemm_steps.get_step("register_2d")
print(register_2d.doc)

# %% [markdown]
# ## The idea
#
# The block tile grows to 128×128 (with `BLOCK_K = 8`) and 256 threads; thread `t` owns the 8×8 block in block-row
# `t // 16` and block-column `t % 16`. Per k it fills two small register arrays and multiplies them:
#
# ```
#                              b_frag = b_tile[kk, col … col+7]      (8 shared loads)
#                              ┌─┬─┬─┬─┬─┬─┬─┬─┐
#                              │●│●│●│●│●│●│●│●│
#                              └─┴─┴─┴─┴─┴─┴─┴─┘
#   a_frag = a_tile[row … row+7, kk]   ┌─┬─┬─┬─┬─┬─┬─┬─┐
#       (8 shared loads)         ┌─┐   │■│■│■│■│■│■│■│■│
#                                │○│   │■│■│■│■│■│■│■│■│   acc[i, j] += a_frag[i] * b_frag[j]
#                                │○│   │■│■│■│■│■│■│■│■│   for all 8 × 8 (i, j): 64 FMAs
#                                │⋮│   │ ⋮             │
#                                │○│   │■│■│■│■│■│■│■│■│
#                                └─┘   └─┴─┴─┴─┴─┴─┴─┴─┘
# ```
#
# What changed from step 4 (docstrings aside):

# %%
lesson.show_diff(register_1d, register_2d)

# %% [markdown]
# The whole step as it runs:

# %%
lesson.show_source(register_2d, docstring=False)

# %% [markdown]
# ## The prediction
#
# Shared loads per FMA fall from 9/8 to 16/64. With lesson 4's wavefront model, for the first warp of a block
# (threads 0–31: block-rows 0 and 1, block-columns 0–15), one step of the k-loop costs:

# %%
warp = range(32)
config = register_2d.config
BLOCK_M, BLOCK_N, BLOCK_K = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
THREAD_M, THREAD_N = config["THREAD_M"], config["THREAD_N"]
ROWS, COLS = BLOCK_M // THREAD_M, BLOCK_N // THREAD_N  # 16 × 16 threads
kk = 0


def contiguous_map(t, i, j):
    """Step 5 as shipped: thread t owns rows (t // 16)·8 + i and columns (t % 16)·8 + j of the block tile."""
    return (t // COLS) * THREAD_M + i, (t % COLS) * THREAD_N + j


def k_step_cost(element, a_word):
    """Wavefronts for one k-step of one warp: 8 A-fragment loads and 8 B-fragment loads."""
    a_loads = [[[a_word(element(t, i, 0)[0])] for t in warp] for i in range(THREAD_M)]
    b_loads = [[[kk * BLOCK_N + element(t, 0, j)[1]] for t in warp] for j in range(THREAD_N)]
    return sum(map(lesson.wavefronts, a_loads)), sum(map(lesson.wavefronts, b_loads))


def a_row_major(row):
    """Word address of a_tile[row, kk] in the (BLOCK_M, BLOCK_K) tile of step 5."""
    return row * BLOCK_K + kk


shipped_a, shipped_b = k_step_cost(contiguous_map, a_row_major)
fmas = len(warp) * THREAD_M * THREAD_N
print(f"A fragment: {THREAD_M} loads, {shipped_a} wavefronts;  B fragment: {THREAD_N} loads, {shipped_b} wavefronts")
print(f"{fmas} FMAs per warp per k-step → {fmas / (shipped_a + shipped_b):.1f} FMAs per wavefront (step 4: 28.4)")

# %% [markdown]
# The loads are no longer all conflict-free. Two lanes in different block-rows read A words exactly 64 floats apart
# — the same bank — and the 16 lanes along a block-row read B words 8 floats apart, so four of them share each
# bank they touch. Even so, the FMAs per wavefront rise again.

# %%
results = lesson.measure_or_load(["shared_memory", "register_1d", "register_2d"], [512, 1024, 2048, 4096])

# %%
if results:
    shared_ceiling = lesson.sm_rate_tflops(results, fmas / (shipped_a + shipped_b))
    step4_ceiling = lesson.sm_rate_tflops(results, 256 / 9)  # lesson 4: 256 FMAs per 9 wavefronts
    lesson.say(
        f"Shared-memory ceiling: **{shared_ceiling:.1f} TFLOPS** (step 4: {step4_ceiling:.1f}). Global loads per "
        f"FMA halve again ({2 / 64:.4f} → {(BLOCK_M + BLOCK_N) * BLOCK_K / (BLOCK_M * BLOCK_N * BLOCK_K):.4f}: a "
        f"block uses each element of its A tile {BLOCK_N} times and of its B tile {BLOCK_M} times). If shared memory "
        f"were the limit, step "
        f"5 could be **{shared_ceiling / step4_ceiling:.2f}× faster than step 4**. Lesson 4 taught us to distrust a "
        f"model that counts only one resource, so this is an upper bound, not a forecast."
    )

# %% [markdown]
# ## Is it right?

# %%
lesson.check_against_numpy(register_2d, [(33, 17, 40), (64, 64, 64)])

# %% [markdown]
# ## The measurement

# %%
lesson.timing_table(results, ["shared_memory", "register_1d", "register_2d"])

# %%
if results:
    from gemm_steps import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))

# %%
if results:
    from gemm_steps.kernel_tools import ceil_div

    size = lesson.headline_size(results, ["shared_memory", "register_1d", "register_2d"])
    step3, step4, step5 = (lesson.record(results, s, size) for s in ("shared_memory", "register_1d", "register_2d"))
    sms = results["environment"]["sm_count"]
    lines = []
    for m, n, k in lesson.common_sizes(results, ["register_1d", "register_2d"]):
        blocks = ceil_div(m, BLOCK_M) * ceil_div(n, BLOCK_N)
        ratio = (lesson.record(results, "register_1d", (m, n, k))["median_ms"]
                 / lesson.record(results, "register_2d", (m, n, k))["median_ms"])
        lines.append(f"* {lesson.size_label((m, n, k))}: step 5 is {ratio:.2f}× step 4; its grid has {blocks} blocks "
                     f"for {sms} SMs" + (f" — **{sms - blocks} SMs get no block at all**" if blocks < sms else ""))
    lesson.say(
        f"At {lesson.size_label(size)} step 5 runs at **{step5['tflops']:.2f} TFLOPS**: {step5['pct_of_cublas']:.1f} % "
        f"of cuBLAS, **{step4['median_ms'] / step5['median_ms']:.2f}×** step 4 and "
        f"{step3['median_ms'] / step5['median_ms']:.2f}× step 3 — "
        + ("slower than both, against a prediction of up to "
           f"{shared_ceiling / step4_ceiling:.2f}× faster." if step5["tflops"] < min(step3["tflops"], step4["tflops"])
           else "not the gain the shared-memory model allowed.")
        + "\n\n" + "\n".join(lines)
    )

# %% [markdown]
# At small sizes part of the answer is plain parallelism: 128×128 tiles make so few blocks that many SMs sit idle
# (we meet this again, with a name — wave quantization — in lesson 10). But at the largest size every SM has work,
# and the kernel is still slow. Why?
#
# ## An experiment: is it the bank conflicts?
#
# The conflicts counted above come from the *thread → element map*: each thread owns a contiguous 8×8 block. A
# strided map — thread (r, c) owns rows r, r + 16, r + 32, … and columns c, c + 16, … — makes the 16 lanes along a
# block-row read 16 neighbouring floats of B. `scripts/experiment_register_2d.py` timed that variant (B), and one
# that also stores the A tile transposed (C), against step 5 as shipped (A) and step 3, in one run on the GPU:

# %%
experiment = lesson.load_shipped("experiment-register-2d-*.json",
                                 "three variants of step 5 and step 3, timed in one run")


def strided_map(t, i, j):
    """Variant B and C: thread t owns rows t // 16 + 16·i and columns t % 16 + 16·j."""
    return t // COLS + ROWS * i, t % COLS + COLS * j


def a_transposed(row):
    """Word address of a_tile[kk, row] in variant C's (BLOCK_K, BLOCK_M) tile."""
    return kk * BLOCK_M + row


variants = {"A_shipped": (contiguous_map, a_row_major), "B_strided": (strided_map, a_row_major),
            "C_strided_transposedA": (strided_map, a_transposed)}
if experiment:
    from matplotlib.figure import Figure

    from gemm_steps.environment import short_label

    variant_records = []
    lines = ["| variant | wavefronts per k-step (A + B) | FMAs per wavefront | TFLOPS | % of cuBLAS (same run) |",
             "|:--|--:|--:|--:|--:|"]
    for rec in experiment["records"]:
        if rec["step"] == "cublas" or "error" in rec:
            continue
        if rec["step"] in variants:
            a_cost, b_cost = k_step_cost(*variants[rec["step"]])
            model = f"{a_cost} + {b_cost} | {fmas / (a_cost + b_cost):.1f}"
        else:
            model = "(step 3: 2 per 32 FMAs) | 16.0"
        lines.append(f"| {rec['step']} | {model} | {rec['tflops']:.2f} | {rec['pct_of_cublas']:.1f} % |")
        variant_records.append(rec)
    lesson.say("\n".join(lines))

    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.subplots()
    bars = ax.bar([r["step"] for r in variant_records], [r["pct_of_cublas"] for r in variant_records],
                  color=["tab:orange" if r["step"] == "shared_memory" else "tab:blue" for r in variant_records])
    ax.bar_label(bars, fmt="%.1f %%", fontsize=8)
    shape = lesson.size_label(tuple(variant_records[0][d] for d in "MNK"))
    ax.set(ylabel="% of cuBLAS (same run)",
           title=f"Step 5 variants vs step 3, {shape}\n{short_label(experiment['environment'])}")
    ax.title.set_fontsize(10)
    lesson.show_figure(fig)

# %%
if experiment:
    by_name = {r["step"]: r for r in variant_records}
    shipped, strided = by_name["A_shipped"], by_name["B_strided"]
    a_cost, b_cost = k_step_cost(*variants["B_strided"])
    lesson.say(
        f"The strided map removes the conflicts: the model's wavefronts per k-step fall from {shipped_a + shipped_b} "
        f"to {a_cost + b_cost}, a {(shipped_a + shipped_b) / (a_cost + b_cost):.1f}× higher shared-memory ceiling. "
        f"The kernel gains **{strided['pct_of_cublas'] - shipped['pct_of_cublas']:.1f} points** of cuBLAS "
        f"({shipped['median_ms'] / strided['median_ms']:.2f}×), which "
        + ("puts it just above step 3 in this run"
           if strided["tflops"] > by_name.get("shared_memory", strided)["tflops"] else "still leaves it below step 3")
        + ". Bank conflicts were real, but they were not most of the problem. Transposing A as well (variant C) "
        f"changes nothing in the model, and the time by "
        f"{abs(by_name['C_strided_transposedA']['median_ms'] / strided['median_ms'] - 1):.1%}."
    )

# %% [markdown]
# ## The compiled code
#
# Lesson 4 found the culprit in the instruction stream. Here is step 5 next to step 4 (for how the table is made,
# see lesson 4):

# %%
compiled = lesson.compile_kernels([register_1d, register_2d])
lesson.compiled_table(compiled)

# %% [markdown]
# Two things stand out.
#
# * **Index arithmetic.** The 2-D arrays make Numba compute every address in 64-bit integers, with strides read at
#   run time; there are more 64-bit integer instructions per FMA than FMAs. The tile copies are scalar loads, each
#   behind a bounds check, and the 64 results are written one by one, each behind its own check.
# * **Registers.** 64 accumulators, 16 fragment values and the 64-bit addresses need many registers per thread, and
#   the register file of an SM is shared by all the threads on it. The last column shows what that leaves room
#   for.
#
# Put the ceilings side by side:

# %%
if results:
    mix = lesson.k_loop_mix(compiled["register_2d"]["ptx"], lesson.fmas_per_k_tile(register_2d))
    issue_ceiling = lesson.fp32_peak_tflops(results) / sum(mix.values())
    rows = [("step 5 as shipped", step5["tflops"], {"shared-memory ceiling": shared_ceiling,
                                                    "issue ceiling": issue_ceiling})]
    if experiment:
        strided_ceiling = min(lesson.sm_rate_tflops(results, fmas / (a_cost + b_cost)),
                              lesson.fp32_peak_tflops(results))
        rows.append(("B: strided map\n(experiment)", strided["tflops"],
                     {"shared-memory ceiling": strided_ceiling, "issue ceiling": issue_ceiling}))
    lesson.show_figure(lesson.ceiling_figure(rows, f"Step 5 against its ceilings at {lesson.size_label(size)}",
                                             results))
    step4_mix = lesson.k_loop_mix(compiled["register_1d"]["ptx"], lesson.fmas_per_k_tile(register_1d))
    step4_lower = min(step4_ceiling, lesson.fp32_peak_tflops(results) / sum(step4_mix.values()))
    occupancy, step4_occupancy = (
        lesson.blocks_per_sm(compiled[s.name]["registers"], lesson.threads_per_block(s),
                             compiled[s.name]["shared_bytes"])
        for s in (register_2d, register_1d))
    lesson.say(
        f"Step 5 reaches **{step5['tflops'] / min(shared_ceiling, issue_ceiling):.0%}** of the lower of its two "
        f"ceilings ({min(shared_ceiling, issue_ceiling):.1f} TFLOPS); step 4 reached "
        f"{step4['tflops'] / step4_lower:.0%} of its own ({step4_lower:.1f} TFLOPS). "
        f"So neither throughput model explains it: the SM is not busy issuing instructions, nor waiting on shared "
        f"memory; it is mostly **waiting**, full stop. With {compiled['register_2d']['registers']} registers per "
        f"thread only **{occupancy['blocks']} block of {occupancy['warps']} warps** fits on an SM (limited by "
        f"{occupancy['limited_by']}). At every k-tile those warps load the next tiles from global memory — hundreds "
        f"of clock cycles — and wait at the barrier, and there is no other block on the SM to run meanwhile. Step 4 "
        f"had {step4_occupancy['blocks']} blocks of {step4_occupancy['warps'] // step4_occupancy['blocks']} warps "
        f"per SM to switch between."
    )

# %% [markdown]
# That last point is a hypothesis the timings support but cannot prove: a profiler (Nsight Compute's warp stall
# reasons) would show it directly, and the register count comes from `ptxas` in the nvJitLink wheel — the GPU's
# driver compiles the same PTX itself and may allocate slightly differently.
#
# What the lesson shows is that **register tiling is necessary but not sufficient.** The reuse is in place; the
# kernel is bound by everything around it: 64-bit index math with run-time strides, guarded scalar loads and
# stores, scalar shared loads with bank conflicts, and too few warps to hide the waiting. The next step removes
# most of these at once — 128-bit loads, a transposed A tile, flat arrays with 32-bit indices — and that is where
# the big jump of the course happens.
