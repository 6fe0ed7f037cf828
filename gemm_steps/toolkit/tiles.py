"""Launching a register-tiled step (6 onward): :class:`TiledKernels` splits C into full tiles (the fast kernel) and
edge tiles (the guarded one), one block per tile. Building the two kernels is :class:`~.kernel_builds.KernelBuild`'s
job; the schedules that loop over tiles are in :mod:`~gemm_steps.toolkit.persistent_tiles` (steps 10–11) and
:mod:`~gemm_steps.toolkit.tma_tiles` (steps 16–19).

Edges — the documented method:

* the **fast** kernel assumes full tiles: no bounds checks, 128-bit loads and stores. It runs only when
  ``K % BLOCK_K == 0``, ``N % 4 == 0`` and every base address is 16-byte aligned, and only on the tiles that lie
  wholly inside C (``M // BLOCK_M`` × ``N // BLOCK_N`` of them);
* the **edge** kernel checks every access, loads scalars and zero-fills outside the matrices. It is launched on
  the whole grid, and a block whose tile the fast kernel covered returns at once.

So any M, N, K is correct, and the common aligned case pays nothing for the edge case. Shapes that break the
fast path's conditions (K or N not a multiple of 4, say) run entirely on the edge kernel: correct, slower.

What the launch does besides: asks the driver how many blocks fit at once (:meth:`TiledKernels.resident_blocks`),
opts a kernel in to more than 48 KB of shared memory, refuses a GPU the kernel does not exist for, and on a GPU
records a shape's launches once as a :class:`~.launch_plans.LaunchPlan` that later calls replay.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from numba import cuda

from .backend import SIMULATOR
from . import gpu_requirements
from .kernel_builds import KernelBuild
from .kept import Kept, KeptPerThread
from .kernel_tools import ceil_div, device_pointer, on_one_cpu, quiet_small_grids
from .launch_plans import LaunchPlan
from .tile_config import TileConfig

#: On the simulator there is no occupancy to ask for: a persistent grid gets this many blocks, so that each block
#: still loops over several tiles and the loop is exercised.
SIMULATED_RESIDENT_BLOCKS = 3


def _aligned(*arrays: Any) -> bool:
    return all(device_pointer(x) % 16 == 0 for x in arrays)


def flat_operands(a, b, c) -> tuple[tuple[int, int, int], tuple]:
    """(M, N, K), and A, B and C as the flat arrays every tiled kernel takes."""
    m, k = a.shape
    n = b.shape[1]
    return (m, n, k), (a.reshape(m * k), b.reshape(k * n), c.reshape(m * n))


class TiledKernels(KernelBuild):
    """A step's fast and edge kernels (a :class:`~.kernel_builds.KernelBuild`), launched one block per tile.

    ``requires_compute_capability``: the only GPUs the kernel exists for (``wgmma``: (9, 0)); ``min_compute_capability``:
    the oldest it runs on (``mma.sync`` on TF32: (8, 0)); on another GPU the first launch of a shape refuses with a
    reason instead of failing to compile.
    """

    schedule = "one block per tile"

    def __init__(self, name: str, function, config: TileConfig, extra_constants: dict | None = None,
                 overrides: dict | None = None, edge: "TiledKernels | None" = None,
                 requires_compute_capability: tuple[int, int] | None = None,
                 min_compute_capability: tuple[int, int] | None = None):
        super().__init__(name, function, config, extra_constants, overrides, edge)
        self.requires_compute_capability = requires_compute_capability
        self.min_compute_capability = min_compute_capability
        self._opted_in: set = set()
        self._resident_blocks: dict[str, int] = {}
        self._plans = KeptPerThread(LaunchPlan.KEPT)  # each host thread's launch plans (a plan holds its workspaces)

    @property
    def cluster(self) -> tuple | None:
        """Blocks per cluster of the fast kernel's launch, ``(CLUSTER, 1, 1)`` where the build's constants have a
        ``CLUSTER`` (steps 20 and 23), else None: no cluster."""
        blocks = self.constants.get("CLUSTER")
        return None if blocks is None else (blocks, 1, 1)

    @property
    def full_cols_multiple(self) -> int:
        """The fast kernel's full tile-columns come in multiples of this: a cluster's blocks compute tiles side by side
        in one tile-row (a last, odd one runs on the edge kernel, or on a ``partial`` build that covers it)."""
        return self.constants.get("CLUSTER", 1)

    def resident_blocks(self, variant: str = "fast") -> int:
        """How many blocks of one kernel the whole GPU runs at once: SMs × occupancy (from the driver)."""
        if variant not in self._resident_blocks:
            if SIMULATOR:
                self._resident_blocks[variant] = SIMULATED_RESIDENT_BLOCKS
            else:
                function = self._function(variant)
                context = cuda.current_context()
                per_sm = context.get_active_blocks_per_multiprocessor(function, self.threads,
                                                                      self.dynamic_shared_bytes)
                if per_sm < 1:
                    raise RuntimeError(f"{self.name}: the driver says no block of this kernel fits on an SM")
                self._resident_blocks[variant] = per_sm * context.device.MULTIPROCESSOR_COUNT
        return self._resident_blocks[variant]

    def _function(self, variant: str):
        """The driver function of a compiled kernel, opted in to its dynamic shared memory if it uses any."""
        self.compile(variant)
        compiled = self.kernel(variant).compile(self.signature(variant))
        function = compiled._codelibrary.get_cufunc()
        key = (variant, id(cuda.current_context()))
        if key not in self._opted_in and "PRODUCER_REGISTERS" in self.constants:
            self._check_register_handoff(function)
        if self.dynamic_shared_bytes and key not in self._opted_in:
            from numba.cuda.cudadrv.driver import binding, driver

            limit = cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
            if self.dynamic_shared_bytes > limit:
                raise ValueError(f"{self.name}: {self.config} needs {self.dynamic_shared_bytes} bytes of shared "
                                 f"memory per block; this GPU allows at most {limit}")
            attribute = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            driver.cuKernelSetAttribute(attribute, self.dynamic_shared_bytes, function.handle, function.device.id)
            self._opted_in.add(key)
        return function

    def _check_register_handoff(self, function) -> None:
        """A kernel whose producer hands registers to its consumers (``setmaxnreg``): refuse to launch where the
        roles ask for more than the pool this compiled kernel's block really gets (its registers at entry × threads),
        where ``setmaxnreg.inc`` would wait forever (:func:`~.warpgroup_ops.check_register_handoff`)."""
        from .warpgroup_ops import check_register_handoff

        c = self.constants
        try:
            check_register_handoff(self.threads, [(c["PRODUCER_THREADS"], c["PRODUCER_REGISTERS"]),
                                                  (self.config.THREADS, c["CONSUMER_REGISTERS"])], function.attrs.regs)
        except ValueError as error:
            raise RuntimeError(f"{self.name}, compiled to {function.attrs.regs} registers a thread: {error}") from None

    def configured(self, variant: str, grid, stream, launches: list | None = None):
        """``kernel[grid, threads, stream]``, with the dynamic shared-memory size (and opt-in) where needed. Given a
        list of ``launches`` (a :class:`LaunchPlan` being recorded), the launch is written down there instead of made.
        A build whose fast kernel runs in clusters (``cluster``, blocks per cluster) launches it with
        :func:`~.cluster_ops.launch_cluster`."""
        if variant == "edge" and self.edge_source is not None:
            return self.edge_source.configured("edge", grid, stream, launches)
        self.compile(variant)
        cluster = self.cluster if variant == "fast" else None
        if cluster is not None and launches is None:
            from .cluster_ops import launch_cluster

            if not SIMULATOR:
                self._function(variant)
            return lambda *arguments: launch_cluster(self.kernel(variant), self.signature(variant), grid,
                                                     self.threads, self.dynamic_shared_bytes, stream, cluster,
                                                     arguments)
        if launches is not None:
            if self.dynamic_shared_bytes and not SIMULATOR:
                self._function(variant)  # the opt-in to the larger shared memory, once per context
            return lambda *arguments: launches.append(
                (self.kernel(variant), self.signature(variant), grid, self.threads, self.dynamic_shared_bytes,
                 stream, arguments, cluster))
        if not self.dynamic_shared_bytes:
            return self.kernel(variant)[grid, self.threads, stream]
        if not SIMULATOR:
            self._function(variant)
        return self.kernel(variant)[grid, self.threads, stream, self.dynamic_shared_bytes]

    def fast_path_applies(self, a, b, c) -> bool:
        m, k = a.shape
        n = b.shape[1]
        return k % self.config.BLOCK_K == 0 and n % 4 == 0 and _aligned(a, b, c)

    def launch(self, a, b, c, stream=0) -> None:
        """C = A·B: the fast kernel on the full tiles (if the fast path applies), the edge kernel on the rest.

        On a GPU, what a shape needs (which kernels, grids, sizes, stream-K workspace) is worked out on its first
        launch and kept as a :class:`LaunchPlan`; later launches of the same shape only fill in the three arrays'
        addresses."""
        if SIMULATOR or self.overrides:
            self._refuse_other_gpus()
            with on_one_cpu() if SIMULATOR and self.meets_in_warps else contextlib.nullcontext():
                self.launch_through_numba(a, b, c, stream)
            return
        pointers = (device_pointer(a), device_pointer(b), device_pointer(c))
        plans = self.thread_plans()
        key = self.plan_key(a, b, pointers, stream)
        plan = plans.get(key)
        if plan is None:
            self._refuse_other_gpus()  # once per shape, not on every replayed launch
            plan = plans.keep(key, LaunchPlan.record(self, a, b, c, stream))
        plan(*pointers)

    def thread_plans(self) -> Kept:
        """This host thread's launch plans, by :meth:`plan_key` (at most ``LaunchPlan.KEPT``). Each thread records and
        replays its own: a plan holds workspaces (stream-K partial sums, split-K slices), and two threads' launches on
        one stream interleave, so a shared plan would let one thread's kernel overwrite the other's partial sums
        before they are read."""
        return self._plans.mine()

    def plan_key(self, a, b, pointers: tuple[int, int, int], stream) -> tuple:
        """What a recorded :class:`LaunchPlan` depends on: the shape, whether the fast path's alignment holds (from
        the three arrays' ``pointers``), the stream (a kernel that bakes an address into its arguments adds it)."""
        m, k = a.shape
        return (m, b.shape[1], k, all(p % 16 == 0 for p in pointers), id(stream) if stream else 0)

    def _refuse_other_gpus(self) -> None:
        """Raise, with the reason, where this GPU is not the one compute capability the kernel exists for."""
        reason = gpu_requirements.missing_compute_capability(self.requires_compute_capability,
                                                             self.min_compute_capability)
        if reason:
            raise RuntimeError(f"{self.name} {reason}")

    def launch_through_numba(self, a, b, c, stream=0, launches: list | None = None) -> None:
        """:meth:`launch`'s decisions, with every kernel launched through Numba's dispatcher — or, given a list of
        ``launches``, written down there instead (:meth:`LaunchPlan.record`)."""
        cfg = self.config
        (m, n, k), flat = flat_operands(a, b, c)
        grid_rows, grid_cols = ceil_div(m, cfg.BLOCK_M), ceil_div(n, cfg.BLOCK_N)
        full_rows, full_cols = (m // cfg.BLOCK_M, n // cfg.BLOCK_N) if self.fast_path_applies(a, b, c) else (0, 0)
        full_cols -= full_cols % self.full_cols_multiple
        sizes = (np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(full_rows), np.uint32(full_cols))
        with quiet_small_grids():  # an edge strip or a small product is a small grid on purpose
            if full_rows and full_cols:
                self.launch_full_tiles(flat, sizes, full_rows, full_cols, stream, (a, b), launches)
            if full_rows * full_cols < grid_rows * grid_cols:
                self.configured("edge", (grid_cols, grid_rows), stream, launches)(*flat, *sizes)

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        """The fast kernel over the full tiles: one block per tile. ``matrices``: A and B as 2-D arrays (a TMA
        build makes its tensor maps from them); ``launches``: where to write the launch down instead (or None)."""
        self.configured("fast", (full_cols, full_rows), stream, launches)(*flat, *sizes)


__all__ = ["SIMULATED_RESIDENT_BLOCKS", "TiledKernels", "flat_operands"]
