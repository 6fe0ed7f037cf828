"""Steps 16, 17 and 18's timelines from a real GPU: when the producer issues each k-tile's copies, when each
warpgroup's data lands, when its ``wgmma`` are issued and when the previous k-tile's are done (issue: Hopper's own
GEMM design, "timelines from the GPU"); for step 18 also when the producer warpgroup splits A and when a stage is
ready. The kernels are debug copies of the steps with ``%clock64`` writes (experiments/kernels/
tma_pipeline_timeline.py, warp_specialized_timeline.py, warp_specialized_3xtf32_timeline.py); lessons 16 and 17 draw
the pictures from the file this writes.

    python -m experiments.timeline [OUT.json]          # steps 16, 17 and 18
    python -m experiments.timeline --only warp_specialized_3xtf32 [OUT.json]      # step 18 alone
    python -m experiments.timeline --only pingpong_specialized [OUT.json]   # the ping-pong build (an experiment)
    python -m experiments.timeline --only warp_specialized --only cluster_multicast [OUT.json]   # steps 17 and 20

writes experiments/results/experiment-timeline-<gpu>.json (step 18 alone: experiment-timeline-warp-specialized-3xtf32-
<gpu>.json), or OUT.json.

For each step: one launch at 4096³ after a warm-up launch, the first 2 blocks' first 48 k-tiles (of 128), and the
SM clock after it (to turn cycles into microseconds). The product is checked against the step's tolerance (TF32's
for steps 16 and 17, float32's for step 18). For step 18 a summary (:func:`summary_3xtf32`) is printed and stored
with the run: per role the median cycles a k-tile and where they go, the consumers' wait for a ready stage, their
serial bookkeeping from ``wgmma.wait_group 0`` to the next commit, and whether the two consumer warpgroups'
``wgmma`` are in flight at the same time.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

import numpy as np

from experiments import output_path, require_gpu

SIZE, BLOCKS, K_TILES = 4096, 2, 48
#: A step's debug copy, per step: experiments/kernels/<module>.py.
DEBUG_MODULES = {"tma_pipeline": "tma_pipeline_timeline", "warp_specialized": "warp_specialized_timeline",
                 "warp_specialized_3xtf32": "warp_specialized_3xtf32_timeline",
                 "pingpong_specialized": "pingpong_specialized_timeline",
                 "cluster_multicast": "cluster_multicast_timeline"}
#: What a run without ``--only`` records: the steps (the ping-pong build, experiments/kernels/
#: pingpong_specialized.py, only when asked; its debug module says its own tiles, arithmetic, k-tiles and summary).
DEFAULT_NAMES = ["tma_pipeline", "warp_specialized", "warp_specialized_3xtf32"]
#: What the events of steps 16 and 17's builds are (step 18's builds say theirs: ``EVENT_NAMES``).
EVENTS_16_17 = {"producer": ["turns to k-tile t", "stage empty", "copies issued"],
                "warpgroup": ["turns to k-tile u", "data landed", "wgmma issued", "k-tile u-1 done"]}
#: The first k-tiles, left out of the summary's medians (the ring filling, every SM starting at once).
WARM_UP_K_TILES = 8


def record(debug, step_name: str, a, b, stream, config=None, blocks: int = BLOCKS, k_tiles: int = K_TILES) -> dict:
    """One step's timeline: ``{"cycles_since_first_event": [block][role][k-tile][event], "sm_clock_mhz_after", …}``
    (-1 where nothing was written). ``config``: the step's GPU tiles (``SEARCH_SPACE[0]``) unless given; A·B must be
    whole tiles of it."""
    from numba import cuda

    import gemm_steps
    from gemm_steps.harness.gpu_clock import sm_clock_mhz
    from gemm_steps.harness.verify import relative_error, tolerance_of

    step = debug if hasattr(debug, "ARITHMETIC") else gemm_steps.get_step(step_name).module  # an experiment's build
    config = config or step.SEARCH_SPACE[0]
    m, k = a.shape
    n = b.shape[1]
    a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
    c = cuda.device_array((m, n), np.float32)
    kernels = debug.build(config, blocks, k_tiles)
    timeline = cuda.to_device(np.zeros(blocks * debug.ROLES * k_tiles * debug.EVENTS, np.uint64))
    for _ in range(2):  # the first compiles and warms up; the second is the one recorded
        debug.launch(kernels, a_dev, b_dev, c, timeline, stream)
    mhz = sm_clock_mhz(stream)
    cycles = timeline.copy_to_host().reshape(blocks, debug.ROLES, k_tiles, debug.EVENTS).astype(np.int64)
    error = relative_error(c.copy_to_host(), a, b)
    tolerance = tolerance_of(step.ARITHMETIC, k)
    assert error <= tolerance, f"{step_name}'s timeline build computed a wrong product: {error:.1e} > {tolerance:.1e}"
    start = cycles[cycles > 0].min()
    print(f"{step_name}: clock {mhz:.0f} MHz, error {error:.1e}")
    return {"sm_clock_mhz_after": mhz, "relative_error": float(error), "recorded_k_tiles": k_tiles,
            "events": getattr(debug, "EVENT_NAMES", EVENTS_16_17),
            "cycles_since_first_event": np.where(cycles > 0, cycles - start, -1).tolist()}


# -- step 18's summary ---------------------------------------------------------------------------------------------
def _median(x) -> float | None:
    """The median of the finite values of ``x``; None where there are none (JSON has no NaN)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.median(x)) if x.size else None


