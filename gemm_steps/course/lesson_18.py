"""Lesson 18's helpers (step 18, ``warp_specialized_3xtf32``: 3xTF32 on step 17's warp-specialized design): the ring
with three barriers a stage and its picture, the model the prediction comes from (the tensor core's work and the
shared-memory bytes of a 3xTF32 k-tile), the speed table and verdict from the course benchmark, the builds from
experiments/specialized_3xtf32_bench.py, and the FP32-contract verdict from the accuracy run. Numbers, tables and
figures only: the words are the lesson's."""

from __future__ import annotations

from .display import MarkdownTable
from .hopper import TF32_FLOP_PER_CLOCK, ring_constants
from .targets import TARGET_HOPPER_3XTF32_VS_SGEMM
from .tensor_core_results import caption, find, load_run
from .timings import size_label

#: The course benchmark with all 18 steps and both cuBLAS in one H200 run.
BENCH_RUN = "bench-nvidia-h200-2026-11-26-2.json"
#: Step 18 and the builds it was chosen from, beside steps 14 and 17 and both cuBLAS (one H200 run).
BUILDS_RUN = "experiment-specialized-3xtf32-nvidia-h200.json"
BIG = ((4096, 4096, 4096), (8192, 8192, 8192))
#: The rows of the speed table: (record, label).
ROWS = [("cublas", "cuBLAS SGEMM (FP32 units)"), ("cublas_tf32", "cuBLAS TF32"),
        ("warpgroup_mma", "step 14, 3xTF32 wgmma, cp.async + bar.sync"),
        ("warp_specialized", "step 17, TF32, producer warpgroup"),
        ("warp_specialized_3xtf32", "step 18, 3xTF32, producer warpgroup splits A")]
#: The builds of the experiment, in its order: (record, what differs from the step).
BUILDS = [("scalar_split", "first build: split one float at a time, rolled loop, 3 behind"),
          ("split_3_behind", "16-byte vectors, unrolled, 3 k-tiles behind the copies"),
          ("warp_specialized_3xtf32", "the step: 16-byte vectors, 2 behind"),
          ("copy_warp", "a copy warp and three split warps"),
          ("registers_56_224", "the step with 56 / 224 registers (producer / consumer)")]
#: Shared memory's bandwidth per SM: 32 banks × 4 bytes a clock.
SHARED_BYTES_PER_CLOCK = 128


def bench_run() -> dict | None:
    return load_run(BENCH_RUN)


def builds_run() -> dict | None:
    return load_run(BUILDS_RUN)


def barriers(step) -> list[dict]:
    """The three barriers of a stage in the step's kernel: which index, who arrives (and how many arrivals it
    counts), who waits."""
    c = step.module.layout(step.module.SEARCH_SPACE[0])
    stages = c["STAGES"]
    return [{"name": "full", "index": "s", "count": 1, "arrives": "producer thread 0 (expect_tx) + the copy engine's bytes",
             "waits": "the producer warpgroup, before it splits"},
            {"name": "ready", "index": f"{stages} + s", "count": c["PRODUCER_THREADS"],
             "arrives": "every producer thread, after its split", "waits": "the consumers, before their wgmma"},
            {"name": "empty", "index": f"{2 * stages} + s", "count": c["WARPS"],
             "arrives": "one lane per consumer warp, once its wgmma finished", "waits": "producer thread 0, before a refill"}]


def ring_snapshot(stages: int, split_behind: int, turn: int) -> list[dict]:
    """Step 18's ring during pass ``turn`` of the producer's loop, if the consumers keep up: per stage the newest
    k-tile put there and its state — "copying" (k-tile ``turn``), "landed" (copied, not split yet), "splitting"
    (k-tile ``turn − SPLIT_BEHIND``), "computing" (split: the consumers' k-tile), "free"."""
    out = []
    for s in range(stages):
        t = max((t for t in range(turn + 1) if t % stages == s), default=None)
        if t is None:
            state = "free"
        elif t == turn:
            state = "copying"
        elif t > turn - split_behind:
            state = "landed"
        elif t == turn - split_behind:
            state = "splitting"
        else:
            state = "computing"
        out.append({"stage": s, "k_tile": t, "state": state})
    return out


STATE_COLOURS = {"copying": "tab:orange", "landed": "tab:olive", "splitting": "tab:green", "computing": "tab:blue",
                 "free": "0.9"}


