"""What the register-tiled steps (6 onward) are built and launched with: tile configurations, compiling a step's
kernel for a configuration, and the launches that split C into full tiles (fast kernel) and edge tiles (guarded).

Edges — the documented method. Each step's kernel is compiled *twice*, once with ``EDGE = False`` and once with
``EDGE = True`` (its ``if EDGE:`` branches are decided at compile time, see :mod:`gemm_steps.toolkit.unroll`):

* the **fast** kernel assumes full tiles: no bounds checks, 128-bit loads and stores. It runs only when
  ``K % BLOCK_K == 0``, ``N % 4 == 0`` and every base address is 16-byte aligned, and only on the tiles that lie
  wholly inside C (``M // BLOCK_M`` × ``N // BLOCK_N`` of them);
* the **edge** kernel checks every access, loads scalars and zero-fills outside the matrices. It is launched on
  the whole grid, and a block whose tile the fast kernel covered returns at once.

So any M, N, K is correct, and the common aligned case pays nothing for the edge case. Shapes that break the
fast path's conditions (K or N not a multiple of 4, say) run entirely on the edge kernel: correct, slower.

The schedules: one block per tile (:class:`TiledKernels`), a persistent grid that loops over tiles
(:class:`PersistentTiles`, step 10) and stream-K (:class:`StreamKTiles`, step 11). The looping kernels do not split
a product into fast and edge launches: their guarded variant loops over every tile, partial ones included, whenever
the fast one cannot take the whole product, so one kernel runs (and compiles) per product.
"""

from __future__ import annotations

import inspect
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np
from numba import cuda

from . import numba_patches, unroll
from .backend import SIMULATOR
from . import gpu_requirements
from .kernel_tools import ceil_div, device_pointer, kernel, quiet_small_grids
from .launch_plans import LaunchPlan
from .workspaces import Workspaces

#: Static shared memory per block is capped at 48 KB. A configuration that needs more gets one *dynamic* shared
#: array instead (compile-time ``DYNAMIC_SHARED = True``), sized at launch, and its kernels are opted in to the larger
#: size with ``cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`` (Hopper allows up to 227 KB per block).
STATIC_SHARED_LIMIT = 48 * 1024

#: On the simulator there is no occupancy to ask for: a persistent grid gets this many blocks, so that each block
#: still loops over several tiles and the loop is exercised.
SIMULATED_RESIDENT_BLOCKS = 3


