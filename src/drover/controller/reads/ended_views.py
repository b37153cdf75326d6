"""Ended jobs as a listing shows them, encoded once and kept: an ended job no longer changes, so
its entry in a listing is the same bytes every time it is asked for. Bounded: the least
recently listed go first. Shared by the reading threads (under a lock)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

import msgspec

EndedKey = tuple[int, float]  # (job id, ended_at): a job that ended again would be a new entry


class EndedJobViews:
    def __init__(self, capacity: int = 20_000) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[EndedKey, msgspec.Raw] = OrderedDict()
        self._lock = threading.Lock()

    def found(self, keys: Iterable[EndedKey]) -> dict[EndedKey, msgspec.Raw]:
        """The entries kept for these keys (the others are missing from the result)."""
        found = {}
        with self._lock:
            for key in keys:
                entry = self._kept.get(key)
                if entry is not None:
                    self._kept.move_to_end(key)
                    found[key] = entry
        return found

    def keep(self, entries: dict[EndedKey, msgspec.Raw]) -> None:
        with self._lock:
            self._kept.update(entries)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)
