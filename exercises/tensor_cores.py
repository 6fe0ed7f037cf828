"""Exercise `tensor_cores` (lesson 12): one warp multiplies a 16×8 tile of A by an 8×8 tile of B with one mma.sync.

Grade it:  gemm-steps exercise check tensor_cores

The grader launches your kernel on one warp:
    mma_kernel[1, 32](a, b, c)
a is 16×8 (M×K), b is 8×8 (K×N), c is 16×8 (M×N), float32. Compute C = A·B with one ``mma_tf32`` (PTX
``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``): every lane passes 4 elements of A, 2 of B and 4 of C (zeros
here) and gets back 4 elements of D — which ones is fixed by the hardware, the *fragment layout*. With
group = lane // 4 and pair = lane % 4:

    a0 = A[group][pair]       a1 = A[group + 8][pair]       a2 = A[group][pair + 4]       a3 = A[group + 8][pair + 4]
    b0 = B[pair][group]       b1 = B[pair + 4][group]
    d0 → C[group][2·pair]     d1 → C[group][2·pair + 1]     d2 → C[group + 8][2·pair]     d3 → C[group + 8][2·pair + 1]

(lesson 12, "The idea": the picture colours each lane's elements). Load each lane's A and B elements by that
layout, round them to TF32 with ``to_tf32`` as you load them, call ``mma_tf32`` once, and store the four results
where the layout puts them.

What the grader checks, on the simulator: first it fills A and B with values that name their own element
(A[i][k] = 1 + 8i + k, B[k][n] = 129 + 8k + n) and watches ``mma_tf32``, so it can tell you which element each lane
passed in each register ("lane 5's a[1] holds A[13][2], the layout wants A[9][1]") and where each lane's d went;
then it runs random A and B through the mma and compares C with A·B of A and B rounded to TF32.

Hints
* ``mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)`` returns (d0, d1, d2, d3); call it with the whole warp — it is
  one instruction of 32 lanes, and a lane that skips it leaves the others waiting.
* The tensor core reads only the top 10 mantissa bits of what it is handed: unrounded floats are *truncated*.
  ``to_tf32(x)`` rounds to the nearest TF32 first (lesson 12, "TF32: what is lost").
* B is stored K×N: its fragment runs down a column (b[k, n] with k = pair, pair + 4 and n = group).
* Step 12's kernel does this for many mma tiles per warp (``gemm-steps diff 9 12``); its store is the same layout.
"""

import gemm_steps  # noqa: F401  (first: it picks the GPU or the simulator)
from numba import cuda, float32  # noqa: F401

from gemm_steps.toolkit.tensor_core_ops import mma_tf32, to_tf32  # noqa: F401


@cuda.jit
def mma_kernel(a, b, c):
    lane = cuda.threadIdx.x % 32
    # Your code here: group and pair; a0 … a3 and b0, b1 by the layout (rounded with to_tf32); one mma_tf32 with
    # float32(0.0) as c0 … c3; d0 … d3 stored into c by the layout.
    pass
