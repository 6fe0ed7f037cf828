# %% [markdown]
# # Lesson 0b — The GPU: threads, warps, SMs, memory, occupancy and bank conflicts
#
# Every later lesson talks about warps, blocks, shared memory, occupancy and bank conflicts. This lesson defines
# them, with pictures and with numbers measured on the GPUs the course was benchmarked on (each says which). Everything here runs on
# the simulator too; the measured numbers come from files shipped in the repository, and each says which.
#
# ## Threads, blocks and the grid
#
# A GPU kernel is one Python function that **every thread runs**. You launch it with a grid and a block shape:
# `kernel[grid, block](arguments)`. `block = (16, 4)` asks for blocks of 16 × 4 = 64 threads; `grid = (3, 2)` asks
# for 3 × 2 = 6 such blocks. Inside the kernel, each thread finds out who it is from `cuda.blockIdx` (which block)
# and `cuda.threadIdx` (which thread in its block), and from that decides which data is its own. Here is a kernel
# that does nothing but write those coordinates down:

# %%
from gemm_steps.course import gpu_model, lesson, profiles

lesson.show_code(gpu_model.kernel_source())

# %% [markdown]
# Launched on a grid of 2 × 2 blocks of 4 × 2 threads (x × y: 4 columns, 2 rows per block), that is 4 rows × 8
# columns of threads. Each printed array shows, at each thread's position, one thing that thread wrote:

# %%
seen = gpu_model.where_am_i(grid=(2, 2), block=(4, 2))
for name in ("block_x", "block_y", "thread_x", "thread_y"):
    print(f"{name}:\n{seen[name]}\n")

# %% [markdown]
# `x` counts columns and `y` counts rows, and `row = blockIdx.y · blockDim.y + threadIdx.y` (likewise for columns)
# turns the two levels into one position. Every kernel of the course starts with that line.
#
# ## Warps
#
# The hardware does not run threads one by one. It runs them in **warps** of 32 threads with consecutive numbers
# inside a block (numbered x first, then y); a thread's place in its warp, 0 to 31, is its **lane**. (A block of 8
# threads, as above, still occupies a whole warp, with 24 lanes idle.) The 32 threads of a warp execute the same
# instruction at the same time, each on its own data. If a branch sends some threads one way and some the other, the warp runs both paths
# one after the other (*divergence*). And when a warp loads from memory, its 32 addresses are served together: 32
# neighbouring floats arrive as one 128-byte transaction, 32 scattered floats as up to 32. Lessons 1 and 2 are
# about exactly that (*coalescing*).

# %%
lesson.show_figure(gpu_model.hierarchy_figure())

# %% [markdown]
# ## Streaming multiprocessors (SMs)
#
# A GPU is made of **SMs**, each a processor of its own. The GPU hands every block to one SM, where it stays until
# all its threads are done; an SM holds several blocks at once if it has room for them. Each SM has 4 warp
# **schedulers**; each cycle, each scheduler picks one of its warps that is ready and issues its next instruction.
# Each scheduler has its own quarter of the SM's arithmetic: 32 FP32 lanes and one **tensor core** (a unit that
# multiplies small matrices; lessons 12–17 use the SM's four).
# Per SM (compute capability 9.0, NVIDIA's documented limits):

# %%
per_sm = gpu_model.SM90_PER_SM
levels = gpu_model.memory_levels()
for what, value in per_sm.items():
    print(f"{what:>18}: {value:,}")
shipped = lesson.load_results(steps=())
if shipped:
    env = shipped["environment"]
    print(f"\n{env['gpu']}: {env['sm_count']} SMs")
    print(f"FP32 peak = {env['sm_count']} SMs × 128 lanes × 2 FLOP (a fused multiply-add) × {env['sm_clock_max_mhz']:.0f} "
          f"MHz = {lesson.fp32_peak_tflops(shipped):.1f} TFLOPS")

# %% [markdown]
# ## Memory
#
# Each thread has **registers** (the fastest storage, private to it). The threads of one block share **shared
# memory**: a scratchpad on the SM that the kernel fills and reads explicitly, declared with `cuda.shared.array`. The
# same on-chip memory also serves as the **L1 cache**. All SMs share the **L2 cache**, and behind it the GPU's
# **HBM** (its DRAM). The further from the SM, the slower, and — per SM — the bigger (the registers and shared memory
# of all the SMs together add up to tens of MiB, but each SM sees only its own). The sizes and bandwidths of one GPU,
# the one the bandwidths were measured on:

# %%
lesson.show_figure(gpu_model.memory_figure(levels))
if levels["bandwidth_file"]:
    print(f"Bandwidths: measured with plain Numba kernels (experiments/memory_bandwidth.py), {levels['bandwidth_file']}")

# %% [markdown]
# A GEMM reads each input many times (lesson 0 counts it), so the whole course is about keeping those reads close
# to the SM: in shared memory from lesson 3, in registers from lesson 4.
#
# ## Occupancy, and hiding latency
#
# An instruction takes time to deliver its result: a few cycles for a multiply-add, tens for a shared-memory load,
# hundreds for a load from DRAM. A warp waiting for a result cannot issue its next instruction that needs it. The
# scheduler hides the wait by issuing from **another** warp that is ready. So an SM needs enough independent work in
# flight: many resident warps, or several independent instructions per warp.
#
# **Occupancy** is the number of warps resident on an SM, as a share of the 64 it can hold (2,048 threads ÷ 32). It is capped by what
# each block uses: threads, registers (65,536 per SM, shared by all resident threads) and shared memory. The
# profiler reports it; here for a few steps of the course, next to what NVIDIA's rules predict from the same
# registers, threads and shared memory:

