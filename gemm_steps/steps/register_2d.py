"""Step 5 — 2D register tiling: each thread computes an 8×8 block of C, with unsigned index math.

Changed from step 4: a thread owns a THREAD_M × THREAD_N = 8×8 block of results. Per k it loads a column of 8 A
values and a row of 8 B values from shared memory into registers (``a_frag``, ``b_frag``) and does their outer
product: 64 FMAs for 16 shared loads. The block tile grows to 128×128 (BLOCK_K = 8) with 256 threads, so each
global element is reused 128 times instead of 64.
Why faster: shared loads per FMA fall from ≈1.1 to 0.25, and global traffic per FMA halves again.

And one change that is not about tiling: **every index is an unsigned 32-bit integer.** Numba supports negative
indices (``x[-1]``), so for a *signed* index it emits a check and a fix-up on every array access (three 64-bit
integer instructions, each two on the GPU). Written the obvious way (``register_2d_signed_kernel`` below, kept for
lesson 5), this kernel spends more instructions on that than on FMAs and runs slower than step 3. Casting the
thread and block indices to ``uint32`` and using the ``uint32`` constants ``BM``, ``TM``, … in every index keeps all
index math unsigned (Numba types a NumPy-scalar global by its dtype, and a loop over ``range(TM)`` counts in
``uint64``), so the checks disappear. A single plain Python int in an index expression (``row * 8``) makes it
signed 64-bit again.
Still plain Numba: 2-D arrays, scalar loads, loops the compiler may or may not unroll. The next steps attack those.
Edges: zero-filled tile loads, guarded stores.
"""

from numba import cuda, float32, uint32

from ..toolkit.kernel_tools import ceil_div, kernel

TITLE = "2D register tiling: an 8×8 block per thread"
SUMMARY = "Each thread computes an 8×8 outer product per k from 16 shared loads; all index math unsigned."

BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 8
THREAD_M, THREAD_N = 8, 8
THREADS = (BLOCK_M // THREAD_M) * (BLOCK_N // THREAD_N)  # 256
A_LOADS = BLOCK_M * BLOCK_K // THREADS  # tile elements each thread copies: 4 of A…
B_LOADS = BLOCK_K * BLOCK_N // THREADS  # …and 4 of B
CONFIG = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "THREAD_M": THREAD_M, "THREAD_N": THREAD_N,
          "THREADS": THREADS}

# The same numbers as unsigned 32-bit integers, for index math inside the kernel (see the docstring).
BM, BN, BK, TM, TN, NT = (uint32(x) for x in (BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS))
ZERO = uint32(0)


