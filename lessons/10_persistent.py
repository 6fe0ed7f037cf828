# %% [markdown]
# # Lesson 10 — Persistent blocks, tile order, and the waves of a grid
#
# Until now each block computed one tile of C and exited, and the GPU's hardware scheduler handed the next block to
# whichever SM became free. This lesson looks at the grid as a whole. A **persistent** kernel launches only as many
# blocks as the GPU runs at once and lets each loop over tiles, in an order chosen for the L2 cache. We predict what
# that should buy, measure it against an otherwise identical non-persistent kernel, and find where the time really
# goes at the grid level: in **waves**.

# %%
import inspect
import json
import math

import gemm_steps
from gemm_steps.course import lesson
from gemm_steps.harness import tuning
from gemm_steps.toolkit import tuned
from gemm_steps.toolkit.tiles import PersistentTiles, TiledKernels

warp_tiling, persistent = gemm_steps.get_step("warp_tiling"), gemm_steps.get_step("persistent")
print(persistent.doc)

# %% [markdown]
# ## The idea
#
# With P blocks resident on the GPU at once, block b computes tiles b, b + P, b + 2P, … (a grid-stride loop). The
# tiles are numbered in **groups of `GROUP_M` tile-rows**, column by column inside a group, so that the tiles in
# flight at the same time share rows of A and columns of B — data that one block fetched into L2 and a neighbour can
# reuse. Here is the numbering on a small grid of 4 × 6 tiles, computed with the formula of the kernel below:

# %%
def tile_position(tile, rows, cols, group_m):
    """(tile-row, tile-column) of tile number ``tile`` — the persistent kernel's index arithmetic, in Python."""
    per_group = group_m * cols
    first_row = tile // per_group * group_m
    rows_in_group = min(rows - first_row, group_m)
    return first_row + tile % per_group % rows_in_group, tile % per_group // rows_in_group


def numbering(rows, cols, group_m):
    grid = [[0] * cols for _ in range(rows)]
    for tile in range(rows * cols):
        r, c = tile_position(tile, rows, cols, group_m)
        grid[r][c] = tile
    return "\n".join(" ".join(f"{t:3d}" for t in row) for row in grid)


resident = 8  # blocks the GPU of this picture holds at once
for group_m in (1, 2):
    first = {tile_position(t, 4, 6, group_m) for t in range(resident)}
    print(f"GROUP_M = {group_m}{' (row-major: no grouping)' if group_m == 1 else ''}:\n{numbering(4, 6, group_m)}")
    print(f"  the first {resident} tiles touch {len({r for r, _ in first})} tile-rows of A and "
          f"{len({c for _, c in first})} tile-columns of B\n")

# %% [markdown]
# The whole change to step 9's kernel — the tile body is wrapped in the loop, unchanged but for its indentation. The
# loop visits full tiles only, so the kernel loses its `if EDGE:` branches: the tiles at the edges of C run on step
# 9's edge kernel, one block per tile, as before:

# %%
lesson.show_diff(warp_tiling, persistent, ignore_indent=True)

# %% [markdown]
# And how many blocks to launch: as many as the driver says fit at once — occupancy per SM times SMs — or fewer if
# there are fewer tiles:

# %%
print(inspect.getsource(TiledKernels.resident_blocks))
print(inspect.getsource(PersistentTiles.launch_full_tiles))

# %% [markdown]
# ## The prediction
#
# **How many blocks fit.** Step 10 computes the same tiles as step 9, with the same registers per thread:

# %%
compiled = lesson.compile_kernels([persistent])
lesson.compiled_table(compiled)

# %%
entry = compiled["persistent_fast"]
occupancy = lesson.blocks_per_sm(entry["registers"], lesson.threads_per_block(persistent), entry["shared_bytes"])
print(f"{occupancy['blocks']} block(s) per SM, limited by {occupancy['limited_by']}")

