"""Webhook test fixtures: a real HTTP receiver on 127.0.0.1 that records what it gets and
answers with scripted status codes, and the durable runtime with retries seconds apart."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from fastapi.testclient import TestClient

from docflow import bootstrap, db
from docflow.main import create_app
from docflow.runtime import launch
from docflow.system_db import migrate_system_database
from support.db_fixtures import APP_ROLE, on_postgres
from support.dbos_fixtures import (
    EXECUTOR_ID,
    DbosEnv,
    _fresh_database,
    env_settings,
    stop_runtime,
)
from support.http_server import serving


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """Records every POST; answers the next scripted status (then `default`), once `gate` (if
    given) is set."""

    url: str = ""
    script: list[int] = field(default_factory=list)
    default: int = 200
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    gate: threading.Event | None = None

    def answer(self, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            self.received.append(Received(headers, body))
            code = self.script.pop(0) if self.script else self.default
        if self.gate is not None:
            self.gate.wait(20)
        return code


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            code = receiver.answer(headers, body)
            self.send_response(code)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()
    with serving(_handler(state)) as server:
        state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
        yield state


@pytest.fixture(scope="module")
def webhook_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbosEnv]:
    """The runtime and app with loopback endpoints allowed and retries 0.2 s apart."""
    tmp = tmp_path_factory.mktemp("webhooks")
    databases = _fresh_database(tmp)
    owner_url, app_url = next(databases)
    settings = env_settings(
        tmp,
        owner_url,
        app_url,
        allow_private_webhook_urls=True,
        webhook_retry_seconds=[0.2],
        webhook_retry_jitter=0.5,
        webhook_max_attempts=5,
    )
    migrate_system_database(settings, app_role=APP_ROLE if on_postgres() else None)
    engine = db.make_engine(app_url, pool_size=10)
    launch.launch(
        settings,
        flows=bootstrap.flows(),
        executor_id=EXECUTOR_ID,
        engine=engine,
        schedules=False,
    )
    try:
        with TestClient(create_app(settings, engine=engine)) as client:
            yield DbosEnv(settings, engine, db.make_write_session_factory(engine), client)
    finally:
        # Let jobs still running (a consumer, a last attempt) finish before the database goes.
        stop_runtime()
        engine.dispose()
        next(databases, None)
