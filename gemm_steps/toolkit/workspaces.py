"""Device buffers a launch needs besides A, B and C, kept between launches: :class:`Workspaces`.

Step 11's stream-K partial sums and flags, step 18's split-K slices and the padded copies of a ragged product
(:mod:`~gemm_steps.toolkit.padded_tiles`) are allocated once and reused: an allocation costs far more host time than a
launch, and a recorded launch plan (:mod:`~gemm_steps.toolkit.launch_plans`) replays the addresses it recorded.

A buffer is kept per CUDA context (a buffer of one context is no use in another), per stream (launches on two
streams may overlap, so they must not share scratch memory) and per *what* (the sizes it was made for). The stream
is kept alive beside its buffers, so its ``id`` is never reused for another stream while the key exists.
"""

from __future__ import annotations

from typing import Any, Callable

from numba import cuda

from .backend import SIMULATOR


class Workspaces:
    """Buffers made by ``make()`` on first use, kept per (context, ``what``, stream); at most ``kept`` of them (the
    oldest are dropped all at once: a recorded launch plan holds its own references, so nothing it uses is freed)."""

    def __init__(self, kept: int = 16):
        self.kept = kept
        self._buffers: dict = {}

    def get(self, what: Any, stream, make: Callable[[], Any]) -> Any:
        key = (0 if SIMULATOR else id(cuda.current_context()), what, id(stream) if stream else 0)
        found = self._buffers.get(key)
        if found is None:
            if len(self._buffers) >= self.kept:
                self._buffers.clear()
            found = self._buffers[key] = (make(), stream)
        return found[0]

    def __len__(self) -> int:
        return len(self._buffers)


__all__ = ["Workspaces"]
