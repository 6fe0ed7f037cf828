"""Two one-thread kernels the benchmark runs between its timed launches (GPU only).

* :func:`hold_gpu` keeps the GPU busy for a while, so that the host's work in ``launch()`` (15–25 µs for a step,
  50–63 µs for cuBLAS TF32 on an H200) is done before the GPU reaches the start event: the events then time the
  GPU's work only. Without it, whatever the host spends beyond the poison and flush kernels lands between the
  events (cuBLAS TF32 measured 4–7 % slower so at 4096³–8192³: experiments/timing_method.py).
* :func:`sm_clock_mhz` counts ``%clock64`` cycles over 20 µs of ``%globaltimer``: the SM clock right after a launch.
  Under the board's power limit long runs at 8192³ end well below the maximum clock
  (experiments/clocks_under_load.py), so every record says what clock its launches ended at.
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


__all__ = ["hold_gpu", "sm_clock_mhz", "HOLD_NS", "PROBE_NS"]
