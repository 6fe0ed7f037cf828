"""Device buffers a launch needs besides A, B and C, kept between launches: :class:`Workspaces`.

Step 11's stream-K partial sums and flags, steps 17 and 18's split-K slices and the padded copies of a ragged product
(:mod:`~gemm_steps.toolkit.padded_tiles`) are allocated once and reused: an allocation costs far more host time than a
launch, and a recorded launch plan (:mod:`~gemm_steps.toolkit.launch_plans`) replays the addresses it recorded.

A buffer is kept per CUDA context (a buffer of one context is no use in another), per stream (launches on two
streams may overlap, so they must not share scratch memory), per host thread (two threads launching on one stream
interleave their launches: one's copy into a padded buffer could land between the other's copy and its kernel) and
per *what* (the sizes it was made for). The stream is kept alive beside its buffers, so its ``id`` is never reused
for another stream while the key exists.
"""

from __future__ import annotations

from typing import Any, Callable

from numba import cuda

from .backend import SIMULATOR
from .kept import KeptPerThread


class Workspaces:
    """Buffers made by ``make()`` on first use, kept per host thread and per (context, ``what``, stream); at most
    ``kept`` of them a thread (when full, all are dropped at once, :class:`~.kept.Kept`: a recorded launch plan holds its own references, so
    nothing it uses is freed). A thread's buffers go with the thread."""

    def __init__(self, kept: int = 16):
        self._buffers = KeptPerThread(kept)  # each host thread's buffers: freed with the thread

    def get(self, what: Any, stream, make: Callable[[], Any]) -> Any:
        key = (0 if SIMULATOR else id(cuda.current_context()), what, id(stream) if stream else 0)
        return self._buffers.mine().made(key, lambda: (make(), stream))[0]

    def __len__(self) -> int:
        """How many buffers this host thread has."""
        return len(self._buffers.mine())


__all__ = ["Workspaces"]
