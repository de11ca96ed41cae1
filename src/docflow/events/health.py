"""The events' signals: dead letters waiting and the oldest unpublished event's age, for
metrics and for `/readyz` (degraded over the thresholds in the settings)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from docflow.config import Settings
from docflow.db import make_session_factory
from docflow.events.repository import event_signals
from docflow.kit.clock import utcnow
from docflow.kit.readiness import Degraded, ReadinessCheck


@dataclass(frozen=True)
class EventSignals:
    """Dead letters not redriven (all tenants) and the oldest unpublished event's age in
    seconds (0 when everything is published)."""

    dead_letters: int
    oldest_unpublished_seconds: float


def read_signals(engine: Engine) -> EventSignals:
    """The current signals (two aggregate queries)."""
    with make_session_factory(engine)() as session:
        dead, oldest = event_signals(session)
    age = (utcnow() - oldest).total_seconds() if oldest is not None else 0.0
    return EventSignals(dead, max(age, 0.0))


def events_check(engine: Engine, settings: Settings) -> ReadinessCheck:
    """A readiness check raising `Degraded` when dead letters exceed
    `events_ready_max_dead_letters` or an event waits longer than
    `events_ready_max_unpublished_seconds`."""

    def check() -> None:
        signals = read_signals(engine)
        if signals.dead_letters > settings.events_ready_max_dead_letters:
            raise Degraded(f"{signals.dead_letters} dead letters")
        if signals.oldest_unpublished_seconds > settings.events_ready_max_unpublished_seconds:
            raise Degraded(f"oldest unpublished event {signals.oldest_unpublished_seconds:.0f} s")

    return check
