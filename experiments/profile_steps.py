"""One launch of a step (or cuBLAS) at size³, for Nsight Compute; the lessons show the reports it produced.

    python -m experiments.profile_steps --kernel-regex STEP   # the kernel-name filter to give ncu for STEP
    python -m experiments.profile_steps STEP [--size N]       # one product of STEP (or "cublas") on device arrays

Each report in experiments/results/ncu-steps-<gpu>/ was made with (STEP = naive, coalesced, …, cublas):

    ncu --kernel-name regex:"$(python -m experiments.profile_steps --kernel-regex STEP)" --launch-count 1 \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \\
        --section WarpStateStats --section LaunchStats --section Occupancy \\
        --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,\\
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\\
l1tex__data_pipe_lsu_wavefronts.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum \\
        python -m experiments.profile_steps STEP --size 2048 > ncu-STEP.txt

(`scripts/profile_steps.sh` runs the whole set.) ncu replays the launch once per group of counters, with the caches
flushed before each replay, so the numbers are those of one cold 2048³ launch.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import gemm_steps


def kernel_regex(step_name: str) -> str:
    if step_name == "cublas":
        return "sgemm|gemm|Kernel"  # cuBLAS's kernel names vary by GPU and version; it launches one for SGEMM
    names = []
    # Step 11 runs step 10's kernel where the split leaves nothing to stream-K: either may be the one launched.
    related = [step_name, "persistent"] if step_name == "stream_k" else [step_name]
    kernels = [kernel for name in related for kernel in gemm_steps.get_step(name).kernels().values()]
    for dispatcher, _ in kernels:  # the compiled kernels' names
        function = getattr(dispatcher, "py_func", None) or getattr(dispatcher, "fn", None)
        names.append(function.__name__)
    return "|".join(dict.fromkeys(names))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", help="a step's name, or cublas")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--kernel-regex", action="store_true", help="print the kernel-name filter and stop")
    args = parser.parse_args(argv)
    if args.kernel_regex:
        print(kernel_regex(args.step))
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
    if args.step == "cublas":
        gemm_steps.cublas_matmul(a, b, out=c)
    else:
        gemm_steps.get_step(args.step)(a, b, out=c)
    cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
