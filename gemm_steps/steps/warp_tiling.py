"""Step 9 — warp tiling: arrange each warp's results so its shared-memory reads are contiguous.

Changed from step 8: only *which* elements of C a thread owns (the ``WARP_TILING`` branch of step 8's template).
Before, thread t owned a contiguous 8×8 block, so the 16 threads along a row of the block read B fragments 32 bytes
apart: a warp's ``LDS.128`` touched 16 different 32-byte pieces spread over 512 bytes — bank conflicts, and many
distinct addresses. Now the block tile is split into warp tiles of WARP_TILE_M × WARP_TILE_N = (8·THREAD_M) ×
(4·THREAD_N) — 64×32 for 8×8 per thread (a 128×128 block tile, 2×4 warps), 64×64 for the tuned 8×16 (128×256, 2×4
warps) — and inside a warp tile lane l owns 4×4 sub-blocks spaced LANES_M·4 = 32 rows and LANES_N·4 = 16 columns
apart. A warp's fragment loads then read 8 contiguous float4 of A (128 bytes) and 4 of B (64 bytes), each
broadcast to the lanes that share them: conflict-free, and the fewest shared-memory wavefronts per FMA.
And the FMAs run in **serpentine order** (``SERPENTINE``): row i of the outer product goes left to right for even
i and right to left for odd i, so every FMA shares an operand with the one before it, also where a row ends.
``ptxas`` can then feed more operands from the register reuse cache instead of the register file (in the SASS,
877 of 1024 FMAs per k-tile carry a ``.reuse`` flag, against 837 in row order), and fewer FMAs wait on register-bank
conflicts. Measured in one run on the H200: +1.9 points of cuBLAS at 4096³ and +2.1 at 8192³
(results/experiment-fma-order-h200.json).
Why faster: shared-memory bandwidth and latency were the remaining limit of step 8's inner loop; after that, how
fast the FMAs issue.
Expect: a few percent over step 8; measured in results/.
"""

from ..tiling import TileConfig, TiledKernels
from ..tuning import tuned_config
from .double_buffered import TEMPLATE

TITLE = "Warp tiling: conflict-free shared-memory fragments"
SUMMARY = "Give each warp its own sub-tile and each lane 4×4 pieces spaced apart, so fragment loads are contiguous."

LANES_M, LANES_N = 8, 4  # a warp's 32 lanes as an 8×4 grid


def layout(config: TileConfig) -> dict:
    """The warp-tile constants for a configuration: warp tile shape, warps per block, sub-block strides."""
    warp_tile_m = LANES_M * config.THREAD_M  # 8 lanes × (THREAD_M/4 sub-blocks of 4 rows)
    warp_tile_n = LANES_N * config.THREAD_N
    warps_m, warps_n = config.BLOCK_M // warp_tile_m, config.BLOCK_N // warp_tile_n
    if warps_m * warp_tile_m != config.BLOCK_M or warps_n * warp_tile_n != config.BLOCK_N or \
            warps_m * warps_n * 32 != config.THREADS:
        raise ValueError(f"warp tiling needs BLOCK_M, BLOCK_N to split into {warp_tile_m}×{warp_tile_n} warp tiles")
    return {"WARP_TILING": True, "STAGES": 2, "SERPENTINE": True, "LANES_M": LANES_M, "LANES_N": LANES_N, "WARP_TILE_M": warp_tile_m,
            "WARP_TILE_N": warp_tile_n, "WARPS_N": warps_n, "A_CHUNK_STRIDE": LANES_M * 4, "B_CHUNK_STRIDE": LANES_N * 4}


SEARCH_SPACE = [
    TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    TileConfig(BLOCK_M=256, BLOCK_N=128, BLOCK_K=8, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8),
    # 8×16 per thread on a 128×128 tile: 128 threads (2×2 warps), and two or three blocks per SM.
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=2),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=3),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=2),
    # Deep k-tiles: 2 stages × (128 + 256) × 32 floats = 96 KB of shared memory, over the 48 KB static limit, so
    # this one runs on dynamic shared memory with the opt-in (tiling.STATIC_SHARED_LIMIT).
    TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
]


def build(config: TileConfig) -> TiledKernels:
    return TiledKernels("warp_tiling", TEMPLATE, config, layout(config))


TILED = build(tuned_config("warp_tiling", SEARCH_SPACE))  # launch, source(), KERNELS, CONFIG: see step.py

PTX_EXPECT = TILED.unrolled_ptx_claims(barriers=1)
