"""A bounded, thread-safe LRU of values each kept with the version it was read at.

What the read caches keep (lab/curve_cache.py: a run's curve by its current_round;
lab/history_cache.py: a run's history by its current_round; lab/sweep_cache.py: an answer about a
sweep by the sweep's version): an entry is served only under the version it was stored with, the
least recently used goes first once there are more than `max_entries`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class VersionedLru(Generic[K, V]):
    """key -> (version, value), at most `max_entries`, least recently used evicted first."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, tuple[Hashable, V]] = OrderedDict()

    def get(self, key: K, version: Hashable) -> V | None:
        """The value kept for `key` at `version` (now the most recently used), else None."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None or hit[0] != version:
                return None
            self._entries.move_to_end(key)
            return hit[1]

    def put(self, key: K, version: Hashable, value: V) -> None:
        """Keep `value` for `key` at `version` (replacing any other), evicting the oldest."""
        with self._lock:
            self._entries[key] = (version, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget everything (tests)."""
        with self._lock:
            self._entries.clear()
