"""Step 8 — double-buffered shared memory, and an occupancy hint.

Changed from step 7: shared memory holds *two* stages of the A and B tiles. While the block computes on one stage,
each thread already loads the next k-tile from global memory into registers (``pa_*``, ``pb_*``), and writes them
into the other stage after its FMAs. One barrier per k-tile instead of two, and the global-load latency (hundreds
of cycles) hides behind 1024 FMAs per thread. The load coordinates are computed once, before the loop.
``launch_bounds=(256, 2)`` tells the compiler two blocks must fit on an SM, capping registers at 128 per thread.
Why faster: in step 7 every warp stalls at the barrier until its tile's global loads arrive; now the loads for
tile t+1 are in flight while tile t is computed.
Expect: ~1.1× step 7 (an earlier H200 measurement: 77 % → 84 % of cuBLAS).
Step 9 reuses this template and changes only which elements of C a thread owns (``WARP_TILING``); step 10
wraps its tile body in a loop over tiles (``PERSISTENT``), step 11 in a loop over k-ranges (``STREAM_K``).
Three more switches are off in every step, because the H200 measured them slower (lesson 9): ``PIPELINED``
(fragments double-buffered in registers) and ``ASYNC_A`` / ``ASYNC_B`` (``cp.async`` global → shared copies).
"""

from ..tiling import TileConfig, TiledKernels
from ..tuning import tuned_config

TITLE = "Double buffering: load the next tile while computing this one"
SUMMARY = "Two shared-memory stages: global loads for tile t+1 overlap the FMAs of tile t; one barrier per tile."

