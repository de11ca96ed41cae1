"""The scrape registry of a docflow process: its own metrics plus the installation's gauges,
read from the database (for the composition roots: `main.create_app` serves it at `/metrics`,
a `docflow worker` on its metrics port)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from docflow import db
from docflow.config import Settings
from docflow.events.health import read_signals
from docflow.observability.collectors import DatabaseCollector
from docflow.observability.exposition import scrape_registry
from docflow.system_db import queue_backlog, system_database_url


@dataclass(frozen=True)
class Scrape:
    """What a scrape renders, and the system-database connection its queue gauges read
    through (closed with `close`)."""

    registry: CollectorRegistry
    system_engine: Engine

    def close(self) -> None:
        self.system_engine.dispose()


def installation_scrape(settings: Settings, engine: Engine, *, process: str) -> Scrape:
    """This process's metrics and the gauges of the installation behind `engine`: the queues
    (DBOS's table, read as DBOS's own role on PostgreSQL, on one connection named
    `docflow-<process>-metrics`) and the events."""
    system = db.make_engine(
        system_database_url(settings),
        pool_size=1,
        max_overflow=0,
        application_name=f"docflow-{process}-metrics",
    )

    def events() -> tuple[int, float]:
        signals = read_signals(engine)
        return signals.dead_letters, signals.oldest_unpublished_seconds

    collector = DatabaseCollector(
        backlog=lambda: queue_backlog(system, top_tenants=settings.metrics_top_tenants),
        events=events,
        ttl_seconds=settings.metrics_cache_seconds,
    )
    return Scrape(scrape_registry(collector), system)
