"""Step 20 with its remote arrivals written ``.release.cluster``: the one change is the memory order and scope of the
consumers' arrival on the empty barriers (``mbarrier.arrive.release.cluster.shared::cluster.b64`` instead of the
default ``.release`` at ``.cta`` scope that ``cluster_ops.mbarrier_arrive_cluster`` uses). The first GPU build of step
20 was written this way. Measured by experiments/cluster_arrive_scope.py.
"""

from __future__ import annotations

from numba import cuda, float32, uint32, uint64

from gemm_steps.steps import cluster_multicast, warpgroup_tf32
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.cluster_ops import cluster_rank, cluster_sync, copy_tile_multicast, fence_mbarrier_init
from gemm_steps.toolkit.intrinsics import divide_u32
from gemm_steps.toolkit.kernel_tools import SHARED_ALIGN
from gemm_steps.toolkit.mbarrier_ops import (copy_tile, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
                                             tensor_map_acquire)
from gemm_steps.toolkit.tensor_core_ops import to_tf32
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.tma_tiles import ClusterTmaTiles
from gemm_steps.toolkit.unroll import registers, unroll
from gemm_steps.toolkit.warpgroup_ops import (SWIZZLE_ALIGN, fence_proxy_async, first_aligned, operand_bits,
                                              registers_lower_to, registers_raise_to, shared_address,
                                              swizzled_descriptor, warpgroup_commit, warpgroup_fence,
                                              warpgroup_wait_all, warpgroup_wait_but_one, wgmma_tf32,
                                              zero_accumulators)

if SIMULATOR:  # the simulator has no memory orders: the twin is step 20's
    from gemm_steps.toolkit.cluster_ops import mbarrier_arrive_cluster as arrive_release_cluster
