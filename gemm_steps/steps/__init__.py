"""The course's kernels, one module per step, in course order. Adding a step = a module here and its name in COURSE.

A step module imports only the toolkit (:mod:`gemm_steps.toolkit`); the harness that calls, checks and times the
steps (:mod:`gemm_steps.harness`) wraps each module in a :class:`gemm_steps.harness.step.Step`.
"""

#: Module names in course order; a step's number is its position (1-based). Steps 1–11 compute on the FP32 units;
#: steps 12–19 on the tensor cores (a step module says which in ``ARITHMETIC``; docs/tensor_cores.md).
COURSE = [
    "naive",
    "coalesced",
    "shared_memory",
    "register_1d",
    "register_2d",
    "vectorized",
    "unrolled",
    "double_buffered",
    "warp_tiling",
    "persistent",
    "stream_k",
    "tensor_cores",
    "three_tf32",
    "warpgroup_mma",
    "warpgroup_tf32",
    "tma_pipeline",
    "warp_specialized",
    "warp_specialized_3xtf32",
    "pingpong",
    "cluster_multicast",
    "warp_specialized_stream_k",
    "warp_specialized_3xtf32_stream_k",
    "cluster_stream_k_tma_store",
]
