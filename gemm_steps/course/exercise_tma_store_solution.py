"""The solution of the TMA-store exercise (``exercises/tma_store.py``, lesson 23). Read it after you have tried.

Step 23's epilogue without the rest of step 23: one warpgroup holds a 32 × 32 tile of C in registers, one element of
each 4-row chunk a thread, and stores it through three chunk buffers in shared memory with the copy engine. Chunk j
goes through buffer j % BUFFERS: every thread writes its element and fences, the issuing thread waits until the store
of chunk j − 2 has read its buffer (the one chunk j + 1 writes), the block meets, and the issuing thread stores chunk j
and commits it. At the end it waits for every store before the block ends.
"""

from numba import cuda, float32

from ..toolkit.backend import SIMULATOR
from ..toolkit.tma_store_ops import store_commit, store_tile, store_wait, store_wait_read
from ..toolkit.warpgroup_ops import fence_proxy_async

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
    buffers = cuda.shared.array(BUFFER_FLOATS, float32, alignment=BUFFER_ALIGN)
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
    leader = tid == 0  # the thread that issues the stores, commits them and waits for them
    for j in range(CHUNKS):
        buffer = (j % BUFFERS) * CHUNK_FLOATS  # where buffer j % BUFFERS starts
        buffers[buffer + tid] = acc[j]  # row tid // 32, column tid % 32 of chunk j
        fence_proxy_async()  # this thread's shared stores → visible to the copy engine (the async proxy)
        if leader:
            store_wait_read(1)  # chunk j − 2's store has read its buffer: the one chunk j + 1 writes
        cuda.syncthreads()  # chunk j written and fenced; chunk j + 1's buffer free
        if leader:
            store_tile(c_map, block_row + j * CHUNK_ROWS, block_col, buffers, buffer)  # clipped to C
            store_commit()
    if leader:
        store_wait(0)  # every store has read its buffer (and written C) before the block ends