else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from gemm_steps.toolkit.warpgroup_ops import shared_address_value

    @intrinsic
    def arrive_release_cluster(typingctx, array, index, rank):
        """``mapa`` + ``mbarrier.arrive.release.cluster.shared::cluster.b64``: one arrival on ``array[index]`` of
        block ``rank``, every earlier memory access of this thread made visible to the cluster first."""
        if not (isinstance(array, types.Array) and isinstance(index, types.Integer)
                and isinstance(rank, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            address = shared_address_value(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            peer = context.cast(builder, args[2], sig.args[2], types.uint32)
            text = ("{\n\t.reg .b32 remote;\n\tmapa.shared::cluster.u32 remote, $0, $1;\n\t"
                    "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n\t}")
            function_type = ir.FunctionType(ir.VoidType(), [address.type, peer.type])
            builder.call(ir.InlineAsm(function_type, text, "r,r,~{memory}", side_effect=True), [address, peer])
            return context.get_dummy_value()

        return types.void(array, index, rank), codegen


def cluster_multicast_release_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, a_map, b_map, *,
                                     BLOCK_M, BLOCK_N, BLOCK_K, B_STRIDE, K_STEPS, ACCUMULATORS, STAGES, WARPS,
                                     BARRIERS, A_STAGE_FLOATS, B_STAGE_FLOATS, B_BASE, STAGE_BYTES, GROUP_M, CONSUMERS,
                                     PRODUCER_REGISTERS, CONSUMER_REGISTERS, CLUSTER, A_HALF_ROWS, CLUSTER_MASK):
    """Step 20's kernel, its remote arrivals released at cluster scope."""
    barriers = cuda.shared.array(BARRIERS, uint64)  # full[s] at s, empty[s] at STAGES + s
    tiles = cuda.shared.array(0, float32, alignment=SHARED_ALIGN)
    tiles = tiles[first_aligned(tiles, SWIZZLE_ALIGN):]  # the static barriers moved it: realign for the swizzle
    n, k = uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    warpgroup = tid // 128
    warp = tid % 128 // 32
    lane = tid % 32
    rank = cluster_rank()  # this block's place in its cluster: blockIdx.x % CLUSTER
    # Cluster j takes pair j of tiles in grouped order (step 16's, over pairs); block r of it the pair's r-th column.
    tile_rows, pair_cols = uint32(cuda.gridDim.y), uint32(cuda.gridDim.x) // CLUSTER
    cluster_index = uint32(cuda.blockIdx.y) * pair_cols + uint32(cuda.blockIdx.x) // CLUSTER
    first_row = uint32(cuda.blockIdx.y) // GROUP_M * GROUP_M  # the group's first tile-row
    rows_in_group = uint32(min(tile_rows - first_row, uint32(GROUP_M)))  # the last group may be shorter
    in_group = cluster_index - first_row * pair_cols
    across = divide_u32(in_group, rows_in_group)  # a 32-bit division: a 64-bit one would serialise every wgmma
    block_row = (first_row + (in_group - across * rows_in_group)) * BLOCK_M  # down the group's rows…
    block_col = (across * CLUSTER + rank) * BLOCK_N  # …then on to the next pair of columns
    k_tiles = k // BLOCK_K
    if tid == 0:
        for s in unroll(STAGES):
            mbarrier_init(barriers, s, 1)  # full: this block's producer arrives once; both blocks' bytes land
            mbarrier_init(barriers, STAGES + s, CLUSTER * WARPS)  # empty: every consumer warp of the cluster
        tensor_map_acquire(a_map)
        tensor_map_acquire(b_map)
        fence_mbarrier_init()  # the initialised barriers → visible to the peer block's arrivals and copies
    fence_proxy_async()  # … and to the copy engine
    cluster_sync()  # both blocks' barriers are ready before either block's copies or arrivals reach them

    if warpgroup == CONSUMERS:  # the producer warpgroup: gives up registers; one thread issues the copies
        registers_lower_to(PRODUCER_REGISTERS)
        if tid == CONSUMERS * 128:
            for t in range(k_tiles):
                stage = t % STAGES
                if t >= STAGES:  # refill: wait until every consumer warp of *both* blocks released the stage
                    mbarrier_wait(barriers, STAGES + stage, uint32((t // STAGES - 1) % 2))
                mbarrier_arrive_expect_tx(barriers, stage, STAGE_BYTES)  # all of A (two halves) and B land here
                copy_tile_multicast(tiles, stage * A_STAGE_FLOATS + rank * A_HALF_ROWS * BLOCK_K, a_map,
                                    block_row + rank * A_HALF_ROWS, t * BLOCK_K, barriers, stage, CLUSTER_MASK)
                copy_tile(tiles, B_BASE + stage * B_STAGE_FLOATS, b_map, t * BLOCK_K, block_col, barriers, stage)
    else:  # a consumer warpgroup: takes the registers; only waits for data, multiplies and releases stages
        registers_raise_to(CONSUMER_REGISTERS)
        base = shared_address(tiles, 0)
        fragment_at = (lane % 4) * B_STRIDE + warpgroup * 64 + warp * 16 + lane // 4
        acc = zero_accumulators(ACCUMULATORS)
        b_frag = registers(2, K_STEPS, 4)  # two sets: k-tile u loads set u % 2 while k-tile u − 1 reads the other
        for pair in range(0, k_tiles, 2):  # two k-tiles a pass: the register set is known when compiling
            for half in unroll(2):
                u = pair + half
                if u < k_tiles:
                    stage = u % STAGES
                    stage_b = uint32(B_BASE + stage * B_STAGE_FLOATS)
                    mbarrier_wait(barriers, stage, uint32(u // STAGES % 2))  # both halves of A and B have landed
                    for s in unroll(K_STEPS):
                        for q in unroll(4):
                            x = tiles[stage_b + fragment_at + ((s * 8 + q // 2 * 4) * B_STRIDE + q % 2 * 8)]
                            b_frag[half][s][q] = operand_bits(to_tf32(x))
                    warpgroup_fence()
                    for s in unroll(K_STEPS):
                        a_tile = swizzled_descriptor(base + (stage * A_STAGE_FLOATS * 4 + s * 32))
                        acc = wgmma_tf32(tiles, b_frag[half][s][0], b_frag[half][s][1], b_frag[half][s][2],
                                         b_frag[half][s][3], a_tile, acc, 1)
                    warpgroup_commit()
                    acc = warpgroup_wait_but_one(acc)  # k-tile u − 1's wgmma are done: its stage is free
                    if u > 0 and lane == 0:
                        for r in unroll(CLUSTER):  # … here and in the peer, whose producer multicasts into it too
                            arrive_release_cluster(barriers, STAGES + (u - 1) % STAGES, r)
        acc = warpgroup_wait_all(acc)

        for v in unroll(ACCUMULATORS):
            row = block_row + lane % 4 * 2 + (v // 4 * 8 + v % 2)
            col = block_col + warpgroup * 64 + warp * 16 + lane // 4 + (v % 4 // 2 * 8)
            c[row * n + col] = acc[v]
    cluster_sync()  # the peer's last arrivals on this block's barriers are in: its shared memory may go


def build(config: TileConfig, cluster: int = cluster_multicast.Config.CLUSTER) -> ClusterTmaTiles:
    return ClusterTmaTiles("cluster_multicast_release", cluster_multicast_release_kernel, config,
                           cluster_multicast.Config.of(config, CLUSTER=cluster).check().constants(),
                           edge=warpgroup_tf32.build(config),
                           requires_compute_capability=cluster_multicast.REQUIRES_COMPUTE_CAPABILITY)
