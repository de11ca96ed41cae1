"""A throwaway `docflow serve` for a stream evaluation: the real service (API, queue workers
and scheduler in one process, SQLite and a local folder in a home of its own), with a tenant
and an API key holding every scope.

The service runs as a child process, started with none of the caller's `DOCFLOW_*` settings
(only its home, address and the `environment` asked for), so an evaluation measures the
defaults and never touches the caller's deployment. It is stopped (SIGTERM, then SIGKILL) when
the block ends, also on an error or Ctrl+C.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from docflow import db
from docflow.tenants import service as tenants_service

HOST = "127.0.0.1"
START_SECONDS = 180.0
STOP_SECONDS = 30.0


class ServiceFailed(RuntimeError):
    """The embedded service did not start, or died; the message ends with its last output."""


@dataclass(frozen=True, slots=True)
class EmbeddedService:
    base_url: str
    token: str
    tenant_id: str
    home: Path
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def service_environment(home: Path, port: int, environment: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the caller's without any `DOCFLOW_*`, then the home, address
    and `environment`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    address = {"DOCFLOW_HOME": str(home), "DOCFLOW_HOST": HOST, "DOCFLOW_PORT": str(port)}
    return {**clean, **address, **environment}


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-2000:]
    except OSError:
        return ""


def _wait_until_up(process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while not _answers(f"{base_url}/healthz"):
        if process.poll() is not None:
            raise ServiceFailed(f"the service exited with {process.returncode}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise ServiceFailed(f"the service did not answer in {START_SECONDS:.0f} s")
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _make_tenant(database_url: str) -> tuple[str, str]:
    """A tenant and a key with every scope, made in the service's database beside it (an
    IMMEDIATE transaction on SQLite, which waits for the service's writes)."""
    engine = db.make_engine(database_url)
    try:
        with db.make_write_session_factory(engine).begin() as session:
            tenant = tenants_service.create_tenant(session, name="Stream evaluation")
            _, token = tenants_service.create_api_key(
                session, tenant.id, name="stream-eval", scopes=["*"]
            )
            return tenant.id, token
    finally:
        engine.dispose()


@contextmanager
def embedded_service(
    home: Path, database_url: str, *, environment: Mapping[str, str] | None = None
) -> Iterator[EmbeddedService]:
    """`docflow serve` on a free port of 127.0.0.1 with `home` (its database at
    `database_url`, the default of that home), a tenant and its key; stopped at the end."""
    port = _free_port()
    log = home / "serve.log"
    home.mkdir(parents=True, exist_ok=True)
    env = service_environment(home, port, environment or {})
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", "serve"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    base_url = f"http://{HOST}:{port}"
    try:
        _wait_until_up(process, base_url, log)
        tenant_id, token = _make_tenant(database_url)
        yield EmbeddedService(base_url, token, tenant_id, home, log)
    finally:
        _stop(process)
