"""Exercise `shared_memory` (step 3): stage 32×32 tiles of A and B in shared memory, then compute from there.

Grade it:  gemm-steps exercise check shared_memory

The grader launches your kernel as
    shared_memory_kernel[(ceil(N / 32), ceil(M / 32)), (32, 32)](a, b, c)
Block (x, y) computes the 32×32 tile of C at rows 32·y…, columns 32·x…; thread (tx, ty) computes
c[32·y + ty, 32·x + tx].

The loop over K, one 32-wide slice at a time:
1. every thread copies one element of A's slice and one of B's into the shared tiles (zero where the slice runs
   past the edge of A or B, so the sum below needs no bounds checks);
2. wait until the whole block has copied: cuda.syncthreads();
3. 32 multiply-adds from the shared tiles;
4. wait again before the next copy overwrites the tiles.

Hints
* cuda.shared.array((TILE, TILE), float32) makes a tile; give each its own line (the simulator tells them apart by
  line).
* Forget either syncthreads and the grader's race check will show you which threads collide, and on what.
* Threads outside C still help copy tiles (and must reach every syncthreads): only the final store is guarded.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32  # noqa: F401

TILE = 32


@cuda.jit
def shared_memory_kernel(a, b, c):
    m, k_total = a.shape
    n = b.shape[1]
    # Your code here: the two shared tiles, this thread's row and column, the loop over k0 = 0, 32, 64, …
    pass
