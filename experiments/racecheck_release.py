"""Which release of a warp's shared-memory reads does compute-sanitizer's racecheck accept, before other threads
overwrite that memory with ``cp.async``? (Step 17's THREAD_COPIES build, docs/sanitizer-report.md.)

Two control kernels of one block, 64 threads, on a GPU under ``compute-sanitizer --tool racecheck``:

* **RAW**: warp 0 fills 32 floats of shared memory with 4-byte ``cp.async``, waits for its group, fences the proxy and
  arrives on an mbarrier that expects 32 arrivals; warp 1 waits for that phase and reads them.
* **WAR** (``--war``): then warp 1, having read, meets at ``bar.warp.sync`` (``cuda.syncwarp()``) and its lane 0
  arrives on a second barrier (one arrival); warp 0 waits for it and overwrites the floats with ``cp.async``.
  ``--every-lane``: all 32 lanes of warp 1 arrive instead (the barrier expects 32), as the shipped build does.

Run on the H200 on 2026-11-29, this script as it is: RAW alone, 0 hazards; RAW and WAR (``--war``), one racecheck
error of 124 hazards between warp 1's reads and warp 0's second ``cp.async``; ``--war --every-lane``, 0 hazards. (A
first run, with the toolkit's own ``bar.warp.sync`` intrinsic in place of ``cuda.syncwarp()``, gave the same 0 and
124.) Every result was right in every run.

    compute-sanitizer --tool racecheck python -m experiments.racecheck_release [--war [--every-lane]]
"""

from __future__ import annotations

import sys

import numpy as np


def main(argv: list[str] = sys.argv) -> int:
    from experiments import require_gpu

    require_gpu("experiments/racecheck_release.py")
    from numba import cuda, float32, int32, uint32, uint64

    from gemm_steps.toolkit.mbarrier_ops import mbarrier_arrive, mbarrier_init, mbarrier_wait
    from gemm_steps.toolkit.tensor_core_ops import copy_async_at_or_zero, copy_async_commit, copy_async_wait
    from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async

    war, every_lane = "--war" in argv, "--every-lane" in argv

    @cuda.jit
    def control(src, out, war, every_lane):
        bar = cuda.shared.array(2, uint64)
        s = cuda.shared.array(32, float32)
        tid = cuda.threadIdx.x
        if tid == 0:
            mbarrier_init(bar, 0, 32)
            mbarrier_init(bar, 1, 32 if every_lane else 1)
        fence_proxy_async()
        cuda.syncthreads()
        if tid < 32:  # warp 0: fills s, and (WAR) fills it again once warp 1 has released it
            copy_async_at_or_zero(s, tid, src, uint32(tid), True)
            copy_async_commit()
            copy_async_wait(0)
            fence_proxy_async()
            mbarrier_arrive(bar, 0)
            if war:
                mbarrier_wait(bar, 1, uint32(0))
                copy_async_at_or_zero(s, tid, src, uint32(31 - tid), True)
                copy_async_commit()
                copy_async_wait(0)
        else:  # warp 1: reads s, and (WAR) releases it
            mbarrier_wait(bar, 0, uint32(0))
            out[tid - 32] = s[tid - 32]
            if war:
                if every_lane:
                    mbarrier_arrive(bar, 1)
                else:
                    cuda.syncwarp()
                    if tid == 32:
                        mbarrier_arrive(bar, 1)

    src = cuda.to_device(np.arange(32, dtype=np.float32))
    out = cuda.device_array(32, np.float32)
    control[1, 64](src, out, int32(war), int32(every_lane))
    right = bool((out.copy_to_host() == np.arange(32)).all())
    print(f"racecheck control (war={war}, every_lane={every_lane}): {'right' if right else 'WRONG'}", flush=True)
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
