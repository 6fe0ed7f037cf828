# %% [markdown]
# # Lesson 5 — Register tiling in two dimensions: an 8×8 block per thread
#
# Lesson 4 reused one value of B eight times. Reuse both operands and the arithmetic gets better still: a thread
# that owns an 8×8 block of C loads a column of 8 values of A and a row of 8 values of B per k, and multiplies
# every one with every other — an **outer product**, 64 FMAs from 16 loads. This is the register tiling every
# fast GEMM uses.
#
# This step is also where the course ran into a cost that has nothing to do with tiling. Written the obvious way,
# the kernel ran *slower* than step 3 on the GPU of our results. The step as shipped differs from that first
# attempt only in the **type of its indices** — unsigned instead of signed integers. This lesson predicts, checks
# and measures the step, then takes the first attempt apart: in a timed experiment, and in the compiled code.

# %%
import gemm_steps
from gemm_steps.course import lesson

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
# The other change is in every index expression: the kernel computes its indices from `uint32` values — the thread
# and block indices cast with `uint32(...)`, and the constants `BM`, `BN`, `BK`, `TM`, `TN`, `NT`, which are
# `BLOCK_M`, …, `THREADS` as NumPy `uint32` scalars. Read them as the numbers they stand for (`TM` is 8); why they
# matter is the second half of this lesson. The module also keeps the first attempt, `register_2d_signed_kernel`
# (launched by `launch_signed`): the step itself launches only `register_2d_kernel`.
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
    """Wavefronts for one k-step of one warp: 8 A-fragment loads and 8 B-fragment loads, one float each."""
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
    predicted_speedup = shared_ceiling / step4_ceiling
    lesson.say(
        f"Shared-memory ceiling: **{shared_ceiling:.1f} TFLOPS** (step 4: {step4_ceiling:.1f}). Global loads per "
        f"FMA halve again ({2 / 64:.4f} → {(BLOCK_M + BLOCK_N) * BLOCK_K / (BLOCK_M * BLOCK_N * BLOCK_K):.4f}: a "
        f"block uses each element of its A tile {BLOCK_N} times and of its B tile {BLOCK_M} times). If shared memory "
        f"were the limit, step 5 could be **{predicted_speedup:.2f}× faster than step 4**. Lesson 4 taught us to "
        f"distrust a model that counts only one resource — step 4 was held back by the instructions around its "
        f"FMAs, not by shared memory — so this is a ceiling, not a forecast."
    )

# %% [markdown]
# ## Is it right?

# %%
lesson.check_against_numpy(register_2d, [(33, 17, 40), (64, 64, 64)])

# %% [markdown]
# The first attempt, with signed indices, must compute the same result: it is slower, not wrong. The check takes
# any `Step`, so we wrap its launcher in one:

# %%
from types import SimpleNamespace

from gemm_steps.harness.step import Step

first_attempt = Step(register_2d.number, SimpleNamespace(
    TITLE="2D register tiling, signed indices (first attempt)",
    SUMMARY="Step 5's kernel with Numba's default, signed, index types.",
    launch=register_2d.module.launch_signed), name="register_2d_signed")
lesson.check_against_numpy(first_attempt, [(33, 17, 40)])

# %% [markdown]
# ## The measurement
#
# The course's benchmark run gives steps 3, 4 and 5 at several sizes. The experiment of the next section timed this
# step again, in a run of its own next to its first attempt, two variants and steps 3 and 4. We load it here too,
# to check the two runs against each other:

# %%
experiment = lesson.load_shipped("experiment-register-2d-unsigned-*.json",
                                 "step 5, its first attempt with signed indices and two variants, with steps 3 and "
                                 "4, timed in one run")
STEPS = ["shared_memory", "register_1d", "register_2d"]
#: The experiment's names for the course's steps: its `unsigned` is step 5 as shipped.
AS_STEP = {"shared_memory": "shared_memory", "register_1d": "register_1d", "unsigned": "register_2d",
           "cublas": "cublas"}


def experiment_record(name, size):
    """The experiment's successful record of one variant (its own name: 'signed', 'unsigned', …) at one size."""
    return next((r for r in experiment["records"] if r["step"] == name and (r["M"], r["N"], r["K"]) == tuple(size)
                 and "error" not in r), None)