TEMPLATE = '''
def {{KERNEL_NAME}}(a, b, c, m, n, k, full_row_blocks, full_col_blocks{{", workspace, flags, dp_tiles, sk_tiles" if STREAM_K else ""}}):
    """One BLOCK_M×BLOCK_N tile of C = A·B; a, b, c are flat row-major float32 arrays."""
# @if EDGE
    if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
        return  # a full tile: the fast kernel computes it
# @end
    # Two stages of each tile: stage s of A starts at s * BLOCK_K * BLOCK_M.
# @if DYNAMIC_SHARED
    # Over 48 KB: one dynamic shared array, sized at launch (tiling.py opts the kernel in); B's stages follow A's,
    # from B_BASE on.
    a_tile = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
    b_tile = a_tile  # B as is: [k][col]
# @else
    a_tile = cuda.shared.array({{2 * BLOCK_K * BLOCK_M}}, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
    b_tile = cuda.shared.array({{2 * BLOCK_K * BLOCK_N}}, float32, alignment=SHARED_ALIGN)  # B as is: [k][col]
# @end
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
# @if WARP_TILING
    # Warp tiling: warp w owns a WARP_TILE_M×WARP_TILE_N block; inside it, lane l owns 4×4 sub-blocks spaced
    # LANES_M*4 rows and LANES_N*4 columns apart, so a warp's fragment loads hit contiguous shared memory.
    warp = tid // 32
    lane = tid % 32
    thread_row = warp // WARPS_N * WARP_TILE_M + lane // LANES_N * 4
    thread_col = warp % WARPS_N * WARP_TILE_N + lane % LANES_N * 4
# @else
    thread_row = tid // THREADS_N * THREAD_M  # this thread's THREAD_M×THREAD_N block of C, within the block tile
    thread_col = tid % THREADS_N * THREAD_N
# @end
    # Where this thread's 128-bit loads land in each tile: fixed for the whole k-loop.
# @for load in range(A_LOADS)
    a_row_{{load}} = (tid + {{load * THREADS}}) // A_VECTORS_PER_ROW
    a_k_{{load}} = (tid + {{load * THREADS}}) % A_VECTORS_PER_ROW * 4
# @end
# @for load in range(B_LOADS)
    b_k_{{load}} = (tid + {{load * THREADS}}) // B_VECTORS_PER_ROW
    b_col_{{load}} = (tid + {{load * THREADS}}) % B_VECTORS_PER_ROW * 4
# @end
    k_tiles = (k + BLOCK_K - 1) // BLOCK_K
# @if STREAM_K
    # Stream-K: this block first computes its data-parallel tiles (block, block + G, … below dp_tiles), then an
    # equal share [sk_begin, sk_end) of the k-iterations of the sk_tiles that follow, which may start or end
    # in the middle of a tile. It walks its share backwards, so the piece other blocks wait for (the start of
    # a tile, at the end of the share) is computed first and the piece that waits (the end of a tile, at the
    # start of the share) last: no block waits for a block that is itself waiting.
    blocks = uint32(cuda.gridDim.x)
    block = uint32(cuda.blockIdx.x)
    k_tiles = uint32(k_tiles)
    sk_iterations = uint64(sk_tiles) * k_tiles  # 64-bit: block * sk_iterations may pass 2³²
    sk_begin = uint32(block * sk_iterations // blocks)
    sk_end = uint32((block + uint32(1)) * sk_iterations // blocks)
    dp_count = uint32((dp_tiles + blocks - uint32(1) - block) // blocks)
    dp_done = uint32(0)
    iteration = sk_end  # walks down to sk_begin
    while dp_done < dp_count or iteration > sk_begin:
        if dp_done < dp_count:  # a whole tile
            tile = uint32(block + dp_done * blocks)
            k_first = uint32(0)
            k_count = k_tiles
            dp_done += uint32(1)
        else:  # the last run of k-iterations left in our share, all within one tile
            tile_start = (iteration - uint32(1)) // k_tiles * k_tiles  # the tile's first iteration
            tile = uint32(dp_tiles + tile_start // k_tiles)
            first = max(sk_begin, tile_start)
            k_first = uint32(first - tile_start)
            k_count = uint32(iteration - first)
            iteration = first
        block_row = tile // full_col_blocks * BLOCK_M
        block_col = tile % full_col_blocks * BLOCK_N
# @else
# @if PERSISTENT
    # Persistent: the grid is only as large as the GPU holds at once, and block b computes full tiles b,
    # b + gridDim.x, b + 2·gridDim.x, … Tiles are numbered column by column within groups of GROUP_M tile-rows,
    # so tiles in flight together share rows of A and columns of B in L2 (GROUP_M = 1: plain row-major order).
    tiles_per_group = uint32(GROUP_M) * full_col_blocks
    for tile in range(uint32(cuda.blockIdx.x), full_row_blocks * full_col_blocks, uint32(cuda.gridDim.x)):
        first_row = tile // tiles_per_group * GROUP_M  # the group's first tile-row
        rows_in_group = min(full_row_blocks - first_row, uint32(GROUP_M))  # the last group may be shorter
        block_row = (first_row + tile % tiles_per_group % rows_in_group) * BLOCK_M  # down the group's rows…
        block_col = tile % tiles_per_group // rows_in_group * BLOCK_N  # …then on to the next column
# @else
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
# @end
# @end
# @indent PERSISTENT or STREAM_K
# @if not STREAM_K
    k_first = uint32(0)  # this block computes k-tiles k_first … k_first + k_count - 1: all of them
    k_count = k_tiles
# @end
# @for i in range(THREAD_M)
# @for j in range(0, THREAD_N, 4)
    acc_{{i}}_{{j}} = acc_{{i}}_{{j+1}} = acc_{{i}}_{{j+2}} = acc_{{i}}_{{j+3}} = float32(0.0)
# @end
# @end

# @if PIPELINED
# @for i in range(THREAD_M)
    a0_{{i}} = a1_{{i}} = float32(0.0)  # the two fragment sets (filled in the k-loop)
# @end
# @for j in range(THREAD_N)
    b0_{{j}} = b1_{{j}} = float32(0.0)
# @end
# @end
    # The k-loop runs one extra time: iteration t loads k-tile t (if any) into registers, computes k-tile t - 1
    # (if any) from shared stage (t - 1) % 2, then stores the loaded registers into stage t % 2.
    for k_tile in range(k_count + 1):
        k0 = uint32(k_first + k_tile) * BLOCK_K
        if k_tile < k_count:
# @for load in range(A_LOADS)
            row = block_row + a_row_{{load}}
# @if EDGE
            col = k0 + a_k_{{load}}
            pa_{{load}}_0 = a[row * k + col] if row < m and col < k else float32(0)
            pa_{{load}}_1 = a[row * k + col + 1] if row < m and col + 1 < k else float32(0)
            pa_{{load}}_2 = a[row * k + col + 2] if row < m and col + 2 < k else float32(0)
            pa_{{load}}_3 = a[row * k + col + 3] if row < m and col + 3 < k else float32(0)
# @else
# @if ASYNC_A
            stage_a = uint32(k_tile % 2) * {{BLOCK_K * BLOCK_M}}
            copy_async(a_tile, stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}}, a, row * k + k0 + a_k_{{load}}, 1)
            copy_async(a_tile, stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}} + {{BLOCK_M}}, a, row * k + k0 + a_k_{{load}} + 1, 1)
            copy_async(a_tile, stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}} + {{2 * BLOCK_M}}, a, row * k + k0 + a_k_{{load}} + 2, 1)
            copy_async(a_tile, stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}} + {{3 * BLOCK_M}}, a, row * k + k0 + a_k_{{load}} + 3, 1)
# @else
            pa_{{load}}_0, pa_{{load}}_1, pa_{{load}}_2, pa_{{load}}_3 = load_float4(a, row * k + k0 + a_k_{{load}})
# @end
# @end
# @end
# @for load in range(B_LOADS)
            row = k0 + b_k_{{load}}
# @if EDGE
            col = block_col + b_col_{{load}}
            pb_{{load}}_0 = b[row * n + col] if row < k and col < n else float32(0)
            pb_{{load}}_1 = b[row * n + col + 1] if row < k and col + 1 < n else float32(0)
            pb_{{load}}_2 = b[row * n + col + 2] if row < k and col + 2 < n else float32(0)
            pb_{{load}}_3 = b[row * n + col + 3] if row < k and col + 3 < n else float32(0)
# @else
# @if ASYNC_B
            stage_b = {{f"uint32({B_BASE}) + " if DYNAMIC_SHARED else ""}}uint32(k_tile % 2) * {{BLOCK_K * BLOCK_N}}
            copy_async(b_tile, stage_b + b_k_{{load}} * BLOCK_N + b_col_{{load}}, b, row * n + block_col + b_col_{{load}}, 4)
# @else
            pb_{{load}}_0, pb_{{load}}_1, pb_{{load}}_2, pb_{{load}}_3 = load_float4(b, row * n + block_col + b_col_{{load}})
# @end
# @end
# @end
        if k_tile > 0:
            stage_a = uint32((k_tile - 1) % 2) * {{BLOCK_K * BLOCK_M}}
            stage_b = {{f"uint32({B_BASE}) + " if DYNAMIC_SHARED else ""}}uint32((k_tile - 1) % 2) * {{BLOCK_K * BLOCK_N}}
# @if PIPELINED
            # Columns 0 … BLOCK_K - 2 of the computing stage. Fragments come in two sets that alternate by column
            # (a0_/b0_ for even columns, a1_/b1_ for odd): column kk + 1's are loaded while column kk's FMAs run.
            # Column 0's were loaded after the last barrier; the last column's FMAs come after the next barrier.
# @for kk in range(BLOCK_K - 1)
# @for q in range(0, THREAD_M, 4)
            a{{(kk + 1) % 2}}_{{q}}, a{{(kk + 1) % 2}}_{{q+1}}, a{{(kk + 1) % 2}}_{{q+2}}, a{{(kk + 1) % 2}}_{{q+3}} = load_float4(a_tile, stage_a + thread_row + {{(kk + 1) * BLOCK_M + q // 4 * A_CHUNK_STRIDE}})
# @end
# @for q in range(0, THREAD_N, 4)
            b{{(kk + 1) % 2}}_{{q}}, b{{(kk + 1) % 2}}_{{q+1}}, b{{(kk + 1) % 2}}_{{q+2}}, b{{(kk + 1) % 2}}_{{q+3}} = load_float4(b_tile, stage_b + thread_col + {{(kk + 1) * BLOCK_N + q // 4 * B_CHUNK_STRIDE}})
# @end
# @for i in range(THREAD_M)
# @for jj in range(THREAD_N)
            acc_{{i}}_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}} += a{{kk % 2}}_{{i}} * b{{kk % 2}}_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}}
# @end
# @end
# @end
# @else
            # The unrolled k-loop over the BLOCK_K columns of the computing stage.
# @for kk in range(BLOCK_K)
# @for q in range(0, THREAD_M, 4)
            a_{{q}}, a_{{q+1}}, a_{{q+2}}, a_{{q+3}} = load_float4(a_tile, stage_a + thread_row + {{kk * BLOCK_M + q // 4 * A_CHUNK_STRIDE}})
# @end
# @for q in range(0, THREAD_N, 4)
            b_{{q}}, b_{{q+1}}, b_{{q+2}}, b_{{q+3}} = load_float4(b_tile, stage_b + thread_col + {{kk * BLOCK_N + q // 4 * B_CHUNK_STRIDE}})
# @end
# @for i in range(THREAD_M)
# @for jj in range(THREAD_N)
            acc_{{i}}_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}} += a_{{i}} * b_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}}
# @end
# @end
# @end
# @end
        if k_tile < k_count:
            stage_a = uint32(k_tile % 2) * {{BLOCK_K * BLOCK_M}}
            stage_b = {{f"uint32({B_BASE}) + " if DYNAMIC_SHARED else ""}}uint32(k_tile % 2) * {{BLOCK_K * BLOCK_N}}
# @if not (ASYNC_A and not EDGE)
# @for load in range(A_LOADS)
            a_tile[stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}}] = pa_{{load}}_0
            a_tile[stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}} + {{BLOCK_M}}] = pa_{{load}}_1
            a_tile[stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}} + {{2 * BLOCK_M}}] = pa_{{load}}_2
            a_tile[stage_a + a_k_{{load}} * BLOCK_M + a_row_{{load}} + {{3 * BLOCK_M}}] = pa_{{load}}_3
# @end
# @end
# @if not (ASYNC_B and not EDGE)
# @for load in range(B_LOADS)
            store_float4(b_tile, stage_b + b_k_{{load}} * BLOCK_N + b_col_{{load}}, pb_{{load}}_0, pb_{{load}}_1, pb_{{load}}_2, pb_{{load}}_3)
# @end
# @end
# @if (ASYNC_A or ASYNC_B) and not EDGE
            copy_async_wait_all()  # our copies into stage t % 2 have landed; the barrier shows them to everyone
# @end
        cuda.syncthreads()  # stage t % 2 is written, and everyone is done reading stage (t - 1) % 2
# @if PIPELINED
        if k_tile < k_count:  # column 0 of the stage just written: fragment set 0, for the next iteration …
# @for q in range(0, THREAD_M, 4)
            a0_{{q}}, a0_{{q+1}}, a0_{{q+2}}, a0_{{q+3}} = load_float4(a_tile, stage_a + thread_row + {{q // 4 * A_CHUNK_STRIDE}})
# @end
# @for q in range(0, THREAD_N, 4)
            b0_{{q}}, b0_{{q+1}}, b0_{{q+2}}, b0_{{q+3}} = load_float4(b_tile, stage_b + thread_col + {{q // 4 * B_CHUNK_STRIDE}})
# @end
        if k_tile > 0:  # … loaded while the previous stage's last column (fragment set 1) is computed
# @for i in range(THREAD_M)
# @for jj in range(THREAD_N)
            acc_{{i}}_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}} += a1_{{i}} * b1_{{THREAD_N - 1 - jj if SERPENTINE and i % 2 else jj}}
# @end
# @end
# @end

# @if STREAM_K
    if k_first + k_count < k_tiles:
        # We stop before the tile's last k-tile: leave our partial sums in our workspace slot and raise our flag
        # for the block that finishes the tile (it has a higher number, so it never makes us wait).
        slot = block * {{BLOCK_M * BLOCK_N}} + tid
# @for i in range(THREAD_M)
# @for j in range(THREAD_N)
        workspace[slot + {{(i * THREAD_N + j) * THREADS}}] = acc_{{i}}_{{j}}
# @end
# @end
        cuda.threadfence()  # the partial sums are visible GPU-wide before the flag is
        cuda.syncthreads()
        if tid == 0:
            cuda.atomic.exch(flags, block, 1)
        continue
    # We compute the tile's last k-tile: add the partial sums of the lower-numbered blocks that computed its
    # earlier k-tiles, nearest first (a fixed order: the result is the same bit for bit on every run).
    if k_first > 0:
        tile_begin = uint64(tile - dp_tiles) * k_tiles  # the tile's first iteration in the stream-K range
        other = block  # count down through the blocks before us whose share ends inside this tile
        while other > 0 and other * sk_iterations // blocks > tile_begin:
            other -= uint32(1)
            if other * sk_iterations // blocks < (other + uint32(1)) * sk_iterations // blocks:  # it had work
                if tid == 0:
                    while cuda.atomic.add(flags, other, 0) == 0:
                        pass  # spin: that block is resident and only computes, it never waits on us
                    flags[other] = 0  # reset for the next launch (each flag is raised once per launch)
                cuda.syncthreads()
                slot = other * {{BLOCK_M * BLOCK_N}} + tid
# @for i in range(THREAD_M)
# @for j in range(THREAD_N)
                acc_{{i}}_{{j}} += load_bypassing_l1(workspace, slot + {{(i * THREAD_N + j) * THREADS}})
# @end
# @end
# @end
# @for i in range(THREAD_M)
    row = block_row + thread_row + {{i // 4 * A_CHUNK_STRIDE + i % 4}}
# @if EDGE
# @for j in range(THREAD_N)
    if row < m and block_col + thread_col + {{j // 4 * B_CHUNK_STRIDE + j % 4}} < n:
        c[row * n + block_col + thread_col + {{j // 4 * B_CHUNK_STRIDE + j % 4}}] = acc_{{i}}_{{j}}
# @end
# @else
# @for j in range(0, THREAD_N, 4)
    store_float4(c, row * n + block_col + thread_col + {{j // 4 * B_CHUNK_STRIDE}}, acc_{{i}}_{{j}}, acc_{{i}}_{{j+1}}, acc_{{i}}_{{j+2}}, acc_{{i}}_{{j+3}})
# @end
# @end
# @end
# @end
'''

#: Contiguous 8×8 blocks per thread (step 9 changes these).
LAYOUT = {"WARP_TILING": False, "A_CHUNK_STRIDE": 4, "B_CHUNK_STRIDE": 4, "STAGES": 2}

SEARCH_SPACE = [
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=8, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8),
    TileConfig(BLOCK_M=128, BLOCK_N=64, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=3),
    # 8×16 per thread on a 128×256 tile (the shape step 9 makes conflict-free), here with the contiguous map.
    TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=8, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
    TileConfig(BLOCK_M=128, BLOCK_N=256, BLOCK_K=16, THREAD_M=8, THREAD_N=16, MIN_BLOCKS_PER_SM=1),
]


def build(config: TileConfig) -> TiledKernels:
    return TiledKernels("double_buffered", TEMPLATE, config, LAYOUT)


TILED = build(tuned_config("double_buffered", SEARCH_SPACE))  # launch, source(), KERNELS, CONFIG: see step.py

PTX_EXPECT = TILED.unrolled_ptx_claims(barriers=1)  # double buffering: one barrier per k-tile