# %% [markdown]
# **Waves.** A non-persistent grid with one block per SM also runs in *waves* of one tile per SM: the first SMs
# to finish take the next blocks, and so on. If T tiles take the same time each, the kernel takes ⌈T / SMs⌉ tile
# times, whatever the order — so the TFLOPS should follow T / ⌈T / SMs⌉: a saw-tooth in T / SMs, dropping just past
# every whole number, where the last wave runs almost empty. A persistent kernel has the same last wave: with 512
# tiles on 132 blocks, 116 blocks compute four tiles and 16 compute three, exactly as in waves. It saves only the
# launch of each block, which the hardware scheduler does in far less time than a tile takes. **Prediction:
# persistence alone is flat.**
#
# **Tile order.** Grouping should matter only if the L2 cache fails to keep what the tiles in flight share. Count
# it: in each wave, the rows of A and columns of B its tiles touch, each read once from memory per wave if L2 keeps
# them while the wave runs (a lower bound on DRAM traffic; blocks drift apart in k, so L2 must hold more than one
# k-slice, but far less than its size at these tile sizes).

# %%
experiment = lesson.load_shipped("experiment-persistent-*.json", "`experiments/persistent.py`: step 10 with "
                                 "GROUP_M = 8 and = 1, and its non-persistent twin (step 9 with step 10's tiles), in "
                                 "one run over squares, wave-boundary shapes, a small and a K-heavy shape")

