"""The course tools: lesson helpers, plots of results files, and the ``gemm-steps`` command."""