def _mean(x) -> float | None:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.mean(x)) if x.size else None


def _coverage(windows: list[np.ndarray], start: float, end: float) -> list[float]:
    """Of the cycles from ``start`` to ``end``: the share during which 0, 1, 2, … of the sets of ``windows`` (each an
    array of [open, close] rows) have a window open."""
    edges = []
    for w in windows:
        for a, b in w:
            a, b = max(a, start), min(b, end)
            if b > a:
                edges += [(a, 1), (b, -1)]
    edges.sort()
    shares = np.zeros(len(windows) + 1)
    open_, at = 0, start
    for x, step in edges:
        shares[min(open_, len(windows))] += x - at
        open_, at = open_ + step, x
    shares[0] += end - at
    return (shares / (end - start)).tolist() if end > start else [None] * (len(windows) + 1)


def summary_3xtf32(cycles, warm_up: int = WARM_UP_K_TILES) -> dict:
    """Step 18's timeline in numbers, per recorded block, over its k-tiles from ``warm_up`` on (cycles; medians):

    * ``producer`` (its first thread): ``split_period`` and ``copy_period`` (turn to turn of its split starts and of
      its copies issued), ``wait_full`` (for a k-tile's bytes before splitting it), ``split`` (its share of A: from
      the bytes landed to its arrival on ready), ``wait_empty``, ``issue`` (the two copies), ``landed_after_issue``
      (copies issued → the split's wait for them ended);
    * per consumer warpgroup: ``period`` (commit to commit), ``wait_wgmma`` (in ``wgmma.wait_group 0`` for the
      previous k-tile), ``add_release`` (the float32 adds into the running sum and the release of the stage),
      ``wait_ready`` (median and ``wait_ready_mean``), ``fragments`` (B's fragments loaded and split), ``issue``
      (fence, 12 wgmma, commit), ``bookkeeping`` (the serial stretch from ``wait_group 0`` done to the next commit,
      the wait for ready included) and ``bookkeeping_without_ready_wait``, ``in_flight`` (commit → that k-tile's
      ``wait_group 0`` done), ``split_slack`` (the consumer's turn to wait for ready minus the producer's first
      thread's arrival on it: positive, that thread had split its share before it was asked for);
    * ``consumers`` (where both consumer warpgroups recorded): ``commit_gap`` (warpgroup 1's commit of a k-tile minus
      warpgroup 0's, median and median of its size), ``phase`` (that gap over the period: near 0, lockstep; near
      0.5, alternating), and the shares of the cycles from the first to the last window during which both, one or
      neither of the warpgroups has ``wgmma`` in flight (a window: from its fragments split — the first wgmma is
      issued next — to that k-tile's ``wait_group 0`` done); ``windows_overlap``: both were ever in flight at once.

    ``cycles``: ``[block][role][k-tile][event]`` as :func:`record` stores it (-1: not written)."""
    e = np.asarray(cycles, dtype=float)
    e[e < 0] = np.nan
    k_tiles = e.shape[2]
    warm_up = min(warm_up, k_tiles // 4)
    s = slice(warm_up, None)
    blocks = []
    for block in e:
        p = block[0]
        out = {"producer": {
            "split_period": _median(np.diff(p[s, 1])), "copy_period": _median(np.diff(p[s, 5])),
            "wait_full": _median(p[s, 1] - p[s, 0]), "split": _median(p[s, 2] - p[s, 1]),
            "wait_empty": _median(p[s, 4] - p[s, 3]), "issue": _median(p[s, 5] - p[s, 4]),
            "landed_after_issue": _median(p[s, 1] - p[s, 5])}, "warpgroups": []}
        consumers = [x for x in block[1:] if np.isfinite(x).any()]
        for x in consumers:
            bookkeeping = x[s, 5] - x[s, 1]
            out["warpgroups"].append({
                "period": _median(np.diff(x[s, 5])), "wait_wgmma": _median(x[s, 1] - x[s, 0]),
                "add_release": _median(x[s, 2] - x[s, 1]), "wait_ready": _median(x[s, 3] - x[s, 2]),
                "wait_ready_mean": _mean(x[s, 3] - x[s, 2]), "fragments": _median(x[s, 4] - x[s, 3]),
                "issue": _median(x[s, 5] - x[s, 4]), "bookkeeping": _median(bookkeeping),
                "bookkeeping_without_ready_wait": _median(bookkeeping - (x[s, 3] - x[s, 2])),
                "in_flight": _median(x[warm_up + 1:, 1] - x[warm_up:-1, 5]),
                "split_slack": _median(x[s, 2] - p[s, 2])})
        if len(consumers) == 2:
            w0, w1 = consumers
            gap = w1[s, 5] - w0[s, 5]
            period = _median(np.diff(w0[s, 5]))
            windows = [np.stack([x[warm_up:-1, 4], x[warm_up + 1:, 1]], axis=1) for x in consumers]
            windows = [w[np.isfinite(w).all(axis=1)] for w in windows]
            start = max(w[0, 0] for w in windows) if all(len(w) for w in windows) else np.nan
            end = min(w[-1, 1] for w in windows) if all(len(w) for w in windows) else np.nan
            neither, one, both = (_coverage(windows, start, end) if np.isfinite(start) and np.isfinite(end)
                                  else [None] * 3)
            out["consumers"] = {
                "commit_gap": _median(gap), "commit_gap_size": _median(np.abs(gap)),
                "phase": _median(np.mod(gap, period) / period) if period else None,
                "share_both_in_flight": both, "share_one_in_flight": one, "share_neither_in_flight": neither,
                "windows_overlap": bool(both) if both is not None else None}
        blocks.append(out)
    return {"k_tiles_summarised": [warm_up, k_tiles], "blocks": blocks}


def print_summary_3xtf32(summary: dict, mhz: float) -> None:
    """The summary's numbers, a few lines per block."""
    def f(x):
        return "—" if x is None else f"{x:,.0f}"

    lo, hi = summary["k_tiles_summarised"]
    print(f"step 18, k-tiles {lo}–{hi - 1}, median cycles (clock {mhz:.0f} MHz):")
    for b, block in enumerate(summary["blocks"]):
        p = block["producer"]
        print(f"  block {b} producer: split period {f(p['split_period'])}, copy period {f(p['copy_period'])}; "
              f"waits for bytes {f(p['wait_full'])}, splits {f(p['split'])}, waits for empty {f(p['wait_empty'])}, "
              f"issues {f(p['issue'])}; bytes landed {f(p['landed_after_issue'])} after issue")
        for w, x in enumerate(block["warpgroups"]):
            print(f"  block {b} warpgroup {w}: period {f(x['period'])}; wait_group 0 {f(x['wait_wgmma'])}, "
                  f"add+release {f(x['add_release'])}, waits for ready {f(x['wait_ready'])} "
                  f"(mean {f(x['wait_ready_mean'])}), fragments {f(x['fragments'])}, issue {f(x['issue'])}; "
                  f"bookkeeping {f(x['bookkeeping'])} ({f(x['bookkeeping_without_ready_wait'])} without the ready "
                  f"wait); wgmma in flight {f(x['in_flight'])}; split ready {f(x['split_slack'])} before asked")
        if "consumers" in block:
            c = block["consumers"]

            def pct(x):
                return "—" if x is None else f"{100 * x:.0f} %"

            phase = "—" if c["phase"] is None else f"{c['phase']:.2f}"
            print(f"  block {b} consumers: warpgroup 1 commits {f(c['commit_gap'])} after warpgroup 0 (size "
                  f"{f(c['commit_gap_size'])}, phase {phase} of a period); wgmma in flight: both "
                  f"{pct(c['share_both_in_flight'])}, one {pct(c['share_one_in_flight'])}, neither "
                  f"{pct(c['share_neither_in_flight'])}")


def collect(names, a, b, stream, blocks: int = BLOCKS, k_tiles: int = K_TILES, configs: dict | None = None) -> dict:
    """The run's document: each named step's timeline (``record``), with step 18's summary."""
    from gemm_steps.harness.environment import environment

    steps = {}
    for name in names:
        debug = importlib.import_module(f"experiments.kernels.{DEBUG_MODULES[name]}")
        steps[name] = record(debug, name, a, b, stream, (configs or {}).get(name), blocks,
                             getattr(debug, "RECORDED_K_TILES", k_tiles))
        if name == "warp_specialized_3xtf32":
            steps[name]["summary"] = summary_3xtf32(steps[name]["cycles_since_first_event"])
            print_summary_3xtf32(steps[name]["summary"], steps[name]["sm_clock_mhz_after"])
        elif hasattr(debug, "summary"):  # an experiment's build summarises its own events
            steps[name]["summary"] = debug.summary(steps[name]["cycles_since_first_event"])
            print(f"{name}: {json.dumps(steps[name]['summary'])}")
    m, k = a.shape
    return {"environment": environment(), "size": m if a.shape == b.shape == (m, m) else [m, b.shape[1], k],
            "recorded_blocks": blocks, "recorded_k_tiles": k_tiles,
            "roles": ["producer", "warpgroup 0", "warpgroup 1"], "events": EVENTS_16_17, "steps": steps}


def main(argv: list[str] = sys.argv) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.timeline", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", help="where to write the JSON (default: experiments/results/…)")
    parser.add_argument("--only", action="append", choices=list(DEBUG_MODULES), metavar="STEP",
                        help=f"record this step only (repeat for more; of {', '.join(DEBUG_MODULES)})")
    args = parser.parse_args(argv[1:])
    require_gpu("experiments/timeline.py")
    from numba import cuda

    names = args.only or DEFAULT_NAMES
    topic = "timeline" if not args.only else "timeline-" + "-".join(n.replace("_", "-") for n in names)
    out = output_path(topic, args.out)
    rng = np.random.default_rng(SIZE)
    a = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
    b = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
    document = collect(names, a, b, cuda.default_stream(), BLOCKS, K_TILES)
    out.write_text(json.dumps(document, allow_nan=False))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
