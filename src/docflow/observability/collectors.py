"""Gauges read from the database when Prometheus scrapes: the queues' backlog and the events'
signals. Each reading is kept for `ttl_seconds`, so several scrapers (or a scrape of every API
process) cost the database one round of aggregate queries per interval; a reading that fails is
reported as `docflow_metrics_source_up 0` and logged, never as an error of the scrape."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import structlog
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from docflow.system_db import Backlog

log = structlog.get_logger(__name__)

T = TypeVar("T")


class Cached(Generic[T]):
    """`read()`'s value, read again at most every `ttl_seconds`; None while it fails."""

    def __init__(self, read: Callable[[], T], ttl_seconds: float) -> None:
        self._read = read
        self._ttl = ttl_seconds
        self._lock = threading.Lock()
        self._at = -float("inf")
        self._value: T | None = None

    def get(self, name: str) -> T | None:
        with self._lock:
            if time.monotonic() - self._at >= self._ttl:
                try:
                    self._value = self._read()
                except Exception as exc:
                    log.warning("metrics.source_failed", source=name, error_type=type(exc).__name__)
                    self._value = None
                self._at = time.monotonic()
            return self._value


class DatabaseCollector(Collector):
    """The queue backlog (from DBOS's status table) and the events' dead letters and outbox
    lag (`docflow.events.health.read_signals`), as gauges."""

    def __init__(
        self,
        *,
        backlog: Callable[[], list[Backlog]],
        events: Callable[[], tuple[int, float]],
        ttl_seconds: float,
    ) -> None:
        self._backlog = Cached(backlog, ttl_seconds)
        self._events = Cached(events, ttl_seconds)

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "docflow_metrics_source_up",
            "Whether the last database reading behind these gauges succeeded (1) or not (0).",
            labels=["source"],
        )
        backlog = self._backlog.get("queues")
        up.add_metric(["queues"], 0 if backlog is None else 1)
        yield from _backlog_gauges(backlog or [])
        events = self._events.get("events")
        up.add_metric(["events"], 0 if events is None else 1)
        if events is not None:
            dead = GaugeMetricFamily(
                "docflow_dead_letters", "Dead letters not redriven, all consumers and tenants."
            )
            dead.add_metric([], events[0])
            yield dead
            lag = GaugeMetricFamily(
                "docflow_outbox_lag_seconds",
                "Age of the oldest unpublished outbox event (0 when all are published).",
            )
            lag.add_metric([], events[1])
            yield lag
        yield up


def _backlog_gauges(backlog: list[Backlog]) -> Iterator[Metric]:
    depth = GaugeMetricFamily(
        "docflow_queue_depth", "Workflows waiting on a queue for a worker.", labels=["queue"]
    )
    age = GaugeMetricFamily(
        "docflow_queue_oldest_age_seconds",
        "How long the oldest workflow waiting on a queue has waited.",
        labels=["queue"],
    )
    tenant_depth = GaugeMetricFamily(
        "docflow_queue_tenant_depth",
        "Workflows waiting on a queue for the tenants with the most waiting (a bounded few).",
        labels=["queue", "tenant"],
    )
    tenant_age = GaugeMetricFamily(
        "docflow_queue_tenant_oldest_age_seconds",
        "How long the oldest waiting workflow of each of those tenants has waited.",
        labels=["queue", "tenant"],
    )
    for row in backlog:
        if row.tenant is None:
            depth.add_metric([row.queue], row.waiting)
            age.add_metric([row.queue], row.oldest_seconds)
        else:
            tenant_depth.add_metric([row.queue, row.tenant], row.waiting)
            tenant_age.add_metric([row.queue, row.tenant], row.oldest_seconds)
    yield from (depth, age, tenant_depth, tenant_age)
