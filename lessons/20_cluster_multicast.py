# %% [markdown]
# # Lesson 20 — Two blocks, one load: clusters and TMA multicast
#
# Step 17 (lesson 17) reads every k-tile of A and B from L2 once per block, so the two blocks that compute neighbouring
# tiles of one tile-row both read the *same* A tile. cuBLAS's TF32 kernel on Hopper avoids that: lesson 17's "What
# cuBLAS runs" found it launched in **clusters of 2** with loads in the **multicast** form (`UTMALDG…MULTICAST`), and
# step 17 moving more L2 bytes per FLOP than it. Step 20 is step 17 in clusters of two blocks that share A's tile. The
# timings come from one run on an **H200** and one on an **H100**, each with step 17 and cuBLAS; the counters from
# Nsight Compute on the H200 (the captions name the files).

# %%
import gemm_steps
from gemm_steps.course import lesson, lesson_20, predictions

step = gemm_steps.get_step("cluster_multicast")
runs, reference = lesson_20.runs(), lesson_20.reference()
print(step.doc.splitlines()[0])

# %% [markdown]
# ## Four words first
#
# * A **cluster** is a group of blocks (here 2) that the GPU promises to run *at the same time*, on SMs of one GPC
#   (a group of SMs that share a part of the chip). It is asked for at launch (`cuLaunchKernelEx` with a cluster
#   attribute; in Python, `cuda.core`'s `LaunchConfig(cluster=…)`: `toolkit/cluster_ops.launch_cluster`). A block's
#   place in its cluster is its **rank** (`%cluster_ctarank`; here `blockIdx.x % 2`).
# * **Distributed shared memory**: a block of a cluster can reach the shared memory of the others. `mapa` turns the
#   address of a variable in my shared memory into the address of the same variable in block r's; an mbarrier there
#   can then be arrived on (a **remote arrival**).
# * A **multicast** copy: one `cp.async.bulk.tensor … .multicast::cluster` instruction, issued by one block, makes the
#   copy engine write the same box into the shared memory of every block named in a 16-bit mask, at the same offset,
#   and complete its bytes on the mbarrier at the same offset in each.
# * The **cluster barrier** (`barrier.cluster.arrive` / `wait`): every thread of every block of the cluster meets
#   there — before anyone touches a peer's barriers (they must be initialised) and before a block exits (its shared
#   memory must outlive its peer's last arrival).
#
# ## Who loads what, who arrives where
#
# The two blocks of a cluster compute tiles (row, 2j) and (row, 2j + 1). For each k-tile, rank r loads half the rows
# of A's tile and multicasts them to both; each loads its own B tile. So each block's *full* barrier still waits for
# the whole stage — half of A from itself, half from its peer, B from itself. And since rank r's multicast writes into
# its peer's stage too, a producer may refill stage s only when the consumers of *both* blocks are done with it: the
# *empty* barrier counts the consumer warpgroups of the whole cluster, and warp r of each warpgroup arrives on block
# r's (one warp can speak for its warpgroup: the four issue `wgmma` together, after each has read its fragments, so
# when one sees the k-tile's `wgmma` complete, none of them reads the stage any more). Step 20 first had every
# consumer warp arrive on both blocks' barriers; this way was faster in two runs ([deep dive 17: the gap to
# cuBLAS](deep_dives/17_the_gap_to_cublas.ipynb)). Drawn from the step's constants:

# %%
lesson.show_figure(lesson_20.cluster_figure(step))

# %% [markdown]
# ## The prediction
#
# Written, and committed, before step 20 first ran on a GPU (`predictions/20-before-run.md`); the lesson quotes it
# from `predictions/20.json`, and `tests/test_predictions.py` checks against git that it is older than the runs it
# is compared with below. Bytes a block asks of L2 per k-tile go from 49 KB to 33 KB; whether that buys time depends on
# whether step 17 waits for L2 — and, at 8192³, on the board's power limit:

# %%
p = predictions.get(20, "multicast_over_step17_h200")
lesson.say(predictions.quote(p))

# %% [markdown]
# ## The kernel
#
# Step 17's kernel with the cluster's changes, from the rank on: the rank picks this block's tile of the pair and the
# half of A it loads; the empty barriers count the whole cluster's consumer warps; the two blocks meet at the cluster
# barrier before any copy; the producer multicasts its half of A; a consumer warp releases a stage in every block of
# its cluster. The whole kernel: `step.source()`, or `gemm-steps diff 17 20`.

