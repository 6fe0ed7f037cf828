"""Step 12 on step 11's schedule: the TF32 tensor-core kernel, persistent and stream-K (issue 14, item 4).

Changed from step 12 (``diff gemm_steps/steps/tensor_cores.py experiments/kernels/tensor_cores_stream_k.py``): the
schedule, nothing in the arithmetic. The tile computation is step 12's, line for line — the same 128×256×32 tiles,
``cp.async`` pipeline of STAGES k-tiles, ``ldmatrix`` for A, ``to_tf32`` on every fragment element, ``mma_tf32``
pieces and fragment layout — but it runs inside step 11's work loop instead of once per block:

* the grid is ``SMs × resident blocks per SM`` (132 on an H100: one 153 KB block per SM), not one block per tile;
* each block first computes its data-parallel tiles (block, block + G, … below dp_tiles: step 10's grid-stride
  loop, row-major tile order as in step 11), then an equal share of the k-iterations of the sk_tiles after them,
  walked backwards, so a share may start or end in the middle of a tile;
* a block that stops before a tile's last k-tile stores its partial sums (one 4-value ``store4`` per mma piece,
  a warp's 32 lanes 128 contiguous bytes apart) in its workspace slot, fences and raises its flag; the block that
  computes a tile's last k-tile waits for the flags of the lower-numbered blocks sharing the tile and adds their
  partial sums nearest first — step 11's fixup, in a fixed order, so results are the same bit for bit on every run
  of one grid size;
* copy addresses (step 12 works them out once per block) are worked out once per run of k-tiles, and each run
  starts its pipeline afresh (the barrier at the top of every pipeline iteration also keeps a run's first copies out
  of the stage the previous run read last; by a run's last iteration every real copy group has landed).

Partial tiles: as in steps 10–11, the guarded variant (``EDGE``: zero-filling 4-byte copies, stores only inside C)
covers every tile with the same schedule whenever the fast one cannot take the whole product.

The split rule is ``StreamKTiles.split``: step 11's hybrid (:func:`gemm_steps.steps.stream_k.stream_k_split`: whole
waves data-parallel, the rest plus one wave by k-iterations, nothing split where a tile-per-block schedule keeps
≥ 90 % of the slots busy) by default; :func:`no_stream_k` turns the same kernel into step 10's persistent tile loop
(every tile data-parallel), :func:`all_stream_k` into pure stream-K. :func:`hybrid_launch` is step 11's fallback rule
applied to step 12: step 12's one-block-per-tile launch where the split leaves nothing to stream-K.

Why faster: step 12 runs ceil(T / 132) waves of its T tiles; where the last wave is part-empty (144 tiles: two
waves for 1.09 waves of work) or all waves are (few tiles with long k-loops: 1024×1024×8192 is 32 tiles, a quarter
of the SMs), stream-K keeps every SM busy for T / 132 tile-times plus the fixup.
Expect: ≈ step 12 where tiles fill whole waves (no stream-K tiles: the persistent loop, maybe a few % either way);
up to (waves rounded up)/(waves) faster at wave boundaries and several times faster on K-heavy shapes, minus the
partial sums' traffic (experiments/tensor_core_scheduling.py has the predictions per shape and the measurement).
"""

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import tensor_cores
from gemm_steps.toolkit.intrinsics import copy_async, load4_bypassing_l1, store4, store_if_inside
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN, ceil_div
from gemm_steps.toolkit.tensor_core_ops import (copy_async_commit, copy_async_or_zero, copy_async_wait, load_matrix_x4,
                                                mma_tf32, to_tf32)
from gemm_steps.steps.stream_k import stream_k_split
from gemm_steps.toolkit.persistent_tiles import StreamKTiles
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tuned import tuned_config
from gemm_steps.toolkit.unroll import registers, unroll

ARITHMETIC = "tf32"  # as step 12: inputs rounded to TF32, judged by harness.verify.tf32_tolerance


