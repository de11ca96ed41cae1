"""Upload URLs are credentials for an hour: no log line of a real `docflow serve` or
`docflow api --workers 2` process shows one whole, whatever the answer to the upload was."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import httpx
import pytest

from docflow import db
from docflow.config import Settings
from docflow.kit.redaction import RedactRecords
from docflow.kit.redaction import redact_text as redact
from docflow.system_db import migrate_system_database
from support.api_fixtures import documents_body, make_api_tenant, ok, workflow_body
from support.db_fixtures import APP_ROLE
from support.process_fixtures import (
    FreshPostgres,
    answers,
    free_port,
    fresh_postgres,
    served,
    spawn,
    stop,
    wait_for,
)

__all__ = ["fresh_postgres"]

PDF = b"%PDF-1.4 not really"


def test_redact_replaces_the_token_and_only_it() -> None:
    line = '127.0.0.1:5 - "PUT /v1/uploads/v1.eyJ0Ijo.abc_-DEF?x=1 HTTP/1.1" 200'
    assert redact(line) == '127.0.0.1:5 - "PUT /v1/uploads/{token}?x=1 HTTP/1.1" 200'
    assert redact("GET /v1/batches/bat_1 HTTP/1.1") == "GET /v1/batches/bat_1 HTTP/1.1"


def test_uvicorn_error_lines_hide_the_token_in_the_traceback_too() -> None:
    # uvicorn logs "Exception in ASGI application" with the error's traceback.
    try:
        raise RuntimeError("PUT http://h/v1/uploads/v1.eyJ0Ijo.SIGNATURE failed")
    except RuntimeError:
        record = logging.LogRecord(
            "uvicorn.error", logging.ERROR, __file__, 1, "%s", ("Exception",), sys.exc_info()
        )
    assert RedactRecords().filter(record)
    line = logging.Formatter().format(record)
    assert "eyJ0Ijo" not in line and "SIGNATURE" not in line
    assert "PUT http://h/v1/uploads/{token} failed" in line


def _upload_urls(base_url: str, token: str, name: str) -> list[str]:
    """Two documents' upload URLs, from a batch created through the API."""
    with httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as client:
        project = ok(client.post("/v1/projects", json={"name": name}), 201)
        path = f"/v1/projects/{project['id']}/workflows"
        workflow = ok(client.post(path, json=workflow_body()), 201)
        batch = {
            "project_id": project["id"],
            "workflow_id": workflow["id"],
            "documents": documents_body(2, size=len(PDF)),
        }
        created = ok(client.post("/v1/batches", json=batch), 202)
    return [document["upload_url"] for document in created["documents"]]


def _upload_and_refuse(urls: list[str]) -> list[str]:
    """Land the first URL's file, send the second a refused upload; the tokens used."""
    pdf = {"Content-Type": "application/pdf"}
    assert httpx.put(urls[0], content=PDF, headers=pdf).status_code == 200
    assert httpx.put(urls[1], content=PDF, headers={"Content-Type": "image/png"}).status_code == 403
    return [url.rsplit("/", 1)[1] for url in urls]


def _assert_redacted(output: str, tokens: list[str], expected_lines: int) -> None:
    for token in tokens:
        assert token not in output
        assert token.rsplit(".", 1)[1] not in output  # not even its signature
    lines = [line for line in output.splitlines() if "/v1/uploads/{token}" in line]
    assert len(lines) >= expected_lines, output[-3000:]


@pytest.mark.slow
def test_serve_logs_upload_urls_without_their_token(tmp_path: Path) -> None:
    with served(tmp_path / "home", tmp_path / "serve.log") as server:
        engine = db.make_engine(f"sqlite:///{server.home / 'docflow.db'}")
        try:
            tenant = make_api_tenant(db.make_write_session_factory(engine), "Logs")
        finally:
            engine.dispose()
        tokens = _upload_and_refuse(_upload_urls(server.base_url, tenant.token, "Logs"))
        wait_for(
            lambda: server.output().count("PUT /v1/uploads/") >= 2,
            timeout=10,
            what="the access log lines of the uploads",
        )
    _assert_redacted(server.output(), tokens, expected_lines=2)


@pytest.mark.postgres_only
@pytest.mark.slow
def test_api_workers_log_upload_urls_without_their_token(
    fresh_postgres: FreshPostgres, tmp_path: Path
) -> None:
    settings = Settings(
        database_url=fresh_postgres.app_url, migration_database_url=fresh_postgres.owner_url
    )
    migrate_system_database(settings, app_role=APP_ROLE)
    engine = db.make_engine(fresh_postgres.app_url)
    try:
        tenant = make_api_tenant(db.make_write_session_factory(engine), "Logs")
    finally:
        engine.dispose()
    port = free_port()
    env = {
        "DOCFLOW_DATABASE_URL": fresh_postgres.app_url,
        "DOCFLOW_STORAGE_URL": f"file://{tmp_path / 'files'}",
    }
    log = tmp_path / "api.log"
    # As the `docflow` script runs it (`python -m docflow.cli` loses its worker processes).
    args = [
        "-c",
        "from docflow.cli import app; app()",
        "api",
        "--port",
        str(port),
        "--workers",
        "2",
    ]
    process = spawn(args, env, log)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: answers(f"{base_url}/healthz") or process.poll() is not None,
            timeout=90,
            what="the API to answer",
        )
        assert process.poll() is None, log.read_text()[-3000:]
        # Each upload on a connection of its own, which either worker process may accept.
        tokens = [
            token
            for round_ in range(3)
            for token in _upload_and_refuse(_upload_urls(base_url, tenant.token, f"Logs {round_}"))
        ]
        wait_for(
            lambda: log.read_text().count("PUT /v1/uploads/") >= 6,
            timeout=10,
            what="the access log lines of the uploads",
        )
    finally:
        stop(process, timeout=30)
    _assert_redacted(log.read_text(errors="replace"), tokens, expected_lines=6)
