"""Count the SQL statements a process executes, for the benchmark suite (`bench/`).

`install(path)` listens to `before_cursor_execute` on the `Engine` class, so every engine of the
process is counted: the application's and DBOS's system database engine alike. The counts are
written to `path` as JSON (`total`, `by_statement`: the first words of each statement, and
`written_at`, a Unix time) five times a second and once more at exit, so a reader can take the
count before and after a piece of work. Off unless a process asks for it.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

_SPACE = re.compile(r"\s+")
_KEY_LENGTH = 90


@functools.lru_cache(maxsize=4096)
def statement_key(statement: str) -> str:
    """The statement with its whitespace collapsed, cut to its first characters: enough to tell
    the queries of a code path apart without keeping parameters or long column lists."""
    return _SPACE.sub(" ", statement).strip()[:_KEY_LENGTH]


class QueryCounter:
    """Counts statements and writes the counts to a file every `interval` seconds."""

    def __init__(self, path: Path, *, interval: float = 0.2) -> None:
        self.path = path
        self.interval = interval
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._total = 0
        self._stop = threading.Event()

    def on_execute(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        """The `before_cursor_execute` listener."""
        key = statement_key(statement)
        with self._lock:
            self._total += 1
            self._counts[key] += 1

    def write(self) -> None:
        """Write the counts now (atomically: a reader never sees half a file)."""
        with self._lock:
            total, counts = self._total, dict(self._counts)
        body = {"total": total, "by_statement": counts, "written_at": time.time()}
        scratch = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        scratch.write_text(json.dumps(body))
        os.replace(scratch, self.path)

    def _run(self) -> None:
        # Rewritten even when unchanged, so a reader can wait for a fresh `written_at`.
        while not self._stop.wait(self.interval):
            self.write()

    def start(self) -> None:
        self.write()
        threading.Thread(target=self._run, name="querycount", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self.write()


def install(path: Path) -> QueryCounter:
    """Count every statement of every engine of this process into `path` until exit."""
    counter = QueryCounter(path)
    event.listen(Engine, "before_cursor_execute", counter.on_execute)
    counter.start()
    atexit.register(counter.stop)
    return counter
