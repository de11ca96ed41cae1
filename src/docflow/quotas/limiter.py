"""Requests per second per API key: the generic cell rate algorithm (a token bucket kept as
one number per key, the theoretical arrival time of the next request), in this process's memory
on SQLite (one process serves everything there) or in PostgreSQL, where every API process
shares each key's state through one atomic statement per request."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Plan
from docflow.quotas.repository import RateLimitRepository

# Keys whose state the memory limiter keeps (least recently used dropped first: a dropped key
# starts again with a full burst, which only ever lets it send more, never less).
MAX_KEYS = 100_000


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether the request may go on, with what its `RateLimit-*` headers say: the burst
    (`limit`), the requests it may still send at once, the seconds until its burst is whole
    again, and, when refused, the seconds to wait."""

    allowed: bool
    limit: int
    remaining: int
    reset_seconds: float
    retry_after: float = 0.0

    def headers(self) -> dict[str, str]:
        found = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(max(0, math.ceil(self.reset_seconds))),
        }
        if not self.allowed:
            found["Retry-After"] = str(max(1, math.ceil(self.retry_after)))
        return found


class Limiter(Protocol):
    def take(self, tenant_id: str, key_id: str, plan: Plan) -> Decision | None:
        """Admit or refuse one request of the key; None when its plan has no rate limit."""
        ...


def _cell(plan: Plan) -> tuple[float, float] | None:
    if plan.requests_per_second is None:
        return None
    interval = 1.0 / plan.requests_per_second
    return interval, (plan.burst - 1) * interval


def decide(plan: Plan, now: float, admitted: float | None, stored: float | None) -> Decision:
    """The decision for a request at `now`: admitted with the new arrival time `admitted`, or
    refused while the key's stored arrival time is `stored`."""
    interval, tolerance = _cell(plan) or (0.0, 0.0)
    if admitted is not None:
        ahead = admitted - now
        # (Some slack: epoch seconds carry about 0.2 µs of rounding, which must not cost a request.)
        remaining = max(0, math.floor((tolerance - ahead) / interval + 1e-3) + 1)
        return Decision(True, plan.burst, remaining, ahead)
    ahead = (stored or now) - now
    return Decision(False, plan.burst, 0, ahead, retry_after=ahead - tolerance)


class MemoryLimiter:
    """Each key's state in this process (SQLite: the one process that serves the API)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tat: OrderedDict[str, float] = OrderedDict()

    def take(self, tenant_id: str, key_id: str, plan: Plan) -> Decision | None:
        cell = _cell(plan)
        if cell is None:
            return None
        interval, tolerance = cell
        now = time.time()
        with self._lock:
            start = max(self._tat.get(key_id, now), now)
            if start - now > tolerance:
                return decide(plan, now, None, start)
            self._tat[key_id] = start + interval
            self._tat.move_to_end(key_id)
            if len(self._tat) > MAX_KEYS:
                self._tat.popitem(last=False)
        return decide(plan, now, start + interval, None)


class DatabaseLimiter:
    """Each key's state in PostgreSQL (`rate_limits`), shared by every API process: one
    statement admits a request only while the key is within its rate."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def take(self, tenant_id: str, key_id: str, plan: Plan) -> Decision | None:
        cell = _cell(plan)
        if cell is None:
            return None
        interval, tolerance = cell
        now = time.time()
        with self._sessions() as session, session.begin():
            repo = RateLimitRepository(session, tenant_id)
            admitted = repo.take(key_id, now=now, interval=interval, tolerance=tolerance)
            stored = repo.tat(key_id) if admitted is None else None
        return decide(plan, now, admitted, stored)


def limiter_for(sessions: sessionmaker[Session], *, dialect: str) -> Limiter:
    """The limiter for a database: in memory on SQLite (a single process), shared on
    PostgreSQL."""
    return MemoryLimiter() if dialect == "sqlite" else DatabaseLimiter(sessions)
