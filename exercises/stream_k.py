"""Exercise `stream_k` (step 11's idea): deal the tiles' k-iterations out evenly over the blocks, and fix up the tiles
that several blocks share.

Grade it:  gemm-steps exercise check stream_k

The grader launches your kernel with a few blocks of 16×16 threads — G of them, a different G for each shape:
    stream_k_kernel[G, (16, 16)](a, b, c, workspace, flags)
a is M×K, b is K×N, c is M×N (float32). C is cut into 16×16 tiles, numbered row by row (tile t is at tile-row
t // col_tiles, tile-column t % col_tiles); thread (tx, ty) of a block computes element (ty, tx) of a tile. Every
tile is stream-K (lesson 11's picture with fewer than two waves): a **k-iteration** is one tile's sum over 16
values of k, tile t's k-iterations are numbered t·k_tiles … (t + 1)·k_tiles − 1, and all of them are dealt evenly to
the G blocks.
    workspace: G × 256 float32, block b's slot is workspace[b·256 : (b + 1)·256] (NaN before the launch)
    flags:     G int32, all 0 before the launch; flags[b] is block b's flag

1. ``stream_k_share(block, blocks, iterations)`` → (begin, end): block's k-iterations [begin, end), an even split
   (each block ⌊I/G⌋ or ⌈I/G⌉ of them, in order, every iteration exactly once). The grader checks it on its own first.
2. The kernel: walk your share from its end back to its start, one piece per tile (a piece is the part of your share
   inside one tile), and compute each piece with ``partial_sum`` (given: leave it as it is). Then, for the piece:
   * it does not reach the tile's last k-iteration: you are a **writer**. Store your partial sum in your slot, make it
     visible GPU-wide (cuda.threadfence()), let the whole block get there (cuda.syncthreads()), and raise your flag
     (thread 0: cuda.atomic.exch(flags, block, 1)). A block writes at most one partial sum: why?
   * it does: you **own** the tile. For each lower-numbered block whose share ends inside this tile, nearest first:
     thread 0 waits until its flag is raised (spin on cuda.atomic.add(flags, other, 0) — a plain read may be read
     once and never again on a GPU), fences (cuda.threadfence(): the flag's read orders nothing after it), resets the
     flag to 0 for the next launch; cuda.syncthreads(); then every thread adds that block's partial sum. Then store C.

What the grader watches, on the simulator: which blocks computed each k-iteration (twice, never, or an uneven
share), who stored each tile of C, and every access to workspace and flags with its order — a partial sum read
before its writer's release (write, fence, flag) and the reader's acquire (flag, fence) is a race it names, even
though the simulator (one block at a time, in index order) would give the right numbers anyway.

Hints
* Lesson 11, "The fixup protocol", and the kernel of step 11 (``gemm-steps`` prints it: python -c "import gemm_steps;
  print(gemm_steps.get_step('stream_k').source())"), the part after its k-loop.
* With a share computed by stream_k_share, block `other` had work iff its begin < its end, and its share ends inside
  tile t iff its end > t·k_tiles.
* syncthreads inside an ``if`` is fine when every thread of the block takes the same branch: here the branches depend
  only on the block, the tile and the shape.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32  # noqa: F401

TILE = 16


@cuda.jit(device=True)
def stream_k_share(block, blocks, iterations):
    # Your code here.
    return 0, 0


@cuda.jit(device=True)
def partial_sum(a, b, row, col, k_first, k_count):
    """Given: Σ a[row, k]·b[k, col] over k-iterations k_first … k_first + k_count − 1 (0 outside A or B)."""
    acc = float32(0.0)
    if row < a.shape[0] and col < b.shape[1]:
        for k in range(k_first * TILE, min((k_first + k_count) * TILE, a.shape[1])):
            acc += a[row, k] * b[k, col]
    return acc


@cuda.jit
def stream_k_kernel(a, b, c, workspace, flags):
    m, k_total = a.shape
    n = b.shape[1]
    # Your code here: your share, then the pieces from its end back to its start.
    pass
