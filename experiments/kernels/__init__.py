"""Kernel variants that the experiments time: each module is a copy of one shipped step's kernel with one change,
so ``diff gemm_steps/steps/warp_tiling.py experiments/kernels/warp_tiling_pipelined.py`` shows the experiment.

Written like the steps (``unroll``, ``registers``, compile-time ``if``), and built with
:class:`gemm_steps.toolkit.tiles.TiledKernels` by each module's ``build(config, …)``. A module's globals are what its
kernel sees. Compile-time switches (``ASYNC_A``, ``ORDER``…) live only here, never in a shipped step.
"""
