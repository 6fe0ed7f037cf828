"""Register double buffering ("pipelined" fragments) in steps 8 and 9, timed in one run against the shipped kernels.

The variants (``experiments/kernels/warp_tiling_pipelined.py`` and ``double_buffered_pipelined.py``): fragments come
in two register sets that alternate by column of the k-tile, so column kk + 1's shared-memory loads are in flight
while column kk's FMAs run, and the first fragments of the next stage are loaded right after the barrier while the
last column of the current stage is computed. Prediction: the FMAs after each barrier no longer wait for LDS latency
(~30 cycles of ~2200 issue slots per k-tile and scheduler): +1 to +3 points of cuBLAS for step 9, a little more for
step 8 (fewer FMAs per k-tile to hide it). The shipped step 9 is timed first and again last, to show the spread
within one run.

    python -m experiments.pipelining [OUT.json]    # default: experiments/results/experiment-pipelining-<gpu>.json

With ``--profile`` instead: one launch each of shipped step 9, pipelined step 9 and cuBLAS at 4096³, untimed, for
Nsight Compute (``ncu --clock-control none ... python -m experiments.pipelining --profile``).
"""
import sys

from experiments import kernel_name, output_path, require_gpu
from experiments.kernels import double_buffered_pipelined, warp_tiling_pipelined
from gemm_steps.harness import bench
from gemm_steps.steps import double_buffered, warp_tiling
from gemm_steps.toolkit.tile_config import TileConfig, tile_fields

SIZES = (4096, 8192)


def variants() -> list:
    """``(label, TiledKernels)`` pairs, in the order they are timed."""
    wt = warp_tiling.TUNING.kernels().config  # 128×256×8, 8×16 per thread, 256 threads (H200 winner)
    db = double_buffered.TUNING.kernels().config  # 128×128×16, 8×8 per thread, 2 blocks/SM
    wt16 = TileConfig(**{**tile_fields(wt), "BLOCK_K": 16})
    wt_small = TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=2)
    wt_88 = TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2)

    def step9_pipelined(label, config):
        return label, warp_tiling_pipelined.build(config, name=kernel_name("x", label))

    return [
        ("step9 shipped", warp_tiling.build(wt)),
        step9_pipelined("step9 pipelined", wt),
        step9_pipelined("step9 pipelined BK16", wt16),
        step9_pipelined("step9 pipelined 128x128 8x16", wt_small),
        step9_pipelined("step9 pipelined 128x128 8x8", wt_88),
        ("step8 shipped", double_buffered.build(db)),
        ("step8 pipelined", double_buffered_pipelined.build(db, name="x_step8_pipelined")),
        ("step9 shipped again", warp_tiling.build(wt)),
    ]


def profile() -> None:
    """One untimed launch each of shipped step 9, pipelined step 9 and cuBLAS at 4096³ (for ``ncu``)."""
    import numpy as np
    from numba import cuda

    from gemm_steps.harness.cublas import launch_cublas

    chosen = variants()
    rng = np.random.default_rng(0)
    a, b = (cuda.to_device(rng.standard_normal((4096, 4096), dtype=np.float32)) for _ in range(2))
    c = cuda.device_array((4096, 4096), np.float32)
    for launch in (chosen[0][1].launch, chosen[1][1].launch, launch_cublas):
        launch(a, b, c)
    cuda.synchronize()


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/pipelining.py")
    if len(argv) > 1 and argv[1] == "--profile":
        profile()
        return
    bench.time_variants(variants(), SIZES, output_path("pipelining", argv[1] if len(argv) > 1 else None))


if __name__ == "__main__":
    main()
