"""Two clocks a kernel can read, for timelines and for measuring the SM clock — each with a simulator twin.

========================  ==================================  ====================================================
function                  PTX → SASS                          counts
========================  ==================================  ====================================================
``global_timer()``        ``mov.u64 %rd, %globaltimer``       nanoseconds, one clock for the whole GPU (it ticks
                          → ``S2UR … SR_GLOBALTIMERLO/HI``      in steps of about a microsecond on an H100)
``clock_cycles()``        ``mov.u64 %rd, %clock64``           this SM's clock cycles (each SM has its own counter)
                          → ``CS2R … SR_CLOCKLO``
========================  ==================================  ====================================================

Cycles counted over an interval of ``%globaltimer`` give the SM clock the kernel actually ran at (MHz = cycles /
nanoseconds × 1000) — which under the board's power limit can be well below the clock ``nvidia-smi`` calls its
maximum. A debug build of a kernel records ``global_timer()`` per warp role into a buffer to draw its timeline.

On the simulator both read Python's ``time.perf_counter_ns()`` (as if the SM ran at 1 GHz): the values increase,
their differences mean nothing about a GPU.
"""

from __future__ import annotations

from .backend import SIMULATOR

if SIMULATOR:
    import time

    def global_timer():
        """Nanoseconds (simulator: ``time.perf_counter_ns()``)."""
        return time.perf_counter_ns()

    def clock_cycles():
        """Cycles of this SM's clock (simulator: ``time.perf_counter_ns()``, a 1 GHz clock)."""
        return time.perf_counter_ns()

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def _read(builder, register: str):
        function_type = ir.FunctionType(ir.IntType(64), [])
        return builder.call(ir.InlineAsm(function_type, f"mov.u64 $0, {register};", "=l", side_effect=True), [])

    @intrinsic
    def global_timer(typingctx):
        """``%globaltimer``: nanoseconds, from a clock shared by the whole GPU."""
        return types.uint64(), lambda context, builder, sig, args: _read(builder, "%globaltimer")

    @intrinsic
    def clock_cycles(typingctx):
        """``%clock64``: cycles of the SM this thread runs on."""
        return types.uint64(), lambda context, builder, sig, args: _read(builder, "%clock64")

__all__ = ["global_timer", "clock_cycles"]