def tensor_core_stream_k_kernel(a, b, c, m, n, k, tile_rows, tile_cols, workspace, flags, dp_tiles, sk_tiles, *,
                                BLOCK_M, BLOCK_N, BLOCK_K, THREADS, WARPS_N, WARP_TILE_M, WARP_TILE_N, MMA_TILES_M,
                                MMA_TILES_N, A_LOADS, B_LOADS, A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, A_STRIDE, B_STRIDE,
                                STAGES, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, EDGE):
    """Tiles of C = A·B on the tensor cores (tile_cols per row of tiles): dp_tiles whole tiles, then sk_tiles shared
    out by k-iterations over the grid; a, b, c are flat row-major float32 arrays. The guarded variant (EDGE) covers
    partial tiles too."""
    # STAGES stages of A ([row][k], rows padded to A_STRIDE) from 0, then STAGES stages of B ([k][col], rows padded
    # to B_STRIDE) from B_BASE: one dynamic shared array, sized at launch.
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warp = tid // 32
    lane = tid % 32
    group = lane // 4  # rows group and group + 8 of an A or C piece, column group of a B piece
    pair = lane % 4  # k = pair and pair + 4 of an A or B piece, columns 2·pair and 2·pair + 1 of a C piece
    warp_row = warp // WARPS_N * WARP_TILE_M
    warp_col = warp % WARPS_N * WARP_TILE_N
    # Where this lane's fragment reads start in a stage (step 12: A through ldmatrix, B scalar).
    a_read = (warp_row + lane % 16) * A_STRIDE + lane // 16 * 4
    b_read = pair * B_STRIDE + warp_col + group
    # This thread's 16-byte copies: where they land in a stage (a_to, b_to) is fixed; where they start in A and B
    # (a_from, b_from) is worked out at the start of each run of k-tiles and moved on by one k-tile per copy.
    a_row, a_k, a_from, a_to = registers(A_LOADS), registers(A_LOADS), registers(A_LOADS), registers(A_LOADS)
    b_k, b_col, b_from, b_to = registers(B_LOADS), registers(B_LOADS), registers(B_LOADS), registers(B_LOADS)
    for load in unroll(A_LOADS):
        a_row[load] = (tid + load * THREADS) // A_VECTORS_PER_ROW
        a_k[load] = (tid + load * THREADS) % A_VECTORS_PER_ROW * 4
        a_to[load] = uint32(a_row[load] * A_STRIDE + a_k[load])
    for load in unroll(B_LOADS):
        b_k[load] = (tid + load * THREADS) // B_VECTORS_PER_ROW
        b_col[load] = (tid + load * THREADS) % B_VECTORS_PER_ROW * 4
        b_to[load] = uint32(b_k[load] * B_STRIDE + b_col[load])
    b_step = uint32(BLOCK_K * n)  # from one k-tile of B to the next
    acc = registers(MMA_TILES_M, MMA_TILES_N, 4)  # 4 results of C per mma piece, per lane
    a_frag = registers(MMA_TILES_M, 4)
    b_frag = registers(MMA_TILES_N, 2)

    # Step 11's work loop: this block's data-parallel tiles (block, block + G, … below dp_tiles), then its equal
    # share [sk_begin, sk_end) of the stream-K tiles' k-iterations, walked backwards (the pieces other blocks wait
    # for are computed first).
    k_tiles = uint32((k + BLOCK_K - 1) // BLOCK_K)
    blocks = uint32(cuda.gridDim.x)
    block = uint32(cuda.blockIdx.x)
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
        block_row = uint32(tile // tile_cols * BLOCK_M)
        block_col = uint32(tile % tile_cols * BLOCK_N)
        for i in unroll(MMA_TILES_M):
            for j in unroll(MMA_TILES_N):
                for r in unroll(4):
                    acc[i][j][r] = float32(0.0)
        k0 = uint32(k_first * BLOCK_K)  # the first k of the k-tile being copied
        for load in unroll(A_LOADS):
            a_from[load] = uint32((block_row + a_row[load]) * k + k0 + a_k[load])
        for load in unroll(B_LOADS):
            b_from[load] = uint32((k0 + b_k[load]) * n + block_col + b_col[load])
        load_stage = uint32(0)  # the stage k-tile t of this run is copied into (t % STAGES) …
        compute_stage = uint32(0)  # … and the one k-tile t - (STAGES - 1) is computed from

        # Step 12's pipeline, over k-tiles k_first … k_first + k_count - 1 of this tile. Iteration t: wait for k-tile
        # t - (STAGES - 1) to land, start copying k-tile t into stage t % STAGES, then compute k-tile t - (STAGES - 1).
        for t in range(k_count + STAGES - 1):
            copy_async_wait(STAGES - 2)  # of this thread's groups, all but the newest STAGES - 2 have landed
            cuda.syncthreads()  # … and so have every other thread's
            if t < k_count:
                stage_a = uint32(load_stage * A_STAGE_FLOATS)
                stage_b = uint32(B_BASE + load_stage * B_STAGE_FLOATS)
                for load in unroll(A_LOADS):
                    if EDGE:
                        for q in unroll(4):
                            copy_async_or_zero(tiles, stage_a + a_to[load] + q,
                                               a, block_row + a_row[load], k0 + a_k[load] + q, m, k)
                    else:
                        copy_async(tiles, uint32(stage_a + a_to[load]), a, a_from[load], 4)
                        a_from[load] = uint32(a_from[load] + BLOCK_K)
                for load in unroll(B_LOADS):
                    if EDGE:
                        for q in unroll(4):
                            copy_async_or_zero(tiles, stage_b + b_to[load] + q,
                                               b, k0 + b_k[load], block_col + b_col[load] + q, k, n)
                    else:
                        copy_async(tiles, uint32(stage_b + b_to[load]), b, b_from[load], 4)
                        b_from[load] = uint32(b_from[load] + b_step)
                k0 = uint32(k0 + BLOCK_K)
                load_stage = uint32(load_stage + 1)
                if load_stage == STAGES:
                    load_stage = uint32(0)
            copy_async_commit()  # one group per iteration (empty near the end), so wait_group counts k-tiles
            if t >= STAGES - 1:
                a_base = uint32(compute_stage * A_STAGE_FLOATS + a_read)
                b_base = uint32(B_BASE + compute_stage * B_STAGE_FLOATS + b_read)
                for kk in unroll(0, BLOCK_K, 8):  # the k-tile in steps of the mma's k = 8
                    for i in unroll(MMA_TILES_M):  # a0 … a3 of piece i in one ldmatrix
                        x0, x1, x2, x3 = load_matrix_x4(tiles, a_base + (i * 16 * A_STRIDE + kk))
                        a_frag[i][0], a_frag[i][1] = to_tf32(x0), to_tf32(x1)
                        a_frag[i][2], a_frag[i][3] = to_tf32(x2), to_tf32(x3)
                    for j in unroll(MMA_TILES_N):  # column group of piece j; k = pair, pair + 4
                        b_frag[j][0] = to_tf32(tiles[b_base + (kk * B_STRIDE + j * 8)])
                        b_frag[j][1] = to_tf32(tiles[b_base + ((kk + 4) * B_STRIDE + j * 8)])
                    for i in unroll(MMA_TILES_M):
                        for j in unroll(MMA_TILES_N):
                            acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3] = mma_tf32(
                                a_frag[i][0], a_frag[i][1], a_frag[i][2], a_frag[i][3], b_frag[j][0], b_frag[j][1],
                                acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])
                compute_stage = uint32(compute_stage + 1)
                if compute_stage == STAGES:
                    compute_stage = uint32(0)

        if k_first + k_count < k_tiles:
            # We stop before the tile's last k-tile: leave our partial sums in our workspace slot and raise our flag
            # for the block that finishes the tile (it has a higher number, so it never makes us wait). Value r of
            # piece (i, j) of thread t goes to slot + ((i * MMA_TILES_N + j) * 4 + r) * THREADS + t.
            slot = block * (BLOCK_M * BLOCK_N) + tid
            for i in unroll(MMA_TILES_M):
                for j in unroll(MMA_TILES_N):
                    store4(workspace, slot + (i * MMA_TILES_N + j) * 4 * THREADS, THREADS,
                           acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])
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
                            pass  # spin: that block never waits on us (step 11's docstring: residency)
                        cuda.threadfence()  # pairs with the writer's fence across the flag (step 11)
                        flags[other] = 0  # reset for the next launch (each flag is raised once per launch)
                    cuda.syncthreads()  # the other threads read after thread 0's fence
                    slot = other * (BLOCK_M * BLOCK_N) + tid
                    for i in unroll(MMA_TILES_M):
                        for j in unroll(MMA_TILES_N):
                            w0, w1, w2, w3 = load4_bypassing_l1(workspace, slot + (i * MMA_TILES_N + j) * 4 * THREADS,
                                                                THREADS)
                            acc[i][j][0] += w0
                            acc[i][j][1] += w1
                            acc[i][j][2] += w2
                            acc[i][j][3] += w3

        # Lane (group, pair) holds C[group][2·pair], C[group][2·pair + 1], C[group + 8][…] of every piece.
        for i in unroll(MMA_TILES_M):
            for j in unroll(MMA_TILES_N):
                for r in unroll(4):
                    row = block_row + warp_row + group + (i * 16 + r // 2 * 8)
                    col = block_col + warp_col + pair * 2 + (j * 8 + r % 2)
                    if EDGE:
                        store_if_inside(c, row, col, m, n, acc[i][j][r])
                    else:
                        c[row * n + col] = acc[i][j][r]


def no_stream_k(tiles: int, blocks: int) -> tuple[int, int]:
    """Every tile data-parallel: the kernel is step 10's persistent tile loop (grid-stride, row-major order)."""
    return tiles, 0


def all_stream_k(tiles: int, blocks: int) -> tuple[int, int]:
    """Every tile split by k-iterations over the grid."""
    return 0, tiles


#: Step 12's tiles: the tuned (or first) configuration on a GPU, its small SIMULATOR_CONFIG on the simulator.
CONFIG = tuned_config("tensor_cores", tensor_cores.SEARCH_SPACE, simulator=tensor_cores.SIMULATOR_CONFIG)


def build(config: TileConfig = CONFIG, split=stream_k_split, name: str = "tensor_cores_stream_k",
          overrides: dict | None = None) -> StreamKTiles:
    """The kernel with step 12's layout for ``config``, launched on step 11's schedule with ``split`` deciding
    (data-parallel, stream-K) tiles. Builds with the same ``name`` and configuration generate the same source, so on
    a GPU the second one loads the first one's compiled kernel from Numba's disk cache."""
    constants = tensor_cores.Config.of(config).check().constants()
    return StreamKTiles(name, tensor_core_stream_k_kernel, config, constants, overrides, split=split)


def hybrid_launch(stream_k: StreamKTiles, data_parallel):
    """Step 11's rule with step 12 as its data-parallel kernel: where ``stream_k.split`` leaves no stream-K tiles
    (from the same occupancy estimate step 11 uses, before anything compiles), ``data_parallel.launch`` (step 12's
    one block per tile); otherwise ``stream_k.launch``."""
    config = stream_k.config

    def launch(a, b, c, stream=0):
        tiles = ceil_div(a.shape[0], config.BLOCK_M) * ceil_div(b.shape[1], config.BLOCK_N)
        if stream_k.split(tiles, stream_k.estimated_resident_blocks())[1] == 0:
            data_parallel.launch(a, b, c, stream)
        else:
            stream_k.launch(a, b, c, stream)

    return launch


def ptx_kernels() -> dict:
    """The fast and guarded kernels for step 12's GPU tiles, ``{label: (dispatcher, signature)}`` (a ``kernels:``
    job of tests/ptx_jobs.py; compiled in GPU mode, where CONFIG is the GPU's)."""
    return build(CONFIG).ptx_kernels()
