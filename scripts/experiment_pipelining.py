"""Register double buffering ("pipelined" fragments) in steps 8 and 9, timed in one run against the shipped kernels.

PIPELINED = True (in step 8's template): fragments come in two register sets that alternate by column of the k-tile,
so column kk + 1's shared-memory loads are in flight while column kk's FMAs run, and the first fragments of the next
stage are loaded right after the barrier while the last column of the current stage is computed. Prediction: the
FMAs after each barrier no longer wait for LDS latency (~30 cycles of ~2200 issue slots per k-tile and scheduler):
+1 to +3 points of cuBLAS for step 9, a little more for step 8 (fewer FMAs per k-tile to hide it).
The shipped step 9 is timed first and again last, to show the spread within one run. Writes JSON to argv[1].
With ``--profile`` instead: one launch each of shipped step 9, pipelined step 9 and cuBLAS at 4096³, untimed, for
Nsight Compute (``ncu --clock-control none ... python scripts/experiment_pipelining.py --profile``).
"""
import sys

from gemm_steps import bench
from gemm_steps.steps import double_buffered, warp_tiling
from gemm_steps.steps.double_buffered import LAYOUT, TEMPLATE
from gemm_steps.tiling import TileConfig, TiledKernels


def variant(label, config, layout):
    return label, TiledKernels(label.replace(" ", "_"), TEMPLATE, config, layout)


wt = warp_tiling.TILED.config  # 128×256×8, 8×16 per thread, 256 threads (H200 winner)
db = double_buffered.TILED.config  # 128×128×16, 8×8 per thread, 2 blocks/SM
wt16 = TileConfig(**{**wt.__dict__, "BLOCK_K": 16})
wt_small = TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=2)
wt_88 = TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2)
P = {"PIPELINED": True}
variants = [
    variant("step9 shipped", wt, warp_tiling.layout(wt)),
    variant("step9 pipelined", wt, {**warp_tiling.layout(wt), **P}),
    variant("step9 pipelined BK16", wt16, {**warp_tiling.layout(wt16), **P}),
    variant("step9 pipelined 128x128 8x16", wt_small, {**warp_tiling.layout(wt_small), **P}),
    variant("step9 pipelined 128x128 8x8", wt_88, {**warp_tiling.layout(wt_88), **P}),
    variant("step8 shipped", db, LAYOUT),
    variant("step8 pipelined", db, {**LAYOUT, **P}),
    variant("step9 shipped again", wt, warp_tiling.layout(wt)),
]
if sys.argv[1] == "--profile":
    import numpy as np
    from numba import cuda

    from gemm_steps.cublas import launch_cublas

    rng = np.random.default_rng(0)
    a, b = (cuda.to_device(rng.standard_normal((4096, 4096), dtype=np.float32)) for _ in range(2))
    c = cuda.device_array((4096, 4096), np.float32)
    for launch in (variants[0][1].launch, variants[1][1].launch, launch_cublas):
        launch(a, b, c)
    cuda.synchronize()
    sys.exit(0)
bench.time_variants(variants, (4096, 8192), sys.argv[1])
