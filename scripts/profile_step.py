"""A small driver for Nsight Compute: run steps (and cuBLAS) a few times at one size, nothing else.

Usage: ncu --clock-control none --section ... -k regex:NAME python scripts/profile_step.py SIZE [step|cublas ...]
"""
import sys

import numpy as np
from numba import cuda

import gemm_steps
from gemm_steps.harness.cublas import launch_cublas

size = int(sys.argv[1])
rng = np.random.default_rng(0)
a = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
b = cuda.to_device(rng.standard_normal((size, size), dtype=np.float32))
c = cuda.device_array((size, size), np.float32)
for name in sys.argv[2:] or ["cublas"]:
    launch = launch_cublas if name == "cublas" else gemm_steps.get_step(name).launch
    for _ in range(3):
        launch(a, b, c)
    cuda.synchronize()
    print(name, "done", flush=True)
