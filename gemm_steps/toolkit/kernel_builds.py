"""Building a step's kernels for one tile configuration: :class:`KernelBuild` — the compile-time constants, the
shared-memory layout, the kernel expanded into the source Numba compiles (a *fast* and an *edge* variant), and the
compile itself, cached on disk. Launching them is :mod:`gemm_steps.toolkit.tiles`' job.

Each step's kernel is compiled *twice*, once with ``EDGE = False`` and once with ``EDGE = True`` (its ``if EDGE:``
branches are decided at compile time, see :mod:`gemm_steps.toolkit.unroll`): the fast kernel assumes full tiles (no
bounds checks, 128-bit accesses), the edge kernel checks every access.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from typing import Any, Callable

from numba import cuda

from . import mbarrier_ops, numba_patches, unroll
from .backend import SIMULATOR
from .kernel_tools import kernel
from .tile_config import StepConfig, TileConfig

#: Static shared memory per block is capped at 48 KB. A configuration that needs more gets one *dynamic* shared
#: array instead (compile-time ``DYNAMIC_SHARED = True``), sized at launch, and its kernels are opted in to the larger
#: size with ``cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`` (Hopper allows up to 227 KB per block).
STATIC_SHARED_LIMIT = 48 * 1024

#: Argument types every generated kernel is launched with (flat arrays, sizes, full-tile counts) …
SIGNATURE = "void(float32[::1], float32[::1], float32[::1], uint32, uint32, uint32, uint32, uint32)"
#: … and the stream-K kernel's extra ones (workspace, flags, data-parallel and stream-K tile counts).
SIGNATURE_STREAM_K = SIGNATURE[:-1] + ", float32[::1], int32[::1], uint32, uint32)"


#: Held while a kernel is generated or compiled: two host threads launching a step for the first time at once
#: would each write its generated source file and compile it (Numba's compiles are serialized anyway).
BUILD_LOCK = threading.RLock()

#: The toolkit modules of warp- and warpgroup-wide operations (steps 12–19's kernels import from them).
WARP_WIDE_MODULES = ("gemm_steps.toolkit.tensor_core_ops", "gemm_steps.toolkit.warpgroup_ops",
                     "gemm_steps.toolkit.mbarrier_ops")


def shared_memory_layout(config: TileConfig, extra_constants: dict) -> tuple[dict, bool]:
    """The constants of a build from tiles (or a step's Config) and a layout dict that adds or changes some (an
    experiment's variant; a step's own build takes its ``Config``'s as they are), with the shared-memory layout
    worked out for the result, and whether the layout asked for dynamic shared memory whatever its size."""
    constants = {**config.constants(), **extra_constants}
    constants.setdefault("STAGES", 1)
    # Shared memory: STAGES copies of the A and B tiles (a kernel that pads its tiles says how many floats a
    # stage of each takes). Over the static limit → one dynamic array (see above).
    a_stage = constants.setdefault("A_STAGE_FLOATS", config.BLOCK_M * config.BLOCK_K)
    b_stage = constants.setdefault("B_STAGE_FLOATS", config.BLOCK_K * config.BLOCK_N)
    # … plus what else a kernel keeps there (EXTRA_SHARED_FLOATS: the warpgroup step's small parts of A).
    shared_bytes = (constants["STAGES"] * (a_stage + b_stage) + constants.get("EXTRA_SHARED_FLOATS", 0)) * 4
    # A kernel whose tiles always live in one dynamic array says so with DYNAMIC_SHARED = True in its layout.
    always_dynamic = constants.get("DYNAMIC_SHARED", False)
    dynamic = always_dynamic or shared_bytes > STATIC_SHARED_LIMIT
    constants["DYNAMIC_SHARED"] = dynamic
    constants["B_BASE"] = constants["STAGES"] * a_stage if dynamic else 0
    constants["SHARED_BYTES"] = shared_bytes
    return constants, always_dynamic


class KernelBuild:
    """A step's fast and edge kernels, compiled from its kernel ``function`` for one configuration.

    ``config``: the step's ``Config`` (a :class:`~.tile_config.StepConfig`), whose :meth:`~.tile_config.StepConfig.constants`
    are the kernel's compile-time parameters (the shared-memory layout's ``SHARED_BYTES``, ``DYNAMIC_SHARED`` and
    ``B_BASE`` included), plus ``EDGE``, which says which variant; or, for an experiment's variant, a
    :class:`TileConfig` and its ``extra_constants`` (a layout dict), from which :func:`shared_memory_layout` works out
    the rest. The kernel sees its module's globals plus these; ``overrides`` replaces names (tests count stores with
    it). ``edge`` takes the edge kernel from another build instead of compiling this
    kernel with ``EDGE = True`` (the TMA steps: their kernel has no guarded variant).
    """

    #: Argument types of the kernels (flat arrays, sizes, full-tile counts), for compiling to PTX on a CPU.
    signature_fast = SIGNATURE
    #: What the generated source calls the edge variant.
    edge_label = "guarded, for the tiles the fast kernel skips"

    def __init__(self, name: str, function: Callable, config: TileConfig, extra_constants: dict | None = None,
                 overrides: dict | None = None, edge: "KernelBuild | None" = None):
        numba_patches.apply()  # linear-time lowering pass: the unrolled kernels compile several times faster
        self.name = name
        self.function = function
        self.globals = function.__globals__  # what the kernel sees: its module's names
        self.config = config.check()
        if isinstance(config, StepConfig) and not extra_constants:
            # A step's Config: every constant, the shared-memory layout's included. (A step whose kernel has no
            # dynamic shared-memory variant refuses larger tiles in its Config.problems.)
            constants, always_dynamic = config.constants(), True
        else:  # tiles (or a Config) and a layout dict (an experiment's variant): the shared memory worked out here
            constants, always_dynamic = shared_memory_layout(config, extra_constants or {})
        self.shared_bytes = constants["SHARED_BYTES"]
        dynamic = constants["DYNAMIC_SHARED"]
        self.dynamic_shared_bytes = self.shared_bytes if dynamic else 0
        self.constants = constants
        self.overrides = overrides or {}
        self.edge_source = edge
        if (dynamic and not always_dynamic and edge is None
                and "DYNAMIC_SHARED" not in inspect.getsource(function)):
            raise ValueError(f"{name}: {config} needs {self.shared_bytes} bytes of shared memory, over the "
                             f"{STATIC_SHARED_LIMIT}-byte static limit, and this step's kernel has no dynamic "
                             f"shared-memory variant (steps 8 onward have one)")
        # A kernel with warps beside the tile's threads (a producer warp that only issues copies) says how many
        # threads they add with PRODUCER_THREADS in its layout; blocks are launched that much larger.
        self.threads = constants["THREADS"] + constants.get("PRODUCER_THREADS", 0)
        self.launch_bounds = (self.threads, config.MIN_BLOCKS_PER_SM) if config.MIN_BLOCKS_PER_SM else None
        self._sources: dict[str, str] = {}
        self._kernels: dict[str, Any] = {}
        #: Whether the kernel uses the toolkit's warp-wide operations (mma, wgmma, mbarriers, named barriers), whose
        #: simulator twins make threads meet: its simulated launches run on one CPU (``kernel_tools.on_one_cpu``).
        self.meets_in_warps = any(getattr(value, "__module__", None) in WARP_WIDE_MODULES
                                  for value in function.__globals__.values())

    def variant_constants(self, variant: str) -> dict:
        return {**self.constants, "EDGE": variant == "edge", "KERNEL_NAME": f"{self.name}_{variant}_kernel"}

    def expand(self, constants: dict) -> str:
        """The Python source of one variant: the kernel with its ``unroll`` loops, register tiles and ``if EDGE:``
        expanded for these constants, named ``constants["KERNEL_NAME"]``."""
        return unroll.expand(self.function, constants, constants["KERNEL_NAME"])

    def kernel(self, variant: str):
        """The ``cuda.jit`` dispatcher of the fast or edge kernel (generated on first use)."""
        if variant == "edge" and self.edge_source is not None:
            return self.edge_source.kernel("edge")
        found = self._kernels.get(variant)
        if found is not None:
            return found
        with BUILD_LOCK:
            if variant not in self._kernels:
                self._define(variant)
        return self._kernels[variant]

    def _define(self, variant: str) -> None:
        """Generate one variant's source and make its dispatcher (under ``BUILD_LOCK``)."""
        constants = self.variant_constants(variant)
        source = self.expand(constants)
        # On a GPU, generated sources go to a cache folder so Numba can keep the compiled kernels on disk:
        # the first call of a step compiles for seconds, later processes load it at once.
        directory = None if (SIMULATOR or self.overrides) else unroll.cache_dir()
        namespace = {**self.globals, **constants, **self.overrides}
        # The key names what the source does not show: the constants, and the mbarrier wait limit compiled into
        # mbarrier_wait (GEMM_STEPS_MBARRIER_TIMEOUT_S), so a kernel kept on disk is not reused across either.
        key = f"{sorted(constants.items())!r} wait_limit_ns={mbarrier_ops.WAIT_LIMIT_NS}"
        unroll.define(source, constants["KERNEL_NAME"], namespace, key=key, directory=directory)
        self._sources[variant] = source
        self._kernels[variant] = kernel(namespace[constants["KERNEL_NAME"]], launch_bounds=self.launch_bounds,
                                        **({"cache": True} if directory else {}))

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

    def generated_source(self) -> str:
        c = self.config
        edge_from = f" (from {self.edge_source.name})" if self.edge_source is not None else ""
        header = (f"# Generated for BLOCK_M={c.BLOCK_M} BLOCK_N={c.BLOCK_N} BLOCK_K={c.BLOCK_K} "
                  f"THREAD_M={c.THREAD_M} THREAD_N={c.THREAD_N} ({c.THREADS} threads)\n")
        return (header + "\n# ---- fast kernel: full tiles, 128-bit accesses, no bounds checks ----\n"
                + self.generated("fast")
                + f"\n# ---- edge kernel{edge_from}: {self.edge_label} ----\n"
                + self.generated("edge"))

    def signature(self, variant: str) -> str:
        return self.signature_fast if variant == "fast" else SIGNATURE

    def labelled_variants(self) -> list[tuple[str, "KernelBuild", str]]:
        """``(label, build, variant)`` for every kernel of :meth:`ptx_kernels`, in order, nothing generated."""
        return [(f"{self.name}_{variant}", self, variant) for variant in ("fast", "edge")]

    def ptx_kernels(self) -> dict:
        """Every kernel with the argument types it is compiled for: what tests/test_ptx.py compiles to PTX."""
        return {label: (build.kernel(variant), build.signature(variant))
                for label, build, variant in self.labelled_variants()}

    def kernel_labels(self) -> list[str]:
        """The labels of :meth:`ptx_kernels`, in its order, without generating a kernel (expanding one takes up to
        seconds: the test collection asks every step for its labels)."""
        return [label for label, _, _ in self.labelled_variants()]

    def compile(self, variant: str) -> None:
        """Compile one kernel now (on a GPU), saying so on stderr: seconds for an unrolled kernel, less than one
        when Numba finds it in its disk cache. Without this the first call of a step goes quiet for that long."""
        dispatcher = self.kernel(variant)
        if SIMULATOR or dispatcher.overloads:
            return
        with BUILD_LOCK:
            if not dispatcher.overloads:  # another thread may have compiled it while this one waited
                self._compile_now(variant, dispatcher)

    def _compile_now(self, variant: str, dispatcher) -> None:
        major, minor = cuda.get_current_device().compute_capability
        print(f"gemm-steps: compiling the {self.name} {variant} kernel for sm_{major}{minor} (first use in this "
              "process; cached on disk for later runs) …", file=sys.stderr, flush=True)
        start = time.perf_counter()
        dispatcher.compile(self.signature(variant))
        print(f"gemm-steps: {self.name} {variant} kernel ready in {time.perf_counter() - start:.1f} s",
              file=sys.stderr, flush=True)


__all__ = ["BUILD_LOCK", "KernelBuild", "shared_memory_layout", "SIGNATURE", "SIGNATURE_STREAM_K", "STATIC_SHARED_LIMIT"]
