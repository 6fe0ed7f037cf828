"""Step 6 — vectorized memory access: 128-bit loads and stores, A transposed in shared memory, flat arrays.

Changed from step 5, same 128×128×8 tiles and 8×8 per thread (step 5 already does all its index math in unsigned
integers, so there is no negative-index check to remove here):
* **128-bit accesses.** Global loads of A and B, shared loads of the fragments and stores of C move four floats
  per instruction (``load_float4`` / ``store_float4`` from :mod:`gemm_steps.intrinsics`: ``LDG.E.128``,
  ``LDS.128``, ``STG.E.128``) — 4× fewer load/store instructions competing with the FMAs for issue slots.
* **A transposed in shared memory** (``a_tile[k][row]``), so a thread's 8 A values for one k are contiguous and
  load as two float4, like its 8 B values.
* **Flat arrays.** ``a[row, k]`` on a 2-D Numba array multiplies by a row length read from the array at run time;
  ``a[row * k_total + k]`` on a flat array, with the same unsigned ``uint32`` index math as step 5, is one
  multiply-add by the kernel's own argument.
* **16-byte-aligned shared memory** (``alignment=SHARED_ALIGN``), which 128-bit shared accesses require.
Why faster: 4× fewer load and store instructions, and fewer shared-memory wavefronts per FMA (lesson 4's model:
A's fragment loads no longer conflict).
Expect: ≈1.3× step 5 (measured on an H200: 46 % → 59 % of cuBLAS).
Edges: the kernel is compiled twice, as a fast kernel for full tiles and a guarded edge kernel (its ``if EDGE:``
branches, decided at compile time: :mod:`gemm_steps.toolkit.kernel_builds`).
"""

from dataclasses import dataclass

from numba import cuda, float32, uint32

from ..toolkit.intrinsics import load_float4, store_float4
from ..toolkit.kernel_builds import STATIC_SHARED_LIMIT
from ..toolkit.kernel_tools import SHARED_ALIGN
from ..toolkit.tile_config import StepConfig
from ..toolkit.tiles import TiledKernels
from ..toolkit.tuned import Tuning

TITLE = "Vectorized: 128-bit loads and stores, transposed A tile, flat arrays"
SUMMARY = "Move 4 floats per load/store instruction with a small LLVM intrinsic; A transposed so its fragments load 4 at a time."


