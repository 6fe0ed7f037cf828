"""What calls, checks and times the kernels: the one launch path (api), correctness (verify), the benchmark, the
cuBLAS baseline, where a result was measured (environment), autotuning, and the compiled-code (PTX) report."""
