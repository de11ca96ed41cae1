"""One question asked once at a time (single flight), within a process.

Two documents of the same file read at once by one worker (a batch holding the file twice, a
batch re-run while the first run is still reading) ask the same questions: without this,
both miss the cache and both call the provider. `Flights.hold(keys)` lets one asker through
per key; the others wait until it has stored its answer, then find it in the cache. Keys are
locked in sorted order, so two askers of overlapping keys never wait on each other in a
circle. Separate worker processes are not coordinated: each may ask once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager


class Flights:
    """A lock per key in use, made when the first asker comes and dropped with the last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, list[int]]] = {}

    @contextmanager
    def hold(self, keys: Iterable[str]) -> Iterator[None]:
        """Hold every key of `keys` until the block ends (waiting for their other askers)."""
        ordered = sorted(set(keys))
        with self._lock:
            entries = [self._locks.setdefault(key, (threading.Lock(), [0])) for key in ordered]
            for _lock, users in entries:
                users[0] += 1
        try:
            with ExitStack() as stack:
                for lock, _users in entries:
                    stack.enter_context(lock)
                yield
        finally:
            with self._lock:
                for key, (_lock, users) in zip(ordered, entries, strict=True):
                    users[0] -= 1
                    if users[0] == 0:
                        del self._locks[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._locks)
