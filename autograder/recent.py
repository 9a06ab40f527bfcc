"""The few most recently used of something a grading service keeps running per assignment (pools of grading
processes started ahead, zygotes): found by key, replaced when stale, the least recently used one closed."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=Closable)


class Recent(Generic[T]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, stale: Callable[[T], bool], make: Callable[[], T]) -> T:
        """The item for `key`, made anew when there is none or it is stale; the oldest beyond `size` close."""
        with self._lock:
            item = self._items.pop(key, None)
            stopped = [item] if item is not None and stale(item) else []
            if item is None or stopped:
                item = make()
            self._items[key] = item
            while len(self._items) > self.size:
                stopped.append(self._items.popitem(last=False)[1])
        for old in stopped:
            old.close()
        return item

    def close_all(self) -> None:
        with self._lock:
            items = list(self._items.values())
            self._items.clear()
        for item in items:
            item.close()
