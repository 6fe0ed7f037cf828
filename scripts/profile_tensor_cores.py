"""One 4096³ launch of each tensor-core kernel (steps 12–13, fast variant) after a warm-up, for Nsight Compute:

    ncu --kernel-name regex:'tensor_cores_fast|three_tf32_fast' --launch-skip 2 --launch-count 2 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
        --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
        python scripts/profile_tensor_cores.py
"""

from __future__ import annotations

import numpy as np


def main() -> None:
    import gemm_steps  # noqa: F401  (chooses GPU or simulator first)
    from numba import cuda

    from gemm_steps.steps import tensor_cores, three_tf32

    size = 4096
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), dtype=np.float32)
    for module in (tensor_cores, three_tf32):
        module.TILED.launch(a, b, c)  # compile and warm up (the launches ncu skips)
    cuda.synchronize()
    for module in (tensor_cores, three_tf32):
        module.TILED.launch(a, b, c)  # the launches ncu profiles
    cuda.synchronize()


if __name__ == "__main__":
    main()
