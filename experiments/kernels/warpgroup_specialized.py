"""Warp specialization: a producer warp that only asks the copy engine for tiles, two consumer warpgroups that only
run ``wgmma``. A candidate step (issue: Hopper's own GEMM design), measured by experiments/warpgroup_tma_bench.py.

Changed from experiments/kernels/warpgroup_tma.py (step 15 fed by TMA through full/empty mbarriers): who produces.

* There, thread 0 — a lane of warp 0, which belongs to consumer warpgroup 0 — issued each k-tile's two copies, and
  first waited on the stage's *empty* barrier for every warp to release it. ``wgmma`` is an instruction of the whole
  warpgroup, so warpgroup 0 could not start its next products while thread 0 waited for warpgroup 1, and loads ran
  only LOAD_AHEAD = 2 k-tiles ahead (3 would have thread 0 wait for its own warp): 238.6 / 233.9 TFLOPS at 4096³ /
  8192³ against step 15's 300.0 / 271.8 in the same run (experiments/results/experiment-warpgroup-tma-nvidia-h100.json).
* Here a ninth warp (threads 256–287, outside both warpgroups) is the producer. Its thread 256 walks the k-tiles:
  wait until the stage is empty, announce its bytes on the stage's full barrier, start the two copies. No consumer
  ever waits for anything but its own data, and the producer fills all STAGES = 4 stages before it first waits, so
  a stage is refilled as soon as every warp has released it: loads run up to 3 k-tiles ahead.

The consumers' loop is the TMA build's, without the producer's part. Fast kernel only (full tiles); the edge kernel
is step 15's. Compute capability 9.0 only; runs on the simulator.

Measured (H100, same runs as step 15): 308.0 / 275.7 TFLOPS at 4096³ / 8192³ against 304.9 / 271.7, then 304.1 /
277.9 against 299.5 / 268.5 with the uniform wait — 1.01–1.04× step 15, below the TMA build (1.05×) that it was
meant to beat. ptxas says why (nvJitLink 13.5, ``-v``): a ninth warp costs registers like a fourth warpgroup. With
launch bounds of 288 threads it caps every thread at 166 registers, as for 384; the consumers need ~170, so it
spills 16 bytes and "wgmma.mma_async instructions are serialized due to insufficient register resources" (C7512).
A cap of 224 instead of launch bounds compiled without spills but did not launch (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
``experiment-warpgroup-tma-uniform-wait``): the hardware, too, counts whole warpgroups. CUTLASS's answer is
``setmaxnreg`` — the producer warpgroup gives its registers to the consumers — and ptxas ignores it in the way Numba's
PTX is assembled ("to maintain compatibility across compilation units", C7504), so warp specialization waits for a way
to assemble the PTX as one whole program.
"""

from __future__ import annotations

# The kernel lives in the package (gemm_steps/course/ninth_warp.py) since deep dive 17 compiles it, and a lesson may
# not import experiments/: this module keeps its history and its name for the benches and tests that use it.
from gemm_steps.course.ninth_warp import (CONFIG, SIMULATOR_CONFIG, build, layout, ptx_kernels,
                                          warpgroup_specialized_kernel)

__all__ = ["build", "CONFIG", "SIMULATOR_CONFIG", "layout", "ptx_kernels", "warpgroup_specialized_kernel"]
