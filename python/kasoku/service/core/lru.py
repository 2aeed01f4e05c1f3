"""A small thread-safe least-recently-used table: the service's loaded key sets and models."""

from __future__ import annotations

import collections
import threading
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    def __init__(self, size: int):
        self.size = size
        self._lock = threading.Lock()
        self._table: collections.OrderedDict[K, V] = collections.OrderedDict()

    def get(self, key: K) -> V | None:
        with self._lock:
            if key not in self._table:
                return None
            self._table.move_to_end(key)
            return self._table[key]

    def put(self, key: K, value: V) -> V:
        """Keeps value under key (the most recent), dropping the least recent beyond the size; returns value."""
        with self._lock:
            self._table[key] = value
            self._table.move_to_end(key)
            while len(self._table) > self.size:
                self._table.popitem(last=False)
        return value