def experiment_as_steps():
    """The experiment's records of steps 3, 4 and 5 under the steps' own names and numbers (so the lesson's
    helpers can read them), its other variants left out."""
    return {**experiment, "records": [
        {**r, "step": AS_STEP[r["step"]],
         "number": 0 if r["step"] == "cublas" else gemm_steps.get_step(AS_STEP[r["step"]]).number}
        for r in experiment["records"] if r["step"] in AS_STEP]}


timings = results
if results and experiment:
    same_run = experiment_as_steps()
    both = [s for s in lesson.common_sizes(same_run, STEPS) if lesson.record(results, "register_2d", s)
            and lesson.record(results, "cublas", s) and experiment_record("signed", s)]
    if both:
        check_size = both[-1]
        benchmarked = lesson.record(results, "register_2d", check_size)["pct_of_cublas"]
        shipped_pct = lesson.record(same_run, "register_2d", check_size)["pct_of_cublas"]
        signed_pct = experiment_record("signed", check_size)["pct_of_cublas"]
        gpus = results["environment"].get("gpu"), experiment["environment"].get("gpu")
        where = "" if gpus[0] == gpus[1] else f" (the benchmark on the {gpus[0]}, the experiment on the {gpus[1]})"
        if abs(benchmarked - signed_pct) < abs(benchmarked - shipped_pct):
            timings = same_run
            lesson.say(
                f"**The benchmark run is older than this step's code.** At {lesson.size_label(check_size)} its step 5 "
                f"ran at {benchmarked:.1f} % of cuBLAS, as the experiment's *first attempt* did ({signed_pct:.1f} %), "
                f"not as the step as shipped ({shipped_pct:.1f} %){where}: it timed the kernel with signed indices. "
                f"So the timings below are the experiment's, at the sizes it has (one run, on the {gpus[1]}). A new "
                f"`gemm-steps bench` on a GPU brings the benchmark file up to date."
            )
        else:
            lesson.say(
                f"The two runs agree{where}: at {lesson.size_label(check_size)} step 5 ran at {benchmarked:.1f} % of "
                f"cuBLAS in the benchmark and {shipped_pct:.1f} % in the experiment."
            )

# %%
lesson.timing_table(timings, STEPS)

# %%
if timings:
    from gemm_steps.course import plots

    lesson.show_figure(plots.plot_tflops_vs_size(timings, steps=STEPS))

# %%
if timings:
    from gemm_steps.toolkit.kernel_tools import ceil_div

    size = lesson.headline_size(timings, STEPS)
    step3, step4, step5 = (lesson.record(timings, s, size) for s in STEPS)
    speedup = step4["median_ms"] / step5["median_ms"]
    sms = timings["environment"]["sm_count"]
    lines = []
    for m, n, k in lesson.common_sizes(timings, ["register_1d", "register_2d"]):
        blocks = ceil_div(m, BLOCK_M) * ceil_div(n, BLOCK_N)
        ratio = (lesson.record(timings, "register_1d", (m, n, k))["median_ms"]
                 / lesson.record(timings, "register_2d", (m, n, k))["median_ms"])
        lines.append(f"* {lesson.size_label((m, n, k))}: step 5 is {ratio:.2f}× step 4; its grid has {blocks} blocks "
                     f"for {sms} SMs" + (f" — **{sms - blocks} SMs get no block at all**" if blocks < sms else ""))
    if step5["tflops"] < min(step3["tflops"], step4["tflops"]):
        verdict = f"slower than both, against a ceiling of {predicted_speedup:.2f}× faster than step 4."
    elif speedup > predicted_speedup:
        verdict = (f"**more** than the {predicted_speedup:.2f}× that the shared-memory model allowed as a ceiling"
                   + (f", and the kernel runs *above* the model's ceiling of {shared_ceiling:.1f} TFLOPS"
                      if step5["tflops"] > shared_ceiling else "") + ".")
    else:
        verdict = f"within the {predicted_speedup:.2f}× that the shared-memory model allowed."
    idle = any(ceil_div(m, BLOCK_M) * ceil_div(n, BLOCK_N) < sms for m, n, _ in lesson.common_sizes(timings, STEPS))
    lesson.say(
        f"At {lesson.size_label(size)} step 5 runs at **{step5['tflops']:.2f} TFLOPS**: {step5['pct_of_cublas']:.1f} % "
        f"of cuBLAS, **{speedup:.2f}×** step 4 and {step3['median_ms'] / step5['median_ms']:.2f}× step 3 — "
        + verdict + "\n\n" + "\n".join(lines)
        + ("\n\nAt small sizes, 128×128 tiles make so few blocks that SMs sit idle: plain lack of parallelism (we "
           "meet it again, with a name — wave quantization — in lesson 10)." if idle else "")
    )

