"""The course's steps, in order. Adding a step = adding a module here and its name to :data:`COURSE`."""

from __future__ import annotations

import importlib

from ..step import Step

#: Module names in course order; a step's number is its position (1-based).
COURSE = [
    "naive",
    "coalesced",
    "shared_memory",
    "register_1d",
    "register_2d",
    "vectorized",
    "unrolled",
    "double_buffered",
    "warp_tiling",
    "persistent",
    "stream_k",
]

_STEPS: list[Step] | None = None


def all_steps() -> list[Step]:
    global _STEPS
    if _STEPS is None:
        _STEPS = [
            Step(number, importlib.import_module(f"{__name__}.{name}"))
            for number, name in enumerate(COURSE, start=1)
        ]
    return list(_STEPS)
