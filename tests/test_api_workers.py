"""`docflow api --workers N`: N API processes on one port, stopped together by one SIGTERM."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from docflow.config import Settings
from docflow.system_db import migrate_system_database
from support.db_fixtures import APP_ROLE
from support.process_fixtures import FreshPostgres, fresh_postgres, spawn, stop, wait_for

__all__ = ["fresh_postgres"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _workers(pid: int) -> list[int]:
    """The child processes serving the app (not multiprocessing's resource tracker)."""
    children = [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    return [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.postgres_only
@pytest.mark.slow
def test_api_runs_the_asked_number_of_workers(
    fresh_postgres: FreshPostgres, tmp_path: Path
) -> None:
    settings = Settings(
        database_url=fresh_postgres.app_url, migration_database_url=fresh_postgres.owner_url
    )
    migrate_system_database(settings, app_role=APP_ROLE)
    port = _free_port()
    env = {
        "DOCFLOW_DATABASE_URL": fresh_postgres.app_url,
        "DOCFLOW_MIGRATION_DATABASE_URL": fresh_postgres.owner_url,
        "DOCFLOW_STORAGE_URL": f"file://{tmp_path / 'files'}",
        "DOCFLOW_API_WORKERS": "2",
    }
    log = tmp_path / "api.log"
    process = spawn(
        ["-c", "from docflow.cli import app; app()", "api", "--port", str(port)], env, log
    )
    try:
        wait_for(
            lambda: _healthy(f"http://127.0.0.1:{port}/healthz") or process.poll() is not None,
            timeout=90,
            what="the API to answer",
        )
        assert process.poll() is None, log.read_text()[-3000:]
        wait_for(
            lambda: len(_workers(process.pid)) >= 2,
            timeout=30,
            what=f"two worker processes (log: {log.read_text()[-2000:]})",
        )
        assert len(_workers(process.pid)) == 2
    finally:
        stop(process, timeout=30)
    assert process.returncode == 0, log.read_text()[-3000:]
