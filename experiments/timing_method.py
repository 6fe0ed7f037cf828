"""Does the benchmark's timing include the host's launch? (issue: Hopper's own GEMM design; lessons 14–15's gaps)

    python -m experiments.timing_method [OUT.json]   # default: experiments/results/experiment-timing-method-<gpu>.json

The benchmark (``harness/bench.py``) poisons C, flushes the L2, records a start event, calls ``launch()`` and records
an end event. The two fills run on the GPU while the host prepares the launch; if the host takes longer than they
do, the GPU waits for the kernel *between the events*, and the time includes the host's work. Here, for step 15, the
overlap build (grouped order) and cuBLAS TF32 at 4096³ and 8192³, three timings of the same launches:

* ``bench``: the benchmark's own loop (``Timer.time``), median of 20;
* ``queued``: the same, with a kernel that spins 2 ms on the GPU enqueued before the fills, so that by the time the
  GPU reaches the start event the launch is long queued — no host time between the events;
* ``host_launch_us``: the host's time inside ``launch()`` (no synchronisation), median of 20.

Prediction, written before the run: Nsight Compute timed one launch of the overlap build at 8192³ at 3.29 ms at
1.68 GHz (``ncu-warpgroup-order-nvidia-h200.txt``) where the benchmark's median is 3.74 ms (294 TFLOPS). The fills
take ≈ 0.1 ms (376 MB at ≈ 4 TB/s); if the build's launch path costs the host ≈ 0.5 ms, ``bench`` exceeds
``queued`` by ≈ 0.4 ms for it, by much less for step 15's replayed plan and for cuBLAS, and ``queued`` lands near the
ncu time (within the clock's difference).

Measured (H200, ``experiment-timing-method-nvidia-h200.json``; ms, bench / queued): step 15 0.453 / 0.454 at 4096³,
3.690 / 3.735 at 8192³; the overlap build 0.420 / 0.420 and 3.307 / 3.323; cuBLAS TF32 0.353 / 0.339 and 2.829 /
2.650. The host spends 15–25 µs in our launches and 50–63 µs in cuBLAS's. The prediction was wrong for our kernels:
the fills hide their launch, and ``bench`` equals ``queued`` within 1.2 %. It was right in kind for cuBLAS: timed the
benchmark's way it is 4 % (4096³) and 7 % (8192³) slower than queued. And in this run, 20 launches per kernel in a
fresh process, the overlap build ran 332 TFLOPS at 8192³ and 327 at 4096³ — no drop — where the benchmark run of
``warpgroup_order_bench.py`` (five builds and cuBLAS back to back, up to 80 launches each) measured 294 and 322: the
drop is the power limit under sustained load (``clocks_under_load.py``), not the kernel, and which kernel runs
after which moves it.
"""

from __future__ import annotations

import json
import sys
import time

from experiments import output_path, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/timing_method.py")
    import numpy as np
    from numba import cuda

    from gemm_steps.harness.bench import Timer
    from gemm_steps.harness.environment import environment
    from gemm_steps.harness.gpu_clock import hold_gpu

    from experiments.clocks_under_load import drop_kernels, square_operands

    out = output_path("timing-method", argv[1] if len(argv) > 1 else None)
    stream = cuda.default_stream()
    timer = Timer(stream)
    kernels = drop_kernels()
    records = []
    for size in (4096, 8192):
        a, b, c = square_operands(size)
        for name, launch in kernels.items():
            def run():
                launch(a, b, c)
            bench = timer.time(run, warmup=3, repeats=20, max_seconds=0.0, c=c)
            queued, host = [], []
            start, end = cuda.event(), cuda.event()
            for _ in range(20):
                hold_gpu(stream, 2_000_000)  # the 2 ms head start (harness/gpu_clock.py's kernel)
                timer.poison(c)
                timer.flush_l2()
                start.record(stream)
                t0 = time.perf_counter()
                run()
                host.append((time.perf_counter() - t0) * 1e6)
                end.record(stream)
                end.synchronize()
                queued.append(cuda.event_elapsed_time(start, end))
            record = {"kernel": name, "size": size, "bench_ms": bench["median_ms"],
                      "queued_ms": float(np.median(queued)), "host_launch_us": float(np.median(host)),
                      "tflops_bench": 2 * size**3 / bench["median_ms"] / 1e9,
                      "tflops_queued": 2 * size**3 / float(np.median(queued)) / 1e9}
            print(json.dumps(record), flush=True)
            records.append(record)
    out.write_text(json.dumps({"environment": environment(), "records": records}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
