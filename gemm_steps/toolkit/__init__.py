"""What the kernels are built with: the backend choice (GPU or simulator), low-level intrinsics, the unroll compiler,
tile configurations and launch helpers. Kernels (``gemm_steps/steps``) import from here and nowhere else in the
package."""
