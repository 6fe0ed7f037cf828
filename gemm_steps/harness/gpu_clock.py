"""Two one-thread kernels the benchmark runs between its timed launches (GPU only).

* :func:`hold_gpu` keeps the GPU busy for a while, so that the host's work in ``launch()`` (15–25 µs for a step,
  50–63 µs for cuBLAS TF32 on an H200) is done before the GPU reaches the start event: the events then time the
  GPU's work only. Without it, whatever the host spends beyond the poison and flush kernels lands between the
  events (cuBLAS TF32 measured 4–7 % slower so at 4096³–8192³: experiments/timing_method.py).
* :func:`sm_clock_mhz` counts ``%clock64`` cycles over 20 µs of ``%globaltimer``: the SM clock right after a launch.
  Under the board's power limit long runs at 8192³ end well below the maximum clock
  (experiments/clocks_under_load.py), so every record says what clock its launches ended at.
* :func:`clock_under_load` runs a launch back to back for seconds while NVML samples the SM clock, the board power
  and the clock's event reasons (why it is below its maximum): the clock a kernel *sustains*, as the reference
  kernels' script, the loop-instruction experiment and the clock experiment measure it; :func:`load_records` runs
  several kernels so, one after another on the same inputs (the reference script, the loop-instruction and step 18
  energy experiments).
"""

from __future__ import annotations

import functools

#: How long :func:`hold_gpu` keeps the GPU busy before each timed launch.
HOLD_NS = 500_000
#: The interval of the global timer over which :func:`sm_clock_mhz` counts cycles.
PROBE_NS = 20_000


@functools.lru_cache(maxsize=None)
def _kernels():
    import numpy as np
    from numba import cuda, float64

    from ..toolkit.timers import clock_cycles, global_timer

    @cuda.jit
    def spin(nanoseconds):
        start = global_timer()
        while global_timer() - start < nanoseconds:
            pass

    @cuda.jit
    def probe(out):
        t0, c0 = global_timer(), clock_cycles()
        t1 = global_timer()
        while t1 - t0 < PROBE_NS:
            t1 = global_timer()
        out[0] = float64(clock_cycles() - c0) * 1000.0 / float64(t1 - t0)

    return spin, probe, cuda.device_array(1, np.float64)


def hold_gpu(stream, nanoseconds: int = HOLD_NS) -> None:
    """Enqueue a kernel that keeps the GPU busy for ``nanoseconds`` (returns at once)."""
    spin, _, _ = _kernels()
    spin[1, 1, stream](nanoseconds)


def sm_clock_mhz(stream) -> float:
    """The SM clock in MHz, measured on the GPU after the work already in ``stream`` (waits for it)."""
    _, probe, out = _kernels()
    probe[1, 1, stream](out)
    return float(out.copy_to_host(stream=stream)[0])


#: How often :func:`clock_under_load` asks NVML (seconds).
SAMPLE_INTERVAL_S = 0.02


def clock_under_load(call, seconds: float = 3.0, settle_seconds: float = 1.0, launches_per_sync: int = 4) -> dict:
    """Run ``call()`` back to back for ``seconds`` (waiting for the GPU every ``launches_per_sync`` launches) while a
    thread asks NVML every :data:`SAMPLE_INTERVAL_S` for the SM clock, the board power and the clock event reasons;
    ``call`` compiled and run once before. Of the samples taken after ``settle_seconds`` (the clock settles): the
    median and lowest SM clock (MHz), the median power (W), the event reasons seen (NVML's bit masks, as
    ``nvidia-smi`` prints them: 0x4 is the software power cap), and how many launches ran in how many seconds."""
    import statistics
    import threading
    import time

    import pynvml
    from numba import cuda

    pynvml.nvmlInit()
    try:
        device = pynvml.nvmlDeviceGetHandleByIndex(cuda.get_current_device().id)
        reasons_of = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        samples: list[tuple[float, float, float, int]] = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                samples.append((time.perf_counter(), pynvml.nvmlDeviceGetClockInfo(device, pynvml.NVML_CLOCK_SM),
                                pynvml.nvmlDeviceGetPowerUsage(device) / 1000, reasons_of(device)))
                time.sleep(SAMPLE_INTERVAL_S)

        sampler = threading.Thread(target=sample)
        start = time.perf_counter()
        sampler.start()
        launches = 0
        try:
            while time.perf_counter() - start < seconds:
                for _ in range(launches_per_sync):
                    call()
                launches += launches_per_sync
                cuda.synchronize()
            elapsed = time.perf_counter() - start
        finally:
            stop.set()
            sampler.join()
    finally:
        pynvml.nvmlShutdown()
    settled = [s for s in samples if s[0] - start >= settle_seconds]
    if not settled:
        raise RuntimeError(f"no NVML sample after {settle_seconds} s of a {seconds} s load")
    return {"sm_clock_mhz": statistics.median(s[1] for s in settled), "sm_clock_mhz_min": min(s[1] for s in settled),
            "power_w": statistics.median(s[2] for s in settled), "samples": len(settled),
            "event_reasons": sorted({f"0x{s[3]:016x}" for s in settled}), "launches": launches, "seconds": elapsed}


def load_record(call, flops: float, seconds: float, settle_seconds: float) -> dict:
    """What the reference kernels' results and the loop-instruction experiment record of one kernel under load
    (:func:`clock_under_load`): the median SM clock and power, the samples, and the TFLOPS of the back-to-back loop
    (``flops`` a call; rough: no L2 flush between launches)."""
    load = clock_under_load(call, seconds, settle_seconds)
    return {"sm_clock_mhz": load["sm_clock_mhz"], "power_w": load["power_w"], "samples": load["samples"],
            "tflops_back_to_back": flops * load["launches"] / load["seconds"] / 1e12}


def load_records(calls_of, size: int, seconds: float, settle_seconds: float, each=None) -> dict:
    """:func:`load_record` of each of ``calls_of(a, b, c)``'s calls (``{name: call}``, in its order), one after
    another, on one set of size × size standard-normal inputs (seed 0) and one C; each call made once first (it may
    compile). ``each(name, record)``, if given, hears of each record as it is made (a long run's progress)."""
    import numpy as np
    from numba import cuda

    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), dtype=np.float32)
    found = {}
    for name, call in calls_of(a, b, c).items():
        call()
        cuda.synchronize()
        found[name] = load_record(call, 2 * size ** 3, seconds, settle_seconds)
        if each is not None:
            each(name, found[name])
    return found


__all__ = ["clock_under_load", "hold_gpu", "load_record", "load_records", "sm_clock_mhz", "HOLD_NS", "PROBE_NS",
           "SAMPLE_INTERVAL_S"]
