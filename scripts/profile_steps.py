"""The one driver for Nsight Compute: launch steps (or cuBLAS) at size³ on device arrays, nothing else.

    python scripts/profile_steps.py --kernel-regex STEP [STEP …]   # the kernel-name filter to give ncu
    python scripts/profile_steps.py STEP [STEP …] [--size N] [--warmup W] [--launches L]

Every step's ``W`` warm-up launches come first (they compile), then each step's ``L`` launches, in the order given, so
``ncu --launch-skip <W × steps> --launch-count <L × steps>`` profiles exactly the launches after the warm-up. Each
report of experiments/results/ncu-steps-<gpu>/ is one cold launch at 2048³ (``scripts/profile_steps.sh`` runs them
all; ncu replays the launch once per group of counters, with the caches flushed before each replay):

    ncu --kernel-name regex:"$(python scripts/profile_steps.py --kernel-regex STEP)" --launch-count 1 \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \\
        --section WarpStateStats --section LaunchStats --section Occupancy \\
        --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,\\
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\\
l1tex__data_pipe_lsu_wavefronts.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum \\
        python scripts/profile_steps.py STEP --size 2048 > ncu-STEP.txt

Steps 12–13's report (experiments/results/ncu-tensor-cores-nvidia-h100.txt), one 4096³ launch each after a warm-up:

    ncu --kernel-name regex:'tensor_cores_fast|three_tf32_fast' --launch-skip 2 --launch-count 2 \\
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \\
        --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \\
        python scripts/profile_steps.py tensor_cores three_tf32 --size 4096 --warmup 1

(This replaces experiments/profile_steps.py, scripts/profile_step.py and scripts/profile_tensor_cores.py: see git
history.)
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import gemm_steps


def kernel_regex(step_names: list[str]) -> str:
    """The ncu kernel-name filter that matches the kernels these steps (or ``cublas``) launch."""
    names = []
    for step_name in step_names:
        if step_name in ("cublas", "cublas_tf32"):
            names.append("sgemm|gemm|Kernel")  # cuBLAS's kernel names vary by GPU and version
            continue
        # A step that hands some products to another step's build (step 11 to step 10's kernel where the split leaves
        # nothing to stream-K; steps 21 and 22 to steps 17 and 18 by their FALLBACK_RULE): either may be launched.
        module = gemm_steps.get_step(step_name).module
        related = [step_name, *([module.FALLBACK_STEP] if hasattr(module, "FALLBACK_STEP") else [])]
        for dispatcher, _ in (k for name in related for k in gemm_steps.get_step(name).kernels().values()):
            function = getattr(dispatcher, "py_func", None) or getattr(dispatcher, "fn", None)
            names.append(function.__name__)
    return "|".join(dict.fromkeys(names))


def call_of(name: str, a, b, c):
    """A call that computes C = A·B on device arrays: a step by name, ``cublas`` (SGEMM) or ``cublas_tf32``
    (cublasGemmEx on the TF32 tensor cores, the Hopper steps' reference)."""
    if name == "cublas":
        return lambda: gemm_steps.cublas_matmul(a, b, out=c)
    if name == "cublas_tf32":
        from gemm_steps.harness.cublas import launch_cublas_tf32

        return lambda: launch_cublas_tf32(a, b, c)
    step = gemm_steps.get_step(name)
    return lambda: step(a, b, out=c)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="+", help="steps' names, or cublas (SGEMM), or cublas_tf32")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--warmup", type=int, default=0, help="launches of each step before the profiled ones")
    parser.add_argument("--launches", type=int, default=1, help="profiled launches of each step")
    parser.add_argument("--kernel-regex", action="store_true", help="print the kernel-name filter and stop")
    args = parser.parse_args(argv)
    if args.kernel_regex:
        print(kernel_regex(args.steps))
        return 0
    if gemm_steps.SIMULATOR:
        print("profile_steps needs a GPU (Nsight Compute profiles real launches)", file=sys.stderr)
        return 2
    from numba import cuda

    rng = np.random.default_rng(0)
    n = args.size
    a = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    c = cuda.device_array((n, n), dtype=np.float32)
    calls = {name: call_of(name, a, b, c) for name in args.steps}
    for count in (args.warmup, args.launches):
        for call in calls.values():
            for _ in range(count):
                call()
        cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
