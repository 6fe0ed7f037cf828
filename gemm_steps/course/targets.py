"""The course's targets, in one place: goals we set ourselves, not results.

Lessons and the README compare measurements against these; nothing else in the package types a target in.
"""

#: Steps 1–11 (FP32 on the SIMT units): % of cuBLAS SGEMM at the largest squares of the benchmark.
TARGET_SGEMM_PCT = 95.0

#: Step 12 (TF32 on ``mma.sync``): TFLOPS at 4096³–8192³ on an H100.
TARGET_TF32_TFLOPS = 150.0

#: Step 13 (3xTF32 on ``mma.sync``): × cuBLAS SGEMM at 4096³–8192³, at float32 accuracy.
TARGET_3XTF32_VS_SGEMM = 1.25

#: Steps 13–14's "float32 accuracy", one rule for both lessons: on every measured shape, the error at most this ×
#: cuBLAS SGEMM's on standard-normal inputs, and at most the second × on wide-exponent inputs (entries × 2^u).
TARGET_3XTF32_ERROR_VS_SGEMM = 1.0
TARGET_3XTF32_WIDE_ERROR_VS_SGEMM = 2.0

#: The Hopper chapter (issue 24), TF32 on the final design: % of cuBLAS TF32 at 4096³ and 8192³ (stretch: 100).
TARGET_HOPPER_TF32_PCT_OF_CUBLAS = 90.0

#: The Hopper chapter, 3xTF32 on the final design: × cuBLAS SGEMM at 4096³ and 8192³ (stretch: 2.5).
TARGET_HOPPER_3XTF32_VS_SGEMM = 2.2

__all__ = ["TARGET_SGEMM_PCT", "TARGET_TF32_TFLOPS", "TARGET_3XTF32_VS_SGEMM", "TARGET_3XTF32_ERROR_VS_SGEMM",
           "TARGET_3XTF32_WIDE_ERROR_VS_SGEMM", "TARGET_HOPPER_TF32_PCT_OF_CUBLAS",
           "TARGET_HOPPER_3XTF32_VS_SGEMM"]
