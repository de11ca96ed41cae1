"""Rendering the metrics a scrape reads: this process's counters and histograms (or, under
`docflow api --workers N`, every process's, from the files they share), and the database's
gauges of one `DatabaseCollector`.

`docflow api --workers N` sets `PROMETHEUS_MULTIPROC_DIR` (a fresh folder under the data home)
before its processes start, so prometheus-client keeps each process's values in files there
and any process answering `/metrics` reports the sum.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _ThisProcess(Collector):
    """The process-local metrics (every `metrics.py` metric, plus the process's own CPU and
    memory), or every process's when they share a multiprocess folder."""

    def __init__(self) -> None:
        folder = os.environ.get(MULTIPROC_ENV)
        if folder:
            self._registry = CollectorRegistry()
            MultiProcessCollector(self._registry, path=folder)
        else:
            self._registry = REGISTRY

    def collect(self) -> Iterator[Metric]:
        yield from self._registry.collect()


def scrape_registry(*collectors: Collector) -> CollectorRegistry:
    """A registry of this process's metrics and `collectors` (each read at every scrape)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ThisProcess())
    for collector in collectors:
        registry.register(collector)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The Prometheus text format of everything `registry` collects."""
    return generate_latest(registry)


def serve(registry: CollectorRegistry, host: str, port: int) -> tuple[WSGIServer, threading.Thread]:
    """Serve `registry` at http://host:port/metrics in a daemon thread (a worker has no API)."""
    return start_http_server(port, addr=host, registry=registry)


def prepare_multiprocess(home: Path) -> Path:
    """Point this process and the API processes it starts at an empty multiprocess folder
    under `home` (values of an earlier run must not be summed in)."""
    folder = home / "metrics"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(folder)
    return folder
