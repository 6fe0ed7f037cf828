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

import threading
from typing import Any, Callable

from numba import cuda

from .backend import SIMULATOR


class Workspaces:
    """Buffers made by ``make()`` on first use, kept per host thread and per (context, ``what``, stream); at most
    ``kept`` of them a thread (the oldest are dropped all at once: a recorded launch plan holds its own references, so
    nothing it uses is freed). A thread's buffers go with the thread."""

    def __init__(self, kept: int = 16):
        self.kept = kept
        self._thread = threading.local()  # each host thread's buffers: freed with the thread

    def _buffers(self) -> dict:
        buffers = getattr(self._thread, "buffers", None)
        if buffers is None:
            buffers = self._thread.buffers = {}
        return buffers

    def get(self, what: Any, stream, make: Callable[[], Any]) -> Any:
        buffers = self._buffers()
        key = (0 if SIMULATOR else id(cuda.current_context()), what, id(stream) if stream else 0)
        found = buffers.get(key)
        if found is None:
            if len(buffers) >= self.kept:
                buffers.clear()
            found = buffers[key] = (make(), stream)
        return found[0]

    def __len__(self) -> int:
        """How many buffers this host thread has."""
        return len(self._buffers())


__all__ = ["Workspaces"]
