"""One launch of the overlap build (now step 16, ``gemm_steps/steps/tma_pipeline.py``) for Nsight Compute: where do
the bytes come from at 4096³ and 8192³, in row-major and grouped tile order? (issue: Hopper's own GEMM design)

    ncu --clock-control none --kernel-name regex:tma_pipeline --launch-skip 1 --launch-count 1 \\
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,... \\
        python -m experiments.order_profile SIZE GROUP_M

The first launch compiles and warms up; the second is the one profiled. The ``ncu`` driver and its report are in
``experiments/results/ncu-warpgroup-order-<gpu>.txt``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] = sys.argv) -> None:
    import numpy as np

    from gemm_steps.steps import tma_pipeline  # imports gemm_steps first: it chooses the backend
    from numba import cuda

    size, group = int(argv[1]), int(argv[2])
    rng = np.random.default_rng(size)
    a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
    c = cuda.device_array((size, size), np.float32)
    kernels = tma_pipeline.build(tma_pipeline.SEARCH_SPACE[0], group_m=group)
    for _ in range(2):
        kernels.launch(a, b, c)
    cuda.synchronize()


if __name__ == "__main__":
    main()
