"""Is the drop from 4096³ to 8192³ the clock? For step 15, the overlap build in grouped order and cuBLAS TF32 at
both sizes (issue: Hopper's own GEMM design), two measurements:

* ``sustained``: the SM clock and power while the kernel runs back to back for 3 s, sampled every 50 ms by
  ``nvidia-smi`` in the runs below (since 2026-11-28 every 20 ms by NVML, the course's one sampler:
  ``gemm_steps.harness.gpu_clock.clock_under_load``) (the first third dropped);
* ``in_benchmark``: the clock right after each of 20 launches timed the way the benchmark times them (C poisoned,
  L2 flushed, one launch, wait): a one-thread probe kernel counts ``%clock64`` cycles over 20 µs of
  ``%globaltimer`` (``toolkit/timers.py``) — the SM clock the GPU was running at as the launch ended.

    python -m experiments.clocks_under_load [OUT.json]   # default: experiments/results/experiment-clocks-under-load-<gpu>.json

Prediction, written before the run: the benchmark times a median of 20 launches after warm-up; an 8192³ TF32 launch
runs ≈ 3.7 ms against ≈ 0.43 ms at 4096³, so the GPU spends far longer at full tensor-core load per timed batch. If
the board's 700 W limit pulls the SM clock below its 1,980 MHz maximum at 8192³ and less so at 4096³, the clock ratio
between the sizes matches the TFLOPS ratio (−9 % for every TMA build, −5 % for cuBLAS TF32 in the same run); if the
clock holds at 1,980 MHz at both sizes, the drop is not the clock.

Measured (H200, ``experiment-clocks-under-load-nvidia-h200.json``, sustained only; the probe came in the next run):
the board sat at its 700 W limit (≈ 692 W, event reason 0x4: software power cap) for every kernel at both sizes, at
a median SM clock of 1,530–1,710 MHz: step 15 1,710 → 1,590 MHz from 4096³ to 8192³, the overlap build 1,590 → 1,560,
cuBLAS TF32 1,575 → 1,530. With the probe (``experiment-clocks-under-load-nvidia-h200.json``, the next run): after
each of 20 benchmark-style launches the clock was back at 1,977–1,983 MHz at 4096³ for all three, while at 8192³
the slowest launches ended at 1,681–1,695 MHz (step 15, the overlap build) and 1,874 (cuBLAS), the medians at
1,979–1,981. Short, isolated launches run at the full clock; long stretches of them at 8192³ reach the 700 W limit.
"""

from __future__ import annotations

import json
import sys
import time

from experiments import output_path, require_gpu

#: What the sustained samples hold (the first runs asked nvidia-smi for these every 50 ms; since 2026-11-28 NVML is
#: asked for the same three every 20 ms, :func:`gemm_steps.harness.gpu_clock.clock_under_load`).
QUERY = "clocks.sm,power.draw,clocks_event_reasons.active"


def sample_while(run, seconds: float = 3.0) -> dict:
    """Run ``run()`` repeatedly for ``seconds`` while NVML samples the SM clock, power and event reasons
    (:func:`gemm_steps.harness.gpu_clock.clock_under_load`); the samples of the last two thirds (after the clock
    settled)."""
    from gemm_steps.harness.gpu_clock import clock_under_load

    load = clock_under_load(run, seconds, seconds / 3, launches_per_sync=8)
    return {"launches": load["launches"], "samples": load["samples"], "sm_clock_mhz_median": load["sm_clock_mhz"],
            "sm_clock_mhz_min": load["sm_clock_mhz_min"], "power_w_median": load["power_w"],
            "event_reasons": load["event_reasons"]}


def clock_after_each_launch(launch, c, repeats: int = 20) -> dict:
    """The benchmark's timing loop (poison C, flush L2, launch), with the probe after every launch."""
    import numpy as np
    from numba import cuda

    from gemm_steps.harness.gpu_clock import sm_clock_mhz
    from gemm_steps.harness.poison import fill

    flush = cuda.device_array(2 * cuda.get_current_device().L2_CACHE_SIZE // 4, np.float32)
    for _ in range(3):
        launch()
    cuda.synchronize()
    clocks = []
    for _ in range(repeats):
        fill(c, float("nan"), 0)
        fill(flush, 1.0, 0)
        launch()
        clocks.append(sm_clock_mhz(0))  # harness/gpu_clock.py's probe, as the benchmark reads it
    clocks.sort()
    return {"probe_mhz_median": clocks[len(clocks) // 2], "probe_mhz_min": clocks[0], "probe_mhz_max": clocks[-1]}


def drop_kernels() -> dict:
    """The launches the 8192³ drop was examined on (here and in experiments/timing_method.py): step 15, the overlap
    build in groups of 8 (now step 16's kernel), cuBLAS TF32."""
    import gemm_steps
    from gemm_steps.harness import cublas
    from gemm_steps.steps import tma_pipeline

    return {"warpgroup_tf32": gemm_steps.get_step("warpgroup_tf32").launch,
            "overlap_group8": tma_pipeline.build(tma_pipeline.SEARCH_SPACE[0], group_m=8).launch,
            "cublas_tf32": cublas.launch_cublas_tf32}


def square_operands(size: int) -> tuple:
    """Standard-normal size × size A and B (seeded by the size) and an empty C, on the device."""
    import numpy as np
    from numba import cuda

    rng = np.random.default_rng(size)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    return a, b, cuda.device_array((size, size), np.float32)


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/clocks_under_load.py")
    from numba import cuda

    from gemm_steps.harness.environment import environment

    out = output_path("clocks-under-load", argv[1] if len(argv) > 1 else None)
    kernels = drop_kernels()
    records = []
    for size in (4096, 8192):
        a, b, c = square_operands(size)
        for name, launch in kernels.items():
            launch(a, b, c)
            cuda.synchronize()
            time.sleep(2)  # let the board cool off from the last kernel's 3 s at full load
            record = {"kernel": name, "size": size, **clock_after_each_launch(lambda: launch(a, b, c), c),
                      **sample_while(lambda: launch(a, b, c))}
            print(json.dumps(record), flush=True)
            records.append(record)
    out.write_text(json.dumps({"environment": environment(), "query": QUERY, "records": records}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