# %%
lesson.show_kernel(step, start="rank = cluster_rank()", stop="acc = warpgroup_wait_all(acc)")

# %% [markdown]
# ## Is it right?
#
# On the simulator the two blocks of a cluster run at the same time, each with its own shared memory
# (`toolkit/simulator_patches.simulated_cluster`), and the twins of `mapa`, the remote arrival and the multicast write
# into the peer's (`tests/test_cluster_ops.py` checks each, and that a missing arrival ends in a message). With the
# simulator's 32 × 64 tiles, the first shape below has two clusters per tile-row and eight k-tiles; the second is
# ragged and runs on step 15's edge kernel:

# %%
lesson.check_against_numpy(step, [(64, 256, 256), (45, 70, 20)])

# %% [markdown]
# ## How fast
#
# Step 20 beside step 17 and cuBLAS TF32 in one run per GPU (`experiments/cluster_arrive_scope.py`), with two
# variants that each change one thing: the remote arrivals written with a *cluster-scope* release (how step 20 first
# ran), and step 20 in clusters of **one** block (every cluster instruction, no peer, no sharing):

# %%
for gpu, run in runs.items():
    lesson.say(f"**{gpu}**\n\n" + lesson_20.speed_table(run))

# %% [markdown]
# Two findings before the verdict:
#
# * **The arrival's memory order is not a detail.** A consumer's arrival on the empty barrier says "my `wgmma` have
#   read this stage"; the `wgmma.wait_group` before it already guarantees the reads are done, and the arrival
#   publishes no data. Step 20 was first written with `mbarrier.arrive.release.cluster` — a release at cluster scope,
#   making every earlier memory access of the thread visible to the cluster first — and ran at about half of step 17.
#   The default (`.release` at CTA scope, what CUTLASS's `ClusterBarrier::arrive(cta_id)` issues) is the shipped one.
# * **The machinery costs, the sharing pays.** Clusters of one block run the same instructions without a peer and are
#   slower than step 17 on both GPUs; two blocks sharing A win that back on the H200 and more than that on the H100.
#
# ## The verdict

# %%
for gpu, run in runs.items():
    p = predictions.get(20, f"multicast_over_step17_{gpu.lower()}")
    for v in lesson_20.verdicts(run, p):
        print(f"{gpu} {v.label}: step 20 / step 17 = {v.ratio:.3f} (predicted {v.low:.2f}–"
              f"{v.high:.2f}: {v.where})")

# %% [markdown]
# Two of the four are inside the predicted range, one above (the H100 at 4096³) and one below (the H200 at 8192³).
# The model said the gain would come at 8192³ through the clock; the H100 gained at both sizes, the H200 at neither.
#
# ## What moved
#
# Nsight Compute on one launch of each kernel, and the SM clock and board power while each runs back to back
# (`scripts/reference_kernels.py`, the H200):

# %%
lesson.say(lesson_20.counters_table(reference))
for size in (4096, 8192):
    print(f"{size}³, step 20 / step 17: L2 bytes per FLOP {lesson_20.change(reference, 'l2_bytes_per_flop', size):.2f}× "
          f"({lesson_20.over_cublas(reference, 'l2_bytes_per_flop', 'cluster_multicast', size):.2f}× cuBLAS's), warp "
          f"instructions {lesson_20.change(reference, 'instructions_per_kflop', size):.2f}×, cycles of one launch "
          f"{lesson_20.change(reference, 'cycles', size):.2f}×; clock under load against cuBLAS's: step 17 "
          f"{lesson_20.clock_gap(reference, 'warp_specialized', size):+.1%}, step 20 "
          f"{lesson_20.clock_gap(reference, 'cluster_multicast', size):+.1%}")
print(f"multicast tensor loads in step 20's SASS: {lesson_20.multicast_loads(reference)}")

