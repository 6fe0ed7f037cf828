"""The %clock64 timelines of experiments/timeline.py, read: one reader of a timeline file's events (every step's
build writes ``cycles_since_first_event[block][role][k-tile][event]``), and for steps 16 and 17 — whose builds write
the same events — the medians lessons 16, 17 and 19 and deep dive 17 compare and the Gantt chart lessons 16 and 17
show. Lessons 18 and 19 read their own steps' timelines with :func:`events`. Numbers and figures only: the words are
the lessons'.
"""

from __future__ import annotations

import numpy as np

from gemm_steps.harness import results_files

from .timings import load_run

#: Steps 16 and 17's timelines from one H200 run (experiments/timeline.py).
TIMELINE_RUN = results_files.EXPERIMENT_TIMELINE_NVIDIA_H200


def timeline_run() -> dict | None:
    return load_run(TIMELINE_RUN)


# -- reading a timeline ------------------------------------------------------------------------------------------------
#: The k-tiles the medians skip: the ring filling at the start.
WARM_UP_K_TILES = 8


def events(timeline: dict, step: str, block: int | None = None) -> np.ndarray:
    """Clocks since the first event of ``step``'s build in ``timeline``, as floats, NaN where nothing was written
    (steps 16 and 17: the producer's fourth event): ``[block, role, k-tile, event]``, or with ``block``
    ``[role, k-tile, event]`` of that recorded block. The roles and events are the build's (steps 16 and 17: role 0
    the producer, 1 and 2 the consumer warpgroups; lessons 18 and 19 say what their builds write)."""
    cycles = timeline["steps"][step]["cycles_since_first_event"]
    cycles = np.array(cycles if block is None else cycles[block], dtype=float)
    cycles[cycles < 0] = np.nan
    return cycles


def timeline_medians(timeline: dict, step: str, block: int = 0) -> dict:
    """Medians over one recorded block's k-tiles after :data:`WARM_UP_K_TILES`: the producer's wait for an empty
    stage and its issuing of the copies; per warpgroup its period (turn to turn), its wait for data, its fragment
    loads and wgmma issue, its wait for the previous k-tile's wgmma, the rest (release, loop, the recording's
    stores), how long before its turn to a k-tile the producer had issued that k-tile's copies (``lead``), from
    issue to the end of its wait for data (``copy``); ``period`` (the warpgroups' mean), ``landing`` (``copy`` of
    the warpgroup that waited longest for data: there the wait ended as the bytes landed), ``behind`` (k-tiles warpgroup 0 runs behind
    warpgroup 1), the clock, and the TFLOPS the period implies on every SM."""
    e = events(timeline, step, block)
    steady = slice(WARM_UP_K_TILES, None)
    producer = e[0]
    out = {"producer": {"wait_empty": float(np.nanmedian(producer[steady, 1] - producer[steady, 0])),
                        "issue": float(np.nanmedian(producer[steady, 2] - producer[steady, 1]))},
           "warpgroups": []}
    for w in (1, 2):
        x = e[w]
        out["warpgroups"].append({
            "period": float(np.nanmedian(np.diff(x[steady, 0]))),
            "wait_data": float(np.nanmedian(x[steady, 1] - x[steady, 0])),
            "issue": float(np.nanmedian(x[steady, 2] - x[steady, 1])),
            "wait_previous": float(np.nanmedian(x[steady, 3] - x[steady, 2])),
            "rest": float(np.nanmedian(x[WARM_UP_K_TILES + 1:, 0] - x[WARM_UP_K_TILES:-1, 3])),
            "lead": float(np.nanmedian(x[steady, 0] - producer[steady, 2])),
            "copy": float(np.nanmedian(x[steady, 1] - producer[steady, 2]))})
    out["period"] = float(np.mean([w["period"] for w in out["warpgroups"]]))
    # A wait for data ends when the bytes land only for a warpgroup that did wait: take the one that waited longest.
    out["landing"] = max(out["warpgroups"], key=lambda w: w["wait_data"])["copy"]
    out["behind"] = float(np.nanmedian(e[1][steady, 0] - e[2][steady, 0])) / out["period"]
    mhz = timeline["steps"][step]["sm_clock_mhz_after"]
    out["mhz"] = mhz
    return out