# %% [markdown]
# Step 5 differs from step 4 in two things at once: the tiling, which the model counts, and the index types, which
# it does not — step 4 still computes its indices the obvious way, in signed integers, like the first attempt at
# this step. The experiment separates the two.
#
# ## The first attempt: signed indices
#
# The first version of this step was `register_2d_signed_kernel`: the same tiles, the same loops, with indices
# computed from `cuda.threadIdx.x`, `BLOCK_M` and plain Python ints, as steps 1 to 4 do theirs. It passed the check
# above. `experiments/register_2d.py` timed it in one run with the step as shipped (`unsigned`), two variants
# of the shipped step that the next section comes back to, and steps 3 and 4:

# %%
VARIANTS = {
    "signed": "first attempt: signed indices",
    "unsigned": "step 5 as shipped: unsigned indices",
    "unsigned_strided": "+ strided thread map",
    "unsigned_strided_transposed_a": "+ strided map, A tile transposed",
    "shared_memory": "step 3",
    "register_1d": "step 4",
}
if experiment:
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    sizes = sorted({(r["M"], r["N"], r["K"]) for r in experiment["records"]}, key=lambda s: s[0] * s[1] * s[2])
    big = sizes[-1]
    lines = ["| variant | what it is | " + " | ".join(f"% of cuBLAS at {lesson.size_label(s)}" for s in sizes)
             + f" | TFLOPS at {lesson.size_label(big)} |", "|:--|:--|" + "--:|" * (len(sizes) + 1)]
    for name, what in VARIANTS.items():
        recs = [experiment_record(name, s) for s in sizes]
        lines.append(f"| `{name}` | {what} | "
                     + " | ".join(f"{r['pct_of_cublas']:.1f} %" if r else "—" for r in recs)
                     + (f" | {recs[-1]['tflops']:.2f} |" if recs[-1] else " | — |"))
    lesson.say("\n".join(lines))

    shown = [name for name in VARIANTS if experiment_record(name, big)]
    fig = Figure(figsize=(7.5, 4), layout="constrained")
    ax = fig.subplots()
    colours = {"signed": "tab:red", "unsigned": "tab:blue", "shared_memory": "tab:gray", "register_1d": "tab:gray"}
    bars = ax.bar([VARIANTS[n].replace(": ", ":\n").replace(", ", ",\n") for n in shown],
                  [experiment_record(n, big)["pct_of_cublas"] for n in shown],
                  color=[colours.get(n, "tab:cyan") for n in shown])
    ax.bar_label(bars, fmt="%.1f %%", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set(ylabel="% of cuBLAS (same run)",
           title=f"Step 5, its first attempt and variants, {lesson.size_label(big)}\n"
                 f"{short_label(experiment['environment'])}")
    ax.title.set_fontsize(10)
    lesson.show_figure(fig)

# %%
if experiment:
    signed, shipped = experiment_record("signed", big), experiment_record("unsigned", big)
    old3, old4 = experiment_record("shared_memory", big), experiment_record("register_1d", big)
    index_speedup = signed["median_ms"] / shipped["median_ms"]
    below3 = "below" if signed["tflops"] < old3["tflops"] else "above"
    below4 = "below" if signed["tflops"] < old4["tflops"] else "above"
    lesson.say(
        f"At {lesson.size_label(big)}, in one run: the first attempt reached **{signed['pct_of_cublas']:.1f} %** of "
        f"cuBLAS — {below3} step 3 ({old3['pct_of_cublas']:.1f} %) and {below4} step 4 "
        f"({old4['pct_of_cublas']:.1f} %). "
        + (f"With signed indices the 2-D tiling made the kernel *slower* than step 4 "
           f"({old4['median_ms'] / signed['median_ms']:.2f}× its speed). " if signed["tflops"] < old4["tflops"] else
           f"With signed indices the 2-D tiling bought {old4['median_ms'] / signed['median_ms']:.2f}× over step 4. ")
        + f"The same kernel with unsigned indices reached **{shipped['pct_of_cublas']:.1f} %**: "
        f"**{index_speedup:.2f}× faster** than the first attempt, from nothing but the types of its indices."
    )

# %% [markdown]
# ### What Numba does with a signed index
#
# In Python, `x[-1]` is the last element of `x`. Numba keeps that meaning, in kernels too, so for an index whose
# *type* is signed it cannot know the value is not negative, and every access becomes
# `x[i + len if i < 0 else i]` — in each dimension, on every access, in 64-bit arithmetic. (That is the only check:
# Numba does not check bounds unless asked to.) An unsigned index cannot be negative, so for it Numba emits nothing.
#
# Compile both kernels, and step 4 for comparison, and look. `lesson.compile_kernels` compiles a step's kernels, and
# the versions a step keeps to show what not to do (its `COUNTER_EXAMPLES`, here the first attempt), in a fresh
# Python in GPU mode (this one may be running the simulator, which compiles nothing), with
# `gemm_steps.harness.ptx.compile_kernel_ptx`, NVVM on the CPU:

# %%
import re

compiled = lesson.compile_kernels([register_1d, register_2d], counter_examples=[register_2d])
signed_ptx = compiled["register_2d_signed"]["ptx"]
compiled = {
    "register_1d (step 4)": compiled["register_1d"],
    "register_2d_signed (first attempt)": compiled["register_2d_signed"],
    "register_2d (step 5)": compiled["register_2d"],
}

SIGN_BIT = "-9223372036854775808"  # 0x8000000000000000, the sign bit of a 64-bit integer, as PTX prints it


def sign_tests(ptx):
    """How often the PTX isolates the sign bit of a 64-bit value, by the power of two the next shift makes of it."""
    lines = ptx.splitlines()
    found = {}
    for at, line in enumerate(lines):
        if SIGN_BIT in line:
            shift = re.search(r"shr\.u64\s+%rd\d+, %rd\d+, (\d+);", lines[at + 1])
            added = 2 ** (63 - int(shift.group(1))) if shift else None
            found[added] = found.get(added, 0) + 1
    return found


def sign_masks(ptx):
    """How often the PTX spreads the sign bit of a 64-bit value over all 64 bits (`shr.s64 x, 63`)."""
    return len(re.findall(r"shr\.s64\s+%rd\d+, %rd\d+, 63;", ptx))


for label, entry in compiled.items():
    tests = sign_tests(entry["ptx"])
    detail = ", ".join(f"{n} adding {added}" for added, n in sorted(tests.items(), key=lambda x: -x[1]) if added)
    print(f"{label:36} {sum(tests.values()):3d} sign-bit tests" + (f" ({detail})" if detail else "")
          + f", {sign_masks(entry['ptx'])} sign masks")

# %% [markdown]
# Here is one, in the first attempt's PTX:

# %%
ptx_lines = signed_ptx.splitlines()
at = next(i for i, line in enumerate(ptx_lines)
          if SIGN_BIT in line and re.search(r"shr\.u64.*, 56;", ptx_lines[i + 1]))
print("\n".join(line.strip() for line in ptx_lines[at - 1:at + 3]))

# %% [markdown]
# `and` with `-9223372036854775808` (the constant 2⁶³, which PTX prints as a signed number) keeps only the sign
# bit of the index; shifting it right by 56 turns it into 2⁷ = 128 if the index was negative and 0 if not; the
# `add` makes that `i + 128 if i < 0 else i` — Python's rule for a dimension of 128 (the columns of `b_tile`, the
# rows of `a_tile`), without a branch. The same trick with other shifts adds 8 (a dimension of 8) or 16 (for `tid % 16`:
# Python's `%` and `//` also round differently for negative numbers). Dimensions known only at run time, those of
# `a`, `b` and `c`, get a *sign mask* instead: `shr.s64 x, 63` copies the sign bit into all 64 bits, an `and` with
# the length keeps the length or 0, and an `add` applies it (signed `//` uses sign masks too). Step 4 pays the
# same, for its dimension of 64. None of it is left in the shipped kernel.
#
# What that costs per FMA, with lesson 4's table — the k-loop's PTX instructions per FMA, the registers `ptxas`
# allocates, and the blocks that fit on an SM:

# %%
lesson.compiled_table(compiled)

# %% [markdown]
# PTX is not what the GPU runs: `ptxas` optimizes it into SASS, the machine code. Measured on the H200 with
# `scripts/sass_report.py` (which disassembles the kernels the driver built), the hot k-loop of the first attempt
# is **167 instructions per k-step for its 64 FFMA** — IADD3 19, LEA 16, LDS 16, LOP3 12, IMAD.X 11, LEA.HI 9, … —
# and the shipped kernel's is **86**: the 64 FFMA, 8 LDS, 2 LDS.128 and a few integer instructions. Built there, the
# first attempt uses 143 registers and the shipped kernel 126 (close to the counts above, from the `ptxas` of the
# nvJitLink wheel). Two things in the SASS matter here:
#
# * **The index math left the loop**: 103 instructions besides the FMAs per k-step became 22, ten of them the
#   shared loads.
# * **`ptxas` merged loads.** The PTX of both kernels has 16 scalar shared loads per k-step; the shipped kernel's
#   SASS has 8 `LDS` and 2 `LDS.128`. Only B's 8 fragment values are 8 neighbouring floats, so the two 128-bit
#   loads are B's. In the first attempt's SASS it did not merge them: 16 `LDS`.
#
# The second point is how the measurement could beat the prediction's ceiling: the prediction counted 16 scalar
# loads. Counted as they run, B's fragment costs far fewer wavefronts:

# %%
def b_vector_cost(element):
    """Wavefronts of one warp's B fragment loaded as two 128-bit loads of 4 neighbouring floats each."""
    return sum(lesson.wavefronts([range(kk * BLOCK_N + element(t, 0, q)[1], kk * BLOCK_N + element(t, 0, q)[1] + 4)
                                  for t in warp]) for q in range(0, THREAD_N, 4))


merged_b = b_vector_cost(contiguous_map)
print(f"B fragment: {THREAD_N} scalar loads, {shipped_b} wavefronts → 2 × 128-bit loads, {merged_b} wavefronts; "
      f"with A's {shipped_a}: {fmas / (shipped_a + merged_b):.1f} FMAs per wavefront (scalar: "
      f"{fmas / (shipped_a + shipped_b):.1f})")

# %% [markdown]
# Both kernels against their ceilings, in the experiment's run (the issue ceiling from the PTX mix above, as in
# lesson 4):

# %%
if experiment:
    peak = lesson.fp32_peak_tflops(experiment)
    issue = {label: peak / sum(lesson.k_loop_mix(entry["ptx"], lesson.fmas_per_k_tile(register_2d)).values())
             for label, entry in compiled.items() if entry["step"] == "register_2d"}
    signed_label, shipped_label = "register_2d_signed (first attempt)", "register_2d (step 5)"
    ceilings = {
        signed_label: {"shared-memory ceiling": lesson.sm_rate_tflops(experiment, fmas / (shipped_a + shipped_b)),
                       "issue ceiling": issue[signed_label]},
        shipped_label: {"shared-memory ceiling": min(lesson.sm_rate_tflops(experiment, fmas / (shipped_a + merged_b)),
                                                     peak),
                        "issue ceiling": issue[shipped_label]},
    }
    rows = [("first attempt\n(signed)", signed["tflops"], ceilings[signed_label]),
            ("step 5\n(unsigned)", shipped["tflops"], ceilings[shipped_label])]
    lesson.show_figure(lesson.ceiling_figure(rows, f"Step 5 and its first attempt at {lesson.size_label(big)}",
                                             experiment))
    lower = {label: min(c.values()) for label, c in ceilings.items()}
    occupancy = {label: lesson.blocks_per_sm(compiled[label]["registers"], lesson.threads_per_block(register_2d),
                                             compiled[label]["shared_bytes"]) for label in ceilings}
    mix_ratio = issue[shipped_label] / issue[signed_label]
    lesson.say(
        f"The first attempt reached **{signed['tflops'] / lower[signed_label]:.0%}** of the lower of its ceilings "
        f"({lower[signed_label]:.1f} TFLOPS), the shipped kernel **{shipped['tflops'] / lower[shipped_label]:.0%}** "
        f"of its own ({lower[shipped_label]:.1f} TFLOPS). Unsigned indices cut the PTX instructions per FMA "
        f"{mix_ratio:.2f}×, but the time {index_speedup:.2f}×"
        + (": fewer instructions are not the whole story. " if index_speedup > 1.2 * mix_ratio else ". ")
        + (f"The registers fell too, from {compiled[signed_label]['registers']} to "
           f"{compiled[shipped_label]['registers']}, and with them the blocks that fit on an SM: "
           f"{occupancy[signed_label]['blocks']} ({occupancy[signed_label]['warps']} warps) → "
           f"**{occupancy[shipped_label]['blocks']} ({occupancy[shipped_label]['warps']} warps)**. At every k-tile "
           f"a block's warps load the next tiles from global memory — hundreds of clock cycles — and wait at the "
           f"barrier; "
           + ("with a second block on the SM, there is other work to switch to meanwhile. The timings agree with "
              "that but cannot prove it: a profiler (Nsight Compute's warp stall reasons) would show it directly."
              if occupancy[shipped_label]["blocks"] > occupancy[signed_label]["blocks"] else "")
           if compiled[signed_label]["registers"] and compiled[shipped_label]["registers"] else "")
    )

# %% [markdown]
# ### How an index stays unsigned
#
# Numba gives every variable a type when it compiles the kernel, and a single signed value anywhere in an index
# expression makes the whole index signed. The rules that matter:
#
# * A **Python int** — a literal such as `8`, or a module constant such as `BLOCK_M = 128` — is typed `int64`:
#   signed.
# * A **NumPy scalar** global keeps its dtype: `TM = uint32(8)` is a `uint32` inside the kernel. That is why the
#   module defines `BM`, `BN`, `BK`, `TM`, `TN`, `NT`.
# * **Unsigned op unsigned stays unsigned** (Numba widens it to 64 bits, `uint64`, but the sign is what counts).
#   Signed op unsigned is signed, so `tid * 8` is an `int64` again even if `tid` is unsigned.
# * `range(TM)` over a `uint32` counts in `uint64`; `range(A_LOADS)` over a Python int counts in `int64`, hence
#   `uint32(load)` in the tile copies.
# * `cuda.threadIdx.x` and `cuda.blockIdx.x` are `int32` in numba-cuda 0.30 (the version of our results), so they
#   must be cast: `tid = uint32(cuda.threadIdx.x)`. So must the array shapes, which are `int64`.
#
# Numba's CPU compiler types integers by the same rules, and it runs here even on the simulator, so we can ask it
# for the types, with the module's own `TM`:

# %%
from numba import int32, njit, uint32

TM = register_2d.module.TM  # numpy.uint32(8), as the kernel sees it


@njit
def index_types(thread_idx):
    tid = uint32(thread_idx)
    for i in range(TM):
        pass
    return tid * TM, tid * 8, thread_idx * TM, tid // TM, i


index_types(int32(5))  # thread_idx: an int32, the type Numba gives the thread index in a kernel
expressions = ["tid * TM", "tid * 8", "thread_idx * TM", "tid // TM", "i in range(TM)"]
for expression, numba_type in zip(expressions, index_types.nopython_signatures[0].return_type.types):
    print(f"{expression:18} {numba_type}  ({'unsigned' if str(numba_type).startswith('u') else 'signed'})")

# %% [markdown]
# ## A preview of step 9: a strided thread map
#
# The experiment has two more variants of the shipped kernel. They change which elements of C a thread owns. In
# the shipped kernel thread (r, c) owns a contiguous 8×8 block; in the **strided** map it owns rows r, r + 16,
# r + 32, … and columns c, c + 16, …, so the 16 lanes along a block-row read 16 *neighbouring* floats of B and the
# lanes of the two block-rows read A words in different banks. The third variant also stores the A tile transposed.
# The wavefront model for each, next to the measurement:

# %%
def strided_map(t, i, j):
    """The strided variants: thread t owns rows t // 16 + 16·i and columns t % 16 + 16·j."""
    return t // COLS + ROWS * i, t % COLS + COLS * j


def a_transposed(row):
    """Word address of a_tile[kk, row] in a transposed (BLOCK_K, BLOCK_M) tile."""
    return kk * BLOCK_M + row


if experiment:
    models = {"unsigned": (shipped_a, merged_b, "B as 2 × 128-bit loads, as `ptxas` made them"),
              "unsigned_strided": (*k_step_cost(strided_map, a_row_major), "scalar loads"),
              "unsigned_strided_transposed_a": (*k_step_cost(strided_map, a_transposed), "scalar loads")}
    lines = ["| variant | wavefronts per k-step (A + B) | FMAs per wavefront | TFLOPS | % of cuBLAS (same run) |",
             "|:--|--:|--:|--:|--:|"]
    for name, (a_cost, b_cost, how) in models.items():
        rec = experiment_record(name, big)
        lines.append(f"| `{name}` | {a_cost} + {b_cost} ({how}) | {fmas / (a_cost + b_cost):.1f} "
                     f"| {rec['tflops']:.2f} | {rec['pct_of_cublas']:.1f} % |")
    lesson.say(f"At {lesson.size_label(big)}:\n\n" + "\n".join(lines))

# %%
if experiment:
    strided, transposed = experiment_record("unsigned_strided", big), experiment_record(
        "unsigned_strided_transposed_a", big)
    shared_ceilings = {name: min(lesson.sm_rate_tflops(experiment, fmas / (a_cost + b_cost)), peak)
                       for name, (a_cost, b_cost, _) in models.items()}
    near = [name for name, ceiling in shared_ceilings.items()
            if experiment_record(name, big)["tflops"] > 0.8 * ceiling]
    far = ", ".join(f"`{name}`: {experiment_record(name, big)['tflops']:.1f} of {ceiling:.1f} TFLOPS"
                    for name, ceiling in shared_ceilings.items())

    def pct(name, s):
        return experiment_record(name, s)["pct_of_cublas"]

    gains = ", ".join(f"{pct('unsigned_strided', s) - pct('unsigned', s):+.1f} points at {lesson.size_label(s)}"
                      for s in sizes if experiment_record("unsigned_strided", s) and experiment_record("unsigned", s))
    lesson.say(
        f"The strided map gains **{strided['pct_of_cublas'] - shipped['pct_of_cublas']:.1f} points** of cuBLAS at "
        f"{lesson.size_label(big)} ({shipped['median_ms'] / strided['median_ms']:.2f}×; at each size: {gains}). "
        f"Transposing A as well changes nothing in the model and makes the kernel "
        f"{abs(transposed['median_ms'] / strided['median_ms'] - 1):.1%} "
        f"{'slower' if transposed['median_ms'] > strided['median_ms'] else 'faster'}. "
        + (f"None of these kernels is near its shared-memory ceiling ({far}), and the variants differ in more than "
           f"wavefronts: the strided map also writes C in coalesced rows, and it gives up the merged 128-bit loads of "
           f"B (its fragment values are 16 floats apart). The timings say the strided map is faster, not why."
           if not near else
           "The variants differ in more than wavefronts: the strided map also writes C in coalesced rows, and it gives "
           "up the merged 128-bit loads of B; the timings say it is faster, not which of these decides.")
    )

# %% [markdown]
# So why does the course keep the contiguous 8×8 block? Because of the next step. Step 6 loads fragments with
# 128-bit instructions, which need **4 neighbouring floats** per thread — and in the strided map a thread's 8
# values of a fragment are 16 floats apart, so every one of them would stay a scalar load (the same holds for the
# stores of C). The contiguous block gives step 6 its 128-bit loads and stores; the bank conflicts come along.
# Step 9, **warp tiling**, gets both: each lane owns 4×4 sub-blocks, 4 neighbouring floats for a 128-bit load,
# spaced across the warp's tile so that a warp's loads hit different banks. That is where this map comes back.
#
# ## What is left
#
# Unsigned indices took the index checks out of the k-loop, and the register tiling now pays off (the table of
# the measurement). The rest of what surrounds the FMAs is still there, and it is what the next steps go after:
#
# * **Scalar loads.** The tile copies from global memory move one float per instruction, each behind a bounds
#   check; A's fragment values are 8 scalar shared loads (`ptxas` merged only B's); the 64 results are stored one
#   by one, each behind its own check.
# * **2-D arrays with run-time shapes.** Every array access computes its address in 64-bit arithmetic (the
#   64-bit integer instructions left in the table above), and `a[row, col]` multiplies by a row length read from
#   the array at run time.
# * **Shared-memory bank conflicts** of the contiguous map, which the strided variant avoids (with the gain
#   above, though the timings alone cannot say how much of it is the conflicts); step 6 keeps them and step 9
#   removes them.
# * **Loops the compiler did not unroll.** The SASS hot loop above holds one k-step's 64 FFMA: the 8-step `kk` loop
#   is a real loop, with its counter, compare and branch.
#
# Step 6 changes *how* the data moves — flat arrays, 128-bit loads and stores, a transposed A tile, aligned shared
# memory — with the same tiles, and step 7 unrolls the loops.