def ring_figure(step, turn: int = 6):
    """Left: one stage's life, full → ready → empty, with who arrives on each barrier and who waits for it; right:
    the ring during one pass of the producer's loop (:func:`ring_snapshot`)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, Rectangle

    c = step.module.layout(step.module.SEARCH_SPACE[0])
    stages, behind = c["STAGES"], c["SPLIT_BEHIND"]
    fig = Figure(figsize=(13, 4.6), layout="constrained")
    cycle, snap = fig.subplots(1, 2, width_ratios=[1.4, 1])
    actors = [("copy engine\n(TMA: A and B tiles)", "tab:orange"),
              ("producer warpgroup\nsplits A: big, small·2^11", "tab:green"),
              ("consumer warpgroups\n3 wgmma a k-step", "tab:blue"),
              ("producer thread 0\nissues the next copy", "tab:orange")]
    xs = [0.5, 2.5, 4.5, 6.5]
    for (text, colour), x in zip(actors, xs):
        cycle.add_patch(Rectangle((x - 0.8, 1.0), 1.6, 1.0, color=colour, alpha=0.3))
        cycle.text(x, 1.5, text, ha="center", va="center", fontsize=8)
    for b, x0, x1 in zip(barriers(step), xs, xs[1:]):
        cycle.add_patch(FancyArrowPatch((x0 + 0.8, 1.5), (x1 - 0.8, 1.5), arrowstyle="-|>", mutation_scale=14))
        cycle.text((x0 + x1) / 2, 2.15, f"{b['name']}[s]", ha="center", fontsize=9, fontweight="bold")
        cycle.text((x0 + x1) / 2, 0.75, f"{b['count']} arrival{'s' if b['count'] > 1 else ''}", ha="center",
                   fontsize=7.5)
    cycle.add_patch(FancyArrowPatch((xs[-1], 1.0), (xs[0], 1.0), connectionstyle="arc3,rad=-0.25", arrowstyle="-|>",
                                    mutation_scale=14, color="0.5"))
    cycle.text(3.5, 0.05, "the stage's next fill", ha="center", fontsize=8, color="0.4")
    cycle.set(xlim=(-0.5, 7.5), ylim=(-0.3, 2.5), title="One stage s: each barrier is arrived on by the role on its "
              "left and waited for by the role on its right")
    cycle.title.set_fontsize(9)
    cycle.axis("off")
    for e in ring_snapshot(stages, behind, turn):
        s, t = e["stage"], e["k_tile"]
        snap.add_patch(Rectangle((s, 0.5), 0.9, 1.4, color=STATE_COLOURS[e["state"]], alpha=0.6))
        snap.text(s + 0.45, 1.6, f"stage {s}", ha="center", fontsize=9, fontweight="bold")
        snap.text(s + 0.45, 1.25, "—" if t is None else f"k-tile {t}", ha="center", fontsize=9)
        snap.text(s + 0.45, 0.85, e["state"], ha="center", fontsize=8)
    snap.set(xlim=(-0.1, stages), ylim=(0.3, 2.3), title=f"Pass {turn} of the producer's loop: copy k-tile {turn}, "
             f"split k-tile {turn - behind}\n(SPLIT_BEHIND = {behind}; STAGES = {stages})")
    snap.title.set_fontsize(9)
    snap.axis("off")
    return fig


# -- the model ---------------------------------------------------------------------------------------------------------
def shared_bytes(step) -> dict:
    """Bytes through one block's shared memory per k-tile, by who moves them: the copy engine writes A's and B's
    tiles; the producer reads A and writes its big and small parts; each consumer warpgroup loads its columns of B
    into registers; each consumer's three wgmma a k-step read all of A's tile (big twice, small once)."""
    config = step.module.SEARCH_SPACE[0]
    c = step.module.layout(config)
    a = config.BLOCK_M * config.BLOCK_K * 4
    b = config.BLOCK_K * config.BLOCK_N * 4
    consumers = c["CONSUMERS"]
    parts = {"copies (A, B)": a + b, "split (read A, write big + small)": 3 * a, "B fragments": b,
             "wgmma reads of A": 3 * a * consumers}
    return {"parts": parts, "total": sum(parts.values())}


def model(step17, step18, run: dict) -> dict:
    """Lesson 18's prediction. Tensor core: a 3xTF32 k-tile is three TF32 k-tiles of work, so step 18 can run at most
    at step 17's TF32 speed / 3 (``ceiling``, and × cuBLAS SGEMM of the same run). Shared memory: the bytes of a
    k-tile (:func:`shared_bytes`) over the clocks the tensor core needs for it at its dense TF32 rate, against the
    SM's 128 bytes a clock."""
    c = ring_constants(step18)
    tensor = 3 * 2 * c["BLOCK_M"] * c["BLOCK_N"] * c["BLOCK_K"] / TF32_FLOP_PER_CLOCK
    shared = shared_bytes(step18)
    out = {"tensor_clocks": tensor, "shared_bytes": shared["total"],
           "shared_per_clock": shared["total"] / tensor, "shared_limit": SHARED_BYTES_PER_CLOCK, "sizes": {}}
    for size in BIG:
        r17, sgemm = find(run, step17.name, size), find(run, "cublas", size)
        if r17 and sgemm:
            out["sizes"][size] = {"step17": r17["tflops"], "ceiling": r17["tflops"] / 3,
                                  "ceiling_vs_sgemm": r17["tflops"] / 3 / sgemm["tflops"]}
    return out


