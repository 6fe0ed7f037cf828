"""Planted: a "kernel" that is a host object computing a @ b (the simulator would run it; a GPU cannot)."""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
import numpy as np


class _HostMatmul:
    def __getitem__(self, launch_configuration):
        return self

    def __call__(self, a, b, c):
        c[:, :] = np.asarray(a) @ np.asarray(b)


naive_kernel = _HostMatmul()
