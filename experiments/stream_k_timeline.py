"""Where the time of step 21's stream-K goes: the timeline build (experiments/kernels/
warp_specialized_stream_k_timeline.py) at three shapes it splits and at 4096³ with every tile split, one launch each
after five warm-up launches (no L2 flush: a timeline, not a benchmark). Prints the phases of a few blocks; the JSON
keeps every block's records (code, k-tiles, cycles since its start).

    python -m experiments.stream_k_timeline OUT.json

Run once on an H200 (experiment-stream-k-timeline-nvidia-h200.json), no prediction written: it was run to find
where the first run's stream-K lost time against its model. What it showed: the partial hand-over ≈ 5.6–9.4 k cycles
(store, fence, flag), a wait + read of one partial ≈ 3.5–9 k cycles, a store of C ≈ 6 k cycles (11 k in the partial
build), a k-tile ≈ 1,200–1,500 cycles; at 1152×3840×2048 blocks with the same work ended 64.7–83.8 µs after the
start (the k-tiles of some SMs ~15 % slower), at 1024×1024×8192 the finishing blocks read four partial tiles one
after another at the end.
"""

import json
import sys

import numpy as np
from numba import cuda

from experiments import require_gpu
from experiments.kernels import warp_specialized_stream_k_timeline as sk_tl
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.steps.warp_specialized_stream_k import all_stream_k


def main(argv=sys.argv):
    require_gpu("experiments/stream_k_timeline.py")
    out = argv[1]
    res = {}
    for (m, n, k) in [(1152, 3840, 2048), (1024, 1024, 8192), (2304, 2048, 8192), (4096, 4096, 4096)]:
        split = all_stream_k if (m, n, k) == (4096, 4096, 4096) else stream_k_split
        built = sk_tl.build(split=split)
        times = cuda.to_device(np.zeros(132 * 64, np.uint64))
        built.times = times
        if built.partial is not None:
            built.partial.times = times
        rng = np.random.default_rng(0)
        a = cuda.to_device(rng.standard_normal((m, k)).astype(np.float32))
        b = cuda.to_device(rng.standard_normal((k, n)).astype(np.float32))
        c = cuda.device_array((m, n), np.float32)
        for rep in range(5):
            built.launch(a, b, c)
        cuda.synchronize()
        start, end = cuda.event(), cuda.event()
        start.record()
        built.launch(a, b, c)
        end.record()
        end.synchronize()
        ms = cuda.event_elapsed_time(start, end)
        t = times.copy_to_host().reshape(132, 64)
        ref = (a.copy_to_host().astype(np.float64) @ b.copy_to_host().astype(np.float64))
        err = float(np.abs(c.copy_to_host() - ref).max() / np.abs(ref).max())
        blocks = []
        for blk in range(132):
            row = t[blk]
            ev = []
            for x in row[2:60]:
                x = int(x)
                if x == 0: break
                ev.append([x >> 56, (x >> 40) & 0xffff, (x & ((1 << 40) - 1)) - (int(row[1]) & ((1 << 40) - 1))])
            blocks.append({"start_ns": int(row[0]), "end_ns": int(row[63]), "events": ev})
        g0 = min(bb["start_ns"] for bb in blocks)
        res[f"{m}x{n}x{k}"] = {"ms": ms, "err": err, "blocks": blocks}
        print(m, n, k, f"{ms*1e3:.1f} us err {err:.1e}", "start spread", max(bb["start_ns"] for bb in blocks) - g0, "end max", max(bb["end_ns"] for bb in blocks) - g0, flush=True)
        for blk in (0, 1, 2, 60, 131):
            bb = blocks[blk]
            print("  block", blk, "start", bb["start_ns"] - g0, "end", bb["end_ns"] - g0, bb["events"])
    json.dump(res, open(out, "w"))


if __name__ == "__main__":
    main()
