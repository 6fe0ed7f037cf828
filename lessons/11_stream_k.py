# %% [markdown]
# # Lesson 11 — Stream-K: share the last wave out by k-iterations
#
# Lesson 10 ended on **waves**. With T tiles and G blocks resident on the GPU, a schedule of one tile per block
# takes ⌈T / G⌉ tile-times, however the tiles are ordered: 144 tiles on 132 SMs take two tile-times for 1.09
# tile-times of work. Neither persistence nor tile order gave an idle SM anything to do. This last step changes
# the unit of work: not a tile, but one trip of a tile's k-loop. We draw the schedule, write down what it should
# buy, check the kernel, tell the story of its first version — correct, and on some shapes far slower than the
# step it replaced, for a reason a short model predicts — and measure where stream-K wins, where it does not, and
# where the course ends against cuBLAS.

# %%
import inspect
import math

import numpy as np

import gemm_steps
from gemm_steps.course import lesson
from gemm_steps.harness import api
from gemm_steps.toolkit.tiles import (SIMULATED_RESIDENT_BLOCKS, WAVE_EFFICIENCY_FOR_DATA_PARALLEL, StreamKTiles,
                                      TileConfig, TiledKernels, stream_k_split)

persistent, stream_k = gemm_steps.get_step("persistent"), gemm_steps.get_step("stream_k")
print(stream_k.doc)

# %% [markdown]
# ## The idea
#
# Count work in **k-iterations**: one k-tile (`BLOCK_K` deep) of one output tile, one trip of the k-loop. T tiles
# of K / `BLOCK_K` k-tiles each are I = T·K / `BLOCK_K` k-iterations, and they can be dealt out evenly: block b
# takes iterations [b·I / G, (b+1)·I / G), in tile order — so a share may start or end in the middle of a tile. A
# tile computed by several blocks needs a **fixup**: its partial sums are added up before C is written.
#
# The functions below are the kernel's arithmetic, in Python (the kernel itself is shown further down). A block
# first computes its whole, *data-parallel* tiles, then its share of the *stream-K* tiles' k-iterations:

