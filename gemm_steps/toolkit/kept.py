"""The one kind of memo on the launch path: :class:`Kept`, a dict with a limit, and :class:`KeptPerThread`.

A launch keeps things it would otherwise remake at every call — a shape's recorded launch plan, a matrix's tensor
map, a padded buffer, a copy kernel's launch, the workspace of a split — because making them costs far more host
time than a launch. Each is kept in a :class:`Kept`: a plain dict (a lookup is one ``dict.get``, on the path every
replayed ``matmul`` takes) that holds at most ``limit`` entries and, when full, is emptied before the next one is
added. Emptying is the whole eviction policy: every entry is cheap to make again, and whatever a recorded plan uses it
holds itself, so nothing in use is freed.

Some things are a host thread's own — a launch plan holds workspaces, and two threads' launches on one stream
interleave — so they are kept in a :class:`KeptPerThread`: one :class:`Kept` for each host thread, gone with the
thread.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class Kept(dict):
    """A dict of at most ``limit`` entries: :meth:`keep` empties it when it is full, then adds."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def keep(self, key: Any, value: Any) -> Any:
        """Add ``value`` under ``key`` (emptying the dict first if it holds ``limit`` entries) and return it."""
        if len(self) >= self.limit and key not in self:
            self.clear()
        self[key] = value
        return value

    def made(self, key: Any, make: Callable[[], Any]) -> Any:
        """The value under ``key``, made by ``make()`` and kept on first use."""
        found = self.get(key)
        return found if found is not None else self.keep(key, make())


class KeptPerThread:
    """One :class:`Kept` of at most ``limit`` entries for each host thread (:meth:`mine`), freed with the thread."""

    def __init__(self, limit: int):
        self.limit = limit
        self._thread = threading.local()

    def mine(self) -> Kept:
        """This host thread's entries."""
        kept = getattr(self._thread, "kept", None)
        if kept is None:
            kept = self._thread.kept = Kept(self.limit)
        return kept


__all__ = ["Kept", "KeptPerThread"]
