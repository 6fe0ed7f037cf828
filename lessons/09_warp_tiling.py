# %% [markdown]
# # Lesson 9 — Warp tiling: arrange a warp's results so its shared loads are contiguous
#
# Since lesson 5, thread t has owned one contiguous THREAD_M × THREAD_N block of C. That is natural for one
# thread, but shared memory serves a *warp* at a time, and lessons 5 and 6 counted what the contiguous layout costs
# a warp: its B-fragment loads hit the same banks several times. This step changes nothing but the map from
# threads to elements of C — a few lines of step 8's kernel — and, because that map also decides
# which tile shapes are possible, it is tuned to a larger tile. At the end, one more change inside the k-loop —
# the *order* of the FMAs — closes part of the remaining gap to cuBLAS.

# %%
import gemm_steps
from gemm_steps.course import lesson

double_buffered, warp_tiling = gemm_steps.get_step("double_buffered"), gemm_steps.get_step("warp_tiling")
print(warp_tiling.doc)

# %% [markdown]
# ## The idea
#
# The block tile is cut into **warp tiles**, one per warp. Inside a warp tile the 32 lanes form an 8 × 4 grid,
# and each lane owns 4×4 sub-blocks spaced a whole lane-grid apart — 32 rows and 16 columns, here:
#
# ```
#             warp tile (WARP_TILE_M × WARP_TILE_N)            lane l = (l // 4, l % 4) in the 8 × 4 lane grid
#        cols 0‥15: lanes' 1st 4 columns   cols 16‥31: their 2nd …
#        ┌────┬────┬────┬────┬────┬────┬────┬────┐
#  rows  │ l0 │ l1 │ l2 │ l3 │ l0 │ l1 │ l2 │ l3 │   each box: a 4×4 sub-block
#  0‥31  │ l4 │ l5 │ l6 │ l7 │ l4 │ l5 │ l6 │ l7 │
#        │ …  │    │    │    │ …  │    │    │    │   lane l's A fragment: rows 4·(l // 4) + 32·i
#        │l28 │l29 │l30 │l31 │l28 │l29 │l30 │l31 │   lane l's B fragment: cols 4·(l % 4) + 16·j
#        ├────┼────┼────┼────┼────┼────┼────┼────┤
#  rows  │ l0 │ l1 │ l2 │ l3 │ l0 │ …  │    │    │
#  32‥63 │ …  │    │    │    │    │    │    │    │
#        └────┴────┴────┴────┴────┴────┴────┴────┘
# ```
#
# So for one float4 of its fragment, the warp's 32 lanes read 8 neighbouring float4 of A (32 floats) or 4 of B
# (16 floats), each shared by the lanes that need it. The whole change to step 8's kernel (`gemm-steps diff 8 9`
# prints the same), with the serpentine FMA order that the end of this lesson comes back to:

# %%
lesson.show_diff(double_buffered, warp_tiling)

# %% [markdown]
# The new constants (`WARPS_N`, `WARP_TILE_M`, `A_CHUNK_STRIDE`, …) come from `layout(config)` in the step, and the
# tile configuration is the tuned
# one (on the simulator: the first of the step's search space, the H200's winner):

# %%
keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "THREADS", "MIN_BLOCKS_PER_SM", "WARP_TILE_M",
        "WARP_TILE_N", "A_CHUNK_STRIDE", "B_CHUNK_STRIDE"]
lesson.say("| constant | step 8 | step 9 |\n|:--|--:|--:|\n" + "\n".join(
    f"| `{key}` | {double_buffered.config.get(key, '—')} | {warp_tiling.config.get(key, '—')} |" for key in keys))

# %% [markdown]
# ## The prediction
#
# Lesson 4's wavefront model, for one k-step of the first warp, with each step's own map and tiles:

# %%
warp, kk = range(32), 0


def fragment_loads(config, rows_of, cols_of):
    """The LDS.128 of one k-step for lanes 0‥31: word addresses read by each lane, for each load."""
    a = [[range(kk * config["BLOCK_M"] + rows_of(t, q), kk * config["BLOCK_M"] + rows_of(t, q) + 4) for t in warp]
         for q in range(0, config["THREAD_M"], 4)]
    b = [[range(kk * config["BLOCK_N"] + cols_of(t, q), kk * config["BLOCK_N"] + cols_of(t, q) + 4) for t in warp]
         for q in range(0, config["THREAD_N"], 4)]
    return a, b


