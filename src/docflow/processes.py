"""The long-running commands of `docflow`: serve (embedded), api, worker, and the demo.

- `docflow serve`: API, queue workers and scheduler in one process (SQLite by default; a second
  process on the same SQLite file is refused). `--demo` runs the demo against it once ready.
- `docflow api`: the API only, on PostgreSQL; it enqueues and reads executions through a DBOS
  client and runs no workflow. It is stateless: `--workers N` runs N processes on one port.
- `docflow worker`: queue workers and scheduler, no HTTP, on PostgreSQL; run any number.
- `docflow demo`: the demo, in a short-lived embedded server (or against `--url`).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import structlog
import typer
import uvicorn
from fastapi import FastAPI
from rich.console import Console
from rich.markup import escape
from sqlalchemy import Engine

from docflow import db, demo
from docflow.config import Settings, UnsafeConfiguration
from docflow.http.access_log import uvicorn_log_config
from docflow.kit import logs, querycount
from docflow.main import create_app
from docflow.observability import exposition
from docflow.runtime import launch
from docflow.system_db import is_sqlite
from docflow.worker import (
    DatabaseUnreachable,
    ProcessModeError,
    embedded_runtime,
    executor_id_for,
    exit_when_threads_end,
    require_postgres,
    worker_command,
)

ExecutorOption = typer.Option(
    None, "--executor-id", help="stable id of this process's durable work (DOCFLOW_EXECUTOR_ID)"
)


# Benchmarks only (`bench/`): a file to count this process's SQL statements into (`docflow api`
# counts only with one worker).
COUNT_QUERIES_ENV = "DOCFLOW_COUNT_QUERIES"
# The default of `docflow api --workers`.
API_WORKERS_ENV = "DOCFLOW_API_WORKERS"


def _count_queries_if_asked() -> None:
    path = os.environ.get(COUNT_QUERIES_ENV)
    if path:
        querycount.install(Path(path))


def _console() -> Console:
    return Console(soft_wrap=True)


def _fail(exc: Exception) -> typer.Exit:
    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(str(exc))}")
    return typer.Exit(1)


def _addressed(settings: Settings, host: str | None, port: int | None) -> Settings:
    """`settings` listening on host:port; upload URLs follow unless DOCFLOW_PUBLIC_BASE_URL
    was set explicitly."""
    update: dict[str, object] = {"host": host or settings.host, "port": port or settings.port}
    if "public_base_url" not in settings.model_fields_set:
        update["public_base_url"] = f"http://{update['host']}:{update['port']}"
    return settings.model_copy(update=update)


def _prepare_embedded(settings: Settings) -> None:
    """On SQLite the embedded process is the whole deployment: create and migrate its files."""
    if is_sqlite(settings):
        settings.home.mkdir(parents=True, exist_ok=True)
        db.run_migrations(settings.resolved_migration_database_url())


@contextmanager
def _embedded(
    settings: Settings, executor_id: str | None, *, exit_after: bool = False
) -> Iterator[Engine]:
    """The embedded runtime on a new engine; with `exit_after` (the `serve` command only) the
    process ends within `shutdown_timeout_seconds` once the runtime has stopped."""
    _prepare_embedded(settings)
    engine = launch.app_engine(settings, "serve")
    # `local` only where this is the one process (SQLite); on PostgreSQL several `serve`
    # processes may run, so each gets a distinct default id like a worker.
    ident = executor_id_for(settings, executor_id, embedded=is_sqlite(settings))
    try:
        timeout = settings.shutdown_timeout_seconds
        after_stop = (lambda: exit_when_threads_end(timeout)) if exit_after else None
        with embedded_runtime(settings, engine=engine, executor_id=ident, after_stop=after_stop):
            yield engine
    finally:
        engine.dispose()


def _server(settings: Settings, engine: Engine | None, *, quiet: bool = False) -> uvicorn.Server:
    app = create_app(settings, engine=engine, process="serve" if engine is not None else "api")
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning" if quiet else "info",
        access_log=not quiet,
        log_config=uvicorn_log_config(),
        # Open requests (an event stream lasts up to minutes) get this long once stopped.
        timeout_graceful_shutdown=math.ceil(settings.shutdown_timeout_seconds),
    )
    return uvicorn.Server(config)


def _run_server(server: uvicorn.Server) -> None:
    """Run `server` in the main thread until SIGTERM or SIGINT, then return normally.

    uvicorn re-raises the signal that stopped it once it has shut down; with a handler of ours
    in place that re-raise is absorbed, so the caller's cleanup (stopping the runtime, handing
    work over) still runs and the process exits 0.
    """
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda _signum, _frame: None)
    server.run()


@contextmanager
def _quiet_logs() -> Iterator[None]:
    """Warnings and errors only while the block runs, so the demo's progress bar and table stay
    readable; the previous logging configuration comes back afterwards."""
    previous = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    try:
        yield
    finally:
        structlog.configure(**previous)


def _run_demo_when_ready(
    server: uvicorn.Server,
    settings: Settings,
    engine: Engine,
    after: Callable[[demo.DemoTenant], None],
) -> threading.Thread:
    def run() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.should_exit:
            return
        tenant = _demo_tenant(engine)
        base = f"http://{settings.host}:{settings.port}"
        try:
            demo.run_demo(base, tenant.token, _console(), tenant_id=tenant.tenant_id)
        except demo.DemoFailed as exc:
            Console(stderr=True).print(f"[red]demo failed:[/red] {escape(str(exc))}")
        after(tenant)

    thread = threading.Thread(target=run, name="demo", daemon=True)
    thread.start()
    return thread


def _demo_tenant(engine: Engine) -> demo.DemoTenant:
    # Beside the serving runtime's writes: IMMEDIATE on SQLite, so it waits for them.
    with db.make_write_session_factory(engine).begin() as session:
        return demo.prepare_tenant(session)


def _usage(settings: Settings) -> Callable[[demo.DemoTenant], None]:
    def show(tenant: demo.DemoTenant) -> None:
        token = tenant.token
        base = f"http://{settings.host}:{settings.port}"
        _console().print(
            f"\n[bold]docflow is serving on {base}[/bold] (OpenAPI: {base}/docs). "
            "Try the demo tenant's API key:\n"
            f'  curl -H "Authorization: Bearer {token}" {base}/v1/batches\n'
            "or the command line, from another shell:\n"
            f"  export DOCFLOW_URL={base} DOCFLOW_API_KEY={token}\n"
            "  .venv/bin/docflow batches list   # also: batches submit DIR --project ... --wait\n"
            + "\n".join(tenant.console_lines(base))
            + "\nPress Ctrl+C to stop."
        )

    return show


def serve(
    host: str | None = typer.Option(None, help="interface (default: DOCFLOW_HOST)"),
    port: int | None = typer.Option(None, help="port (default: DOCFLOW_PORT)"),
    executor_id: str | None = ExecutorOption,
    with_demo: bool = typer.Option(False, "--demo", help="run the demo once the API is up"),
) -> None:
    """Run the API, queue workers and scheduler in one process (embedded mode)."""
    _count_queries_if_asked()
    settings = _addressed(Settings().with_generated_secret(), host, port)
    try:
        settings.check_safe()
        with (
            _embedded(settings, executor_id, exit_after=True) as engine,
            _quiet_logs() if with_demo else nullcontext(),
        ):
            server = _server(settings, engine, quiet=with_demo)
            if with_demo:
                _run_demo_when_ready(server, settings, engine, _usage(settings))
            _run_server(server)
    except (ProcessModeError, DatabaseUnreachable, UnsafeConfiguration) as exc:
        raise _fail(exc) from exc


def api(
    host: str | None = typer.Option(None, help="interface (default: DOCFLOW_HOST)"),
    port: int | None = typer.Option(None, help="port (default: DOCFLOW_PORT)"),
    workers: int = typer.Option(
        1,
        "--workers",
        min=1,
        envvar=API_WORKERS_ENV,
        help="API processes sharing the port, each with its own database pool",
    ),
) -> None:
    """Run the API only (distributed mode, PostgreSQL): it enqueues work for `docflow worker`
    processes and runs none itself."""
    settings = Settings().with_generated_secret()
    try:
        require_postgres(settings, "docflow api")
        settings.check_safe()
    except (ProcessModeError, UnsafeConfiguration) as exc:
        raise _fail(exc) from exc
    settings = _addressed(settings, host, port)
    if workers == 1:
        _count_queries_if_asked()
        _run_server(_server(settings, None))
        return
    # Each worker process builds its app from the environment (`api_worker_app`): pass on the
    # address (and so the upload URLs) this command resolved, and the folder where the
    # processes' metrics meet, so any of them answers `/metrics` for all.
    exposition.prepare_multiprocess(settings.home)
    os.environ.update(
        {
            "DOCFLOW_HOST": settings.host,
            "DOCFLOW_PORT": str(settings.port),
            "DOCFLOW_PUBLIC_BASE_URL": settings.public_base_url,
        }
    )
    uvicorn.run(
        f"{__name__}:api_worker_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_config=uvicorn_log_config(),
    )


def api_worker_app() -> FastAPI:
    """The app of one `docflow api --workers N` process (uvicorn starts N of them)."""
    settings = Settings().with_generated_secret()
    logs.configure_logging(settings.log_level, fmt=settings.log_format)
    return create_app(settings, process="api")


def worker(executor_id: str | None = ExecutorOption) -> None:
    """Run queue workers and the scheduler, no HTTP (distributed mode, PostgreSQL). Stops on
    SIGTERM or Ctrl+C, handing its unfinished work to the other workers."""
    _count_queries_if_asked()
    try:
        worker_command(Settings(), executor_id=executor_id)
    except (ProcessModeError, DatabaseUnreachable, UnsafeConfiguration) as exc:
        raise _fail(exc) from exc


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def run_demo_command(
    url: str | None = typer.Option(
        None, "--url", help="a running docflow API on the same database (default: start one)"
    ),
    timeout: float = typer.Option(300.0, help="seconds to wait for the batches"),
) -> None:
    """Create a demo tenant and workflows, submit generated invoices and receipts (text PDFs
    and scans) through the HTTP API, follow them, and print what was extracted."""
    with _quiet_logs():
        _demo(Settings().with_generated_secret(), url, timeout)


def _demo(settings: Settings, url: str | None, timeout: float) -> None:
    if url is not None:
        _prepare_embedded(settings)
        engine = db.make_engine(settings.resolved_database_url())
        try:
            tenant = _demo_tenant(engine)
            demo.run_demo(
                url, tenant.token, _console(), timeout=timeout, tenant_id=tenant.tenant_id
            )
        except demo.DemoFailed as exc:
            raise _fail(exc) from exc
        finally:
            engine.dispose()
        return
    settings = _addressed(settings, settings.host, _free_port(settings.host))
    try:
        with _embedded(settings, None) as engine:
            _demo_in_server(settings, engine, timeout)
    except (ProcessModeError, demo.DemoFailed) as exc:
        raise _fail(exc) from exc


def _demo_in_server(settings: Settings, engine: Engine, timeout: float) -> None:
    server = _server(settings, engine, quiet=True)
    thread = threading.Thread(target=server.run, name="api", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise demo.DemoFailed("the API did not start")
            threading.Event().wait(0.05)
        base = f"http://{settings.host}:{settings.port}"
        tenant = _demo_tenant(engine)
        demo.run_demo(base, tenant.token, _console(), timeout=timeout, tenant_id=tenant.tenant_id)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
