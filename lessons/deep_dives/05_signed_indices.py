# %% [markdown]
# # Deep dive (lesson 05_register_2d): signed indices — what Numba does with them, and what they cost step 5
#
# [Lesson 5](../05_register_2d.ipynb)'s kernel computes every index in unsigned integers. Its first attempt,
# `register_2d_signed_kernel`, did not. It has the same tiles and the same loops, and its indices come from
# `cuda.threadIdx.x`, `BLOCK_M` and plain Python ints, as in steps 1 to 4. It computed the right answer and ran
# slower than step 3. This notebook checks it, times it, finds what the index types did to the compiled code, and
# gives the rules that keep an index unsigned.

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_05

register_1d, register_2d = gemm_steps.get_step("register_1d"), gemm_steps.get_step("register_2d")
first_attempt = lesson_05.first_attempt(register_2d)  # launches register_2d_signed_kernel
lesson.check_against_numpy(first_attempt, [(33, 17, 40)])

# %% [markdown]
# ## The timings
#
# `experiments/register_2d.py` timed the first attempt in one run on an H200, next to step 5 as shipped
# (`unsigned`), steps 3 and 4, and two strided variants (the
# [strided-map deep dive](05_strided_map.ipynb)). The course's benchmark is a separate run (its GPU is named below),
# so first a check that the two runs time step 5 alike (`agree`: the benchmark is closer to the experiment's
# `unsigned` than to `signed`):

# %%
results = lesson.load_results(["shared_memory", "register_1d", "register_2d"])
experiment = lesson_05.load_experiment()
if experiment:
    if results:
        lesson.say(lesson.facts(lesson_05.runs_agree(results, experiment) or {}, ("% of cuBLAS", "")))
    names = ["signed", "unsigned", "shared_memory", "register_1d"]
    lesson.say(lesson.variants_table(experiment, "variant", names, base="signed"))
    lesson.show_figure(lesson_05.variants_figure(experiment, names))

# %% [markdown]
# With signed indices the 2-D tiling made the kernel no faster than step 4, and below step 3. The same kernel with
# unsigned indices is several times faster than the first attempt (the table's last columns), from nothing but the
# types of its indices.

# %% [markdown]
# ### The first version of the experiment
#
# An earlier run of the same experiment came before the fix, when step 5 itself still used signed indices; all of
# its variants were signed (`experiments/README.md`): `A_shipped` was step 5 as it then was (the `signed` kernel of
# the current run), `B_strided` the strided map and `C_strided_transposedA` the strided map with A's tile transposed.
# Its table, each variant against `A_shipped`, then the current run's strided map against step 5, and the signed
# kernel's time in the current run against the earlier one's (the two runs' agreement):

# %%
earlier = lesson.load_shipped(lesson_05.EARLIER, "the first, signed-only version of the same experiment")
if earlier and experiment:
    lesson.say(lesson.variants_table(earlier, "variant (earlier run)", base="A_shipped"))
    lesson.say(lesson.variants_table(experiment, "variant (current run)", ["unsigned", "unsigned_strided"],
                                     base="unsigned"))
    at = max(r["M"] for r in earlier["records"])
    print(f"signed kernel at {at}³, current run's time / earlier run's:",
          f"{lesson.record(experiment, 'signed', at)['median_ms'] / lesson.record(earlier, 'A_shipped', at)['median_ms']:.3f}")

# %% [markdown]
# With signed indices every variant sat near step 3, and the strided map was worth less than it is with unsigned
# indices (the `B_strided` row of the first table against the `unsigned_strided` row of the second). The index
# arithmetic hid what the thread map was worth.

# %% [markdown]
# ## What Numba does with a signed index
#
# In Python, `x[-1]` is the last element of `x`. Numba keeps that meaning, in kernels too. So for an index whose
# *type* is signed it cannot know that the value is not negative, and every access becomes
# `x[i + len if i < 0 else i]`: in each dimension, on every access, in 64-bit arithmetic. (That is the only check:
# Numba does not check bounds unless asked to.) An unsigned index cannot be negative, so for it Numba emits nothing.
#
# Compile both kernels, and step 4 for comparison, and look. `lesson.compile_kernels` compiles a step's kernels,
# and the versions a step keeps to show what not to do (its `COUNTER_EXAMPLES`, here the first attempt). It runs
# NVVM on the CPU, in a Python of its own in GPU mode (the GPU-mode worker), since this one may be running the
# simulator. Then count the sign-bit tests in the PTX:

# %%
compiled = lesson_05.compile_step_5(register_1d, register_2d)
lesson.say(lesson_05.sign_table(compiled))