c8, c9 = double_buffered.config, warp_tiling.config
models = {
    "step 8": fragment_loads(c8, lambda t, q: t // c8["THREADS_N"] * c8["THREAD_M"] + q,
                             lambda t, q: t % c8["THREADS_N"] * c8["THREAD_N"] + q),
    "step 9": fragment_loads(c9, lambda t, q: t % 32 // c9["LANES_N"] * 4 + q // 4 * c9["A_CHUNK_STRIDE"],
                             lambda t, q: t % 32 % c9["LANES_N"] * 4 + q // 4 * c9["B_CHUNK_STRIDE"]),
}
per_wavefront = {}
for name, (a, b) in models.items():
    config = c8 if name == "step 8" else c9
    fmas = len(warp) * config["THREAD_M"] * config["THREAD_N"]
    a_wf, b_wf = sum(map(lesson.wavefronts, a)), sum(map(lesson.wavefronts, b))
    per_wavefront[name] = fmas / (a_wf + b_wf)
    print(f"{name}: A {len(a)} loads → {a_wf} wavefronts, B {len(b)} loads → {b_wf} wavefronts; "
          f"{fmas} FMAs per warp → {per_wavefront[name]:.0f} FMAs per wavefront")
for name, config in (("step 8", c8), ("step 9", c9)):
    bm, bn = config["BLOCK_M"], config["BLOCK_N"]
    print(f"{name}: global (or L2) loads per FMA for the block tile: (BLOCK_M + BLOCK_N) / (BLOCK_M · BLOCK_N) = "
          f"{(bm + bn) / (bm * bn):.4f}")

# %% [markdown]
# Both maps leave shared memory far faster than the FP32 units (an SM executes 128 FMAs per clock; lesson 6 showed
# that anything above that per wavefront cannot limit). The warp-tiled map makes every fragment load
# conflict-free, but it removes a cost that was no longer binding — so the model predicts **little from the new
# map itself**, as the docstring does ("a few percent"). The bigger tile the map allows moves less data per FMA
# from L2 and global memory (the last two lines above), and holds more accumulators per thread — which costs
# registers:

# %%
compiled = lesson.compile_kernels([double_buffered, warp_tiling])
lesson.compiled_table(compiled)

# %% [markdown]
# ## Is it right?
#
# Step 9's tiles are 128×256 (on the simulator); the checks run one full tile, two k-tiles of it, and a full tile
# with ragged edges:

# %%
lesson.check_against_numpy(warp_tiling, [(33, 17, 40), (128, 256, 16), (129, 260, 8)])

# %% [markdown]
# ## The measurement

# %%
results = lesson.measure_or_load(["double_buffered", "warp_tiling"], [512, 1024, 2048, 4096])
lesson.timing_table(results, ["double_buffered", "warp_tiling"])

# %%
if results:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(results))

# %%
if results:
    size = lesson.headline_size(results, ["double_buffered", "warp_tiling"])
    before, after = lesson.record(results, "double_buffered", size), lesson.record(results, "warp_tiling", size)
    speedup = before["median_ms"] / after["median_ms"]
    per_size = lesson.speedups_by_size(results, "double_buffered", "warp_tiling")
    lesson.say(
        f"At {lesson.size_label(size)} step 9 runs at **{after['tflops']:.2f} TFLOPS, {after['pct_of_cublas']:.1f} % "
        f"of cuBLAS: {speedup:.2f}× step 8** ({per_size}). "
        + ("A few percent, as predicted." if 1.0 < speedup < 1.1 else
           "More than the few percent predicted." if speedup >= 1.1 else "No gain, or a loss.")
        + " But two things changed at once — the map and the tiles — and this comparison cannot tell them apart."
    )

# %% [markdown]
# ## Separating the map from the tiles
#
# The tuning sweeps can. Step 9's search space includes step 8's own configuration, so the sweep times the
# warp-tiled map with step 8's tiles:

# %%
sweep = lesson.load_shipped("tuning-warp_tiling-*.json", "`gemm-steps tune warp_tiling`: every candidate "
                            "configuration, timed in one run")
lesson.sweep_table(sweep, warp_tiling) if sweep else None

