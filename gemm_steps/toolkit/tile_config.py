"""Configurations of register-tiled kernels (steps 6 onward).

Each step declares its own ``Config`` in its file: a frozen dataclass, subclassing :class:`StepConfig`, that lists
every compile-time constant of the step's kernels as a field (a value) or a property (a formula), the tile fields
included — the same names in every step, so ``gemm-steps diff`` shows what changed. :class:`StepConfig` holds no
value, only what every Config does: :meth:`StepConfig.constants` (the dict the build binds to the kernel's keyword-only
parameters), :meth:`StepConfig.check`, :meth:`StepConfig.of` (a configuration with another one's tiles: what the
tuning table, ``SEARCH_SPACE`` and ``SIMULATOR_CONFIG`` override).

:class:`TileConfig` is the six tuned fields alone (:data:`TILE_FIELDS`): what a tuning table records, and what
experiments and tests hand to a step's ``build`` (which takes its tiles and keeps everything else of the step's
Config). A step lists its candidates in ``SEARCH_SPACE``; :mod:`gemm_steps.toolkit.tuned` picks the one a machine
builds with.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

#: The fields a tuning table records and ``SEARCH_SPACE`` varies: the tiles, and the occupancy hint.
TILE_FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "MIN_BLOCKS_PER_SM")


def tile_fields(config) -> dict[str, int]:
    """The tuned fields of any configuration (a :class:`TileConfig`, a step's ``Config``, a table entry's dict)."""
    if isinstance(config, dict):
        return {name: config[name] for name in TILE_FIELDS if name in config}
    return {name: getattr(config, name) for name in TILE_FIELDS}


def tile_problems(c) -> list[str]:
    """What keeps a register-tiled kernel from being built from these tiles (every step's tiles must pass)."""
    problems = []
    if c.THREAD_M % 4 or c.THREAD_N % 4:
        problems.append("THREAD_M and THREAD_N must be multiples of 4 (128-bit fragments)")
    if c.BLOCK_M % c.THREAD_M or c.BLOCK_N % c.THREAD_N:
        problems.append("BLOCK_M/BLOCK_N must be multiples of THREAD_M/THREAD_N")
    if c.BLOCK_K % 4:
        problems.append("BLOCK_K must be a multiple of 4 (128-bit loads along K)")
    threads = (c.BLOCK_M // c.THREAD_M) * (c.BLOCK_N // c.THREAD_N)
    if threads > 1024 or threads % 32:
        problems.append(f"{threads} threads per block: must be a multiple of 32 and at most 1024")
    elif (c.BLOCK_M * c.BLOCK_K // 4) % threads or (c.BLOCK_K * c.BLOCK_N // 4) % threads:
        problems.append("each tile must split into whole 128-bit loads per thread")
    return problems


class StepConfig:
    """What every step's ``Config`` does; the values are all in the step's file.

    A step's ``Config`` is a frozen dataclass subclassing this one: fields for the values (``STAGES: int = 4``),
    properties for derived values (``def B_BASE(self)``), upper-case names; ``problems()`` may add the step's own
    conditions to the tile checks."""

    def constants(self) -> dict:
        """Every compile-time constant of this configuration, by name: its upper-case fields and properties. The
        build binds the kernel's keyword-only parameters from it (a step's test checks each is here)."""
        names = [f.name for f in fields(self)]
        names += [name for klass in type(self).__mro__ for name, value in vars(klass).items()
                  if isinstance(value, property) and name not in names]
        return {name: getattr(self, name) for name in dict.fromkeys(names) if name.isupper()}

    def problems(self) -> list[str]:
        """The step's own conditions on its constants (none by default)."""
        return []

    def check(self):
        """This configuration, if the step's kernels can be built from it; a ValueError naming every problem if not."""
        problems = tile_problems(self)
        if not problems:
            problems = self.problems()
        if problems:
            raise ValueError(f"bad tile configuration {tile_fields(self)} for {type(self).__module__}.Config: "
                             + "; ".join(problems))
        return self

    @classmethod
    def of(cls, config=None, **overrides):
        """This step's configuration with the tiles of ``config`` (a TileConfig, another step's Config, a tuning
        table entry; None: the step's own; one of this step's Configs: itself) and the fields in ``overrides``;
        everything else as the step declares."""
        if config is None:
            base = cls()
        elif isinstance(config, cls):
            base = config
        else:
            base = cls(**tile_fields(config))
        return replace(base, **overrides) if overrides else base

    def tiles(self) -> "TileConfig":
        """The tuned fields alone (what a tuning table records)."""
        return TileConfig(**tile_fields(self))


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
        """This configuration, if a tiled kernel can be built from it; a ValueError naming every problem if not."""
        c = self
        problems = tile_problems(c)
        if problems:
            raise ValueError(f"bad tile configuration {asdict(c)}: " + "; ".join(problems))
        return c

    def constants(self) -> dict[str, int]:
        """The compile-time constants derived from the tiles alone (an experiment's build adds its layout's: a step's
        own kernels take theirs from the step's ``Config``)."""
        c = self
        values = asdict(c)
        values["THREADS"] = c.THREADS
        values["THREADS_N"] = c.BLOCK_N // c.THREAD_N  # threads along a row of the block tile
        values["A_LOADS"] = c.BLOCK_M * c.BLOCK_K // 4 // c.THREADS  # 128-bit loads of A per thread per tile
        values["B_LOADS"] = c.BLOCK_K * c.BLOCK_N // 4 // c.THREADS
        values["A_VECTORS_PER_ROW"] = c.BLOCK_K // 4
        values["B_VECTORS_PER_ROW"] = c.BLOCK_N // 4
        return values


__all__ = ["StepConfig", "TILE_FIELDS", "TileConfig", "tile_fields", "tile_problems"]
