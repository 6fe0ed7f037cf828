# %% [markdown]
# # Deep dive (lesson 11_stream_k): the fixup protocol — memory ordering, residency, and the launch
#
# Lesson 11 says three things make stream-K's fixup safe: visibility, no deadlock, determinism. This notebook looks
# closer at the first two: both sides of the fixup in the compiled code, why each side needs its fence under the
# PTX memory model, a check on every shape of the sweep that waits never chain, exactly what the no-deadlock
# argument assumes about the GPU and what would break it, and the launch that sizes the grid.

# %%
import inspect

import gemm_steps
from gemm_steps.course import lesson, lesson_11
from gemm_steps.harness import results_files
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.toolkit.persistent_tiles import StreamKTiles
from gemm_steps.toolkit.tiles import TiledKernels

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")

# %% [markdown]
# ## The owner's side, as Numba compiles it
#
# `stream_k.generated_source()` is the kernel after the `unroll` loops are expanded: one line per accumulator, and
# a thread of a 128×256 tile holds 8 × 16 = 128 of them. Thread 0 spins on the flag, fences and resets the flag; the
# barrier then lets every thread read its 128 partial sums:

# %%
lesson.show_excerpt(stream_k.generated_source(), start="if k_first > 0:", lines=22)

# %% [markdown]
# ## Both sides in PTX
#
# The compiled PTX, from the owner's first flag read to the writer's flag write, with runs of one instruction
# collapsed. Numba's `cuda.threadfence()` becomes `membar.gl`, which PTX defines, on sm_70 and newer, as
# `fence.sc.gpu`: a fence for every thread of the GPU. Numba's atomics are *relaxed* (LLVM's `monotonic` ordering):
# `atom.global.add …, 0` reads the flag from L2 atomically but orders nothing around it.

# %%
compiled = lesson.compile_kernels([persistent, stream_k])
print(lesson_11.fixup_ptx_outline(compiled["stream_k_fast"]["ptx"]))

# %% [markdown]
# The writer's side is at the bottom of the outline, the reader's at the top. In the order things happen:
#
# * **Writer** (a block that stops before the tile's last k-tile): every thread stores its partial sums
#   (`st.global.f32` × 128), fences (`membar.gl`), and waits at the barrier (`bar.sync`); then thread 0 raises the
#   flag (`atom.global.exch`). Partials → fence → flag.
# * **Reader** (the owner): thread 0 spins on the flag (`atom.global.add` of 0 until it reads 1), fences
#   (`membar.gl`), resets the flag for the next launch (`st.global.u32`), and meets the other threads at the
#   barrier; then every thread reads the partial sums (`ld.global.cg.f32` × 128). Flag → fence → partials.
#
# **Why the reader needs its own fence.** The writer's fence only orders the writer's side; the reader's relaxed
# atomic read orders nothing after it, so without a fence the reads of the partial sums may be satisfied before
# the flag was seen to be 1 — and return what the workspace held before. The PTX memory model makes the pair
# work: a fence before the write of the flag and a fence after the read that observed it *synchronize*
# (fence-fence synchronization), and then every write before the writer's fence is visible to every read after
# the reader's fence.
#
# The barriers carry this between threads of a block: on the writer, each thread's fence comes before the
# barrier that comes before thread 0's flag write; on the reader, the barrier after thread 0's fence comes before
# the other threads' reads. `ld.global.cg` (cache in L2, not L1) keeps a stale line of the owner's L1, which is not
# kept coherent with other SMs' writes, out of the picture in hardware terms; the fences are what the memory model
# asks for.
#
# Lesson 11's sweep was measured before the reader's fence was added. A run after it, on an H100, timed step 11
# against step 10 (the kernel without the fence is gone, so this run is not paired with it; `experiments/README.md`
# records the earlier run, in another process):

# %%
fence_run = lesson.load_shipped(results_files.EXPERIMENT_STREAM_K_READER_FENCE_NVIDIA_H100,
                                "`gemm-steps bench --steps persistent stream_k`, after the fixup's reader side gained "
                                "its fence")
if fence_run:
    lesson.say(lesson_11.reader_fence_table(fence_run, compiled))

# %% [markdown]
# ## No deadlock: what the kernel relies on
#
# A block that spins waits for another block's flag. It can spin forever only if that block never gets to raise
# it. The kernel relies on three things, the first two of them checked in its code and below:
#
# 1. **Waits go one way.** An owner waits only for *lower-numbered* blocks: its loop starts at its own number and
#    counts down (`other = block`, then `other -= 1`) through the lower blocks whose shares reach into its tile.
# 2. **Waits are one link deep.** The only piece of a block that raises a flag is the one that does not reach its
#    tile's end, the end of its share. Walking backwards, that piece comes right after the block's data-parallel
#    tiles, and neither waits for anything. So a block raises its flag before it ever waits.
# 3. **The blocks waited for get to run.** The grid is G = SMs × the blocks per SM that the driver's occupancy
#    calculator (`cuOccupancyMaxActiveBlocksPerMultiprocessor`, for this kernel's threads, registers and shared
#    memory) says fit on an empty SM: on a GPU running nothing else, all G blocks are resident at once.
#
# Points 1 and 2, checked on the sweep's grid for every shape that step 11 splits (the last column: the first
# version, whose forward walk broke point 2):

# %%
sweep = lesson_11.load_sweep(compiled)
if sweep:
    waiting = lesson_11.wait_table(sweep)
    lesson.say(waiting.table)
    print(f"the argument holds on all {waiting.shapes} shapes that step 11 splits:", waiting.holds)

# %% [markdown]
# With points 1 and 2, every wait ends as soon as the block waited for runs: it waits for nothing before it raises
# its flag. Point 3 is the one that is **an assumption, not a guarantee**:
#
# * Only a **cooperative launch** (`cuLaunchCooperativeKernel`) guarantees that all blocks of a grid are resident
#   at once: the driver refuses a grid that cannot be. Numba launches cooperatively only a kernel that uses the
#   grid group (`cuda.cg.this_grid()`, to synchronize the whole grid); step 11 does not, so it is launched
#   normally, and the occupancy count is a count for *empty* SMs.
# * **What breaks it:** anything else holding SM slots while step 11 starts — a kernel of the same process on
#   another stream, another process's kernels sharing the GPU under MPS (the Multi-Process Service), or any
#   partitioning of the SMs that the occupancy count does not see. Then fewer than G blocks fit.
# * **Why it still does not hang in practice:** GPUs are observed to start a grid's blocks in increasing index
#   order (NVIDIA does not document it). With that order, by point 1, every block a spinning block waits for
#   started before it, and by point 2 it raises its flag without waiting. Block 0 waits for nobody; by induction
#   every block finishes, even on one SM. A hang needs both failures at once: fewer than G slots *and* a higher-
#   numbered block starting while one it waits for cannot.
# * The forward walk of the first version was just as safe on this count — its chains were slow, not stuck —
#   because its waits also went only to lower-numbered blocks.
#
# Not a deadlock matter but a related limit: the workspace and flags are kept per context and grid size, not per
# stream (`StreamKTiles._workspace`), so two step-11 launches running at the same time on different streams would
# share them. Step 11 assumes one launch at a time per context.
#
# ## The launch
#
# The rule that splits the tiles, how many blocks the GPU holds at once, and the launch that sizes the grid and
# hands whole-wave problems to step 10:

# %%
print(inspect.getsource(stream_k_split))
print(inspect.getsource(TiledKernels.resident_blocks))
print(inspect.getsource(StreamKTiles.launch_tiles))

# %% [markdown]
# Back to [lesson 11](../11_stream_k.ipynb).