@kernel
def register_2d_kernel(a, b, c):
    m, k_total, n = uint32(a.shape[0]), uint32(a.shape[1]), uint32(b.shape[1])
    a_tile = cuda.shared.array((BLOCK_M, BLOCK_K), float32)
    b_tile = cuda.shared.array((BLOCK_K, BLOCK_N), float32)
    tid = uint32(cuda.threadIdx.x)
    block_row = uint32(cuda.blockIdx.y) * BM
    block_col = uint32(cuda.blockIdx.x) * BN
    thread_row = tid // (BN // TN)  # 0..15
    thread_col = tid % (BN // TN)  # 0..15

    acc = cuda.local.array((THREAD_M, THREAD_N), float32)
    a_frag = cuda.local.array(THREAD_M, float32)
    b_frag = cuda.local.array(THREAD_N, float32)
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = 0.0

    for k0 in range(ZERO, k_total, BK):
        for load in range(A_LOADS):
            index = tid + uint32(load) * NT
            tile_row, tile_col = index // BK, index % BK
            row, col = block_row + tile_row, k0 + tile_col
            a_tile[tile_row, tile_col] = a[row, col] if row < m and col < k_total else float32(0.0)
        for load in range(B_LOADS):
            index = tid + uint32(load) * NT
            tile_row, tile_col = index // BN, index % BN
            row, col = k0 + tile_row, block_col + tile_col
            b_tile[tile_row, tile_col] = b[row, col] if row < k_total and col < n else float32(0.0)
        cuda.syncthreads()
        for kk in range(BK):
            for i in range(TM):
                a_frag[i] = a_tile[thread_row * TM + i, kk]
            for j in range(TN):
                b_frag[j] = b_tile[kk, thread_col * TN + j]
            for i in range(TM):  # the outer product: 64 FMAs from 16 shared loads
                for j in range(TN):
                    acc[i, j] += a_frag[i] * b_frag[j]
        cuda.syncthreads()

    for i in range(TM):
        row = block_row + thread_row * TM + i
        for j in range(TN):
            col = block_col + thread_col * TN + j
            if row < m and col < n:
                c[row, col] = acc[i, j]


@kernel
def register_2d_signed_kernel(a, b, c):
    """The first attempt at step 5, kept for lesson 5: the same kernel with Python ints and Numba's default
    (signed 64-bit) index types — every array access pays for a negative-index check."""
    m, k_total = a.shape
    n = b.shape[1]
    a_tile = cuda.shared.array((BLOCK_M, BLOCK_K), float32)
    b_tile = cuda.shared.array((BLOCK_K, BLOCK_N), float32)
    tid = cuda.threadIdx.x
    block_row = cuda.blockIdx.y * BLOCK_M
    block_col = cuda.blockIdx.x * BLOCK_N
    thread_row = tid // (BLOCK_N // THREAD_N)
    thread_col = tid % (BLOCK_N // THREAD_N)

    acc = cuda.local.array((THREAD_M, THREAD_N), float32)
    a_frag = cuda.local.array(THREAD_M, float32)
    b_frag = cuda.local.array(THREAD_N, float32)
    for i in range(THREAD_M):
        for j in range(THREAD_N):
            acc[i, j] = 0.0

    for k0 in range(0, k_total, BLOCK_K):
        for load in range(A_LOADS):
            index = tid + load * THREADS
            tile_row, tile_col = index // BLOCK_K, index % BLOCK_K
            row, col = block_row + tile_row, k0 + tile_col
            a_tile[tile_row, tile_col] = a[row, col] if row < m and col < k_total else float32(0.0)
        for load in range(B_LOADS):
            index = tid + load * THREADS
            tile_row, tile_col = index // BLOCK_N, index % BLOCK_N
            row, col = k0 + tile_row, block_col + tile_col
            b_tile[tile_row, tile_col] = b[row, col] if row < k_total and col < n else float32(0.0)
        cuda.syncthreads()
        for kk in range(BLOCK_K):
            for i in range(THREAD_M):
                a_frag[i] = a_tile[thread_row * THREAD_M + i, kk]
            for j in range(THREAD_N):
                b_frag[j] = b_tile[kk, thread_col * THREAD_N + j]
            for i in range(THREAD_M):
                for j in range(THREAD_N):
                    acc[i, j] += a_frag[i] * b_frag[j]
        cuda.syncthreads()

    for i in range(THREAD_M):
        row = block_row + thread_row * THREAD_M + i
        for j in range(THREAD_N):
            col = block_col + thread_col * THREAD_N + j
            if row < m and col < n:
                c[row, col] = acc[i, j]


def _grid(c):
    m, n = c.shape
    return ceil_div(n, BLOCK_N), ceil_div(m, BLOCK_M)


def launch(a, b, c, stream=0):
    register_2d_kernel[_grid(c), THREADS, stream](a, b, c)


def launch_signed(a, b, c, stream=0):
    """Lesson 5's first attempt (not the step): same grid, signed index math."""
    register_2d_signed_kernel[_grid(c), THREADS, stream](a, b, c)


_MATRIX = "float32[:, ::1]"
KERNELS = {"register_2d": (register_2d_kernel, f"void({_MATRIX}, {_MATRIX}, {_MATRIX})")}
#: Compiled by the tests too (PTX shape, simulator correctness), though no step launches it through the API.
COUNTER_EXAMPLES = {"register_2d_signed": (register_2d_signed_kernel, f"void({_MATRIX}, {_MATRIX}, {_MATRIX})")}