# %%
step8_sweep = lesson.load_shipped("tuning-double_buffered-*.json", "step 8's sweep, a separate run")
if sweep and step8_sweep:
    from gemm_steps.harness import tuning

    nine, eight = lesson.sweep_records(sweep), lesson.sweep_records(step8_sweep)
    best9, best8 = tuning.choose_best(nine), tuning.choose_best(eight)
    same_tiles = next((r for r in nine if lesson.same_config(r["config"], best8["config"])), None)
    lines = [f"* step 8 as tuned, {lesson.config_label(best8['config'])}: {best8['median_ms']:.3f} ms "
             f"({best8['pct_of_cublas']:.1f} % of cuBLAS in its run)"]
    if same_tiles:
        lines.append(f"* warp-tiled map, **same tiles**: {same_tiles['median_ms']:.3f} ms — "
                     f"**{best8['median_ms'] / same_tiles['median_ms']:.3f}×** (the map alone)")
        lines.append(f"* warp-tiled map, tuned tiles {lesson.config_label(best9['config'])}: "
                     f"{best9['median_ms']:.3f} ms — **{same_tiles['median_ms'] / best9['median_ms']:.3f}×** over "
                     "the same map with step 8's tiles (the tiles alone)")
    big_contiguous = next((r for r in eight if lesson.same_config(r["config"], best9["config"])), None)
    if big_contiguous:
        lines.append(f"* and the other way round — step 9's tiles {lesson.config_label(best9['config'])} with step 8's "
                     f"**contiguous map** (in step 8's sweep): {big_contiguous['median_ms']:.3f} ms, "
                     f"{big_contiguous['pct_of_cublas']:.1f} % of cuBLAS in its run. With 16 columns per thread, neighbouring "
                     f"lanes' B fragments are 64 bytes apart and share banks (the wavefront count above); the "
                     f"warp-tiled map is what makes that tile usable")
    cublas_ms = [next(r["median_ms"] for r in run["records"] if r["step"] == "cublas") for run in (step8_sweep, sweep)]
    lesson.say("\n".join(lines) + f"\n\nThe sweeps ran minutes apart (cuBLAS in each: {cublas_ms[0]:.3f} and "
               f"{cublas_ms[1]:.3f} ms), and `tuning.choose_best` treats differences under {tuning.NOISE:.0%} "
               "as noise.")

# %% [markdown]
# ## What the numbers say

# %%
if sweep and step8_sweep and same_tiles:
    map_alone = best8["median_ms"] / same_tiles["median_ms"]
    tiles_alone = same_tiles["median_ms"] / best9["median_ms"]
    occupancy = lesson.blocks_per_sm(compiled["warp_tiling_fast"]["registers"], lesson.threads_per_block(warp_tiling),
                                     compiled["warp_tiling_fast"]["shared_bytes"])
    if abs(map_alone - 1) < tuning.NOISE:
        verdict = (f"The conflict-free map, by itself, is worth **nothing measurable** ({map_alone:.3f}×, inside the "
                   f"{tuning.NOISE:.0%} noise): shared memory was not the limit, exactly as the wavefront count said.")
    else:
        verdict = (f"The conflict-free map, by itself, changes the time {map_alone:.3f}×, although the wavefront count "
                   "said shared memory was not the limit: the model misses something here.")
    lesson.say(
        verdict + f" What the map bought is *freedom*: with lanes spread over a warp tile, a thread can own "
        f"{c9['THREAD_M']}×{c9['THREAD_N']} results and a block {c9['BLOCK_M']}×{c9['BLOCK_N']} of C without its "
        f"fragment loads conflicting, and that larger tile needs less data per FMA from L2 and memory: "
        f"**{tiles_alone:.3f}×** from the tiles alone. It pays in registers: "
        f"{compiled['warp_tiling_fast']['registers']} per thread, so **{occupancy['blocks']} block of "
        f"{occupancy['warps']} warps** per SM, and all latency hiding now rests on double buffering and on the "
        "warps of that one block."
    )