# -- speed and verdict -------------------------------------------------------------------------------------------------
def speed_table(run: dict, rows=ROWS) -> MarkdownTable:
    """TFLOPS, × cuBLAS SGEMM and the SM clock (median, slowest launch) of each row at 4096³ and 8192³."""
    lines = ["| kernel | " + " | ".join(size_label(s) for s in BIG) + " |", "|:--|" + "--:|" * len(BIG)]
    for name, label in rows:
        cells = []
        for size in BIG:
            r, sgemm = find(run, name, size), find(run, "cublas", size)
            cells.append("—" if r is None else f"**{r['tflops']:.1f}** ({r['tflops'] / sgemm['tflops']:.2f}× SGEMM) "
                         f"· {r['sm_clock_mhz_median']:.0f} ({r['sm_clock_mhz_min']:.0f}) MHz")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return MarkdownTable("TFLOPS (× cuBLAS SGEMM, same run) · SM clock, median (slowest launch):\n\n"
                         + "\n".join(lines) + "\n\n" + caption(run))


def verdict(run: dict, step: str = "warp_specialized_3xtf32") -> dict | None:
    """``step`` against issue 24's 3xTF32 target (:data:`TARGET_HOPPER_3XTF32_VS_SGEMM` × cuBLAS SGEMM at 4096³ and
    8192³, same run): per size its TFLOPS, × SGEMM, × step 14 and × step 17's TF32 / 3, its SM clock and SGEMM's,
    whether met there; ``met`` at both. None without the step and SGEMM at both sizes."""
    out = {}
    for size in BIG:
        r, sgemm, s14, s17 = (find(run, n, size) for n in (step, "cublas", "warpgroup_mma", "warp_specialized"))
        if r is None or sgemm is None:
            return None
        vs = r["tflops"] / sgemm["tflops"]
        out[size] = {"tflops": r["tflops"], "vs_sgemm": vs, "met": vs >= TARGET_HOPPER_3XTF32_VS_SGEMM,
                     "vs_step14": r["tflops"] / s14["tflops"] if s14 else None,
                     "of_ceiling": 3 * r["tflops"] / s17["tflops"] if s17 else None,
                     "mhz": r["sm_clock_mhz_median"], "mhz_min": r["sm_clock_mhz_min"],
                     "sgemm_mhz": sgemm["sm_clock_mhz_median"]}
    return {"sizes": out, "target": TARGET_HOPPER_3XTF32_VS_SGEMM, "met": all(q["met"] for q in out.values())}


def builds_table(run: dict) -> MarkdownTable:
    """The experiment's builds: TFLOPS, × the step of the same run, and the SM clock at 4096³ and 8192³."""
    lines = ["| build | " + " | ".join(size_label(s) for s in BIG) + " |", "|:--|" + "--:|" * len(BIG)]
    for name, label in BUILDS:
        cells = []
        for size in BIG:
            r, step = find(run, name, size), find(run, "warp_specialized_3xtf32", size)
            cells.append("—" if r is None else f"**{r['tflops']:.1f}** ({r['tflops'] / step['tflops']:.2f}× the "
                         f"step) · {r['sm_clock_mhz_median']:.0f} MHz")
        lines.append(f"| `{name}`: {label} | " + " | ".join(cells) + " |")
    return MarkdownTable("TFLOPS (× the step, same run) · median SM clock:\n\n" + "\n".join(lines) + "\n\n"
                         + caption(run))


def build_ratios(run: dict) -> dict:
    """{build: {size: its TFLOPS / the step's}} in the experiment's run."""
    return {name: {size: find(run, name, size)["tflops"] / find(run, "warp_specialized_3xtf32", size)["tflops"]
                   for size in BIG} for name, _ in BUILDS}


def accuracy(run: dict, step: str = "warp_specialized_3xtf32") -> dict:
    """Step 18 in the FP32-accuracy run: (class, K) records that kept the contract of how many, the worst error /
    bound, and whether every special input gave SGEMM's inf/NaN pattern."""
    from .lesson_19 import specials_kept, verdicts

    v, s = verdicts(run)[step], specials_kept(run)[step]
    return {"kept": v["kept"], "of": v["of"], "worst": v["worst"], "worst_class": v["worst_class"],
            "worst_K": v["worst_K"], "specials_kept": s["kept"], "specials": sum(r["step"] == step
                                                                                 for r in run["specials"])}