# %%
if experiment:
    env = experiment["environment"]
    sms = env["sm_count"]
    shipped_tiles = json.loads(tuned.SHIPPED_TABLE.read_text()).get(env["gpu"], {}).get("warp_tiling")
    tile_config = shipped_tiles["config"] if shipped_tiles else dict(persistent.config)
    BM, BN = tile_config["BLOCK_M"], tile_config["BLOCK_N"]
    per_wave = sms * occupancy["blocks"]
    bandwidth = lesson.datasheet_bandwidth_tbs(experiment)
    lesson.say(f"The experiment ran step 10's tuned tiles for the {env['gpu']} (`gemm_steps/toolkit/tuned.json`): "
               f"**{BM}×{BN}**, so a wave is {per_wave} tiles ({sms} SMs × {occupancy['blocks']}). L2: "
               f"{env['l2_bytes'] / 2**20:.0f} MiB; DRAM: {bandwidth} TB/s (datasheet).")

    def dram_lower_bound(m, n, k, group_m):
        """Bytes of A and B each wave touches (read once per wave) plus C written once, for one tile order."""
        rows, cols = m // BM, n // BN
        total = 4 * m * n
        for start in range(0, rows * cols, per_wave):
            wave = [tile_position(t, rows, cols, group_m) for t in range(start, min(start + per_wave, rows * cols))]
            total += 4 * k * (BM * len({r for r, _ in wave}) + BN * len({c for _, c in wave}))
        return total

    squares = sorted({(r["M"], r["N"], r["K"]) for r in experiment["records"] if r["M"] == r["N"] == r["K"]})
    lines = ["| size | tiles | waves | DRAM lower bound, row-major | grouped by 8 | time at datasheet bandwidth "
             "| measured kernel time |", "|:--|--:|--:|--:|--:|--:|--:|"]
    share = 0.0
    for m, n, k in squares:
        tiles = (m // BM) * (n // BN)
        plain, grouped = dram_lower_bound(m, n, k, 1), dram_lower_bound(m, n, k, 8)
        twin = next(r for r in experiment["records"] if r["step"].startswith("warp_tiling") and r["M"] == m
                    and r["N"] == n and r["K"] == k)
        seconds = [bytes_ / (bandwidth * 1e12) for bytes_ in (plain, grouped)]
        share = max(share, max(seconds) / (twin["median_ms"] / 1e3))
        lines.append(f"| {m}³ | {tiles} | {math.ceil(tiles / per_wave)} | {plain / 1e6:.0f} MB "
                     f"| {grouped / 1e6:.0f} MB | {seconds[0] * 1e3:.3f} / {seconds[1] * 1e3:.3f} ms "
                     f"| {twin['median_ms']:.3f} ms |")
    lesson.say("\n".join(lines) + f"\n\n**Prediction:** in either order, the DRAM traffic needs at most "
               f"**{share:.0%}** of the kernel's time at full bandwidth, so the order has little to win at these "
               "sizes: the kernel is not waiting on DRAM. (Grouping can even touch *more* rows per wave, when a "
               "wave ends part-way into a group.)")

# %% [markdown]
# ## Is it right?
#
# On the simulator a persistent grid gets 3 blocks (there is no occupancy to ask for), so 2 × 2 tiles of 128 × 256
# make each block loop; the last shape adds ragged edges for the (non-persistent) edge kernel:

# %%
lesson.check_against_numpy(persistent, [(33, 17, 40), (128, 256, 8), (256, 512, 8), (257, 516, 8)])

# %% [markdown]
# ## The measurement
#
# The benchmark run, where it has step 10:

# %%
results = lesson.measure_or_load(["warp_tiling"], [1024, 2048, 4096, 8192], optional=["persistent"])
present = [s for s in ("warp_tiling", "persistent") if results and lesson.common_sizes(results, [s])]
lesson.timing_table(results, ["warp_tiling", "persistent"], results and lesson.headline_size(results, present))

# %%
if results and not lesson.common_sizes(results, ["warp_tiling", "persistent"]):
    lesson.say("This results file has no timing of step 10 (it predates the step). The experiment below timed it, "
               "against a twin that differs only in being non-persistent.")

# %% [markdown]
# The experiment, shape by shape — tiles ÷ SMs is how many waves of tiles the grid needs:

# %%
if experiment:
    names = {"twin": "warp_tiling(same config)", "G8": "persistent GROUP_M=8", "G1": "persistent GROUP_M=1",
             "cuBLAS": "cublas"}
    shapes = sorted({(r["M"], r["N"], r["K"]) for r in experiment["records"]},
                    key=lambda s: (s[0] // BM) * (s[1] // BN))
    by = {(r["step"], r["M"], r["N"], r["K"]): r for r in experiment["records"] if "error" not in r}
    table = []
    for shape in shapes:
        recs = {key: by.get((name, *shape)) for key, name in names.items()}
        tiles = (shape[0] // BM) * (shape[1] // BN)
        table.append({"shape": shape, "tiles": tiles, "waves": tiles / per_wave, **recs})
    lines = ["| M×N×K | tiles | tiles ÷ SMs | twin (step 9) TFLOPS | persistent, GROUP_M=8 | GROUP_M=1 | cuBLAS "
             "| twin, % of cuBLAS |", "|:--|--:|--:|--:|--:|--:|--:|--:|"]
    for row in table:
        tf = {key: (f"{row[key]['tflops']:.1f}" if row[key] else "—") for key in names}
        pct = f"{row['twin']['pct_of_cublas']:.1f} %" if row["twin"] else "—"
        lines.append(f"| {lesson.size_label(row['shape'])} | {row['tiles']} | {row['waves']:.2f} | {tf['twin']} "
                     f"| {tf['G8']} | {tf['G1']} | {tf['cuBLAS']} | {pct} |")
    lesson.say("\n".join(lines))

# %%
if experiment:
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    fig = Figure(figsize=(8.5, 4.8), layout="constrained")
    ax = fig.subplots()
    styles = {"twin": ("o", "tab:blue", "step 9 kernel, non-persistent (twin)"),
              "G8": ("s", "tab:orange", "step 10, persistent, GROUP_M = 8"),
              "G1": ("^", "tab:green", "step 10, persistent, GROUP_M = 1"),
              "cuBLAS": ("x", "k", "cuBLAS")}
    for key, (marker, color, label) in styles.items():
        points = [(row["waves"], row[key]["tflops"]) for row in table if row[key]]
        ax.scatter(*zip(*points), marker=marker, color=color, label=label, s=40, zorder=3)
    one_wave = next((row for row in table if abs(row["waves"] - 1) < 1e-9 and row["twin"]), None)
    if one_wave:  # the wave model, anchored at the shape that is exactly one full wave
        xs = [x / 100 for x in range(5, 1 + int(100 * max(row["waves"] for row in table)) + 10)]
        full = one_wave["twin"]["tflops"]
        ax.plot(xs, [full * x / math.ceil(x) for x in xs], color="tab:blue", alpha=0.4, lw=1,
                label="wave model: T/⌈T/SMs⌉, anchored at one full wave")
    for row in table:
        ax.annotate(lesson.size_label(row["shape"]), (row["waves"], row["twin"]["tflops"] if row["twin"] else 0),
                    fontsize=7, xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ticks = [2.0**e for e in range(-3, 1 + math.ceil(math.log2(max(row["waves"] for row in table))))]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set(xlabel="tiles ÷ SMs (waves of one tile per SM)", ylabel="TFLOPS", ylim=(0, None),
           title=f"Waves: TFLOPS against tiles per SM, {BM}×{BN} tiles\n{short_label(env)}")
    ax.title.set_fontsize(10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    lesson.show_figure(fig)

# %% [markdown]
# ## What the numbers say
#
# **Waves.** The saw-tooth is the largest effect in the experiment:

# %%
if experiment and one_wave:
    just_past = min((row for row in table if 1 < row["waves"] < 1.5 and row["twin"]), key=lambda r: r["waves"],
                    default=None)
    two = next((row for row in table if abs(row["waves"] - 2) < 1e-9 and row["twin"]), None)
    lines = []
    if just_past:
        ratio = just_past["twin"]["median_ms"] / one_wave["twin"]["median_ms"]
        work = just_past["tiles"] / one_wave["tiles"]
        model = math.ceil(just_past["waves"])
        lines.append(
            f"* {just_past['tiles']} tiles ({just_past['waves']:.2f} waves) take **{ratio:.2f}×** the time of "
            f"{one_wave['tiles']} tiles (1.00 wave) for {work:.2f}× the work; the wave model says {model}×. The "
            f"last wave holds {just_past['waves'] - (model - 1):.0%} of a wave's work and costs "
            f"**{ratio - (model - 1):.0%} of a wave's time**"
            + (" — less than a full wave (its few blocks have memory and L2 nearly to themselves), but far more "
               "than its work. " if ratio < model else ". ")
            + f"cuBLAS, on the same two shapes: "
            f"{just_past['cuBLAS']['median_ms'] / one_wave['cuBLAS']['median_ms']:.2f}×.")
    if two:
        lines.append(f"* {two['tiles']} tiles (2.00 waves) run at {two['twin']['tflops']:.1f} TFLOPS, "
                     f"{two['twin']['tflops'] / one_wave['twin']['tflops']:.2f}× the rate of one wave.")
    lesson.say("\n".join(lines))

# %% [markdown]
# **More points on the saw-tooth.** A later sweep, run for lesson 11 (`experiments/scheduling.py`), timed
# steps 9 and 10 with the same tiles on a family of shapes that all have K = 4096 — so a tile takes the same time
# in each — and tile counts at and just past whole waves, from half a wave to 2.27:

# %%
schedule = lesson.load_shipped("experiment-scheduling-h200.json", "`experiments/scheduling.py`: steps 9 "
                               "to 11 with the same tiles, and cuBLAS, in one run over squares, wave-boundary, deep "
                               "and tall shapes")

# %%
if schedule:
    s_env = schedule["environment"]
    s_bm, s_bn = schedule["tile_config"]["BLOCK_M"], schedule["tile_config"]["BLOCK_N"]
    s_blocks = s_env["sm_count"] * occupancy["blocks"]
    s_by = {(r["step"], r["M"], r["N"], r["K"]): r for r in schedule["records"] if "error" not in r}
    family = []
    for m, n, k in sorted({(r["M"], r["N"], r["K"]) for r in schedule["records"]},
                          key=lambda s: (s[0] // s_bm) * (s[1] // s_bn)):
        if k != 4096 or m == n:
            continue  # squares and the deep and tall shapes have other K, or other tile times
        tiles = (m // s_bm) * (n // s_bn)
        family.append({"shape": (m, n, k), "tiles": tiles, "waves": tiles / s_blocks,
                       "dp": s_by.get(("data_parallel (step 9)", m, n, k)),
                       "p": s_by.get(("persistent (step 10)", m, n, k)), "cuBLAS": s_by.get(("cublas", m, n, k))})
    anchor = next((row for row in family if row["tiles"] == s_blocks and row["dp"]), None)
    lines = ["| M×N×K | tiles | tiles ÷ SMs | wave model, TFLOPS | step 9 TFLOPS | step 10 TFLOPS | measured ÷ model "
             "(step 9) | cuBLAS TFLOPS | step 9, % of cuBLAS |", "|:--|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row in family:
        model = anchor["dp"]["tflops"] * row["waves"] / math.ceil(row["waves"]) if anchor else None
        row["model"] = model
        lines.append(f"| {lesson.size_label(row['shape'])} | {row['tiles']} | {row['waves']:.2f} "
                     f"| {model:.1f} | {row['dp']['tflops']:.1f} | {row['p']['tflops']:.1f} "
                     f"| {row['dp']['tflops'] / model:.2f} | {row['cuBLAS']['tflops']:.1f} "
                     f"| {row['dp']['pct_of_cublas']:.0f} % |")
    lesson.say(f"The wave model, T/⌈T/SMs⌉, anchored at the shape that is exactly one wave "
               f"({lesson.size_label(anchor['shape'])}, {anchor['dp']['tflops']:.1f} TFLOPS):\n\n" + "\n".join(lines))

# %%
if schedule and anchor:
    from matplotlib.figure import Figure

    from gemm_steps.harness.environment import short_label

    fig = Figure(figsize=(12, 4.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    marks = {"dp": ("o", "tab:blue", "step 9, one tile per block"), "p": ("s", "tab:orange", "step 10, persistent"),
             "cuBLAS": ("x", "k", "cuBLAS")}
    xs = [t / s_blocks for t in range(s_blocks // 4, int(1.1 * max(row["tiles"] for row in family)))]
    left.plot(xs, [anchor["dp"]["tflops"] * x / math.ceil(x) for x in xs], color="tab:blue", alpha=0.4, lw=1,
              label="wave model: T/⌈T/SMs⌉")
    for key, (marker, color, label) in marks.items():
        left.scatter([row["waves"] for row in family], [row[key]["tflops"] for row in family], marker=marker,
                     color=color, label=label, s=40, zorder=3)
        if key != "cuBLAS":
            right.scatter([row["waves"] for row in family], [row[key]["pct_of_cublas"] for row in family],
                          marker=marker, color=color, label=label, s=40, zorder=3)
    left.set(xlabel="tiles ÷ SMs", ylabel="TFLOPS", ylim=(0, None), title="TFLOPS")
    right.set(xlabel="tiles ÷ SMs", ylabel="% of cuBLAS", ylim=(0, 100), title="% of cuBLAS, same run")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.title.set_fontsize(10)
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(f"The saw-tooth: K = 4096, {s_bm}×{s_bn} tiles, {s_blocks} blocks\n{short_label(s_env)}",
                 fontsize=10)
    lesson.show_figure(fig)

# %%
if schedule and anchor:
    past = [row for row in family if row["waves"] % 1 and row["waves"] > 1]
    ratios = [row["dp"]["tflops"] / row["model"] for row in family if row is not anchor]
    twins = [row["p"]["median_ms"] / row["dp"]["median_ms"] for row in family]
    whole = [row["dp"]["pct_of_cublas"] for row in family if row["waves"] % 1 == 0]
    partial = [row["dp"]["pct_of_cublas"] for row in family if row["waves"] % 1]
    drops = {key: 1 - next(r for r in past if r["tiles"] == s_blocks + 1)[key]["tflops"] / anchor[key]["tflops"]
             for key in ("dp", "cuBLAS")} if any(r["tiles"] == s_blocks + 1 for r in past) else None
    lesson.say(
        f"Step 9 follows the wave model to within **{min(ratios):.2f}–{max(ratios):.2f}×** at every point but the "
        "one it is anchored at, "
        + ("and always a little above it past a whole wave: a part-empty last wave runs a little faster than a full "
           "one, as above. " if all(row["dp"]["tflops"] >= row["model"] for row in past) else "")
        + f"Step 10 tracks step 9 point for point (its time ÷ step 9's: {min(twins):.3f}–{max(twins):.3f}): "
        "persistence moves no point of the saw-tooth. "
        + (f"One tile more than a wave costs step 9 **{drops['dp']:.0%}** of its TFLOPS; cuBLAS loses "
           f"{drops['cuBLAS']:.0%} on the same two shapes — it is free to choose other tiles or to split K for a "
           "shape, and we do not know what it chose. " if drops else "")
        + "The % of cuBLAS on the right is the same saw-tooth: at whole waves step 9 reaches "
        + "–".join(f"{x:.0f}" for x in sorted({min(whole), max(whole)})) + " % of cuBLAS, elsewhere "
        + "–".join(f"{x:.0f}" for x in sorted({min(partial), max(partial)})) + " %; the difference is the empty "
        "part of the last wave.")

# %% [markdown]
# **Persistence.** Against its twin, on the square sizes, where the grid is many waves deep:

# %%
if experiment:
    deep = [(row, row["twin"]["median_ms"] / row["G8"]["median_ms"]) for row in table
            if row["shape"][0] == row["shape"][1] == row["shape"][2] and row["twin"] and row["G8"] and row["waves"] > 1]
    lines = [f"* {lesson.size_label(row['shape'])} ({row['waves']:.2f} waves): persistent is **{speedup:.3f}×** as "
             f"fast as its twin (GROUP_M = 8)" for row, speedup in deep]
    flat = all(abs(speedup - 1) < 0.02 for _, speedup in deep)
    lesson.say("\n".join(lines) + "\n\n" + (
        "Flat, as predicted: within 2 %. With one block per SM the twin already runs in waves of one tile per SM; "
        "the hardware block scheduler launches a block in far less time than a tile takes; and the last wave is "
        "equally partial either way. A persistent kernel earns its keep when there is something to do *between* "
        "tiles — prologue work to amortize, or a smarter split of the work than whole tiles (below)."
        if flat else "Not flat: persistence changed the time by more than 2 % on a square size; the reasons the "
        "model gives for flatness do not cover it."))

# %% [markdown]
# **Tile order.** GROUP_M = 8 against GROUP_M = 1 (row-major), shape by shape:

# %%
if experiment:
    diffs = [(row, row["G1"]["median_ms"] / row["G8"]["median_ms"]) for row in table if row["G8"] and row["G1"]]
    lines = [f"* {lesson.size_label(row['shape'])}: grouped is **{d:.3f}×** as fast as row-major" for row, d in diffs]
    faster = [row for row, d in diffs if d > 1 + tuning.NOISE]
    slower = [row for row, d in diffs if d < 1 - tuning.NOISE]
    lesson.say(
        "\n".join(lines) + "\n\n"
        + f"Within {tuning.NOISE:.0%} (the course's noise threshold) at {len(diffs) - len(faster) - len(slower)} of "
        f"{len(diffs)} shapes; grouped faster by more than that at {len(faster)}"
        + (f" ({', '.join(lesson.size_label(r['shape']) for r in faster)})" if faster else "")
        + f", row-major faster at {len(slower)}"
        + (f" ({', '.join(lesson.size_label(r['shape']) for r in slower)})" if slower else "")
        + ". There is no consistent sign, and the DRAM count above leaves little for an order to win at these "
        "sizes on a cache this large. What differs at single shapes is one run each: this experiment cannot say "
        "whether a few percent either way is the order or run-to-run variation, and we do not claim either."
    )

# %% [markdown]
# ## Where the course still loses to cuBLAS
#
# Sort the shapes by how far the course's kernel is from cuBLAS:

# %%
if experiment:
    worst = sorted((row for row in table if row["twin"]), key=lambda r: r["twin"]["pct_of_cublas"])
    def waves_text(tiles):
        waves, last = math.ceil(tiles / per_wave), tiles - (math.ceil(tiles / per_wave) - 1) * per_wave
        return (f"{tiles} tiles: {waves} wave{'s, the last' if waves > 1 else ''} with {last} of {per_wave} SMs "
                f"busy ({last / per_wave:.0%})")

    lesson.say("\n".join(f"* {lesson.size_label(row['shape'])}: **{row['twin']['pct_of_cublas']:.1f} %** of cuBLAS "
                          f"— {waves_text(row['tiles'])}" for row in worst))

# %% [markdown]
# The worst shapes are the ones with **few tiles**: a small matrix, or one whose work lies along K. A C of a few
# tiles keeps only that many SMs busy, however long K is, and the share of cuBLAS tracks the share of busy SMs.
# No schedule of whole tiles can fix that: neither persistence nor tile order gives an idle SM anything to do —
# and the saw-tooth above is the same problem at every wave boundary. The remedy is to split the work *along K*
# as well: give each SM an equal share of all the k-iterations of all tiles, and add up the partial tiles at the
# end. That is **stream-K**, step 11. Lesson 11 builds it on this step's kernel and measures it
# on the same wave-boundary and deep shapes.
