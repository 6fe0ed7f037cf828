"""Steps 16 and 17's timelines from a real GPU: when the producer issues each k-tile's copies, when each
warpgroup's data lands, when its ``wgmma`` are issued and when the previous k-tile's are done (issue: Hopper's own
GEMM design, "timelines from the GPU"). The kernels are debug copies of the steps with ``%clock64`` writes
(experiments/kernels/tma_pipeline_timeline.py, warp_specialized_timeline.py); lessons 16 and 17 draw the pictures
from the file this writes.

    python -m experiments.timeline [OUT.json]   # default: experiments/results/experiment-timeline-<gpu>.json

For each step: one launch at 4096³ after a warm-up launch, the first 2 blocks' first 48 k-tiles (of 128), and the
SM clock after it (to turn cycles into microseconds). The product is checked against TF32's tolerance.
"""

from __future__ import annotations

import json
import sys

from experiments import output_path, require_gpu

SIZE, BLOCKS, K_TILES = 4096, 2, 48


def record(debug, step_name: str, a, b, stream) -> dict:
    """One step's timeline: ``{"cycles_since_first_event": [block][role][k-tile][event], "sm_clock_mhz_after", …}``."""
    import numpy as np
    from numba import cuda

    from gemm_steps.harness.gpu_clock import sm_clock_mhz
    from gemm_steps.harness.verify import relative_error, tf32_tolerance
    from gemm_steps.steps import tma_pipeline

    a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
    c = cuda.device_array((SIZE, SIZE), np.float32)
    kernels = debug.build(tma_pipeline.SEARCH_SPACE[0], BLOCKS, K_TILES)
    timeline = cuda.to_device(np.zeros(BLOCKS * debug.ROLES * K_TILES * debug.EVENTS, np.uint64))
    for _ in range(2):  # the first compiles and warms up; the second is the one recorded
        debug.launch(kernels, a_dev, b_dev, c, timeline, stream)
    mhz = sm_clock_mhz(stream)
    cycles = timeline.copy_to_host().reshape(BLOCKS, debug.ROLES, K_TILES, debug.EVENTS).astype(np.int64)
    error = relative_error(c.copy_to_host(), a, b)
    assert error <= tf32_tolerance(SIZE), f"{step_name}'s timeline build computed a wrong product: {error:.1e}"
    start = cycles[cycles > 0].min()
    print(f"{step_name}: clock {mhz:.0f} MHz, error {error:.1e}")
    return {"sm_clock_mhz_after": mhz, "relative_error": float(error),
            "cycles_since_first_event": np.where(cycles > 0, cycles - start, -1).tolist()}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/timeline.py")
    import numpy as np
    from numba import cuda

    from gemm_steps.harness.environment import environment

    from experiments.kernels import tma_pipeline_timeline, warp_specialized_timeline

    out = output_path("timeline", argv[1] if len(argv) > 1 else None)
    rng = np.random.default_rng(SIZE)
    a = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
    b = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
    stream = cuda.default_stream()
    document = {
        "environment": environment(), "size": SIZE, "recorded_blocks": BLOCKS, "recorded_k_tiles": K_TILES,
        "roles": ["producer", "warpgroup 0", "warpgroup 1"],
        "events": {"producer": ["turns to k-tile t", "stage empty", "copies issued"],
                   "warpgroup": ["turns to k-tile u", "data landed", "wgmma issued", "k-tile u-1 done"]},
        "steps": {"tma_pipeline": record(tma_pipeline_timeline, "tma_pipeline", a, b, stream),
                  "warp_specialized": record(warp_specialized_timeline, "warp_specialized", a, b, stream)},
    }
    out.write_text(json.dumps(document))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