# -- steps 16 and 17's Gantt chart -------------------------------------------------------------------------------------
#: The timeline's segments: (label, colour), by role.
PRODUCER_SEGMENTS = [("waits for an empty stage", "0.75"), ("issues the copies", "tab:orange")]
CONSUMER_SEGMENTS = [("waits for data", "tab:red"), ("loads fragments, issues wgmma", "tab:blue"),
                     ("waits for the previous k-tile's wgmma", "tab:green"), ("the rest (release, loop, recording)",
                                                                          "0.9")]


def timeline_figure(timeline: dict, step_names, block: int = 0, first: int = 16, k_tiles: int = 4):
    """A Gantt chart per step (side by side, the same span of clocks): from the first warpgroup's turn to k-tile
    ``first`` of one recorded block, for as long as the slowest of the steps takes for ``k_tiles`` k-tiles, the
    producer's waits for an empty stage and its copies, and per warpgroup its waits for data, its fragment loads and
    wgmma issue, its waits for the previous k-tile's wgmma, and the rest; each bar labelled with its k-tile."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    from .plots import span_bar  # here: reading a timeline loads no pyplot

    names = list(step_names)
    starts = {name: np.nanmin(events(timeline, name, block)[1:, first, 0]) for name in names}
    span = max(np.nanmax(events(timeline, name, block)[1:, first + k_tiles, 0]) - starts[name] for name in names)
    fig = Figure(figsize=(7 * len(names), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(names)))
    for ax, name in zip(axes, names):
        e = events(timeline, name, block) - starts[name]

        def bar(y, a, b, colour, label_at=None, text=None):
            if span_bar(ax, y, a, b, colour, span):
                if text is not None and 0 <= label_at < span * 0.98:
                    ax.text(label_at, y + 0.36, text, fontsize=6, ha="left")

        p = e[0]
        for t in range(p.shape[0]):
            bar(2, p[t, 0], p[t, 1], PRODUCER_SEGMENTS[0][1])
            bar(2, p[t, 1], p[t, 2], PRODUCER_SEGMENTS[1][1], p[t, 1], str(t))
        for w in (1, 2):
            x = e[w]
            for u in range(x.shape[0]):
                edges = [x[u, 0], x[u, 1], x[u, 2], x[u, 3], x[u + 1, 0] if u + 1 < x.shape[0] else np.nan]
                for i, ((_, colour), a, b) in enumerate(zip(CONSUMER_SEGMENTS, edges, edges[1:])):
                    bar(2 - w, a, b, colour, x[u, 0], str(u) if i == 0 else None)
        ax.set_yticks([2, 1, 0], ["producer", "warpgroup 0", "warpgroup 1"])
        ax.set_xlim(0, span)
        mhz = timeline["steps"][name]["sm_clock_mhz_after"]
        ax.set(xlabel=f"SM clocks since a warpgroup turned to k-tile {first}",
               title=f"{name}: block {block}, numbers are k-tiles; SM clock {mhz:.0f} MHz")
        ax.title.set_fontsize(9)
    handles = [Patch(color=c, label=f"producer {l}") for l, c in PRODUCER_SEGMENTS]
    handles += [Patch(color=c, label=f"warpgroup {l}") for l, c in CONSUMER_SEGMENTS]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    env = timeline["environment"]
    fig.suptitle(f"%clock64 per role and k-tile, one launch at {timeline['size']}³: {env.get('gpu')}, "
                 f"{str(env.get('date'))[:10]}", fontsize=9)
    return fig