@dataclass(frozen=True)
class TileConfig:
    """Tile sizes of a register-tiled kernel (the same names in every step)."""

    BLOCK_M: int = 128  # rows of C per thread block
    BLOCK_N: int = 128  # columns of C per thread block
    BLOCK_K: int = 8  # depth of the A and B tiles staged in shared memory per iteration
    THREAD_M: int = 8  # rows of C per thread
    THREAD_N: int = 8  # columns of C per thread
    MIN_BLOCKS_PER_SM: int = 0  # launch_bounds occupancy hint (0 = none)

    @property
    def THREADS(self) -> int:
        return (self.BLOCK_M // self.THREAD_M) * (self.BLOCK_N // self.THREAD_N)

    def check(self) -> "TileConfig":
        c = self
        problems = []
        if c.THREAD_M % 4 or c.THREAD_N % 4:
            problems.append("THREAD_M and THREAD_N must be multiples of 4 (128-bit fragments)")
        if c.BLOCK_M % c.THREAD_M or c.BLOCK_N % c.THREAD_N:
            problems.append("BLOCK_M/BLOCK_N must be multiples of THREAD_M/THREAD_N")
        if c.BLOCK_K % 4:
            problems.append("BLOCK_K must be a multiple of 4 (128-bit loads along K)")
        threads = c.THREADS
        if threads > 1024 or threads % 32:
            problems.append(f"{threads} threads per block: must be a multiple of 32 and at most 1024")
        elif (c.BLOCK_M * c.BLOCK_K // 4) % threads or (c.BLOCK_K * c.BLOCK_N // 4) % threads:
            problems.append("each tile must split into whole 128-bit loads per thread")
        if problems:
            raise ValueError(f"bad tile configuration {asdict(c)}: " + "; ".join(problems))
        return c

    def constants(self) -> dict[str, int]:
        c = self
        values = asdict(c)
        values["THREADS"] = c.THREADS
        values["THREADS_N"] = c.BLOCK_N // c.THREAD_N  # threads along a row of the block tile
        values["A_LOADS"] = c.BLOCK_M * c.BLOCK_K // 4 // c.THREADS  # 128-bit loads of A per thread per tile
        values["B_LOADS"] = c.BLOCK_K * c.BLOCK_N // 4 // c.THREADS
        values["A_VECTORS_PER_ROW"] = c.BLOCK_K // 4
        values["B_VECTORS_PER_ROW"] = c.BLOCK_N // 4
        return values


#: Argument types every generated kernel is launched with (flat arrays, sizes, full-tile counts) …
SIGNATURE = "void(float32[::1], float32[::1], float32[::1], uint32, uint32, uint32, uint32, uint32)"
#: … and the stream-K kernel's extra ones (workspace, flags, data-parallel and stream-K tile counts).
SIGNATURE_STREAM_K = SIGNATURE[:-1] + ", float32[::1], int32[::1], uint32, uint32)"


def _aligned(*arrays: Any) -> bool:
    return all(device_pointer(x) % 16 == 0 for x in arrays)


#: A kernel generator: compile-time constants → Python source of one kernel function named constants["KERNEL_NAME"].
Generator = Callable[[dict], str]


def from_function(function: Callable) -> Generator:
    """The generator of a readable kernel: its ``unroll`` loops, register tiles and ``if EDGE:`` expanded."""
    def generate(constants: dict) -> str:
        return unroll.expand(function, constants, constants["KERNEL_NAME"])
    generate.function = function
    return generate


class TiledKernels:
    """A step's fast and edge kernels, compiled from its kernel for one :class:`TileConfig`; one block per tile.

    ``kernel`` is the step's kernel function (or a :data:`Generator`). Its module's globals are what the kernel
    sees, plus the tile constants and ``EDGE``; ``overrides`` replaces names (tests count stores with it).
    ``edge`` takes the edge kernel from another build instead of compiling this kernel with ``EDGE = True``.
    ``requires_compute_capability``: the only GPUs the kernel exists for (``wgmma``: (9, 0)); ``min_compute_capability``:
    the oldest it runs on (``mma.sync`` on TF32: (8, 0)); on another GPU the first
    launch of a shape refuses with a reason instead of failing to compile.
    """

    #: Argument types of the kernels (flat arrays, sizes, full-tile counts), for compiling to PTX on a CPU.
    signature_fast = SIGNATURE
    schedule = "one block per tile"

    def __init__(self, name: str, kernel: Callable | Generator, config: TileConfig, extra_constants: dict | None = None,
                 overrides: dict | None = None, edge: "TiledKernels | None" = None,
                 requires_compute_capability: tuple[int, int] | None = None,
                 min_compute_capability: tuple[int, int] | None = None):
        numba_patches.apply()  # linear-time lowering pass: the unrolled kernels compile several times faster
        self.name = name
        self.requires_compute_capability = requires_compute_capability
        self.min_compute_capability = min_compute_capability
        self.config = config.check()
        # A kernel function, or a generator already (constants → source) naming its kernel function `.function`.
        self.generate: Generator = kernel if hasattr(kernel, "function") else from_function(kernel)
        self.globals = self.generate.function.__globals__  # what the kernel sees: its module's names
        constants = {**config.constants(), "STAGES": 1, **(extra_constants or {})}
        # Shared memory: STAGES copies of the A and B tiles (a kernel that pads its tiles says how many floats a
        # stage of each takes). Over the static limit → one dynamic array (see above).
        a_stage = constants.setdefault("A_STAGE_FLOATS", config.BLOCK_M * config.BLOCK_K)
        b_stage = constants.setdefault("B_STAGE_FLOATS", config.BLOCK_K * config.BLOCK_N)
        # … plus what else a kernel keeps there (EXTRA_SHARED_FLOATS: the warpgroup step's small parts of A).
        self.shared_bytes = (constants["STAGES"] * (a_stage + b_stage) + constants.get("EXTRA_SHARED_FLOATS", 0)) * 4
        # A kernel whose tiles always live in one dynamic array says so with DYNAMIC_SHARED = True in its layout.
        always_dynamic = constants.get("DYNAMIC_SHARED", False)
        dynamic = always_dynamic or self.shared_bytes > STATIC_SHARED_LIMIT
        constants["DYNAMIC_SHARED"] = dynamic
        constants["B_BASE"] = constants["STAGES"] * a_stage if dynamic else 0
        self.dynamic_shared_bytes = self.shared_bytes if dynamic else 0
        self.constants = constants
        self.overrides = overrides or {}
        self.edge_source = edge
        if (dynamic and not always_dynamic and edge is None
                and "DYNAMIC_SHARED" not in inspect.getsource(self.generate.function)):
            raise ValueError(f"{name}: {config} needs {self.shared_bytes} bytes of shared memory, over the "
                             f"{STATIC_SHARED_LIMIT}-byte static limit, and this step's kernel has no dynamic "
                             f"shared-memory variant (steps 8 onward have one)")
        # A kernel with warps beside the tile's threads (a producer warp that only issues copies) says how many
        # threads they add with PRODUCER_THREADS in its layout; blocks are launched that much larger.
        self.threads = config.THREADS + constants.get("PRODUCER_THREADS", 0)
        self.launch_bounds = (self.threads, config.MIN_BLOCKS_PER_SM) if config.MIN_BLOCKS_PER_SM else None
        self._sources: dict[str, str] = {}
        self._kernels: dict[str, Any] = {}
        self._opted_in: set = set()
        self._resident_blocks: dict[str, int] = {}
        self._plans: dict = {}
        self.recording: list | None = None  # while a LaunchPlan is recorded: where launches are written down

    # -- compiling -----------------------------------------------------------------------------------------------
    def variant_constants(self, variant: str) -> dict:
        return {**self.constants, "EDGE": variant == "edge", "KERNEL_NAME": f"{self.name}_{variant}_kernel"}

    def kernel(self, variant: str):
        """The ``cuda.jit`` dispatcher of the fast or edge kernel (generated on first use)."""
        if variant == "edge" and self.edge_source is not None:
            return self.edge_source.kernel("edge")
        if variant not in self._kernels:
            constants = self.variant_constants(variant)
            source = self.generate(constants)
            # On a GPU, generated sources go to a cache folder so Numba can keep the compiled kernels on disk:
            # the first call of a step compiles for seconds, later processes load it at once.
            directory = None if (SIMULATOR or self.overrides) else unroll.cache_dir()
            namespace = {**self.globals, **constants, **self.overrides}
            unroll.define(source, constants["KERNEL_NAME"], namespace, key=repr(sorted(constants.items())),
                          directory=directory)
            self._sources[variant] = source
            self._kernels[variant] = kernel(namespace[constants["KERNEL_NAME"]], launch_bounds=self.launch_bounds,
                                            **({"cache": True} if directory else {}))
        return self._kernels[variant]

    def generated(self, variant: str) -> str:
        """The expanded source of one kernel (``fast`` or ``edge``): what Numba compiles."""
        if variant == "edge" and self.edge_source is not None:
            return self.edge_source.generated("edge")
        self.kernel(variant)
        return self._sources[variant]

    @property
    def kernels(self) -> dict:
        return {variant: self.kernel(variant) for variant in ("fast", "edge")}

    @property
    def sources(self) -> dict:
        return {variant: self.generated(variant) for variant in ("fast", "edge")}

    #: What the generated source calls the edge variant.
    edge_label = "guarded, for the tiles the fast kernel skips"

    def generated_source(self) -> str:
        c = self.config
        edge_from = f" (from {self.edge_source.name})" if self.edge_source is not None else ""
        header = (f"# Generated for BLOCK_M={c.BLOCK_M} BLOCK_N={c.BLOCK_N} BLOCK_K={c.BLOCK_K} "
                  f"THREAD_M={c.THREAD_M} THREAD_N={c.THREAD_N} ({c.THREADS} threads)\n")
        return (header + "\n# ---- fast kernel: full tiles, 128-bit accesses, no bounds checks ----\n"
                + self.generated("fast")
                + f"\n# ---- edge kernel{edge_from}: {self.edge_label} ----\n"
                + self.generated("edge"))

    def unrolled_ptx_claims(self, barriers: int | None = None) -> dict:
        """What the fast kernel's PTX must show when its k-loop is unrolled (checked by tests/test_ptx.py).

        One k-tile, unrolled, is BLOCK_K × THREAD_M × THREAD_N FMAs fed by BLOCK_K × (THREAD_M + THREAD_N) / 4
        128-bit shared loads; global loads and C stores are 128-bit; no register array spills to local memory.
        """
        c = self.config
        claims = {"fma.rn.f32": c.BLOCK_K * c.THREAD_M * c.THREAD_N,
                  "ld.shared.v4.f32": c.BLOCK_K * (c.THREAD_M + c.THREAD_N) // 4,
                  "ld.global.v4.f32": ">=1", "st.global.v4.f32": ">=1", "ld.global.f32": 0, "local": 0}
        if barriers is not None:
            claims["bar.sync"] = barriers
        return {f"{self.name}_fast": claims}

    def signature(self, variant: str) -> str:
        return self.signature_fast if variant == "fast" else SIGNATURE

    def ptx_kernels(self) -> dict:
        return {f"{self.name}_{variant}": (self.kernel(variant), self.signature(variant)) for variant in ("fast", "edge")}

    # -- launching -----------------------------------------------------------------------------------------------
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

    def compile(self, variant: str) -> None:
        """Compile one kernel now (on a GPU), saying so on stderr: seconds for an unrolled kernel, less than one
        when Numba finds it in its disk cache. Without this the first call of a step goes quiet for that long."""
        dispatcher = self.kernel(variant)
        if SIMULATOR or dispatcher.overloads:
            return
        major, minor = cuda.get_current_device().compute_capability
        print(f"gemm-steps: compiling the {self.name} {variant} kernel for sm_{major}{minor} (first use in this "
              "process; cached on disk for later runs) …", file=sys.stderr, flush=True)
        start = time.perf_counter()
        dispatcher.compile(self.signature(variant))
        print(f"gemm-steps: {self.name} {variant} kernel ready in {time.perf_counter() - start:.1f} s",
              file=sys.stderr, flush=True)

    def configured(self, variant: str, grid, stream):
        """``kernel[grid, threads, stream]``, with the dynamic shared-memory size (and opt-in) where needed. While a
        launch plan is being recorded (:class:`LaunchPlan`), the launch is written down instead of made."""
        if variant == "edge" and self.edge_source is not None:
            return self.edge_source.configured("edge", grid, stream)
        self.compile(variant)
        if self.recording is not None:
            if self.dynamic_shared_bytes:
                self._function(variant)  # the opt-in to the larger shared memory, once per context
            return lambda *arguments: self.recording.append(
                (self.kernel(variant), self.signature(variant), grid, self.threads, self.dynamic_shared_bytes,
                 stream, arguments))
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
            self.launch_through_numba(a, b, c, stream)
            return
        pointers = (device_pointer(a), device_pointer(b), device_pointer(c))
        key = self.plan_key(a, b, pointers, stream)
        plan = self._plans.get(key)
        if plan is None:
            self._refuse_other_gpus()  # once per shape, not on every replayed launch
            if len(self._plans) >= LaunchPlan.KEPT:
                self._plans.clear()
            plan = self._plans[key] = LaunchPlan.record(self, a, b, c, stream)
        plan(*pointers)

    def builds(self):
        """This build and every other one a launch of it may go through (the build its edge kernel comes from)."""
        yield self
        if self.edge_source is not None:
            yield from self.edge_source.builds()

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

    def launch_through_numba(self, a, b, c, stream=0) -> None:
        """:meth:`launch`'s decisions, with every kernel launched through Numba's dispatcher."""
        cfg = self.config
        m, k = a.shape
        n = b.shape[1]
        flat = (a.reshape(m * k), b.reshape(k * n), c.reshape(m * n))
        grid_rows, grid_cols = ceil_div(m, cfg.BLOCK_M), ceil_div(n, cfg.BLOCK_N)
        full_rows, full_cols = (m // cfg.BLOCK_M, n // cfg.BLOCK_N) if self.fast_path_applies(a, b, c) else (0, 0)
        sizes = (np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(full_rows), np.uint32(full_cols))
        with quiet_small_grids():  # an edge strip or a small product is a small grid on purpose
            if full_rows and full_cols:
                self.launch_full_tiles(flat, sizes, full_rows, full_cols, stream)
            if full_rows * full_cols < grid_rows * grid_cols:
                self.configured("edge", (grid_cols, grid_rows), stream)(*flat, *sizes)

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream) -> None:
        """The fast kernel over the full tiles: one block per tile."""
        self.configured("fast", (full_cols, full_rows), stream)(*flat, *sizes)


class PersistentTiles(TiledKernels):
    """Step 10's schedule: as many blocks as the GPU runs at once, each looping over tiles.

    One kernel covers every shape. Where every tile is full and the 128-bit path applies, the fast variant loops over
    the tiles; otherwise the guarded variant (the kernel's ``if EDGE:`` branches: scalar loads zero-filled outside
    the matrices, stores only inside C) loops over *all* tiles, partial ones included, with the same schedule — so
    a ragged product keeps the persistent (and, in step 11, stream-K) balance instead of running its edge tiles as a
    separate, partly empty wave.
    """

    schedule = "persistent grid"
    edge_label = "guarded, every tile (used unless every tile is full and the 128-bit path applies)"

    def launch_through_numba(self, a, b, c, stream=0) -> None:
        cfg = self.config
        m, k = a.shape
        n = b.shape[1]
        flat = (a.reshape(m * k), b.reshape(k * n), c.reshape(m * n))
        rows, cols = ceil_div(m, cfg.BLOCK_M), ceil_div(n, cfg.BLOCK_N)
        whole = m % cfg.BLOCK_M == 0 and n % cfg.BLOCK_N == 0 and self.fast_path_applies(a, b, c)
        sizes = (np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(rows), np.uint32(cols))
        with quiet_small_grids():  # a small product is a small grid on purpose
            self.launch_tiles("fast" if whole else "edge", flat, sizes, rows, cols, stream)

    def launch_tiles(self, variant: str, flat, sizes, rows: int, cols: int, stream) -> None:
        """The ``variant`` kernel over rows × cols tiles (the kernel's ``tile_rows``, ``tile_cols``)."""
        self.configured(variant, min(rows * cols, self.resident_blocks(variant)), stream)(*flat, *sizes)

    def estimated_resident_blocks(self) -> int:
        """Blocks the GPU runs at once, without compiling: SMs × the launch-bounds hint (at least 1 per SM). Used
        only to choose a schedule (step 11's fallback), so that a first call compiles one kernel, not two; a grid
        is always sized from the compiled kernel's occupancy (:meth:`resident_blocks`)."""
        if SIMULATOR:
            return SIMULATED_RESIDENT_BLOCKS
        return max(1, self.config.MIN_BLOCKS_PER_SM) * cuda.get_current_device().MULTIPROCESSOR_COUNT


class StreamKTiles(PersistentTiles):
    """Step 11's schedule: whole waves of tiles data-parallel, the rest split by k-iterations, as ``split`` decides.

    ``data_parallel_fallback``: the kernels that run a whole launch when the split leaves nothing to stream-K.
    """

    schedule = "stream-K"
    signature_fast = SIGNATURE_STREAM_K

    def __init__(self, *args, split: Callable[[int, int], tuple[int, int]],
                 data_parallel_fallback: TiledKernels | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        #: How tiles split into (data-parallel, stream-K) tiles for a grid of so many blocks: step 11's policy
        #: (``steps.stream_k.stream_k_split``), or another (an experiment's "all stream-K").
        self.split = split
        self._workspaces = Workspaces()
        if data_parallel_fallback is not None and data_parallel_fallback.config != self.config:
            raise ValueError("the data-parallel fallback must use the same tile configuration (it covers the same tiles)")
        self.data_parallel_fallback = data_parallel_fallback

    def builds(self):
        yield from super().builds()
        if self.data_parallel_fallback is not None:
            yield from self.data_parallel_fallback.builds()

    def signature(self, variant: str) -> str:
        return SIGNATURE_STREAM_K  # both variants take the workspace, flags and split

    def _workspace(self, blocks: int, stream):
        """Partial-sum slots (one tile per block) and their flags, kept per context and per stream: the flags start
        at 0 and every launch leaves them at 0 (each raised flag is reset by the block that consumed it). Launches on
        one stream run one after another; launches on two streams may overlap, so each stream has its own."""
        tile = self.config.BLOCK_M * self.config.BLOCK_N
        return self._workspaces.get(blocks, stream, lambda: (
            cuda.device_array(blocks * tile, dtype=np.float32, stream=stream),
            cuda.to_device(np.zeros(blocks, dtype=np.int32), stream=stream)))

    def launch_tiles(self, variant: str, flat, sizes, rows: int, cols: int, stream) -> None:
        tiles = rows * cols
        fallback = self.data_parallel_fallback
        # Decide before compiling anything (the estimate needs no kernel), so that a shape the fallback runs
        # entirely never compiles the stream-K kernel, and one that needs stream-K never compiles the fallback.
        if fallback is not None and self.split(tiles, self.estimated_resident_blocks())[1] == 0:
            fallback.launch_tiles(variant, flat, sizes, rows, cols, stream)
            return
        blocks = self.resident_blocks(variant)
        data_parallel, stream_k = self.split(tiles, blocks)
        workspace, flags = self._workspace(blocks, stream)
        self.configured(variant, blocks, stream)(*flat, *sizes, workspace, flags, np.uint32(data_parallel),
                                                 np.uint32(stream_k))
