"""The search projection's signal for `/readyz`: documents whose entry lags past the setting."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine

from docflow.config import Settings
from docflow.db import make_session_factory
from docflow.kit.clock import utcnow
from docflow.kit.readiness import Degraded, ReadinessCheck
from docflow.search.repository import lagging_entries

# How many of the latest document changes the check looks at (a bounded read).
RECENT_CHANGES = 1000


def downstream_check(engine: Engine, settings: Settings) -> ReadinessCheck:
    """A readiness check raising `Degraded` when, among the latest document changes older than
    `downstream_lag_seconds`, a terminal document's search entry is missing or older."""

    def check() -> None:
        before = utcnow() - timedelta(seconds=settings.downstream_lag_seconds)
        with make_session_factory(engine)() as session:
            lagging = lagging_entries(session, before=before, limit=RECENT_CHANGES)
        if lagging:
            raise Degraded(f"{lagging} documents' search entries lag")

    return check