# %% [markdown]
# ## The order of the FMAs
#
# Step 9's k-loop is now almost nothing but FMAs: in the SASS of one k-tile, 1024 `FFMA` and 48 `LDS.128` among
# about 1100 instructions, and Nsight Compute counts practically the same number of instructions for step 9 as for
# cuBLAS at 4096³ (2.44 against 2.43 billion; measured on the H200, `scripts/profile_step.py` under `ncu`). Yet
# cuBLAS issues **0.90** warp-instructions per cycle per scheduler and step 9 only **0.79**. The stall reasons say
# where the cycles go: per issued instruction, step 9's warps wait 0.28 cycles on *dispatch* and 0.16 on fixed
# *wait* latencies, cuBLAS's 0.10 and 0.01. Both kinds come from the register file: an FFMA reads three registers,
# and when two of them sit in the same register bank it cannot read them in one cycle.
#
# The hardware's remedy is the *operand reuse cache*: when an FFMA reads the same register in the same operand
# slot as the instruction before it, `ptxas` marks it `.reuse` and the value comes from the cache instead of the
# bank. Row by row (`acc[i][j] += a[i] * b[j]` for j = 0 … 15, then the next i) consecutive FFMAs share `a[i]` —
# except where a row ends. In a **serpentine** order, odd rows run backwards (j = 15 … 0), so the FMA after a row
# end shares `b[15]` with the one before it. We cannot allocate registers from Numba, but we can choose the order.
#
# **Prediction.** Row order already lets 15 of every 16 FFMAs reuse `a[i]`; serpentine adds at most one reuse per
# row end, 7 per k-step of 128 FFMAs (about 5 %). So if register-bank conflicts are what the extra stalls are, the
# gain is a few percent at most, not the 14 % between 0.79 and 0.90.
#
# `experiments/fma_order.py` built step 9 both ways and timed them in one run; in the SASS, 877 of the 1024
# FFMAs of a k-tile carry a `.reuse` flag in serpentine order, against 837 row by row (40 more, close to the 56 the
# count above allows):

# %%
fma_order = lesson.load_shipped("experiment-fma-order-*.json", "step 9 with row-order and serpentine FMAs, "
                                "timed in one run")