def vectorized_kernel(a, b, c, m, n, k, full_row_blocks, full_col_blocks, *,
                      BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, THREADS, THREADS_N, A_LOADS, B_LOADS,
                      A_VECTORS_PER_ROW, B_VECTORS_PER_ROW, EDGE):
    """One BLOCK_M×BLOCK_N tile of C = A·B; a, b, c are flat row-major float32 arrays.

    Compile-time constants: the tile sizes (BLOCK_M…), A_LOADS/B_LOADS (128-bit loads per thread per tile),
    A_VECTORS_PER_ROW/B_VECTORS_PER_ROW, THREADS_N (threads along a row of the tile), and EDGE (guarded variant).
    """
    if EDGE:
        if cuda.blockIdx.y < full_row_blocks and cuda.blockIdx.x < full_col_blocks:
            return  # a full tile: the fast kernel computes it
    a_tile = cuda.shared.array(BLOCK_K * BLOCK_M, float32, alignment=SHARED_ALIGN)  # A transposed: [k][row]
    b_tile = cuda.shared.array(BLOCK_K * BLOCK_N, float32, alignment=SHARED_ALIGN)  # B as is: [k][col]
    m, n, k = uint32(m), uint32(n), uint32(k)
    tid = uint32(cuda.threadIdx.x)
    block_row = uint32(cuda.blockIdx.y) * BLOCK_M
    block_col = uint32(cuda.blockIdx.x) * BLOCK_N
    thread_row = tid // THREADS_N * THREAD_M  # this thread's 8×8 block of C, within the block tile
    thread_col = tid % THREADS_N * THREAD_N

    acc = cuda.local.array((THREAD_M, THREAD_N), float32)
    a_frag = cuda.local.array(THREAD_M, float32)
    b_frag = cuda.local.array(THREAD_N, float32)
    for i in range(THREAD_M):
        for j in range(THREAD_N):
            acc[i, j] = float32(0.0)

    for k_tile in range((k + BLOCK_K - 1) // BLOCK_K):
        k0 = uint32(k_tile) * BLOCK_K
        # Copy A's BLOCK_M×BLOCK_K tile (transposing it) and B's BLOCK_K×BLOCK_N tile into shared memory.
        for load in range(A_LOADS):
            index = tid + uint32(load * THREADS)
            tile_row = index // A_VECTORS_PER_ROW
            tile_k = index % A_VECTORS_PER_ROW * 4
            row = block_row + tile_row
            if EDGE:
                for q in range(4):
                    col = k0 + tile_k + q
                    a_tile[(tile_k + q) * BLOCK_M + tile_row] = a[row * k + col] if row < m and col < k else float32(0)
            else:
                x0, x1, x2, x3 = load_float4(a, row * k + k0 + tile_k)
                a_tile[(tile_k + 0) * BLOCK_M + tile_row] = x0
                a_tile[(tile_k + 1) * BLOCK_M + tile_row] = x1
                a_tile[(tile_k + 2) * BLOCK_M + tile_row] = x2
                a_tile[(tile_k + 3) * BLOCK_M + tile_row] = x3
        for load in range(B_LOADS):
            index = tid + uint32(load * THREADS)
            tile_k = index // B_VECTORS_PER_ROW
            tile_col = index % B_VECTORS_PER_ROW * 4
            row = k0 + tile_k
            if EDGE:
                for q in range(4):
                    col = block_col + tile_col + q
                    b_tile[tile_k * BLOCK_N + tile_col + q] = b[row * n + col] if row < k and col < n else float32(0)
            else:
                x0, x1, x2, x3 = load_float4(b, row * n + block_col + tile_col)
                store_float4(b_tile, tile_k * BLOCK_N + tile_col, x0, x1, x2, x3)
        cuda.syncthreads()

        for kk in range(BLOCK_K):
            for q in range(0, THREAD_M, 4):
                a_frag[q], a_frag[q + 1], a_frag[q + 2], a_frag[q + 3] = load_float4(
                    a_tile, uint32(kk * BLOCK_M + q) + thread_row)
            for q in range(0, THREAD_N, 4):
                b_frag[q], b_frag[q + 1], b_frag[q + 2], b_frag[q + 3] = load_float4(
                    b_tile, uint32(kk * BLOCK_N + q) + thread_col)
            for i in range(THREAD_M):
                for j in range(THREAD_N):
                    acc[i, j] += a_frag[i] * b_frag[j]
        cuda.syncthreads()

    for i in range(THREAD_M):
        row = block_row + thread_row + i
        if EDGE:
            for j in range(THREAD_N):
                col = block_col + thread_col + j
                if row < m and col < n:
                    c[row * n + col] = acc[i, j]
        else:
            for q in range(0, THREAD_N, 4):
                store_float4(c, row * n + block_col + thread_col + q, acc[i, q], acc[i, q + 1], acc[i, q + 2],
                             acc[i, q + 3])


@dataclass(frozen=True)
class Config(StepConfig):
    """Every compile-time constant of this step's kernel, with its value (a field) or its formula (a property).
    ``SEARCH_SPACE``, the tuning table and ``SIMULATOR_CONFIG`` override the tile fields (the first six)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 8  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 0  # launch_bounds occupancy hint (0 = none)
    STAGES: int = 1  # one copy of each tile in shared memory: load, barrier, compute, barrier

    @property
    def THREADS(self) -> int:  # one thread per THREAD_M × THREAD_N block of C
        return (self.BLOCK_M // self.THREAD_M) * (self.BLOCK_N // self.THREAD_N)

    @property
    def THREADS_N(self) -> int:  # threads along a row of the block tile
        return self.BLOCK_N // self.THREAD_N

    @property
    def A_LOADS(self) -> int:  # 128-bit loads of A per thread per tile …
        return self.BLOCK_M * self.BLOCK_K // 4 // self.THREADS

    @property
    def B_LOADS(self) -> int:  # … and of B
        return self.BLOCK_K * self.BLOCK_N // 4 // self.THREADS

    @property
    def A_VECTORS_PER_ROW(self) -> int:  # 128-bit vectors in a row of A's tile …
        return self.BLOCK_K // 4

    @property
    def B_VECTORS_PER_ROW(self) -> int:  # … and of B's
        return self.BLOCK_N // 4

    @property
    def A_STAGE_FLOATS(self) -> int:  # one stage of A's tile in shared memory …
        return self.BLOCK_M * self.BLOCK_K

    @property
    def B_STAGE_FLOATS(self) -> int:  # … and of B's
        return self.BLOCK_K * self.BLOCK_N

    @property
    def SHARED_BYTES(self) -> int:
        return self.STAGES * (self.A_STAGE_FLOATS + self.B_STAGE_FLOATS) * 4

    @property
    def DYNAMIC_SHARED(self) -> bool:  # over the 48 KB static limit: one dynamic array, sized at launch
        return self.SHARED_BYTES > STATIC_SHARED_LIMIT

    @property
    def B_BASE(self) -> int:  # where B's stages start in the dynamic array (0: A and B in two static arrays)
        return self.STAGES * self.A_STAGE_FLOATS if self.DYNAMIC_SHARED else 0

    def problems(self) -> list[str]:
        if self.DYNAMIC_SHARED:
            return [f"{self.SHARED_BYTES} bytes of shared memory, over the {STATIC_SHARED_LIMIT}-byte static limit, "
                    "and this step's kernel has no dynamic shared-memory variant (steps 8 onward have one)"]
        return []


DEFAULT_CONFIG = Config()  # step 5's tiles: 128×128×8, 8×8 per thread


def build(config: Config) -> TiledKernels:
    """Step 6 for a configuration (the fast kernel on full tiles, its guarded variant on the rest)."""
    return TiledKernels("vectorized", vectorized_kernel, config)


#: The step as it runs (one configuration: step 5's tiles). launch, KERNELS, CONFIG: see harness/step.py
TUNING = Tuning(build, "vectorized", [DEFAULT_CONFIG])

#: The compiled code this lesson claims (tests/test_ptx.py): 128-bit global loads, shared loads and C stores, no
#: scalar global loads in the fast kernel, no local memory — and a k-loop NOT unrolled (one k-step: 64 FMAs).
PTX_EXPECT = {"vectorized_fast": {"ld.global.v4.f32": ">=1", "ld.shared.v4.f32": ">=1", "st.global.v4.f32": ">=1",
                                  "ld.global.f32": 0, "fma.rn.f32": 64, "local": 0}}
