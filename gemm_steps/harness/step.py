"""What a *step* is: one kernel design of the course, wrapped so every step is called, checked and timed alike.

A step module (``gemm_steps/steps/<name>.py``) provides:

``TITLE``, ``SUMMARY``
    A title and a one-line summary of what changed from the previous step.
``launch(a, b, c, stream)``
    Launch the step's kernel(s) computing ``c = a @ b``. The arrays are C-contiguous float32 *device* arrays,
    already validated, with M, N, K ≥ 1. This is the only thing a step must say: validation, transfers and
    allocation live in :mod:`gemm_steps.api`, once for all steps.
``KERNELS``  (optional)
    ``{label: (dispatcher, signature)}`` — every kernel the step may launch, with the argument types it is
    launched with, so tests can compile each to PTX on a CPU-only machine and check the code the lesson claims.
``CONFIG`` / ``build(config)`` / ``SEARCH_SPACE``  (optional)
    Tile parameters, and a way to get the step built for another configuration (autotuning).
``ARITHMETIC``  (optional, default ``"fp32"``)
    How the step multiplies: ``"fp32"`` (the FP32 units), ``"tf32"`` (tensor cores on inputs rounded to TF32: its own
    tolerance in :mod:`~gemm_steps.harness.verify`, and ``matmul`` never picks it) or ``"3xtf32"`` (tensor cores at
    float32 accuracy).
``REQUIRES_COMPUTE_CAPABILITY``, ``MIN_COMPUTE_CAPABILITY``  (optional)
    ``(major, minor)`` of the only GPUs the step runs on (steps 14–15: ``wgmma``, Hopper only), or of the oldest
    (steps 12–13: ``mma.sync`` on TF32 and ``cp.async``, Ampere onward). Elsewhere :meth:`Step.unavailable` says
    why, and ``verify`` and ``bench`` skip the step with that reason; tests/test_ptx.py checks on a CPU that each
    step's kernels assemble exactly where it says they run.
``TUNING``  (register-tiled steps 6 onward, instead of the four above)
    A :class:`gemm_steps.toolkit.tuned.Tuning`: the step's ``build(config)``, its candidates and the simulator's
    configuration. :attr:`Step.tiled` is what it builds, on first use, for this machine's configuration (a
    :class:`gemm_steps.toolkit.tiles.TiledKernels`): ``launch``, ``KERNELS``, ``CONFIG`` and the generated source all
    come from it, so such a step declares its kernel once.

The registry (:func:`all_steps`, :func:`get_step`) turns the modules named in :data:`gemm_steps.steps.COURSE` into steps.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import time
from types import ModuleType
from typing import Any, Callable

from ..steps import COURSE
from ..toolkit.backend import SIMULATOR
from ..toolkit.kernel_builds import BUILD_LOCK
from ..toolkit.kernel_tools import quiet_small_grids


class Step:
    """One step of the course. Call it like a function: ``step(a, b, out=None)``."""

    def __init__(self, number: int, module: ModuleType, name: str | None = None, tuning: Any = None,
                 pads: bool = False):
        self.number = number
        self.module = module
        self.name = name or module.__name__.rsplit(".", 1)[-1]
        self.title: str = module.TITLE
        self.summary: str = module.SUMMARY
        self.arithmetic: str = getattr(module, "ARITHMETIC", "fp32")  # "fp32", "tf32" or "3xtf32"
        #: How the step's kernels are built (steps 6 onward: the module's ``TUNING``, or another one, as dispatch's
        #: tile variants give); None for steps 1–5, whose module launches its kernel itself.
        self.tuning = tuning if tuning is not None else getattr(module, "TUNING", None)
        #: Whether the fast kernel runs on zero-padded copies of a ragged product (dispatch's ``+padded`` candidates,
        #: :class:`~gemm_steps.toolkit.padded_tiles.PaddedTiles`) instead of the edge kernel.
        self.pads = pads
        self.requires_compute_capability = getattr(module, "REQUIRES_COMPUTE_CAPABILITY", None)
        self.min_compute_capability = getattr(module, "MIN_COMPUTE_CAPABILITY", None)
        self._tiled = self._padded = None  # built on first use, for this machine's configuration: toolkit/tuned.py
        self._launch: Callable = self._launch_tiled if self.tuning is not None else module.launch
        # On a GPU the first launch in a process compiles. Register-tiled steps say so per kernel (TiledKernels.compile);
        # the others compile in about a second, and say so here.
        self._launched = SIMULATOR or self.tuning is not None

    @property
    def tiled(self):
        """The step's generated kernels (a ``TiledKernels``; steps 6 onward), built on first use for this machine's
        configuration (:meth:`~gemm_steps.toolkit.tuned.Tuning.kernels`); None for steps 1–5."""
        if self._tiled is None and self.tuning is not None:
            self._tiled = self.tuning.kernels()
        return self._tiled

    # -- using a step ------------------------------------------------------------------------------------------
    def __call__(self, a: Any, b: Any, out: Any = None):
        """``a @ b`` with this step's kernel. See :func:`gemm_steps.matmul` for what is accepted."""
        from .api import run_step

        return run_step(self, a, b, out)

    def launch(self, a, b, c, stream=0) -> None:
        """Launch on validated C-contiguous float32 device arrays (M, N, K ≥ 1). No checks: use ``step(a, b)``."""
        if not self._launched:
            self._first_launch(a, b, c, stream)
            return
        if self.tuning is not None:  # TiledKernels.launch silences the small-grid warning itself
            self._launch(a, b, c, stream)
            return
        with quiet_small_grids():
            self._launch(a, b, c, stream)

    def _launch_tiled(self, a, b, c, stream=0) -> None:
        if self.pads:
            self.padded().launch(a, b, c, stream)
        else:
            self.tiled.launch(a, b, c, stream)

    def padded(self):
        """The step's kernels launched on zero-padded copies (a :class:`~gemm_steps.toolkit.padded_tiles.PaddedTiles`
        of :attr:`tiled`; what a step with ``pads`` launches), made on first use."""
        if self._padded is None:
            from ..toolkit.padded_tiles import PaddedTiles

            with BUILD_LOCK:
                if self._padded is None:
                    self._padded = PaddedTiles(self.tiled)
        return self._padded

    def _first_launch(self, a, b, c, stream) -> None:
        """The first launch in a process compiles the kernels it needs (or loads them from Numba's disk cache):
        seconds, not microseconds. Say so on stderr instead of going quiet."""
        from numba import cuda

        major, minor = cuda.get_current_device().compute_capability
        print(f"gemm-steps: compiling step {self.number} ({self.name}) for sm_{major}{minor}, first call only "
              "(kernels are cached on disk for later runs) …", file=sys.stderr, flush=True)
        start = time.perf_counter()
        with quiet_small_grids():
            self._launch(a, b, c, stream)
        cuda.synchronize()
        self._launched = True
        print(f"gemm-steps: step {self.number} ({self.name}) ready in {time.perf_counter() - start:.1f} s",
              file=sys.stderr, flush=True)

    def unavailable(self) -> str | None:
        """Why this step cannot run on this machine's GPU, or None if it can (the simulator runs every step)."""
        from ..toolkit import gpu_requirements

        reason = gpu_requirements.missing_compute_capability(self.requires_compute_capability,
                                                             self.min_compute_capability)
        return f"step {self.number} ({self.name}) {reason}" if reason else None

    # -- reading a step ----------------------------------------------------------------------------------------
    @property
    def doc(self) -> str:
        """The module docstring: what changed from the previous step and why it is faster."""
        return inspect.cleandoc(self.module.__doc__ or "")

    def source(self) -> str:
        """The step as written: its module — the kernel, then how it is launched (``gemm_steps/steps/<name>.py``)."""
        return inspect.getsource(self.module)

    def kernel_functions(self) -> list:
        """The Python functions of the step's kernels, as written (not the compiled dispatchers)."""
        if self.tiled is not None:
            return [self.tiled.function]
        functions = []
        for dispatcher, _ in self.kernels().values():
            function = getattr(dispatcher, "py_func", None) or getattr(dispatcher, "fn", None)  # GPU / simulator
            if function is not None and function not in functions:
                functions.append(function)
        return functions

    def kernel_source(self) -> str:
        """Just the step's kernel, as written (what ``gemm-steps diff`` compares)."""
        return "\n\n".join(inspect.getsource(f) for f in self.kernel_functions())

    def generated_source(self) -> str:
        """The code Numba compiles. For steps 7 onward that is the kernel with its ``unroll`` loops, register tiles
        and compile-time branches expanded (:mod:`gemm_steps.toolkit.unroll`); for the others, the kernel itself."""
        if self.tiled is not None:
            return self.tiled.generated_source()
        return self.kernel_source()

    @property
    def config(self) -> dict:
        """Tile parameters of this step (``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K``, ``THREAD_M``, ``THREAD_N``…)."""
        if self.tiled is not None:
            return dict(self.tiled.constants)
        return dict(getattr(self.module, "CONFIG", {}))

    def kernels(self) -> dict:
        """``{label: (dispatcher, signature)}`` for every kernel this step may launch."""
        if self.tiled is not None:
            return self.tiled.ptx_kernels()
        return dict(getattr(self.module, "KERNELS", {}))

    def kernel_labels(self) -> list[str]:
        """The labels of :meth:`kernels`, in order, without generating the kernels (tests/test_ptx.py checks that
        they are the same)."""
        if self.tiled is not None:
            return self.tiled.kernel_labels()
        return list(getattr(self.module, "KERNELS", {}))

    def __repr__(self) -> str:
        return f"<Step {self.number} {self.name!r}: {self.title}>"


_STEPS: list[Step] | None = None


def all_steps() -> list[Step]:
    """Every step, in course order (imports the kernel modules on first use)."""
    global _STEPS
    if _STEPS is None:
        _STEPS = [Step(number, importlib.import_module(f"..steps.{name}", __package__))
                  for number, name in enumerate(COURSE, start=1)]
    return list(_STEPS)


def get_step(name_or_number: str | int) -> Step:
    """A step by its name (``"naive"``) or number (``1`` or ``"1"``, as on the command line)."""
    found = all_steps()
    key = name_or_number
    if isinstance(key, str) and key.strip().isdigit():
        key = int(key)
    for step in found:
        if step.name == key or (isinstance(key, int) and not isinstance(key, bool) and step.number == key):
            return step
    names = ", ".join(f"{s.number}={s.name}" for s in found)
    raise KeyError(f"no step {name_or_number!r}; the steps are {names}")