# %%
def shares(tiles, k_tiles, blocks, split=stream_k_split, backwards=True):
    """Each block's work, in the order it does it: (tile, first k-iteration, k-iterations) — as the kernel computes
    it: the data-parallel tiles dealt round-robin, then an equal share of the stream-K tiles' k-iterations, walked
    from its end back to its start (``backwards=False``: the first version, which walked it forwards)."""
    dp, sk = split(tiles, blocks)
    iterations = sk * k_tiles
    work = []
    for block in range(blocks):
        whole = [(tile, 0, k_tiles) for tile in range(block, dp, blocks)]
        begin, end = block * iterations // blocks, (block + 1) * iterations // blocks
        pieces, i = [], begin
        while i < end:
            tile_start = i // k_tiles * k_tiles
            stop = min(tile_start + k_tiles, end)
            pieces.append((dp + i // k_tiles, i - tile_start, stop - i))
            i = stop
        work.append(whole + (pieces[::-1] if backwards else pieces))
    return work


def picture(tiles, k_tiles, blocks, split=stream_k_split):
    """Tiles × k-iterations, each cell the block that computes it."""
    dp, _ = split(tiles, blocks)
    cells = [["."] * k_tiles for _ in range(tiles)]
    for block, work in enumerate(shares(tiles, k_tiles, blocks, split)):
        for tile, first, count in work:
            cells[tile][first:first + count] = [str(block)] * count
    lines = [f"{'':8}k-iteration →"]
    for tile, row in enumerate(cells):
        helpers = sorted(set(row) - {row[-1]})
        note = ("data-parallel" if tile < dp else "stream-K") + (
            f": block {row[-1]} finishes it and adds the partial sums of block {', '.join(helpers)}" if helpers else "")
        lines.append(f"tile {tile:<2} {' '.join(row)}   {note}")
    return "\n".join(lines)


# %% [markdown]
# A small GPU makes it visible: **4 blocks, 5 tiles of 8 k-iterations** — 1.25 waves. One tile per block needs two
# tile-times (16 k-iterations), with 3 of the 4 block-slots of the second wave idle. Stream-K gives every block
# 5 · 8 / 4 = 10 iterations:

# %%
print("One tile per block (step 10):\n" + picture(5, 8, 4, split=lambda tiles, blocks: (tiles, 0)))
print("\nStream-K (step 11):\n" + picture(5, 8, 4))

# %% [markdown]
# Tiles 1, 2 and 3 are split between two blocks. The block that computes a tile's **last** k-iteration *owns* it:
# it waits until the other blocks' partial sums of the tile are ready, adds them, and stores C. The others write
# their partial sums to a workspace and raise a flag.
#
# Where there are many waves, only the end needs balancing. The **hybrid** rule of step 11 keeps whole waves
# data-parallel (no partial sums, no waiting) and shares out only the last, part-empty wave plus one full wave
# before it, so that every block still gets about a tile's worth of iterations. 10 tiles on 4 blocks (2.5 waves):

# %%
print(picture(10, 8, 4))

# %% [markdown]
# ## The fixup protocol
#
# Each block has one **workspace slot** (a `BLOCK_M × BLOCK_N` tile of floats) and one **flag** (an integer, 0
# between launches). The kernel's stream-K part, as written. First, which work a block does, and in which order:

# %%
lesson.show_kernel(stream_k, start="# This block first computes", stop="block_col = tile %")

# %% [markdown]
# Then, after the k-loop of each piece: a block that stops before the tile's last k-tile leaves its partial sums
# and raises its flag; the owner adds the partial sums of the blocks before it, nearest first:

# %%
lesson.show_kernel(stream_k, start="if k_first + k_count < k_tiles:", stop="load_bypassing_l1")

# %% [markdown]
# And the owner's side as Numba compiles it (`stream_k.generated_source()`: the `unroll` loops expanded into one line
# per accumulator, and a thread of a 128×256 tile holds 8 × 16 = 128 of them):

# %%
lesson.show_excerpt(stream_k.generated_source(), start="if k_first > 0:", lines=20)

# %% [markdown]
# Three properties make it safe:
#
# * **Visibility.** `threadfence` makes a block's partial sums visible GPU-wide *before* its flag is raised; the
#   owner spins on the flag with an atomic read and loads the sums with `load_bypassing_l1` (`ld.global.cg`: from
#   L2, never from a stale L1 line).
# * **No deadlock.** A block only ever waits for *lower-numbered* blocks: the owner of a tile computes its last
#   k-iteration, and shares are handed out in block order, so every other block in the tile comes before it. All
#   G blocks are resident at once — the grid is SMs × blocks per SM, what the driver says fits — so the block
#   waited for is running. And the piece it must deliver (the start of a tile: the end of its share, or all of it
#   if the share lies inside one tile) is the first stream-K piece it computes, without waiting for anything. So
#   every wait ends.
# * **Determinism.** The owner starts from its own partial sums and adds the others' in a fixed order (nearest
#   block first). For a given grid size, every run adds the same numbers in the same order: bitwise-identical
#   results, run after run. A different grid (another GPU, another occupancy) splits the tiles elsewhere, and
#   rounds differently.
#
# The rule that splits the tiles, and the launch that sizes the grid and hands whole-wave problems to step 10:

# %%
print(inspect.getsource(stream_k_split))
print(inspect.getsource(TiledKernels.launch))
print(inspect.getsource(StreamKTiles.launch_full_tiles))

# %% [markdown]
# ## The prediction
#
# **A model in k-iterations.** Give every k-iteration one unit of time, let nothing else cost anything (no fixup
# traffic), and let an owner wait until every piece of its tile is done. Then each block's timeline follows from
# its list of work, and the kernel's time is the last block's finish:

# %%
def timelines(tiles, k_tiles, blocks, split=stream_k_split, backwards=True):
    """Per block: [(tile, k-iterations computed, time spent waiting before the fixup)], in order; and the time at
    which the last block finishes (units: one k-iteration)."""
    done = {}  # tile → times at which its pieces were finished
    lines, finish = [], 0
    for work in shares(tiles, k_tiles, blocks, split, backwards):  # lower blocks first: nobody waits on a higher one
        t, line = 0, []
        for tile, first, count in work:
            t += count
            waited = 0
            if first > 0 and first + count == k_tiles:  # the owner of a split tile: wait for the other pieces
                waited = max(0, max(done[tile]) - t)
                t += waited
            done.setdefault(tile, []).append(t)
            line.append((tile, count, waited))
        lines.append(line)
        finish = max(finish, t)
    return lines, finish


def draw(tiles, k_tiles, blocks, split=stream_k_split, backwards=True):
    """Each block's timeline: the tile it computes, one character per k-iteration; · while it waits."""
    lines, finish = timelines(tiles, k_tiles, blocks, split, backwards)
    rows = [f"block {b}  " + "".join(str(tile) * count + "·" * waited for tile, count, waited in line)
            for b, line in enumerate(lines)]
    return "\n".join(rows) + f"\n          done after {finish} k-iterations"


print("One tile per block:\n" + draw(5, 8, 4, split=lambda tiles, blocks: (tiles, 0)))
print("\nStream-K:\n" + draw(5, 8, 4))

# %% [markdown]
# Now the H200 runs of this lesson. They use step 10's tuned tiles; how many blocks fit on an SM follows from the
# compiler's register count and NVIDIA's occupancy rules (as in lesson 10):

# %%
compiled = lesson.compile_kernels([persistent, stream_k])
lesson.compiled_table(compiled)

# %%
sweep = lesson.load_shipped("experiment-scheduling-h200.json", "`experiments/scheduling.py`: step 9's "
                            "data-parallel grid, step 10, step 11, step 11's kernel without the fallback to step 10, "
                            "and everything stream-K, all with the same tiles, plus cuBLAS, in one run")

# %%
if sweep:
    env = sweep["environment"]
    BM, BN, BK = (sweep["tile_config"][key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    per_sm = lesson.blocks_per_sm(compiled["stream_k_fast"]["registers"], lesson.threads_per_block(stream_k),
                                  compiled["stream_k_fast"]["shared_bytes"])["blocks"]
    G = env["sm_count"] * per_sm
    by = {(r["step"], r["M"], r["N"], r["K"]): r for r in sweep["records"] if "error" not in r}
    names = {"dp": "data_parallel (step 9)", "p": "persistent (step 10)", "sk": "stream_k hybrid (step 11)",
             "kernel": "stream_k kernel, hybrid split", "all": "stream_k all", "cuBLAS": "cublas"}

    def tiles_of(shape):
        return (shape[0] // BM) * (shape[1] // BN)

    rows = []  # one per shape: its schedule, the prediction, and the records of each variant (by the keys above)
    for shape in sorted({(r["M"], r["N"], r["K"]) for r in sweep["records"]}, key=lambda s: (tiles_of(s), s[2])):
        tiles, k_tiles = tiles_of(shape), shape[2] // BK
        waves = math.ceil(tiles / G)
        dp_tiles, sk_tiles = stream_k_split(tiles, G)
        predicted = waves * k_tiles / timelines(tiles, k_tiles, G)[1]
        rows.append({"shape": shape, "tiles": tiles, "k_tiles": k_tiles, "x": tiles / G, "busy": tiles / (waves * G),
                     "dp_tiles": dp_tiles, "sk_tiles": sk_tiles, "predicted": predicted,
                     **{key: by.get((name, *shape)) for key, name in names.items()}})
    lines = ["| M×N×K | tiles | tiles ÷ SMs | block-slots busy, one tile per block | split: data-parallel + stream-K "
             "tiles | predicted speedup (balance only) |", "|:--|--:|--:|--:|:--|--:|"]
    for row in rows:
        split_text = f"{row['dp_tiles']} + {row['sk_tiles']}" if row["sk_tiles"] else "all data-parallel: runs step 10"
        lines.append(f"| {lesson.size_label(row['shape'])} | {row['tiles']} | {row['x']:.2f} | {row['busy']:.0%} "
                     f"| {split_text} | {row['predicted']:.2f}× |")
    lesson.say(f"With **{BM}×{BN}** tiles (`BLOCK_K` = {BK}) and G = {env['sm_count']} SMs × {per_sm} = **{G} "
               f"blocks**, the hybrid rule decides, shape by shape of the sweep:\n\n" + "\n".join(lines))

# %%
if sweep:
    past_one = [row for row in rows if 1 < row["x"] < 1.5 and row["sk_tiles"]]
    partial = BM * BN * 4
    per_iteration = (BM + BN) * BK * 4
    lesson.say(
        "**Prediction.** "
        + " ".join(f"At {r['x']:.2f} waves ({r['tiles']} tiles), a tile-per-block schedule leaves **{1 - r['busy']:.0%} "
                   f"of its block-slots idle** ({math.ceil(r['x']) * G - r['tiles']} of {math.ceil(r['x']) * G}), so "
                   f"balancing can buy up to **{r['predicted']:.2f}×**." for r in past_one)
        + " Where the rule keeps data-parallel waves, the gain shrinks with their share; where the tiles fill whole "
        "waves, step 11 is step 10 and the prediction is 1.00×. Shapes with few, deep tiles (small M·N, large K) "
        f"have the most to gain: a few busy SMs become {G}.\n\n"
        f"**Minus the fixups,** which the model leaves out. A partial tile is {partial // 1024} KiB, written once "
        f"and read once by its owner — as many bytes as {partial / per_iteration:.1f} k-iterations' loads of A and "
        f"B ({per_iteration // 1024} KiB each) — and an owner adds its tile's partial sums one after another. Small "
        "against a share of hundreds of k-iterations; less small where a tile is split among many blocks, as on "
        "the deep, few-tile shapes.")

# %% [markdown]
# ## Is it right?
#
# On the simulator a stream-K grid has 3 blocks (`SIMULATED_RESIDENT_BLOCKS` in `gemm_steps.toolkit.tiles`), and
# Numba's simulator runs the blocks one after another, in order — the one order in which waiting only for
# lower-numbered blocks works even without resident blocks. So the simulator checks the arithmetic and the fixup,
# not the timing. Three shapes, one for each branch of the rule:

# %%
simulated = SIMULATED_RESIDENT_BLOCKS
checks = [(512, 256, 24), (896, 256, 40), (768, 256, 16)]
config = stream_k.config
for m, n, k in checks:
    tiles, k_tiles = (m // config["BLOCK_M"]) * (n // config["BLOCK_N"]), k // config["BLOCK_K"]
    dp, sk = stream_k_split(tiles, simulated)
    what = ("all stream-K" if not dp else f"hybrid: {dp} data-parallel + {sk} stream-K" if sk
            else "whole waves: runs step 10")
    print(f"{m}×{n}×{k}: {tiles} tiles of {k_tiles} k-iterations on {simulated} blocks → {what}")
    if sk:
        print(picture(tiles, k_tiles, simulated) + "\n")

# %%
lesson.check_against_numpy(stream_k, checks)

# %% [markdown]
# **Deterministic?** Run the hybrid shape twice and compare bit patterns; compare with step 10, which computes
# every tile in one block, in k-order; then pretend the GPU holds 2 blocks instead of 3 (another grid size):

# %%
rng = np.random.default_rng(1)
m, n, k = checks[1]
a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
first, again, step10 = stream_k(a, b), stream_k(a, b), persistent(a, b)
tile_config = TileConfig(**{key: config[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M",
                                                                "THREAD_N", "MIN_BLOCKS_PER_SM")})
two_blocks = stream_k.module.build(tile_config)
two_blocks.resident_blocks = lambda: 2  # a GPU that holds two blocks at once
other_grid = api.run(two_blocks.launch, a, b)
reference = a.astype(np.float64) @ b.astype(np.float64)


def tiles_that_differ(x, y):
    rows_differing = np.nonzero(x != y)[0] // config["BLOCK_M"]
    return f"{np.count_nonzero(x != y)} of {x.size} elements differ, in tiles {sorted(set(rows_differing.tolist()))}"


same_bits = np.array_equal(first.view(np.uint32), again.view(np.uint32))
lesson.say(
    f"* two runs of step 11: **{'bitwise identical' if same_bits else 'DIFFERENT'}**\n"
    f"* step 11 against step 10: {tiles_that_differ(first, step10)} — the tiles whose k-loop was split (the "
    f"picture above), summed in another order\n"
    f"* step 11 on 2 blocks against 3 blocks: {tiles_that_differ(other_grid, first)} "
    f"(2 blocks split 7 tiles as {stream_k_split(7, 2)})\n"
    f"* largest error against float64: {np.abs(first - reference).max():.1e} (step 11), "
    f"{np.abs(step10 - reference).max():.1e} (step 10), {np.abs(other_grid - reference).max():.1e} (2 blocks)")
assert same_bits, "step 11 is not deterministic on the simulator"

# %% [markdown]
# ## The first version: a chain through every block
#
# Step 11 did not start out walking its share backwards. The first version walked it **forwards**, in k-order,
# which looks natural. But then a block's first piece is usually the *end* of a tile — a piece that waits — and
# the piece it owes the next block, the *start* of a tile, comes last. Block 1 waits for block 0 to finish its
# whole share, block 2 for block 1, and so on: a chain through every block. The model draws it, on the small GPU:

# %%
print("Forwards (the first version):\n" + draw(5, 8, 4, backwards=False))
print("\nBackwards (step 11):\n" + draw(5, 8, 4))

# %% [markdown]
# The simulator, which runs blocks one after another, computes the right answer either way. Only a GPU shows the
# difference. The first version's sweep, on the H200, with the rule of the time: split whenever the tiles do not
# fill whole waves (`tiles % blocks != 0`), with no 90 % threshold and no fallback to step 10.

# %%
forward = lesson.load_shipped("experiment-scheduling-forward-walk-h200.json", "the same sweep with the first "
                              "stream-K kernel, which walked each block's share forwards")


def first_rule(tiles, blocks):
    """The hybrid rule of the first version (commit 2600508): data-parallel only when tiles fill whole waves."""
    if tiles % blocks == 0:
        return tiles, 0
    if tiles < 2 * blocks:
        return 0, tiles
    data_parallel = (tiles // blocks - 1) * blocks
    return data_parallel, tiles - data_parallel


# %%
if sweep and forward:
    fby = {(r["step"], r["M"], r["N"], r["K"]): r for r in forward["records"] if "error" not in r}
    walk = []  # (row, forward-walk record, step 10 record of that run, model slowdown, measured slowdown)
    for row in rows:
        fwd, p = fby.get(("stream_k hybrid (step 11)", *row["shape"])), fby.get(("persistent (step 10)", *row["shape"]))
        if not (fwd and p) or first_rule(row["tiles"], G)[1] == 0:
            continue
        one_per_block = math.ceil(row["tiles"] / G) * row["k_tiles"]
        model = timelines(row["tiles"], row["k_tiles"], G, first_rule, backwards=False)[1] / one_per_block
        walk.append((row, fwd, p, model, fwd["median_ms"] / p["median_ms"]))
    walk.sort(key=lambda w: -w[4])
    lines = ["| M×N×K | tiles ÷ SMs | forward walk, ms | % of cuBLAS | time ÷ step 10's, same run | model: forward "
             "walk ÷ one tile per block |", "|:--|--:|--:|--:|--:|--:|"]
    for row, fwd, p, model, measured in walk:
        lines.append(f"| {lesson.size_label(row['shape'])} | {row['x']:.2f} | {fwd['median_ms']:.3f} "
                     f"| {fwd['pct_of_cublas']:.1f} % | **{measured:.2f}×** | {model:.2f}× |")
    chained = [w for w in walk if w[3] > 2]
    agreement = [w[4] / w[3] for w in chained]
    streamed = [r for r in forward["records"] if r["step"] in ("stream_k hybrid (step 11)", "stream_k all")]
    correct = all(r.get("unwritten") == 0 for r in streamed) and all(
        r["sampled_rel_error_fp64"] <= 1.5 * fby[("persistent (step 10)", r["M"], r["N"], r["K"])]["sampled_rel_error_fp64"]
        for r in streamed)
    lesson.say("\n".join(lines) + "\n\n" + (
        f"On the worst shape, {lesson.size_label(walk[0][0]['shape'])}, the first version took **{walk[0][4]:.1f}×** "
        f"as long as step 10. Wherever the model predicts a chain (more than 2× slower: {len(chained)} shapes), the "
        f"measured slowdown is **{min(agreement):.2f}–{max(agreement):.2f}× the model's** — a model that knows "
        "nothing but the order of the work and who waits for whom."
        if chained else "The model predicts no chain on these shapes.")
        + (" The kernel was correct all along: every run wrote every element of C, with errors no larger than step "
           "10's. It was slow only because of the order in which blocks did their pieces." if correct else ""))

# %% [markdown]
# **The fix** was to walk the share backwards: the piece others wait for comes first, the piece that waits comes
# last, and no block waits for a block that is itself waiting. The four worst shapes again, first version → step
# 11 in the final sweep:

# %%
if sweep and forward:
    lines = [f"* {lesson.size_label(row['shape'])}: {fwd['median_ms']:.3f} ms → **{row['sk']['median_ms']:.3f} ms** "
             f"({fwd['median_ms'] / row['sk']['median_ms']:.1f}× faster; {fwd['pct_of_cublas']:.1f} → "
             f"{row['sk']['pct_of_cublas']:.1f} % of cuBLAS)"
             + ("" if row["sk_tiles"] else " — here the final rule no longer splits at all: step 10 runs")
             for row, fwd, *_ in walk[:4] if row["sk"]]
    lesson.say("\n".join(lines))

# %% [markdown]
# ## The measurement
#
# Every shape of the sweep: step 9's data-parallel grid, step 10, step 11 and cuBLAS, in one run.

# %%
if sweep:
    lines = ["| M×N×K | tiles ÷ SMs | split (DP + SK tiles) | predicted | step 9 TFLOPS | step 10 | step 11 | cuBLAS "
             "| step 11 ÷ step 9 | step 9, % of cuBLAS | step 11, % of cuBLAS |",
             "|:--|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row in rows:
        tf = {key: (f"{row[key]['tflops']:.1f}" if row[key] else "—") for key in ("dp", "p", "sk", "cuBLAS")}
        split_text = f"{row['dp_tiles']} + {row['sk_tiles']}" if row["sk_tiles"] else "step 10"
        lines.append(f"| {lesson.size_label(row['shape'])} | {row['x']:.2f} | {split_text} | {row['predicted']:.2f}× "
                     f"| {tf['dp']} | {tf['p']} | **{tf['sk']}** | {tf['cuBLAS']} "
                     f"| **{row['dp']['median_ms'] / row['sk']['median_ms']:.2f}×** "
                     f"| {row['dp']['pct_of_cublas']:.0f} % | {row['sk']['pct_of_cublas']:.0f} % |")
    lesson.say("\n".join(lines))

# %%
if sweep:
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    fig = Figure(figsize=(12, 5.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    styles = {"dp": ("o", "tab:blue", "step 9 (one tile per block)"), "p": ("s", "tab:orange", "step 10 (persistent)"),
              "sk": ("D", "tab:red", "step 11 (stream-K)"), "cuBLAS": ("x", "k", "cuBLAS")}
    family_k = 4096  # the wave-boundary shapes all have K = 4096, so a tile takes the same time in each
    family = [row for row in rows if row["shape"][2] == family_k and row["shape"][0] != row["shape"][1]]
    for key, (marker, color, label) in styles.items():
        left.scatter([r["x"] for r in family if r[key]], [r[key]["tflops"] for r in family if r[key]], marker=marker,
                     color=color, label=label, s=40, zorder=3)
    anchor = next((r for r in family if r["tiles"] == G and r["dp"]), None)
    if anchor:  # both models, anchored at the shape that is exactly one full wave
        k_tiles = family_k // BK
        counts = range(max(1, G // 4), int(max(r["tiles"] for r in family) * 1.1))
        full_wave = anchor["dp"]["tflops"]
        left.plot([t / G for t in counts], [full_wave * (t / G) / math.ceil(t / G) for t in counts],
                  color="tab:blue", alpha=0.4, lw=1, label="model: one tile per block, T/⌈T/G⌉")
        left.plot([t / G for t in counts],
                  [full_wave * t * k_tiles / G / timelines(t, k_tiles, G)[1] for t in counts], color="tab:red",
                  alpha=0.4, lw=1, label="model: step 11's schedule, balance only")
    left.set(xlabel="tiles ÷ SMs", ylabel="TFLOPS", ylim=(0, None), title=f"Wave-boundary shapes, K = {family_k}")
    for key, (marker, color, label) in styles.items():
        if key != "cuBLAS":
            right.scatter([r["x"] for r in rows if r[key]], [r[key]["pct_of_cublas"] for r in rows if r[key]],
                          marker=marker, color=color, label=label, s=40, zorder=3)
    for row in rows:
        if row["shape"][2] > 4096 or row["shape"][0] == row["shape"][1] == row["shape"][2] != 2048:
            right.annotate(lesson.size_label(row["shape"]), (row["x"], row["sk"]["pct_of_cublas"]), fontsize=7,
                           xytext=(4, 4), textcoords="offset points")
    right.set_xscale("log", base=2)
    ticks = [2.0**e for e in range(-4, 1 + math.ceil(math.log2(max(r["x"] for r in rows))))]
    right.set_xticks(ticks, [f"{t:g}" for t in ticks])
    right.minorticks_off()
    right.set(xlabel="tiles ÷ SMs (log scale)", ylabel="% of cuBLAS", ylim=(0, 105),
              title="Every shape of the sweep (labelled: squares and deep shapes)")
    for ax in (left, right):
        ax.title.set_fontsize(10)
        ax.grid(True, alpha=0.3)
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle(f"Step 11 against steps 9 and 10, {BM}×{BN} tiles, G = {G} blocks\n{short_label(env)}", fontsize=10)
    lesson.show_figure(fig)

# %% [markdown]
# On the left, the red line is the balance-only model of step 11's schedule: flat where stream-K balances the
# work, and dropping onto the blue saw-tooth where the rule falls back to step 10 (90 % of block-slots busy or
# more). The measured stream-K points sit below the line; the next paragraphs say by how much, and why.
#
# ## What the numbers say
#
# **Where stream-K ran**, against step 9's grid and against the balance-only prediction:

# %%
if sweep:
    def speedup(row):
        return row["dp"]["median_ms"] / row["sk"]["median_ms"]

    split_rows = [row for row in rows if row["sk_tiles"] and row["sk"] and row["dp"]]
    boundary = [row for row in split_rows if row["shape"][2] == 4096 and row["shape"][0] != row["shape"][1]]
    deep = [row for row in split_rows if row["shape"][2] > 4096]
    small = [row for row in split_rows if row["shape"][0] == row["shape"][1] == row["shape"][2]]

    def describe(group):
        return "\n".join(
            f"* {lesson.size_label(r['shape'])} ({r['x']:.2f} waves): **{speedup(r):.2f}×** step 9 (predicted up to "
            f"{r['predicted']:.2f}×: {speedup(r) / r['predicted']:.0%} of it); {r['dp']['pct_of_cublas']:.0f} % → "
            f"**{r['sk']['pct_of_cublas']:.0f} %** of cuBLAS; {r['sk']['median_ms']:.3f} ms" for r in group)

    lesson.say("*Wave-boundary shapes* (K = 4096, tiles just past a whole number of waves):\n\n" + describe(boundary)
               + "\n\n*Deep shapes* (few tiles, long k-loops):\n\n" + describe(deep)
               + "\n\n*Small squares* (few tiles, short k-loops):\n\n" + describe(small))

# %%
if sweep and boundary and deep:
    def span(values, fmt):
        return f"{fmt.format(min(values))}–{fmt.format(max(values))}"

    def share_of_prediction(group):
        return [speedup(r) / r["predicted"] for r in group]

    lesson.say(
        f"**Stream-K wins where waves were the problem.** On the wave-boundary shapes step 11 is "
        f"**{span([speedup(r) for r in boundary], '{:.2f}')}×** step 9 and reaches "
        f"**{span([r['sk']['pct_of_cublas'] for r in boundary], '{:.0f}')} %** of cuBLAS (step 9: "
        f"{span([r['dp']['pct_of_cublas'] for r in boundary], '{:.0f}')} %). On the deep shapes it is "
        f"**{span([speedup(r) for r in deep], '{:.2f}')}×** step 9, the largest gains of the course's last step "
        f"({span([r['dp']['pct_of_cublas'] for r in deep], '{:.0f}')} → "
        f"{span([r['sk']['pct_of_cublas'] for r in deep], '{:.0f}')} % of cuBLAS).\n\n"
        f"**Less than predicted, everywhere.** The wave-boundary shapes got "
        f"{span(share_of_prediction(boundary), '{:.0%}')} of their predicted gain, the deep shapes "
        f"{span(share_of_prediction(deep), '{:.0%}')}: their tiles are split among the most blocks (about "
        f"{G / min(r['tiles'] for r in deep):.0f} per tile on the deepest), so each owner waits for and adds the "
        "most partial sums.")
    one_wave = next((r for r in boundary + rows if r["tiles"] == G and r["dp"]), None)
    if small and one_wave:
        per_iteration_us = one_wave["dp"]["median_ms"] * 1e3 / one_wave["k_tiles"]
        work_us = [timelines(r["tiles"], r["k_tiles"], G)[1] * per_iteration_us for r in small]
        tiny = min(small, key=lambda r: r["tiles"])
        cublas_here, cublas_before = tiny["cuBLAS"], fby.get(("cublas", *tiny["shape"])) if forward else None
        lesson.say(
            f"The small squares got {span(share_of_prediction(small), '{:.0%}')} of theirs, and balance is not what "
            f"limits them. At the rate of the one-wave shape, {lesson.size_label(one_wave['shape'])} "
            f"({per_iteration_us:.2f} µs per k-iteration, one block per SM), their stream-K schedules hold about "
            f"{span(work_us, '{:.0f}')} µs of k-loop work; they measured "
            f"{span([r['sk']['median_ms'] * 1e3 for r in small], '{:.0f}')} µs. The rest is fixed cost — the "
            "launch, host time the timing counts, fixups — that no schedule removes."
            + (f" (This sweep's times at these sizes are also less steady than the others': cuBLAS at "
               f"{lesson.size_label(tiny['shape'])} took {cublas_here['median_ms'] * 1e3:.0f} µs here and "
               f"{cublas_before['median_ms'] * 1e3:.0f} µs in the first version's sweep, so their percentages of "
               "cuBLAS say little.)" if cublas_here and cublas_before else ""))

# %% [markdown]
# **Where the prediction falls short**, look first at the kernel itself. The sweep also ran step 11's kernel
# *without* the fallback to step 10: on the shapes where the rule splits nothing, that kernel computes every tile
# data-parallel, like step 10, with the stream-K bookkeeping compiled in:

# %%
if sweep:
    full_waves = [row for row in rows if not row["sk_tiles"] and row["kernel"] and row["p"] and row["sk"]]
    cost = {lesson.size_label(r["shape"]): r["kernel"]["median_ms"] / r["p"]["median_ms"] for r in full_waves}
    typical = float(np.median(list(cost.values())))
    registers = {name: compiled[f"{name}_fast"]["registers"] for name in ("persistent", "stream_k")}
    per_fma = {name: sum(lesson.k_loop_mix(compiled[f"{name}_fast"]["ptx"], lesson.fmas_per_k_tile(name)).values())
               for name in ("persistent", "stream_k")}
    lesson.say(
        "Step 11's kernel with nothing to split, its time ÷ step 10's: "
        + ", ".join(f"{label} **{ratio:.3f}×**" for label, ratio in cost.items())
        + f" (median {typical:.3f}×). Its k-loop has the same instruction mix as step 10's ({per_fma['stream_k']:.2f} "
        f"vs {per_fma['persistent']:.2f} PTX instructions per FMA, the table above), but the share bounds, the walk "
        f"and the fixup raise the registers from {registers['persistent']} to {registers['stream_k']} per thread, "
        "close to the limit of 255, which leaves the compiler less room to schedule. That is the likely cost; a "
        "profiler would have to confirm it.")
    lines = []
    for row in boundary:
        expected = row["predicted"] / typical
        lines.append(f"* {lesson.size_label(row['shape'])}: {row['predicted']:.2f}× ÷ {typical:.3f} = "
                     f"**{expected:.2f}×** expected, {speedup(row):.2f}× measured: {speedup(row) / expected:.0%} of it")
    shortfall = [1 - speedup(row) / (row["predicted"] / typical) for row in boundary]
    trend = ("What is left shrinks as the shares grow (the shapes are sorted by tiles ÷ SMs): a cost per block or "
             "per split tile that the model leaves out — writing, waiting for and adding partial sums."
             if shortfall[0] > shortfall[-1] else
             "What is left does not shrink as the shares grow: it is not a fixed cost per block, and this sweep "
             "cannot say what it is.")
    lesson.say("Taking the kernel's cost into the prediction, on the wave-boundary shapes:\n\n" + "\n".join(lines)
               + "\n\n" + trend)

# %% [markdown]
# **Where the rule falls back.** With every block-slot of a tile-per-block schedule busy, stream-K has nothing to
# balance, and only its cost would be left. That is why step 11 hands those shapes to step 10:

# %%
if sweep:
    threshold = WAVE_EFFICIENCY_FOR_DATA_PARALLEL
    lines = [f"* {lesson.size_label(r['shape'])} ({r['busy']:.0%} busy): step 11 took "
             f"**{r['sk']['median_ms'] / r['p']['median_ms']:.3f}×** step 10's time ({r['p']['median_ms']:.3f} → "
             f"{r['sk']['median_ms']:.3f} ms, {(r['sk']['median_ms'] - r['p']['median_ms']) * 1e3:+.0f} µs); its "
             f"kernel without the fallback, {r['kernel']['median_ms'] / r['p']['median_ms']:.3f}×" for r in full_waves]
    gap = [(r["sk"]["median_ms"] - r["p"]["median_ms"]) * 1e3 for r in full_waves]
    lesson.say(
        "\n".join(lines) + "\n\n"
        f"The rule's threshold: split only when fewer than {threshold:.0%} of the block-slots would be busy, that "
        f"is, when balancing could buy more than {1 / threshold:.2f}×. With the kernel's cost of {typical:.3f}×, "
        f"balancing pays only below about **{1 / typical:.0%} busy**: the threshold sits close to the measured "
        "break-even.\n\n"
        f"Where it falls back, step 11 runs step 10's very kernel, yet measured {min(gap):+.0f} to {max(gap):+.0f} µs "
        "slower. That difference is not in the kernel. In the measured version, step 11's launch did more host "
        "work before it handed over (it checked the arrays, sized the grid and split, then called step 10's "
        "launch, which checked them again), and these timings count host time that outlasts the L2 flush queued "
        "before each launch (`docs/measurement.md`). That is the likely reason, not a measured one. It weighs most "
        "on the shortest kernels (up to {:.0%} of the time here). The launch has since been made leaner — the "
        "fallback now takes over only the full-tile launch, `_launch_full_tiles` shown above, with the arrays checked "
        "once — and has not been timed again yet.".format(
            max((r["sk"]["median_ms"] - r["p"]["median_ms"]) / r["p"]["median_ms"] for r in full_waves)))

# %% [markdown]
# The fallback came from a measurement. Right after the backward walk fixed the chain, a run of the same sweep
# timed the stream-K kernel with the 90 % rule but *without* the fallback — on full waves it then ran every tile
# data-parallel in its own kernel:

# %%
before_fallback = lesson.load_shipped("experiment-scheduling-stream-k-kernel-h200.json", "the same sweep with "
                                      "the backward-walk kernel, before step 11 fell back to step 10's kernel")
if sweep and before_fallback:
    bby = {(r["step"], r["M"], r["N"], r["K"]): r for r in before_fallback["records"] if "error" not in r}
    earlier = {}
    for row in full_waves:
        kernel, p = bby.get(("stream_k hybrid (step 11)", *row["shape"])), bby.get(("persistent (step 10)", *row["shape"]))
        if kernel and p:
            earlier[lesson.size_label(row["shape"])] = kernel["median_ms"] / p["median_ms"]
    if earlier:
        lesson.say("Stream-K kernel ÷ step 10 on the same full-wave shapes, in that run: "
                   + ", ".join(f"{label} {ratio:.3f}×" for label, ratio in earlier.items())
                   + f" (median {float(np.median(list(earlier.values()))):.3f}×, against {typical:.3f}× in the "
                   "final sweep). Two runs agree: where there is nothing to balance, the stream-K kernel only costs, "
                   "so step 11 does not run it there.")

# %% [markdown]
# ## The course, at the end
#
# The benchmark of the last three steps at the square sizes, with cuBLAS in the same run:

# %%
results = lesson.measure_or_load(["warp_tiling", "persistent", "stream_k"], [1024, 2048, 4096, 8192])
lesson.timing_table(results, ["warp_tiling", "persistent", "stream_k"])

# %% [markdown]
# And every step of the course, from the shipped full run:

# %%
full = lesson.load_shipped("bench-*.json", "`gemm-steps bench`: all eleven steps and cuBLAS, 512³ to 8192³")
if full:
    from gemm_steps.course import plots

    course = [step.name for step in gemm_steps.steps()]
    big = lesson.common_sizes(full, course)[-2:]
    lesson.show_figure(plots.plot_tflops_vs_size(full))
    lines = ["| step | " + " | ".join(f"{lesson.size_label(s)}: TFLOPS | % of cuBLAS" for s in big) + " |",
             "|:--|" + "--:|--:|" * len(big)]
    for name in course + ["cublas"]:
        cells = [lesson.record(full, name, s) for s in big]
        label = "cuBLAS" if name == "cublas" else f"{gemm_steps.get_step(name).number} {name}"
        lines.append(f"| {label} | " + " | ".join(f"{c['tflops']:.1f} | {c['pct_of_cublas']:.1f} %" for c in cells)
                     + " |")
    lesson.say("\n".join(lines))

# %% [markdown]
# ## Where the course ends

# %%
TARGET = 95.0  # % of cuBLAS at the largest squares: the goal the project set itself
if full:
    peak = lesson.fp32_peak_tflops(full)
    best = {s: max((lesson.record(full, name, s) for name in course), key=lambda r: r["tflops"]) for s in big}
    final = {s: lesson.record(full, "stream_k", s) for s in big}
    cublas_top = lesson.record(full, "cublas", big[-1])
    busy = [row["busy"] for row in rows if row["shape"] in big] if sweep else []
    mix = lesson.k_loop_mix(compiled["persistent_fast"]["ptx"], lesson.fmas_per_k_tile(persistent))
    met = max(best[s]["pct_of_cublas"] for s in big) >= TARGET
    reached = " and ".join(
        f"**{best[s]['pct_of_cublas']:.1f} %** of cuBLAS at {lesson.size_label(s)} (step "
        f"{gemm_steps.get_step(best[s]['step']).number}, {best[s]['tflops']:.1f} TFLOPS)" for s in big)
    lesson.say(
        f"At the two largest squares the course's fastest kernel reaches {reached}; step 11, which runs step 10's "
        f"kernel there, "
        + " and ".join("{:.1f} %".format(final[s]["pct_of_cublas"]) for s in big) + ". "
        + (f"**The target, {TARGET:.0f} % of cuBLAS, is met.** " if met else
           f"**The target, {TARGET:.0f} % of cuBLAS, is not met.** ")
        + ("Stream-K was never going to close that gap: those shapes keep "
           + " and ".join("{:.0%}".format(x) for x in busy) + " of their block-slots busy, so there is nothing to "
           "balance; its gains are on shapes where the number of tiles, not the tile, was the problem.\n\n"
           if busy else "\n\n")
        + f"What is left is inside the tile. cuBLAS runs at {cublas_top['tflops'] / peak:.0%} of the estimated "
        f"FP32 peak ({peak:.1f} TFLOPS) at {lesson.size_label(big[-1])}, the course's fastest kernel at "
        f"{best[big[-1]]['tflops'] / peak:.0%}. What the lessons measured says where the difference is, and where "
        "it is not:\n\n"
        f"* **Not mainly the instruction count.** The k-loop of steps 9 and 10 (the same code) issues "
        f"{sum(mix.values()):.2f} PTX instructions per FMA — besides the FMA, "
        f"{mix['32-bit integer'] + mix['64-bit integer']:.3f} of integer index arithmetic (mostly 64-bit), "
        f"{mix['shared loads']:.3f} shared loads and {sum(mix.values()) - 1 - mix['32-bit integer'] - mix['64-bit integer'] - mix['shared loads']:.3f} "
        f"else. If issuing them were the limit, it could run at {1 / sum(mix.values()):.0%} of the peak; it runs at "
        f"{best[big[-1]]['tflops'] / peak:.0%}. Fewer index instructions would raise that ceiling, but the kernel "
        "is not at it.\n"
        f"* **Waiting.** At {compiled['persistent_fast']['registers']} registers per thread, one block of 8 warps "
        "fits on an SM, and all waiting — for memory, for shared loads, at the barrier — must be hidden inside that "
        "one block, by double buffering alone. Larger register tiles, or a second block per SM, both need "
        "registers this kernel does not have to spare.\n"
        "* **The machine code.** PTX is not what runs: `ptxas` allocates registers and orders the instructions. "
        "Lesson 9 looked below PTX: under Nsight Compute, cuBLAS runs a kernel of step 9's design (the same tile, "
        "threads, registers and grid) with the same instruction count, and issues 0.90 warp-instructions per cycle "
        "per scheduler against step 9's 0.81; register double buffering, `cp.async` copies, cheaper index "
        "arithmetic and other FMA orders, each measured against step 9 in one run, were slower or within about "
        "1 %. cuBLAS's kernels are tuned down to the machine code (SASS); a Numba kernel reaches it only through "
        "NVVM and `ptxas`, whose schedule moved by ±6 % under small PTX changes that no instruction count "
        "predicted.")

# %% [markdown]
# That is the course: from a three-loop kernel at about 1 % of cuBLAS to one within sight of it, each step a
# prediction checked against a measurement. Where a step won, the lessons say by how much and why; where a
# prediction failed — step 4, step 5, the first stream-K — they say that too, and what it taught.
