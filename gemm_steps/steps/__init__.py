"""The course's kernels, one module per step, in course order. Adding a step = a module here and its name in COURSE.

A step module imports only the toolkit (:mod:`gemm_steps.toolkit`); the harness that calls, checks and times the
steps (:mod:`gemm_steps.harness`) wraps each module in a :class:`gemm_steps.harness.step.Step`.
"""

#: Module names in course order; a step's number is its position (1-based). ``tensor_cores`` and ``three_tf32`` (the
#: tensor-core chapter, steps 12–13 to be) are not in it yet: docs/tensor_cores.md says what they lack.
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
]