if fma_order:
    by = {(r["step"], r["M"]): r for r in fma_order["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    table = lesson.variants_table(fma_order, first_column="FMA order", only=("row_order", "serpentine"))
    gains = [by[("row_order", m)]["median_ms"] / by[("serpentine", m)]["median_ms"] for m in sizes]
    lesson.say(table + "\n\nSerpentine is " + ", ".join(f"**{g:.3f}×**" for g in gains)
               + " row order at " + ", ".join(f"{m}³" for m in sizes) + ", in the same run. Step 9 ships it (the "
               "`j = THREAD_N - 1 - jj if i % 2 else jj` line in its kernel), and steps 10 and 11 inherit it. The "
               "tuning sweep above ran before, "
               "with row-order FMAs. A few percent, as predicted: the rest of the gap to cuBLAS is in how `ptxas` "
               "allocates registers and schedules the FFMAs, which Numba does not let us control.")

# %% [markdown]
# A first run of that experiment had a bug: the serpentine index expression turned one column of every
# odd row into a duplicate, so one FMA was done twice and one never. The benchmark's float64 spot check flagged the
# result as wrong (relative error 0.25), and `tests/test_variants.py` now checks that every order computes exactly
# the same products — a reminder that a faster kernel is only a result once it is checked.

# %% [markdown]
# ## Register double buffering: a textbook move that lost
#
# CUTLASS's SIMT kernels double-buffer twice: the tiles in shared memory (step 8) and the *fragments* in
# registers. With two fragment sets that alternate by column of the k-tile, column kk + 1's shared loads are in
# flight while column kk's FMAs run; and right after each barrier, the next stage's first fragments are loaded while
# the current stage's last column is computed, so no FMA waits for a shared load after a barrier. The course tried
# it as a variant of step 9, kept with the experiments rather than in the step:
# `experiments/kernels/warp_tiling_pipelined.py` (`diff gemm_steps/steps/warp_tiling.py
# experiments/kernels/warp_tiling_pipelined.py` shows the whole change). Its k-loop, as written — first the columns
# whose next fragments load while the current ones compute:

# %%
lesson.show_experiment_kernel("warp_tiling_pipelined", start="# Columns 0", stop="a_frag[kk % 2][i]")

# %% [markdown]
# and after the barrier, the next stage's first fragments, loaded while the last column of the stage before is
# computed:

# %%
lesson.show_experiment_kernel("warp_tiling_pipelined", start="stage t % 2 is written",
                              stop="a_frag[(BLOCK_K - 1) % 2][i]")

# %% [markdown]
# **Prediction** (written before the run). After each barrier, step 9's first FMAs wait for their fragments: one
# shared-load latency, some 30 cycles, in a k-tile that takes about 2,700 cycles per scheduler. Hiding that is worth
# 1 to 3 points of cuBLAS, a little more for step 8, which has half the FMAs per k-tile to hide it behind.
#
# `experiments/pipelining.py` timed both steps with and without it in one run, and three other tile shapes
# with it; the shipped step 9 ran first and again last, to show the spread within the run:

# %%
pipelining = lesson.load_shipped("experiment-pipelining-*.json", "steps 8 and 9 with and without register double "
                                 "buffering, timed in one run")
lesson.variants_table(pipelining) if pipelining else None

# %% [markdown]
# It lost: with the shipped tiles, step 9 with pipelined fragments is several points *slower* at both sizes, and
# none of the other tile shapes brings it back to the shipped kernel, whose two timings in the run agree to 0.1
# point. Step 8 gained under a point, too little to tell apart from the variation between separate runs. The
# prediction was wrong in sign, so something else decides the time.
# Nsight Compute, on one launch of each at 4096³ (`ncu --clock-control none`, the same driver script with
# `--profile`), shows what:

# %%
import re

def ncu_value(block: str, name: str) -> str:
    """The number Nsight Compute printed for ``name`` in one kernel's block of its text report."""
    return re.search(rf"{name}\s+\S*\s+([\d.,]+)", block).group(1)


ncu_file = lesson.shipped_file("ncu-step9-pipelined-cublas-h200.txt")
if ncu_file:
    rows = ["| kernel | instructions (warp-level) | issued per cycle per scheduler | registers | SM clock |",
            "|:--|--:|--:|--:|--:|"]
    for block in re.split(r"\n  (?=\S)", ncu_file.read_text())[1:]:  # one block per profiled kernel
        kernel = block.split("(")[0].split("::")[-1].split("[")[0].strip()
        rows.append(f"| `{kernel}` | {ncu_value(block, 'smsp__inst_executed.sum')} "
                    f"| {ncu_value(block, 'Issued Warp Per Scheduler')} | {ncu_value(block, 'Registers Per Thread')} "
                    f"| {ncu_value(block, 'sm__cycles_elapsed.avg.per_second')} GHz |")
    lesson.say("\n".join(rows) + f"\n\nFrom `{lesson.shown_path(ncu_file)}` (H200).")

# %% [markdown]
# The pipelined kernel executes about 4.5 % more instructions at the same issue rate. Its SASS (`ptxas` 13.0 for
# `sm_90`; the k-loop counted with `loop_mix` from `scripts/sass_report.py`) has 1,216 instructions per k-tile
# against 1,164: the second stage offset and the extra branches cost index arithmetic, and with more freedom to
# reorder, `ptxas` put only 813 of the 1,024 FFMAs on the reuse cache, against 877. The shared-load latency we set
# out to hide was not what cost time: step 9 is limited by **how fast its instructions issue**, so a change that
# adds instructions, or costs operand reuse, loses. (That is also why steps 10 and 11 keep step 9's k-loop.)
#
# The same profile says what the last kernel in the table is: cuBLAS runs
# `sm80_xmma_gemm_…_tilesize256x128x8_stage3_warpsize4x2x1_ffma` — in its column-major terms a 256×128 tile, which
# is our 128×256; k-tiles of 8; 8 warps of 256 threads; about 254 registers; one block per SM and the same
# 16 × 32 grid. That is the design this course arrived at by measurement, and its instruction count is within
# 0.6 % of step 9's. The differences are a three-stage `cp.async` pipeline (copies that skip the registers) and
# SASS whose registers are allocated for the FFMA stream, which shows in the issue rate: **0.90 against 0.81**
# warp-instructions per cycle per scheduler, at the same 1.98 GHz.
#
# ## Trying cuBLAS's copies, and cheaper index arithmetic
#
# The first difference can be tried from Python. `cp.async` is one more inline-PTX intrinsic, `copy_async` in
# `gemm_steps/toolkit/intrinsics.py` (with a plain-Python twin for the simulator), and a variant of step 9,
# `experiments/kernels/warp_tiling_async.py`, has two compile-time switches: `ASYNC_B` copies B's k-tile with
# 16-byte `cp.async` straight into the next shared stage, and `ASYNC_A` copies A's floats one by one (4-byte
# `cp.async`) into their transposed places; one `cp.async.wait_all` before the barrier replaces the shared-memory
# stores. A third variant touches only index arithmetic: the stage `k_tile % 2` is
# computed from the signed 64-bit loop counter, which costs a sign test and 64-bit adds per k-tile; in unsigned 32-bit
# arithmetic it is one AND.
#
# **Prediction.** The loop is bound by instruction issue, so each variant should move time by about its change in
# instructions per k-tile. `ptxas` 13.0 for `sm_90` (run on a CPU) counts 1,164 for the shipped k-loop, 1,152 with
# the unsigned stage (1 % fewer: a hair faster) and 1,193 with both copies asynchronous (their address arithmetic
# costs more than the loads and stores they replace: a little slower), all within ±3 %.
#
# `experiments/async_copy.py`, one run, the shipped kernel first and again last:

# %%
async_copy = lesson.load_shipped("experiment-async-copy-*.json", "step 9 with cp.async copies and with unsigned "
                                 "stage arithmetic, timed in one run")
lesson.variants_table(async_copy) if async_copy else None

# %% [markdown]
# Every variant is slower, and by far more than its instruction count says: the unsigned stage, with 1 % *fewer*
# instructions, loses about 6 points. What the variants share is visible in `ptxas`'s register report (printed by
# the experiment, and the same on this CPU): the shipped kernel uses 253 registers, the variants 200 to 229. Given
# the fully unrolled k-tile, `ptxas` chooses its own schedule — how far ahead of the FFMAs to load fragments, which
# registers hold which accumulator — and for the shipped PTX it chose one that fills the register file; for each
# variant it chose a leaner one that issues worse. Small changes to the PTX move the result by ±6 %, in directions
# no instruction count predicts. So the shipped kernel is a **measured local optimum**, not a designed one: the
# remaining ~10 % to cuBLAS is `ptxas`'s schedule and register allocation, which Numba — like CUDA C — does not let
# us write. cuBLAS's kernels are tuned at that level. The variants stay in `experiments/kernels/`, out of the
# shipped steps, so these experiments can be re-run (`tests/test_variants.py` keeps them correct).
#
# If predicting fails, one can still *search*: write the same k-column in other shapes that compute bit-identical
# results — other orders of its 128 independent FMAs, or B's fragments loaded just before their FMAs — and let the
# GPU pick. Before the run we set the bar: adopt a shape only if it beats the shipped one by over 1 % at both sizes.
# `experiments/code_shapes.py` (its shapes in `experiments/kernels/warp_tiling_fma_order.py`), one run:

# %%
shapes = lesson.load_shipped("experiment-code-shapes-*.json", "step 9's k-column in equivalent FMA orders and "
                             "load placements, timed in one run")
if shapes:
    lesson.say(lesson.variants_table(shapes, first_column="k-column shape"))
    by = {(r["step"], r["M"]): r for r in shapes["records"] if "error" not in r}
    sizes = sorted({m for _, m in by})
    gains = {name: [by[("step9 shipped", m)]["median_ms"] / by[(name, m)]["median_ms"] - 1 for m in sizes]
             for name, m in by if m == sizes[0] and name not in ("cublas", "step9 shipped", "step9 shipped again")}
    best = max(gains, key=lambda name: min(gains[name]))
    verdict = "adopt it" if min(gains[best]) > 0.01 else "it misses the bar, so step 9 keeps its serpentine order"
    lesson.say(f"The best shape, **{best}**, is " + " and ".join(f"{g:+.1%}" for g in gains[best])
               + " against the shipped kernel at " + " and ".join(f"{m}³" for m in sizes) + f": {verdict}.")

# %% [markdown]
# Equivalent code shapes spread over a few percent, not the 10 % that separates step 9 from cuBLAS. Step 9 stays the
# course's fastest tile kernel at about 88–91 % of cuBLAS; the last 10 % lies in the schedule and register
# allocation below PTX, the level at which cuBLAS's kernels are tuned.
#
# The next lesson stops looking inside a block and looks at the whole grid: what happens when the tiles do not
# divide evenly among the SMs, and whether launching exactly as many blocks as the GPU holds at once, each looping
# over tiles, helps.