# %%
rows = ["| kernel | threads per block | registers per thread | shared memory per block | blocks per SM (rules) "
        "| limited by | occupancy (profiler) |", "|:--|--:|--:|--:|--:|:--|--:|"]
for step in ("naive", "shared_memory", "register_2d", "warp_tiling", "cublas"):
    report = profiles.load(step)
    if report is None:
        continue
    threads = int(report.value("Block Size"))
    registers = int(report.value("Registers Per Thread"))
    shared = round(report.bytes("Static Shared Memory Per Block") + report.bytes("Dynamic Shared Memory Per Block"))
    fit = lesson.blocks_per_sm(registers, threads, shared)
    rows.append(f"| {step} | {threads} | {registers} | {shared / 1000:.1f} KB | {fit['blocks']} | {fit['limited_by']} | "
                f"{report.value('Achieved Occupancy'):.0f} % |")
lesson.say("\n".join(rows))

# %% [markdown]
# Occupancy is a means, not a goal. The naive kernel keeps the SM full of warps and is the slowest of all; cuBLAS
# runs at the lowest occupancy in the table and is the fastest, because each of its threads has many independent
# multiply-adds in flight (lessons 4 and 5 build kernels like that). What a kernel needs is *enough* independent
# work to cover its latencies, from either source.
#
# ## Bank conflicts
#
# Shared memory is split into **32 banks**; consecutive 4-byte words go to consecutive banks (word w is in bank
# w mod 32). Each bank delivers one word per pass — a **wavefront** (not to be confused with lesson 10's *waves* of
# tiles). If the 32 lanes of a warp read 32 words in 32
# different banks, one wavefront serves them all. If several lanes want *different* words in the same bank, that
# bank needs one wavefront per word: a **bank conflict**, and the load takes that many times longer (lanes reading
# the *same* word share it: a broadcast). Reading a row of a 32 × 32 float tile is conflict-free; reading a column,
# with words 32 apart, puts all 32 lanes in one bank:

# %%
lesson.show_figure(gpu_model.bank_figure(1, 32))
for stride in (1, 2, 32, 33):
    words = [[lane * stride] for lane in range(32)]
    print(f"lane L reads float L·{stride:<2}: {lesson.wavefronts(words):2d} wavefront(s)")

# %% [markdown]
# Padding a 32-wide tile to 33 columns is the classic fix: a column's words are then 33 apart, in 32 different
# banks. Measured (on the GPU of the memory picture), the same shared-memory reading kernel with and without the
# conflict:

# %%
bandwidth = levels["bandwidth_tbs"]
if bandwidth:
    free, conflict = bandwidth["shared_conflict_free_tbs"], bandwidth["shared_32_way_conflict_tbs"]
    peak = levels["sm_count"] * 32 * 4 * levels["sm_clock_mhz"] * 1e6 / 1e12  # 32 banks × 4 bytes per clock, per SM
    lesson.say(f"Conflict-free: **{free:.1f} TB/s**; every lane in one bank: **{conflict:.2f} TB/s** — "
               f"{free / conflict:.0f}× slower ({levels['bandwidth_file']}). The hardware's peak is {levels['sm_count']} "
               f"SMs × 32 banks × 4 bytes × {levels['sm_clock_mhz']:.0f} MHz = **{peak:.1f} TB/s**, and peak ÷ 32 = "
               f"{peak / 32:.2f} TB/s: the conflicting kernel runs *at* the limit one bank allows, while the "
               f"conflict-free one reaches {free / peak:.0%} of the peak — this simple kernel also spends instructions on "
               "index arithmetic, which the conflict does not slow down. So the measured ratio is less than 32×.")
else:
    print("No shipped bandwidth measurement (run python -m experiments.memory_bandwidth on a GPU).")

# %% [markdown]
# ## The words, once more
#
# | word | what it is |
# |:--|:--|
# | thread | one instance of the kernel function, with its own registers |
# | warp | 32 threads that execute each instruction together |
# | block | threads that run on one SM and share its shared memory; they can wait for each other (`cuda.syncthreads()`) |
# | grid | all the blocks of one launch: `kernel[grid, block](…)` |
# | SM | a processor of the GPU: 4 schedulers, each with 32 FP32 lanes and one tensor core; registers, shared memory / L1 |
# | coalescing | a warp's 32 loads served by few, wide transactions because their addresses are neighbours |
# | occupancy | resident warps per SM as a share of the maximum (64) |
# | latency hiding | issuing other warps' (or other independent) instructions while one waits |
# | bank conflict | several lanes of a warp reading different words of one shared-memory bank: one wavefront each |
#
# Next, [lesson 1](01_naive.ipynb): the simplest GEMM kernel, one thread per element of C — and why a single
# swapped index in it costs a factor of two.
