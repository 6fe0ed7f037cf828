"""Exercise `tma_store` (lesson 23): step 23's epilogue — a tile of C stored through chunk buffers in shared memory by
the copy engine (TMA store), in the order that keeps every buffer safe.

Grade it:  gemm-steps exercise check tma_store

The grader launches your kernel as
    tma_store_kernel[(ceil(N / BLOCK_N), ceil(M / BLOCK_M)), THREADS](a, b, c_map)
a is M×K, b is K×N (float32), N a multiple of 4; c_map is the tensor map of C (M×N, float32) with boxes of
CHUNK_ROWS × BLOCK_N (4 rows × 32 floats, row-major in shared memory). Block (x, y) holds the 32 × 32 tile of C at
rows BLOCK_M·y …, columns BLOCK_N·x …, cut into CHUNKS = 8 chunks of 4 rows: thread tid holds, for each chunk j, the
element at row tid // 32, column tid % 32 of chunk j, in acc[j] (given: a plain loop over K; 0 past C).

You write the epilogue. Chunk j goes through buffer j % BUFFERS of a shared array of BUFFERS × CHUNK_FLOATS floats
(buffer b starts at b · CHUNK_FLOATS; the chunk's row r, column x at r · BLOCK_N + x, so thread tid's element at
tid):
* every thread writes its element of chunk j into the buffer, then fence_proxy_async() — its shared-memory writes
  made visible to the copy engine (the async proxy);
* the block meets at a barrier; then one thread (the *leader*) issues the chunk's store_tile(c_map, row, col,
  buffers, start of the buffer) and store_commit() — one bulk async-group. The copy engine clips the box to C: no
  bounds check;
* the copy engine reads a buffer *after* store_tile returns, so before any thread writes a buffer again the leader
  waits until the store that last read it is done reading — store_wait_read(n) returns once at most n of the
  leader's groups are still reading — and a barrier after that wait holds the other threads back until then;
* before the block ends, the leader waits for all its stores (store_wait(0)): the block's shared memory must outlive
  the copy engine's reads.

The grader checks, on the simulator, each thread's writes, fences, barriers, stores, commits and waits in the order
they are ordered on a GPU (the simulator's store writes at once and its waits wait for nothing, so the grader models
the copy engine's reads itself): a write into a buffer a store may still be reading, a store issued before every
thread's write was fenced and met, a chunk stored by several threads, twice, at the wrong box or never, a block that
may end with a store still reading — each with your line and a drawing of the buffers; then the numbers, at two ragged
shapes, with C filled with NaN first.

Hints
* Lesson 23, "The second change alone: the TMA store" (its table is this epilogue's order), and step 23's epilogue:
  python -c "import gemm_steps; print(gemm_steps.get_step('cluster_stream_k_tma_store').source())" — search for
  "# The epilogue:". Step 23 meets at a named barrier per warpgroup (its block has three); here the block is one
  warpgroup, so cuda.syncthreads() is the same barrier.
* The count n of store_wait_read(n) is a number in the call (the GPU's instruction holds it): how many of the
  leader's stores may still be reading when the next buffer is written? It depends on where the wait stands.
* gemm_steps/toolkit/tma_store_ops.py says what each operation is in PTX, and what its simulator twin does.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32  # noqa: F401

from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.tma_store_ops import store_commit, store_tile, store_wait, store_wait_read  # noqa: F401
from gemm_steps.toolkit.warpgroup_ops import fence_proxy_async  # noqa: F401

THREADS = 128  # one warpgroup: warp w holds row w of every chunk, lane l column l
BLOCK_M = 32  # rows of C a block holds
BLOCK_N = 32  # columns of C a block holds: 128 bytes, one row of a store box
CHUNK_ROWS = 4  # rows of C a chunk holds: one per warp
CHUNKS = BLOCK_M // CHUNK_ROWS  # chunk j: rows BLOCK_M · blockIdx.y + CHUNK_ROWS · j …
CHUNK_FLOATS = CHUNK_ROWS * BLOCK_N  # one chunk, row-major: the copy engine's box (the tensor map's 4 × 32)
BUFFERS = 3  # chunk j goes through buffer j % BUFFERS
BUFFER_FLOATS = BUFFERS * CHUNK_FLOATS  # (a shared array's shape: one constant)
BUFFER_ALIGN = None if SIMULATOR else 128  # the copy engine reads a tile at a 128-byte-aligned shared address


@cuda.jit
def tma_store_kernel(a, b, c_map):
    m, k_total = a.shape
    n = b.shape[1]
    tid = cuda.threadIdx.x
    block_row = cuda.blockIdx.y * BLOCK_M
    block_col = cuda.blockIdx.x * BLOCK_N
    col = block_col + tid % 32
    acc = cuda.local.array(CHUNKS, float32)  # acc[j]: this thread's element of chunk j (0 past C)
    for j in range(CHUNKS):
        row = block_row + j * CHUNK_ROWS + tid // 32
        total = float32(0.0)
        if row < m and col < n:
            for k in range(k_total):
                total += a[row, k] * b[k, col]
        acc[j] = total
    # Your code here: the buffers, on their own line —
    #     buffers = cuda.shared.array(BUFFER_FLOATS, float32, alignment=BUFFER_ALIGN)
    # then, for each chunk j: write, fence, (the leader's wait), barrier, the leader's store and commit; and the
    # leader's last wait.
    pass
