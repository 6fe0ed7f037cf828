"""TF32 on Hopper's ``wgmma``, any shape: step 14's kernel with one product instead of three (issue 14, the TF32
target; a candidate step, not in the course yet).

Changed from step 14 (``diff gemm_steps/steps/warpgroup_mma.py experiments/kernels/warpgroup_tf32.py``): the
arithmetic and the tile. The staging is step 14's — A in the 128-byte swizzle layout, B's rows as they are, copies
two k-tiles ahead in a 4-stage ``cp.async`` pipeline, Cᵀ = Bᵀ·Aᵀ with Bᵀ's fragments loaded from registers after a
wait — but:

* one ``wgmma`` per k-step, A read as TF32 by the tensor core (it truncates) and Bᵀ's fragments rounded to TF32
  (``to_tf32``), like step 12's operands;
* one accumulator over the whole of K: TF32's own input error (~3e-4) dwarfs what the tensor core's truncating
  sum adds, so there is nothing to flush; with the registers that frees,
* 256×128 tiles (wgmma's N = 256 rows of A, 128 accumulators per thread), as experiments/wgmma_swapped.py's fastest
  TF32 build;
* no small parts, so no second shared buffer and one barrier per k-tile.

Edge tiles as in step 14: the guarded variant (``EDGE``) copies 4 bytes at a time with zero fill and stores only
inside C. Runs on compute capability 9.0 and on the simulator (step 14's twin).
Expect (H100): the experiment's full-tile build ran 213.5 / 269.0 TFLOPS at 4096³ / 8192³ against step 12's 144.0 /
151.3 in the same run (experiments/results/wgmma-swapped-swizzled-nvidia-h100.json); this kernel should match it on
squares, with the error of step 12's class (TF32: relative ~3e-4–5e-4).
"""

from numba import cuda, float32, uint32

from gemm_steps.steps.warpgroup_mma import HopperTiledKernels
from gemm_steps.toolkit.intrinsics import copy_async, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.tensor_core_ops import copy_async_commit, copy_async_or_zero, copy_async_wait, to_tf32
from gemm_steps.toolkit.tiles import TileConfig, TiledKernels
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (fence_proxy_async, shared_address, swizzled_descriptor,
                                              swizzled_offset, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, wgmma_tf32, zero_accumulators)

ARITHMETIC = "tf32"  # inputs rounded (B) or truncated (A) to TF32: verify's TF32 tolerance
REQUIRES_COMPUTE_CAPABILITY = (9, 0)


def warpgroup_tf32_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks):
    """One BLOCK_M×BLOCK_N tile of C = A·B, computed as Cᵀ by TF32 ``wgmma``; a, b, c flat row-major float32."""
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    # STAGES stages of A (128-byte swizzled rows), then STAGES stages of B ([k][col], rows padded to B_STRIDE).
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    base = shared_address(tiles, 0)
    fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
    acc = zero_accumulators(ACCUMULATORS)
    b_frag = registers(K_STEPS, 4)
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K

    for t in range(k_tiles + LOAD_AHEAD):
        copy_async_wait(LOAD_AHEAD - 1)
        fence_proxy_async()
        cuda.syncthreads()
        if t < k_tiles:
            k0 = uint32(t * BLOCK_K)
            stage_a = uint32(t % STAGES * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + t % STAGES * B_STAGE_FLOATS)
            for load in unroll(A_LOADS):
                chunk = tid + load * THREADS
                row = chunk // A_VECTORS_PER_ROW
                kc = chunk % A_VECTORS_PER_ROW
                to = stage_a + swizzled_offset(row, kc)
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, to + q, a, block_row + row, k0 + kc * 4 + q, m, k)
                else:
                    copy_async(tiles, to, a, (block_row + row) * k + k0 + kc * 4, 4)
            for load in unroll(B_LOADS):
                chunk = tid + load * THREADS
                kk = chunk // B_VECTORS_PER_ROW
                col = chunk % B_VECTORS_PER_ROW * 4
                if EDGE:
                    for q in unroll(4):
                        copy_async_or_zero(tiles, stage_b + kk * B_STRIDE + col + q, b, k0 + kk, block_col + col + q,
                                           k, n)
                else:
                    copy_async(tiles, stage_b + kk * B_STRIDE + col, b, (k0 + kk) * n + block_col + col, 4)
        copy_async_commit()
        if t >= LOAD_AHEAD:
            stage_a = uint32((t - LOAD_AHEAD) % STAGES * A_STAGE_FLOATS)
            stage_b = uint32(B_BASE + (t - LOAD_AHEAD) % STAGES * B_STAGE_FLOATS)
            acc = warpgroup_wait_all(acc)  # the previous k-tile's wgmma are done: its fragment registers are free
            for s in unroll(K_STEPS):
                for q in unroll(4):
                    b_frag[s][q] = to_tf32(tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)])
            warpgroup_fence()
            for s in unroll(K_STEPS):
                acc = wgmma_tf32(tiles, b_frag[s][0], b_frag[s][1], b_frag[s][2], b_frag[s][3],
                                 swizzled_descriptor(base + (stage_a * 4 + s * 32)), acc, 1)
            warpgroup_commit()
    acc = warpgroup_wait_all(acc)

    for v in unroll(ACCUMULATORS):
        row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
        col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
        if EDGE:
            store_if_inside(c, row, col, m, n, acc[v])
        else:
            c[row * n + col] = acc[v]


def layout(config: TileConfig) -> dict:
    """Step 14's staging without the small parts: 4 stages, A swizzled (BLOCK_K = 32), B rows padded by 8."""
    warpgroups = config.BLOCK_N // 64
    if (warpgroups * 64 != config.BLOCK_N or config.THREADS != 128 * warpgroups or config.BLOCK_M % 8
            or not 8 <= config.BLOCK_M <= 256 or config.BLOCK_K != 32):
        raise ValueError("needs BLOCK_N = 64 per warpgroup of 128 threads, BLOCK_M a multiple of 8 up to 256 and "
                         "BLOCK_K = 32")
    stages, b_stride = 4, config.BLOCK_N + 8
    return {"STAGES": stages, "LOAD_AHEAD": stages - 2, "DYNAMIC_SHARED": True, "K_STEPS": config.BLOCK_K // 8,
            "ACCUMULATORS": config.BLOCK_M // 2, "B_STRIDE": b_stride, "A_STAGE_FLOATS": config.BLOCK_M * 32,
            "B_STAGE_FLOATS": 32 * b_stride}


#: The experiment's fastest TF32 tile on an H100: 256 rows (wgmma N = 256) × 2 warpgroups.
CONFIG = TileConfig(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)
#: On the simulator: one warpgroup on a 32×64 tile, as step 14.
SIMULATOR_CONFIG = TileConfig(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=1)


def build(config: TileConfig = CONFIG) -> TiledKernels:
    return HopperTiledKernels("warpgroup_tf32", warpgroup_tf32_kernel, config, layout(config))