# %% [markdown]
# What the counters say, on the H200: the multicast did what it was for — L2 bytes per FLOP fell by about a quarter,
# close to cuBLAS's, and DRAM bytes with them; under the 700 W limit the SM clock rose, closer to cuBLAS's. But one
# launch took more *cycles*, with more warp instructions per FLOP (two arrivals per consumer warp and k-tile instead
# of one — in the step 20 profiled here; it now makes one per warpgroup and block — and the cluster barriers), and a
# block now waits at its empty barrier for the slower of two blocks. On the H200
# the higher clock and the extra cycles cancel; on the H100 — the GPU where lesson 17 found step 17 furthest from
# cuBLAS's L2 bytes per FLOP — the sharing wins. Which of the extra cycles come from the coupling of the two blocks
# and which from the extra instructions is not measured here: a timeline of step 20 (as lesson 16's of step 16) would
# tell — [deep dive 17](deep_dives/17_the_gap_to_cublas.ipynb) has one beside step 17's: step 20's copies land sooner,
# and its consumers spend the time saved, and more, waiting for their previous `wgmma` and releasing stages.
#
# One more thing the GPU taught: `barrier.cluster` has an `.aligned` form that promises the whole warp executes it
# together. At the kernel's end one lane of the producer warp is still issuing copies while its 31 idle lanes reach
# the last barrier; with `.aligned` the kernel hung there (so did `bar.sync` in its place). `cluster_sync` uses the
# unaligned form.
#
# ## One change from step 17
#
# Step 17's consumer loop later lost three sets of instructions (lesson 17: the ring counted in 32-bit arithmetic,
# A's descriptor built once a stage, B rounded to TF32 in two instructions), which changed neither step 17's speed nor
# its clock. Step 20 kept the older loop until an energy run of the Hopper steps (`experiments/README.md`) showed it
# executing far more instructions per FLOP than step 17: the comparison above had two changes in it, not one. Now its
# loop is step 17's, and the cluster is the only difference. The prediction, written before the run, and two runs in
# two processes:

# %%
lean = predictions.get(20, "lean_loop_over_step17_h200")
lesson.say(predictions.quote(lean))
print("predicted, step 20 / step 17: " + ", ".join(f"{lesson.size_label(size)} {low:.2f}–{high:.2f}" for size, (low, high)
                                                    in ((s, predictions.ratio_range(lean, s)) for s in (4096, 8192))))
for run in lesson_20.lean_loop_runs():
    print(lesson_20.caption(run) + ": " + ", ".join(f"{lesson.size_label(size)} step 20 / step 17 = {ratio:.3f}"
                                                     for size, ratio in lesson_20.over_step17(run).items()))

# %% [markdown]
# Inside the range at 4096³ in both runs; at 8192³ at its top in one and just past it in the other. With the same
# loop, sharing A's tile shows as a small gain over step 17 where before it showed none: the leaner loop was worth
# more to step 20 than to step 17 — by about the few percent two processes can differ by, so no more is claimed than
# "no longer behind".
#
# ## What is left
#
# cuBLAS's kernel still does three things step 20 does not (lesson 17's "What cuBLAS runs"): it is persistent (132
# blocks walk the tiles), its tile is 128 × 256 with `HGMMA.64x256x8`, and its epilogue stores C through shared
# memory with the copy engine (`UTMASTG`). The store is in the toolkit (`toolkit/tma_store_ops.py`), and one
# experiment tried it alone on step 20 (`experiments/kernels/cluster_multicast_tma_store.py`: the consumers write C
# into the freed stages, 128-byte swizzled, and one thread a warpgroup issues the copies). The prediction, written
# before the run, and the run (H200, with step 17 and cuBLAS):

# %%
lesson.say(predictions.quote(predictions.get(20, "tma_store_over_step20_h200")))
for size, ratio in lesson_20.tma_store_ratios(lesson_20.tma_store_run()).items():
    print(f"{lesson.size_label(size)}: step 20 with the TMA-store epilogue / step 20 = {ratio:.3f}")

# %% [markdown]
# No gain, and at 4096³ a small loss below the predicted range: a block of step 20 has one tile, so nothing runs
# while its store drains, and the epilogue adds a meeting of the two consumers and the copy's wait. The store pays where the next
# tile's main loop can run under it — a persistent kernel, as cuBLAS's.
#
# Lesson 23 does that: step 23 is step 21's persistent grid on clusters of two, with this store.
#
# Try it: [`exercises/cluster_multicast.py`](../exercises/cluster_multicast.py) — two blocks of a cluster share B's
# k-tiles: each multicasts its half into both, announces both halves' bytes, and releases the stage on both blocks
# (`gemm-steps exercise check cluster_multicast`, on the simulator: it draws who loaded what into which stage, and
# names a missing remote arrival instead of hanging).
#
# Next: [Lesson 21: stream-K on the tensor cores](21_warp_specialized_stream_k.ipynb) (step 21: step 17's kernel on
# a persistent grid, the part-empty last wave shared out by k-tiles), then
# [Lesson 23: persistent clusters and the TMA store](23_cluster_stream_k_tma_store.ipynb) (step 23: step 21 as cuBLAS
# runs it).
