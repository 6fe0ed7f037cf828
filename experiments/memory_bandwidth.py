"""How fast each level of the memory hierarchy is on this GPU, measured with small Numba kernels (lesson 0's GPU model).

    python -m experiments.memory_bandwidth [OUT.json]

* DRAM: a copy of 1 GiB (read + write, bytes counted both ways), far larger than L2;
* L2: repeated reads of a 16 MiB buffer (fits in L2, not in L1);
* shared memory: every warp reading 32 floats per instruction from shared memory, once with the 32 lanes on 32
  different banks (conflict-free) and once with all 32 lanes on one bank (a 32-way bank conflict).
CUDA events, 3 warm-ups, median of 20. The kernels are written for clarity, not to beat cudaMemcpy: a number here is
"what a plain Numba kernel gets", a lower bound on the hardware's peak.
"""

from __future__ import annotations

import json
import sys

import numpy as np

import gemm_steps
from gemm_steps.harness import environment

from experiments import output_path

SHARED_WORDS = 8192  # 32 KiB of floats
REPEATS = 20


def kernels():
    from numba import cuda, float32, uint32

    @cuda.jit
    def copy(src, dst):
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < src.size:
            dst[i] = src[i]
            i += stride

    @cuda.jit
    def read_repeatedly(src, passes, out):
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        acc = float32(0.0)
        for _ in range(passes):
            i = start
            while i < src.size:
                acc += src[i]
                i += stride
        if acc == float32(-1.0):  # never true for our data; keeps the loads from being optimised away
            out[0] = acc

    @cuda.jit
    def read_shared(lane_stride, reads, out):
        tile = cuda.shared.array(SHARED_WORDS, float32)
        for j in range(cuda.threadIdx.x, SHARED_WORDS, cuda.blockDim.x):
            tile[j] = float32(j % 7)
        cuda.syncthreads()
        mask = uint32(SHARED_WORDS - 1)
        base = uint32(cuda.threadIdx.x % 32) * uint32(lane_stride)
        step = uint32(32) if lane_stride == 1 else uint32(1)  # stride 1: lane L reads words L, L+32, … (bank L);
        acc0 = float32(0.0)  # stride 32: lane L reads words 32·L, 32·L+1, … (all lanes in one bank at a time)
        acc1 = float32(0.0)
        acc2 = float32(0.0)
        acc3 = float32(0.0)
        word = base
        for _ in range(uint32(reads) // uint32(4)):  # uint32 index math: no signed-index checks (lesson 5)
            acc0 += tile[word & mask]
            acc1 += tile[(word + step) & mask]
            acc2 += tile[(word + uint32(2) * step) & mask]
            acc3 += tile[(word + uint32(3) * step) & mask]
            word += uint32(4) * step
        if acc0 + acc1 + acc2 + acc3 == float32(-1.0):
            out[0] = acc0

    return copy, read_repeatedly, read_shared


def time_ms(launch) -> float:
    from numba import cuda

    for _ in range(3):
        launch()
    cuda.synchronize()
    start, end = cuda.event(), cuda.event()
    times = []
    for _ in range(REPEATS):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return float(np.median(times))


def main(argv: list[str]) -> int:
    if gemm_steps.SIMULATOR:
        print("memory_bandwidth needs a GPU", file=sys.stderr)
        return 2
    from numba import cuda

    copy, read_repeatedly, read_shared = kernels()
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    out = cuda.device_array(1, dtype=np.float32)
    results = {}

    big = cuda.to_device(np.random.default_rng(0).random(2**28, dtype=np.float32))  # 1 GiB
    dst = cuda.device_array_like(big)
    ms = time_ms(lambda: copy[sms * 16, 256](big, dst))
    results["dram_copy_tbs"] = 2 * big.nbytes / (ms * 1e-3) / 1e12

    small = cuda.to_device(np.random.default_rng(1).random(2**22, dtype=np.float32))  # 16 MiB
    passes = 20
    ms = time_ms(lambda: read_repeatedly[sms * 16, 256](small, passes, out))
    results["l2_read_tbs"] = passes * small.nbytes / (ms * 1e-3) / 1e12

    reads = 4096
    blocks, threads = sms * 8, 256
    for label, stride in (("shared_conflict_free_tbs", 1), ("shared_32_way_conflict_tbs", 32)):
        ms = time_ms(lambda: read_shared[blocks, threads](stride, reads, out))
        results[label] = blocks * threads * reads * 4 / (ms * 1e-3) / 1e12

    env = environment.environment()
    # Shaped like the course's results files (schema 1, records), so the results finder picks it up.
    document = {"schema": 1, "environment": env, "method": __doc__, "results": results,
                "records": [{"step": f"memory:{key}", "tbs": value} for key, value in results.items()]}
    path = output_path("memory-bandwidth", argv[0] if argv else None)
    path.write_text(json.dumps(document, indent=1))
    for key, value in results.items():
        print(f"{key:30} {value:8.2f} TB/s")
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