# %% [markdown]
# Here is one, in the first attempt's PTX:

# %%
print(lesson_05.sign_test_example(compiled[lesson_05.SIGNED]["ptx"]))

# %% [markdown]
# The `and` with `-9223372036854775808` keeps only the sign bit of the index (that constant is 2⁶³, which PTX
# prints as a signed number). Shifting it right by 56 turns it into 2⁷ = 128 if the index was negative and 0 if not.
# The `add` makes that `i + 128 if i < 0 else i`: Python's rule for a dimension of 128 (the columns of `b_tile`, the
# rows of `a_tile`), without a branch. The same trick with other shifts adds 8, for a dimension of 8, or 16, for
# `tid % 16`: Python's `%` and `//` also round differently for negative numbers. Dimensions known only at run time,
# those of `a`, `b` and `c`, get a *sign mask* instead. `shr.s64 x, 63` copies the sign bit into all 64 bits, an
# `and` with the length keeps the length or 0, and an `add` applies it; signed `//` uses sign masks too. Step 4
# pays the same, for its dimension of 64. None of it is left in the shipped kernel.
#
# What that costs per FMA, with lesson 4's table: the k-loop's PTX instructions per FMA, the registers `ptxas`
# allocates, and the blocks that fit on an SM. And how many FMAs the PTX holds:

# %%
lesson.compiled_table(compiled)

# %%
lesson.say(lesson.facts(lesson_05.fmas_in_ptx(compiled, register_2d), ("kernel", "k-steps' worth of FMAs in the PTX")))

# %% [markdown]
# One k-step's worth each: the 8-step `kk` loop reaches `ptxas` as a loop, with its counter, compare and branch.

# %% [markdown]
# ## Against the ceilings
#
# Both kernels in the experiment's run, each against two ceilings. The issue ceiling is the FP32 peak divided by
# the PTX instructions per FMA above, as in lesson 4. The shared-memory ceiling is the wavefront model of lesson 5.
# For step 5 it counts B's fragment as the two 128-bit loads that its profile shows. For the first attempt it
# counts the loads as written, since no profile of it is shipped.

# %%
if experiment:
    figure, table = lesson_05.ceilings(experiment, compiled, register_2d)
    lesson.show_figure(figure)
    lesson.say(table)

# %% [markdown]
# The first attempt's lower ceiling is the issue ceiling: it would be the lower one even if `ptxas` had merged its B
# loads too. Unsigned indices cut the PTX instructions per FMA (the issue ceiling's ratio, last row), but the time
# fell by much more: fewer instructions are not the whole story. The registers fell too, and with them the blocks that
# fit on an SM. At every k-tile a block's warps load the next tiles from global memory — hundreds of clock cycles —
# and wait at the barrier; with a second block on the SM there is other work to switch to meanwhile. Step 5's shipped
# profile (lesson 5) confirms its side: the registers per thread and the blocks per SM that the register limit allows.
# No profile of the first attempt is shipped, so that the single block's waits are what it lost is consistent with the
# timings, not shown.

# %% [markdown]
# PTX is not what the GPU runs: `ptxas` optimizes it into machine code (SASS). `scripts/sass_report.py` prints a
# kernel's SASS, register count and hot-loop instruction mix on a GPU machine. No report of it for these kernels is
# shipped, so this notebook stops at the PTX, the registers from `ptxas` and step 5's profile.
#
# ## How an index stays unsigned
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
# * **Unsigned does not make a division cheap.** Numba widens `uint32 // uint32` to a `uint64` division. The GPU
#   has no integer divide instruction: `div.u32` in PTX becomes a short sequence of SASS instructions, a 64-bit
#   division a much longer routine. Where the values fit in 32 bits, the toolkit's `divide_u32` emits one `div.u32`.
#   Steps 17 and 18's readable copy (`toolkit/tma_tiles.copy_rows_kernel`) once divided a 64-bit index per float,
#   and moved memory measurably slower for it (`experiments/readable_copy_speed.py`; experiments/README.md has the
#   numbers).
# * `cuda.threadIdx.x` and `cuda.blockIdx.x` are `int32` in numba-cuda (`Dim3_attrs` in `numba/cuda/cudadecl.py`,
#   in the release named in the plot's title above), so they must be cast: `tid = uint32(cuda.threadIdx.x)`. So must
#   the array shapes, which are `int64`.
#
# Numba's CPU compiler types integers by the same rules, and it runs here even on the simulator. So we can ask it
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
# Back to [lesson 5](../05_register_2d.ipynb).
